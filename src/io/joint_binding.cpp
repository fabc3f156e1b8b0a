#include "heft/io/joint_binding.hpp"

#include <algorithm>

#include "heft/common/error.hpp"

namespace heft::io {

JointBinding bindJoints(const pinocchio::Model& model, const std::vector<std::string>& log_names,
                        const std::string& field) {
  JointBinding binding;
  for (pinocchio::JointIndex j = 1; j < static_cast<pinocchio::JointIndex>(model.njoints); ++j) {
    if (model.joints[j].nv() != 1 || model.joints[j].nq() != 1) continue;
    const auto it = std::find(log_names.begin(), log_names.end(), model.names[j]);
    require(it != log_names.end(), field, "joint " + model.names[j] + " of the model",
            "a log without it");
    binding.joints.push_back(j);
    binding.names.push_back(model.names[j]);
    binding.idx_q.push_back(model.joints[j].idx_q());
    binding.idx_v.push_back(model.joints[j].idx_v());
    binding.log_column.push_back(static_cast<int>(it - log_names.begin()));
  }
  return binding;
}

}  // namespace heft::io
