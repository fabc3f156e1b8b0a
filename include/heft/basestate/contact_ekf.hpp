#pragma once
/// \file A proprioceptive base-state estimator: the contact-aided invariant EKF of Hartley et al.
/// (IJRR 2020, "Contact-aided invariant extended Kalman filtering for robot state estimation").
///
/// State X = (R, v, p, d_1 .. d_K) in SE_{2+K}(3): the IMU frame's orientation, velocity and
/// position in the world, and the world position of every foot frame in contact (added at
/// touchdown, removed at lift-off), plus gyro and accelerometer biases as Euclidean states (the
/// paper's "imperfect IEKF", sec. 6). The error is right-invariant: eta = X_hat X^-1 = exp(xi),
/// xi = [phi, xi_v, xi_p, zeta_g, zeta_a, xi_d1 .. xi_dK] (biases zeta = b_hat - b).
///
///  - Propagation (IMU, paper eqs. 19-20, 48): R+ = R Exp(w dt), v+ = v + (R a + g) dt,
///    p+ = p + v dt + (R a + g) dt^2 / 2 with w = gyro - b_g, a = accel - b_a (specific force),
///    g = (0, 0, -9.81); Phi = I + A dt + A^2 dt^2 / 2, Q_d = Phi Ad Q_c Ad^T Phi^T dt.
///  - Leg kinematics (paper eqs. 34-41): s = the foot in the IMU frame from the joint encoders
///    (Pinocchio forward kinematics), innovation z = R s - (d - p), z = H xi + n with
///    H = [0, 0, I, 0, 0, .., -I (foot k), ..]; one 3-row update per stance foot.
///  - Touchdown (paper eq. 44): d = p + R s, xi_d = xi_p + R n.
///  - Level ground (optional, `level_ground`; not in the paper): the feet in stance stand on one
///    horizontal plane. Scalar updates r = d_k,z - d_j,z (every stance foot against the first) and,
///    per flat foot, r = (R m)_x, (R m)_y with m the sole's normal in the IMU frame from the
///    kinematics. Without them roll and pitch rest on the accelerometer, whose bias a robot that
///    hardly rotates cannot tell from a tilt (docs/basestate.md, "Level ground").
///
/// A foot is a contact frame (model::groupContactFrames): a frame touches when any of its points
/// does; a point foot is its point, a flat foot is the frame origin (a sole frame).
///
/// Real-time shape: every buffer is allocated in the constructor for all the model's feet;
/// update() and propagateTo() allocate nothing and never throw. Equations and choices:
/// docs/basestate.md.
#include <cstdint>
#include <string>
#include <vector>

#include <Eigen/Core>
#include <pinocchio/multibody/data.hpp>
#include <pinocchio/multibody/model.hpp>

#include "heft/common/types.hpp"
#include "heft/model/contact_points.hpp"

namespace heft::basestate {

using Matrix15 = Eigen::Matrix<double, 15, 15>;
using Vector15 = Eigen::Matrix<double, 15, 1>;

struct ContactEkfOptions {
  // ---- process noise (continuous-time densities) ----
  double gyro_noise = 1e-3;           ///< gyro white noise [rad/s/sqrt(Hz)]
  double accel_noise = 1e-2;          ///< accelerometer white noise [m/s^2/sqrt(Hz)]
  double gyro_bias_walk = 1e-4;       ///< gyro bias random walk [rad/s^2/sqrt(Hz)]
  double accel_bias_walk = 1e-3;      ///< accelerometer bias random walk [m/s^3/sqrt(Hz)]
  double foot_velocity_noise = 0.05;  ///< stance foot motion (slip, rolling) [m/s/sqrt(Hz)]

  // ---- leg kinematics ----
  double kinematics_noise = 0.005;  ///< foot position error of the kinematic model [m]
  double encoder_noise = 1e-3;      ///< joint encoder error, mapped through the leg Jacobian [rad]

  // ---- initial uncertainty ----
  double initial_orientation_std = 0.05;  ///< roll, pitch and yaw [rad]
  double initial_velocity_std = 0.3;      ///< [m/s]
  double initial_position_std = 0.01;     ///< [m]
  double initial_gyro_bias_std = 0.05;    ///< [rad/s]
  double initial_accel_bias_std = 0.3;    ///< [m/s^2]

  bool estimate_biases = true;  ///< false: biases held at zero (no bias states)

  // ---- level ground ----
  /// true: the stance feet stand on one horizontal plane (a level floor), which makes roll and
  /// pitch observable apart from the accelerometer bias. Wrong on slopes and stairs.
  bool level_ground = false;
  double ground_height_noise = 0.005;  ///< stance feet height differences [m] (floor, compliance)
  double ground_tilt_noise = 0.01;     ///< a flat foot's sole tilt from the floor [rad]
  /// Longest propagation step [s]: a longer gap between samples is integrated in steps of this
  /// length with the last IMU sample held (a dropout), never in one step.
  double max_step = 0.01;

  /// \throws InputError naming the first field out of range.
  void validate() const;
};

/// What one update() did.
enum class ContactEkfStatus : std::uint8_t {
  Updated = 0,           ///< propagated and corrected with every stance foot
  NoContact = 1,         ///< propagated only: no foot in contact (flight)
  RejectedInput = 2,     ///< NaN / Inf input or time going back: sample ignored
  NumericalFailure = 3,  ///< an innovation covariance not positive definite: that foot skipped
};
const char* toString(ContactEkfStatus status);

/// The filter. Model/data: the Pinocchio model is held by reference (it must outlive the filter),
/// every workspace is owned.
/// The core of the state: what the smoother works on (the feet are not smoothed).
struct CoreState {
  Matrix3 R = Matrix3::Identity();                   ///< IMU to world
  Vector3 v = Vector3::Zero(), p = Vector3::Zero();  ///< IMU origin, world frame
  Vector3 gyro_bias = Vector3::Zero(), accel_bias = Vector3::Zero();
};

/// X = exp(delta) X on the core (delta: 15, [phi, v, p, b_g, b_a]) and its inverse:
/// local(retract(x, d), x) = d.
CoreState retractCore(const CoreState& x, const Vector15& delta);
Vector15 localCore(const CoreState& y, const CoreState& x);

class ContactEkf {
 public:
  /// \param model a free-flyer model. \param imu_frame the frame the IMU measures (any frame on
  ///   the tree: a torso IMU moves with the torso joints, which the kinematics account for).
  /// \param contacts the contact points; their frames are the feet.
  /// \throws InputError on bad options, a fixed-base model, an unknown IMU frame or contact frame,
  ///   or no contact point.
  ContactEkf(const pinocchio::Model& model, const std::string& imu_frame,
             const std::vector<model::ContactPoint>& contacts,
             const ContactEkfOptions& options = {});

  /// Starts at `time` with the IMU orientation `R` (IMU to world), position `p`, velocity `v`
  /// (world frame), zero biases, no foot in contact, and the initial covariance of the options.
  void initialize(double time, const Matrix3& R, const Vector3& p, const Vector3& v);

  /// Holds an IMU sample (IMU frame: gyro [rad/s], specific force [m/s^2]) for the propagation
  /// until the next one (zero-order hold). Call propagateTo(sample time) first.
  void setImu(const Vector3& gyro, const Vector3& accel);

  /// Integrates the held IMU sample from the filter's time to `time` (no-op if not later).
  /// Accumulates the core transition (transition()). Allocation-free.
  void propagateTo(double time);

  /// One joint sample: propagates to `time`, then adds the feet that touched down, removes those
  /// that lifted off, and corrects with the leg kinematics of every stance foot.
  /// \param q the configuration (nq; the free-flyer part is ignored: the kinematics are relative).
  /// \param point_contact one flag per contact point of the constructor (1 = in contact).
  /// Allocation-free, never throws.
  ContactEkfStatus update(
      double time, const Eigen::Ref<const Eigen::VectorXd>& q,
      const Eigen::Ref<const Eigen::Matrix<std::uint8_t, Eigen::Dynamic, 1>>& point_contact);

  // ---- state ----
  double time() const { return time_; }
  const Matrix3& rotation() const { return R_; }  ///< IMU to world
  const Vector3& velocity() const { return v_; }  ///< IMU origin, world frame [m/s]
  const Vector3& position() const { return p_; }  ///< IMU origin, world frame [m]
  const Vector3& gyroBias() const { return bg_; }
  const Vector3& accelBias() const { return ba_; }
  /// The core state now, and as it was after the last update()'s propagation (before correction).
  CoreState core() const { return CoreState{R_, v_, p_, bg_, ba_}; }
  const CoreState& predictedCore() const { return predicted_core_; }
  /// The held IMU sample (raw).
  const Vector3& heldGyro() const { return gyro_; }
  /// The held IMU sample with the bias removed: angular velocity of the IMU frame [rad/s].
  Vector3 angularVelocity() const { return gyro_ - bg_; }
  /// Error-state covariance (15 + 3 K), order [phi, v, p, b_g, b_a, d_1 .. d_K]; rows and
  /// columns of feet not in contact are zero.
  const Eigen::MatrixXd& covariance() const { return P_; }
  /// Core (first 15) transition accumulated by the propagations since the last update().
  const Matrix15& transition() const { return transition_; }
  /// Core covariance after the propagation of the last update(), before its correction.
  const Matrix15& predictedCoreCovariance() const { return predicted_core_P_; }
  /// World position of foot k (meaningful while in contact) and whether it is.
  Vector3 footPosition(int k) const { return feet_position_.col(k); }
  bool footInContact(int k) const { return in_contact_[k] != 0; }

  // ---- feet ----
  int numFeet() const { return static_cast<int>(feet_.size()); }
  const std::vector<model::ContactFrame>& feet() const { return feet_; }
  const std::vector<model::ContactPoint>& contactPoints() const { return points_; }
  pinocchio::FrameIndex imuFrame() const { return imu_frame_; }

  /// Foot k in the IMU frame at q (forward kinematics, allocation-free) and its Jacobian with
  /// respect to the joint velocities (3 x nv; the free-flyer columns are zero).
  Vector3 footInImu(const Eigen::Ref<const Eigen::VectorXd>& q, int k);
  const Eigen::Matrix<double, 3, Eigen::Dynamic>& footJacobian() const { return foot_jacobian_; }

  struct Counters {
    long updates = 0, corrections = 0, flight = 0, rejected = 0, failures = 0, touchdowns = 0;
    long ground_corrections = 0;  ///< level-ground scalar updates
  };
  const Counters& counters() const { return counters_; }
  const ContactEkfOptions& options() const { return options_; }
  int dimension() const { return n_; }

  /// The state's linearized propagation over dt (exposed for the finite-difference tests):
  /// writes Phi (n x n) for the current state and the held IMU sample.
  void propagationJacobian(double dt, Eigen::MatrixXd& Phi);

  /// One propagation step of dt with the held IMU sample (mean, covariance, transition); the
  /// filter's time does not move (propagateTo() moves it).
  void propagateStep(double dt);

  /// Applies an error-state step (n): X = exp(xi) X, b += zeta (the update's retraction).
  void retract(const Eigen::Ref<const Eigen::VectorXd>& xi);

  /// Level-ground rows (options().level_ground) at the current state and the last kinematics:
  /// the height differences of the feet on the ground (a flat foot: all its points down) to the
  /// first of them, then two tilt rows per flat foot on the ground. groundRow returns r_i and
  /// writes h (n) = -dr_i/d(retraction), so that a retraction by K r lowers r (exposed for the
  /// finite-difference tests).
  int groundRows() const;
  double groundRow(int row, Eigen::Ref<Eigen::VectorXd> h) const;

  /// Sets the state directly (tests): R, v, p, biases, foot positions (3 x K) and contacts (a
  /// foot in contact with all its points down).
  void setState(const Matrix3& R, const Vector3& v, const Vector3& p, const Vector3& bg,
                const Vector3& ba, const Eigen::Matrix<double, 3, Eigen::Dynamic>& feet,
                const std::vector<bool>& in_contact);

 private:
  void kinematics(const Eigen::Ref<const Eigen::VectorXd>& q);  // frame placements + Jacobians
  Vector3 footPoint(int k);       // foot k in the IMU frame from the last kinematics()
  void footPointJacobian(int k);  // foot_jacobian_ from the last kinematics()
  Matrix3 footNoise() const;      // measurement noise of the foot of the last footPointJacobian()
  void touchdown(int k, const Vector3& s);
  void liftoff(int k);
  bool correct(int k, const Vector3& s);
  // Level ground: scalar updates of the stance feet's heights and the flat feet's sole tilt.
  bool correctLevelGround();
  bool correctScalar(double r, double noise_std);  // with h_ set
  int groundHeightRows() const;                    // the first groundRows(): height differences
  bool onGround(int k) const;  // in contact, and a flat foot with all its points down

  const pinocchio::Model& model_;
  pinocchio::Data data_;
  ContactEkfOptions options_;
  std::vector<model::ContactPoint> points_;
  std::vector<model::ContactFrame> feet_;
  std::vector<pinocchio::FrameIndex> foot_frames_;
  std::vector<int> point_foot_;  // the foot of each point
  pinocchio::FrameIndex imu_frame_ = 0;
  int n_ = 15;
  // state
  double time_ = 0;
  Matrix3 R_ = Matrix3::Identity();
  Vector3 v_ = Vector3::Zero(), p_ = Vector3::Zero(), bg_ = Vector3::Zero(), ba_ = Vector3::Zero();
  Vector3 gyro_ = Vector3::Zero(), accel_ = Vector3::Zero();
  Eigen::Matrix<double, 3, Eigen::Dynamic> feet_position_;
  std::vector<std::uint8_t> in_contact_, contact_now_;
  std::vector<int> points_down_;  // per foot: its points in contact at the last update()
  Eigen::MatrixXd P_;
  Matrix15 transition_ = Matrix15::Identity(), predicted_core_P_ = Matrix15::Zero();
  bool transition_consumed_ = false;
  CoreState predicted_core_;  // the next propagation starts a new transition
  Counters counters_;
  // workspaces
  Eigen::VectorXd q_work_;
  Eigen::Matrix<double, 6, Eigen::Dynamic> frame_jacobian_, imu_jacobian_;
  Eigen::Matrix<double, 3, Eigen::Dynamic> foot_jacobian_, point_jacobian_;
  Eigen::MatrixXd A_, Phi_, Qc_, Qd_, PHt_, K_, tmp_;
  Eigen::VectorXd step_;
  Eigen::VectorXd h_, Ph_;            // a scalar measurement's row and P h
  std::vector<Vector3> sole_normal_;  // per flat foot: its points' plane normal, foot frame
};

}  // namespace heft::basestate
