#include "heft/dynamics/forward_dynamics.hpp"

#include <limits>
#include <string>

#include <pinocchio/algorithm/aba-derivatives.hpp>
#include <pinocchio/algorithm/aba.hpp>

#include "heft/common/error.hpp"

namespace heft::dynamics {

namespace detail {

void checkSize(const char* what, Eigen::Index expected, Eigen::Index got) {
  if (expected != got)
    throw InputError(std::string(what) + ": expected size " + std::to_string(expected) + ", got " +
                     std::to_string(got));
}

}  // namespace detail

// ---- SupportPattern -----------------------------------------------------------------------------

SupportPattern::SupportPattern(const RegressorModel& regressor)
    : num_bodies_(regressor.numBodies()) {
  for (int k = 0; k < num_bodies_; ++k)
    for (const auto& [start, size] : regressor.supportRows(k))
      segments_.push_back({k, start, size});
}

void SupportPattern::negativeProduct(const Eigen::MatrixXd& K, const Eigen::MatrixXd& G,
                                     Eigen::MatrixXd& out) const {
  assert(G.cols() == 10 * num_bodies_ && out.cols() == G.cols());
  assert(K.cols() == G.rows() && out.rows() == K.rows());
  out.setZero();
  for (const Segment& s : segments_)
    out.middleCols<10>(10 * s.body).noalias() -=
        K.middleCols(s.start, s.size) * G.block(s.start, 10 * s.body, s.size, 10);
}

// ---- ParametrizedInertias -----------------------------------------------------------------------

ParametrizedInertias::ParametrizedInertias(const RegressorModel& regressor)
    : model(regressor.model()),
      pi(regressor.nominalParameters()),
      theta(Eigen::VectorXd::Constant(regressor.numParameters(),
                                      std::numeric_limits<double>::quiet_NaN())) {}

void ParametrizedInertias::update(const RegressorModel& regressor,
                                  inertia::Parametrization parametrization,
                                  const Eigen::Ref<const Eigen::VectorXd>& theta_S) {
  // NaN in the cache never compares equal: the first call always updates.
  if ((theta.array() == theta_S.array()).all()) return;
  theta = theta_S;
  for (int k = 0; k < regressor.numBodies(); ++k)
    pi.segment<10>(10 * k) =
        inertia::piFromTheta(parametrization, Vector10(theta_S.segment<10>(10 * k)));
  regressor.setIdentifiedInertias(pi, model);
}

// ---- ForwardDynamicsModel -----------------------------------------------------------------------

ForwardDynamicsModel::ForwardDynamicsModel(const pinocchio::Model& model,
                                           const std::vector<pinocchio::JointIndex>& identified,
                                           inertia::Parametrization parametrization)
    : regressor_(model, identified), support_(regressor_), parametrization_(parametrization) {}

Eigen::VectorXd nominalTheta(const RegressorModel& regressor,
                             inertia::Parametrization parametrization) {
  const Eigen::VectorXd pi = regressor.nominalParameters();
  Eigen::VectorXd theta(pi.size());
  for (int k = 0; k < regressor.numBodies(); ++k)
    theta.segment<10>(10 * k) =
        inertia::thetaFromPi(parametrization, Vector10(pi.segment<10>(10 * k)));
  return theta;
}

Eigen::VectorXd ForwardDynamicsModel::nominalTheta() const {
  return dynamics::nominalTheta(regressor_, parametrization_);
}

ForwardDynamicsData::ForwardDynamicsData(const ForwardDynamicsModel& model)
    : a(Eigen::VectorXd::Zero(model.nv())),
      da_dq(Eigen::MatrixXd::Zero(model.nv(), model.nv())),
      da_dv(Eigen::MatrixXd::Zero(model.nv(), model.nv())),
      da_dtau(Eigen::MatrixXd::Zero(model.nv(), model.nv())),
      da_dtheta(Eigen::MatrixXd::Zero(model.nv(), model.numParameters())),
      inertias(model.regressor()),
      pin(model.model()),
      regressor(model.regressor()) {}

namespace {

void checkInputs(const ForwardDynamicsModel& model, const Eigen::Ref<const Eigen::VectorXd>& q,
                 const Eigen::Ref<const Eigen::VectorXd>& v,
                 const Eigen::Ref<const Eigen::VectorXd>& tau,
                 const Eigen::Ref<const Eigen::VectorXd>& theta_S) {
  detail::checkSize("forward dynamics: q", model.nq(), q.size());
  detail::checkSize("forward dynamics: v", model.nv(), v.size());
  detail::checkSize("forward dynamics: tau", model.nv(), tau.size());
  detail::checkSize("forward dynamics: theta_S", model.numParameters(), theta_S.size());
}

}  // namespace

const Eigen::VectorXd& forwardDynamics(const ForwardDynamicsModel& model, ForwardDynamicsData& data,
                                       const Eigen::Ref<const Eigen::VectorXd>& q,
                                       const Eigen::Ref<const Eigen::VectorXd>& v,
                                       const Eigen::Ref<const Eigen::VectorXd>& tau,
                                       const Eigen::Ref<const Eigen::VectorXd>& theta_S) {
  checkInputs(model, q, v, tau, theta_S);
  data.inertias.update(model.regressor(), model.parametrization(), theta_S);
  data.a = pinocchio::aba(data.inertias.model, data.pin, q, v, tau, pinocchio::Convention::WORLD);
  return data.a;
}

void computeForwardDynamicsDerivatives(const ForwardDynamicsModel& model, ForwardDynamicsData& data,
                                       const Eigen::Ref<const Eigen::VectorXd>& q,
                                       const Eigen::Ref<const Eigen::VectorXd>& v,
                                       const Eigen::Ref<const Eigen::VectorXd>& tau,
                                       const Eigen::Ref<const Eigen::VectorXd>& theta_S) {
  checkInputs(model, q, v, tau, theta_S);
  data.inertias.update(model.regressor(), model.parametrization(), theta_S);

  // a, da/dq, da/dv and M^{-1} in one pass of Pinocchio's ABA derivatives.
  pinocchio::computeABADerivatives(data.inertias.model, data.pin, q, v, tau, data.da_dq, data.da_dv,
                                   data.da_dtau);
  data.a = data.pin.ddq;

  // da/dtheta = -M^{-1} Y_S(q, v, a) dpi/dtheta; Y_S does not depend on pi.
  computeRestrictedRegressor(model.regressor(), data.regressor, q, v, data.a);
  computeParameterJacobian(model.regressor(), data.regressor, model.parametrization(), theta_S);
  model.support().negativeProduct(data.da_dtau, data.regressor.dtau_dtheta, data.da_dtheta);
}

}  // namespace heft::dynamics
