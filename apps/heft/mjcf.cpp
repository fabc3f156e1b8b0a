// heft mjcf RESULT --model MODEL --out OUT.xml: an identify or estimate result written into a
// MuJoCo model (docs/guide/mjcf.md).
#include <iostream>
#include <memory>
#include <string>

#include "command.hpp"
#include "heft/jobs/mjcf_export.hpp"

namespace {

struct MjcfArgs {
  std::string result;
  std::string model;
  std::string out;
  bool overwrite = false;
};

int runMjcf(const MjcfArgs& args) {
  heft::jobs::WriteOptions write;
  write.overwrite = args.overwrite;
  for (const std::string& note :
       heft::jobs::MjcfExport::write(args.result, args.model, args.out, write))
    std::cout << "note: " << note << "\n";
  std::cout << "wrote " << args.out << "\n";
  return 0;
}

std::function<int()> setupMjcf(CLI::App& app) {
  auto args = std::make_shared<MjcfArgs>();
  app.add_option("RESULT", args->result, "result.json of heft identify or heft estimate")
      ->required();
  app.add_option("--model", args->model,
                 "the robot's MuJoCo model (MJCF, or a URDF MuJoCo reads) whose bodies have the "
                 "URDF links' names and frames")
      ->required();
  app.add_option("--out", args->out, "the MJCF to write")->required();
  app.add_flag("--overwrite", args->overwrite, "replace --out if it exists");
  return [args] { return runMjcf(*args); };
}

const heft::cli::Registration registration{
    "mjcf",
    "Write an identify or estimate result into a MuJoCo model: inertials of the identified "
    "bodies, armature, damping and frictionloss of the friction joints",
    &setupMjcf};

}  // namespace
