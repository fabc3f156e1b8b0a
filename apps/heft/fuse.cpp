// heft fuse CONFIG --out DIR: several heft identify runs of one robot fused into one estimate
// (docs/guide/fuse.md).
#include <iostream>
#include <memory>
#include <string>

#include "command.hpp"
#include "heft/jobs/fuse_job.hpp"

namespace {

struct FuseArgs {
  std::string config;
  std::string out;
  bool overwrite = false;
  bool quiet = false;
};

int runFuse(const FuseArgs& args) {
  using heft::jobs::FuseJob;
  const FuseJob::Config config = FuseJob::load(args.config);
  heft::jobs::Progress progress = heft::cli::progressFor(args.quiet);
  const FuseJob::Result result = FuseJob::run(config, progress);
  std::cout << result.report();
  heft::jobs::WriteOptions write;
  write.overwrite = args.overwrite;
  for (const std::string& path : FuseJob::write(result, args.out, write))
    std::cout << "wrote " << path << "\n";
  if (!result.writable()) {
    std::cerr << "heft fuse: no URDF written: " << result.fused.refusal() << "\n";
    return 1;
  }
  return 0;
}

std::function<int()> setupFuse(CLI::App& app) {
  auto args = std::make_shared<FuseArgs>();
  app.add_option("CONFIG", args->config, "YAML config (docs/guide/fuse.md)")->required();
  app.add_option("--out", args->out, "output folder: result.json, robot.urdf, information.json")
      ->required();
  app.add_flag("--overwrite", args->overwrite, "replace existing outputs in --out");
  app.add_flag("--quiet", args->quiet, "no progress lines on stderr");
  return [args] { return runFuse(*args); };
}

const heft::cli::Registration registration{
    "fuse",
    "Fuse several heft identify runs of one robot (their information.json) into one estimate: "
    "per-run torque offsets marginalized, outlier runs left out; write result.json and a URDF",
    &setupFuse};

}  // namespace
