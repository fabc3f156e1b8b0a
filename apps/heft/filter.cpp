// heft filter CONFIG --out DIR: replay a log through the online inertial EKF (and the linear-KF
// baseline) as a control loop would, write the estimates over time and a summary
// (docs/guide/filter.md).
#include <iostream>
#include <memory>
#include <string>

#include "command.hpp"
#include "heft/jobs/filter_job.hpp"

namespace {

struct FilterArgs {
  std::string config;
  std::string out;
  std::string log;  // replaces the config's log when set
  bool overwrite = false;
  bool quiet = false;
};

int runFilter(const FilterArgs& args) {
  using heft::jobs::FilterJob;
  FilterJob::Config config = FilterJob::load(args.config);
  if (!args.log.empty()) config.log = args.log;
  heft::jobs::Progress progress = heft::cli::progressFor(args.quiet);
  const FilterJob::Result result = FilterJob::run(config, progress);
  std::cout << result.report();
  heft::jobs::WriteOptions write;
  write.overwrite = args.overwrite;
  for (const std::string& path : FilterJob::write(result, args.out, write))
    std::cout << "wrote " << path << "\n";
  return 0;
}

std::function<int()> setupFilter(CLI::App& app) {
  auto args = std::make_shared<FilterArgs>();
  app.add_option("CONFIG", args->config, "YAML job config (docs/guide/filter.md)")->required();
  app.add_option("--out", args->out, "output folder: estimates.h5, baseline.h5, summary.json")
      ->required();
  app.add_option("--log", args->log, "log to replay instead of the config's log");
  app.add_flag("--overwrite", args->overwrite, "replace the outputs in --out");
  app.add_flag("--quiet", args->quiet, "no progress lines on stderr");
  return [args] { return runFilter(*args); };
}

const heft::cli::Registration registration{
    "filter",
    "Replay a log through the online physically consistent inertial EKF (log-Cholesky) and the "
    "linear-KF baseline; write the estimates over time and a summary against truth",
    &setupFilter};

}  // namespace
