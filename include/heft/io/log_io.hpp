#pragma once
/// \file Reading and writing logs in HDF5 (one .h5 file) and CSV (a directory of one CSV per
/// group), both described in docs/log-format.md. Readers never crash on a corrupted input: every
/// failure is an InputError naming the file and the dataset / line. Writers are atomic: they write
/// a temporary file (or directory) next to the destination and rename it, and refuse to replace an
/// existing path unless asked to.
#include <string>

#include "heft/io/log.hpp"
#include "heft/io/validation.hpp"

namespace heft::io {

enum class LogFormat { Hdf5, Csv };

/// Csv for a directory; Hdf5 for a file whose name ends in .h5 / .hdf5 or that starts with the HDF5
/// signature. Throws InputError for a missing path or any other file.
LogFormat detectLogFormat(const std::string& path);

struct ReadOptions {
  /// Validate (without a model) before returning; a log that fails throws the first error.
  bool check_log = true;
  ValidationOptions validation;
  /// Throws InputError when `validation` is out of range.
  void validate() const { validation.validate(); }
};

/// Reads a log in either format (detectLogFormat). Throws InputError on any problem.
Log readLog(const std::string& path, const ReadOptions& options = {});
Log readLogHdf5(const std::string& path, const ReadOptions& options = {});
Log readLogCsv(const std::string& directory, const ReadOptions& options = {});

struct WriteOptions {
  /// Replace an existing destination (still atomically). Off by default: never clobber an input.
  bool overwrite = false;
  /// Refuse to write a log that fails validateLog (without a model).
  bool check_log = true;
  ValidationOptions validation;
  /// Throws InputError when `validation` is out of range.
  void validate() const { validation.validate(); }
};

/// Writes `log` to `path` in `format`. Throws InputError when the destination exists (and
/// !overwrite), the log is invalid (and check_log), or the file system refuses.
void writeLog(const Log& log, const std::string& path, LogFormat format,
              const WriteOptions& options = {});
/// Format from the path: .h5 / .hdf5 -> Hdf5, anything else -> Csv (a directory).
void writeLog(const Log& log, const std::string& path, const WriteOptions& options = {});
/// The two writers behind writeLog (same options and errors).
void writeLogHdf5(const Log& log, const std::string& path, const WriteOptions& options = {});
void writeLogCsv(const Log& log, const std::string& directory, const WriteOptions& options = {});

}  // namespace heft::io
