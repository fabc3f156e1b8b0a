// heft explore CONFIG --out DIR: active exploration (spi-active Sec. 4): stage 1 by heft sample,
// then base commands designed for the Fisher information of its estimate: result.json,
// scenario.yaml (heft simulate plays it), reference.csv (docs/guide/explore.md).
#include <iostream>
#include <memory>
#include <string>

#include "command.hpp"
#include "heft/jobs/explore_job.hpp"

namespace {

struct ExploreArgs {
  std::string config;
  std::string out;
  std::string stage1_result;
  int threads = -1;
  bool overwrite = false;
  bool quiet = false;
};

int runExplore(const ExploreArgs& args) {
  using heft::jobs::ExploreJob;
  ExploreJob::Config config = ExploreJob::load(args.config);
  if (args.threads >= 0) config.exploration.threads = args.threads;
  if (!args.stage1_result.empty()) config.stage1_result = args.stage1_result;
  heft::jobs::Progress progress = heft::cli::progressFor(args.quiet);
  const ExploreJob::Result result = ExploreJob::run(config, progress);
  std::cout << result.report();
  heft::jobs::WriteOptions write;
  write.overwrite = args.overwrite;
  for (const std::string& path : ExploreJob::write(result, args.out, write))
    std::cout << "wrote " << path << "\n";
  return 0;
}

std::function<int()> setupExplore(CLI::App& app) {
  auto args = std::make_shared<ExploreArgs>();
  app.add_option("CONFIG", args->config, "YAML job config (docs/guide/explore.md)")->required();
  app.add_option("--out", args->out, "output folder: result.json, scenario.yaml, reference.csv")
      ->required();
  app.add_option("--threads", args->threads,
                 "rollout threads (overrides the config; 0 = every hardware thread)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--stage1-result", args->stage1_result,
                 "a heft sample result.json of the config's sample: its estimate, not a new "
                 "stage 1 (overrides stage1_result)");
  app.add_flag("--overwrite", args->overwrite, "replace the outputs in --out");
  app.add_flag("--quiet", args->quiet, "no progress lines on stderr");
  return [args] { return runExplore(*args); };
}

const heft::cli::Registration registration{
    "explore",
    "Design the commands of a second recording for the Fisher information of a heft sample "
    "estimate (spi-active's active exploration): a scenario heft simulate plays and a CSV",
    &setupExplore};

}  // namespace
