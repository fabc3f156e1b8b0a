// heft simulate SCENARIO --out FILE: a MuJoCo ground-truth log (docs/guide/simulate.md).
#include <cstdint>
#include <filesystem>
#include <iostream>
#include <memory>
#include <string>

#include "command.hpp"
#include "heft/jobs/simulate_job.hpp"

namespace {

struct SimulateArgs {
  std::string scenario;
  std::string out;
  std::uint64_t seed = 0;
  std::string noise = "nominal";
  double duration = 0;
  bool list = false;
  bool print = false;
  bool overwrite = false;
  bool quiet = false;
  bool force_torque = false;
  // set when the option was given (it then replaces the scenario file's value)
  CLI::Option* seed_option = nullptr;
  CLI::Option* noise_option = nullptr;
};

// A scenario file (a path that exists, or a name ending in .yaml / .yml), else a built-in name.
bool isScenarioFile(const std::string& scenario) {
  const std::string extension = std::filesystem::path(scenario).extension().string();
  return extension == ".yaml" || extension == ".yml" ||
         (scenario.find('/') != std::string::npos && std::filesystem::exists(scenario));
}

int runSimulate(const SimulateArgs& args) {
  using heft::jobs::SimulateJob;
  if (args.list) {
    std::cout << SimulateJob::list() << std::flush;
    return 0;
  }
  SimulateJob::Config config = isScenarioFile(args.scenario) ? SimulateJob::load(args.scenario)
                                                             : SimulateJob::builtIn(args.scenario);
  if (args.seed_option->count() > 0) config.options.seed = args.seed;
  if (args.noise_option->count() > 0) {
    config.options.noise = args.noise;
    config.options.profile.reset();
  }
  if (args.force_torque) config.options.force_torque = true;
  config.options.duration = args.duration;
  config.validate();
  if (args.print) {
    if (args.duration > 0) config.scenario.duration = args.duration;
    std::cout << SimulateJob::toYaml(config) << std::flush;
    return 0;
  }
  heft::jobs::WriteOptions write;
  write.overwrite = args.overwrite;
  // refuse an existing destination before simulating, not after
  SimulateJob::checkOutput(args.out, write);
  heft::jobs::Progress progress = heft::cli::progressFor(args.quiet);
  const SimulateJob::Result result = SimulateJob::run(config, progress);
  if (!args.quiet) std::cerr << result.report();
  SimulateJob::write(result, args.out, write);
  if (!args.quiet) std::cerr << "wrote     " << args.out << "\n";
  return 0;
}

std::function<int()> setupSimulate(CLI::App& app) {
  auto args = std::make_shared<SimulateArgs>();
  app.add_option("SCENARIO", args->scenario,
                 "scenario name (see --list) or scenario file (FILE.yaml)");
  app.add_flag("--list", args->list, "list the built-in scenarios, one line each, and exit");
  app.add_flag("--print", args->print,
               "print the scenario as a scenario file (YAML) and exit, simulating nothing");
  app.add_option("--out", args->out, "log to write: FILE.h5 (HDF5) or a folder (CSV)");
  args->seed_option =
      app.add_option("--seed", args->seed,
                     "noise seed (default: the file's, else 0); one seed gives one file, byte "
                     "for byte");
  args->noise_option = app.add_option("--noise", args->noise,
                                      "noise profile: none, nominal or harsh (default: the "
                                      "file's, else nominal)")
                           ->check(CLI::IsMember({"none", "nominal", "harsh"}));
  app.add_option("--duration", args->duration, "simulated seconds (default: the scenario's)")
      ->check(CLI::PositiveNumber);
  app.add_flag("--force-torque", args->force_torque,
               "also log force/torque sensors at the contact frames (the force_torque group; "
               "same as the file's sensors: {force_torque: true})");
  app.add_flag("--overwrite", args->overwrite, "replace an existing log");
  app.add_flag("--quiet", args->quiet, "print nothing on success (no progress lines either)");
  return [args]() { return runSimulate(*args); };
}

const heft::cli::Registration registration{
    "simulate",
    "Simulate a ground-truth scenario (a built-in name or a scenario file) in MuJoCo and write its "
    "log (--list shows the built-in ones)",
    &setupSimulate};

}  // namespace
