#pragma once
/// \file The `heft fleet` job: a manifest of robots and their logs, run by python/fleet.py (the
/// tools venv's Python, Dask's distributed scheduler): one `heft identify` task per log, one `heft
/// fuse` per robot, fleet.json and fleet.html. User guide: docs/guide/fleet.md; design and
/// measurements: docs/fleet.md.
#include <string>
#include <vector>

namespace heft::jobs {

struct FleetJob {
  struct Args {
    std::string manifest;
    std::string out;
    int workers = 0;  ///< 0: the manifest's `workers`, else the cores
    bool report = true;
    /// A running Dask scheduler (tcp://host:8786) instead of a local cluster.
    std::string scheduler;
  };
  /// argv of the tool (interpreter first); `heft` is the executable its tasks run.
  static std::vector<std::string> commandLine(const Args& args, const std::string& heft);
};

}  // namespace heft::jobs
