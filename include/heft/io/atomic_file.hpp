#pragma once
/// \file Atomic replacement of files and directories: write to a temporary sibling, then rename.
/// A reader never sees a half-written result, and a crash leaves the destination as it was.
#include <functional>
#include <string>

namespace heft::io {

/// Calls `write(temporary_path)` with a fresh path in the same directory as `destination` (so the
/// rename stays on one file system), then renames it to `destination`. `write` creates a file or a
/// directory at that path. The temporary is removed if `write` throws (the exception propagates).
/// Throws InputError when `destination` exists and !overwrite, when its directory does not exist,
/// or when the rename fails. With overwrite, an existing directory is moved aside, then removed.
void writeAtomically(const std::string& destination, bool overwrite,
                     const std::function<void(const std::string& temporary_path)>& write);

/// writeAtomically for a text file.
void writeTextFileAtomically(const std::string& destination, const std::string& content,
                             bool overwrite);

/// Whole file as bytes; InputError naming the file when it cannot be read.
std::string readTextFile(const std::string& path);

}  // namespace heft::io
