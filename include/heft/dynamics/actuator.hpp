#pragma once
/// \file Per-joint actuator model: a gain and a smooth tanh saturation (SPI-Active paper, eq. 3:
/// tau_motor = kappa tanh(tau_PD / kappa)), with an identified gain k in front of the command:
/// \f[ \tau_j = \kappa_j \tanh(k_j u_j / \kappa_j), \qquad
///     k_j = \exp(\rho_{j,0}),\ \kappa_j = \exp(\rho_{j,1}). \f]
/// u is the commanded torque (e.g. tau_PD) [N m], k is dimensionless (gear / torque-constant
/// error; 1 in the paper), kappa is the saturation torque [N m]: |tau| < kappa, d tau / d u = k at
/// u = 0, tau ~ k u for |k u| << kappa. Both are positive physically, hence log-parametrized.
///
/// Layout: rho is 2n, joint-major: [log k_0, log kappa_0, log k_1, log kappa_1, ...].
#include <Eigen/Core>

namespace heft::dynamics {

/// Actuators of n joints.
class ActuatorModel {
 public:
  /// \throws InputError if num_joints < 0.
  explicit ActuatorModel(int num_joints);
  int numJoints() const { return n_; }
  int numParameters() const { return 2 * n_; }

 private:
  int n_;
};

/// Buffers and outputs of the actuator calls.
class ActuatorData {
 public:
  explicit ActuatorData(const ActuatorModel& model);

  Eigen::VectorXd tau;      ///< n: applied torque (computeActuator, computeActuatorDerivatives)
  Eigen::VectorXd dtau_du;  ///< n: d tau_j / d u_j (the Jacobian is diagonal)
  /// n x 2: row j is [d tau_j / d log k_j, d tau_j / d log kappa_j] (compact block diagonal)
  Eigen::MatrixXd dtau_drho;
};

/// tau (data.tau, n) from commands u (n) and log-parameters rho (2n).
/// \throws InputError on a wrong size.
const Eigen::VectorXd& computeActuator(const ActuatorModel& model, ActuatorData& data,
                                       const Eigen::Ref<const Eigen::VectorXd>& u,
                                       const Eigen::Ref<const Eigen::VectorXd>& rho);

/// tau and its derivatives: data.tau, data.dtau_du, data.dtau_drho.
/// With x = k u / kappa and t = tanh(x): d tau/d u = k (1 - t^2),
/// d tau / d log k = k u (1 - t^2), d tau / d log kappa = kappa (t - x (1 - t^2)).
/// \throws InputError on a wrong size.
void computeActuatorDerivatives(const ActuatorModel& model, ActuatorData& data,
                                const Eigen::Ref<const Eigen::VectorXd>& u,
                                const Eigen::Ref<const Eigen::VectorXd>& rho);

/// The dense n x 2n Jacobian d tau / d rho (block diagonal) from data.dtau_drho.
/// Assumes computeActuatorDerivatives ran.
/// \throws InputError if out is not n x 2n.
void actuatorParameterJacobian(const ActuatorModel& model, const ActuatorData& data,
                               Eigen::Ref<Eigen::MatrixXd> out);

}  // namespace heft::dynamics
