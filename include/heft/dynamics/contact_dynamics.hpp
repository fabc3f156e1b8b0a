#pragma once
/// \file Rigid contact dynamics parametrized by the inertial parameters of an identified set S,
/// with derivatives w.r.t. q, v, tau and theta_S (multi-contact paper, eqs. 2-3 and 18).
///
/// The accelerations a and contact forces lambda solve the KKT system
/// \f[ \begin{bmatrix} M & J^T \\ J & 0 \end{bmatrix}
///     \begin{bmatrix} a \\ -\lambda \end{bmatrix} =
///     \begin{bmatrix} \tau - h \\ -\gamma \end{bmatrix}, \f]
/// i.e. \f$ M a + h = \tau + J^T\lambda \f$ and \f$ J a + \gamma = 0 \f$, with gamma the contact
/// points' acceleration drift (J-dot v, plus the optional Baumgarte terms). lambda is Pinocchio's
/// sign: the force the environment applies on the robot, expressed in each contact's frame (LOCAL
/// or LOCAL_WORLD_ALIGNED); a standing robot has a positive vertical lambda.
///
/// theta derivative: J and gamma do not depend on pi, and pi enters the first row as
/// \f$ M(\pi) a + h(\pi) = Y(q, v, a)\pi \f$ (+ armature a). Differentiating at fixed tau:
/// \f$ M\,\partial a + Y_S\,\partial\pi - J^T\partial\lambda = 0,\ J\,\partial a = 0 \f$, the
/// system of eq. 18, whose solution is the tau-derivative applied to \f$ -Y_S\,\partial\pi \f$: \f[
/// \frac{\partial a}{\partial\theta} = -\frac{\partial a}{\partial\tau}\, Y_S
///     \frac{\partial\pi}{\partial\theta},\qquad
///     \frac{\partial\lambda}{\partial\theta} = -\frac{\partial\lambda}{\partial\tau}\, Y_S
///     \frac{\partial\pi}{\partial\theta}. \f]
/// Reusing Pinocchio's da/dtau and dlambda/dtau (the Schur complement through M^{-1} that the
/// paper describes) keeps the theta derivative consistent with the proximal iterations when
/// mu > 0.
///
/// Usage: build a ContactDynamicsModel once; one ContactDynamicsData per thread; the compute calls
/// do not allocate (see ContactOptions for the one exception).
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

#include "heft/dynamics/forward_dynamics.hpp"

namespace heft::dynamics {

/// One rigid contact between a robot frame and the fixed environment.
struct ContactSpec {
  enum class Type {
    Point3D,    ///< 3 constraints: the frame origin does not move (feet of a quadruped)
    Surface6D,  ///< 6 constraints: the frame does not move (soles of a humanoid)
  };
  std::string frame;  ///< a frame name of the Pinocchio model
  Type type = Type::Point3D;
  /// Frame of the constraint rows (J, gamma, lambda): LOCAL (the contact frame) or
  /// LOCAL_WORLD_ALIGNED (origin at the contact frame, world axes). WORLD is rejected.
  pinocchio::ReferenceFrame reference_frame = pinocchio::LOCAL_WORLD_ALIGNED;

  int dimension() const { return type == Type::Point3D ? 3 : 6; }
};

/// Settings of the contact solve. Defaults: an exact rigid solve without drift correction.
struct ContactOptions {
  /// Baumgarte stabilization of the constraint drift: J a + gamma = -Kp e - Kd (J v), with e the
  /// placement error w.r.t. the anchors (setContactAnchors). 0 and 0 (default): pure
  /// acceleration-level constraint. Units: 1/s^2 and 1/s. Nonzero gains on a 6D contact make
  /// Pinocchio's derivative allocate a small index vector.
  double baumgarte_kp = 0;
  double baumgarte_kd = 0;
  /// Proximal regularization of the KKT system (Pinocchio's ProximalSettings). mu = 0 (default):
  /// one exact solve, J must have full row rank. mu > 0 handles redundant contacts by iterating
  /// at most max_iter times until the residual is below accuracy.
  double mu = 0;
  int max_iter = 1;
  double accuracy = 1e-12;

  /// False with a reason if a field is out of range (negative gains or mu, max_iter < 1,
  /// accuracy < 0). `why` may be null.
  bool validate(std::string* why) const;
};

/// The constant part: the robot, its contacts, S and the parametrization.
class ContactDynamicsModel {
 public:
  /// \param model the robot (copied), usually with a free-flyer root.
  /// \param contacts at least one; frames must exist.
  /// \param identified S: joint indices in [1, njoints), unique.
  /// \throws InputError on an unknown frame, a WORLD reference frame, invalid options or S.
  ContactDynamicsModel(const pinocchio::Model& model, const std::vector<ContactSpec>& contacts,
                       const std::vector<pinocchio::JointIndex>& identified,
                       inertia::Parametrization parametrization,
                       const ContactOptions& options = ContactOptions());

  const RegressorModel& regressor() const { return regressor_; }
  const pinocchio::Model& model() const { return regressor_.model(); }
  const SupportPattern& support() const { return support_; }
  const std::vector<ContactSpec>& contacts() const { return specs_; }
  /// Pinocchio's constraint models (anchors at the identity; the data holds its own copy).
  const pinocchio::RigidConstraintModelVector& constraintModels() const { return constraints_; }
  const ContactOptions& options() const { return options_; }
  inertia::Parametrization parametrization() const { return parametrization_; }
  int nq() const { return regressor_.nq(); }
  int nv() const { return regressor_.nv(); }
  int nc() const { return nc_; }  ///< total constraint dimension (sum of 3 and 6)
  int numParameters() const { return regressor_.numParameters(); }
  /// theta_S of the model's own inertias (dynamics::nominalTheta).
  Eigen::VectorXd nominalTheta() const {
    return dynamics::nominalTheta(regressor_, parametrization_);
  }

 private:
  RegressorModel regressor_;
  SupportPattern support_;
  std::vector<ContactSpec> specs_;
  pinocchio::RigidConstraintModelVector constraints_;
  ContactOptions options_;
  inertia::Parametrization parametrization_;
  int nc_ = 0;
};

/// Every buffer of the contact-dynamics calls.
class ContactDynamicsData {
 public:
  explicit ContactDynamicsData(const ContactDynamicsModel& model);

  // ---- contactDynamics and computeContactDynamicsDerivatives ----
  Eigen::VectorXd a;       ///< nv: generalized acceleration
  Eigen::VectorXd lambda;  ///< nc: contact forces [N, N m], stacked in the order of the contacts

  // ---- computeContactDynamicsDerivatives ----
  Eigen::MatrixXd da_dq, da_dv, da_dtau;                 ///< nv x nv (q: tangent space)
  Eigen::MatrixXd dlambda_dq, dlambda_dv, dlambda_dtau;  ///< nc x nv
  Eigen::MatrixXd da_dtheta;                             ///< nv x 10|S|
  Eigen::MatrixXd dlambda_dtheta;                        ///< nc x 10|S|

  // ---- workspaces ----
  ParametrizedInertias inertias;
  pinocchio::Data pin;
  /// This data's constraint models: the model's, with anchors set by setContactAnchors.
  pinocchio::RigidConstraintModelVector constraints;
  pinocchio::RigidConstraintDataVector constraint_datas;
  pinocchio::ProximalSettings settings;  ///< written by Pinocchio (iterations, residuals)
  RegressorData regressor;
};

/// Sets each contact's anchor (the world placement its Baumgarte position error is measured from)
/// to the contact frame's placement at q. Only matters with baumgarte_kp > 0.
/// \throws InputError on a wrong size of q.
void setContactAnchors(const ContactDynamicsModel& model, ContactDynamicsData& data,
                       const Eigen::Ref<const Eigen::VectorXd>& q);

/// a and lambda by pinocchio::constraintDynamics on the model whose S inertias are pi(theta_S).
/// \param q (nq), v (nv), tau (nv), theta_S (10|S|).
/// \return data.a; data.lambda is set too.
/// \throws InputError on a wrong size.
const Eigen::VectorXd& contactDynamics(const ContactDynamicsModel& model, ContactDynamicsData& data,
                                       const Eigen::Ref<const Eigen::VectorXd>& q,
                                       const Eigen::Ref<const Eigen::VectorXd>& v,
                                       const Eigen::Ref<const Eigen::VectorXd>& tau,
                                       const Eigen::Ref<const Eigen::VectorXd>& theta_S);

/// a, lambda and all their derivatives: w.r.t. q, v, tau by
/// pinocchio::computeConstraintDynamicsDerivatives, w.r.t. theta_S by eq. 18 (file comment).
/// \throws InputError on a wrong size.
void computeContactDynamicsDerivatives(const ContactDynamicsModel& model, ContactDynamicsData& data,
                                       const Eigen::Ref<const Eigen::VectorXd>& q,
                                       const Eigen::Ref<const Eigen::VectorXd>& v,
                                       const Eigen::Ref<const Eigen::VectorXd>& tau,
                                       const Eigen::Ref<const Eigen::VectorXd>& theta_S);

namespace detail {
/// Pinocchio constraint models of the specs on `model`. \throws InputError on an unknown frame
/// or a WORLD reference frame.
pinocchio::RigidConstraintModelVector makeConstraintModels(const pinocchio::Model& model,
                                                           const std::vector<ContactSpec>& specs);
}  // namespace detail

}  // namespace heft::dynamics
