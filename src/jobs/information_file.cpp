#include "information_file.hpp"

#include <cmath>

#include "heft/common/error.hpp"
#include "heft/io/atomic_file.hpp"
#include "heft/results/json.hpp"
#include "result_files.hpp"

namespace heft::jobs {

nlohmann::json informationJson(const identify::DataInformation& info, const std::string& robot,
                               double torque_offset_prior_std) {
  const results::ParameterLayout& l = info.layout;
  std::vector<long> bodies(l.bodies.begin(), l.bodies.end());
  return {{"schema_version", results::kResultSchemaVersion},
          {"robot", robot},
          {"layout",
           {{"body_names", l.body_names},
            {"bodies", bodies},
            {"friction_joints", l.friction_joints},
            {"friction_joint", l.friction_joint},
            {"armature_joints", l.armature_joints},
            {"armature_joint", l.armature_joint},
            {"torque_offset_joints", l.torque_offset_joints},
            {"torque_offset_joint", l.torque_offset_joint}}},
          {"names", l.linearNames()},
          {"rows", info.rows},
          {"samples", info.samples},
          {"matrix", results::jsonArray(info.matrix)},
          {"vector", results::jsonArray(info.vector)},
          {"scalar", info.scalar},
          {"torque_offset_prior_std", torque_offset_prior_std}};
}

void writeInformationFile(const std::string& path, const identify::DataInformation& info,
                          const std::string& robot, double torque_offset_prior_std, bool overwrite,
                          std::vector<std::string>& written) {
  io::writeTextFileAtomically(
      path, informationJson(info, robot, torque_offset_prior_std).dump() + "\n", overwrite);
  written.push_back(path);
}

namespace {

template <typename T>
T entry(const nlohmann::json& j, const std::string& key, const std::string& path) {
  if (!j.contains(key)) throw InputError(path + ": " + key + ": missing");
  try {
    return j.at(key).get<T>();
  } catch (const nlohmann::json::exception&) {
    throw InputError(path + ": " + key + ": malformed (expected the type heft identify writes)");
  }
}

}  // namespace

InformationFile readInformationFile(const std::string& path) {
  const nlohmann::json j = readResultJson(path);
  InformationFile f;
  f.robot = entry<std::string>(j, "robot", path);
  f.torque_offset_prior_std = entry<double>(j, "torque_offset_prior_std", path);
  const nlohmann::json layout = entry<nlohmann::json>(j, "layout", path);
  results::ParameterLayout& l = f.information.layout;
  l.body_names = entry<std::vector<std::string>>(layout, "body_names", path + ": layout");
  for (long b : entry<std::vector<long>>(layout, "bodies", path + ": layout"))
    l.bodies.push_back(static_cast<pinocchio::JointIndex>(b));
  l.friction_joints = entry<std::vector<std::string>>(layout, "friction_joints", path + ": layout");
  l.friction_joint = entry<std::vector<int>>(layout, "friction_joint", path + ": layout");
  l.armature_joints = entry<std::vector<std::string>>(layout, "armature_joints", path + ": layout");
  l.armature_joint = entry<std::vector<int>>(layout, "armature_joint", path + ": layout");
  l.torque_offset_joints =
      entry<std::vector<std::string>>(layout, "torque_offset_joints", path + ": layout");
  l.torque_offset_joint = entry<std::vector<int>>(layout, "torque_offset_joint", path + ": layout");
  require(l.body_names.size() == l.bodies.size() &&
              l.friction_joints.size() == l.friction_joint.size() &&
              l.armature_joints.size() == l.armature_joint.size() &&
              l.torque_offset_joints.size() == l.torque_offset_joint.size(),
          path + ": layout", "one index per name", "lists of other lengths");
  const int n = l.linearDimension();
  const auto matrix = entry<std::vector<std::vector<double>>>(j, "matrix", path);
  const auto vector = entry<std::vector<double>>(j, "vector", path);
  require(static_cast<int>(vector.size()) == n && static_cast<int>(matrix.size()) == n,
          path + ": matrix, vector", std::to_string(n) + " entries (the layout's)",
          std::to_string(vector.size()));
  f.information.matrix.resize(n, n);
  f.information.vector.resize(n);
  for (int r = 0; r < n; ++r) {
    require(static_cast<int>(matrix[r].size()) == n, path + ": matrix row " + std::to_string(r),
            std::to_string(n) + " entries", std::to_string(matrix[r].size()));
    for (int c = 0; c < n; ++c) f.information.matrix(r, c) = matrix[r][c];
    f.information.vector[r] = vector[r];
  }
  f.information.scalar = entry<double>(j, "scalar", path);
  f.information.rows = entry<int>(j, "rows", path);
  f.information.samples = entry<int>(j, "samples", path);
  require(f.information.matrix.allFinite() && f.information.vector.allFinite() &&
              std::isfinite(f.information.scalar),
          path + ": matrix, vector, scalar", "finite numbers", "other values");
  return f;
}

}  // namespace heft::jobs
