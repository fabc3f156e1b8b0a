#pragma once
// information.json: one identify run's data in information form (identify/information.hpp), what
// `heft fuse` sums over runs. Written by heft identify beside result.json.
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "heft/identify/information.hpp"

namespace heft::jobs {

// {"schema_version", "robot", "layout": {...}, "names", "rows", "matrix", "vector", "scalar",
// "torque_offset_prior_std"}.
nlohmann::json informationJson(const identify::DataInformation& info, const std::string& robot,
                               double torque_offset_prior_std);

// information.json written atomically at `path` (appended to `written`).
void writeInformationFile(const std::string& path, const identify::DataInformation& info,
                          const std::string& robot, double torque_offset_prior_std, bool overwrite,
                          std::vector<std::string>& written);

// The file read back. InputError naming `path` and the key on a missing or malformed entry.
struct InformationFile {
  std::string robot;
  double torque_offset_prior_std = 1;
  identify::DataInformation information;
};
InformationFile readInformationFile(const std::string& path);

}  // namespace heft::jobs
