#pragma once
/// \file MuJoCo reports errors and warnings through process-wide callbacks whose defaults print and
/// call exit(). heft replaces them: an error inside a guarded call becomes a heft::SolveError (or
/// InputError, as the caller decides), a warning is counted and kept, never printed or fatal.
#include <functional>
#include <string>

namespace heft::sim {

/// Installs heft's mju_user_error / mju_user_warning handlers. Idempotent and thread-safe; every
/// heft::sim entry point calls it, so callers only need it before using the MuJoCo C API directly.
void installMujocoHandlers();

/// Runs `call` (a short sequence of MuJoCo C calls). If MuJoCo raises an error inside it, the error
/// handler jumps back here (setjmp / longjmp, as MuJoCo's own Python bindings do) and this returns
/// false with the message in `message`; otherwise returns true. `call` must not own objects with
/// non-trivial destructors that are alive while MuJoCo runs (the jump skips their destructors).
bool guardedMujocoCall(const std::function<void()>& call, std::string& message);

/// Same, but throws SolveError("MuJoCo error in <what>: <message>") on an error.
void guardedMujocoCallOrThrow(const char* what, const std::function<void()>& call);

/// Warnings MuJoCo reported through mju_warning since the process started (all threads).
long mujocoWarningCount();
/// Text of the most recent warning, "" if none.
std::string lastMujocoWarning();

}  // namespace heft::sim
