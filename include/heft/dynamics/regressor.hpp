#pragma once
/// \file Joint-torque regressor restricted to an identified set of bodies S, with the rest of the
/// robot folded into one RNEA (online EKF paper, eqs. 6-7):
/// \f[ \tau(q, v, a) = Y_S(q, v, a)\, \pi_S + \tau_{nom}(q, v, a), \f]
/// where \f$ \tau_{nom} \f$ is the RNEA of a copy of the model whose bodies in S have zero inertia.
///
/// Conventions (docs/dynamics.md):
///  - a body is a Pinocchio joint (JointIndex >= 1); fixed links are already lumped into their
///    parent joint by the URDF parser;
///  - pi_S = [pi_{S_0}; pi_{S_1}; ...] (10|S|), each pi in Pinocchio's order
///    [m, m c_x, m c_y, m c_z, I_xx, I_xy, I_yy, I_xz, I_yz, I_zz], in the order S was given;
///  - derivatives w.r.t. q are in the tangent space:
///    column i is d/d eps of f(integrate(q, eps e_i));
///  - the model's armature (rotor inertia) belongs to tau_nom.
///
/// Usage: build a RegressorModel once, one RegressorData per thread; the compute* calls do not
/// allocate (computeParameterJacobian: as long as heft::inertia::jacobian does not).
#include <utility>
#include <vector>

#include <Eigen/Core>
#include <pinocchio/multibody.hpp>

#include "heft/inertia/inertia.hpp"

namespace heft::dynamics {

/// The constant part: the full model, the identified bodies S and the rest model (S zeroed).
class RegressorModel {
 public:
  /// \param model the robot; copied.
  /// \param identified bodies S as joint indices in [1, njoints); unique; may be empty.
  /// \throws InputError on an index out of range or a repeated index.
  RegressorModel(const pinocchio::Model& model,
                 const std::vector<pinocchio::JointIndex>& identified);

  const pinocchio::Model& model() const { return full_; }      ///< the full model, as given
  const pinocchio::Model& restModel() const { return rest_; }  ///< S has zero inertia
  /// S-only model: every body outside S has zero inertia, no armature. Its RNEA with the S
  /// inertias set to pi_S equals Y_S pi_S (RegressorData keeps a working copy).
  const pinocchio::Model& identifiedModel() const { return identified_; }
  const std::vector<pinocchio::JointIndex>& bodies() const { return bodies_; }

  int nq() const { return full_.nq; }
  int nv() const { return full_.nv; }
  int numBodies() const { return static_cast<int>(bodies_.size()); }
  int numParameters() const { return 10 * numBodies(); }  ///< 10 |S|
  /// Position k of joint j in S (columns 10k..10k+9 of Y_S), or -1 if j is not identified.
  int indexOf(pinocchio::JointIndex joint) const;
  /// Rows of Y_S where column block k can be nonzero, as (first velocity index, count) runs: the
  /// joints that support body k (the others do not carry its weight).
  const std::vector<std::pair<int, int>>& supportRows(int k) const {
    return support_rows_[static_cast<std::size_t>(k)];
  }

  /// pi_S of the model's own inertias (10|S|): the nominal values of the identified parameters.
  Eigen::VectorXd nominalParameters() const;
  /// Writes pi_S (10|S|) into target.inertias[S]; target must have this model's structure.
  /// Used to build a parametrized model for forward / contact dynamics.
  /// \throws InputError on a wrong size of pi_S or of target.
  void setIdentifiedInertias(const Eigen::Ref<const Eigen::VectorXd>& pi_S,
                             pinocchio::Model& target) const;

 private:
  pinocchio::Model full_;
  pinocchio::Model rest_;
  pinocchio::Model identified_;
  std::vector<pinocchio::JointIndex> bodies_;
  std::vector<std::vector<std::pair<int, int>>> support_rows_;
};

/// Every buffer of the regressor calls. Outputs are public members, valid after the call that
/// fills them (named on each member).
class RegressorData {
 public:
  explicit RegressorData(const RegressorModel& model);

  // ---- computeRestrictedRegressor ----
  Eigen::MatrixXd Y;        ///< nv x 10|S|: Y_S(q, v, a)
  Eigen::VectorXd tau_nom;  ///< nv: RNEA of the rest model

  // ---- computeRestrictedTorque ----
  Eigen::VectorXd tau;  ///< nv: Y_S pi_S + tau_nom (also set by computeRestrictedDerivatives)

  // ---- computeRestrictedDerivatives (at the given pi_S; q in the tangent space) ----
  Eigen::MatrixXd dtau_dq, dtau_dv, dtau_da;  ///< nv x nv: full torque (dtau_da = M(q), symmetric)
  Eigen::MatrixXd dYpi_dq, dYpi_dv, dYpi_da;  ///< nv x nv: d(Y_S pi_S)/d., at fixed pi_S
  Eigen::MatrixXd dtau_nom_dq, dtau_nom_dv, dtau_nom_da;  ///< nv x nv: d tau_nom / d.

  // ---- computeParameterJacobian ----
  Eigen::MatrixXd dpi_dtheta;  ///< 10 x 10|S|: block k is d pi_k / d theta_k
  /// theta_S and parametrization of dpi_dtheta (NaN, -1 before the first call): the knots of one
  /// horizon share theta, so the blocks are computed once.
  Eigen::VectorXd dpi_theta;
  int dpi_parametrization = -1;
  Eigen::MatrixXd dtau_dtheta;  ///< nv x 10|S|: Y_S blockdiag(d pi_k / d theta_k)

  // ---- workspaces ----
  pinocchio::Data full;        ///< regressor of the full model
  pinocchio::Data rest;        ///< RNEA (and derivatives) of the rest model
  pinocchio::Data identified;  ///< RNEA derivatives of the S-only model
  Eigen::Matrix<double, 6, Eigen::Dynamic> joint_jacobian;  ///< 6 x nv: one body's LOCAL Jacobian
  /// Working copy of the S-only model; its S inertias are overwritten with pi_S on each
  /// derivative call (the only way to have Pinocchio differentiate Y_S pi_S without Y_S's own
  /// q-derivative).
  pinocchio::Model identified_model;
};

/// Computes Y_S(q, v, a) (data.Y, nv x 10|S|) and tau_nom (data.tau_nom, nv), such that
/// RNEA(q, v, a) = Y_S pi_S + tau_nom for the model's own pi_S (eqs. 6-7). Gravity is included in
/// both terms. Uses pinocchio::computeJointTorqueRegressor and pinocchio::rnea; when S holds at
/// most a quarter of the robot's bodies, each body's columns come from
/// pinocchio::jointBodyRegressor and its joint Jacobian instead (the same Y_S to rounding).
/// \param q configuration (nq, normalized quaternion), v velocity (nv), a acceleration (nv).
/// \return data.Y
/// \throws InputError on a wrong size.
const Eigen::MatrixXd& computeRestrictedRegressor(const RegressorModel& model, RegressorData& data,
                                                  const Eigen::Ref<const Eigen::VectorXd>& q,
                                                  const Eigen::Ref<const Eigen::VectorXd>& v,
                                                  const Eigen::Ref<const Eigen::VectorXd>& a);

/// tau = Y_S pi_S + tau_nom (data.tau, nv) for any pi_S (10|S|).
/// Assumes computeRestrictedRegressor ran at the state of interest.
/// \throws InputError on a wrong size of pi_S.
const Eigen::VectorXd& computeRestrictedTorque(const RegressorModel& model, RegressorData& data,
                                               const Eigen::Ref<const Eigen::VectorXd>& pi_S);

/// Derivatives of tau = Y_S(q, v, a) pi_S + tau_nom(q, v, a) w.r.t. q (tangent), v and a at the
/// given pi_S, with their decomposition:
/// \f[ \partial\tau/\partial x = \partial(Y_S\pi_S)/\partial x + \partial\tau_{nom}/\partial x,
///     \quad x \in \{q, v, a\}. \f]
/// The Y_S pi_S part is pinocchio::computeRNEADerivatives of the S-only model carrying pi_S (the
/// RNEA is linear in the inertias), the nominal part that of the rest model; no cancellation
/// between a full and a rest RNEA. Also sets data.tau and data.tau_nom at this state.
/// Does not compute data.Y (call computeRestrictedRegressor for it).
/// pi_S needs m > 0 for each body, or m == 0 together with m c == 0 (Pinocchio stores c = h / m).
/// \throws InputError on a wrong size.
void computeRestrictedDerivatives(const RegressorModel& model, RegressorData& data,
                                  const Eigen::Ref<const Eigen::VectorXd>& q,
                                  const Eigen::Ref<const Eigen::VectorXd>& v,
                                  const Eigen::Ref<const Eigen::VectorXd>& a,
                                  const Eigen::Ref<const Eigen::VectorXd>& pi_S);

/// d tau / d theta_S = Y_S blockdiag(d pi_k / d theta_k) (data.dtau_dtheta, nv x 10|S|), with
/// theta_S = [theta_{S_0}; ...] (10|S|) in the given parametrization and d pi / d theta from
/// heft::inertia::jacobian. Also fills data.dpi_dtheta.
/// Assumes computeRestrictedRegressor ran at the state of interest.
/// \return data.dtau_dtheta
/// \throws InputError on a wrong size of theta_S.
const Eigen::MatrixXd& computeParameterJacobian(const RegressorModel& model, RegressorData& data,
                                                inertia::Parametrization parametrization,
                                                const Eigen::Ref<const Eigen::VectorXd>& theta_S);

/// pi_S (10|S|) from theta_S (10|S|), body by body (heft::inertia::piFromTheta).
/// \throws InputError on a wrong size.
Eigen::VectorXd piFromTheta(const RegressorModel& model, inertia::Parametrization parametrization,
                            const Eigen::Ref<const Eigen::VectorXd>& theta_S);

}  // namespace heft::dynamics
