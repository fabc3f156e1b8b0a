#include "heft/results/layout.hpp"

namespace heft::results {

std::vector<std::string> ParameterLayout::linearNames() const {
  std::vector<std::string> names;
  static const char* entries[10] = {"m",   "hx",  "hy",  "hz",  "Ixx",
                                    "Ixy", "Iyy", "Ixz", "Iyz", "Izz"};
  for (const auto& b : body_names) {
    for (const char* e : entries) names.push_back(std::string(e) + "[" + b + "]");
  }
  for (const auto& j : friction_joints) {
    names.push_back("coulomb[" + j + "]");
    names.push_back("viscous[" + j + "]");
  }
  for (const auto& j : armature_joints) names.push_back("armature[" + j + "]");
  for (const auto& j : torque_offset_joints) names.push_back("offset[" + j + "]");
  return names;
}

}  // namespace heft::results
