#pragma once
/// \file The parameter constraints of a trajectory MAP (bayesian-sysid paper eqs. 1e-1f), applied
/// at the arrival node as the QP of eq. 81. They are linear in the identified bodies' pi_S
/// (model::LinearConstraint: total mass, left-right symmetry, mass bounds) and theta's head is
/// the bodies' physically consistent coordinates, so in theta they are nonlinear:
///   h(theta) = E_eq pi(theta_S) - e_eq = 0,   g(theta) = E_in pi(theta_S) - e_in >= 0,
/// with Jacobians E d pi / d theta_S (inertia::jacobian), zero on theta's actuator tail. The
/// solver linearizes them at each iterate (eq. 81's h_p, hbar_p, g_p, gbar_p) and adds their
/// violation to the merit's infeasibility (docs/estimation.md, "Parameter constraints").
#include <vector>

#include <Eigen/Core>

#include "heft/inertia/inertia.hpp"
#include "heft/model/parameter_constraints.hpp"

namespace heft::estimation {

class ParameterConstraints {
 public:
  /// theta has np >= 10 nb entries; its first 10 nb are the bodies' (constraint width 10 nb).
  /// \throws InputError on widths that do not match, or a contradictory set
  /// (model::requireConsistent at `nominal_pi`).
  ParameterConstraints(inertia::Parametrization parametrization, int np,
                       const std::vector<model::LinearConstraint>& constraints,
                       const Eigen::VectorXd& nominal_pi);

  int np() const { return np_; }
  int numEqualities() const { return static_cast<int>(e_eq_.size()); }
  int numInequalities() const { return static_cast<int>(e_in_.size()); }

  /// h (ne), g (ni) at theta.
  void values(const Eigen::VectorXd& theta, Eigen::VectorXd& h, Eigen::VectorXd& g) const;
  /// Values and Jacobians H (ne x np), G (ni x np).
  void linearize(const Eigen::VectorXd& theta, Eigen::VectorXd& h, Eigen::MatrixXd& H,
                 Eigen::VectorXd& g, Eigen::MatrixXd& G) const;
  /// Infeasibility: sum |h_i| + sum max(0, -g_i) (the merit's term) and its largest entry.
  void violation(const Eigen::VectorXd& theta, double& norm1, double& max) const;

 private:
  Eigen::VectorXd piOf(const Eigen::VectorXd& theta) const;

  inertia::Parametrization parametrization_;
  int np_ = 0, nb_ = 0;
  Eigen::MatrixXd E_eq_, E_in_;
  Eigen::VectorXd e_eq_, e_in_;
};

}  // namespace heft::estimation
