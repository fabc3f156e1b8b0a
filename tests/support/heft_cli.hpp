#pragma once
/// \file The heft CLI run from a test: build/bin/heft (HEFT_BINARY_DIR from the environment, as
/// ctest sets it, else the build folder the test was compiled for).
#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <string>

namespace heft::test {

/// Runs `heft <arguments>` with stdout discarded and stderr to `stderr_file`; returns the exit
/// code, or -1 when the process did not exit normally.
inline int runHeft(const std::string& arguments, const std::filesystem::path& stderr_file) {
  const char* env = std::getenv("HEFT_BINARY_DIR");
  const std::string heft = std::string(env != nullptr ? env : HEFT_BINARY_DIR) + "/bin/heft";
  const int status =
      std::system((heft + " " + arguments + " >/dev/null 2>" + stderr_file.string()).c_str());
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

}  // namespace heft::test
