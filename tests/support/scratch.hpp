#pragma once
/// \file Scratch paths of the tests: build/test-scratch/<group>/<name>, emptied before use.
/// ctest runs every case as its own process, in parallel: a file that several cases write must
/// carry the process id in its name.
#include <filesystem>
#include <string>

namespace heft::test {

/// HEFT_BINARY_DIR/test-scratch/<group>/<name>, the folder created and any old <name> removed.
inline std::filesystem::path scratchPath(const std::string& group, const std::string& name) {
  const std::filesystem::path dir = std::filesystem::path(HEFT_BINARY_DIR) / "test-scratch" / group;
  std::filesystem::create_directories(dir);
  const std::filesystem::path p = dir / name;
  std::filesystem::remove_all(p);
  return p;
}

}  // namespace heft::test
