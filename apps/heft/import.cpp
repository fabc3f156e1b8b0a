// heft import BAG --map MAPPING --out LOG: a ROS 2 bag (sqlite3 or MCAP) to a heft log
// (docs/guide/import.md).
#include <iostream>
#include <memory>
#include <string>

#include "command.hpp"
#include "heft/jobs/import_bag_job.hpp"

namespace {

struct ImportArgs {
  std::string bag;
  std::string mapping;
  std::string out;
  bool overwrite = false;
  bool quiet = false;
};

int runImport(const ImportArgs& args) {
  using heft::jobs::ImportBagJob;
  ImportBagJob::Config config;
  ImportBagJob::loadMapping(args.mapping, config);
  config.bag = args.bag;
  heft::jobs::Progress progress = heft::cli::progressFor(args.quiet);
  const ImportBagJob::Result result = ImportBagJob::run(config, progress);
  std::cout << result.report();
  heft::jobs::WriteOptions write;
  write.overwrite = args.overwrite;
  for (const std::string& path : ImportBagJob::write(result, args.out, write))
    std::cout << "wrote " << path << "\n";
  return 0;
}

std::function<int()> setupImport(CLI::App& app) {
  auto args = std::make_shared<ImportArgs>();
  app.add_option("BAG", args->bag, "ROS 2 bag: its folder, or its .db3 / .mcap file")->required();
  app.add_option("--map", args->mapping,
                 "YAML mapping of topics to log groups (docs/guide/import.md)")
      ->required();
  app.add_option("--out", args->out, "output log (.h5 / .hdf5, else a CSV folder)")->required();
  app.add_flag("--overwrite", args->overwrite, "replace the output log");
  app.add_flag("--quiet", args->quiet, "no progress lines on stderr");
  return [args] { return runImport(*args); };
}

const heft::cli::Registration registration{
    "import",
    "Import a ROS 2 bag (sqlite3 or MCAP: JointState, Imu, WrenchStamped, Odometry, PoseStamped, "
    "tf) into a heft log, with a YAML mapping of topics to groups",
    &setupImport};

}  // namespace
