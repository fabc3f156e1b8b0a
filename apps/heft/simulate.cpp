// heft simulate SCENARIO --out FILE: a MuJoCo ground-truth log (docs/guide/simulate.md).
#include <cstdint>
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
  bool overwrite = false;
  bool quiet = false;
};

int runSimulate(const SimulateArgs& args) {
  using heft::jobs::SimulateJob;
  if (args.list) {
    std::cout << SimulateJob::list() << std::flush;
    return 0;
  }
  SimulateJob::Config config;
  config.scenario = args.scenario;
  config.options.seed = args.seed;
  config.options.noise = args.noise;
  config.options.duration = args.duration;
  config.validate();
  heft::jobs::WriteOptions write;
  write.overwrite = args.overwrite;
  // refuse an existing destination before simulating, not after
  SimulateJob::checkOutput(args.out, write);
  heft::jobs::Progress progress;
  const SimulateJob::Result result = SimulateJob::run(config, progress);
  if (!args.quiet) std::cerr << result.report();
  SimulateJob::write(result, args.out, write);
  if (!args.quiet) std::cerr << "wrote     " << args.out << "\n";
  return 0;
}

std::function<int()> setupSimulate(CLI::App& app) {
  auto args = std::make_shared<SimulateArgs>();
  app.add_option("SCENARIO", args->scenario, "scenario name (see --list)");
  app.add_flag("--list", args->list, "list the scenarios, one line each, and exit");
  app.add_option("--out", args->out, "log to write: FILE.h5 (HDF5) or a folder (CSV)");
  app.add_option("--seed", args->seed, "noise seed; one seed gives one file, byte for byte")
      ->capture_default_str();
  app.add_option("--noise", args->noise, "noise profile: none, nominal or harsh")
      ->check(CLI::IsMember({"none", "nominal", "harsh"}))
      ->capture_default_str();
  app.add_option("--duration", args->duration, "simulated seconds (default: the scenario's)")
      ->check(CLI::PositiveNumber);
  app.add_flag("--overwrite", args->overwrite, "replace an existing log");
  app.add_flag("--quiet", args->quiet, "print nothing on success");
  return [args]() { return runSimulate(*args); };
}

const heft::cli::Registration registration{
    "simulate", "Simulate a ground-truth scenario in MuJoCo and write its log (--list shows them)",
    &setupSimulate};

}  // namespace
