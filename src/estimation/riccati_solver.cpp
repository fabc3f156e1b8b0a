#include "heft/estimation/riccati_solver.hpp"

#include <algorithm>
#include <cmath>
#include <iomanip>
#include <limits>
#include <ostream>
#include <sstream>

#include "heft/common/error.hpp"

namespace heft::estimation {
namespace {

double secondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// Makes m symmetric from its lower triangle, in place.
void copyLowerToUpper(Eigen::MatrixXd& m) {
  for (Eigen::Index j = 0; j < m.cols(); ++j)
    for (Eigen::Index i = 0; i < j; ++i) m(i, j) = m(j, i);
}

// out += X M_b and out += M_b^T X on one dense block of a block-diagonal M: a free flyer's 6 x 6
// and a spherical joint's 3 x 3 with fixed sizes (the dynamic-size products cost more than their
// arithmetic here).
template <int Size, class X, class M, class Out>
bool addBlockTimes(int start, int size, const X& x, const M& m, Out& out) {
  if (size != Size) return false;
  out.template middleCols<Size>(start).noalias() +=
      x.template middleCols<Size>(start) * m.template block<Size, Size>(start, start);
  return true;
}
template <int Size, class M, class X, class Out>
bool addBlockTransposeTimes(int start, int size, const M& m, const X& x, Out& out) {
  if (size != Size) return false;
  out.template middleRows<Size>(start).noalias() +=
      m.template block<Size, Size>(start, start).transpose() * x.template middleRows<Size>(start);
  return true;
}

}  // namespace

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
  out << cost << ", max gap " << max_gap << ", theta nullspace dimension " << nullspace_dimension
      << "\n  time " << total_seconds << " s (derivatives " << derivative_seconds << ", backward "
      << backward_seconds << ", forward " << forward_seconds << ")\n";
  return out.str();
}

RiccatiSolver::RiccatiSolver(std::shared_ptr<const Problem> problem, const RiccatiOptions& options)
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
  datas_.reserve(N_);
  // The stages are evaluated one at a time: their dynamics share one scratch per contact set.
  for (int k = 0; k < N_; ++k) datas_.push_back(problem_->running(k).createDataSharing(workspace_));
  terminal_data_ = problem_->terminal().createDataSharing(workspace_);

  policy_.resize(N_);
  dws_.resize(N_);
  for (int k = 0; k < N_; ++k) {
    const int nw = problem_->running(k).nw();
    policy_[k] = Eigen::MatrixXd::Zero(nw, nw + ndx_ + np_ + 1);
    policy_[k].leftCols(nw).setIdentity();
    dws_[k] = Eigen::VectorXd::Zero(nw);
  }
  policy_tmp_.setZero(nw_max_);
  dxs_.assign(N_ + 1, Eigen::VectorXd::Zero(ndx_));
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
                       problem_->running(k).nw() >= nv_;
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
  for (Eigen::VectorXd* v : {&Vt_next_, &Qt_, &gt_, &gs_, &dtheta_, &theta_diff_}) v->setZero(np_);
  Qxw_.setZero(ndx_, nw_max_);
  Qww_.setZero(nw_max_, nw_max_);
  Qwt_.setZero(nw_max_, np_);
  FwV_.setZero(nw_max_, ndx_);
  Qw_.setZero(nw_max_);
  arrival_r_.setZero(ndx_);
  prior_r_.setZero(np_);
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
  e_.setZero(std::max({nr_max_, ndx_, np_}));
  tangent_.setZero(ndx_);
  merit_memory_.reserve(options_.nonmonotone_memory);
}

void RiccatiSolver::resizeTrajectory(Trajectory& traj) const {
  traj.xs.assign(N_ + 1, Eigen::VectorXd::Zero(nx_));
  traj.gaps.assign(N_ + 1, Eigen::VectorXd::Zero(ndx_));
  traj.ws.resize(N_);
  for (int k = 0; k < N_; ++k) traj.ws[k] = Eigen::VectorXd::Zero(problem_->running(k).nw());
  traj.theta = Eigen::VectorXd::Zero(np_);
}

void RiccatiSolver::setInitialGuess(const std::vector<Eigen::VectorXd>& xs,
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

void RiccatiSolver::setInitialGuessFromRollout(const Eigen::VectorXd& theta) {
  require(theta.size() == np_, "initial guess theta size", std::to_string(np_),
          std::to_string(theta.size()));
  cur_.theta = theta;
  cur_.xs[0] = problem_->arrival().x_mean;
  for (auto& w : cur_.ws) w.setZero();
  closeGaps(cur_);
  evaluate(cur_);
}

void RiccatiSolver::closeGaps(Trajectory& traj) {
  for (int k = 0; k < N_; ++k) {
    problem_->running(k).calc(*datas_[k], traj.xs[k], traj.ws[k], traj.theta);
    traj.xs[k + 1] = datas_[k]->xnext;
  }
}

double RiccatiSolver::arrivalCost(const Trajectory& traj) {
  const ArrivalPrior& arrival = problem_->arrival();
  problem_->state().difference(arrival.x_mean, traj.xs[0], tangent_);
  arrival_r_.noalias() = arrival.x_sqrt_info * tangent_;
  theta_diff_ = traj.theta - arrival.theta_mean;
  prior_r_.noalias() = arrival.theta_sqrt_info * theta_diff_;
  return 0.5 * arrival_r_.squaredNorm() + 0.5 * prior_r_.squaredNorm();
}

void RiccatiSolver::evaluate(Trajectory& traj) {
  double cost = arrivalCost(traj);
  double norm1 = 0, max_gap = 0;
  for (int k = 0; k < N_; ++k) {
    problem_->running(k).calc(*datas_[k], traj.xs[k], traj.ws[k], traj.theta);
    cost += datas_[k]->cost;
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

bool RiccatiSolver::prepareDerivatives() {
  if (!datas_at_current_) {
    for (int k = 0; k < N_; ++k) {
      problem_->running(k).calc(*datas_[k], cur_.xs[k], cur_.ws[k], cur_.theta);
      problem_->state().difference(cur_.xs[k + 1], datas_[k]->xnext, cur_.gaps[k + 1]);
    }
    problem_->terminal().calc(*terminal_data_, cur_.xs[N_], Eigen::VectorXd(), cur_.theta);
    datas_at_current_ = true;
  }
  problem_->terminal().calcDiff(*terminal_data_, cur_.xs[N_], Eigen::VectorXd(), cur_.theta);
  const StageData& t = *terminal_data_;
  const bool finite = t.r.allFinite() && t.R_x.allFinite() && t.R_theta.allFinite();
  // The arrival residual's Jacobian w.r.t. x_0 (tangent space at x_0).
  const ArrivalPrior& arrival = problem_->arrival();
  problem_->state().differenceJacobians(arrival.x_mean, cur_.xs[0], J_unused_, J_next_unused_);
  arrival_J_.noalias() = arrival.x_sqrt_info * J_next_unused_;
  arrivalCost(cur_);  // arrival_r_ and prior_r_ at the current guess
  return finite;
}

bool RiccatiSolver::differentiateKnot(int k) {
  StageData& d = *datas_[k];
  problem_->running(k).calcDiff(d, cur_.xs[k], cur_.ws[k], cur_.theta);
  linearizeGap(d, k);
  // A NaN or an infinity anywhere makes the sum NaN or infinite: one vectorized pass each
  // (allFinite's test of every entry took ~5 % of an iteration).
  auto finite = [](const auto& m) { return std::isfinite(m.sum()); };
  return finite(d.r) && finite(d.R_x) && finite(d.R_w) && finite(d.R_theta) && finite(d.F_x) &&
         finite(d.F_w) && finite(d.F_theta) && finite(d.xnext) &&
         (!structured_[k] || (finite(d.A_q) && finite(d.B_q) && finite(d.S_q)));
}

// Knot k's derivatives right before its backward step, from the last knot to the first: the
// backward step reads the knot's data while it is still in cache (a go2 knot's data is ~150 kB,
// the horizon's far more than the caches). On a failed factorization the remaining knots are
// still differentiated, for the retries of backwardPass at a larger regularization.
bool RiccatiSolver::derivativesAndBackwardPass(bool& finite) {
  using Clock = std::chrono::steady_clock;
  auto t0 = Clock::now();
  finite = prepareDerivatives();
  auto t1 = Clock::now();
  pass_derivative_seconds_ = std::chrono::duration<double>(t1 - t0).count();
  pass_backward_seconds_ = 0;
  if (!finite) return false;
  terminalValue();
  bool factorized = true;
  for (int k = N_ - 1; k >= 0; --k) {
    t0 = Clock::now();
    finite = differentiateKnot(k);
    t1 = Clock::now();
    pass_derivative_seconds_ += std::chrono::duration<double>(t1 - t0).count();
    if (!finite) return false;
    if (factorized) {
      factorized = backwardStep(k);
      pass_backward_seconds_ += secondsSince(t1);
    }
  }
  return factorized;
}

// The gap's exact linearization (see lin_gaps_): F <- -D0^{-1} D1 F, fbar <- -D0^{-1} fbar, on the
// curved blocks only; elsewhere D0 = -I and D1 = I leave F and the gap as they are.
void RiccatiSolver::linearizeGap(StageData& d, int k) {
  lin_gaps_[k + 1] = cur_.gaps[k + 1];
  const std::vector<TangentBlock>& blocks = problem_->state().curvedBlocks();
  if (blocks.empty()) return;
  problem_->state().curvedDifferenceJacobians(cur_.xs[k + 1], d.xnext, D0_, D1_);
  auto mapRows = [&](Eigen::MatrixXd& F, const TangentBlock& b, const Eigen::MatrixXd& T) {
    if (b.size == 6) {  // a free flyer: fixed sizes (the dynamic-size product's setup dominates)
      auto rows = block_rows_.topLeftCorner<6, Eigen::Dynamic>(6, F.cols());
      rows.noalias() = T.topLeftCorner<6, 6>() * F.middleRows<6>(b.start);
      F.middleRows<6>(b.start) = rows;
      return;
    }
    auto rows = block_rows_.topLeftCorner(b.size, F.cols());
    rows.noalias() = T * F.middleRows(b.start, b.size);
    F.middleRows(b.start, b.size) = rows;
  };
  // A_q, B_q, S_q are block diagonal: only their block's columns change.
  auto mapBlock = [&](Eigen::MatrixXd& M, const TangentBlock& b, const Eigen::MatrixXd& T) {
    auto rows = block_rows_.topLeftCorner(b.size, b.size);
    rows.noalias() = T * M.block(b.start, b.start, b.size, b.size);
    M.block(b.start, b.start, b.size, b.size) = rows;
  };
  for (std::size_t i = 0; i < blocks.size(); ++i) {
    const TangentBlock& b = blocks[i];
    Eigen::PartialPivLU<Eigen::MatrixXd>& lu = block_lu_[i];
    Eigen::MatrixXd& T = block_map_[i];
    lu.compute(D0_.block(b.start, b.start, b.size, b.size));
    T.noalias() = lu.solve(D1_.block(b.start, b.start, b.size, b.size));
    T = -T;
    mapRows(d.F_x, b, T);
    mapRows(d.F_w, b, T);
    mapRows(d.F_theta, b, T);
    if (structured_[k]) {  // the same rows of the structure's q-row terms (StageData)
      mapBlock(d.A_q, b, T);
      mapBlock(d.B_q, b, T);
      mapBlock(d.S_q, b, T);
    }
    auto gap = block_gap_.head(b.size);
    gap.noalias() = lu.solve(cur_.gaps[k + 1].segment(b.start, b.size));
    lin_gaps_[k + 1].segment(b.start, b.size) = -gap;
  }
}

bool RiccatiSolver::backwardPass() {
  terminalValue();
  for (int k = N_ - 1; k >= 0; --k)
    if (!backwardStep(k)) return false;
  return true;
}

void RiccatiSolver::terminalValue() {
  auto no_xw = Qxw_.leftCols(0);  // a terminal stage has no w
  auto no_ww = Qww_.topLeftCorner(0, 0);
  auto no_wt = Qwt_.topRows(0);
  auto no_w = Qw_.head(0);
  GaussNewtonTerms terminal{Vxx_next_, no_xw,    no_ww, Vxt_next_, no_wt,
                            Vtt_next_, Vx_next_, no_w,  Vt_next_};
  problem_->terminal().gaussNewton(*terminal_data_, terminal);
}

bool RiccatiSolver::backwardStep(int k) {
  const StageData& d = *datas_[k];
  const int nw = problem_->running(k).nw();
  const Eigen::VectorXd& fbar = lin_gaps_[k + 1];
  auto Qxw = Qxw_.leftCols(nw);
  auto Qww = Qww_.topLeftCorner(nw, nw);
  auto Qwt = Qwt_.topRows(nw);
  auto Qw = Qw_.head(nw);
  Eigen::MatrixXd& policy = policy_[k];  // [L | Y | Y_t | y], one block per knot

  // Value gradients deflected by the gap: V at dx' = (linear part) + fbar.
  vx_plus_ = Vx_next_;
  vx_plus_.noalias() += Vxx_next_ * fbar;
  Vt_next_.noalias() += Vxt_next_.transpose() * fbar;

  // The stage's own cost terms (R^T R, R^T r), then the value function carried through F.
  // Of the symmetric blocks only the lower triangles of Q_xx and Q_ww are formed: Q_ww is read
  // by its Cholesky factorization, Q_xx by the lower-triangular update of V_xx below.
  GaussNewtonTerms terms{Qxx_, Qxw, Qww, Qxt_, Qwt, Qtt_, Qx_, Qw, Qt_};
  problem_->running(k).gaussNewton(d, terms);
  if (structured_[k]) {
    // w_q first, on the next value function (it enters only through x' = y ⊕ w_q), then w_v.
    const int nwv = nw - nv_;
    if (!eliminateConfigurationNoise(d, policy)) return false;
    structuredQ(d, nw);
    Qww.bottomRightCorner(nwv, nwv).diagonal().array() += mu_;
    policy.block(nv_, nw, nwv, ndx_) = Qxw.rightCols(nwv).transpose();
    policy.block(nv_, nw + ndx_, nwv, np_) = Qwt.bottomRows(nwv);
    policy.col(nw + ndx_ + np_).segment(nv_, nwv) = Qw.tail(nwv);
    policy.block(nv_, nv_, nwv, nwv).triangularView<Eigen::Lower>() =
        Qww.bottomRightCorner(nwv, nwv);
    if (!eliminate(policy, nv_, nwv, Qxx_, Qxt_, Qtt_, Qx_, Qt_)) return false;
  } else {
    auto FwV = FwV_.topRows(nw);
    G_ = Vxt_next_;  // V_xx' F_theta + V_xtheta'
    G_.noalias() += Vxx_next_ * d.F_theta;
    FxV_.noalias() = d.F_x.transpose() * Vxx_next_;
    FwV.noalias() = d.F_w.transpose() * Vxx_next_;
    Qxx_.triangularView<Eigen::Lower>() += FxV_ * d.F_x;
    Qxw.noalias() += FxV_ * d.F_w;
    Qww.triangularView<Eigen::Lower>() += FwV * d.F_w;
    Qxt_.noalias() += d.F_x.transpose() * G_;
    Qwt.noalias() += d.F_w.transpose() * G_;
    // Both cross terms F_theta' V_xtheta' and V_xtheta'^T F_theta: eq. 23 prints only one.
    Qtt_ += Vtt_next_;
    Qtt_.noalias() += d.F_theta.transpose() * G_;
    Qtt_.noalias() += Vxt_next_.transpose() * d.F_theta;
    Qx_.noalias() += d.F_x.transpose() * vx_plus_;
    Qw.noalias() += d.F_w.transpose() * vx_plus_;
    Qt_ += Vt_next_;
    Qt_.noalias() += d.F_theta.transpose() * vx_plus_;
    Qww.diagonal().array() += mu_;
    policy.middleCols(nw, ndx_) = Qxw.transpose();
    policy.middleCols(nw + ndx_, np_) = Qwt;
    policy.col(nw + ndx_ + np_) = Qw;
    policy.leftCols(nw).triangularView<Eigen::Lower>() = Qww;
    if (!eliminate(policy, 0, nw, Qxx_, Qxt_, Qtt_, Qx_, Qt_)) return false;
  }
  // The V's are symmetric by construction only in exact arithmetic: the lower triangles are
  // copied into the upper ones. Session 6 found that a slightly asymmetric V_xx grows through
  // F_x^T V F_x (on go1 at dt 0.01 to an eigenvalue of -1.5e9 of 2.6e9 within a few hundred
  // knots), which no regularization saved.
  copyLowerToUpper(Qxx_);
  copyLowerToUpper(Qtt_);
  // Q's blocks now hold this knot's value; Q's are rewritten by the next stage's gaussNewton.
  Qxx_.swap(Vxx_next_);
  Qxt_.swap(Vxt_next_);
  Qtt_.swap(Vtt_next_);
  Qx_.swap(Vx_next_);
  Qt_.swap(Vt_next_);
  return true;
}

// H_uu = L L^T (its lower triangle in the policy's L block on entry), and with Y = L^{-1} H_xu^T,
// Y_t = L^{-1} H_utheta, y = L^{-1} g_u (their blocks hold H_xu^T, H_utheta, g_u on entry) the
// model minimized over u: H_xx -= Y^T Y, H_xtheta -= Y^T Y_t, H_thetatheta -= Y_t^T Y_t (lower
// triangles of the symmetric ones), g_x -= Y^T y, g_theta -= Y_t^T y. The same as H + H_xu K etc.
// with K = -L^{-T} Y, in fewer products, and H_xx as a symmetric rank update.
bool RiccatiSolver::eliminate(Eigen::MatrixXd& policy, int first, int size, Eigen::MatrixXd& Hxx,
                              Eigen::MatrixXd& Hxt, Eigen::MatrixXd& Htt, Eigen::VectorXd& gx,
                              Eigen::VectorXd& gt) const {
  const int nw = static_cast<int>(policy.rows());
  Eigen::Ref<Eigen::MatrixXd> L_storage = policy.block(first, first, size, size);
  const Eigen::LLT<Eigen::Ref<Eigen::MatrixXd>> llt(L_storage);  // in place: L_storage = L
  if (llt.info() != Eigen::Success) return false;
  const auto L = L_storage.triangularView<Eigen::Lower>();
  auto Y = policy.block(first, nw, size, ndx_);
  auto Yt = policy.block(first, nw + ndx_, size, np_);
  auto y = policy.col(nw + ndx_ + np_).segment(first, size);
  L.solveInPlace(Y);
  L.solveInPlace(Yt);
  L.solveInPlace(y);
  Hxx.selfadjointView<Eigen::Lower>().rankUpdate(Y.transpose(), -1.0);
  Hxt.noalias() -= Y.transpose() * Yt;
  Htt.selfadjointView<Eigen::Lower>().rankUpdate(Yt.transpose(), -1.0);
  gx.noalias() -= Y.transpose() * y;
  gt.noalias() -= Yt.transpose() * y;
  return true;
}

// x' = y ⊕ w_q with y the state before the configuration noise (StageData's structure: F_w's
// w_q columns are [B_q; 0] and w_q's residual rows touch nothing else), so w_q is eliminated
// from the next value at y, V(y + [B_q; 0] dw_q) + the w_q rows' cost, before the products with
// F: H_uu = l_qq + mu + B_q^T V_qq B_q, H_xu = V_{:,q} B_q, H_utheta = B_q^T V_{q,theta},
// g_u = l_q + B_q^T (V_x + V fbar)_q. Two eliminations of nv then cost about two thirds of one
// of 2 nv (in the size: the Cholesky factor is cubic, Y's solve quadratic, the rank update
// linear).
bool RiccatiSolver::eliminateConfigurationNoise(const StageData& d, Eigen::MatrixXd& policy) {
  const int nw = static_cast<int>(policy.rows()), nv = nv_;
  auto Y = policy.block(0, nw, nv, ndx_);
  auto Yt = policy.block(0, nw + ndx_, nv, np_);
  auto y = policy.col(nw + ndx_ + np_).head(nv);
  auto Huu = policy.topLeftCorner(nv, nv);
  Y.setZero();  // B_q^T V_{q,:}
  addBlockDiagonalTransposeTimes(d.B_q, Vxx_next_.topRows(nv), Y);
  Huu.triangularView<Eigen::Lower>() = Qww_.topLeftCorner(nv, nv);
  Huu.diagonal().array() += mu_;
  addTimesBlockDiagonal(Y.leftCols(nv), d.B_q, Huu);  // (upper triangle: unused)
  Yt.setZero();
  addBlockDiagonalTransposeTimes(d.B_q, Vxt_next_.topRows(nv), Yt);
  y = Qw_.head(nv);
  addBlockDiagonalTimes(d.B_q, vx_plus_.head(nv), y, true);
  if (!eliminate(policy, 0, nv, Vxx_next_, Vxt_next_, Vtt_next_, vx_plus_, Vt_next_)) return false;
  copyLowerToUpper(Vxx_next_);  // read whole by structuredQ
  copyLowerToUpper(Vtt_next_);
  return true;
}

void RiccatiSolver::addTimesBlockDiagonal(const Eigen::Ref<const Eigen::MatrixXd>& X,
                                          const Eigen::MatrixXd& M,
                                          Eigen::Ref<Eigen::MatrixXd> out) const {
  for (const Segment& s : segments_) {
    if (!s.block)
      out.middleCols(s.start, s.size) +=
          X.middleCols(s.start, s.size) * M.diagonal().segment(s.start, s.size).asDiagonal();
    else if (!addBlockTimes<6>(s.start, s.size, X, M, out) &&
             !addBlockTimes<3>(s.start, s.size, X, M, out))
      out.middleCols(s.start, s.size).noalias() +=
          X.middleCols(s.start, s.size).lazyProduct(M.block(s.start, s.start, s.size, s.size));
  }
}

void RiccatiSolver::addBlockDiagonalTimes(const Eigen::MatrixXd& M,
                                          const Eigen::Ref<const Eigen::VectorXd>& x,
                                          Eigen::Ref<Eigen::VectorXd> out, bool transposed) const {
  for (const Segment& s : segments_) {
    if (s.block) {
      const auto B = M.block(s.start, s.start, s.size, s.size);
      if (transposed)
        out.segment(s.start, s.size).noalias() += B.transpose() * x.segment(s.start, s.size);
      else
        out.segment(s.start, s.size).noalias() += B * x.segment(s.start, s.size);
    } else {
      out.segment(s.start, s.size) +=
          M.diagonal().segment(s.start, s.size).cwiseProduct(x.segment(s.start, s.size));
    }
  }
}

void RiccatiSolver::addBlockDiagonalTransposeTimes(const Eigen::MatrixXd& M,
                                                   const Eigen::Ref<const Eigen::MatrixXd>& X,
                                                   Eigen::Ref<Eigen::MatrixXd> out) const {
  for (const Segment& s : segments_) {
    if (!s.block)
      out.middleRows(s.start, s.size) +=
          M.diagonal().segment(s.start, s.size).asDiagonal() * X.middleRows(s.start, s.size);
    else if (!addBlockTransposeTimes<6>(s.start, s.size, M, X, out) &&
             !addBlockTransposeTimes<3>(s.start, s.size, M, X, out))
      out.middleRows(s.start, s.size).noalias() += M.block(s.start, s.start, s.size, s.size)
                                                       .transpose()
                                                       .lazyProduct(X.middleRows(s.start, s.size));
  }
}

// Q's terms through V' = Vxx_next_ (w_q already eliminated from it) for the w_v columns, when
// F = P + S D (StageData's semi-implicit structure), with S = [S_q; I], D the rows of v' and P
// nonzero only in the q-rows (A_q for x): with Z = V' S, F^T V' = P^T V' + D^T Z^T and
// F_a^T V' F_b = (F_a^T V') P_b + (F_a^T V' S) D_b. The dense products with F cost n^3 each
// (n = 2 nv); these cost n^2 nv or less, and Q_ww's upper triangle is skipped.
void RiccatiSolver::structuredQ(const StageData& d, int nw) {
  const int nv = nv_, nwv = nw - nv_;
  const Eigen::MatrixXd& V = Vxx_next_;
  const auto Dx = d.F_x.bottomRows(nv);
  const auto Dwv = d.F_w.bottomRightCorner(nv, nwv);
  const auto Dt = d.F_theta.bottomRows(nv);
  auto Qxw = Qxw_.middleCols(nv, nwv);
  auto Qww = Qww_.block(nv, nv, nwv, nwv);
  auto Qwt = Qwt_.middleRows(nv, nwv);
  auto Qw = Qw_.segment(nv, nwv);
  auto FwV = FwV_.topRows(nwv);

  Z_ = V.rightCols(nv);
  addTimesBlockDiagonal(V.leftCols(nv), d.S_q, Z_);
  // F_x^T V' = [A_q^T V'_q; 0] + D_x^T Z^T, and F_x^T V' S
  FxV_.setZero();
  addBlockDiagonalTransposeTimes(d.A_q, V.topRows(nv), FxV_.topRows(nv));
  FxV_.noalias() += Dx.transpose() * Z_.transpose();
  FxVS_ = FxV_.rightCols(nv);
  addTimesBlockDiagonal(FxV_.leftCols(nv), d.S_q, FxVS_);
  // Q_xx (lower) and Q_xw
  addTimesBlockDiagonal(FxV_.leftCols(nv), d.A_q, Qxx_.leftCols(nv));
  Qxx_.triangularView<Eigen::Lower>() += FxVS_ * Dx;
  Qxw.noalias() += FxVS_ * Dwv;
  // F_w^T V' = D_wv^T Z^T; Q_ww's lower triangle
  FwV.noalias() = Dwv.transpose() * Z_.transpose();
  auto FwVS = FwVS_.topRows(nwv);
  FwVS = FwV.rightCols(nv);
  addTimesBlockDiagonal(FwV.leftCols(nv), d.S_q, FwVS);
  Qww.triangularView<Eigen::Lower>() += FwVS * Dwv;
  // theta: G = V_xtheta' + V' F_theta = V_xtheta' + Z D_theta, and S^T G
  G_ = Vxt_next_;
  G_.noalias() += Z_ * Dt;
  SG_ = G_.bottomRows(nv);
  addBlockDiagonalTransposeTimes(d.S_q, G_.topRows(nv), SG_);
  addBlockDiagonalTransposeTimes(d.A_q, G_.topRows(nv), Qxt_.topRows(nv));
  Qxt_.noalias() += Dx.transpose() * SG_;
  Qwt.noalias() += Dwv.transpose() * SG_;
  // Q_thetatheta += V_thetatheta' + F_theta^T G + V_xtheta'^T F_theta (both cross terms)
  Qtt_ += Vtt_next_;
  Qtt_.noalias() += Dt.transpose() * SG_;
  SVt_ = Vxt_next_.bottomRows(nv);
  addBlockDiagonalTransposeTimes(d.S_q, Vxt_next_.topRows(nv), SVt_);
  Qtt_.noalias() += SVt_.transpose() * Dt;
  // Gradients: F^T (V_x + V fbar) = P^T vx_plus + D^T S^T vx_plus
  tmp_v_ = vx_plus_.tail(nv);
  addBlockDiagonalTimes(d.S_q, vx_plus_.head(nv), tmp_v_, true);
  addBlockDiagonalTimes(d.A_q, vx_plus_.head(nv), Qx_.head(nv), true);
  Qx_.noalias() += Dx.transpose() * tmp_v_;
  Qw.noalias() += Dwv.transpose() * tmp_v_;
  Qt_ += Vt_next_;
  Qt_.noalias() += Dt.transpose() * tmp_v_;
}

void RiccatiSolver::applyPolicy(const Eigen::MatrixXd& policy, int first, int size, double scale,
                                const Eigen::VectorXd& z, Eigen::Ref<Eigen::VectorXd> e) const {
  const int nw = static_cast<int>(policy.rows());
  e.noalias() = scale * policy.col(nw + ndx_ + np_).segment(first, size);
  e.noalias() += policy.block(first, nw, size, ndx_) * z;
  if (np_ > 0) e.noalias() += scale * policy.block(first, nw + ndx_, size, np_) * dtheta_;
  policy.block(first, first, size, size).triangularView<Eigen::Lower>().transpose().solveInPlace(e);
}

void RiccatiSolver::policyCorrection(int k, double scale, const Eigen::VectorXd& dx) {
  const Eigen::MatrixXd& policy = policy_[k];
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

bool RiccatiSolver::solveArrival() {
  const ArrivalPrior& arrival = problem_->arrival();
  Hxx_ = Vxx_next_;
  Hxx_.noalias() += arrival_J_.transpose() * arrival_J_;
  Hxx_.diagonal().array() += mu_;
  Hxt_ = Vxt_next_;
  Htt_ = Vtt_next_;
  Htt_.noalias() += arrival.theta_sqrt_info.transpose() * arrival.theta_sqrt_info;
  Htt_.diagonal().array() += mu_;
  gx_ = Vx_next_;
  gx_.noalias() += arrival_J_.transpose() * arrival_r_;
  gt_ = Vt_next_;
  gt_.noalias() += arrival.theta_sqrt_info.transpose() * prior_r_;

  Hxx_llt_.compute(Hxx_);
  if (Hxx_llt_.info() != Eigen::Success) return false;
  HxxInvGx_ = gx_;
  Hxx_llt_.solveInPlace(HxxInvGx_);
  dtheta_.setZero();
  theta_covariance_.setZero();
  nullity_ = 0;
  if (np_ > 0) {
    HxxInvHxt_ = Hxt_;
    Hxx_llt_.solveInPlace(HxxInvHxt_);
    // Schur complement in theta after eliminating dx_0: the information of theta.
    S_ = Htt_;
    S_.noalias() -= Hxt_.transpose() * HxxInvHxt_;
    gs_ = gt_;
    gs_.noalias() -= Hxt_.transpose() * HxxInvGx_;
    S_tri_.compute(S_);
    S_diag_ = S_tri_.diagonal();
    S_subdiag_ = S_tri_.subDiagonal();
    S_tri_.matrixQ().evalTo(S_Q_, S_workspace_);
    S_eig_.computeFromTridiagonal(S_diag_, S_subdiag_, Eigen::ComputeEigenvectors);
    if (S_eig_.info() != Eigen::Success) return false;
    S_vectors_.noalias() = S_Q_ * S_eig_.eigenvectors();
    const Eigen::VectorXd& lambda = S_eig_.eigenvalues();
    const Eigen::MatrixXd& V = S_vectors_;
    const double threshold = std::max(options_.nullspace_tolerance * lambda.maxCoeff(),
                                      std::numeric_limits<double>::min());
    // Step on the range of S (eq. 31: none along an unobservable direction), within the trust
    // radius: dtheta(nu) = -sum_i v_i (v_i . g) / (lambda_i + nu), the smallest nu >= 0 with
    // |dtheta(nu)| <= radius (the norm decreases with nu: bisection).
    auto stepNorm2 = [&](double nu) {
      double sum = 0;
      for (int i = 0; i < np_; ++i) {
        if (lambda(i) <= threshold) continue;
        const double c = V.col(i).dot(gs_) / (lambda(i) + nu);
        sum += c * c;
      }
      return sum;
    };
    double nu = 0;
    theta_at_boundary_ = false;
    const double radius2 = theta_radius_ * theta_radius_;
    if (stepNorm2(0) > radius2) {
      theta_at_boundary_ = true;
      double lo = 0, hi = std::max(1.0, gs_.norm() / theta_radius_);
      while (stepNorm2(hi) > radius2) hi *= 2;
      for (int it = 0; it < 100 && hi - lo > 1e-12 * hi; ++it) {
        const double mid = 0.5 * (lo + hi);
        (stepNorm2(mid) > radius2 ? lo : hi) = mid;
      }
      nu = hi;
    }
    for (int i = 0; i < np_; ++i) {
      if (lambda(i) <= threshold) {
        ++nullity_;
        continue;
      }
      dtheta_.noalias() -= (V.col(i).dot(gs_) / (lambda(i) + nu)) * V.col(i);
      theta_covariance_.noalias() += (1.0 / lambda(i)) * V.col(i) * V.col(i).transpose();
    }
    dxs_[0] = -HxxInvGx_;
    dxs_[0].noalias() -= HxxInvHxt_ * dtheta_;
  } else {
    dxs_[0] = -HxxInvGx_;
  }
  return true;
}

Eigen::MatrixXd RiccatiSolver::thetaNullspace() const {
  if (np_ == 0 || nullity_ == 0) return Eigen::MatrixXd(np_, 0);
  // Eigenvalues are ascending: the nullspace is the first nullity_ eigenvectors.
  return S_vectors_.leftCols(nullity_);
}

void RiccatiSolver::linearRollout() {
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

bool RiccatiSolver::computeDirection() {
  bool finite = true;
  if (!derivativesAndBackwardPass(finite)) return false;
  if (!solveArrival()) return false;
  linearRollout();
  return true;
}

void RiccatiSolver::rolloutTrial(double alpha) {
  const StateManifold& state = problem_->state();
  datas_at_current_ = false;  // the stages' data now hold trial points
  trial_.theta = cur_.theta;
  trial_.theta.noalias() += alpha * dtheta_;
  if (options_.rollout == Rollout::MultipleShooting) {
    for (int k = 0; k <= N_; ++k) {
      tangent_ = alpha * dxs_[k];
      state.integrate(cur_.xs[k], tangent_, trial_.xs[k]);
    }
    for (int k = 0; k < N_; ++k) {
      trial_.ws[k] = cur_.ws[k];
      trial_.ws[k].noalias() += alpha * dws_[k];
    }
    evaluate(trial_);
    return;
  }
  // Single shooting and feasibility-driven: a nonlinear rollout under the feedback policy.
  tangent_ = alpha * dxs_[0];
  state.integrate(cur_.xs[0], tangent_, trial_.xs[0]);
  double cost = arrivalCost(trial_);
  double norm1 = 0, max_gap = 0;
  const double keep = options_.rollout == Rollout::FeasibilityDriven ? 1 - alpha : 0;
  for (int k = 0; k < N_; ++k) {
    state.difference(cur_.xs[k], trial_.xs[k], tangent_);
    policyCorrection(k, alpha, tangent_);
    trial_.ws[k] = cur_.ws[k] - policy_tmp_.head(cur_.ws[k].size());
    problem_->running(k).calc(*datas_[k], trial_.xs[k], trial_.ws[k], trial_.theta);
    cost += datas_[k]->cost;
    if (keep > 0) {
      tangent_ = -keep * cur_.gaps[k + 1];
      state.integrate(datas_[k]->xnext, tangent_, trial_.xs[k + 1]);
      state.difference(trial_.xs[k + 1], datas_[k]->xnext, trial_.gaps[k + 1]);
    } else {
      trial_.xs[k + 1] = datas_[k]->xnext;
      trial_.gaps[k + 1].setZero();
    }
    norm1 += trial_.gaps[k + 1].lpNorm<1>();
    max_gap = std::max(max_gap, trial_.gaps[k + 1].lpNorm<Eigen::Infinity>());
  }
  problem_->terminal().calc(*terminal_data_, trial_.xs[N_], Eigen::VectorXd(), trial_.theta);
  trial_.cost = cost + terminal_data_->cost;
  trial_.gap_norm1 = norm1;
  trial_.max_gap = max_gap;
}

void RiccatiSolver::printProgress(int iteration, double alpha) const {
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

const RiccatiSummary& RiccatiSolver::solve() {
  const auto start = std::chrono::steady_clock::now();
  summary_ = RiccatiSummary();
  summary_.cost_history.reserve(options_.max_iterations + 1);
  summary_.gap_history.reserve(options_.max_iterations + 1);
  summary_.step_history.reserve(options_.max_iterations);
  merit_memory_.clear();
  theta_radius_ = options_.theta_trust_radius;
  // Single shooting needs a feasible guess: close every gap by rolling the dynamics out.
  if (options_.rollout == Rollout::SingleShooting) closeGaps(cur_);
  evaluate(cur_);
  bool direction_at_current = false;  // the last direction (and covariance) was computed at cur_
  summary_.status = RiccatiSummary::Status::MaxIterations;
  for (int iteration = 0; iteration < options_.max_iterations; ++iteration) {
    summary_.iterations = iteration;
    summary_.cost_history.push_back(cur_.cost);
    summary_.gap_history.push_back(cur_.max_gap);

    bool finite = true;
    bool direction = derivativesAndBackwardPass(finite);
    summary_.derivative_seconds += pass_derivative_seconds_;
    summary_.backward_seconds += pass_backward_seconds_;
    if (!finite) {
      summary_.status = RiccatiSummary::Status::NumericalFailure;
      summary_.message = "NaN or infinity in the residuals or derivatives at iteration " +
                         std::to_string(iteration);
      break;
    }
    auto t0 = std::chrono::steady_clock::now();
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
      break;
    }
    linearRollout();
    summary_.backward_seconds += secondsSince(t0);
    direction_at_current = true;

    // A step the theta trust region shortened says nothing about stationarity: its d1 shrinks with
    // the radius (a converged-looking stop 4e-6 above the optimum on go2,
    // tests/reference_test.cpp).
    if (std::abs(d1_) <= options_.tolerance * (1 + cur_.cost) &&
        cur_.max_gap <= options_.gap_tolerance && !theta_at_boundary_) {
      summary_.status = RiccatiSummary::Status::Converged;
      printProgress(iteration, 0);
      break;
    }

    // Merit penalty (eq. 38) and the nonmonotone reference.
    const double gap1 = options_.rollout == Rollout::SingleShooting ? 0 : cur_.gap_norm1;
    if (gap1 > 0) {
      penalty_ = std::max(options_.penalty_decrease * penalty_,
                          (d1_ + 0.5 * d2_) / ((1 - options_.penalty_rho) * gap1));
    }
    const double merit = cur_.cost + penalty_ * gap1;
    const double cost_before = cur_.cost;
    // Nonmonotone reference: the largest merit of the last accepted iterates, at today's penalty.
    double reference = merit;
    for (const auto& [cost, gaps] : merit_memory_)
      reference = std::max(reference, cost + penalty_ * gaps);

    t0 = std::chrono::steady_clock::now();
    double accepted = 0;
    for (double alpha = 1; alpha >= options_.min_step; alpha *= 0.5) {
      try {
        rolloutTrial(alpha);
      } catch (const InputError&) {
        // A trial theta outside the parametrization's finite range (exp overflow): too long.
        continue;
      }
      const double trial_gap1 = options_.rollout == Rollout::SingleShooting ? 0 : trial_.gap_norm1;
      const double trial_merit = trial_.cost + penalty_ * trial_gap1;
      const double predicted =
          std::min(alpha * d1_ + 0.5 * alpha * alpha * d2_ - alpha * penalty_ * gap1, 0.0);
      if (std::isfinite(trial_merit) && trial_merit <= reference + options_.armijo * predicted &&
          trial_merit < reference) {
        accepted = alpha;
        break;
      }
    }
    summary_.forward_seconds += secondsSince(t0);
    summary_.step_history.push_back(accepted);
    printProgress(iteration, accepted);
    if (accepted > 0) {
      std::swap(cur_.xs, trial_.xs);
      std::swap(cur_.ws, trial_.ws);
      std::swap(cur_.gaps, trial_.gaps);
      cur_.theta.swap(trial_.theta);
      cur_.cost = trial_.cost;
      cur_.gap_norm1 = trial_.gap_norm1;
      cur_.max_gap = trial_.max_gap;
      datas_at_current_ = true;  // the accepted trial was the last one evaluated
      direction_at_current = false;
      if (options_.nonmonotone_memory > 0) {
        if (static_cast<int>(merit_memory_.size()) == options_.nonmonotone_memory)
          merit_memory_.erase(merit_memory_.begin());
        merit_memory_.emplace_back(cost_before, gap1);
      }
      if (accepted == 1)
        mu_ = std::max(options_.min_regularization, mu_ / options_.regularization_factor);
      if (accepted == 1 && theta_at_boundary_)
        theta_radius_ = std::min(options_.max_theta_trust_radius, 2 * theta_radius_);
      else if (accepted < 1)
        theta_radius_ = std::max(options_.min_theta_trust_radius,
                                 0.5 * accepted * std::min(theta_radius_, dtheta_.norm()));
    } else {
      theta_radius_ =
          std::max(options_.min_theta_trust_radius, 0.25 * std::min(theta_radius_, dtheta_.norm()));
      if (mu_ >= options_.max_regularization) {
        summary_.status = RiccatiSummary::Status::LineSearchFailed;
        summary_.message = "no step decreased the merit at regularization " + std::to_string(mu_);
        break;
      }
      mu_ = std::min(options_.max_regularization,
                     std::max(mu_ * options_.regularization_factor, 1e-12));
    }
    summary_.iterations = iteration + 1;
  }
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
  summary_.total_seconds = secondsSince(start);
  if (summary_.status == RiccatiSummary::Status::MaxIterations)
    summary_.message =
        "not converged in " + std::to_string(options_.max_iterations) + " iterations";
  return summary_;
}

}  // namespace heft::estimation
