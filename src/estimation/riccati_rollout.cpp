// RiccatiSolver's rollouts: evaluation of a trajectory (cost and gaps), the policy applied to a
// state step, the linear rollout of the direction with its expected change of the cost, the
// trials of the line search (multiple shooting, or nonlinear under the feedback policy) and the
// backtracking itself.
#include <algorithm>
#include <cmath>

#include "estimation/riccati_impl.hpp"
#include "heft/common/error.hpp"

namespace heft::estimation {

void RiccatiSolver::Impl::closeGaps(Trajectory& traj) {
  for (int k = 0; k < N_; ++k) {
    problem_->running(k).calc(*datas_[k], traj.xs[k], traj.ws[k], traj.theta);
    traj.xs[k + 1] = datas_[k]->xnext;
  }
}

double RiccatiSolver::Impl::infeasibility(const Trajectory& traj) const {
  return (options_.rollout == Rollout::SingleShooting ? 0 : traj.gap_norm1) + traj.equality_norm1 +
         traj.constraint_norm1;
}

double RiccatiSolver::Impl::arrivalCost(Trajectory& traj) {
  if (constraints_) constraints_->violation(traj.theta, traj.constraint_norm1, traj.constraint_max);
  const ArrivalPrior& arrival = problem_->arrival();
  problem_->state().difference(arrival.x_mean, traj.xs[0], tangent_);
  arrival_r_.noalias() = arrival.x_sqrt_info * tangent_;
  theta_diff_ = traj.theta - arrival.theta_mean;
  prior_r_.noalias() = arrival.theta_sqrt_info * theta_diff_;
  return 0.5 * arrival_r_.squaredNorm() + 0.5 * prior_r_.squaredNorm();
}

void RiccatiSolver::Impl::addEqualityViolation(int k, Trajectory& traj) const {
  if (!constrained_[k]) return;
  const Eigen::VectorXd& h = datas_[k]->h;
  traj.equality_norm1 += h.lpNorm<1>();
  traj.equality_max = std::max(traj.equality_max, h.lpNorm<Eigen::Infinity>());
}

void RiccatiSolver::Impl::evaluate(Trajectory& traj) {
  double cost = arrivalCost(traj);
  double norm1 = 0, max_gap = 0;
  traj.equality_norm1 = traj.equality_max = 0;
  for (int k = 0; k < N_; ++k) {
    problem_->running(k).calc(*datas_[k], traj.xs[k], traj.ws[k], traj.theta);
    cost += datas_[k]->cost;
    addEqualityViolation(k, traj);
    problem_->state().difference(traj.xs[k + 1], datas_[k]->xnext, traj.gaps[k + 1]);
    norm1 += traj.gaps[k + 1].lpNorm<1>();
    max_gap = std::max(max_gap, traj.gaps[k + 1].lpNorm<Eigen::Infinity>());
  }
  problem_->terminal().calc(*terminal_data_, traj.xs[N_], Eigen::VectorXd(), traj.theta);
  cost += terminal_data_->cost;
  traj.cost = cost;
  traj.gap_norm1 = norm1;
  traj.max_gap = max_gap;
  datas_at_current_ = &traj == &cur_;
}

void RiccatiSolver::Impl::applyPolicy(const Eigen::MatrixXd& policy, int first, int size,
                                      double scale, const Eigen::VectorXd& z,
                                      Eigen::Ref<Eigen::VectorXd> e) const {
  const int nw = static_cast<int>(policy.rows());
  e.noalias() = scale * policy.col(nw + ndx_ + np_).segment(first, size);
  e.noalias() += policy.block(first, nw, size, ndx_) * z;
  if (np_ > 0) e.noalias() += scale * policy.block(first, nw + ndx_, size, np_) * dtheta_;
  policy.block(first, first, size, size).triangularView<Eigen::Lower>().transpose().solveInPlace(e);
}

void RiccatiSolver::Impl::policyCorrection(int k, double scale, const Eigen::VectorXd& dx) {
  const Eigen::MatrixXd& policy = policy_[k];
  if (constrained_[k]) {
    // dw = scale c + C_x dx + scale C_t dtheta + Z dz, dz from the nullspace coordinates' policy.
    const Eigen::MatrixXd& map = eq_map_[k];  // [Z | C_x | C_t | c]
    const int nw = static_cast<int>(map.rows()), nz = static_cast<int>(policy.rows());
    auto minus_dz = eq_z_.head(nz);
    applyPolicy(policy, 0, nz, scale, dx, minus_dz);
    auto e = policy_tmp_.head(nw);
    e.noalias() = -scale * map.col(nz + ndx_ + np_);
    e.noalias() -= map.middleCols(nz, ndx_) * dx;
    if (np_ > 0) e.noalias() -= scale * (map.middleCols(nz + ndx_, np_) * dtheta_);
    e.noalias() += map.leftCols(nz) * minus_dz;
    return;
  }
  const int nw = static_cast<int>(policy.rows());
  if (!structured_[k]) {
    applyPolicy(policy, 0, nw, scale, dx, policy_tmp_.head(nw));
    return;
  }
  // w_v from dx; then w_q from the step of the state before the configuration noise,
  // y = F_x dx + F_wv dw_v + scale F_theta dtheta (its gap part is in w_q's feedforward).
  const StageData& d = *datas_[k];
  const int nwv = nw - nv_;
  auto e_v = policy_tmp_.segment(nv_, nwv);  // -dw_v
  applyPolicy(policy, nv_, nwv, scale, dx, e_v);
  tmp_v_.noalias() = d.F_x.bottomRows(nv_) * dx;
  tmp_v_.noalias() -= d.F_w.bottomRightCorner(nv_, nwv) * e_v;
  if (np_ > 0) tmp_v_.noalias() += scale * (d.F_theta.bottomRows(nv_) * dtheta_);
  pre_noise_.tail(nv_) = tmp_v_;
  pre_noise_.head(nv_).setZero();
  addBlockDiagonalTimes(d.A_q, dx.head(nv_), pre_noise_.head(nv_));
  addBlockDiagonalTimes(d.S_q, tmp_v_, pre_noise_.head(nv_));
  applyPolicy(policy, 0, nv_, scale, pre_noise_, policy_tmp_.head(nv_));
}

void RiccatiSolver::Impl::linearRollout() {
  const ArrivalPrior& arrival = problem_->arrival();
  d1_ = 0;
  d2_ = 0;
  auto ea = e_.head(ndx_);
  ea.noalias() = arrival_J_ * dxs_[0];
  d1_ += arrival_r_.dot(ea);
  d2_ += ea.squaredNorm();
  if (np_ > 0) {
    auto ep = e_.head(np_);
    ep.noalias() = arrival.theta_sqrt_info * dtheta_;
    d1_ += prior_r_.dot(ep);
    d2_ += ep.squaredNorm();
  }
  for (int k = 0; k < N_; ++k) {
    const StageData& d = *datas_[k];
    const int nr = problem_->running(k).nr();
    policyCorrection(k, 1.0, dxs_[k]);
    dws_[k] = -policy_tmp_.head(dws_[k].size());
    auto e = e_.head(nr);
    problem_->running(k).linearResidual(d, dxs_[k], dws_[k], dtheta_, e);
    d1_ += d.r.dot(e);
    d2_ += e.squaredNorm();
    dxs_[k + 1] = lin_gaps_[k + 1];
    if (structured_[k]) {  // y (policyCorrection's) + [B_q dw_q; 0]
      dxs_[k + 1] += pre_noise_;
      addBlockDiagonalTimes(d.B_q, dws_[k].head(nv_), dxs_[k + 1].head(nv_));
    } else {
      dxs_[k + 1].noalias() += d.F_x * dxs_[k];
      dxs_[k + 1].noalias() += d.F_w * dws_[k];
      dxs_[k + 1].noalias() += d.F_theta * dtheta_;
    }
  }
  const StageData& t = *terminal_data_;
  auto e = e_.head(problem_->terminal().nr());
  e.noalias() = t.R_x * dxs_[N_];
  e.noalias() += t.R_theta * dtheta_;
  d1_ += t.r.dot(e);
  d2_ += e.squaredNorm();
}

void RiccatiSolver::Impl::rolloutTrial(double alpha, Trajectory& out) {
  const StateManifold& state = problem_->state();
  datas_at_current_ = false;  // the stages' data now hold trial points
  datas_at_trial_ = &out == &trial_;
  out.theta = cur_.theta;
  out.theta.noalias() += alpha * dtheta_;
  if (options_.rollout == Rollout::MultipleShooting) {
    for (int k = 0; k <= N_; ++k) {
      tangent_ = alpha * dxs_[k];
      state.integrate(cur_.xs[k], tangent_, out.xs[k]);
    }
    for (int k = 0; k < N_; ++k) {
      out.ws[k] = cur_.ws[k];
      out.ws[k].noalias() += alpha * dws_[k];
    }
    evaluate(out);
    return;
  }
  // Single shooting and feasibility-driven: a nonlinear rollout under the feedback policy.
  tangent_ = alpha * dxs_[0];
  state.integrate(cur_.xs[0], tangent_, out.xs[0]);
  double cost = arrivalCost(out);
  double norm1 = 0, max_gap = 0;
  out.equality_norm1 = out.equality_max = 0;
  const double keep = options_.rollout == Rollout::FeasibilityDriven ? 1 - alpha : 0;
  for (int k = 0; k < N_; ++k) {
    state.difference(cur_.xs[k], out.xs[k], tangent_);
    policyCorrection(k, alpha, tangent_);
    out.ws[k] = cur_.ws[k] - policy_tmp_.head(cur_.ws[k].size());
    problem_->running(k).calc(*datas_[k], out.xs[k], out.ws[k], out.theta);
    cost += datas_[k]->cost;
    addEqualityViolation(k, out);
    if (keep > 0) {
      tangent_ = -keep * cur_.gaps[k + 1];
      state.integrate(datas_[k]->xnext, tangent_, out.xs[k + 1]);
      state.difference(out.xs[k + 1], datas_[k]->xnext, out.gaps[k + 1]);
    } else {
      out.xs[k + 1] = datas_[k]->xnext;
      out.gaps[k + 1].setZero();
    }
    norm1 += out.gaps[k + 1].lpNorm<1>();
    max_gap = std::max(max_gap, out.gaps[k + 1].lpNorm<Eigen::Infinity>());
  }
  problem_->terminal().calc(*terminal_data_, out.xs[N_], Eigen::VectorXd(), out.theta);
  out.cost = cost + terminal_data_->cost;
  out.gap_norm1 = norm1;
  out.max_gap = max_gap;
}

bool RiccatiSolver::Impl::acceptable(const Trajectory& trial, double alpha, double reference,
                                     double gap1) {
  const double trial_merit = merit(trial);
  const double predicted =
      std::min(alpha * d1_ + 0.5 * alpha * alpha * d2_ - alpha * penalty_ * gap1, 0.0);
  return std::isfinite(trial_merit) && trial_merit <= reference + options_.armijo * predicted &&
         trial_merit < reference;
}

double RiccatiSolver::Impl::lineSearch(double reference, double gap1) {
  for (double alpha = 1; alpha >= options_.min_step; alpha *= 0.5) {
    try {
      rolloutTrial(alpha, trial_);
    } catch (const InputError&) {
      // A trial theta outside the parametrization's finite range (exp overflow): too long.
      continue;
    }
    if (acceptable(trial_, alpha, reference, gap1)) return alpha;
  }
  return 0;
}

bool RiccatiSolver::Impl::thetaShortenedStep(double alpha, double reference, double gap1) {
  // The rejected length 2 alpha along the direction with theta's part halved: theta moves as far
  // as in the accepted step, the trajectory as far as in the rejected one, consistently (the
  // direction is linear in dtheta: dx_0 of eq. 83 and the linear rollout). If that passes the
  // test the full step failed, theta's longer move is what failed it: the theta model does not
  // reach that far. If it fails too, the trajectory's own curvature (stiff rows such as energy
  // observations at 1e-5 J) shortened the step, and shrinking theta's radius would only freeze
  // theta.
  if (!(np_ > 0 && dtheta_.squaredNorm() > 0)) return false;  // theta did not move
  const double d1 = d1_, d2 = d2_;
  std::swap(dxs_, saved_dxs_);  // saved_dxs_, saved_dws_ keep the direction; dxs_, dws_ the probe's
  std::swap(dws_, saved_dws_);
  dtheta_ *= 0.5;
  dxs_[0] = 0.5 * (saved_dxs_[0] - HxxInvGx_);  // -H_xx^-1 (g_x + H_xtheta dtheta / 2)
  linearRollout();
  const double longer = 2 * alpha;
  // A probe theta outside the parametrization's finite range counts as theta's doing.
  bool acceptable_probe = true;
  try {
    rolloutTrial(longer, probe_);
    acceptable_probe = acceptable(probe_, longer, reference, gap1);
  } catch (const InputError&) {
  }
  dtheta_ *= 2;
  std::swap(dxs_, saved_dxs_);
  std::swap(dws_, saved_dws_);
  d1_ = d1;
  d2_ = d2;
  if (!acceptable_probe) return false;
  if (merit(probe_) < merit(trial_)) {
    std::swap(trial_, probe_);  // the better point of the two; the datas hold its evaluation
    datas_at_trial_ = true;
  }
  return true;
}

}  // namespace heft::estimation
