#pragma once
/// \file The MuJoCo model of a robot, built with mjSpec from the same Pinocchio model the estimator
/// loads, so the kinematic tree and inertias match body for body: one MuJoCo body per Pinocchio
/// joint (links on fixed joints are already lumped by Pinocchio), the body frame is the joint
/// frame, the body's inertial is the Pinocchio inertia. What the scenario changes (link edits,
/// payloads, joint friction) is applied to the MuJoCo model only; the estimator's nominal model
/// stays as is.
///
/// Conventions at this boundary (docs/sim.md): Pinocchio q = [p, quat x y z w, joints] and
/// v = [linear, angular in the base frame, joints]; MuJoCo's free joint stores quat w x y z and the
/// linear velocity in the world frame. Every conversion is done here and nowhere else.
#include <Eigen/Core>
#include <Eigen/Geometry>
#include <cmath>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "heft/common/types.hpp"
#include "heft/model/contact_points.hpp"
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
  double armature = 0;  ///< inertia added to the joint's diagonal [kg m^2] (prismatic: [kg]), >= 0
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

/// A contact sphere: its centre is `offset` in `frame` (e.g. the four corners of a humanoid
/// sole); `name` is the geom's name and the contact's name in the log, unique.
using model::ContactPoint;

/// A mass that changes over time (MuJoCo body mass edited at run time, before every step):
/// m(t) = offset + amplitude w(t), with
/// - Square: w = +1 over the first half of each period [k / f, (k + 1/2) / f), -1 over the second;
/// - Sine: w = sin(2 pi f t);
/// - Step: w = 0 for t < step_time, 1 from step_time on (a payload picked up or put down; the
///   frequency is not used).
/// The body's rotational inertia about its COM is scaled with the mass (a uniformly denser body,
/// scale m(t) / compiled mass); its COM stays. A mass of 0 is allowed only for a step of a welded
/// body (a payload, no joint): MuJoCo composes it into its parent, which keeps a positive mass.
struct MassVariation {
  enum class Waveform { Square, Sine, Step };
  /// A payload name (PayloadSpec::name) or a robot body name: its own MuJoCo inertial, before
  /// lumping. The logged truth is the lumped body it belongs to.
  std::string body;
  Waveform waveform = Waveform::Square;
  double offset = 0;     ///< [kg]; Square / Sine: > |amplitude|; Step: the mass before, >= 0
  double amplitude = 0;  ///< [kg]; Step: the change at step_time, offset + amplitude >= 0
  double frequency = 0;  ///< [Hz], > 0 (Square, Sine)
  double step_time = 0;  ///< [s], >= 0 (Step): the first time with the mass offset + amplitude
  double massAt(double t) const;
};

/// Torque path of one joint from command to the joint (SPI-Active eq. 3 with a per-joint gain):
/// tau = gain * kappa * tanh(tau_cmd / kappa); saturation kappa = 0 means none (tau = gain
/// tau_cmd).
struct ActuatorModel {
  double gain = 1;        ///< > 0
  double saturation = 0;  ///< kappa [N m] (prismatic: [N]), >= 0; 0 = no saturation
  double apply(double tau_cmd) const {
    return saturation > 0 ? gain * saturation * std::tanh(tau_cmd / saturation) : gain * tau_cmd;
  }
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
  /// Contact spheres away from frame origins; when not empty they replace `contact_frames`.
  std::vector<ContactPoint> contact_points;
  /// Sphere radius at every contact frame or point [m] (Go2's foot is 0.022 m).
  double contact_radius = 0.022;
  /// Masses that vary over time (applied by simulate() before every step).
  std::vector<MassVariation> mass_variations;
  /// Torque path per joint name; joints not listed get the commanded torque.
  std::map<std::string, ActuatorModel> actuators;
  /// Constant offset of each joint's torque sensor [N m] (prismatic: [N]), per joint name: the
  /// logged joints/tau is the sensor model's value (sensors.hpp) plus this offset. The physics
  /// and the truth group do not see it. Joints not listed have none.
  std::map<std::string, double> torque_offsets;
  /// Joints without a motor (a closed loop's passive joints): no torque reaches them, the
  /// controller's error on them is not tracked and the log has no column for them.
  std::vector<std::string> passive_joints;
  /// Sliding friction coefficient of the floor-foot pair (condim 3, pyramidal cone).
  double floor_friction = 0.9;
  /// Frame of the IMU (origin and axes), free-flyer only; "" = the root body frame. A frame that
  /// does not exist falls back to the root body frame only when `imu_frame_optional`.
  std::string imu_frame = "imu";
  bool imu_frame_optional = true;

  /// Throws InputError naming the field when a value is out of range.
  void validate() const;
};

/// One IMU sample in the IMU frame.
struct ImuSample {
  Vector3 gyro = Vector3::Zero();  ///< angular velocity [rad/s], IMU frame
  Vector3 accel =
      Vector3::Zero();  ///< specific force (acceleration minus gravity) [m/s^2], IMU frame
  Eigen::Quaterniond orientation = Eigen::Quaterniond::Identity();  ///< IMU-to-world
};

/// The compiled MuJoCo model plus the maps between it and the Pinocchio model. Not copyable.
class SimModel {
 public:
  /// Builds and compiles the MuJoCo model.
  /// \throws InputError for invalid options, unknown bodies / joints / frames, unsupported joint
  /// types
  ///   (only free-flyer root, revolute, continuous and prismatic joints) or a MuJoCo compile error.
  SimModel(const model::RobotModel& nominal, SimModelOptions options = {});
  ~SimModel();
  SimModel(const SimModel&) = delete;
  SimModel& operator=(const SimModel&) = delete;

  const mjModel* mujoco() const { return model_; }
  /// The model as MJCF text (MuJoCo's writer, 6 significant digits): bodies, joints with their
  /// friction and armature, payloads, contact spheres and the IMU's sensors; the joint torques
  /// are applied forces (qfrc_applied), so the text has no actuators. Rebuilt on each call.
  std::string mjcf() const;
  const model::RobotModel& nominal() const { return nominal_; }
  const SimModelOptions& options() const { return options_; }
  bool hasFreeFlyer() const { return nominal_.hasFreeFlyer(); }

  /// Sizes in Pinocchio's convention.
  int nq() const;
  int nv() const;
  /// Actuated joints: every joint but the free-flyer, in Pinocchio order (one column each in a
  /// log).
  int nu() const { return static_cast<int>(joint_names_.size()); }
  const std::vector<std::string>& jointNames() const { return joint_names_; }
  /// Index of the first actuated velocity in Pinocchio's v (6 with a free-flyer, else 0).
  int actuatedOffset() const { return hasFreeFlyer() ? 6 : 0; }

  /// MuJoCo degree of freedom of actuated joint k (jointNames() order).
  int mujocoDof(int k) const { return joints_.at(k).mj_dof; }
  /// MuJoCo body id of Pinocchio joint `joint` (1 .. njoints-1).
  int mujocoBody(std::size_t joint) const { return joint_body_.at(joint); }
  /// Names and MuJoCo geom ids of the contact spheres, one per contact frame.
  const std::vector<std::string>& contactNames() const { return contact_names_; }
  const std::vector<int>& contactGeoms() const { return contact_geoms_; }
  /// MuJoCo body ids of the payloads, in options().payloads order.
  const std::vector<int>& payloadBodies() const { return payload_bodies_; }
  /// Frame and sphere center (in the frame) of every contact sphere, in contactNames() order.
  const std::vector<ContactPoint>& contactPoints() const { return contact_points_; }

  /// Time-varying masses: the MuJoCo body of each options().mass_variations entry and the index
  /// (0-based, Pinocchio joint - 1, a row of truthPi()) of the lumped body it belongs to.
  const std::vector<int>& variedBodies() const { return varied_bodies_; }
  const std::vector<int>& variedTruthRows() const { return varied_rows_; }
  /// Sets every options().mass_variations mass to its value at time t (body_mass, body_inertia
  /// scaled, body_subtreemass of the ancestors updated). The compiled model is changed in place.
  void applyMassVariations(double t);
  /// options().actuators applied to commanded torques (nu entries, Pinocchio joint order); 0 on
  /// passive joints.
  void applyActuators(const Eigen::VectorXd& tau_cmd, Eigen::VectorXd& tau) const;
  /// options().torque_offsets per actuated joint (nu entries, Pinocchio joint order; 0 where none).
  const Eigen::VectorXd& torqueOffsets() const { return torque_offsets_; }
  /// True for actuated joint k (jointNames() order) listed in options().passive_joints.
  bool isPassive(int k) const { return passive_[static_cast<size_t>(k)]; }

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
  // Steps of the constructor once the MuJoCo model is compiled.
  void mapModels();
  void mapMassVariations();
  void mapActuators();

  struct JointMap {
    std::size_t joint = 0;  // Pinocchio joint index
    int idx_q = 0, idx_v = 0, nq = 1;
    int mj_qpos = 0, mj_dof = 0;
  };

  model::RobotModel nominal_;
  SimModelOptions options_;
  mjModel* model_ = nullptr;
  std::vector<int> joint_body_;   // Pinocchio joint -> MuJoCo body
  std::vector<JointMap> joints_;  // actuated joints
  std::vector<std::string> joint_names_;
  std::vector<std::string> contact_names_;
  std::vector<int> contact_geoms_;
  std::vector<int> payload_bodies_;
  std::vector<ContactPoint> contact_points_;
  std::vector<int> varied_bodies_, varied_rows_;
  std::vector<double> varied_mass0_;  // compiled mass of each varied body
  std::vector<Eigen::Vector3d> varied_inertia0_;
  std::vector<ActuatorModel> actuators_;  // per actuated joint
  Eigen::VectorXd torque_offsets_;        // per actuated joint
  bool has_actuators_ = false;
  std::vector<bool> passive_;  // per actuated joint
  std::string imu_frame_;
  int gyro_adr_ = -1, accel_adr_ = -1, imu_site_ = -1;
};

}  // namespace heft::sim
