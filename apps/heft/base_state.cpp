// heft base-state LOG --robot ROBOT --out OUT_LOG: the base pose and twist of a floating-base log
// from its IMU, joint encoders and contact flags, written into a copy of the log
// (docs/guide/base-state.md).
#include <iostream>
#include <memory>
#include <string>

#include "command.hpp"
#include "heft/jobs/base_state_job.hpp"

namespace {

struct BaseStateArgs {
  std::string log;
  std::string robot;
  std::string out;
  std::string config;
  bool overwrite = false;
  bool quiet = false;
};

int runBaseState(const BaseStateArgs& args) {
  using heft::jobs::BaseStateJob;
  BaseStateJob::Config config;
  config.robot = args.robot;
  config.log = args.log;
  if (!args.config.empty()) BaseStateJob::loadOptions(args.config, config);
  heft::jobs::Progress progress = heft::cli::progressFor(args.quiet);
  const BaseStateJob::Result result = BaseStateJob::run(config, progress);
  std::cout << result.report();
  heft::jobs::WriteOptions write;
  write.overwrite = args.overwrite;
  for (const std::string& path : BaseStateJob::write(result, args.out, write))
    std::cout << "wrote " << path << "\n";
  return 0;
}

std::function<int()> setupBaseState(CLI::App& app) {
  auto args = std::make_shared<BaseStateArgs>();
  app.add_option("LOG", args->log, "floating-base log with imu and contacts groups")->required();
  app.add_option("--robot", args->robot, "robot short name or URDF / MJCF path")->required();
  app.add_option("--out", args->out,
                 "output log (.h5 / .hdf5, else a CSV folder); result.json "
                 "goes next to it")
      ->required();
  app.add_option("--config", args->config, "YAML options (docs/guide/base-state.md)");
  app.add_flag("--overwrite", args->overwrite, "replace the output log and result.json");
  app.add_flag("--quiet", args->quiet, "no progress lines on stderr");
  return [args] { return runBaseState(*args); };
}

const heft::cli::Registration registration{
    "base-state",
    "Estimate the base pose and twist of a floating-base log from its IMU, joint encoders and "
    "contact flags (contact-aided invariant EKF + RTS smoother); write them into a copy of the log",
    &setupBaseState};

}  // namespace
