#pragma once
/// \file Errors of an estimate against the truth group of a simulated log (docs/design.md,
/// "Truth and benchmarks"): per body relative mass error, COM error [m], relative Frobenius error
/// of the rotational inertia about the COM and the pseudo-inertias' distance (all ten parameters in
/// one number); per joint relative friction and armature errors.
#include <optional>
#include <string>
#include <vector>

#include <Eigen/Core>

#include "heft/io/log.hpp"
#include "heft/model/model.hpp"
#include "heft/results/layout.hpp"

namespace heft::results {

/// True joint friction of a simulated log (not in the log format yet: the caller passes it, e.g.
/// from heft::sim's scenario: MuJoCo damping = viscous, frictionloss = Coulomb, armature).
struct JointFrictionTruth {
  std::string joint;
  double coulomb = 0;   ///< [N m]
  double viscous = 0;   ///< [N m s/rad]
  double armature = 0;  ///< [kg m^2]
};

struct BodyError {
  std::string name;
  double mass_true = 0, mass_estimate = 0;
  double mass_relative = 0;  ///< |m - m*| / m*
  Eigen::Vector3d com_true = Eigen::Vector3d::Zero(), com_estimate = Eigen::Vector3d::Zero();
  double com_error = 0;         ///< |c - c*| [m]
  double inertia_relative = 0;  ///< |I_c - I_c*|_F / |I_c*|_F (about the COM)
  /// The affine-invariant distance of the pseudo-inertias, |log(J*^-1/2 J J*^-1/2)|_F: the ten
  /// parameters' error in one number, the same in any frame and unit (a mass off by a factor s
  /// alone gives 2 |log s|, about twice the relative error); infinite when J is not positive
  /// definite.
  double pseudo_inertia_distance = 0;
};

/// |log(B^-1/2 A B^-1/2)|_F of two pseudo-inertias: sqrt(sum log^2 lambda_i) over the generalized
/// eigenvalues of A x = lambda B x. Infinite when A is not positive definite; \throws InputError
/// when B is not.
double pseudoInertiaDistance(const Matrix4& A, const Matrix4& B);

/// Errors of one body's estimated pi against its true pi: the metrics every estimator reports.
/// An estimated mass <= 0 gives an infinite COM and inertia error.
BodyError bodyError(const std::string& name, const Vector10& estimate, const Vector10& truth);

struct JointError {
  std::string joint;
  double coulomb_true = 0, coulomb_estimate = 0, coulomb_relative = -1;  ///< -1: not identified
  double viscous_true = 0, viscous_estimate = 0, viscous_relative = -1;
  double armature_true = 0, armature_estimate = 0, armature_relative = -1;
};

struct TruthErrors {
  std::vector<BodyError> bodies;
  std::vector<JointError> joints;
  std::string report() const;
};

/// RMSEs of an estimated trajectory against the log's truth, next to those of the raw
/// measurements (encoders; the motion capture; central differences for velocities) at the same
/// instants.
struct TrajectoryErrors {
  double joint_position = 0, joint_position_raw = 0;  ///< [rad]
  double joint_velocity = 0, joint_velocity_raw = 0;  ///< [rad/s]
  bool has_base = false;
  double base_position = 0, base_position_raw = 0;  ///< [m]
  double base_rotation = 0, base_rotation_raw = 0;  ///< [rad], angle of R_true^T R
  std::string report() const;
};

/// Contact forces a contact-implicit estimate reconstructed, against the truth's (simulated logs).
struct ContactForceErrors {
  int knots = 0;    ///< steps scored (their start time in the truth)
  int points = 0;   ///< contact points (or flat feet) the truth has too
  double rmse = 0;  ///< [N] sqrt(mean over knots and points of |f - f_true|^2), world axes
  /// sqrt(sum |f - f_true|^2 / sum |f_true|^2) over the same pairs: the error relative to the
  /// forces' size (PRIME's relative force error)
  double relative = 0;
  double threshold = 0;        ///< [N] normal force above which a point counts as in contact
  double state_agreement = 0;  ///< share of (knot, point) pairs whose contact state agrees
  std::string report() const;
};

/// Errors of `force` (K x 3P: (f_x, f_y, f_z) per point, world axes, at `time`, points `names`)
/// against the log's truth contact forces, per step [time_k, time_k+1) whose start the truth has
/// (within a microsecond): row k is the force over the step (an impulse over dt), so the truth's
/// is the mean of its samples in the step (at 1 kHz on a 1 kHz log: the sample at time_k); the
/// last row has no step and is not scored. Points by name, or a name that is a frame against the
/// sum of the truth points the log's contacts group puts on that frame (a flat foot's corners);
/// nullopt when no pair matches.
std::optional<ContactForceErrors> contactForceErrors(const io::Log& log,
                                                     const Eigen::VectorXd& time,
                                                     const std::vector<std::string>& names,
                                                     const Eigen::MatrixXd& force,
                                                     double threshold);

/// True pi of body `joint` from the log's truth group, whichever name (link or joint) the truth
/// gives it; `name` is for the error message (default: the body's name).
/// \throws InputError when the log has no truth bodies or lacks the body.
Vector10 truthPi(const model::RobotModel& robot, const io::Log& log, pinocchio::JointIndex joint,
                 const std::string& name = "");

/// pi_S of the truth group (and friction / armature from `friction`) in the linear layout.
/// \throws InputError when the log has no truth bodies or lacks an identified body.
Eigen::VectorXd truthLinearVector(const model::RobotModel& robot, const io::Log& log,
                                  const ParameterLayout& layout,
                                  const std::vector<JointFrictionTruth>& friction = {});

/// Errors of `linear` (the linear layout vector: pi_S, coulomb/viscous, armature) against the
/// truth. Bodies with an estimated mass <= 0 get an infinite COM error.
TruthErrors truthErrors(const model::RobotModel& robot, const io::Log& log,
                        const ParameterLayout& layout, const Eigen::VectorXd& linear,
                        const std::vector<JointFrictionTruth>& friction = {});

}  // namespace heft::results
