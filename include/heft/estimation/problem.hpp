#pragma once
/// \file A maximum-a-posteriori estimation problem over a horizon (multi-contact paper, eq. 16):
///   min over x_0..x_N, w_0..w_{N-1}, theta of
///     0.5 |L_x (x_0 ⊖ xbar_0)|^2 + 0.5 |L_theta (theta - thetabar)|^2
///     + sum_k 0.5 |r_k(x_k, w_k; theta)|^2 + 0.5 |r_N(x_N; theta)|^2
///   s.t. x_{k+1} = f_k(x_k, w_k; theta),
///        h(theta) = 0, g(theta) >= 0 (optional parameter constraints, ParameterConstraints).
/// L_x and L_theta are square-root informations (L^T L = Sigma^{-1}); the arrival cost makes x_0 a
/// decision with a Gaussian prior, the parameter prior may be zero (no prior: the paper's setting
/// for comparing parametrizations) and then unexcited directions of theta are left where they are
/// (the solver's nullspace step).
#include <memory>
#include <optional>
#include <vector>

#include <Eigen/Core>

#include "heft/estimation/parameter_constraints.hpp"
#include "heft/estimation/stage.hpp"
#include "heft/estimation/state.hpp"
#include "heft/inertia/inertia.hpp"

namespace heft::estimation {

/// The Gaussian priors on x_0 and theta.
struct ArrivalPrior {
  Eigen::VectorXd x_mean;           ///< nx
  Eigen::MatrixXd x_sqrt_info;      ///< ndx x ndx
  Eigen::VectorXd theta_mean;       ///< np
  Eigen::MatrixXd theta_sqrt_info;  ///< np x np, may be zero
};

class Problem {
 public:
  /// \param running N >= 1 stages with dynamics; \param terminal a stage without dynamics.
  /// \throws InputError naming the stage and the dimension that does not match.
  Problem(std::shared_ptr<const StateManifold> state,
          std::vector<std::shared_ptr<const StageModel>> running,
          std::shared_ptr<const StageModel> terminal, ArrivalPrior arrival);

  int horizon() const { return static_cast<int>(running_.size()); }  ///< N
  int nx() const { return state_->nx(); }
  int ndx() const { return state_->ndx(); }
  int np() const { return np_; }
  const StateManifold& state() const { return *state_; }
  const StageModel& running(int k) const { return *running_[k]; }
  const StageModel& terminal() const { return *terminal_; }
  const ArrivalPrior& arrival() const { return arrival_; }
  /// Sum of nw over the running stages.
  int numDecisions() const { return num_w_; }
  /// Equalities and inequalities on theta (bayesian-sysid eqs. 1e-1f), enforced at the arrival
  /// node; null: none. \throws InputError when their theta size is not np().
  void setParameterConstraints(std::shared_ptr<const ParameterConstraints> constraints);
  const std::shared_ptr<const ParameterConstraints>& parameterConstraints() const {
    return constraints_;
  }
  /// How theta holds the bodies' inertias: its first 10 `bodies` entries are theta_b of
  /// `parametrization` (RiccatiOptions::parametrization_curvature reads it).
  /// \throws InputError when 10 bodies exceeds np().
  void setInertiaParametrization(inertia::Parametrization parametrization, int bodies);
  struct InertiaLayout {
    inertia::Parametrization parametrization;
    int bodies = 0;
  };
  const std::optional<InertiaLayout>& inertiaLayout() const { return inertia_layout_; }

 private:
  std::shared_ptr<const StateManifold> state_;
  std::vector<std::shared_ptr<const StageModel>> running_;
  std::shared_ptr<const StageModel> terminal_;
  ArrivalPrior arrival_;
  std::shared_ptr<const ParameterConstraints> constraints_;
  std::optional<InertiaLayout> inertia_layout_;
  int np_ = 0;
  int num_w_ = 0;
};

}  // namespace heft::estimation
