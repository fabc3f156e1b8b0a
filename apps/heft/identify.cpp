// heft identify CONFIG --out DIR: identified parameters, their uncertainty and a new URDF
// (docs/guide/identify.md).
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "command.hpp"
#include "heft/common/error.hpp"
#include "heft/jobs/identify_job.hpp"

namespace {

struct IdentifyArgs {
  std::string config;
  std::string out;
  std::vector<std::string> logs;
  bool overwrite = false;
  bool check = false;
  bool quiet = false;
};

int runIdentify(const IdentifyArgs& args) {
  using heft::jobs::IdentifyJob;
  IdentifyJob::Config config = IdentifyJob::load(args.config);
  if (args.check) {  // the config alone: read and validated, nothing run (heft fleet's first step)
    std::cout << args.config << ": a valid identify config\n";
    return 0;
  }
  if (args.out.empty()) throw heft::InputError("--out: required (the output folder)");
  if (!args.logs.empty()) {  // the same job on other recordings (heft fleet runs it per log)
    config.log = args.logs.front();
    config.more_logs.assign(args.logs.begin() + 1, args.logs.end());
  }
  heft::jobs::Progress progress = heft::cli::progressFor(args.quiet);
  const IdentifyJob::Result result = IdentifyJob::run(config, progress);
  std::cout << result.report();
  heft::jobs::WriteOptions write;
  write.overwrite = args.overwrite;
  const auto written = IdentifyJob::write(result, args.out, write);
  for (const std::string& path : written) std::cout << "wrote " << path << "\n";
  if (!result.writable()) {
    std::cerr << "heft identify: no URDF written: " << result.refusal() << "\n";
    return 1;
  }
  return 0;
}

std::function<int()> setupIdentify(CLI::App& app) {
  auto args = std::make_shared<IdentifyArgs>();
  app.add_option("CONFIG", args->config, "YAML job config (docs/guide/identify.md)")->required();
  app.add_option("--out", args->out, "output folder: result.json and robot.urdf (required)");
  app.add_option("--log", args->logs,
                 "log(s) replacing the config's `log` (relative to the working folder)");
  app.add_flag("--overwrite", args->overwrite, "replace result.json / robot.urdf in --out");
  app.add_flag("--quiet", args->quiet, "no progress lines on stderr");
  app.add_flag("--check", args->check,
               "only read and validate CONFIG (exit 2 naming the file, line and key), run nothing");
  return [args] { return runIdentify(*args); };
}

const heft::cli::Registration registration{
    "identify",
    "Identify inertial and friction parameters from a log (least squares, energy or "
    "physically consistent MAP); write result.json and a new URDF",
    &setupIdentify};

}  // namespace
