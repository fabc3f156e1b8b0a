#pragma once
/// \file Which parameters to identify: bodies (and which of their ten inertial parameters), joint
/// friction and actuator parameters, each with a Gaussian prior, and how they stack into one
/// parameter vector x.
///
/// Stacked layout (IdentifiedSet::layout()): x = [body blocks..., friction blocks..., actuator
/// blocks...], in the order of the vectors of IdentifiedSet; only identified friction / actuator
/// blocks appear.
///  - body block: the free entries of pi, in pi order (BodyCoordinates::Pi); with
///    BodyCoordinates::Theta a body whose ten entries are all free holds theta of the set's
///    parametrization instead (same size). A partial mask cannot be expressed in theta (every theta
///    entry moves every pi entry), so such a body stays linear in pi.
///  - friction block: mu = log gamma (6), the coordinates of heft::dynamics friction (friction.hpp:
///    tau_f = -g0 (tanh(g1 v) - tanh(g2 v)) + g3 tanh(g4 v) + g5 v, bayesian-sysid paper eq. 56).
///  - actuator block: rho = [log k, log kappa] (2), the coordinates of heft::dynamics actuators
///    (actuator.hpp: tau = kappa tanh(k u / kappa), SPI-Active paper eq. 3).
/// Priors: Gaussian on pi for bodies (mean, 10 x 10 covariance in pi space), Gaussian on mu / rho
/// (log-normal on gamma, k, kappa) for friction and actuators.
#include <array>
#include <string>
#include <vector>

#include <Eigen/Core>

#include "heft/common/types.hpp"
#include "heft/inertia/inertia.hpp"
#include "heft/model/model.hpp"

namespace heft::model {

using Vector2 = Eigen::Vector2d;
using Matrix2 = Eigen::Matrix2d;
using Vector6 = Eigen::Matrix<double, 6, 1>;
using Matrix6 = Eigen::Matrix<double, 6, 6>;

/// Which of a body's ten pi entries are identified (true) or held at their nominal value.
using ParameterMask = std::array<bool, 10>;

/// Names of pi's entries: m, hx, hy, hz, Ixx, Ixy, Iyy, Ixz, Iyz, Izz (h = m c).
const std::array<std::string, 10>& piEntryNames();
/// All ten free.
ParameterMask allParameters();
/// Number of free entries.
int countFree(const ParameterMask& mask);
/// Parses a comma-separated list of entry names (piEntryNames()) and groups: "all", "mass" (m),
/// "h" (hx, hy, hz), "inertia" (the six I entries). \throws InputError naming the accepted words.
ParameterMask parseMask(const std::string& text);
/// "m,hx,hy,hz" or "all".
std::string toString(const ParameterMask& mask);

/// Default body prior covariance: diagonal in pi space, std_i relative to the nominal value with a
/// floor, so that entries whose nominal is zero (products of inertia, COM on an axis) still move.
struct BodyPriorOptions {
  double mass_relative_std = 0.1;  ///< std(m) = r_m m
  /// std(h_i) = r_h max(|h_i|, m length_scale)
  double first_moment_relative_std = 0.2;
  /// std(I_ij) = r_I max(|I_ij|, tr(I) / 3) (I about the body frame origin)
  double inertia_relative_std = 0.3;
  double length_scale = 0.05;  ///< [m], the COM displacement scale of the h floor
  double min_std = 1e-6;       ///< floor on every std (massless bodies) [SI units of the entry]

  /// \throws InputError if a field is not finite and > 0.
  void validate() const;
};

/// Default friction prior, the same for every joint (log-normal on each gamma_i).
struct FrictionPriorOptions {
  /// Prior median of gamma: Stribeck amplitude 0.05 N m, tanh rates 10 and 100 s/rad (g2 > g1: a
  /// stiction bump), Coulomb 0.2 N m, Coulomb rate 100 s/rad, viscous 0.05 N m s/rad. Weakly
  /// informative defaults for 1-50 N m joints; set them per robot.
  Vector6 gamma = (Vector6() << 0.05, 10.0, 100.0, 0.2, 100.0, 0.05).finished();
  /// std of log gamma_i (1.0: a factor e either way).
  Vector6 log_std = Vector6::Constant(1.0);

  /// \throws InputError unless gamma > 0 and log_std > 0, all finite.
  void validate() const;
};

/// Default actuator prior (log-normal on gain and saturation).
struct ActuatorPriorOptions {
  double gain = 1.0;                ///< prior median of k (dimensionless)
  double gain_log_std = 0.1;        ///< std of log k
  double saturation_log_std = 0.2;  ///< std of log kappa
  /// kappa's prior median is the joint's effort limit from the model; this [N m] when the model
  /// has none (0 or infinite).
  double default_saturation = 100.0;

  /// \throws InputError unless every field is finite and > 0.
  void validate() const;
};

/// How IdentifiedSet::build chooses the set.
struct IdentifiedSetOptions {
  /// Bodies by link or joint name; empty = every body of the model.
  std::vector<std::string> bodies;
  /// Free entries of every listed body (edit IdentifiedSet::bodies[i].free for per-body masks).
  ParameterMask free = allParameters();
  /// Coordinates of fully free bodies for BodyCoordinates::Theta.
  inertia::Parametrization parametrization = inertia::Parametrization::LogCholesky;
  BodyPriorOptions body_prior;
  /// Bodies that may carry an unknown payload (a battery, a tool, a box on a trunk): their prior
  /// is `payload_prior` instead of `body_prior`. Each must also be identified (in `bodies`, or
  /// `bodies` empty).
  std::vector<std::string> payload_bodies;
  /// Wide on purpose: a payload can double a body's mass and move its COM by tens of centimetres.
  /// std(m) = 1.0 m, std(h_i) = 1.0 max(|h_i|, m 0.2 m), std(I_ij) = 1.0 max(|I_ij|, tr(I) / 3).
  BodyPriorOptions payload_prior{1.0, 1.0, 1.0, 0.2};
  /// Friction / actuator blocks exist for every 1-dof joint (not the free-flyer); these flags
  /// mark them identified. `*_joints` restricts the identified ones (empty = all).
  bool identify_friction = false;
  std::vector<std::string> friction_joints;
  bool identify_actuators = false;
  std::vector<std::string> actuator_joints;
  FrictionPriorOptions friction_prior;
  ActuatorPriorOptions actuator_prior;

  /// \throws InputError if a field is invalid (nested options, an all-false mask, duplicates).
  void validate() const;
};

/// One body's inertial block.
struct BodyBlock {
  std::string name;                 ///< body (link) name, as RobotModel::body(joint).name
  pinocchio::JointIndex joint = 0;  ///< joint index in the model
  ParameterMask free = allParameters();
  Vector10 prior_mean = Vector10::Zero();            ///< pi
  Matrix10 prior_covariance = Matrix10::Identity();  ///< in pi space, SI units squared
};

/// One joint's friction parameters gamma_0..gamma_5 (see friction.hpp).
struct FrictionBlock {
  std::string joint_name;
  pinocchio::JointIndex joint = 0;
  int idx_v = 0;                                       ///< column of the joint in v
  bool identified = false;                             ///< in x, or held at prior_gamma
  Vector6 prior_gamma = Vector6::Ones();               ///< prior median of gamma (> 0)
  Matrix6 prior_log_covariance = Matrix6::Identity();  ///< covariance of mu = log gamma
};

/// One joint's actuator parameters [gain k, saturation kappa [N m]] (see actuator.hpp).
struct ActuatorBlock {
  std::string joint_name;
  pinocchio::JointIndex joint = 0;
  int idx_v = 0;
  bool identified = false;
  Vector2 prior_value = Vector2::Ones();               ///< prior median [k, kappa] (> 0)
  Matrix2 prior_log_covariance = Matrix2::Identity();  ///< covariance of [log k, log kappa]
};

/// Values of every block of a set, identified or not, in natural units: pi per body, gamma per
/// friction block, [k, kappa] per actuator block. Sizes match the set's vectors.
struct ParameterValues {
  std::vector<Vector10> pi;
  std::vector<Vector6> friction_gamma;
  std::vector<Vector2> actuator;
};

/// Where each block sits in x. Offsets are -1 for blocks not in x.
struct Layout {
  int dimension = 0;
  std::vector<int> body_offset, body_size;
  std::vector<int> friction_offset;  ///< size 6 each
  std::vector<int> actuator_offset;  ///< size 2 each
};

/// Body block coordinates in x (see the file comment).
enum class BodyCoordinates { Pi, Theta };

/// The identified set. Plain data: edit the vectors, then call validate().
struct IdentifiedSet {
  std::vector<BodyBlock> bodies;
  inertia::Parametrization parametrization = inertia::Parametrization::LogCholesky;
  std::vector<FrictionBlock> friction;
  std::vector<ActuatorBlock> actuators;

  /// Builds the set from a robot: the listed bodies with prior mean = the model's pi and the
  /// default covariance, friction and actuator blocks for every 1-dof joint.
  /// \throws InputError for invalid options or an unknown body / joint name (listing valid ones).
  static IdentifiedSet build(const RobotModel& robot, const IdentifiedSetOptions& options = {});

  /// \throws InputError naming the block and field: nothing identified, a duplicate body or
  ///   joint, an all-false mask, non-finite or non-positive-definite prior covariances, gamma /
  ///   gain / saturation not > 0.
  void validate() const;
  /// validate() plus: every block's joint index and name match `robot`.
  void validate(const RobotModel& robot) const;

  /// Offsets and total dimension of x.
  Layout layout() const;
  int dimension() const { return layout().dimension; }

  /// Prior means of every block (the default values of unidentified entries).
  ParameterValues priorValues() const;
  /// Current values in `robot` for bodies (pi), prior medians for friction and actuators.
  ParameterValues valuesFrom(const RobotModel& robot) const;
  /// Writes the bodies' pi of `values` into `robot`.
  void applyTo(const ParameterValues& values, RobotModel& robot) const;

  /// x from full values. With Theta, fully free bodies need strictly consistent pi.
  /// \throws InputError on a size mismatch or (Theta) inconsistent pi; gamma, k, kappa must be > 0.
  Eigen::VectorXd stack(const ParameterValues& values,
                        BodyCoordinates coordinates = BodyCoordinates::Pi) const;
  /// Full values from x: the entries in x, the rest from `fixed` (usually priorValues()).
  /// \throws InputError on a size mismatch or non-finite x.
  ParameterValues unstack(const Eigen::VectorXd& x, const ParameterValues& fixed,
                          BodyCoordinates coordinates = BodyCoordinates::Pi) const;

  /// Prior mean of x in Pi coordinates (= stack(priorValues())).
  Eigen::VectorXd priorMean() const;
  /// Prior covariance of x in Pi coordinates (block diagonal). A partial body mask takes the
  /// conditional covariance of the free entries given the held ones (Schur complement); with the
  /// default diagonal covariance this is the free entries' diagonal block.
  Eigen::MatrixXd priorCovariance() const;

  /// Number of bodies, friction and actuator blocks in x, for reports.
  std::string summary() const;
};

/// Default body prior covariance for a nominal pi (see BodyPriorOptions).
Matrix10 defaultBodyCovariance(const Vector10& nominal, const BodyPriorOptions& options = {});

}  // namespace heft::model
