// heft estimate CONFIG --out DIR: batch MAP estimation of the trajectory and the inertial
// parameters with the parametrized Riccati solver (docs/guide/estimate.md).
#include <iostream>
#include <memory>
#include <string>

#include "command.hpp"
#include "heft/jobs/estimate_job.hpp"

namespace {

struct EstimateArgs {
  std::string config;
  std::string out;
  std::string log;  // replaces the config's log when set
  bool overwrite = false;
  bool quiet = false;
};

int runEstimate(const EstimateArgs& args) {
  using heft::jobs::EstimateJob;
  EstimateJob::Config config = EstimateJob::load(args.config);
  if (!args.log.empty()) {  // the one log instead of the config's log or list of logs
    config.log = args.log;
    config.more_logs.clear();
  }
  heft::jobs::Progress progress = heft::cli::progressFor(args.quiet);
  const EstimateJob::Result result = EstimateJob::run(config, progress);
  std::cout << result.report();
  heft::jobs::WriteOptions write;
  write.overwrite = args.overwrite;
  for (const std::string& path : EstimateJob::write(result, args.out, write))
    std::cout << "wrote " << path << "\n";
  if (!result.writable()) {
    std::cerr << "heft estimate: no URDF written: " << result.refusal() << "\n";
    return 1;
  }
  return 0;
}

std::function<int()> setupEstimate(CLI::App& app) {
  auto args = std::make_shared<EstimateArgs>();
  app.add_option("CONFIG", args->config, "YAML job config (docs/guide/estimate.md)")->required();
  app.add_option("--out", args->out, "output folder: result.json, trajectory.h5, robot.urdf")
      ->required();
  app.add_option("--log", args->log,
                 "log to estimate from instead of the config's log (or list of logs)");
  app.add_flag("--overwrite", args->overwrite, "replace the outputs in --out");
  app.add_flag("--quiet", args->quiet, "no progress lines on stderr");
  return [args] { return runEstimate(*args); };
}

const heft::cli::Registration registration{
    "estimate",
    "Estimate the whole trajectory and the inertial parameters of chosen bodies from a log "
    "(batch MAP, parametrized multiple-shooting Riccati); write result.json, trajectory.h5 and "
    "a new URDF",
    &setupEstimate};

}  // namespace
