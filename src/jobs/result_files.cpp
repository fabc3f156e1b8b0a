#include "result_files.hpp"

#include "heft/common/error.hpp"
#include "heft/io/atomic_file.hpp"
#include "heft/results/urdf.hpp"

namespace heft::jobs {

namespace {
const std::string kRefused = "refused: ";
}  // namespace

std::string urdfRefusal(bool writable, bool solve_usable) {
  if (writable) return "";
  return solve_usable ? "an estimate is not physically consistent" : "the solve failed";
}

bool writeUrdf(nlohmann::json& json, const std::string& robot_name, model::BaseType base,
               const std::vector<model::LockedJoint>& locked,
               const std::vector<results::BodyEstimate>& bodies, const std::string& not_writable,
               const std::string& urdf_out, bool overwrite, std::vector<std::string>& written) {
  std::string status = "not written: " + not_writable;
  if (not_writable.empty()) {
    model::LoadOptions load;
    load.base = base;
    const model::RobotModel robot = model::lockJoints(model::loadRobot(robot_name, load), locked);
    std::vector<std::string> warnings;
    try {
      status = results::writeIdentifiedUrdf(robot, bodies, urdf_out, overwrite, warnings);
    } catch (const InputError& e) {
      status = kRefused + e.what();
    }
    for (const std::string& w : warnings) json["warnings"].push_back(w);
  }
  const bool urdf_written = status == "written";
  if (urdf_written) written.push_back(urdf_out);
  json["urdf"] = {{"path", urdf_written ? urdf_out : ""}, {"status", status}};
  return status.rfind(kRefused, 0) != 0;
}

nlohmann::json writeLogRecorded(const io::Log& log, const std::string& path,
                                const io::WriteOptions& options, std::vector<std::string>& written,
                                std::string& why) {
  try {
    io::writeLogHdf5(log, path, options);
  } catch (const std::exception& e) {
    why = e.what();
    return {{"path", ""}, {"status", "not written: " + why}};
  }
  written.push_back(path);
  return {{"path", path}, {"status", "written"}};
}

void appendDataQualityWarnings(const io::DataQualityReport& report,
                               std::vector<std::string>& warnings) {
  for (const std::string& text : report.warningTexts()) warnings.push_back("data quality: " + text);
}

void throwIfUrdfRefused(const nlohmann::json& json, const std::string& json_out) {
  const std::string status = json["urdf"]["status"].get<std::string>();
  if (status.rfind(kRefused, 0) == 0)
    throw SolveError("no URDF written: the writer " + status + " (" + json_out +
                     " holds the estimate)");
}

nlohmann::json readResultJson(const std::string& path) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(io::readTextFile(path));
  } catch (const nlohmann::json::exception& e) {
    throw InputError(path + ": not JSON (" + e.what() + ")");
  }
  if (!j.is_object() || !j.contains("schema_version"))
    throw InputError(path + ": expected a heft result.json (with schema_version)");
  return j;
}

double resultNumber(const nlohmann::json& value, const std::string& where) {
  if (!value.is_number()) throw InputError(where + ": expected a number, got " + value.dump());
  return value.get<double>();
}

double resultMemberNumber(const nlohmann::json& value, const std::string& key,
                          const std::string& where) {
  if (!value.is_object())
    throw InputError(where + ": expected an object with \"" + key + "\", got " + value.dump());
  return resultNumber(value.value(key, nlohmann::json()), where + "." + key);
}

std::vector<std::string> writeDesignFiles(
    const OutputFolder& folder, bool usable,
    const std::vector<std::pair<std::string, const std::string*>>& texts,
    const nlohmann::json& result, bool overwrite) {
  std::vector<std::string> written;
  if (usable) {
    for (const auto& [name, text] : texts) {
      io::writeTextFileAtomically(folder.path(name), *text, overwrite);
      written.push_back(folder.path(name));
    }
  }
  const std::string json_out = folder.path("result.json");
  io::writeTextFileAtomically(json_out, result.dump(2) + "\n", overwrite);
  written.push_back(json_out);
  return written;
}

}  // namespace heft::jobs
