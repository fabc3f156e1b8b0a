#pragma once
/// \file The MuJoCo model of a robot, built with mjSpec from the same Pinocchio model the estimator
/// loads, so the kinematic tree and inertias match body for body: one MuJoCo body per Pinocchio
/// joint (links on fixed joints are already lumped by Pinocchio), the body frame is the joint frame,
/// the body's inertial is the Pinocchio inertia. What the scenario changes (link edits, payloads,
/// joint friction) is applied to the MuJoCo model only; the estimator's nominal model stays as is.
///
/// Conventions at this boundary (docs/sim.md): Pinocchio q = [p, quat x y z w, joints] and
/// v = [linear, angular in the base frame, joints]; MuJoCo's free joint stores quat w x y z and the
/// linear velocity in the world frame. Every conversion is done here and nowhere else.
#include <Eigen/Core>
#include <Eigen/Geometry>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "heft/common/types.hpp"
#include "heft/model/model.hpp"
#include "heft/model/payload.hpp"

struct mjModel_;
struct mjData_;
typedef struct mjModel_ mjModel;
typedef struct mjData_ mjData;

namespace heft::sim {

/// Joint friction and reflected rotor inertia of one degree of freedom, as MuJoCo models them.
struct JointFriction {
  double damping = 0;       ///< viscous coefficient [N m s/rad] (prismatic: [N s/m]), >= 0
  double frictionloss = 0;  ///< dry (Coulomb) friction [N m] (prismatic: [N]), >= 0
  double armature = 0;      ///< inertia added to the joint's diagonal [kg m^2] (prismatic: [kg]), >= 0
};

/// A change of one body's own inertial parameters, applied before payloads are attached.
struct LinkEdit {
  std::string body;  ///< a body name or its joint name (model::RobotModel::bodyIndex)
  /// Multiplies the mass and the rotational inertia about the COM (a uniformly denser link), > 0.
  double mass_scale = 1;
  /// Added to the COM, body frame [m]; the rotational inertia about the COM is kept.
  Vector3 com_shift = Vector3::Zero();
};

/// A rigid payload welded to a body: its own MuJoCo body without a joint, child of `body`.
struct PayloadSpec {
  std::string name = "payload";  ///< MuJoCo body name; unique, not a robot link name
  std::string body;              ///< parent body (name or joint name)
  model::Payload payload;        ///< mass, COM and inertia in the parent body frame
};

/// How the MuJoCo model differs from the nominal one and what it touches.
struct SimModelOptions {
  /// Physics step [s]. The log's joint rate is 1 / timestep.
  double timestep = 1e-3;
  std::vector<LinkEdit> link_edits;
  std::vector<PayloadSpec> payloads;
  /// Friction per joint name (1-DoF joints); joints not listed have none.
  std::map<std::string, JointFriction> joint_friction;
  /// Frames that carry a contact sphere (its center at the frame origin). Empty: the robot's
  /// contact frames (model::RobotModel::contactFrames()); a fixed-base robot then has none.
  std::vector<std::string> contact_frames;
  /// Sphere radius at every contact frame [m] (Go2's foot is 0.022 m).
  double contact_radius = 0.022;
  /// Sliding friction coefficient of the floor-foot pair (condim 3, pyramidal cone).
  double floor_friction = 0.9;
  /// Frame of the IMU (origin and axes), free-flyer only; "" = the root body frame. A frame that does
  /// not exist falls back to the root body frame only when `imu_frame_optional`.
  std::string imu_frame = "imu";
  bool imu_frame_optional = true;

  /// Throws InputError naming the field when a value is out of range.
  void validate() const;
};

/// One IMU sample in the IMU frame.
struct ImuSample {
  Vector3 gyro = Vector3::Zero();   ///< angular velocity [rad/s], IMU frame
  Vector3 accel = Vector3::Zero();  ///< specific force (acceleration minus gravity) [m/s^2], IMU frame
  Eigen::Quaterniond orientation = Eigen::Quaterniond::Identity();  ///< IMU-to-world
};

/// The compiled MuJoCo model plus the maps between it and the Pinocchio model. Not copyable.
class SimModel {
 public:
  /// Builds and compiles the MuJoCo model.
  /// \throws InputError for invalid options, unknown bodies / joints / frames, unsupported joint types
  ///   (only free-flyer root, revolute, continuous and prismatic joints) or a MuJoCo compile error.
  SimModel(const model::RobotModel& nominal, SimModelOptions options = {});
  ~SimModel();
  SimModel(const SimModel&) = delete;
  SimModel& operator=(const SimModel&) = delete;

  const mjModel* mujoco() const { return model_; }
  const model::RobotModel& nominal() const { return nominal_; }
  const SimModelOptions& options() const { return options_; }
  bool hasFreeFlyer() const { return nominal_.hasFreeFlyer(); }

  /// Sizes in Pinocchio's convention.
  int nq() const;
  int nv() const;
  /// Actuated joints: every joint but the free-flyer, in Pinocchio order (one column each in a log).
  int nu() const { return static_cast<int>(joint_names_.size()); }
  const std::vector<std::string>& jointNames() const { return joint_names_; }
  /// Index of the first actuated velocity in Pinocchio's v (6 with a free-flyer, else 0).
  int actuatedOffset() const { return hasFreeFlyer() ? 6 : 0; }

  /// MuJoCo body id of Pinocchio joint `joint` (1 .. njoints-1).
  int mujocoBody(std::size_t joint) const { return joint_body_.at(joint); }
  /// Names and MuJoCo geom ids of the contact spheres, one per contact frame.
  const std::vector<std::string>& contactNames() const { return contact_names_; }
  const std::vector<int>& contactGeoms() const { return contact_geoms_; }
  /// MuJoCo body ids of the payloads, in options().payloads order.
  const std::vector<int>& payloadBodies() const { return payload_bodies_; }

  /// True inertial parameters of every Pinocchio body, read from the compiled MuJoCo model: the
  /// body's own inertial plus every welded (joint-less) MuJoCo body below it, such as a payload,
  /// expressed about the Pinocchio joint frame origin in its axes. nb x 10, row k = joint k + 1,
  /// heft's pi order.
  Eigen::MatrixXd truthPi() const;

  /// A new mjData (reset to the model's qpos0) and its deleter.
  using DataPtr = std::unique_ptr<mjData, void (*)(mjData*)>;
  DataPtr makeData() const;

  /// Writes Pinocchio (q, v) into d->qpos, d->qvel (quaternions are normalized).
  void setState(mjData* d, const Eigen::VectorXd& q, const Eigen::VectorXd& v) const;
  /// Reads (q, v) in Pinocchio's convention from d.
  void getState(const mjData* d, Eigen::VectorXd& q, Eigen::VectorXd& v) const;
  /// Pinocchio's a (time derivative of v, base part in the base frame) from d->qacc, where (q, v)
  /// is the Pinocchio state qacc was computed at (after mj_step2, d->qpos has moved on).
  void getAcceleration(const mjData* d, const Eigen::VectorXd& q, const Eigen::VectorXd& v,
                       Eigen::VectorXd& a) const;
  /// Positions of the actuated joints (nu entries; continuous joints as an angle) from Pinocchio q.
  void jointPositions(const Eigen::VectorXd& q, Eigen::Ref<Eigen::VectorXd> positions) const;
  /// Sets the generalized forces of the actuated joints (nu entries) in d->qfrc_applied.
  void setJointTorques(mjData* d, const Eigen::VectorXd& tau) const;
  /// Force that the floor (and anything else) exerts on each contact sphere, world frame [N],
  /// summed over its MuJoCo contacts (mj_contactForce rotated from the contact frame): `forces`
  /// gets 3 entries per contact; `flags` 1 where some contact has a positive normal force.
  /// Valid after the acceleration stage (mj_forward or mj_step2).
  void getContactForces(const mjData* d, Eigen::Ref<Eigen::VectorXd> forces,
                        std::vector<std::uint8_t>& flags) const;
  /// IMU sample from MuJoCo's gyro and accelerometer sensors at the IMU site (free-flyer only).
  /// Valid after the acceleration stage.
  ImuSample getImu(const mjData* d) const;
  /// Frame name the IMU sits at ("" = root body frame).
  const std::string& imuFrame() const { return imu_frame_; }

  /// mj_forward / mj_step1 / mj_step2 with MuJoCo errors turned into SolveError.
  void forward(mjData* d) const;
  void step1(mjData* d) const;
  void step2(mjData* d) const;
  /// Sum over d->warning of the counts (MuJoCo's in-simulation warnings, e.g. bad qacc).
  static long warningCount(const mjData* d);

 private:
  struct JointMap {
    std::size_t joint = 0;  // Pinocchio joint index
    int idx_q = 0, idx_v = 0, nq = 1;
    int mj_qpos = 0, mj_dof = 0;
  };

  model::RobotModel nominal_;
  SimModelOptions options_;
  mjModel* model_ = nullptr;
  std::vector<int> joint_body_;          // Pinocchio joint -> MuJoCo body
  std::vector<JointMap> joints_;         // actuated joints
  std::vector<std::string> joint_names_;
  std::vector<std::string> contact_names_;
  std::vector<int> contact_geoms_;
  std::vector<int> payload_bodies_;
  std::string imu_frame_;
  int gyro_adr_ = -1, accel_adr_ = -1, imu_site_ = -1;
};

}  // namespace heft::sim
