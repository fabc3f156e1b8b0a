#pragma once
// The Python tools heft's CLI runs (python/*.py, in .deps/venv-tools: rosbags for heft import,
// matplotlib for heft report) as child processes: their exit code 2 is the user's input, anything
// else a failure.
#include <filesystem>
#include <string>
#include <vector>

namespace heft::jobs {

struct PythonTool {
  std::string python;  ///< the interpreter
  std::string script;  ///< the tool
};

/// python/<script> with the venv's Python: HEFT_PYTHON and HEFT_PYTHON_DIR replace the build-time
/// paths (an installed heft).
PythonTool pythonTool(const std::string& script);

/// Runs the tool with `args`, stdout discarded, stderr into `stderr_file`.
/// \throws InputError with the tool's stderr when it exits 2; SolveError when it cannot be started
///   (the venv is missing) or fails otherwise.
void runPythonTool(const PythonTool& tool, const std::vector<std::string>& args,
                   const std::string& stderr_file);

/// A temporary folder, removed with its contents when it goes out of scope.
class ScratchFolder {
 public:
  ScratchFolder();
  ~ScratchFolder();
  ScratchFolder(const ScratchFolder&) = delete;
  ScratchFolder& operator=(const ScratchFolder&) = delete;
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

}  // namespace heft::jobs
