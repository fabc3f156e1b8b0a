#pragma once
/// \file What every heft job shares. A job is a class with one shape:
///
///     Config config = XJob::load("job.yaml");              // InputError naming file, line, key
///     XJob::Result result = XJob::run(config, progress);   // a failed solve is a status, not a
///     throw XJob::write(result, "out/", WriteOptions{});         // atomically; result.json always
///
/// apps/heft calls only this layer; the algorithm modules below it take Options and data and know
/// no files, no YAML and no JSON.
#include <chrono>
#include <functional>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

namespace heft::jobs {

/// Where a job's progress lines go. A default Progress is silent; the CLI sends lines to stderr.
/// say() stamps each line with the seconds since start().
class Progress {
 public:
  using Sink = std::function<void(const std::string& line)>;

  Progress() = default;
  explicit Progress(Sink sink);
  /// Lines to `stream` (not owned).
  static Progress to(std::ostream& stream);

  /// Restarts the clock; run() calls it first.
  void start();
  /// Seconds since start().
  double seconds() const;
  /// One line "[t s] text".
  void say(const std::string& text) const;
  /// A stream for solvers that print their own lines: each completed line goes to the sink as it
  /// is. nullptr when silent.
  std::ostream* stream();

 private:
  Sink sink_;
  std::ostream* direct_ = nullptr;
  std::shared_ptr<std::ostream> forwarding_;
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
};

struct WriteOptions {
  /// Replace outputs that exist in the output folder (never the input log). Off by default.
  bool overwrite = false;
};

/// The output folder of a job: created if missing; every file the job may write must be new
/// (unless `overwrite`) and must not be one of the input logs.
/// \throws InputError naming the path.
class OutputFolder {
 public:
  OutputFolder(const std::string& folder, const std::vector<std::string>& file_names,
               const std::vector<std::string>& input_logs, const WriteOptions& options);
  /// folder/name
  std::string path(const std::string& name) const;

 private:
  std::string folder_;
};

}  // namespace heft::jobs
