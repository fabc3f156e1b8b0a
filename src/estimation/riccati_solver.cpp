#include "heft/estimation/riccati_solver.hpp"

#include <algorithm>
#include <cmath>
#include <iomanip>
#include <limits>
#include <ostream>
#include <sstream>

#include "estimation/riccati_impl.hpp"
#include "heft/common/error.hpp"

namespace heft::estimation {

std::string toString(Rollout rollout) {
  switch (rollout) {
    case Rollout::SingleShooting:
      return "single";
    case Rollout::FeasibilityDriven:
      return "feasibility-driven";
    case Rollout::MultipleShooting:
      return "multiple-shooting";
  }
  return "unknown";
}

Rollout parseRollout(const std::string& name) {
  for (Rollout r : {Rollout::SingleShooting, Rollout::FeasibilityDriven, Rollout::MultipleShooting})
    if (toString(r) == name) return r;
  throw InputError(
      "rollout: expected one of single, feasibility-driven, multiple-shooting, got \"" + name +
      "\"");
}

std::string toString(ThetaTrustUpdate update) {
  switch (update) {
    case ThetaTrustUpdate::Probe:
      return "probe";
    case ThetaTrustUpdate::Always:
      return "always";
  }
  return "unknown";
}

ThetaTrustUpdate parseThetaTrustUpdate(const std::string& name) {
  for (ThetaTrustUpdate u : {ThetaTrustUpdate::Always, ThetaTrustUpdate::Probe})
    if (toString(u) == name) return u;
  throw InputError("theta_trust_update: expected one of always, probe, got \"" + name + "\"");
}

std::string toString(RiccatiSummary::Status status) {
  switch (status) {
    case RiccatiSummary::Status::NotRun:
      return "not run";
    case RiccatiSummary::Status::Converged:
      return "converged";
    case RiccatiSummary::Status::MaxIterations:
      return "maximum iterations";
    case RiccatiSummary::Status::LineSearchFailed:
      return "line search failed";
    case RiccatiSummary::Status::NumericalFailure:
      return "numerical failure";
  }
  return "unknown";
}

void RiccatiOptions::validate() const {
  require(max_iterations >= 0, "max_iterations", ">= 0", std::to_string(max_iterations));
  requirePositive(tolerance, "tolerance");
  requirePositive(gap_tolerance, "gap_tolerance");
  requirePositive(constraint_tolerance, "constraint_tolerance");
  requirePositive(equality_tolerance, "equality_tolerance");
  require(armijo > 0 && armijo < 1, "armijo", "in (0, 1)", std::to_string(armijo));
  require(nonmonotone_memory >= 0, "nonmonotone_memory", ">= 0",
          std::to_string(nonmonotone_memory));
  require(min_step > 0 && min_step <= 1, "min_step", "in (0, 1]", std::to_string(min_step));
  requireNonNegative(regularization, "regularization");
  requireNonNegative(min_regularization, "min_regularization");
  require(max_regularization >= std::max(regularization, min_regularization), "max_regularization",
          ">= regularization and min_regularization", std::to_string(max_regularization));
  require(regularization_factor > 1, "regularization_factor", "> 1",
          std::to_string(regularization_factor));
  requirePositive(penalty, "penalty");
  require(penalty_decrease > 0 && penalty_decrease <= 1, "penalty_decrease", "in (0, 1]",
          std::to_string(penalty_decrease));
  require(penalty_rho > 0 && penalty_rho < 1, "penalty_rho", "in (0, 1)",
          std::to_string(penalty_rho));
  requirePositive(theta_trust_radius, "theta_trust_radius");
  requirePositive(min_theta_trust_radius, "min_theta_trust_radius");
  require(
      max_theta_trust_radius >= theta_trust_radius && theta_trust_radius >= min_theta_trust_radius,
      "theta trust radii", "min <= theta_trust_radius <= max",
      std::to_string(min_theta_trust_radius) + ", " + std::to_string(theta_trust_radius) + ", " +
          std::to_string(max_theta_trust_radius));
  require(nullspace_tolerance >= 0 && nullspace_tolerance < 1, "nullspace_tolerance", "in [0, 1)",
          std::to_string(nullspace_tolerance));
}

std::string RiccatiSummary::report() const {
  std::ostringstream out;
  out << "riccati solver: " << toString(status);
  if (!message.empty()) out << " (" << message << ")";
  out << "\n  iterations " << iterations << ", cost ";
  if (!cost_history.empty()) out << cost_history.front() << " -> ";
  out << cost << ", max gap " << max_gap << ", theta nullspace dimension " << nullspace_dimension;
  if (max_constraint_violation > 0 || constraint_qp_failures > 0)
    out << "\n  parameter constraints: largest violation " << max_constraint_violation
        << ", iterations whose QP failed " << constraint_qp_failures;
  if (max_equality_violation > 0)
    out << "\n  stage equality rows: largest violation " << max_equality_violation;
  out << "\n  time " << total_seconds << " s (derivatives " << derivative_seconds << ", backward "
      << backward_seconds << ", forward " << forward_seconds << ")\n";
  return out.str();
}

RiccatiSolver::RiccatiSolver(std::shared_ptr<const Problem> problem, const RiccatiOptions& options)
    : impl_(std::make_unique<Impl>(std::move(problem), options)) {}
RiccatiSolver::~RiccatiSolver() = default;
RiccatiSolver::RiccatiSolver(RiccatiSolver&&) noexcept = default;
RiccatiSolver& RiccatiSolver::operator=(RiccatiSolver&&) noexcept = default;

void RiccatiSolver::setInitialGuess(const std::vector<Eigen::VectorXd>& xs,
                                    const std::vector<Eigen::VectorXd>& ws,
                                    const Eigen::VectorXd& theta) {
  impl_->setInitialGuess(xs, ws, theta);
}
void RiccatiSolver::setInitialGuessFromRollout(const Eigen::VectorXd& theta) {
  impl_->setInitialGuessFromRollout(theta);
}
const RiccatiSummary& RiccatiSolver::solve() { return impl_->solve(); }
bool RiccatiSolver::computeDirection() { return impl_->computeDirection(); }
const std::vector<Eigen::VectorXd>& RiccatiSolver::xs() const { return impl_->cur_.xs; }
const std::vector<Eigen::VectorXd>& RiccatiSolver::ws() const { return impl_->cur_.ws; }
const Eigen::VectorXd& RiccatiSolver::theta() const { return impl_->cur_.theta; }
const std::vector<Eigen::VectorXd>& RiccatiSolver::directionX() const { return impl_->dxs_; }
const std::vector<Eigen::VectorXd>& RiccatiSolver::directionW() const { return impl_->dws_; }
const Eigen::VectorXd& RiccatiSolver::directionTheta() const { return impl_->dtheta_; }
const std::vector<Eigen::VectorXd>& RiccatiSolver::gaps() const { return impl_->cur_.gaps; }
const Eigen::MatrixXd& RiccatiSolver::thetaCovariance() const { return impl_->theta_covariance_; }
Eigen::MatrixXd RiccatiSolver::thetaNullspace() const { return impl_->thetaNullspace(); }
double RiccatiSolver::expectedFirstOrder() const { return impl_->d1_; }
double RiccatiSolver::expectedSecondOrder() const { return impl_->d2_; }
double RiccatiSolver::cost() const { return impl_->cur_.cost; }
const RiccatiSummary& RiccatiSolver::summary() const { return impl_->summary_; }
const RiccatiOptions& RiccatiSolver::options() const { return impl_->options_; }
void RiccatiSolver::setRegularization(double mu) { impl_->mu_ = mu; }

RiccatiSolver::Impl::Impl(std::shared_ptr<const Problem> problem, const RiccatiOptions& options)
    : problem_(std::move(problem)), options_(options) {
  require(problem_ != nullptr, "RiccatiSolver problem", "non-null", "null");
  options_.validate();
  N_ = problem_->horizon();
  nx_ = problem_->nx();
  ndx_ = problem_->ndx();
  np_ = problem_->np();
  nr_max_ = problem_->terminal().nr();
  for (int k = 0; k < N_; ++k) {
    nw_max_ = std::max(nw_max_, problem_->running(k).nw());
    nr_max_ = std::max(nr_max_, problem_->running(k).nr());
  }
  mu_ = options_.regularization;
  penalty_ = options_.penalty;
  theta_radius_ = options_.theta_trust_radius;

  resizeTrajectory(cur_);
  resizeTrajectory(trial_);
  resizeTrajectory(probe_);
  datas_.reserve(N_);
  // The stages are evaluated one at a time: their dynamics share one scratch per contact set.
  for (int k = 0; k < N_; ++k) datas_.push_back(problem_->running(k).createDataSharing(workspace_));
  terminal_data_ = problem_->terminal().createDataSharing(workspace_);

  policy_.resize(N_);
  dws_.resize(N_);
  constrained_.assign(N_, 0);
  eq_map_.resize(N_);
  int nh_max = 0;
  for (int k = 0; k < N_; ++k) {
    const int nw = problem_->running(k).nw(), nh = problem_->running(k).nh();
    // A knot with equality rows keeps the policy of the nullspace coordinates dz (nw - nh).
    const int nu = nw - nh;
    policy_[k] = Eigen::MatrixXd::Zero(nu, nu + ndx_ + np_ + 1);
    policy_[k].leftCols(nu).setIdentity();
    if (nh > 0) {
      constrained_[k] = 1;
      eq_map_[k] = Eigen::MatrixXd::Zero(nw, nu + ndx_ + np_ + 1);
      nh_max = std::max(nh_max, nh);
    }
    dws_[k] = Eigen::VectorXd::Zero(nw);
  }
  if (nh_max > 0) {
    eq_HwT_.setZero(nw_max_, nh_max);
    eq_hcoeffs_.setZero(nh_max);
    eq_qr_temp_.setZero(nh_max);
    eq_Q_.setZero(nw_max_, nw_max_);
    eq_W_.setZero(nh_max, ndx_ + np_ + 1);
    eq_T_.setZero(nw_max_, ndx_ + np_ + 1);
    eq_QwwZ_.setZero(nw_max_, nw_max_);
    eq_work_.setZero(nw_max_);
  }
  eq_z_.setZero(nw_max_);
  policy_tmp_.setZero(nw_max_);
  dxs_.assign(N_ + 1, Eigen::VectorXd::Zero(ndx_));
  saved_dxs_ = dxs_;  // sized once: a probe's direction is computed in dxs_, dws_
  saved_dws_ = dws_;
  lin_gaps_.assign(N_ + 1, Eigen::VectorXd::Zero(ndx_));
  D0_.setZero(ndx_, ndx_);
  D1_.setZero(ndx_, ndx_);
  int largest_block = 0;
  for (const TangentBlock& b : problem_->state().curvedBlocks()) {
    require(b.start >= 0 && b.size > 0 && b.start + b.size <= ndx_, "state curved block",
            "within [0, ndx)", std::to_string(b.start) + " + " + std::to_string(b.size));
    block_lu_.emplace_back(b.size);
    block_map_.push_back(Eigen::MatrixXd::Zero(b.size, b.size));
    largest_block = std::max(largest_block, b.size);
  }
  block_rows_.setZero(largest_block, std::max({ndx_, nw_max_, np_}));
  // The semi-implicit structure, where a stage declares it and its sizes fit (StageData).
  structured_.assign(N_, 0);
  if (options_.exploit_structure && ndx_ % 2 == 0) {
    nv_ = ndx_ / 2;
    std::vector<TangentBlock> blocks = problem_->state().curvedBlocks();
    std::sort(blocks.begin(), blocks.end(),
              [](const TangentBlock& a, const TangentBlock& b) { return a.start < b.start; });
    bool fits = true;
    int next = 0;
    for (const TangentBlock& b : blocks) {
      fits = fits && b.start >= next && b.start + b.size <= nv_;
      if (!fits) break;
      if (b.start > next) segments_.push_back({next, b.start - next, false});
      segments_.push_back({b.start, b.size, true});
      next = b.start + b.size;
    }
    if (next < nv_) segments_.push_back({next, nv_ - next, false});
    for (int k = 0; fits && k < N_; ++k) {
      const StageData& d = *datas_[k];
      auto square = [&](const Eigen::MatrixXd& m) { return m.rows() == nv_ && m.cols() == nv_; };
      structured_[k] = d.semi_implicit && square(d.A_q) && square(d.B_q) && square(d.S_q) &&
                       problem_->running(k).nw() >= nv_ && !constrained_[k];
    }
    Z_.setZero(ndx_, nv_);
    FxVS_.setZero(ndx_, nv_);
    FwVS_.setZero(nw_max_, nv_);
    SG_.setZero(nv_, np_);
    SVt_.setZero(nv_, np_);
    tmp_v_.setZero(nv_);
    pre_noise_.setZero(ndx_);
  }
  block_gap_.setZero(largest_block);
  for (Eigen::MatrixXd* m : {&Vxx_next_, &Qxx_, &FxV_}) m->setZero(ndx_, ndx_);
  for (Eigen::MatrixXd* m : {&Vxt_next_, &Qxt_, &G_}) m->setZero(ndx_, np_);
  for (Eigen::MatrixXd* m : {&Vtt_next_, &Qtt_}) m->setZero(np_, np_);
  for (Eigen::VectorXd* v : {&Vx_next_, &Qx_, &vx_plus_, &gx_, &HxxInvGx_}) v->setZero(ndx_);
  for (Eigen::VectorXd* v : {&Vt_next_, &Qt_, &gt_, &gs_, &dtheta_, &theta_diff_, &data_gradient_})
    v->setZero(np_);
  Qxw_.setZero(ndx_, nw_max_);
  Qww_.setZero(nw_max_, nw_max_);
  Qwt_.setZero(nw_max_, np_);
  FwV_.setZero(nw_max_, ndx_);
  Qw_.setZero(nw_max_);
  arrival_r_.setZero(ndx_);
  prior_r_.setZero(np_);
  prior_information_floor_ = 0;
  if (np_ > 0) {
    const Eigen::MatrixXd& L = problem_->arrival().theta_sqrt_info;
    const Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> prior(L.transpose() * L,
                                                               Eigen::EigenvaluesOnly);
    if (prior.info() == Eigen::Success)
      prior_information_floor_ = std::max(0.0, 0.5 * prior.eigenvalues().minCoeff());
  }
  arrival_J_.setZero(ndx_, ndx_);
  J_unused_.setZero(ndx_, ndx_);
  J_next_unused_.setZero(ndx_, ndx_);
  Hxx_.setZero(ndx_, ndx_);
  Hxt_.setZero(ndx_, np_);
  Htt_.setZero(np_, np_);
  HxxInvHxt_.setZero(ndx_, np_);
  S_.setZero(np_, np_);
  Hxx_llt_ = Eigen::LLT<Eigen::MatrixXd>(ndx_);
  if (np_ > 0) {
    S_tri_ = Eigen::Tridiagonalization<Eigen::MatrixXd>(np_);
    S_eig_ = Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd>(np_);
    S_Q_.setZero(np_, np_);
    S_vectors_.setZero(np_, np_);
    S_diag_.setZero(np_);
    S_subdiag_.setZero(std::max(np_ - 1, 0));
    S_workspace_.setZero(np_);
  }
  theta_covariance_.setZero(np_, np_);
  constraints_ = problem_->parameterConstraints().get();
  if (constraints_ && np_ > 0) {
    const int ne = constraints_->numEqualities(), ni = constraints_->numInequalities();
    qp_ = std::make_unique<DenseQp>(np_, ne, ni);
    con_h_.setZero(ne);
    con_g_.setZero(ni);
    con_H_.setZero(ne, np_);
    con_G_.setZero(ni, np_);
    qp_H_.setZero(np_, np_);
    qp_g_.setZero(np_);
  }
  e_.setZero(std::max({nr_max_, ndx_, np_}));
  tangent_.setZero(ndx_);
  merit_memory_.reserve(options_.nonmonotone_memory);
}

void RiccatiSolver::Impl::resizeTrajectory(Trajectory& traj) const {
  traj.xs.assign(N_ + 1, Eigen::VectorXd::Zero(nx_));
  traj.gaps.assign(N_ + 1, Eigen::VectorXd::Zero(ndx_));
  traj.ws.resize(N_);
  for (int k = 0; k < N_; ++k) traj.ws[k] = Eigen::VectorXd::Zero(problem_->running(k).nw());
  traj.theta = Eigen::VectorXd::Zero(np_);
}

void RiccatiSolver::Impl::setInitialGuess(const std::vector<Eigen::VectorXd>& xs,
                                          const std::vector<Eigen::VectorXd>& ws,
                                          const Eigen::VectorXd& theta) {
  require(static_cast<int>(xs.size()) == N_ + 1, "initial guess states",
          std::to_string(N_ + 1) + " (horizon + 1)", std::to_string(xs.size()));
  require(static_cast<int>(ws.size()) == N_, "initial guess decisions", std::to_string(N_),
          std::to_string(ws.size()));
  require(theta.size() == np_, "initial guess theta size", std::to_string(np_),
          std::to_string(theta.size()));
  require(theta.allFinite(), "initial guess theta", "finite values", "NaN or infinity");
  for (int k = 0; k <= N_; ++k) {
    require(xs[k].size() == nx_ && xs[k].allFinite(), "initial guess state " + std::to_string(k),
            std::to_string(nx_) + " finite values",
            std::to_string(xs[k].size()) + " values" + (xs[k].allFinite() ? "" : " with NaN"));
    cur_.xs[k] = xs[k];
  }
  for (int k = 0; k < N_; ++k) {
    const int nw = problem_->running(k).nw();
    require(ws[k].size() == nw && ws[k].allFinite(), "initial guess decision " + std::to_string(k),
            std::to_string(nw) + " finite values", std::to_string(ws[k].size()) + " values");
    cur_.ws[k] = ws[k];
  }
  cur_.theta = theta;
  evaluate(cur_);
}

void RiccatiSolver::Impl::setInitialGuessFromRollout(const Eigen::VectorXd& theta) {
  require(theta.size() == np_, "initial guess theta size", std::to_string(np_),
          std::to_string(theta.size()));
  cur_.theta = theta;
  cur_.xs[0] = problem_->arrival().x_mean;
  for (auto& w : cur_.ws) w.setZero();
  closeGaps(cur_);
  evaluate(cur_);
}

bool RiccatiSolver::Impl::computeDirection() {
  bool finite = true;
  if (!derivativesAndBackwardPass(finite)) return false;
  if (!solveArrival()) return false;
  linearRollout();
  return true;
}

void RiccatiSolver::Impl::printProgress(int iteration, double alpha) const {
  if (!options_.progress) return;
  std::ostream& out = *options_.progress;
  if (iteration == 0)
    out << "iter        cost     max gap          d1       step        mu  nullity  theta radius\n";
  // theta radius: the trust region's; '*' when it shortened this iteration's theta step
  out << std::setw(4) << iteration << ' ' << std::scientific << std::setprecision(4)
      << std::setw(11) << cur_.cost << ' ' << std::setw(11) << cur_.max_gap << ' ' << std::setw(11)
      << d1_ << ' ' << std::setw(10) << std::defaultfloat << std::setprecision(3) << alpha << ' '
      << std::setw(9) << std::scientific << std::setprecision(1) << mu_ << std::defaultfloat << ' '
      << std::setw(8) << nullity_ << ' ' << std::setw(12) << std::scientific << std::setprecision(2)
      << theta_radius_ << (theta_at_boundary_ ? '*' : ' ') << std::defaultfloat << '\n';
}

const RiccatiSummary& RiccatiSolver::Impl::solve() {
  const auto start = std::chrono::steady_clock::now();
  summary_ = RiccatiSummary();
  summary_.cost_history.reserve(options_.max_iterations + 1);
  summary_.gap_history.reserve(options_.max_iterations + 1);
  summary_.step_history.reserve(options_.max_iterations);
  summary_.theta_radius_history.reserve(options_.max_iterations);
  summary_.theta_limited_history.reserve(options_.max_iterations);
  merit_memory_.clear();
  theta_radius_ = options_.theta_trust_radius;
  qp_failures_ = 0;
  // Single shooting needs a feasible guess: close every gap by rolling the dynamics out.
  if (options_.rollout == Rollout::SingleShooting) closeGaps(cur_);
  evaluate(cur_);
  bool direction_at_current = false;  // the last direction (and covariance) was computed at cur_
  summary_.status = RiccatiSummary::Status::MaxIterations;
  for (int iteration = 0; iteration < options_.max_iterations; ++iteration) {
    summary_.iterations = iteration;
    summary_.cost_history.push_back(cur_.cost);
    summary_.gap_history.push_back(cur_.max_gap);

    if (!regularizedDirection(iteration)) break;
    direction_at_current = true;

    // A step the theta trust region shortened says nothing about stationarity: its d1 shrinks with
    // the radius (a converged-looking stop 4e-6 above the optimum on go2,
    // tests/reference_test.cpp).
    if (std::abs(d1_) <= options_.tolerance * (1 + cur_.cost) &&
        cur_.max_gap <= options_.gap_tolerance &&
        cur_.constraint_max <= options_.constraint_tolerance &&
        cur_.equality_max <= options_.equality_tolerance && !theta_at_boundary_) {
      summary_.status = RiccatiSummary::Status::Converged;
      printProgress(iteration, 0);
      break;
    }

    // Merit penalty (eq. 38) and the nonmonotone reference.
    const double gap1 = infeasibility(cur_);
    if (gap1 > 0) {
      penalty_ = std::max(options_.penalty_decrease * penalty_,
                          (d1_ + 0.5 * d2_) / ((1 - options_.penalty_rho) * gap1));
    }
    const double cost_before = cur_.cost;
    // Nonmonotone reference: the largest merit of the last accepted iterates, at today's penalty.
    double reference = cur_.cost + penalty_ * gap1;
    for (const auto& [cost, gaps] : merit_memory_)
      reference = std::max(reference, cost + penalty_ * gaps);

    const auto t0 = std::chrono::steady_clock::now();
    const double accepted = lineSearch(reference, gap1);
    summary_.forward_seconds += secondsSince(t0);
    summary_.step_history.push_back(accepted);
    summary_.theta_radius_history.push_back(theta_radius_);
    summary_.theta_limited_history.push_back(theta_at_boundary_ ? 1 : 0);
    printProgress(iteration, accepted);
    if (accepted > 0) {
      const auto t1 = std::chrono::steady_clock::now();
      const bool theta_shortened =
          accepted < 1 && (options_.theta_trust_update == ThetaTrustUpdate::Always ||
                           thetaShortenedStep(accepted, reference, gap1));
      summary_.forward_seconds += secondsSince(t1);  // the probe is forward work too
      acceptTrial(accepted, cost_before, gap1, theta_shortened);
      direction_at_current = false;
    } else if (!rejectTrial()) {
      break;
    }
    summary_.iterations = iteration + 1;
  }
  finishSolve(direction_at_current, start);
  return summary_;
}

bool RiccatiSolver::Impl::regularizedDirection(int iteration) {
  bool finite = true;
  bool direction = derivativesAndBackwardPass(finite);
  summary_.derivative_seconds += pass_derivative_seconds_;
  summary_.backward_seconds += pass_backward_seconds_;
  if (!finite) {
    summary_.status = RiccatiSummary::Status::NumericalFailure;
    summary_.message =
        "NaN or infinity in the residuals or derivatives at iteration " + std::to_string(iteration);
    return false;
  }
  const auto t0 = std::chrono::steady_clock::now();
  direction = direction && solveArrival();
  while (!direction && mu_ < options_.max_regularization) {
    mu_ = std::max(mu_ * options_.regularization_factor,
                   std::max(options_.min_regularization, 1e-12));
    direction = backwardPass() && solveArrival();
  }
  if (!direction) {
    summary_.backward_seconds += secondsSince(t0);
    summary_.status = RiccatiSummary::Status::NumericalFailure;
    summary_.message = "Hessian not positive definite at the largest regularization";
    return false;
  }
  linearRollout();
  summary_.backward_seconds += secondsSince(t0);
  return true;
}

void RiccatiSolver::Impl::acceptTrial(double accepted, double cost_before, double gap1,
                                      bool theta_shortened) {
  std::swap(cur_.xs, trial_.xs);
  std::swap(cur_.ws, trial_.ws);
  std::swap(cur_.gaps, trial_.gaps);
  cur_.theta.swap(trial_.theta);
  cur_.cost = trial_.cost;
  cur_.gap_norm1 = trial_.gap_norm1;
  cur_.max_gap = trial_.max_gap;
  cur_.constraint_norm1 = trial_.constraint_norm1;
  cur_.constraint_max = trial_.constraint_max;
  cur_.equality_norm1 = trial_.equality_norm1;
  cur_.equality_max = trial_.equality_max;
  datas_at_current_ = datas_at_trial_;  // unless a probe was evaluated after the accepted trial
  if (options_.nonmonotone_memory > 0) {
    if (static_cast<int>(merit_memory_.size()) == options_.nonmonotone_memory)
      merit_memory_.erase(merit_memory_.begin());
    merit_memory_.emplace_back(cost_before, gap1);
  }
  if (accepted == 1)
    mu_ = std::max(options_.min_regularization, mu_ / options_.regularization_factor);
  if (accepted == 1 && theta_at_boundary_)
    theta_radius_ = std::min(options_.max_theta_trust_radius, 2 * theta_radius_);
  else if (accepted < 1 && theta_shortened)
    theta_radius_ = std::max(options_.min_theta_trust_radius,
                             0.5 * accepted * std::min(theta_radius_, dtheta_.norm()));
  // A step the trajectory shortened leaves the radius: the theta model was not what failed.
}

bool RiccatiSolver::Impl::rejectTrial() {
  theta_radius_ =
      std::max(options_.min_theta_trust_radius, 0.25 * std::min(theta_radius_, dtheta_.norm()));
  if (mu_ >= options_.max_regularization) {
    summary_.status = RiccatiSummary::Status::LineSearchFailed;
    summary_.message = "no step decreased the merit at regularization " + std::to_string(mu_);
    return false;
  }
  mu_ =
      std::min(options_.max_regularization, std::max(mu_ * options_.regularization_factor, 1e-12));
  return true;
}

void RiccatiSolver::Impl::finishSolve(bool direction_at_current,
                                      std::chrono::steady_clock::time_point start) {
  // The posterior covariance at the returned iterate, unless the last direction was computed there.
  if (options_.posterior_covariance && np_ > 0 && !direction_at_current &&
      summary_.status != RiccatiSummary::Status::NumericalFailure) {
    const auto t0 = std::chrono::steady_clock::now();
    computeDirection();
    summary_.backward_seconds += secondsSince(t0);
  }
  summary_.cost = cur_.cost;
  summary_.max_gap = cur_.max_gap;
  summary_.cost_history.push_back(cur_.cost);
  summary_.gap_history.push_back(cur_.max_gap);
  summary_.nullspace_dimension = nullity_;
  summary_.max_constraint_violation = cur_.constraint_max;
  summary_.constraint_qp_failures = qp_failures_;
  summary_.max_equality_violation = cur_.equality_max;
  summary_.total_seconds = secondsSince(start);
  if (summary_.status == RiccatiSummary::Status::MaxIterations)
    summary_.message =
        "not converged in " + std::to_string(options_.max_iterations) + " iterations";
}

}  // namespace heft::estimation
