#include "heft/dynamics/impulse_dynamics.hpp"

#include <string>

#include <pinocchio/algorithm/constrained-dynamics.hpp>
// Pinocchio's impulse derivatives read a fixed-size temporary GCC cannot prove initialized.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <pinocchio/algorithm/impulse-dynamics-derivatives.hpp>
#pragma GCC diagnostic pop
#include <pinocchio/algorithm/impulse-dynamics.hpp>

#include "heft/common/error.hpp"

namespace heft::dynamics {

bool ImpulseOptions::validate(std::string* why) const {
  std::string reason;
  if (!(restitution >= 0 && restitution <= 1))
    reason = "restitution must be in [0, 1]";
  else if (!(mu >= 0))
    reason = "mu must be >= 0";
  if (why) *why = reason;
  return reason.empty();
}

namespace {

pinocchio::Model withoutGravity(const pinocchio::Model& model) {
  pinocchio::Model copy = model;
  copy.gravity.setZero();
  return copy;
}

}  // namespace

ImpulseDynamicsModel::ImpulseDynamicsModel(const pinocchio::Model& model,
                                           const std::vector<ContactSpec>& contacts,
                                           const std::vector<pinocchio::JointIndex>& identified,
                                           inertia::Parametrization parametrization,
                                           const ImpulseOptions& options)
    : regressor_(model, identified),
      mass_regressor_(withoutGravity(model), identified),
      specs_(contacts),
      options_(options),
      parametrization_(parametrization) {
  std::string why;
  if (!options_.validate(&why)) throw InputError("impulse options: " + why);
  if (specs_.empty()) throw InputError("contacts: expected at least one, got 0");
  constraints_ = detail::makeConstraintModels(regressor_.model(), specs_);
  for (const ContactSpec& s : specs_) nc_ += s.dimension();
}

ImpulseDynamicsData::ImpulseDynamicsData(const ImpulseDynamicsModel& model)
    : v_plus(Eigen::VectorXd::Zero(model.nv())),
      impulse(Eigen::VectorXd::Zero(model.nc())),
      dvplus_dq(Eigen::MatrixXd::Zero(model.nv(), model.nv())),
      dvplus_dvminus(Eigen::MatrixXd::Zero(model.nv(), model.nv())),
      dvplus_dtheta(Eigen::MatrixXd::Zero(model.nv(), model.numParameters())),
      dimpulse_dq(Eigen::MatrixXd::Zero(model.nc(), model.nv())),
      dimpulse_dvminus(Eigen::MatrixXd::Zero(model.nc(), model.nv())),
      dimpulse_dtheta(Eigen::MatrixXd::Zero(model.nc(), model.numParameters())),
      dvplus_darmature(Eigen::MatrixXd::Zero(model.nv(), model.nv())),
      dimpulse_darmature(Eigen::MatrixXd::Zero(model.nc(), model.nv())),
      inertias(model.regressor()),
      pin(model.model()),
      settings(1e-12, model.options().mu, 1),
      mass_regressor(model.massRegressor()),
      zero_velocity(Eigen::VectorXd::Zero(model.nv())),
      dv(Eigen::VectorXd::Zero(model.nv())),
      kkt_rhs(Eigen::MatrixXd::Zero(model.nc() + model.nv(), model.numParameters())),
      kkt_rhs_armature(Eigen::MatrixXd::Zero(model.nc() + model.nv(), model.nv())) {
  for (const pinocchio::RigidConstraintModel& c : model.constraintModels())
    constraint_datas.push_back(c.createData());
  pinocchio::initConstraintDynamics(model.model(), pin, model.constraintModels(), constraint_datas);
}

namespace {

void solve(const ImpulseDynamicsModel& model, ImpulseDynamicsData& data,
           const Eigen::Ref<const Eigen::VectorXd>& q,
           const Eigen::Ref<const Eigen::VectorXd>& v_minus,
           const Eigen::Ref<const Eigen::VectorXd>& theta_S) {
  detail::checkSize("impulse dynamics: q", model.nq(), q.size());
  detail::checkSize("impulse dynamics: v_minus", model.nv(), v_minus.size());
  detail::checkSize("impulse dynamics: theta_S", model.numParameters(), theta_S.size());
  data.inertias.update(model.regressor(), model.parametrization(), theta_S);
  pinocchio::impulseDynamics(data.inertias.model, data.pin, q, v_minus, model.constraintModels(),
                             data.constraint_datas, model.options().restitution, data.settings);
  data.v_plus = data.pin.dq_after;
  data.impulse = data.pin.impulse_c;
}

}  // namespace

const Eigen::VectorXd& impulseDynamics(const ImpulseDynamicsModel& model, ImpulseDynamicsData& data,
                                       const Eigen::Ref<const Eigen::VectorXd>& q,
                                       const Eigen::Ref<const Eigen::VectorXd>& v_minus,
                                       const Eigen::Ref<const Eigen::VectorXd>& theta_S) {
  solve(model, data, q, v_minus, theta_S);
  return data.v_plus;
}

void computeImpulseDynamicsDerivatives(const ImpulseDynamicsModel& model, ImpulseDynamicsData& data,
                                       const Eigen::Ref<const Eigen::VectorXd>& q,
                                       const Eigen::Ref<const Eigen::VectorXd>& v_minus,
                                       const Eigen::Ref<const Eigen::VectorXd>& theta_S) {
  solve(model, data, q, v_minus, theta_S);
  // Pinocchio 4.1 fills only the support-path columns of dvc_dq (and dac_da) per contact, then
  // subtracts J M^{-1} dtau/dq from every column: on a reused data the other columns start from
  // the previous call's result, and dv+/dq came out 4 % wrong (tests/contact_dynamics_test.cpp,
  // the warm-up call). Start from zero.
  data.pin.dvc_dq.setZero();
  data.pin.dac_da.setZero();
  // Pinocchio's velocity output is d(v^+ - v^-)/dv^-: add the identity for dv^+/dv^-.
  pinocchio::computeImpulseDynamicsDerivatives(
      data.inertias.model, data.pin, model.constraintModels(), data.constraint_datas,
      model.options().restitution, data.settings, data.dvplus_dq, data.dvplus_dvminus,
      data.dimpulse_dq, data.dimpulse_dvminus);
  data.dvplus_dvminus.diagonal().array() += 1.0;

  // theta: M(pi) dv = Y^0_S(q, 0, dv) pi_S + (rest), solved with the impulse's KKT factorization
  // (stacked as [constraints; joints] in Pinocchio's order, whose constraint unknowns are -Lambda).
  data.dv = data.v_plus - v_minus;
  computeRestrictedRegressor(model.massRegressor(), data.mass_regressor, q, data.zero_velocity,
                             data.dv);
  computeParameterJacobian(model.massRegressor(), data.mass_regressor, model.parametrization(),
                           theta_S);
  const int nc = model.nc();
  data.kkt_rhs.topRows(nc).setZero();
  data.kkt_rhs.bottomRows(model.nv()) = -data.mass_regressor.dtau_dtheta;
  data.pin.constraint_chol.solveInPlace(data.kkt_rhs);
  data.dvplus_dtheta = data.kkt_rhs.bottomRows(model.nv());
  data.dimpulse_dtheta = -data.kkt_rhs.topRows(nc);
  // armature: d(M dv)/d armature_i = e_i dv_i, the same system column by column
  data.kkt_rhs_armature.setZero();
  data.kkt_rhs_armature.bottomRows(model.nv()).diagonal() = -data.dv;
  data.pin.constraint_chol.solveInPlace(data.kkt_rhs_armature);
  data.dvplus_darmature = data.kkt_rhs_armature.bottomRows(model.nv());
  data.dimpulse_darmature = -data.kkt_rhs_armature.topRows(nc);
}

}  // namespace heft::dynamics
