#include "heft/dynamics/actuator.hpp"

#include <cmath>
#include <string>

#include "heft/common/error.hpp"

namespace heft::dynamics {
namespace {

void requireSize(Eigen::Index got, Eigen::Index expected, const char* what) {
  if (got != expected) {
    require(false, what, "size " + std::to_string(expected), "size " + std::to_string(got));
  }
}

void checkInputs(const ActuatorModel& model, const Eigen::Ref<const Eigen::VectorXd>& u,
                 const Eigen::Ref<const Eigen::VectorXd>& rho) {
  requireSize(u.size(), model.numJoints(), "actuator u");
  requireSize(rho.size(), model.numParameters(), "actuator rho");
}

}  // namespace

ActuatorModel::ActuatorModel(int num_joints) : n_(num_joints) {
  if (num_joints < 0) require(false, "actuator joints", ">= 0", std::to_string(num_joints));
}

ActuatorData::ActuatorData(const ActuatorModel& model)
    : tau(Eigen::VectorXd::Zero(model.numJoints())),
      dtau_du(Eigen::VectorXd::Zero(model.numJoints())),
      dtau_drho(Eigen::MatrixXd::Zero(model.numJoints(), 2)) {}

const Eigen::VectorXd& computeActuator(const ActuatorModel& model, ActuatorData& data,
                                       const Eigen::Ref<const Eigen::VectorXd>& u,
                                       const Eigen::Ref<const Eigen::VectorXd>& rho) {
  checkInputs(model, u, rho);
  for (int j = 0; j < model.numJoints(); ++j) {
    const double k = std::exp(rho[2 * j]), kappa = std::exp(rho[2 * j + 1]);
    data.tau[j] = kappa * std::tanh(k * u[j] / kappa);
  }
  return data.tau;
}

void computeActuatorDerivatives(const ActuatorModel& model, ActuatorData& data,
                                const Eigen::Ref<const Eigen::VectorXd>& u,
                                const Eigen::Ref<const Eigen::VectorXd>& rho) {
  checkInputs(model, u, rho);
  for (int j = 0; j < model.numJoints(); ++j) {
    const double k = std::exp(rho[2 * j]), kappa = std::exp(rho[2 * j + 1]);
    const double x = k * u[j] / kappa;
    const double t = std::tanh(x);
    const double c = 1.0 - t * t;  // tanh'(x); underflows to 0 deep in saturation, x c -> 0 too
    data.tau[j] = kappa * t;
    data.dtau_du[j] = k * c;
    data.dtau_drho(j, 0) = k * u[j] * c;
    data.dtau_drho(j, 1) = kappa * (t - x * c);
  }
}

void actuatorParameterJacobian(const ActuatorModel& model, const ActuatorData& data,
                               Eigen::Ref<Eigen::MatrixXd> out) {
  requireSize(out.rows(), model.numJoints(), "actuator Jacobian rows");
  requireSize(out.cols(), model.numParameters(), "actuator Jacobian cols");
  out.setZero();
  for (int j = 0; j < model.numJoints(); ++j) out.block<1, 2>(j, 2 * j) = data.dtau_drho.row(j);
}

}  // namespace heft::dynamics
