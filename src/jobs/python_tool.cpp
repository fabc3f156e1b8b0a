#include "python_tool.hpp"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "heft/common/error.hpp"
#include "heft/io/atomic_file.hpp"

extern char** environ;

namespace heft::jobs {

namespace fs = std::filesystem;

PythonTool pythonTool(const std::string& script) {
  const char* python = std::getenv("HEFT_PYTHON");
  const char* dir = std::getenv("HEFT_PYTHON_DIR");
  return {python != nullptr ? python : HEFT_TOOLS_PYTHON,
          (fs::path(dir != nullptr ? dir : HEFT_TOOLS_DIR) / script).string()};
}

void runPythonTool(const PythonTool& tool, const std::vector<std::string>& args,
                   const std::string& stderr_file) {
  std::vector<std::string> all{tool.python, tool.script};
  all.insert(all.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (std::string& a : all) argv.push_back(a.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, stderr_file.c_str(),
                                   O_WRONLY | O_CREAT | O_TRUNC, 0644);
  pid_t pid = 0;
  const int spawned = posix_spawn(&pid, argv[0], &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (spawned != 0)
    throw SolveError("cannot run " + tool.python + " (" + std::strerror(spawned) +
                     "): scripts/bootstrap.sh installs it in .deps/venv-tools, or set HEFT_PYTHON");
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  std::string message = fs::exists(stderr_file) ? io::readTextFile(stderr_file) : std::string();
  while (!message.empty() && message.back() == '\n') message.pop_back();
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return;
  if (WIFEXITED(status) && WEXITSTATUS(status) == 2) throw InputError(message);
  throw SolveError(tool.script + " failed: " + message);
}

ScratchFolder::ScratchFolder() {
  std::string pattern = (fs::temp_directory_path() / "heft-XXXXXX").string();
  if (mkdtemp(pattern.data()) == nullptr)
    throw SolveError("cannot create a temporary folder in " + fs::temp_directory_path().string());
  path_ = pattern;
}

ScratchFolder::~ScratchFolder() {
  std::error_code ignored;
  fs::remove_all(path_, ignored);
}

}  // namespace heft::jobs
