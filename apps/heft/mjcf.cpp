// heft mjcf RESULT --model MODEL --out OUT.xml: an identify or estimate result written into a
// MuJoCo model; heft mjcf [RESULT] --robot ROBOT --out OUT.xml: heft's own simulation model
// (docs/guide/mjcf.md).
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "command.hpp"
#include "heft/common/error.hpp"
#include "heft/jobs/mjcf_export.hpp"

namespace {

struct MjcfArgs {
  std::string result;
  std::string model;
  std::string robot;
  std::string out;
  bool overwrite = false;
};

int runMjcf(const MjcfArgs& args) {
  heft::jobs::WriteOptions write;
  write.overwrite = args.overwrite;
  if (args.robot.empty() == args.model.empty())
    throw heft::InputError(
        "expected either --model (a MuJoCo model to patch with RESULT) or --robot (heft's own "
        "simulation model of the robot)");
  if (args.robot.empty() && args.result.empty())
    throw heft::InputError("--model needs a RESULT to write into it");
  const std::vector<std::string> notes =
      args.robot.empty()
          ? heft::jobs::MjcfExport::write(args.result, args.model, args.out, write)
          : heft::jobs::MjcfExport::writeSimulationModel(args.robot, args.result, args.out, write);
  for (const std::string& note : notes) std::cout << "note: " << note << "\n";
  std::cout << "wrote " << args.out << "\n";
  return 0;
}

std::function<int()> setupMjcf(CLI::App& app) {
  auto args = std::make_shared<MjcfArgs>();
  app.add_option("RESULT", args->result,
                 "result.json of heft identify or heft estimate (optional with --robot)");
  app.add_option("--model", args->model,
                 "the robot's MuJoCo model (MJCF, or a URDF MuJoCo reads) whose bodies have the "
                 "URDF links' names and frames");
  app.add_option("--robot", args->robot,
                 "instead of --model: heft's own MuJoCo model of this robot (short name or URDF), "
                 "the one heft simulate and heft sample roll out");
  app.add_option("--out", args->out, "the MJCF to write")->required();
  app.add_flag("--overwrite", args->overwrite, "replace --out if it exists");
  return [args] { return runMjcf(*args); };
}

const heft::cli::Registration registration{
    "mjcf",
    "Write an identify or estimate result into a MuJoCo model (inertials of the identified "
    "bodies, armature, damping and frictionloss of the friction joints), or heft's own MuJoCo "
    "model of a robot",
    &setupMjcf};

}  // namespace
