// heft predict CONFIG --out DIR: a model's joint-torque prediction on a log it was not fitted on,
// next to the nominal model's (docs/guide/predict.md).
#include <iostream>
#include <memory>
#include <string>

#include "command.hpp"
#include "heft/jobs/predict_job.hpp"

namespace {

struct PredictArgs {
  std::string config;
  std::string out;
  bool overwrite = false;
  bool quiet = false;
};

int runPredict(const PredictArgs& args) {
  using heft::jobs::PredictJob;
  const PredictJob::Config config = PredictJob::load(args.config);
  heft::jobs::Progress progress = heft::cli::progressFor(args.quiet);
  const PredictJob::Result result = PredictJob::run(config, progress);
  std::cout << result.report();
  heft::jobs::WriteOptions write;
  write.overwrite = args.overwrite;
  for (const std::string& path : PredictJob::write(result, args.out, write))
    std::cout << "wrote " << path << "\n";
  return 0;
}

std::function<int()> setupPredict(CLI::App& app) {
  auto args = std::make_shared<PredictArgs>();
  app.add_option("CONFIG", args->config, "YAML job config (docs/guide/predict.md)")->required();
  app.add_option("--out", args->out, "output folder: result.json")->required();
  app.add_flag("--overwrite", args->overwrite, "replace result.json in --out");
  app.add_flag("--quiet", args->quiet, "no progress lines on stderr");
  return [args] { return runPredict(*args); };
}

const heft::cli::Registration registration{
    "predict",
    "Predict a log's joint torques with a model (URDF, plus friction, armature and torque "
    "offsets from a result.json) next to the nominal model: RMSE and relative error per joint",
    &setupPredict};

}  // namespace
