#include "heft/dynamics/contact_dynamics.hpp"

#include <string>

#include <pinocchio/algorithm/constrained-dynamics-derivatives.hpp>
#include <pinocchio/algorithm/constrained-dynamics.hpp>
#include <pinocchio/algorithm/frames.hpp>
#include <pinocchio/algorithm/kinematics.hpp>

#include "heft/common/error.hpp"

namespace heft::dynamics {

bool ContactOptions::validate(std::string* why) const {
  std::string reason;
  if (!(baumgarte_kp >= 0))
    reason = "baumgarte_kp must be >= 0";
  else if (!(baumgarte_kd >= 0))
    reason = "baumgarte_kd must be >= 0";
  else if (!(mu >= 0))
    reason = "mu must be >= 0";
  else if (max_iter < 1)
    reason = "max_iter must be >= 1";
  else if (!(accuracy >= 0))
    reason = "accuracy must be >= 0";
  if (why) *why = reason;
  return reason.empty();
}

namespace detail {

pinocchio::RigidConstraintModelVector makeConstraintModels(const pinocchio::Model& model,
                                                           const std::vector<ContactSpec>& specs) {
  pinocchio::RigidConstraintModelVector constraints;
  constraints.reserve(specs.size());
  for (const ContactSpec& spec : specs) {
    if (!model.existFrame(spec.frame))
      throw InputError("contact frame: expected a frame of model '" + model.name + "', got '" +
                       spec.frame + "'");
    if (spec.reference_frame != pinocchio::LOCAL &&
        spec.reference_frame != pinocchio::LOCAL_WORLD_ALIGNED)
      throw InputError("contact '" + spec.frame +
                       "' reference frame: expected LOCAL or LOCAL_WORLD_ALIGNED, got WORLD");
    const pinocchio::Frame& frame = model.frames[model.getFrameId(spec.frame)];
    // joint2 = 0: the other side of the constraint is the fixed world.
    pinocchio::RigidConstraintModel constraint(
        spec.type == ContactSpec::Type::Point3D ? pinocchio::CONTACT_3D : pinocchio::CONTACT_6D,
        model, frame.parentJoint, frame.placement, spec.reference_frame);
    constraint.name = spec.frame;
    constraints.push_back(constraint);
  }
  return constraints;
}

}  // namespace detail

ContactDynamicsModel::ContactDynamicsModel(const pinocchio::Model& model,
                                           const std::vector<ContactSpec>& contacts,
                                           const std::vector<pinocchio::JointIndex>& identified,
                                           inertia::Parametrization parametrization,
                                           const ContactOptions& options)
    : regressor_(model, identified),
      support_(regressor_),
      specs_(contacts),
      options_(options),
      parametrization_(parametrization) {
  std::string why;
  if (!options_.validate(&why)) throw InputError("contact options: " + why);
  if (specs_.empty()) throw InputError("contacts: expected at least one, got 0");
  constraints_ = detail::makeConstraintModels(regressor_.model(), specs_);
  for (pinocchio::RigidConstraintModel& c : constraints_) {
    c.baumgarte_corrector_parameters().Kp = options_.baumgarte_kp;
    c.baumgarte_corrector_parameters().Kd = options_.baumgarte_kd;
  }
  for (const ContactSpec& s : specs_) nc_ += s.dimension();
}

ContactDynamicsData::ContactDynamicsData(const ContactDynamicsModel& model)
    : a(Eigen::VectorXd::Zero(model.nv())),
      lambda(Eigen::VectorXd::Zero(model.nc())),
      da_dq(Eigen::MatrixXd::Zero(model.nv(), model.nv())),
      da_dv(Eigen::MatrixXd::Zero(model.nv(), model.nv())),
      da_dtau(Eigen::MatrixXd::Zero(model.nv(), model.nv())),
      dlambda_dq(Eigen::MatrixXd::Zero(model.nc(), model.nv())),
      dlambda_dv(Eigen::MatrixXd::Zero(model.nc(), model.nv())),
      dlambda_dtau(Eigen::MatrixXd::Zero(model.nc(), model.nv())),
      da_dtheta(Eigen::MatrixXd::Zero(model.nv(), model.numParameters())),
      dlambda_dtheta(Eigen::MatrixXd::Zero(model.nc(), model.numParameters())),
      inertias(model.regressor()),
      pin(model.model()),
      constraints(model.constraintModels()),
      settings(model.options().accuracy, model.options().mu, model.options().max_iter),
      regressor(model.regressor()) {
  for (const pinocchio::RigidConstraintModel& c : constraints)
    constraint_datas.push_back(c.createData());
  pinocchio::initConstraintDynamics(model.model(), pin, constraints, constraint_datas);
}

void setContactAnchors(const ContactDynamicsModel& model, ContactDynamicsData& data,
                       const Eigen::Ref<const Eigen::VectorXd>& q) {
  detail::checkSize("contact anchors: q", model.nq(), q.size());
  const pinocchio::Model& m = model.model();
  pinocchio::forwardKinematics(m, data.pin, q);
  for (size_t k = 0; k < data.constraints.size(); ++k) {
    pinocchio::RigidConstraintModel& c = data.constraints[k];
    c.joint2_placement = data.pin.oMi[c.joint1_id] * c.joint1_placement;
  }
}

namespace {

void checkInputs(const ContactDynamicsModel& model, const Eigen::Ref<const Eigen::VectorXd>& q,
                 const Eigen::Ref<const Eigen::VectorXd>& v,
                 const Eigen::Ref<const Eigen::VectorXd>& tau,
                 const Eigen::Ref<const Eigen::VectorXd>& theta_S) {
  detail::checkSize("contact dynamics: q", model.nq(), q.size());
  detail::checkSize("contact dynamics: v", model.nv(), v.size());
  detail::checkSize("contact dynamics: tau", model.nv(), tau.size());
  detail::checkSize("contact dynamics: theta_S", model.numParameters(), theta_S.size());
}

void solve(const ContactDynamicsModel& model, ContactDynamicsData& data,
           const Eigen::Ref<const Eigen::VectorXd>& q, const Eigen::Ref<const Eigen::VectorXd>& v,
           const Eigen::Ref<const Eigen::VectorXd>& tau,
           const Eigen::Ref<const Eigen::VectorXd>& theta_S) {
  checkInputs(model, q, v, tau, theta_S);
  data.inertias.update(model.regressor(), model.parametrization(), theta_S);
  pinocchio::constraintDynamics(data.inertias.model, data.pin, q, v, tau, data.constraints,
                                data.constraint_datas, data.settings);
  data.a = data.pin.ddq;
  data.lambda = data.pin.lambda_c;
}

}  // namespace

const Eigen::VectorXd& contactDynamics(const ContactDynamicsModel& model, ContactDynamicsData& data,
                                       const Eigen::Ref<const Eigen::VectorXd>& q,
                                       const Eigen::Ref<const Eigen::VectorXd>& v,
                                       const Eigen::Ref<const Eigen::VectorXd>& tau,
                                       const Eigen::Ref<const Eigen::VectorXd>& theta_S) {
  solve(model, data, q, v, tau, theta_S);
  return data.a;
}

void computeContactDynamicsDerivatives(const ContactDynamicsModel& model, ContactDynamicsData& data,
                                       const Eigen::Ref<const Eigen::VectorXd>& q,
                                       const Eigen::Ref<const Eigen::VectorXd>& v,
                                       const Eigen::Ref<const Eigen::VectorXd>& tau,
                                       const Eigen::Ref<const Eigen::VectorXd>& theta_S) {
  solve(model, data, q, v, tau, theta_S);
  pinocchio::computeConstraintDynamicsDerivatives(
      data.inertias.model, data.pin, data.constraints, data.constraint_datas, data.settings,
      data.da_dq, data.da_dv, data.da_dtau, data.dlambda_dq, data.dlambda_dv, data.dlambda_dtau);

  // Eq. 18: pi perturbs the first KKT row like a torque -Y_S dpi (file comment).
  computeRestrictedRegressor(model.regressor(), data.regressor, q, v, data.a);
  computeParameterJacobian(model.regressor(), data.regressor, model.parametrization(), theta_S);
  model.support().negativeProduct(data.da_dtau, data.regressor.dtau_dtheta, data.da_dtheta);
  model.support().negativeProduct(data.dlambda_dtau, data.regressor.dtau_dtheta,
                                  data.dlambda_dtheta);
}

}  // namespace heft::dynamics
