#pragma once
/// \file Impulse dynamics at a touchdown (the reset map of the hybrid dynamics), parametrized by
/// the inertial parameters of an identified set S, with derivatives w.r.t. q, v^- and theta_S
/// (multi-contact paper, sec. IV-A, eq. 19).
///
/// The post-impact velocity v^+ and the contact impulses Lambda solve
/// \f[ \begin{bmatrix} M & J^T \\ J & 0 \end{bmatrix}
///     \begin{bmatrix} v^+ - v^- \\ -\Lambda \end{bmatrix} =
///     \begin{bmatrix} 0 \\ -(1 + e) J v^- \end{bmatrix}, \f]
/// i.e. \f$ M (v^+ - v^-) = J^T\Lambda \f$ and \f$ J v^+ = -e J v^- \f$ (restitution e; 0: the
/// contacts stop). Lambda has Pinocchio's sign: the impulse the environment applies on the robot
/// [N s, N m s], in each contact's frame.
///
/// theta derivative: only M depends on pi, and \f$ M(q;\pi)\,\Delta v = Y^0(q, 0, \Delta v)\,\pi
/// \f$ with \f$ Y^0 \f$ the torque regressor of the model without gravity (eq. 19 writes it as \f$
/// Y(q, 0, \Delta v) - Y(q, 0, 0) \f$). Differentiating at fixed q, v^-: \f[ \begin{bmatrix} M &
/// J^T \\ J & 0 \end{bmatrix}
///     \begin{bmatrix} \partial v^+ \\ -\partial\Lambda \end{bmatrix} =
///     \begin{bmatrix} -Y^0_S \,\partial\pi_S \\ 0 \end{bmatrix}, \f]
/// solved with the KKT factorization Pinocchio computed for the impulse itself.
///
/// Armature (the working model's `armature`, which Pinocchio adds to M's diagonal): M gains
/// \f$ I_{a,i} e_i e_i^T \f$, so the same system with right-hand side \f$ -e_i \Delta v_i \f$ gives
/// \f$ \partial v^+ / \partial I_{a,i} \f$ (dvplus_darmature, one column per velocity coordinate).
///
/// Usage: build an ImpulseDynamicsModel once; one ImpulseDynamicsData per thread; the compute
/// calls do not allocate.
#ifndef PINOCCHIO_DISABLE_UNSUPPORTED_WARNINGS
#define PINOCCHIO_DISABLE_UNSUPPORTED_WARNINGS  // the rigid-constraint API is marked "will change"
#endif
#include <string>
#include <vector>

#include <Eigen/Core>
#include <pinocchio/algorithm/fwd.hpp>
#include <pinocchio/algorithm/proximal.hpp>
#include <pinocchio/constraints.hpp>
#include <pinocchio/multibody/data.hpp>
#include <pinocchio/multibody/model.hpp>

#include "heft/dynamics/contact_dynamics.hpp"
#include "heft/dynamics/forward_dynamics.hpp"

namespace heft::dynamics {

/// Settings of the impulse solve.
struct ImpulseOptions {
  double restitution = 0;  ///< e in [0, 1]; 0: rigid touchdown
  /// Regularization of the KKT system (one solve, no iteration): 0 needs J of full row rank;
  /// around 1e-12 handles redundant contacts.
  double mu = 0;

  /// False with a reason if a field is out of range. `why` may be null.
  bool validate(std::string* why) const;
};

/// The constant part: the robot, the contacts that close at the impact, S and the parametrization.
class ImpulseDynamicsModel {
 public:
  /// \param model the robot (copied). A copy without gravity gives the regressor Y^0 of M dv.
  /// \param contacts at least one; frames must exist; not WORLD.
  /// \param identified S: joint indices in [1, njoints), unique.
  /// \throws InputError on an unknown frame, invalid options or S.
  ImpulseDynamicsModel(const pinocchio::Model& model, const std::vector<ContactSpec>& contacts,
                       const std::vector<pinocchio::JointIndex>& identified,
                       inertia::Parametrization parametrization,
                       const ImpulseOptions& options = ImpulseOptions());

  const RegressorModel& regressor() const { return regressor_; }
  /// The same robot and S without gravity: its regressor at (q, 0, dv) is the one of M(q) dv.
  const RegressorModel& massRegressor() const { return mass_regressor_; }
  const pinocchio::Model& model() const { return regressor_.model(); }
  const std::vector<ContactSpec>& contacts() const { return specs_; }
  const pinocchio::RigidConstraintModelVector& constraintModels() const { return constraints_; }
  const ImpulseOptions& options() const { return options_; }
  inertia::Parametrization parametrization() const { return parametrization_; }
  int nq() const { return regressor_.nq(); }
  int nv() const { return regressor_.nv(); }
  int nc() const { return nc_; }
  int numParameters() const { return regressor_.numParameters(); }
  /// theta_S of the model's own inertias (dynamics::nominalTheta).
  Eigen::VectorXd nominalTheta() const {
    return dynamics::nominalTheta(regressor_, parametrization_);
  }

 private:
  RegressorModel regressor_;
  RegressorModel mass_regressor_;
  std::vector<ContactSpec> specs_;
  pinocchio::RigidConstraintModelVector constraints_;
  ImpulseOptions options_;
  inertia::Parametrization parametrization_;
  int nc_ = 0;
};

/// Every buffer of the impulse-dynamics calls.
class ImpulseDynamicsData {
 public:
  explicit ImpulseDynamicsData(const ImpulseDynamicsModel& model);

  // ---- impulseDynamics and computeImpulseDynamicsDerivatives ----
  Eigen::VectorXd v_plus;   ///< nv: post-impact velocity
  Eigen::VectorXd impulse;  ///< nc: contact impulses, in the order of the contacts

  // ---- computeImpulseDynamicsDerivatives ----
  Eigen::MatrixXd dvplus_dq;         ///< nv x nv (tangent space)
  Eigen::MatrixXd dvplus_dvminus;    ///< nv x nv: identity + d(v^+ - v^-)/dv^-
  Eigen::MatrixXd dvplus_dtheta;     ///< nv x 10|S|
  Eigen::MatrixXd dimpulse_dq;       ///< nc x nv
  Eigen::MatrixXd dimpulse_dvminus;  ///< nc x nv
  Eigen::MatrixXd dimpulse_dtheta;   ///< nc x 10|S|
  /// nv x nv: column i is d v^+ / d armature_i = -K e_i (v^+_i - v^-_i), K the impulse's
  /// constrained inverse (file comment)
  Eigen::MatrixXd dvplus_darmature;
  Eigen::MatrixXd dimpulse_darmature;  ///< nc x nv: the same for the impulses

  // ---- workspaces ----
  ParametrizedInertias inertias;
  pinocchio::Data pin;
  pinocchio::RigidConstraintDataVector constraint_datas;
  pinocchio::ProximalSettings settings;
  RegressorData mass_regressor;      ///< Y^0_S(q, 0, dv) and Y^0_S dpi/dtheta
  Eigen::VectorXd zero_velocity;     ///< nv zeros
  Eigen::VectorXd dv;                ///< nv: v^+ - v^-
  Eigen::MatrixXd kkt_rhs;           ///< (nc + nv) x 10|S|: right-hand sides, then solutions
  Eigen::MatrixXd kkt_rhs_armature;  ///< (nc + nv) x nv: the same for the armature
};

/// v^+ by pinocchio::impulseDynamics on the model whose S inertias are pi(theta_S).
/// \param q (nq), v_minus pre-impact velocity (nv), theta_S (10|S|).
/// \return data.v_plus; data.impulse is set too.
/// \throws InputError on a wrong size.
const Eigen::VectorXd& impulseDynamics(const ImpulseDynamicsModel& model, ImpulseDynamicsData& data,
                                       const Eigen::Ref<const Eigen::VectorXd>& q,
                                       const Eigen::Ref<const Eigen::VectorXd>& v_minus,
                                       const Eigen::Ref<const Eigen::VectorXd>& theta_S);

/// v^+, the impulses and their derivatives: w.r.t. q and v^- by
/// pinocchio::computeImpulseDynamicsDerivatives, w.r.t. theta_S and the armature (of the working
/// model data.inertias.model, which a caller may set) by the file comment's systems.
/// \throws InputError on a wrong size.
void computeImpulseDynamicsDerivatives(const ImpulseDynamicsModel& model, ImpulseDynamicsData& data,
                                       const Eigen::Ref<const Eigen::VectorXd>& q,
                                       const Eigen::Ref<const Eigen::VectorXd>& v_minus,
                                       const Eigen::Ref<const Eigen::VectorXd>& theta_S);

}  // namespace heft::dynamics
