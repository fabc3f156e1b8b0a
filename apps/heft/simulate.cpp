// heft simulate SCENARIO --out FILE: a MuJoCo ground-truth log (docs/sim.md).
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <memory>
#include <string>

#include "command.hpp"
#include "heft/common/error.hpp"
#include "heft/io/log_io.hpp"
#include "heft/sim/scenario.hpp"

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
  if (args.list) {
    for (const auto& s : heft::sim::scenarios()) {
      std::printf("%-22s %s\n", s.name.c_str(), s.description.c_str());
    }
    std::fflush(stdout);
    return 0;
  }
  if (args.scenario.empty())
    throw heft::InputError("SCENARIO: expected a name (see --list), got none");
  if (args.out.empty())
    throw heft::InputError("--out: expected a .h5 file or a CSV folder, got none");
  const heft::sim::Scenario& scenario = heft::sim::findScenario(args.scenario);
  heft::sim::SimulationOptions options;
  options.seed = args.seed;
  options.noise = args.noise;
  options.duration = args.duration;
  options.validate();
  // refuse an existing destination before simulating, not after
  heft::io::WriteOptions write;
  write.overwrite = args.overwrite;
  if (!args.overwrite && std::filesystem::exists(args.out)) {
    throw heft::InputError("--out " + args.out + ": expected a new path, got an existing one " +
                           "(pass --overwrite to replace it)");
  }

  const heft::sim::SimulationResult result = heft::sim::simulate(scenario, options);
  if (!args.quiet) std::cerr << result.summary.report();
  if (!result.summary.ok()) {
    throw heft::SolveError("scenario " + scenario.name + ": " + toString(result.summary.status) +
                           ": " + result.summary.message + " (no log written)");
  }
  heft::io::writeLog(result.log, args.out, write);
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
