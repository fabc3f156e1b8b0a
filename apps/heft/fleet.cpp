// heft fleet MANIFEST --out DIR: every log of a fleet identified on a local Dask cluster, fused per
// robot, reported (docs/guide/fleet.md). The work is python/fleet.py's, run with the tools venv's
// Python; this command hands it the manifest and its own path (the tasks run `heft identify` and
// `heft fuse`), and its exit code is the tool's.
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "command.hpp"
#include "heft/common/error.hpp"
#include "heft/jobs/fleet_job.hpp"

namespace {

int runFleet(const heft::jobs::FleetJob::Args& args) {
  const std::string self = std::filesystem::read_symlink("/proc/self/exe").string();
  std::vector<std::string> all = heft::jobs::FleetJob::commandLine(args, self);
  std::vector<char*> argv;
  for (std::string& a : all) argv.push_back(a.data());
  argv.push_back(nullptr);
  execv(argv[0], argv.data());
  throw heft::SolveError("cannot run " + all.front() + " (" + std::strerror(errno) +
                         "): scripts/bootstrap.sh installs it in .deps/venv-tools, or set "
                         "HEFT_PYTHON");
}

std::function<int()> setupFleet(CLI::App& app) {
  auto args = std::make_shared<heft::jobs::FleetJob::Args>();
  auto no_report = std::make_shared<bool>(false);
  app.add_option("MANIFEST", args->manifest, "YAML fleet manifest (docs/guide/fleet.md)")
      ->required();
  app.add_option("--out", args->out,
                 "output folder: runs/ (one folder per log, reused by a rerun), robots/<id>/ "
                 "(fused result.json, robot.urdf), fleet.json, fleet.html")
      ->required();
  app.add_option("--workers", args->workers,
                 "tasks at a time on the local cluster (default: the manifest's `workers`, else "
                 "the cores)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--scheduler", args->scheduler,
                 "a running Dask scheduler (tcp://host:8786) instead of a local cluster; its "
                 "workers must see the manifest's files at the same paths (docs/fleet.md)");
  app.add_flag("--no-report", *no_report, "skip fleet.html");
  return [args, no_report] {
    args->report = !*no_report;
    return runFleet(*args);
  };
}

const heft::cli::Registration registration{
    "fleet",
    "Identify every log of a fleet manifest on a local Dask cluster (one task per log, reruns "
    "skip what is done), fuse each robot's logs into one estimate, write fleet.json and "
    "fleet.html",
    &setupFleet};

}  // namespace
