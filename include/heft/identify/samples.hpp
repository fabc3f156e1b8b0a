#pragma once
/// \file Data preparation for identification: from an io::Log to samples (q, v, a, tau, contact
/// flags) on one uniform clock, in the model's joint order (docs/identify.md, "Data preparation").
///
/// Accelerations are not logged by a robot: they come from the logged joint velocities by
/// Savitzky-Golay filtering (io::SavitzkyGolayFilter). Two estimators are offered and compared in
/// docs/identify.md on MuJoCo truth:
///  - SavitzkyGolayDerivative: first derivative of the local polynomial fitted to v, centred;
///  - ForwardDifference: (v[k+1] - v[k]) / dt, then smoothed by Savitzky-Golay (derivative 0).
///    For a log made by an explicit-Euler simulator (MuJoCo, heft::sim) this is the acceleration
///    that the torque of sample k produced, exactly, before smoothing.
/// Storage: one column per sample (q is nq x N, v and a nv x N, full Pinocchio vectors including
/// the free-flyer), joint torques nj x N in the model's joint order.
#include <cstdint>
#include <string>
#include <vector>

#include <Eigen/Core>
#include <pinocchio/multibody/data.hpp>
#include <pinocchio/multibody/model.hpp>

#include "heft/io/log.hpp"
#include "heft/io/signal.hpp"
#include "heft/model/contact_points.hpp"
#include "heft/model/model.hpp"
#include "heft/state/contacts.hpp"

namespace heft::identify {

/// How joint accelerations are obtained.
enum class AccelerationMethod {
  SavitzkyGolayDerivative,  ///< d/dt of the SG polynomial fitted to v (centred)
  ForwardDifference,        ///< (v[k+1] - v[k]) / dt, then SG smoothing (derivative 0)
  Truth,  ///< the log's truth group (diagnosis and studies only; a real log has none)
};
std::string toString(AccelerationMethod method);
/// "sg-derivative", "forward-difference", "truth". \throws InputError naming the accepted values.
AccelerationMethod parseAccelerationMethod(const std::string& name);

/// Where the free-flyer state (pose, twist) comes from.
enum class BaseStateSource {
  Auto,      ///< the log's base_pose and base_twist when it has them, else Estimate
  Log,       ///< joints/base_pose and joints/base_twist (a state estimator's output); required
  Estimate,  ///< heft::basestate on the log's IMU, joints and contact flags
  Truth,     ///< truth/base_pose and truth/base_twist: studies only
};

using state::ContactDetectionOptions;

/// A closed time range [start, end] in seconds from the log's first sample.
struct TimeRange {
  double start = 0, end = 0;
  bool contains(double t) const { return t >= start && t <= end; }
};

struct PreparationOptions {
  AccelerationMethod acceleration = AccelerationMethod::SavitzkyGolayDerivative;
  /// Savitzky-Golay window / order for the acceleration (and the velocity, if smoothed). The
  /// default (window 81, order 3) is the best measured on the nominal noise profile at 1 kHz
  /// (table in docs/identify.md; noise-free logs: ForwardDifference with window 1, harsh: 161+).
  /// window = 1 means no smoothing (ForwardDifference only).
  io::SavitzkyGolayOptions filter{81, 3};
  /// Replace the logged velocity by its SG smoothing (derivative 0, same window), used in the
  /// regressor (Coriolis, friction). Off by default: nominal-noise velocities are accurate enough.
  bool smooth_velocity = false;
  /// Use joints/tau_cmd instead of joints/tau when the log has it.
  bool use_commanded_torque = false;
  /// Keep every `decimation`-th sample after filtering (1 = all). Filtering always uses all.
  int decimation = 1;
  /// Keep samples with time in [start_time, end_time] (seconds from the log's first sample);
  /// end_time <= 0 means to the end. The filter's edge samples (window / 2 at each end) are
  /// always dropped.
  double start_time = 0.0;
  double end_time = 0.0;
  /// Samples inside any of these ranges (same clock as start_time) are dropped after filtering:
  /// bad stretches, or data held out for validation.
  std::vector<TimeRange> exclude;
  /// When not empty, only samples inside one of these ranges are kept (a held-out set).
  std::vector<TimeRange> only;
  BaseStateSource base_state = BaseStateSource::Auto;
  /// When heft estimates the base state: the stance feet stand on a level floor
  /// (basestate::ContactEkfOptions::level_ground), which separates tilt from accelerometer bias.
  bool level_ground = false;
  /// Free-flyer: a constant rotation (about the base's x and y axes [rad]) applied to every base
  /// orientation, R <- R Exp([x, y, 0]): the tilt that fitBaseTilt (problem.hpp) found in the
  /// base-state estimate, so that samples prepared again (held-out ranges) get the same
  /// correction. Zero leaves the base state as it is.
  Eigen::Vector2d base_tilt = Eigen::Vector2d::Zero();
  /// Contact flags: from the log's contacts group when present (every name a frame of the model,
  /// or a point defined by the log's contacts/frames and offsets or by `contact_points`), else
  /// detected at the robot's contact frames (ContactDetectionOptions). `detect_contacts` forces
  /// detection.
  bool detect_contacts = false;
  /// With the log's flags: a frame also counts as in contact when the kinematic detection says so
  /// (method 4 loses only rows by projecting out a foot that carries nothing, but keeps a whole
  /// force in the rows when it misses a foot that carries one: force-threshold flags drop lightly
  /// loaded feet).
  bool widen_contacts = false;
  /// Contact points away from a frame origin (sole corners), by name; they override the log's own
  /// definitions of the same names. Points on one frame that span a plane make it a flat foot.
  std::vector<model::ContactPoint> contact_points;
  ContactDetectionOptions contact;
  /// Free-flyer: drop samples within this many seconds of any contact flag change (a touchdown or
  /// lift-off: impacts, soft-contact transients and misplaced flags concentrate the residual
  /// there). 0 keeps every sample.
  double contact_guard = 0.0;
  /// \throws InputError naming the field.
  void validate() const;
};

/// Prepared samples on one uniform clock.
struct Samples {
  bool free_flyer = false;
  double dt = 0;                                   ///< period between kept samples [s]
  Eigen::VectorXd time;                            ///< N [s]
  Eigen::MatrixXd q;                               ///< nq x N
  Eigen::MatrixXd v;                               ///< nv x N
  Eigen::MatrixXd a;                               ///< nv x N
  Eigen::MatrixXd tau;                             ///< nj x N joint torques (model joint order)
  std::vector<std::string> joint_names;            ///< nj, model order
  std::vector<int> joint_idx_v;                    ///< nj, column of each joint in v
  std::vector<pinocchio::JointIndex> joint_index;  ///< nj, Pinocchio joint index
  /// nc contact frames (free-flyer): a frame is in contact when any of its points is
  std::vector<std::string> contact_names;
  std::vector<bool> contact_flat;      ///< nc: flat foot (a full wrench), else a point contact
  std::vector<Vector3> contact_point;  ///< nc: a point contact's point in its frame [m]
  Eigen::Matrix<std::uint8_t, Eigen::Dynamic, Eigen::Dynamic> contact;  ///< nc x N, 1 = contact
  bool contacts_detected = false;  ///< flags from ContactDetectionOptions, not the log
  std::vector<std::string> warnings;
  int size() const { return static_cast<int>(time.size()); }
  int numJoints() const { return static_cast<int>(joint_names.size()); }
};

/// Prepares samples for identification (see the file comment).
/// Checks the log against the robot first (io::validateLog with the model): a joint the model
/// lacks or a model joint the log lacks throws InputError naming them. A non-uniform joint clock
/// is resampled (io::resample) at the rounded mean rate, with a warning.
/// \throws InputError for a bad log or options, too few samples for the filter, a free-flyer log
///   without a base state (BaseStateSource::Log) or unknown contact names.
Samples prepareSamples(const model::RobotModel& robot, const io::Log& log,
                       const PreparationOptions& options = {});

/// Rotates every base orientation of free-flyer samples by R <- R Exp([tilt, 0]) (base axes);
/// twists and accelerations are in the base frame and stay. No-op for a fixed base.
void tiltBase(const Eigen::Vector2d& tilt, Samples& samples);

/// Samples of several recordings of the same robot, one after the other (each prepared on its
/// own clock: filters never cross a join). dt is the first's; warnings are prefixed with the
/// recording's index. \throws InputError for samples of other joints or bases.
Samples concatenate(const std::vector<Samples>& recordings);

/// RMS error of prepared accelerations against the log's truth group, per joint (nj) and overall,
/// on the same kept samples (for tuning the filter). \throws InputError if the log has no truth
/// time series.
struct AccelerationError {
  Eigen::VectorXd rms_per_joint;  ///< [rad/s^2]
  double rms = 0;                 ///< over every joint and sample
  double truth_rms = 0;           ///< RMS of the true acceleration (scale)
};
AccelerationError accelerationError(const model::RobotModel& robot, const io::Log& log,
                                    const PreparationOptions& options);

}  // namespace heft::identify
