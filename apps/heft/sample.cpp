// heft sample CONFIG --out DIR: sampling-based identification (CMA-ES over MuJoCo rollouts of the
// log's clips): result.json, robot.urdf and the CMA-ES history (docs/guide/sample.md).
#include <iostream>
#include <memory>
#include <string>

#include "command.hpp"
#include "heft/jobs/sample_job.hpp"

namespace {

struct SampleArgs {
  std::string config;
  std::string out;
  int threads = -1;
  bool overwrite = false;
  bool quiet = false;
};

int runSample(const SampleArgs& args) {
  using heft::jobs::SampleJob;
  SampleJob::Config config = SampleJob::load(args.config);
  if (args.threads >= 0) config.sampling.threads = args.threads;
  heft::jobs::Progress progress = heft::cli::progressFor(args.quiet);
  const SampleJob::Result result = SampleJob::run(config, progress);
  std::cout << result.report();
  heft::jobs::WriteOptions write;
  write.overwrite = args.overwrite;
  for (const std::string& path : SampleJob::write(result, args.out, write))
    std::cout << "wrote " << path << "\n";
  return 0;
}

std::function<int()> setupSample(CLI::App& app) {
  auto args = std::make_shared<SampleArgs>();
  app.add_option("CONFIG", args->config, "YAML job config (docs/guide/sample.md)")->required();
  app.add_option("--out", args->out, "output folder: result.json, robot.urdf, history.csv")
      ->required();
  app.add_option("--threads", args->threads,
                 "rollout threads (overrides the config; 0 = every hardware thread)")
      ->check(CLI::NonNegativeNumber);
  app.add_flag("--overwrite", args->overwrite, "replace the outputs in --out");
  app.add_flag("--quiet", args->quiet, "no progress lines on stderr");
  return [args] { return runSample(*args); };
}

const heft::cli::Registration registration{
    "sample",
    "Identify bodies, actuator gains and saturation, joint friction by sampling: CMA-ES over "
    "MuJoCo rollouts of the log's clips (spi-active), scored on held-out clips",
    &setupSample};

}  // namespace
