#include "heft/jobs/report_job.hpp"

#include <filesystem>
#include <nlohmann/json.hpp>

#include "heft/common/error.hpp"
#include "heft/io/atomic_file.hpp"
#include "python_tool.hpp"

namespace heft::jobs {

namespace fs = std::filesystem;

std::string ReportJob::run(const std::vector<std::string>& folders, const std::string& out,
                           const WriteOptions& options) {
  require(!folders.empty(), "RESULT_DIR", "at least one output folder of heft identify or sample",
          "none");
  std::string robot, first;
  for (const std::string& folder : folders) {
    const fs::path json = fs::path(folder) / "result.json";
    if (!fs::is_regular_file(json))
      throw InputError(folder +
                       ": expected an output folder of heft identify or heft sample "
                       "(with its result.json), got none");
    nlohmann::json result;
    try {
      result = nlohmann::json::parse(io::readTextFile(json.string()));
    } catch (const nlohmann::json::exception& e) {
      throw InputError(json.string() + ": not valid JSON (" + e.what() + ")");
    }
    const bool named = result.contains("robot") && result["robot"].is_object() &&
                       result["robot"].contains("name") && result["robot"]["name"].is_string();
    if (!named)
      throw InputError(json.string() +
                       ": expected the result of heft identify or heft sample (a robot.name), got "
                       "none (another job's result)");
    const std::string name = result["robot"]["name"].get<std::string>();
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
                     ": expected a new path, got an existing one (pass --overwrite "
                     "to replace it)");
  ScratchFolder scratch;
  const std::string page = (scratch.path() / "report.html").string();
  std::vector<std::string> args{page};
  args.insert(args.end(), folders.begin(), folders.end());
  runPythonTool(pythonTool("report.py"), args, (scratch.path() / "stderr.txt").string());
  io::writeTextFileAtomically(out, io::readTextFile(page), options.overwrite);
  return out;
}

}  // namespace heft::jobs
