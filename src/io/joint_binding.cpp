#include "heft/io/joint_binding.hpp"

#include <algorithm>

#include "heft/common/error.hpp"

namespace heft::io {

JointBinding bindJoints(const pinocchio::Model& model, const std::vector<std::string>& log_names,
                        const std::string& field,
                        const std::vector<pinocchio::JointIndex>& unlogged) {
  JointBinding binding;
  for (pinocchio::JointIndex j = 1; j < static_cast<pinocchio::JointIndex>(model.njoints); ++j) {
    if (model.joints[j].nv() != 1 || model.joints[j].nq() != 1) continue;
    const auto it = std::find(log_names.begin(), log_names.end(), model.names[j]);
    if (it == log_names.end() && std::find(unlogged.begin(), unlogged.end(), j) != unlogged.end())
      continue;
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

namespace {

// The columns of `m` whose names are not in `drop`.
Eigen::MatrixXd keepColumns(const Eigen::MatrixXd& m, const std::vector<int>& keep) {
  if (m.cols() == 0 || m.rows() == 0) return m;
  Eigen::MatrixXd out(m.rows(), static_cast<Eigen::Index>(keep.size()));
  for (size_t i = 0; i < keep.size(); ++i) out.col(static_cast<Eigen::Index>(i)) = m.col(keep[i]);
  return out;
}

}  // namespace

void dropJointColumns(Log& log, const std::vector<std::string>& names) {
  std::vector<int> keep;
  std::vector<std::string> kept;
  for (size_t c = 0; c < log.joints.names.size(); ++c) {
    if (std::find(names.begin(), names.end(), log.joints.names[c]) != names.end()) continue;
    keep.push_back(static_cast<int>(c));
    kept.push_back(log.joints.names[c]);
  }
  if (kept.size() == log.joints.names.size()) return;
  JointSeries& js = log.joints;
  js.q = keepColumns(js.q, keep);
  js.v = keepColumns(js.v, keep);
  js.tau = keepColumns(js.tau, keep);
  js.tau_cmd = keepColumns(js.tau_cmd, keep);
  js.names = kept;
  if (log.truth) {
    log.truth->q = keepColumns(log.truth->q, keep);
    log.truth->v = keepColumns(log.truth->v, keep);
    log.truth->a = keepColumns(log.truth->a, keep);
  }
}

}  // namespace heft::io
