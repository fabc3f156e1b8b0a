#include "heft/io/atomic_file.hpp"

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "heft/common/error.hpp"

namespace fs = std::filesystem;

namespace heft::io {

namespace {

// A name no other writer (thread or process) picks: pid, a per-process counter and the clock.
fs::path temporarySibling(const fs::path& destination, const std::string& tag) {
  static std::atomic<unsigned long> counter{0};
  const auto ticks = std::chrono::steady_clock::now().time_since_epoch().count();
  const std::string name = "." + destination.filename().string() + "." + tag + "-" +
                           std::to_string(::getpid()) + "-" + std::to_string(counter++) + "-" +
                           std::to_string(ticks % 1000000007);
  return destination.parent_path() / name;
}

void removeQuietly(const fs::path& path) {
  std::error_code ignored;
  fs::remove_all(path, ignored);
}

}  // namespace

void writeAtomically(const std::string& destination_name, bool overwrite,
                     const std::function<void(const std::string&)>& write) {
  if (destination_name.empty()) throw InputError("output path: expected a path, got \"\"");
  const fs::path destination = fs::absolute(fs::path(destination_name)).lexically_normal();
  std::error_code ec;
  const fs::path directory = destination.parent_path();
  if (!fs::is_directory(directory, ec)) {
    throw InputError(destination_name + ": directory " + directory.string() + " does not exist");
  }
  const bool exists = fs::exists(fs::symlink_status(destination, ec));
  if (exists && !overwrite) {
    throw InputError(destination_name + ": exists; refusing to overwrite (choose a new path)");
  }
  const fs::path temporary = temporarySibling(destination, "tmp");
  try {
    write(temporary.string());
  } catch (...) {
    removeQuietly(temporary);
    throw;
  }
  // rename(2) replaces a file atomically; a directory cannot replace a non-empty one, so an
  // existing directory is first moved aside, and removed once the new one is in place.
  fs::path aside;
  if (exists && fs::is_directory(fs::symlink_status(destination, ec))) {
    aside = temporarySibling(destination, "old");
    fs::rename(destination, aside, ec);
    if (ec) {
      removeQuietly(temporary);
      throw InputError(destination_name +
                       ": cannot move the existing directory aside: " + ec.message());
    }
  }
  fs::rename(temporary, destination, ec);
  if (ec) {
    removeQuietly(temporary);
    if (!aside.empty()) {
      std::error_code restore;
      fs::rename(aside, destination, restore);
    }
    throw InputError(destination_name + ": cannot rename " + temporary.string() +
                     " into place: " + ec.message());
  }
  if (!aside.empty()) removeQuietly(aside);
}

void writeTextFileAtomically(const std::string& destination, const std::string& content,
                             bool overwrite) {
  writeAtomically(destination, overwrite, [&](const std::string& temporary) {
    std::ofstream file(temporary, std::ios::binary | std::ios::trunc);
    file.write(content.data(), static_cast<std::streamsize>(content.size()));
    file.close();
    if (!file) throw InputError(destination + ": cannot write " + temporary);
  });
}

std::string readTextFile(const std::string& path) {
  std::error_code ec;
  if (!fs::is_regular_file(path, ec))
    throw InputError(path + ": expected a readable file, not found");
  std::ifstream file(path, std::ios::binary);
  if (!file) throw InputError(path + ": cannot open for reading");
  std::ostringstream content;
  content << file.rdbuf();
  if (file.bad()) throw InputError(path + ": read error");
  return content.str();
}

}  // namespace heft::io
