// heft identify CONFIG --out DIR: identified parameters, their uncertainty and a new URDF
// (docs/identify.md).
#include <iostream>
#include <memory>
#include <string>

#include "command.hpp"
#include "heft/common/error.hpp"
#include "heft/identify/job.hpp"

namespace {

struct IdentifyArgs {
  std::string config;
  std::string out;
  bool overwrite = false;
  bool quiet = false;
};

int runIdentify(const IdentifyArgs& args) {
  const heft::identify::JobConfig config = heft::identify::loadJobConfig(args.config);
  heft::identify::ProgressCallback progress;
  if (!args.quiet) progress = [](const std::string& line) { std::cerr << line << "\n"; };
  const heft::identify::JobResult result = heft::identify::runJob(config, progress);
  std::cout << result.report();
  const auto written = heft::identify::writeJobOutputs(config, result, args.out, args.overwrite);
  for (const std::string& path : written) std::cout << "wrote " << path << "\n";
  if (!result.writable()) {
    std::cerr << "heft identify: no URDF written: "
              << (result.status == heft::identify::Status::Failed
                      ? "the solve failed (" + result.message + ")"
                      : std::string("an estimate is not physically consistent"))
              << "\n";
    return 1;
  }
  return 0;
}

std::function<int()> setupIdentify(CLI::App& app) {
  auto args = std::make_shared<IdentifyArgs>();
  app.add_option("CONFIG", args->config, "YAML job config (docs/identify.md)")->required();
  app.add_option("--out", args->out, "output folder: result.json and robot.urdf")->required();
  app.add_flag("--overwrite", args->overwrite, "replace result.json / robot.urdf in --out");
  app.add_flag("--quiet", args->quiet, "no progress lines on stderr");
  return [args] { return runIdentify(*args); };
}

const heft::cli::Registration registration{
    "identify",
    "Identify inertial and friction parameters from a log (least squares, energy or "
    "physically consistent MAP); write result.json and a new URDF",
    &setupIdentify};

}  // namespace
