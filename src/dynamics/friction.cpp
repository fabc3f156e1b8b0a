#include "heft/dynamics/friction.hpp"

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

void checkInputs(const FrictionModel& model, const Eigen::Ref<const Eigen::VectorXd>& v,
                 const Eigen::Ref<const Eigen::VectorXd>& mu) {
  requireSize(v.size(), model.numJoints(), "friction v");
  requireSize(mu.size(), model.numParameters(), "friction mu");
}

}  // namespace

Vector6 frictionGammaFromMu(const Vector6& mu) { return mu.array().exp(); }

Vector6 frictionMuFromGamma(const Vector6& gamma) {
  for (int i = 0; i < 6; ++i) {
    if (!(gamma[i] > 0.0)) {
      require(false, "friction gamma_" + std::to_string(i), "> 0", std::to_string(gamma[i]));
    }
  }
  return gamma.array().log();
}

FrictionModel::FrictionModel(int num_joints) : n_(num_joints) {
  if (num_joints < 0) require(false, "friction joints", ">= 0", std::to_string(num_joints));
}

FrictionData::FrictionData(const FrictionModel& model)
    : tau(Eigen::VectorXd::Zero(model.numJoints())),
      dtau_dv(Eigen::VectorXd::Zero(model.numJoints())),
      dtau_dmu(Eigen::MatrixXd::Zero(model.numJoints(), 6)),
      amplitude_regressor(Eigen::MatrixXd::Zero(model.numJoints(), 3)) {}

const Eigen::VectorXd& computeFriction(const FrictionModel& model, FrictionData& data,
                                       const Eigen::Ref<const Eigen::VectorXd>& v,
                                       const Eigen::Ref<const Eigen::VectorXd>& mu) {
  checkInputs(model, v, mu);
  for (int j = 0; j < model.numJoints(); ++j) {
    const Vector6 g = frictionGammaFromMu(mu.segment<6>(6 * j));
    const double vj = v[j];
    data.tau[j] = -g[0] * (std::tanh(g[1] * vj) - std::tanh(g[2] * vj)) +
                  g[3] * std::tanh(g[4] * vj) + g[5] * vj;
  }
  return data.tau;
}

void computeFrictionDerivatives(const FrictionModel& model, FrictionData& data,
                                const Eigen::Ref<const Eigen::VectorXd>& v,
                                const Eigen::Ref<const Eigen::VectorXd>& mu) {
  checkInputs(model, v, mu);
  for (int j = 0; j < model.numJoints(); ++j) {
    const Vector6 g = frictionGammaFromMu(mu.segment<6>(6 * j));
    const double vj = v[j];
    const double t1 = std::tanh(g[1] * vj), t2 = std::tanh(g[2] * vj), t4 = std::tanh(g[4] * vj);
    // c_i = d tanh(x) / dx at x = gamma_i v (eq. 59)
    const double c1 = 1.0 - t1 * t1, c2 = 1.0 - t2 * t2, c4 = 1.0 - t4 * t4;

    data.tau[j] = -g[0] * (t1 - t2) + g[3] * t4 + g[5] * vj;
    data.dtau_dv[j] = -g[0] * g[1] * c1 + g[0] * g[2] * c2 + g[3] * g[4] * c4 + g[5];
    // eq. 59 times d gamma_i / d mu_i = gamma_i
    data.dtau_dmu(j, 0) = -g[0] * (t1 - t2);
    data.dtau_dmu(j, 1) = -g[0] * g[1] * vj * c1;
    data.dtau_dmu(j, 2) = g[0] * g[2] * vj * c2;
    data.dtau_dmu(j, 3) = g[3] * t4;
    data.dtau_dmu(j, 4) = g[3] * g[4] * vj * c4;
    data.dtau_dmu(j, 5) = g[5] * vj;
    data.amplitude_regressor(j, 0) = -(t1 - t2);
    data.amplitude_regressor(j, 1) = t4;
    data.amplitude_regressor(j, 2) = vj;
  }
}

void frictionParameterJacobian(const FrictionModel& model, const FrictionData& data,
                               Eigen::Ref<Eigen::MatrixXd> out) {
  requireSize(out.rows(), model.numJoints(), "friction Jacobian rows");
  requireSize(out.cols(), model.numParameters(), "friction Jacobian cols");
  out.setZero();
  for (int j = 0; j < model.numJoints(); ++j) out.block<1, 6>(j, 6 * j) = data.dtau_dmu.row(j);
}

}  // namespace heft::dynamics
