#pragma once
/// \file The in-memory log: what heft reads from HDF5 or CSV (docs/log-format.md) and what every
/// estimator consumes. Every group carries its own time vector, so groups may have different rates
/// and the mocap may have dropouts (missing rows). Matrices are samples x channels.
#include <Eigen/Core>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "heft/model/contact_points.hpp"

namespace heft::io {

/// 0/1 flags (1 = in contact), samples x contacts.
using FlagMatrix = Eigen::Matrix<std::uint8_t, Eigen::Dynamic, Eigen::Dynamic>;

/// Whether the robot is bolted to the world or floats (Pinocchio free-flyer root joint).
enum class BaseType { Fixed, FreeFlyer };
/// "fixed" / "free-flyer"; parse throws InputError naming the accepted values.
std::string toString(BaseType type);
BaseType parseBaseType(const std::string& name);

/// Metadata attributes of a log (HDF5 root attributes; CSV metadata.yaml).
struct Metadata {
  std::string robot;  ///< robot name, e.g. "go2" (informative, not checked)
  BaseType base_type = BaseType::Fixed;
  std::string units = "SI";          ///< the only accepted value: SI units, radians, seconds
  std::string noise_profile;         ///< free text, e.g. "none" or "go2-realistic"
  std::string scenario;              ///< free text, e.g. "trot-0.5mps"
  std::optional<std::int64_t> seed;  ///< random seed of a simulated log
};

/// Joint measurements, all on one time vector (N samples, nj joints).
struct JointSeries {
  Eigen::VectorXd time;            ///< N, [s], strictly increasing
  std::vector<std::string> names;  ///< nj joint names, as in the robot model
  Eigen::MatrixXd q;               ///< N x nj, joint positions [rad] or [m]
  Eigen::MatrixXd v;               ///< N x nj, joint velocities [rad/s] or [m/s]
  Eigen::MatrixXd tau;             ///< N x nj, measured joint torques [N m] or forces [N]
  Eigen::MatrixXd tau_cmd;         ///< N x nj commanded torques, or 0 x 0 when absent
  /// N x 7 [x y z qx qy qz qw], base pose in the world frame from a state estimator (free-flyer
  /// only), or 0 x 0 when absent.
  Eigen::MatrixXd base_pose;
  /// N x 6 [vx vy vz wx wy wz], base velocity in the base frame (Pinocchio's free-flyer v), or 0 x
  /// 0.
  Eigen::MatrixXd base_twist;
  /// True when every field is empty: the log has no joint group (allowed only for a log holding
  /// nothing but metadata and estimates).
  bool empty() const {
    return time.size() == 0 && names.empty() && q.size() == 0 && v.size() == 0 && tau.size() == 0 &&
           tau_cmd.size() == 0 && base_pose.size() == 0 && base_twist.size() == 0;
  }
};

/// Inertial measurement unit, on its own time vector (M samples).
struct ImuSeries {
  std::string frame;            ///< link the IMU is mounted on (informative), may be empty
  Eigen::VectorXd time;         ///< M, [s]
  Eigen::MatrixXd gyro;         ///< M x 3, angular velocity in the IMU frame [rad/s]
  Eigen::MatrixXd accel;        ///< M x 3, specific force in the IMU frame [m/s^2]
  Eigen::MatrixXd orientation;  ///< M x 4 [qx qy qz qw] IMU-to-world, or 0 x 0 when absent
};

/// Motion capture of the base, on its own time vector. Dropouts are missing rows (time gaps).
struct MocapSeries {
  std::string frame;            ///< tracked link (informative), may be empty
  Eigen::VectorXd time;         ///< K, [s]
  Eigen::MatrixXd position;     ///< K x 3, world frame [m]
  Eigen::MatrixXd orientation;  ///< K x 4 [qx qy qz qw], tracked-frame-to-world
};

/// Measured (or estimated) contact flags, one column per named contact.
struct ContactSeries {
  Eigen::VectorXd time;            ///< C, [s]
  std::vector<std::string> names;  ///< nc contact names (e.g. foot frame names)
  FlagMatrix flags;                ///< C x nc, 1 = in contact
  /// Where each contact is, when its name is not a frame of the model (e.g. sole corners): the
  /// frame (nc names) and the point in that frame (nc x 3 [m]). Both empty, or both given.
  std::vector<std::string> frames;
  Eigen::MatrixXd offsets;
  /// The points `frames` and `offsets` define (empty when they are absent).
  std::vector<model::ContactPoint> definedPoints() const;
};

/// Ground truth of a simulated log. The time series (time, q, v, a, ...) and the bodies are each
/// optional; joint columns follow JointSeries::names.
struct TruthSeries {
  Eigen::VectorXd time;        ///< T, [s], or empty when only bodies are known
  Eigen::MatrixXd q, v, a;     ///< T x nj each, true joint positions, velocities, accelerations
  Eigen::MatrixXd base_pose;   ///< T x 7 or 0 x 0 (as JointSeries::base_pose)
  Eigen::MatrixXd base_twist;  ///< T x 6 or 0 x 0 (as JointSeries::base_twist)
  Eigen::MatrixXd base_acceleration;       ///< T x 6 or 0 x 0, free-flyer part of Pinocchio's a
  std::vector<std::string> contact_names;  ///< ncf contact points
  Eigen::MatrixXd contact_forces;          ///< T x 3 ncf, [fx fy fz] per contact, world frame [N]
  FlagMatrix contact_flags;                ///< T x ncf or 0 x 0
  /// Bodies as heft::model names them: the movable joint's name or the link at its frame ("base").
  /// The body is Pinocchio's model.inertias[joint], lumped over links on fixed joints.
  std::vector<std::string> body_names;
  /// nb x 10, pi in Pinocchio order [m, mcx, mcy, mcz, Ixx, Ixy, Iyy, Ixz, Iyz, Izz], joint frame.
  Eigen::MatrixXd body_pi;
  /// Bodies whose parameters change over time (a simulated mass that varies), names from
  /// body_names, and their pi at every truth sample: T x 10 nvb, body b in columns 10 b .. 10 b + 9
  /// (body_pi then holds the value at the first sample). Empty / 0 x 0 when nothing varies.
  std::vector<std::string> varying_body_names;
  Eigen::MatrixXd varying_body_pi;
};

/// Parameter estimates over time from an estimator (heft filter), on their own time vector (E
/// samples, nb bodies). Estimates need not be physically consistent (a linear filter's may not be):
/// validation checks shapes and finite values only.
struct EstimateSeries {
  std::string estimator;  ///< e.g. "log-cholesky-ekf", "linear-kf" (free text)
  Eigen::VectorXd time;   ///< E, [s], strictly increasing (time the estimate refers to)
  std::vector<std::string> body_names;  ///< nb estimated bodies (heft::model body names)
  /// E x 10 nb, pi of body b in columns 10 b .. 10 b + 9, Pinocchio order [m, mcx, mcy, mcz, Ixx,
  /// Ixy, Iyy, Ixz, Iyz, Izz], joint frame (as TruthSeries::varying_body_pi).
  Eigen::MatrixXd body_pi;
  Eigen::MatrixXd body_pi_std;  ///< E x 10 nb one-sigma of pi (linearized), >= 0, or 0 x 0
  /// E normalized innovation squared, >= 0 (0 where the estimator made no update; never NaN), or
  /// empty.
  Eigen::VectorXd nis;
  FlagMatrix status;  ///< E x 1 status code per sample (estimator-defined, 0..255), or 0 x 0
};

/// A whole log. `joints` is required, except in a log holding only metadata and `estimates`
/// (joints.empty()); the other groups are optional.
struct Log {
  Metadata meta;
  JointSeries joints;
  std::optional<ImuSeries> imu;
  std::optional<MocapSeries> mocap;
  std::optional<ContactSeries> contacts;
  std::optional<TruthSeries> truth;
  std::optional<EstimateSeries> estimates;
};

/// Empty string when `a` and `b` are identical (sizes and every value, bit for bit, NaN equal to
/// NaN), otherwise a description of the first difference ("joints/q row 3 column 1: 0.5 vs 0.25").
std::string firstDifference(const Log& a, const Log& b);

}  // namespace heft::io
