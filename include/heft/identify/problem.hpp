#pragma once
/// \file The stacked identification problem built once from prepared samples, shared by every
/// method (docs/identify.md):
/// \f[ P_k \big( Y_S(q_k, v_k, a_k)\, \pi_S + \tau_{nom,k} + S^T(\tau_{f}(v_k) + \mathrm{diag}(I_a)
/// a_k)
///     - S^T \hat\tau_k \big) = 0, \f]
/// one block of rows per sample k. P_k is the identity (fixed base), or an orthonormal basis of
/// null(J_c,k)^T (floating base, method 4: contact forces J_c^T f drop out because
/// N^T J_c^T = 0), or the same restricted to the six base rows (base-dynamics-only variant).
/// tau_f is joint friction (bayesian-sysid eq. 56, friction.hpp), I_a the rotor armature.
///
/// Stored: A = [P_k Y_S] (rows x 10|S|), G = [P_k S^T] (rows x nj, maps joint torques into the
/// rows), b = [P_k (S^T tau_k - tau_nom,k)], and per row its sample and channel.
#include <string>
#include <vector>

#include <Eigen/Core>

#include "heft/identify/samples.hpp"
#include "heft/model/identified_set.hpp"
#include "heft/results/layout.hpp"

namespace heft::identify {

/// Friction model identified for the joints whose FrictionBlock is identified.
enum class FrictionForm {
  /// tau_f = g3 tanh(r v) + g5 v with the rate r = ProblemOptions::coulomb_rate fixed: Coulomb +
  /// viscous, linear in (g3, g5). MAP identifies (log g3, log g5).
  CoulombViscous,
  /// eq. 56, all six log-parameters mu (MAP only; the linear methods use CoulombViscous).
  Full,
};
std::string toString(FrictionForm form);
FrictionForm parseFrictionForm(const std::string& name);  ///< "coulomb-viscous", "full"

/// Rows of each sample.
enum class Projection {
  Auto,                  ///< None for a fixed base, ContactNullSpace for a free-flyer
  None,                  ///< every row of the dynamics (fixed base; a free-flyer only in flight)
  ContactNullSpace,      ///< method 4: N^T (...) with N an orthonormal basis of null(J_c)
  BaseContactNullSpace,  ///< method 4, base variant: the six base rows, forces projected out
};
std::string toString(Projection projection);
Projection parseProjection(const std::string& name);  ///< "auto", "none", "contact", "base"

struct ProblemOptions {
  FrictionForm friction_form = FrictionForm::CoulombViscous;
  /// tanh rate of the Coulomb term of CoulombViscous [s/rad] (tanh(100 * 0.03) = 0.995).
  double coulomb_rate = 100.0;
  /// Identify rotor armature (reflected rotor inertia, kg m^2) of these joints (names; empty
  /// with identify_armature = all joints of the identified friction blocks, else all joints).
  bool identify_armature = false;
  std::vector<std::string> armature_joints;
  double armature_prior_median = 0.01;  ///< [kg m^2], prior of the MAP (log-normal)
  double armature_prior_log_std = 2.0;  ///< std of log(armature)
  /// Identify a constant torque-sensor offset o_j per joint (logged tau = true tau + o): these
  /// joints (names; empty with identify_torque_offsets = every joint of the log).
  bool identify_torque_offsets = false;
  std::vector<std::string> torque_offset_joints;
  double torque_offset_prior_std = 1.0;  ///< [N m], MAP prior N(0, std^2) on each offset
  Projection projection = Projection::Auto;
  /// Contact point offset below each contact frame along world z [m] (go2: the 0.022 m foot
  /// sphere: the floor pushes at the sphere's bottom, not at the frame).
  double contact_offset = 0.0;
  /// Fixed base: the row of joint j at sample k is dropped when |v_j,k| < min_speed [rad/s]
  /// (MuJoCo's dry friction is a constraint force that a smooth tanh cannot follow near zero
  /// speed). 0 keeps every row.
  double min_speed = 0.0;
  /// Free-flyer: fit a constant tilt of the base-state estimate (two angles about the base's x
  /// and y axes) to the torques before the method runs, and correct the samples by it
  /// (fitBaseTilt, docs/identify.md "Base tilt"). An IMU cannot tell a tilt from an
  /// accelerometer bias while the robot stands; the torques of the bodies nobody identifies can.
  bool estimate_base_tilt = false;
  /// \throws InputError naming the field.
  void validate() const;
};

using results::ParameterLayout;

struct StackedProblem {
  ParameterLayout layout;
  Eigen::MatrixXd A;        ///< rows x 10 nb
  Eigen::MatrixXd G;        ///< rows x nj
  Eigen::VectorXd b;        ///< rows
  Eigen::VectorXi sample;   ///< rows: sample index of the row
  Eigen::VectorXi channel;  ///< rows: channel (fixed base: joint; projected: row within block)
  std::vector<std::string> channel_names;
  Eigen::MatrixXd v_joint;     ///< nj x N joint velocities
  Eigen::MatrixXd a_joint;     ///< nj x N joint accelerations
  Eigen::VectorXd nominal_pi;  ///< 10 nb, the robot's pi_S
  /// rows x 2 with ProblemOptions::estimate_base_tilt on a free-flyer, else empty: the rows'
  /// derivative with respect to a base rotation R Exp([w, 0]), P_k M(q_k)[:, 0:3] (e_i x g_b,k)
  /// with the nominal model's mass matrix M and g_b the gravity in the base frame.
  Eigen::MatrixXd base_tilt;
  double coulomb_rate = 100;
  Projection projection = Projection::None;
  std::vector<std::string> warnings;
  int rows() const { return static_cast<int>(b.size()); }
  int numChannels() const { return static_cast<int>(channel_names.size()); }
};

/// Builds the stacked problem for the bodies of `set` (every body must be fully free: partial
/// masks are not supported yet), friction for its identified friction blocks, armature as
/// options say. An empty set (no block at all) gives the rows of a prediction: b holds the
/// measured minus the model's inverse-dynamics torque (predictTorques). Free-flyer: contact frames
/// from the robot (Samples::contact_names). \throws InputError on a partial mask, identified
/// actuator blocks (not supported), an unknown
///   armature joint, a projection that does not fit the base, or no rows left.
StackedProblem buildProblem(const model::RobotModel& robot, const Samples& samples,
                            const model::IdentifiedSet& set, const ProblemOptions& options = {});

/// The base tilt that the rows of `problem` (with base_tilt columns) see, fitted with every
/// linear parameter free: w minimizing |Phi x + T w - y| over (x, w), Phi = torqueSystem's.
struct BaseTiltFit {
  bool identified = false;
  Eigen::Vector2d tilt = Eigen::Vector2d::Zero();  ///< [rad] about the base's x and y axes
  /// Smallest singular value of T's part outside the range of Phi over T's largest: how far the
  /// tilt is from what the identified parameters could explain on their own (0: not at all).
  double separation = 0;
};
/// Fits the tilt; not identified (tilt zero) when separation < min_separation.
/// \throws InputError when the problem has no base_tilt columns.
BaseTiltFit fitBaseTilt(const StackedProblem& problem, double min_separation = 1e-3);

/// A linear least-squares system Phi x = y over the linear vector x of a layout.
struct LinearSystem {
  ParameterLayout layout;
  Eigen::MatrixXd Phi;      ///< rows x linearDimension
  Eigen::VectorXd y;        ///< rows
  Eigen::VectorXi channel;  ///< rows
  std::vector<std::string> channel_names;
  std::vector<std::string> names;  ///< linearNames()
  int rows() const { return static_cast<int>(y.size()); }
};

/// Method 1: Phi = [A, friction columns G_j tanh(r v_j), G_j v_j, armature columns G_j a_j].
LinearSystem torqueSystem(const StackedProblem& problem);

struct EnergyOptions {
  /// Samples per interval [a, b] (b - a); consecutive intervals share an end point.
  int interval = 200;
  /// \throws InputError unless interval >= 1.
  void validate() const;
};

/// Method 2 (bayesian-sysid eqs. 62-63): over each interval,
/// \f[ \int_a^b v^T \hat\tau dt = \Delta K + \Delta P + \int_a^b v^T \tau_f dt
///     + \Delta(\tfrac12 I_a v^2), \f]
/// with K, P from the energy regressors (energy.hpp), integrals by the trapezoid rule on the
/// samples. Fixed base only. One channel.
/// \throws InputError for a free-flyer, or fewer than two intervals.
LinearSystem energySystem(const model::RobotModel& robot, const Samples& samples,
                          const model::IdentifiedSet& set, const ProblemOptions& problem_options,
                          const EnergyOptions& options = {});

/// The linear vector at the set's prior / nominal values: pi_S of the robot, (g3, g5) from the
/// friction blocks' prior_gamma, armature_prior_median.
Eigen::VectorXd nominalLinearVector(const ParameterLayout& layout, const model::IdentifiedSet& set,
                                    const ProblemOptions& options);

}  // namespace heft::identify
