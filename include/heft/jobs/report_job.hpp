#pragma once
/// \file The `heft report` job: one self-contained HTML page (inline SVG plots) from the output
/// folders of heft identify, sample, estimate and filter runs on one robot, drawn by
/// python/report.py (matplotlib, in .deps/venv-tools). docs/guide/report.md lists what it shows.
#include <string>
#include <vector>

#include "heft/jobs/job.hpp"

namespace heft::jobs {

struct ReportJob {
  /// Checks the folders (each holds the result.json or summary.json of a heft identify, sample,
  /// estimate or filter run, all of one robot), draws the page and writes it to `out` atomically
  /// (its folder created); returns its path.
  /// \throws InputError (nothing written) for a folder without a readable result.json, a result
  ///   without a robot (another job's), results of different robots, or an existing `out` without
  ///   options.overwrite; SolveError when the drawing tool cannot run.
  static std::string run(const std::vector<std::string>& folders, const std::string& out,
                         const WriteOptions& options = {});
};

}  // namespace heft::jobs
