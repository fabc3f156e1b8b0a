#pragma once
/// \file Which feet touch the ground, from the robot's own kinematics: contact flags when a log has
/// none. Shared by every estimator that needs a contact schedule.
#include <cstdint>
#include <vector>

#include <Eigen/Core>
#include <pinocchio/multibody/data.hpp>
#include <pinocchio/multibody/model.hpp>

namespace heft::state {

/// Contact flags when the log has no contacts group: a contact frame is in contact when its
/// height above the ground plane is below `height` and its speed is below `speed`.
struct ContactDetectionOptions {
  double ground_height = 0.0;  ///< z of the ground plane in the world frame [m]
  /// Largest frame height above the ground for contact [m]. The default suits go2's foot frame at
  /// the centre of a 0.022 m sphere (0.022 m when touching) with 13 mm of margin.
  double height = 0.035;
  double speed = 0.1;  ///< largest frame speed (world frame, linear) for contact [m/s]
  /// \throws InputError naming the field unless every value is finite and height, speed > 0.
  void validate() const;
};

/// Contact flags of `frames` at (q, v) by the thresholds of `options` (1 = in contact): each
/// frame's height above the ground and its world-frame linear speed. `data` is a workspace of
/// `model`.
std::vector<std::uint8_t> detectContacts(const pinocchio::Model& model, pinocchio::Data& data,
                                         const std::vector<pinocchio::FrameIndex>& frames,
                                         const Eigen::VectorXd& q, const Eigen::VectorXd& v,
                                         const ContactDetectionOptions& options);

}  // namespace heft::state
