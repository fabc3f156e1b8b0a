#include "heft/io/log_io.hpp"

#include <filesystem>
#include <fstream>

#include "heft/common/error.hpp"

namespace fs = std::filesystem;

namespace heft::io {

namespace {

bool hasHdf5Extension(const std::string& path) {
  const std::string extension = fs::path(path).extension().string();
  return extension == ".h5" || extension == ".hdf5";
}

// The HDF5 signature sits at offset 0 (or 512, 1024, ... with a user block; 0 is what we write).
bool startsWithHdf5Signature(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  char head[8] = {};
  file.read(head, 8);
  return file.gcount() == 8 && std::string(head, 8) == std::string("\x89HDF\r\n\x1a\n", 8);
}

}  // namespace

LogFormat detectLogFormat(const std::string& path) {
  std::error_code ec;
  if (fs::is_directory(path, ec)) return LogFormat::Csv;
  if (!fs::exists(path, ec)) throw InputError(path + ": no such file or directory");
  if (hasHdf5Extension(path) || startsWithHdf5Signature(path)) return LogFormat::Hdf5;
  throw InputError(path + ": expected an HDF5 file (.h5) or a directory of CSV files");
}

Log readLog(const std::string& path, const ReadOptions& options) {
  return detectLogFormat(path) == LogFormat::Hdf5 ? readLogHdf5(path, options)
                                                  : readLogCsv(path, options);
}

void writeLog(const Log& log, const std::string& path, LogFormat format,
              const WriteOptions& options) {
  if (format == LogFormat::Hdf5) {
    writeLogHdf5(log, path, options);
  } else {
    writeLogCsv(log, path, options);
  }
}

void writeLog(const Log& log, const std::string& path, const WriteOptions& options) {
  writeLog(log, path, hasHdf5Extension(path) ? LogFormat::Hdf5 : LogFormat::Csv, options);
}

}  // namespace heft::io
