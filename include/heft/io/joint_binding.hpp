#pragma once
/// \file Which column of a log holds each joint of a robot model: the one binding every job and
/// estimator reads joint signals through.
#include <string>
#include <vector>

#include <pinocchio/multibody/model.hpp>

#include "heft/io/log.hpp"

namespace heft::io {

/// Every one-dimensional joint of a model (one position and one velocity coordinate: revolute,
/// prismatic, continuous), in the model's joint order, with the log column of the same name.
struct JointBinding {
  std::vector<pinocchio::JointIndex> joints;  ///< model joint indices
  std::vector<std::string> names;             ///< model joint names
  std::vector<int> idx_q, idx_v;              ///< the joints' coordinates in q and v
  std::vector<int> log_column;                ///< columns of joints/q, joints/v, joints/tau
  int size() const { return static_cast<int>(joints.size()); }
};

/// Binds every one-dimensional joint of `model` to the column of `log_names` with its name.
/// `field` names the log's list in the error ("joints/names", or "FILE: joints/names").
/// Joints in `unlogged` (passive joints of a closed loop) may be missing: they are left out.
/// \throws InputError naming the first joint of the model the log lacks.
JointBinding bindJoints(const pinocchio::Model& model, const std::vector<std::string>& log_names,
                        const std::string& field = "joints/names",
                        const std::vector<pinocchio::JointIndex>& unlogged = {});

/// Removes the columns of the joints called `names` (locked joints) from the joint series and
/// from the truth's joint series; names the log lacks are ignored.
void dropJointColumns(Log& log, const std::vector<std::string>& names);

}  // namespace heft::io
