#pragma once
/// \file Forward dynamics parametrized by the inertial parameters of an identified set of bodies S,
/// and its derivatives w.r.t. q, v, tau and theta_S.
///
/// The dynamics are \f$ M(q;\pi)\,a + h(q, v;\pi) = \tau \f$ with the RNEA linear in the inertias:
/// \f$ M a + h = Y(q, v, a)\,\pi \f$ (multi-contact paper eq. 6, + the armature, which does not
/// depend on pi). Differentiating at fixed tau: \f$ M\,\partial a + Y_S\,\partial\pi_S = 0 \f$, so
/// \f[ \frac{\partial a}{\partial\theta_S} = -M^{-1}\, Y_S(q, v, a)\,
///     \frac{\partial\pi_S}{\partial\theta_S}. \f]
/// The multi-contact paper's eq. 17 prints this without the minus sign; the minus is right (a
/// heavier body accelerates less under the same torque), and the tests check it against finite
/// differences.
///
/// Conventions (docs/dynamics.md): a body is a Pinocchio joint; theta_S = [theta_{S_0}; ...]
/// (10|S|) in the order S was given, pi_k = inertia::piFromTheta(parametrization, theta_k) in
/// Pinocchio's order; derivatives w.r.t. q in the tangent space (column i: d/d eps of
/// f(integrate(q, eps e_i))).
///
/// Usage: build a ForwardDynamicsModel once; one ForwardDynamicsData per thread; the compute calls
/// do not allocate.
#include <vector>

#include <Eigen/Core>
#include <pinocchio/multibody/data.hpp>
#include <pinocchio/multibody/model.hpp>

#include "heft/dynamics/regressor.hpp"
#include "heft/inertia/inertia.hpp"

namespace heft::dynamics {

/// Rows where column block k of Y_S (or of anything Y_S-shaped, such as dtau/dtheta) can be
/// nonzero: the velocity indices of the joints from the root to S_k. The torque of joint i depends
/// on the inertia of body j only if i supports j, so a product K Y_S only needs these rows; for a
/// quadruped's leg body that is 9 of 18 rows.
class SupportPattern {
 public:
  SupportPattern() = default;
  /// The column blocks of `regressor`'s bodies on the rows that support them
  /// (RegressorModel::supportRows).
  explicit SupportPattern(const RegressorModel& regressor);

  /// out = -K G, with K (r x nv) dense and G (nv x 10|S|) zero outside the support rows.
  /// out must be r x 10|S|; no allocation.
  void negativeProduct(const Eigen::MatrixXd& K, const Eigen::MatrixXd& G,
                       Eigen::MatrixXd& out) const;

 private:
  struct Segment {
    int body;   ///< column block
    int start;  ///< first velocity index
    int size;   ///< number of contiguous velocity indices
  };
  std::vector<Segment> segments_;
  int num_bodies_ = 0;
};

/// Buffers that turn theta_S into the inertias of a working copy of the model. Shared by forward,
/// contact and impulse dynamics; theta_S is cached so that the many knots of one horizon, which
/// share theta, skip the update.
class ParametrizedInertias {
 public:
  explicit ParametrizedInertias(const RegressorModel& regressor);

  /// Writes pi_k = piFromTheta(theta_k) into model.inertias[S_k] unless theta_S equals the
  /// cached value. theta_S size is checked by the caller.
  void update(const RegressorModel& regressor, inertia::Parametrization parametrization,
              const Eigen::Ref<const Eigen::VectorXd>& theta_S);

  pinocchio::Model model;  ///< the robot with S's inertias at pi(theta_S)
  Eigen::VectorXd pi;      ///< 10|S|: pi_S of the last theta_S
  Eigen::VectorXd theta;   ///< 10|S|: last theta_S (NaN before the first update)
};

/// The constant part of parametrized forward dynamics: the robot, S and the parametrization.
class ForwardDynamicsModel {
 public:
  /// \param model the robot (copied); gravity, armature and the inertias outside S are used as
  ///        given.
  /// \param identified S: joint indices in [1, njoints), unique.
  /// \param parametrization how theta_k maps to pi_k.
  /// \throws InputError on an invalid S.
  ForwardDynamicsModel(const pinocchio::Model& model,
                       const std::vector<pinocchio::JointIndex>& identified,
                       inertia::Parametrization parametrization);

  const RegressorModel& regressor() const { return regressor_; }
  const pinocchio::Model& model() const { return regressor_.model(); }
  const SupportPattern& support() const { return support_; }
  inertia::Parametrization parametrization() const { return parametrization_; }
  int nq() const { return regressor_.nq(); }
  int nv() const { return regressor_.nv(); }
  int numParameters() const { return regressor_.numParameters(); }  ///< 10|S|

  /// theta_S (10|S|) of the model's own inertias (dynamics::nominalTheta).
  Eigen::VectorXd nominalTheta() const;

 private:
  RegressorModel regressor_;
  SupportPattern support_;
  inertia::Parametrization parametrization_;
};

/// Every buffer of the forward-dynamics calls. Outputs are public, valid after the call named on
/// each member.
class ForwardDynamicsData {
 public:
  explicit ForwardDynamicsData(const ForwardDynamicsModel& model);

  // ---- forwardDynamics and computeForwardDynamicsDerivatives ----
  Eigen::VectorXd a;  ///< nv: generalized acceleration [m/s^2, rad/s^2], v's frames

  // ---- computeForwardDynamicsDerivatives ----
  Eigen::MatrixXd da_dq;      ///< nv x nv, tangent space
  Eigen::MatrixXd da_dv;      ///< nv x nv
  Eigen::MatrixXd da_dtau;    ///< nv x nv: M^{-1}, symmetric
  Eigen::MatrixXd da_dtheta;  ///< nv x 10|S|: -M^{-1} Y_S dpi/dtheta

  // ---- workspaces ----
  ParametrizedInertias inertias;  ///< model with S at pi(theta)
  pinocchio::Data pin;            ///< Pinocchio data of inertias.model
  RegressorData regressor;        ///< Y_S(q, v, a) and dtau/dtheta = Y_S dpi/dtheta
};

/// a = FD(q, v, tau; theta_S) by Pinocchio's ABA on the model whose S inertias are pi(theta_S).
/// \param q configuration (nq, normalized quaternion for a free flyer), v velocity (nv),
///        tau generalized force (nv) [N, N m], theta_S (10|S|).
/// \return data.a (nv)
/// \throws InputError on a wrong size.
const Eigen::VectorXd& forwardDynamics(const ForwardDynamicsModel& model, ForwardDynamicsData& data,
                                       const Eigen::Ref<const Eigen::VectorXd>& q,
                                       const Eigen::Ref<const Eigen::VectorXd>& v,
                                       const Eigen::Ref<const Eigen::VectorXd>& tau,
                                       const Eigen::Ref<const Eigen::VectorXd>& theta_S);

/// a and its derivatives: da/dq, da/dv, da/dtau = M^{-1} from pinocchio::computeABADerivatives;
/// da/dtheta_S = -M^{-1} Y_S(q, v, a) dpi_S/dtheta_S (file comment; the multi-contact paper's
/// eq. 17 up to its sign). Fills every output of ForwardDynamicsData.
/// \throws InputError on a wrong size.
void computeForwardDynamicsDerivatives(const ForwardDynamicsModel& model, ForwardDynamicsData& data,
                                       const Eigen::Ref<const Eigen::VectorXd>& q,
                                       const Eigen::Ref<const Eigen::VectorXd>& v,
                                       const Eigen::Ref<const Eigen::VectorXd>& tau,
                                       const Eigen::Ref<const Eigen::VectorXd>& theta_S);

/// theta_S (10|S|) of the regressor model's own inertias in `parametrization`: the nominal point.
/// \throws InputError if a nominal inertia is not strictly physically consistent.
Eigen::VectorXd nominalTheta(const RegressorModel& regressor,
                             inertia::Parametrization parametrization);

namespace detail {
/// Throws InputError("<what>: expected <expected>, got <got>") if got != expected; builds the
/// message only on failure, so that hot calls do not allocate.
void checkSize(const char* what, Eigen::Index expected, Eigen::Index got);
}  // namespace detail

}  // namespace heft::dynamics
