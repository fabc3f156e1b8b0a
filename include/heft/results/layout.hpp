#pragma once
/// \file The layout of an estimate's linear parameter vector, shared by every estimator and the
/// results layer: [pi of each identified body (10 each, Pinocchio order), (Coulomb, viscous) per
/// friction joint, armature per armature joint, torque offset per offset joint].
#include <string>
#include <vector>

#include <pinocchio/multibody/fwd.hpp>

namespace heft::results {

/// Names and positions of the identified quantities.
/// Linear vector x (methods 1, 2): [pi_S (10 nb), (g3, g5) per friction joint, armature per
/// armature joint, constant torque-sensor offset per offset joint].
struct ParameterLayout {
  std::vector<std::string> body_names;
  std::vector<pinocchio::JointIndex> bodies;
  std::vector<std::string> friction_joints;
  std::vector<int> friction_joint;  ///< index into Samples joints (0..nj-1)
  std::vector<std::string> armature_joints;
  std::vector<int> armature_joint;  ///< index into Samples joints
  /// Joints whose logged torque carries a constant offset (measured = true + offset) [N m].
  std::vector<std::string> torque_offset_joints;
  std::vector<int> torque_offset_joint;  ///< index into Samples joints
  int numBodies() const { return static_cast<int>(bodies.size()); }
  int numFriction() const { return static_cast<int>(friction_joint.size()); }
  int numArmature() const { return static_cast<int>(armature_joint.size()); }
  int numTorqueOffsets() const { return static_cast<int>(torque_offset_joint.size()); }
  int frictionOffset() const { return 10 * numBodies(); }
  int armatureOffset() const { return frictionOffset() + 2 * numFriction(); }
  int torqueOffsetStart() const { return armatureOffset() + numArmature(); }
  int linearDimension() const { return torqueOffsetStart() + numTorqueOffsets(); }
  /// "m[panda_link1]", "hx[...]", ..., "coulomb[panda_joint1]", "viscous[...]", "armature[...]",
  /// "offset[...]".
  std::vector<std::string> linearNames() const;
};

}  // namespace heft::results
