#pragma once
/// \file Joint-side parameters estimated with the trajectory (theta_act, the tail of theta): per
/// chosen 1-dof joint a Coulomb and a viscous friction coefficient, a rotor armature, a constant
/// torque-sensor offset. The vocabulary and the friction form are heft identify's
/// (docs/guide/identify.md, `friction_form: coulomb-viscous`):
/// \f[ \tau_{eff} = \tau_{meas} + w_\tau - E\,(b + f_v \odot v + f_c \odot \tanh(r v)), \qquad
///     M \leftarrow M + E_a\,\mathrm{diag}(I_a)\,E_a^T, \f]
/// logged tau = true tau + b (a sensor offset), r the fixed Coulomb rate [s/rad] (identify's
/// `coulomb_rate`, default 100), E the columns of the chosen joints' velocity coordinates.
///
/// Friction and armature are physically >= 0: they are log-parametrized (theta = log f_c, log f_v,
/// log I_a), so every iterate of the solver is admissible, with log-normal priors (median,
/// log std) as identify's `map` method has them; the offsets are linear with a Gaussian prior.
///
/// Layout of theta_act: [log f_c, log f_v per friction joint; log I_a per armature joint;
/// b per offset joint], in the order the joints were given (identify's ParameterLayout order).
#include <string>
#include <vector>

#include <Eigen/Core>
#include <pinocchio/multibody/model.hpp>

namespace heft::estimation {

/// Which terms on which joints, and their priors. Empty lists: no term.
struct ActuatorTermsOptions {
  std::vector<std::string> friction_joints;       ///< Coulomb + viscous friction
  std::vector<std::string> armature_joints;       ///< rotor armature (replaces the model's)
  std::vector<std::string> torque_offset_joints;  ///< constant torque-sensor offsets
  double coulomb_rate = 100;       ///< r of tanh(r v) [s/rad] (identify's problem.coulomb_rate)
  double friction_coulomb = 0.2;   ///< prior median of f_c [N m]
  double friction_viscous = 0.05;  ///< prior median of f_v [N m s/rad]
  double friction_log_std = 1.0;   ///< prior std of log f_c and log f_v
  double armature_median = 0.01;   ///< prior median of I_a [kg m^2]
  double armature_log_std = 2.0;   ///< prior std of log I_a
  double torque_offset_mean = 0;   ///< prior mean of b [N m]
  double torque_offset_std = 1.0;  ///< prior std of b [N m]

  bool empty() const {
    return friction_joints.empty() && armature_joints.empty() && torque_offset_joints.empty();
  }
  /// Size of theta_act: two per friction joint, one per armature and offset joint.
  int numParameters() const {
    return static_cast<int>(2 * friction_joints.size() + armature_joints.size() +
                            torque_offset_joints.size());
  }
  /// Throws InputError naming the field (a non-positive median, std or rate; a repeated joint).
  void validate() const;
};

/// The terms bound to a model's velocity coordinates. Evaluations do not allocate.
class ActuatorTermsModel {
 public:
  /// \throws InputError naming the list and the joint when a joint is not a 1-dof joint of model.
  ActuatorTermsModel(const pinocchio::Model& model, const ActuatorTermsOptions& options);

  const ActuatorTermsOptions& options() const { return options_; }
  int nv() const { return nv_; }  ///< the model's
  int numFriction() const { return static_cast<int>(friction_v_.size()); }
  int numArmature() const { return static_cast<int>(armature_v_.size()); }
  int numTorqueOffsets() const { return static_cast<int>(offset_v_.size()); }
  int numParameters() const { return options_.numParameters(); }
  int armatureStart() const { return 2 * numFriction(); }
  int offsetStart() const { return armatureStart() + numArmature(); }
  /// Velocity index of each friction / armature / offset joint.
  const std::vector<int>& frictionIndex() const { return friction_v_; }
  const std::vector<int>& armatureIndex() const { return armature_v_; }
  const std::vector<int>& offsetIndex() const { return offset_v_; }

  /// Prior mean and 1 / std of theta_act (numParameters each).
  Eigen::VectorXd priorMean() const;
  Eigen::VectorXd priorSqrtInfo() const;
  /// Names of theta_act's coordinates, e.g. "log_coulomb.panda_joint1", "offset.panda_joint2".
  std::vector<std::string> parameterNames() const;

  /// tau -= E (b + f_v v + f_c tanh(r v)) at velocity v (nv); theta_act (numParameters).
  void subtractFrom(const Eigen::Ref<const Eigen::VectorXd>& theta_act,
                    const Eigen::Ref<const Eigen::VectorXd>& v,
                    Eigen::Ref<Eigen::VectorXd> tau) const;
  /// model.armature at the armature joints = exp(theta_act's log I_a); other joints untouched.
  void applyArmature(const Eigen::Ref<const Eigen::VectorXd>& theta_act,
                     pinocchio::Model& model) const;

  /// Derivatives of a(q, v, tau_eff; I_a) w.r.t. theta_act and the friction's share of da/dv, from
  /// K = da/dtau (M^{-1}, or the constrained inverse in contact) and the acceleration a:
  ///   da/d log f_c = -K e_j f_c tanh(r v_j),  da/d log f_v = -K e_j f_v v_j,
  ///   da/d log I_a = -K e_j I_a a_j,          da/db = -K e_j,
  ///   da/dv += -K e_j (f_v + f_c r (1 - tanh^2(r v_j))) e_j^T.
  /// \param da_dtheta_act nv x numParameters (overwritten); \param da_dv nv x nv (added to).
  void accelerationDerivatives(const Eigen::Ref<const Eigen::VectorXd>& theta_act,
                               const Eigen::Ref<const Eigen::VectorXd>& v,
                               const Eigen::Ref<const Eigen::VectorXd>& a, const Eigen::MatrixXd& K,
                               Eigen::Ref<Eigen::MatrixXd> da_dtheta_act,
                               Eigen::Ref<Eigen::MatrixXd> da_dv) const;

  /// The power of the terms against a velocity u, p = u^T E (b + f_v v + f_c tanh(r v)), and its
  /// derivatives at fixed u (the energy observations' dissipation, MultibodySensors::energy):
  ///   dp/d log f_c = u_j f_c tanh(r v_j),  dp/d log f_v = u_j f_v v_j,  dp/db = u_j,
  ///   dp/dv_j = u_j (f_v + f_c r (1 - tanh^2(r v_j))); zero for armature.
  /// \param dp_dtheta_act numParameters, \param dp_dv nv: both overwritten.
  double power(const Eigen::Ref<const Eigen::VectorXd>& theta_act,
               const Eigen::Ref<const Eigen::VectorXd>& v,
               const Eigen::Ref<const Eigen::VectorXd>& u,
               Eigen::Ref<Eigen::VectorXd> dp_dtheta_act, Eigen::Ref<Eigen::VectorXd> dp_dv) const;

 private:
  ActuatorTermsOptions options_;
  int nv_ = 0;
  std::vector<int> friction_v_, armature_v_, offset_v_;
};

}  // namespace heft::estimation
