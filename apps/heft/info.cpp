// heft info MODEL: a robot's bodies, masses, inertias and their physical consistency.
#include <iostream>
#include <string>

#include "command.hpp"
#include "heft/jobs/inspect_jobs.hpp"

namespace {

struct InfoArgs {
  std::string model;
  bool json = false;
  bool free_flyer = false;
  bool fixed_base = false;
  double tolerance = 0.0;
};

int runInfo(const InfoArgs& args) {
  heft::jobs::InfoJob::Config config;
  config.model = args.model;
  if (args.free_flyer) config.base = heft::model::BaseType::FreeFlyer;
  if (args.fixed_base) config.base = heft::model::BaseType::Fixed;
  config.tolerance = args.tolerance;
  const heft::jobs::InfoJob::Result result = heft::jobs::InfoJob::run(config);
  if (args.json)
    std::cout << result.json.dump(2) << "\n";
  else
    std::cout << result.table << std::flush;
  return 0;
}

std::function<int()> setupInfo(CLI::App& app) {
  auto args = std::make_shared<InfoArgs>();
  app.add_option("MODEL", args->model,
                 "robot short name (go2, talos, panda, ...) or path to a URDF / MJCF file")
      ->required();
  app.add_flag("--json", args->json, "print JSON instead of a table");
  auto* ff = app.add_flag("--free-flyer", args->free_flyer,
                          "free-flyer base (default for legged robots and unknown URDFs)");
  auto* fixed = app.add_flag("--fixed-base", args->fixed_base,
                             "root link welded to the world (default for arms)");
  ff->excludes(fixed);
  app.add_option("--tolerance", args->tolerance,
                 "consistency margins must exceed this (kg, kg m^2); default 0")
      ->check(CLI::Number);
  return [args]() { return runInfo(*args); };
}

const heft::cli::Registration registration{
    "info", "Print a robot's bodies, masses, inertias and physical-consistency violations",
    &setupInfo};

}  // namespace
