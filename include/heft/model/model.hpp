#pragma once
/// \file A robot's kinematic tree and nominal inertial parameters, loaded from URDF or MJCF.
///
/// Bodies. Pinocchio stores one inertia per joint: links attached by fixed joints are lumped into
/// the body of their nearest movable ancestor joint. heft names that body after the link that is
/// the joint's child (the BODY frame attached to the joint whose placement is the joint frame), so
/// a body's frame is its joint's frame, and also accepts the joint's name. Links welded to the
/// world of a fixed-base robot belong to no body (Pinocchio's "universe"): they do not move and
/// are not part of pinocchio::computeTotalMass.
///
/// Inertial parameters of a body, pi (Vector10), follow heft's convention (docs/design.md):
/// Pinocchio order [m, m c, I_xx, I_xy, I_yy, I_xz, I_yz, I_zz], about the body frame origin,
/// body-frame axes.
#include <pinocchio/multibody.hpp>
#include <string>
#include <vector>

#include "heft/common/types.hpp"
#include "heft/model/robots.hpp"

namespace heft::model {

/// True if joint `j` of `model` is a pinocchio::JointModelFreeFlyer (false past the last joint).
bool isFreeFlyer(const pinocchio::Model& model, pinocchio::JointIndex j);

/// A 1-DoF joint held at a fixed position (a gripper, a passive joint, a joint the log lacks).
struct LockedJoint {
  std::string name;
  double position = 0;  ///< [rad] or [m]
};

/// How loadRobot builds the model.
struct LoadOptions {
  /// Root joint. BaseType::Default means: the table's base for a short name or for the path of a
  /// table robot; a free-flyer for any other URDF (heft is for legged robots; pass Fixed for arms);
  /// what the file declares for MJCF (a <freejoint> on the root body, otherwise fixed).
  BaseType base = BaseType::Default;

  /// Throws InputError if a field is out of range.
  void validate() const;
};

/// A closed kinematic loop (MuJoCo's <equality><connect>): a point of one body and a point of
/// another that coincide. heft's tree is the loop's spanning tree; the closure is a constraint
/// (the bayesian-sysid paper's eq. 16, position part: 3 rows). Its anchors are frames of the model.
struct LoopClosure {
  std::string name;
  pinocchio::FrameIndex frame1 = 0, frame2 = 0;  ///< OP_FRAMEs "<name>_anchor1" / "_anchor2"
  pinocchio::JointIndex joint1 = 0, joint2 = 0;  ///< the bodies carrying them (joint2 may be 0)
  /// Directions the loop constrains: 3, or 2 for a planar loop (the offset along the joints'
  /// common axis is zero at every configuration). The first anchor's frame is turned so that its
  /// first `dimension` axes are those directions (the rows and forces of the loop, paper Fig. 5).
  int dimension = 3;
  /// The 1-DoF joints on the cycle (from either anchor up to the bodies' common ancestor): the
  /// joints the closure moves; a log may leave out those that are passive.
  std::vector<pinocchio::JointIndex> cycle;
};

/// One body: a movable joint of the model with the links lumped into it.
struct Body {
  pinocchio::JointIndex joint = 0;  ///< index in pinocchio::Model (1 .. njoints-1)
  std::string name;        ///< link name (the joint's name if no link sits at the joint frame)
  std::string joint_name;  ///< pinocchio::Model::names[joint]
  /// BODY frame named `name`, or -1 when no link sits at the joint frame (then pi is expressed in
  /// the joint frame, which differs from every link frame: some MJCF joints with a `pos`).
  long frame = -1;
  std::vector<std::string> lumped_links;  ///< other links rigidly attached to this body
};

/// A loaded robot: the Pinocchio model (const; every algorithm takes it), the body naming on top
/// of it, the contact frames, and where it came from. Copyable.
class RobotModel {
 public:
  /// Wraps a Pinocchio model. `source` names the file (or anything that identifies the model in
  /// error messages), `contact_frames` are frame names that must exist in the model.
  /// \throws InputError if the model has no body (njoints < 2), a non-finite inertia or joint
  ///   placement, or a contact frame is missing.
  RobotModel(pinocchio::Model model, std::string source, std::string short_name = "",
             std::vector<std::string> contact_frames = {}, std::vector<std::string> warnings = {});

  /// The Pinocchio model (inertias are the current nominal pi of every body).
  const pinocchio::Model& pinocchio() const { return model_; }
  /// File the model was loaded from.
  const std::string& source() const { return source_; }
  /// Short name when loaded by name or from a table robot's file, otherwise "".
  const std::string& shortName() const { return short_name_; }
  /// Short name if any, else the file name without folders.
  std::string displayName() const;
  /// True if joint 1 is a pinocchio::JointModelFreeFlyer (nq = 7 + joints, nv = 6 + joints).
  bool hasFreeFlyer() const;
  /// Foot / sole frame names (from the short-name table; empty for other files).
  const std::vector<std::string>& contactFrames() const { return contact_frames_; }
  /// Messages the parser printed that were not errors (for example urdfdom warnings).
  const std::vector<std::string>& warnings() const { return warnings_; }

  /// Bodies in joint order: bodies()[k].joint == k + 1. Size njoints - 1.
  const std::vector<Body>& bodies() const { return bodies_; }
  /// The body of joint `joint` (1 .. njoints-1). \throws InputError when out of range.
  const Body& body(pinocchio::JointIndex joint) const;
  /// Joint index of the body called `name`: a body's link name or its joint name.
  /// \throws InputError naming the unknown body and listing the valid names; for a link lumped
  ///   into another body or welded to the world, the message says where it went.
  pinocchio::JointIndex bodyIndex(const std::string& name) const;
  /// "base, FL_hip, ...": every body name in joint order (for messages).
  std::string bodyNames() const;
  /// Links welded to the world (fixed base only; Pinocchio's universe), possibly empty.
  const std::vector<std::string>& worldLinks() const { return world_links_; }

  /// pi of a body (Pinocchio's Inertia::toDynamicParameters): about the body frame origin, in
  /// the body frame. Units kg, kg m, kg m^2. \throws InputError for a bad index.
  Vector10 pi(pinocchio::JointIndex joint) const;
  /// pi of the body called `name` (see bodyIndex).
  Vector10 pi(const std::string& name) const;
  /// Sets a body's inertia from pi (Inertia::FromDynamicParameters; m = 0 allowed when m c = 0).
  /// Physically inconsistent values are accepted (check them with inertia::checkConsistency).
  /// \throws InputError for a bad index, a non-finite entry, or m = 0 with m c != 0.
  void setPi(pinocchio::JointIndex joint, const Vector10& pi);

  /// Closed loops (empty for a tree). loadRobot reads them from an MJCF file's connect equalities.
  const std::vector<LoopClosure>& loops() const { return loops_; }
  /// Adds a loop: anchor frames at `placement1` in joint1 and `placement2` in joint2 (0: the
  /// world), and checks that the loop can close: Gauss-Newton over the cycle's joints from the
  /// neutral configuration must bring the anchors within closureTolerance().
  /// \throws InputError naming the loop for a bad joint, an anchor pair on one body, or a loop that
  ///   cannot close (the anchors' nearest distance: inconsistent lengths).
  void addLoop(const std::string& name, pinocchio::JointIndex joint1,
               const pinocchio::SE3& placement1, pinocchio::JointIndex joint2,
               const pinocchio::SE3& placement2);
  /// How far apart the anchors of a closed loop may stay [m].
  static constexpr double closureTolerance() { return 1e-6; }

  /// Mass of every body, = pinocchio::computeTotalMass(pinocchio()) [kg].
  double totalMass() const;
  /// Mass welded to the world (fixed base), not part of totalMass [kg].
  double worldMass() const;

 private:
  void nameBodies();
  void constrainedDirections(LoopClosure& loop);

  pinocchio::Model model_;
  std::string source_;
  std::string short_name_;
  std::vector<std::string> contact_frames_;
  std::vector<std::string> warnings_;
  std::vector<Body> bodies_;
  std::vector<std::string> world_links_;
  std::vector<LoopClosure> loops_;
};

/// The joints on the robot's loops (LoopClosure::cycle), each once, in joint order: the joints a
/// log may leave out, as a loop's passive joints usually are.
std::vector<pinocchio::JointIndex> loopJoints(const RobotModel& robot);
/// Their names (io::ValidationOptions::unlogged_joints).
std::vector<std::string> loopJointNames(const RobotModel& robot);

/// The loops' closure error: the anchors' offsets p1 - p2 in world axes, stacked (3 per loop).
Eigen::VectorXd loopResidual(const RobotModel& robot, const Eigen::VectorXd& q);

/// Moves the joints of `q` that are not `fixed` (one flag per velocity coordinate) until every loop
/// closes (damped Gauss-Newton on loopResidual). Returns the residual's largest entry [m]: the
/// caller decides whether it closed (RobotModel::closureTolerance()).
double closeLoops(const RobotModel& robot, Eigen::VectorXd& q, const std::vector<bool>& fixed);

/// The loop file of a URDF: `<stem>.loops.xml` beside it (robot.urdf -> robot.loops.xml). URDF
/// describes trees only; loadRobot reads a URDF robot's closed loops from this file when it exists
/// (docs/model.md, "Closed loops", has its format).
std::string loopFilePath(const std::string& urdf_path);

/// Loads a robot by short name (knownRobots()) or from a path to a URDF (.urdf) or MJCF (.xml)
/// file; the format is read from the root element (<robot> or <mujoco>). Geometry is not loaded,
/// so mesh paths need not resolve.
/// \throws InputError naming the file and what was expected for: an unknown name (listing the known
///   ones), a missing, empty or malformed file, a parser error (also one the parser only printed,
///   such as urdfdom dropping an <inertial> whose mass is not a number), non-finite values, a model
///   without bodies, or --fixed-base on an MJCF model that declares a free joint; for a URDF's
///   loop file, a malformed file or a loop that names no link, lacks an anchor or cannot close
///   (naming the loop file, the loop and the field).
RobotModel loadRobot(const std::string& name_or_path, const LoadOptions& options = {});

/// `robot` with the `locked` joints removed: Pinocchio's reduced model (buildReducedModel) at
/// those positions, so each locked joint's child links are lumped into its parent body. Source,
/// short name and contact frames are kept: a URDF written from it is still the whole robot.
/// Returns `robot` unchanged when `locked` is empty.
/// A robot with closed loops cannot have joints locked (InputError).
/// \throws InputError naming a joint that is not a 1-DoF joint of the model (listing them), a
///   joint listed twice, or a non-finite position.
RobotModel lockJoints(const RobotModel& robot, const std::vector<LockedJoint>& locked);

}  // namespace heft::model
