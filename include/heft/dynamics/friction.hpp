#pragma once
/// \file Smooth joint friction (bayesian-sysid paper, eq. 56), vectorized over n joints:
/// \f[ \tau_f(v, \gamma) = -\gamma_0 (\tanh(\gamma_1 v) - \tanh(\gamma_2 v))
///                        + \gamma_3 \tanh(\gamma_4 v) + \gamma_5 v, \f]
/// the torque friction takes from the actuator (tau = tau_cmd - tau_f, eq. 55); units N m (N for a
/// prismatic joint), v in rad/s.
///
/// Identified parameters are mu = log gamma for all six (eq. 58 maps five; we also map gamma_2:
/// it is a tanh rate, and a negative gamma_2 would turn the first term into a negative Coulomb
/// term, -2 gamma_0 sign(v) at large |v|). So every real mu is admissible and tau_f is odd in v.
/// The order gamma_1 vs gamma_2 is not enforced here (eq. 57 leaves it to the optimizer):
/// with gamma_2 > gamma_1 the first term is a stiction bump (v tau_f >= 0 for every v); with
/// gamma_1 > gamma_2 it is a dip below the Coulomb level (see docs/dynamics.md).
/// For |v| -> infinity: tau_f -> gamma_3 sign(v) + gamma_5 v (Coulomb + viscous).
///
/// Layout: mu is 6n, joint-major: [mu_0..mu_5 of joint 0, mu_0..mu_5 of joint 1, ...].
#include <Eigen/Core>

namespace heft::dynamics {

using Vector6 = Eigen::Matrix<double, 6, 1>;

/// gamma = exp(mu) for one joint.
Vector6 frictionGammaFromMu(const Vector6& mu);
/// mu = log(gamma) for one joint; throws InputError if a gamma is not > 0.
Vector6 frictionMuFromGamma(const Vector6& gamma);

/// Friction of n joints (one parameter set each).
class FrictionModel {
 public:
  /// \throws InputError if num_joints < 0.
  explicit FrictionModel(int num_joints);
  int numJoints() const { return n_; }
  int numParameters() const { return 6 * n_; }

 private:
  int n_;
};

/// Buffers and outputs of the friction calls.
class FrictionData {
 public:
  explicit FrictionData(const FrictionModel& model);

  Eigen::VectorXd tau;      ///< n: tau_f (computeFriction, computeFrictionDerivatives)
  Eigen::VectorXd dtau_dv;  ///< n: d tau_f,j / d v_j (the Jacobian is diagonal)
  /// n x 6: row j is d tau_f,j / d mu_j (compact form of the block-diagonal n x 6n Jacobian)
  Eigen::MatrixXd dtau_dmu;
  /// n x 3: row j is [-(tanh(g1 v) - tanh(g2 v)), tanh(g4 v), v], so that
  /// tau_f,j = row_j . [g0, g3, g5]_j: friction is linear in the amplitudes once the rates are
  /// fixed (the classical friction regressor)
  Eigen::MatrixXd amplitude_regressor;
};

/// tau_f (data.tau, n) at joint velocities v (n) and log-parameters mu (6n).
/// \throws InputError on a wrong size.
const Eigen::VectorXd& computeFriction(const FrictionModel& model, FrictionData& data,
                                       const Eigen::Ref<const Eigen::VectorXd>& v,
                                       const Eigen::Ref<const Eigen::VectorXd>& mu);

/// tau_f and its derivatives (eq. 59 chained with d gamma / d mu = gamma): data.tau,
/// data.dtau_dv, data.dtau_dmu and data.amplitude_regressor.
/// \throws InputError on a wrong size.
void computeFrictionDerivatives(const FrictionModel& model, FrictionData& data,
                                const Eigen::Ref<const Eigen::VectorXd>& v,
                                const Eigen::Ref<const Eigen::VectorXd>& mu);

/// The dense n x 6n Jacobian d tau_f / d mu (block diagonal) from data.dtau_dmu, for stacking
/// into an identification problem. Assumes computeFrictionDerivatives ran.
/// \throws InputError if out is not n x 6n.
void frictionParameterJacobian(const FrictionModel& model, const FrictionData& data,
                               Eigen::Ref<Eigen::MatrixXd> out);

}  // namespace heft::dynamics
