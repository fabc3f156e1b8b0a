#include "heft/estimation/actuator_terms.hpp"

#include <algorithm>
#include <cmath>
#include <set>

#include "heft/common/error.hpp"

namespace heft::estimation {
namespace {

// Velocity index of each named 1-dof joint; `field` names the list in errors.
std::vector<int> velocityIndices(const pinocchio::Model& model,
                                 const std::vector<std::string>& names, const std::string& field) {
  std::vector<int> out;
  for (const std::string& name : names) {
    const bool known = model.existJointName(name);
    const pinocchio::JointIndex j = known ? model.getJointId(name) : 0;
    if (!known || model.joints[j].nv() != 1) {
      std::string valid;
      for (pinocchio::JointIndex i = 1; i < model.joints.size(); ++i)
        if (model.joints[i].nv() == 1) valid += (valid.empty() ? "" : ", ") + model.names[i];
      throw InputError(field + ": joint \"" + name + "\" is not a one-dof joint of the model (" +
                       valid + ")");
    }
    out.push_back(model.joints[j].idx_v());
  }
  return out;
}

void requireUnique(const std::vector<std::string>& names, const std::string& field) {
  std::set<std::string> seen;
  for (const std::string& n : names)
    require(seen.insert(n).second, field, "each joint once", "\"" + n + "\" twice");
}

}  // namespace

void ActuatorTermsOptions::validate() const {
  requireUnique(friction_joints, "friction");
  requireUnique(armature_joints, "armature");
  requireUnique(torque_offset_joints, "torque_offsets");
  requirePositive(coulomb_rate, "coulomb_rate", " [s/rad]");
  requirePositive(friction_coulomb, "friction_coulomb", " [N m]");
  requirePositive(friction_viscous, "friction_viscous", " [N m s/rad]");
  requirePositive(friction_log_std, "friction_log_std");
  requirePositive(armature_median, "armature_median", " [kg m^2]");
  requirePositive(armature_log_std, "armature_log_std");
  require(std::isfinite(torque_offset_mean), "torque_offset_mean", "a finite value [N m]",
          std::to_string(torque_offset_mean));
  requirePositive(torque_offset_std, "torque_offset_std", " [N m]");
}

ActuatorTermsModel::ActuatorTermsModel(const pinocchio::Model& model,
                                       const ActuatorTermsOptions& options)
    : options_(options), nv_(model.nv) {
  options_.validate();
  friction_v_ = velocityIndices(model, options_.friction_joints, "friction");
  armature_v_ = velocityIndices(model, options_.armature_joints, "armature");
  offset_v_ = velocityIndices(model, options_.torque_offset_joints, "torque_offsets");
}

Eigen::VectorXd ActuatorTermsModel::priorMean() const {
  Eigen::VectorXd m(numParameters());
  for (int f = 0; f < numFriction(); ++f) {
    m(2 * f) = std::log(options_.friction_coulomb);
    m(2 * f + 1) = std::log(options_.friction_viscous);
  }
  m.segment(armatureStart(), numArmature()).setConstant(std::log(options_.armature_median));
  m.segment(offsetStart(), numTorqueOffsets()).setConstant(options_.torque_offset_mean);
  return m;
}

Eigen::VectorXd ActuatorTermsModel::priorSqrtInfo() const {
  Eigen::VectorXd s(numParameters());
  s.head(2 * numFriction()).setConstant(1 / options_.friction_log_std);
  s.segment(armatureStart(), numArmature()).setConstant(1 / options_.armature_log_std);
  s.segment(offsetStart(), numTorqueOffsets()).setConstant(1 / options_.torque_offset_std);
  return s;
}

std::vector<std::string> ActuatorTermsModel::parameterNames() const {
  std::vector<std::string> names;
  for (const std::string& j : options_.friction_joints) {
    names.push_back("log_coulomb." + j);
    names.push_back("log_viscous." + j);
  }
  for (const std::string& j : options_.armature_joints) names.push_back("log_armature." + j);
  for (const std::string& j : options_.torque_offset_joints) names.push_back("offset." + j);
  return names;
}

void ActuatorTermsModel::subtractFrom(const Eigen::Ref<const Eigen::VectorXd>& theta_act,
                                      const Eigen::Ref<const Eigen::VectorXd>& v,
                                      Eigen::Ref<Eigen::VectorXd> tau) const {
  const double r = options_.coulomb_rate;
  for (int f = 0; f < numFriction(); ++f) {
    const int i = friction_v_[f];
    tau(i) -=
        std::exp(theta_act(2 * f)) * std::tanh(r * v(i)) + std::exp(theta_act(2 * f + 1)) * v(i);
  }
  for (int o = 0; o < numTorqueOffsets(); ++o) tau(offset_v_[o]) -= theta_act(offsetStart() + o);
}

void ActuatorTermsModel::applyArmature(const Eigen::Ref<const Eigen::VectorXd>& theta_act,
                                       pinocchio::Model& model) const {
  for (int k = 0; k < numArmature(); ++k)
    model.armature(armature_v_[k]) = std::exp(theta_act(armatureStart() + k));
}

void ActuatorTermsModel::accelerationDerivatives(const Eigen::Ref<const Eigen::VectorXd>& theta_act,
                                                 const Eigen::Ref<const Eigen::VectorXd>& v,
                                                 const Eigen::Ref<const Eigen::VectorXd>& a,
                                                 const Eigen::MatrixXd& K,
                                                 Eigen::Ref<Eigen::MatrixXd> da_dtheta_act,
                                                 Eigen::Ref<Eigen::MatrixXd> da_dv) const {
  const double r = options_.coulomb_rate;
  for (int f = 0; f < numFriction(); ++f) {
    const int i = friction_v_[f];
    const double fc = std::exp(theta_act(2 * f)), fv = std::exp(theta_act(2 * f + 1));
    const double s = std::tanh(r * v(i));
    da_dtheta_act.col(2 * f) = -fc * s * K.col(i);
    da_dtheta_act.col(2 * f + 1) = -fv * v(i) * K.col(i);
    da_dv.col(i) -= (fv + fc * r * (1 - s * s)) * K.col(i);
  }
  for (int k = 0; k < numArmature(); ++k) {
    const int i = armature_v_[k];
    da_dtheta_act.col(armatureStart() + k) =
        -std::exp(theta_act(armatureStart() + k)) * a(i) * K.col(i);
  }
  for (int o = 0; o < numTorqueOffsets(); ++o)
    da_dtheta_act.col(offsetStart() + o) = -K.col(offset_v_[o]);
}

double ActuatorTermsModel::power(const Eigen::Ref<const Eigen::VectorXd>& theta_act,
                                 const Eigen::Ref<const Eigen::VectorXd>& v,
                                 const Eigen::Ref<const Eigen::VectorXd>& u,
                                 Eigen::Ref<Eigen::VectorXd> dp_dtheta_act,
                                 Eigen::Ref<Eigen::VectorXd> dp_dv) const {
  const double r = options_.coulomb_rate;
  double p = 0;
  dp_dtheta_act.setZero();
  dp_dv.setZero();
  for (int f = 0; f < numFriction(); ++f) {
    const int i = friction_v_[f];
    const double fc = std::exp(theta_act(2 * f)), fv = std::exp(theta_act(2 * f + 1));
    const double s = std::tanh(r * v(i));
    p += u(i) * (fc * s + fv * v(i));
    dp_dtheta_act(2 * f) = u(i) * fc * s;
    dp_dtheta_act(2 * f + 1) = u(i) * fv * v(i);
    dp_dv(i) += u(i) * (fv + fc * r * (1 - s * s));
  }
  for (int o = 0; o < numTorqueOffsets(); ++o) {
    const int i = offset_v_[o];
    p += u(i) * theta_act(offsetStart() + o);
    dp_dtheta_act(offsetStart() + o) = u(i);
  }
  return p;
}

}  // namespace heft::estimation
