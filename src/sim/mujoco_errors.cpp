#include "heft/sim/mujoco_errors.hpp"

#include <mujoco/mujoco.h>

#include <atomic>
#include <csetjmp>
#include <cstdio>
#include <mutex>

#include "heft/common/error.hpp"

namespace heft::sim {

namespace {

// The jump target of the innermost guarded call on this thread (nullptr outside one).
thread_local std::jmp_buf* t_jump = nullptr;
thread_local char t_error[1024];

std::atomic<long> g_warning_count{0};
std::mutex g_warning_mutex;
std::string g_last_warning;

extern "C" void heftMujocoError(const char* message) {
  std::snprintf(t_error, sizeof t_error, "%s", message ? message : "(no message)");
  // MuJoCo's engine is C: jumping over its frames is what its own bindings do. Outside a guarded
  // call there is nowhere safe to go; returning lets MuJoCo continue, and the error stays recorded.
  if (t_jump != nullptr) std::longjmp(*t_jump, 1);
}

extern "C" void heftMujocoWarning(const char* message) {
  g_warning_count.fetch_add(1);
  std::lock_guard<std::mutex> lock(g_warning_mutex);
  g_last_warning = message ? message : "";
}

// No objects with destructors in this frame: it is the setjmp target.
bool jumpTarget(const std::function<void()>* call) {
  std::jmp_buf buffer;
  std::jmp_buf* const previous = t_jump;
  t_jump = &buffer;
  if (setjmp(buffer) == 0) {
    (*call)();
    t_jump = previous;
    return true;
  }
  t_jump = previous;
  return false;
}

}  // namespace

void installMujocoHandlers() {
  static std::once_flag once;
  std::call_once(once, [] {
    mju_user_error = &heftMujocoError;
    mju_user_warning = &heftMujocoWarning;
  });
}

bool guardedMujocoCall(const std::function<void()>& call, std::string& message) {
  installMujocoHandlers();
  t_error[0] = '\0';
  if (jumpTarget(&call)) return true;
  message = t_error;
  return false;
}

void guardedMujocoCallOrThrow(const char* what, const std::function<void()>& call) {
  std::string message;
  if (!guardedMujocoCall(call, message)) {
    throw SolveError(std::string("MuJoCo error in ") + what + ": " + message);
  }
}

long mujocoWarningCount() { return g_warning_count.load(); }

std::string lastMujocoWarning() {
  std::lock_guard<std::mutex> lock(g_warning_mutex);
  return g_last_warning;
}

}  // namespace heft::sim
