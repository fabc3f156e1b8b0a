// heft estimate CONFIG --out DIR: batch MAP estimation of the trajectory and the inertial
// parameters with the parametrized Riccati solver (docs/estimation.md).
#include <iostream>
#include <memory>
#include <string>

#include "command.hpp"
#include "heft/estimation/job.hpp"

namespace {

struct EstimateArgs {
  std::string config;
  std::string out;
  std::string log;  // replaces the config's log when set
  bool overwrite = false;
  bool quiet = false;
};

int runEstimate(const EstimateArgs& args) {
  heft::estimation::EstimateJobConfig config = heft::estimation::loadEstimateJobConfig(args.config);
  if (!args.log.empty()) config.log = args.log;
  const heft::estimation::EstimateJobResult result =
      heft::estimation::runEstimateJob(config, args.quiet ? nullptr : &std::cerr);
  std::cout << result.report();
  for (const std::string& path :
       heft::estimation::writeEstimateJobOutputs(config, result, args.out, args.overwrite))
    std::cout << "wrote " << path << "\n";
  if (!result.writable()) {
    std::cerr << "heft estimate: no URDF written: the solve "
              << heft::estimation::toString(result.summary.status)
              << (result.summary.message.empty() ? "" : " (" + result.summary.message + ")")
              << "; result.json and trajectory.h5 hold the last accepted iterate\n";
    return 1;
  }
  return 0;
}

std::function<int()> setupEstimate(CLI::App& app) {
  auto args = std::make_shared<EstimateArgs>();
  app.add_option("CONFIG", args->config, "YAML job config (docs/estimation.md)")->required();
  app.add_option("--out", args->out, "output folder: result.json, trajectory.h5, robot.urdf")
      ->required();
  app.add_option("--log", args->log, "log to estimate from instead of the config's log");
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
