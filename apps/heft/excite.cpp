// heft excite CONFIG --out DIR: a Fourier excitation designed for a fixed-base arm, written as a
// scenario file for heft simulate, a CSV of the trajectory and result.json
// (docs/guide/excite.md).
#include <iostream>
#include <memory>
#include <string>

#include "command.hpp"
#include "heft/jobs/excite_job.hpp"

namespace {

struct ExciteArgs {
  std::string config;
  std::string out;
  bool overwrite = false;
  bool quiet = false;
};

int runExcite(const ExciteArgs& args) {
  using heft::jobs::ExciteJob;
  const ExciteJob::Config config = ExciteJob::load(args.config);
  heft::jobs::Progress progress = heft::cli::progressFor(args.quiet);
  const ExciteJob::Result result = ExciteJob::run(config, progress);
  std::cout << result.report();
  heft::jobs::WriteOptions write;
  write.overwrite = args.overwrite;
  for (const std::string& path : ExciteJob::write(result, args.out, write))
    std::cout << "wrote " << path << "\n";
  return 0;
}

std::function<int()> setupExcite(CLI::App& app) {
  auto args = std::make_shared<ExciteArgs>();
  app.add_option("CONFIG", args->config, "YAML job config (docs/guide/excite.md)")->required();
  app.add_option("--out", args->out, "output folder: scenario.yaml, trajectory.csv, result.json")
      ->required();
  app.add_flag("--overwrite", args->overwrite, "replace the outputs in --out");
  app.add_flag("--quiet", args->quiet, "no progress lines on stderr");
  return [args] { return runExcite(*args); };
}

const heft::cli::Registration registration{
    "excite",
    "Design a Fourier excitation for a fixed-base arm (CMA-ES on the base regressor's condition "
    "number or information within the joint limits): a scenario for heft simulate, a CSV and "
    "the predicted identifiability before and after",
    &setupExcite};

}  // namespace
