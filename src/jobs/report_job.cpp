#include "heft/jobs/report_job.hpp"

#include <filesystem>
#include <nlohmann/json.hpp>

#include "heft/common/error.hpp"
#include "heft/io/atomic_file.hpp"
#include "heft/model/model.hpp"
#include "python_tool.hpp"

namespace heft::jobs {

namespace fs = std::filesystem;

namespace {

// The robot a run's JSON names: result.json's robot.name, or summary.json's robot (heft filter).
std::string robotOf(const nlohmann::json& result) {
  if (!result.contains("robot")) return "";
  const nlohmann::json& robot = result["robot"];
  if (robot.is_string()) return robot.get<std::string>();
  if (robot.is_object() && robot.contains("name") && robot["name"].is_string())
    return robot["name"].get<std::string>();
  return "";
}

}  // namespace

std::string ReportJob::run(const std::vector<std::string>& folders, const std::string& out,
                           const WriteOptions& options) {
  require(!folders.empty(), "RESULT_DIR", "at least one output folder of a heft job", "none");
  std::string robot, first;
  for (const std::string& folder : folders) {
    // heft filter writes summary.json, the other jobs result.json
    fs::path json = fs::path(folder) / "result.json";
    if (!fs::is_regular_file(json) && fs::is_regular_file(fs::path(folder) / "summary.json"))
      json = fs::path(folder) / "summary.json";
    if (!fs::is_regular_file(json))
      throw InputError(folder +
                       ": expected an output folder of heft identify, sample, estimate or filter "
                       "(with its result.json or summary.json), got none");
    nlohmann::json result;
    try {
      result = nlohmann::json::parse(io::readTextFile(json.string()));
    } catch (const nlohmann::json::exception& e) {
      throw InputError(json.string() + ": not valid JSON (" + e.what() + ")");
    }
    const std::string name = robotOf(result);
    if (name.empty())
      throw InputError(json.string() +
                       ": expected the result of heft identify, sample, estimate or filter (a "
                       "robot name), got none (another program's file)");
    if (robot.empty()) {
      robot = name;
      first = folder;
    } else if (name != robot) {
      throw InputError("a report over results of different robots: " + robot + " (" + first +
                       ") and " + name + " (" + folder + "); one report per robot");
    }
  }
  if (!options.overwrite && fs::exists(out))
    throw InputError("--out " + out +
                     ": expected a new path, got an existing one (pass --overwrite to replace it)");
  const fs::path folder = fs::path(out).parent_path();
  if (!folder.empty()) fs::create_directories(folder);  // as every job's output folder
  ScratchFolder scratch;
  const std::string page = (scratch.path() / "report.html").string();
  // Logs' truth names bodies by joint, estimates by link: the tool gets the robot's pairs (when
  // the robot loads from here: a relative URDF path in a result may not).
  nlohmann::json bodies = nlohmann::json::object();
  try {
    const model::RobotModel loaded = model::loadRobot(robot);
    for (const model::Body& b : loaded.bodies()) bodies[b.name] = b.joint_name;
  } catch (const InputError&) {
  }
  const std::string bodies_file = (scratch.path() / "bodies.json").string();
  io::writeTextFileAtomically(bodies_file, bodies.dump() + "\n", true);
  std::vector<std::string> args{"--bodies", bodies_file, page};
  args.insert(args.end(), folders.begin(), folders.end());
  runPythonTool(pythonTool("report.py"), args, (scratch.path() / "stderr.txt").string());
  io::writeTextFileAtomically(out, io::readTextFile(page), options.overwrite);
  return out;
}

}  // namespace heft::jobs
