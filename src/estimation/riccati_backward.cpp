// RiccatiSolver's derivative and backward passes: the stages' derivatives with the gap's exact
// linearization, and the Riccati recursion of the value function from the last knot to the first
// (dense, or through the stages' semi-implicit structure).
#include <algorithm>
#include <cmath>

#include "estimation/riccati_impl.hpp"

namespace heft::estimation {
namespace {

// Makes m symmetric from its lower triangle, in place.
void copyLowerToUpper(Eigen::Ref<Eigen::MatrixXd> m) {
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

bool RiccatiSolver::Impl::prepareDerivatives() {
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

bool RiccatiSolver::Impl::differentiateKnot(int k) {
  StageData& d = *datas_[k];
  problem_->running(k).calcDiff(d, cur_.xs[k], cur_.ws[k], cur_.theta);
  linearizeGap(d, k);
  // A NaN or an infinity anywhere makes the sum NaN or infinite: one vectorized pass each
  // (allFinite's test of every entry took ~5 % of an iteration).
  auto finite = [](const auto& m) { return std::isfinite(m.sum()); };
  return finite(d.r) && finite(d.R_x) && finite(d.R_w) && finite(d.R_theta) && finite(d.F_x) &&
         finite(d.F_w) && finite(d.F_theta) && finite(d.xnext) &&
         (!structured_[k] || (finite(d.A_q) && finite(d.B_q) && finite(d.S_q))) &&
         (!constrained_[k] || (finite(d.h) && finite(d.H_x) && finite(d.H_w) && finite(d.H_theta)));
}

// Knot k's derivatives right before its backward step, from the last knot to the first: the
// backward step reads the knot's data while it is still in cache (a go2 knot's data is ~150 kB,
// the horizon's far more than the caches). On a failed factorization the remaining knots are
// still differentiated, for the retries of backwardPass at a larger regularization.
bool RiccatiSolver::Impl::derivativesAndBackwardPass(bool& finite) {
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
void RiccatiSolver::Impl::linearizeGap(StageData& d, int k) {
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

bool RiccatiSolver::Impl::backwardPass() {
  terminalValue();
  for (int k = N_ - 1; k >= 0; --k)
    if (!backwardStep(k)) return false;
  return true;
}

void RiccatiSolver::Impl::terminalValue() {
  auto no_xw = Qxw_.leftCols(0);  // a terminal stage has no w
  auto no_ww = Qww_.topLeftCorner(0, 0);
  auto no_wt = Qwt_.topRows(0);
  auto no_w = Qw_.head(0);
  GaussNewtonTerms terminal{Vxx_next_, no_xw,    no_ww, Vxt_next_, no_wt,
                            Vtt_next_, Vx_next_, no_w,  Vt_next_};
  problem_->terminal().gaussNewton(*terminal_data_, terminal);
}

bool RiccatiSolver::Impl::backwardStep(int k) {
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
    if (constrained_[k]) {
      if (!eliminateEqualities(k, nw)) return false;
    } else {
      policy.middleCols(nw, ndx_) = Qxw.transpose();
      policy.middleCols(nw + ndx_, np_) = Qwt;
      policy.col(nw + ndx_ + np_) = Qw;
      policy.leftCols(nw).triangularView<Eigen::Lower>() = Qww;
      if (!eliminate(policy, 0, nw, Qxx_, Qxt_, Qtt_, Qx_, Qt_)) return false;
    }
  }
  // The V's are symmetric by construction only in exact arithmetic: the lower triangles are
  // copied into the upper ones. Without that, a slightly asymmetric V_xx grows through
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

// The equality rows H_x dx + H_w dw + H_t dtheta + h = 0 (bayesian-sysid eqs. 74-79) on the
// nullspace of H_w: with H_w^T = [Y Z] [R; 0] (QR), dw = Y dw_y + Z dz and R^T dw_y = -(h + H_x dx
// + H_t dtheta), so dw = c + C_x dx + C_t dtheta + Z dz with [C_x C_t c] = -Y R^{-T} [H_x H_t h].
// Substituted into Q (Q_ww full, T = Q_ww [C_x C_t c]):
//   Q_xx += Q_xw C_x + C_x^T Q_xw^T + C_x^T T_x,   Q_xt += Q_xw C_t + C_x^T Q_wt + C_x^T T_t,
//   Q_tt += Q_wt^T C_t + C_t^T Q_wt + C_t^T T_t,   Q_x += C_x^T Q_w + Q_xw c + C_x^T T_c,
//   Q_t += C_t^T Q_w + Q_wt^T c + C_t^T T_c,
// and dz's terms H_zz = Z^T Q_ww Z, H_xz^T = Z^T (Q_xw^T + T_x), H_zt = Z^T (Q_wt + T_t),
// g_z = Z^T (Q_w + T_c) go to eliminate(). The paper's Schur-complement alternative (eq. 76) would
// grow the factorized system by nh; this one shrinks it to nw - nh.
bool RiccatiSolver::Impl::eliminateEqualities(int k, int nw) {
  const StageData& d = *datas_[k];
  const int nh = static_cast<int>(d.h.size()), nz = nw - nh, ncols = ndx_ + np_ + 1;
  Eigen::MatrixXd& map = eq_map_[k];
  Eigen::MatrixXd& policy = policy_[k];
  auto Qxw = Qxw_.leftCols(nw);
  auto Qww = Qww_.topLeftCorner(nw, nw);
  auto Qwt = Qwt_.topRows(nw);
  auto Qw = Qw_.head(nw);
  auto HwT = eq_HwT_.topLeftCorner(nw, nh);
  HwT = d.H_w.transpose();
  // Householder QR in place, unblocked: Eigen's HouseholderQR switches to its blocked form,
  // which allocates, from 48 columns on (a touchdown's knot on go2 has 60 rows), and compute()
  // on a knot of another shape would reallocate its storage
  auto hcoeffs = eq_hcoeffs_.head(nh);
  Eigen::internal::householder_qr_inplace_unblocked(HwT, hcoeffs, eq_qr_temp_.data());
  const auto R = HwT.topLeftCorner(nh, nh);
  const double largest = R.diagonal().cwiseAbs().maxCoeff();
  if (!(R.diagonal().cwiseAbs().minCoeff() > 1e-12 * largest)) return false;  // rank-deficient
  auto Q = eq_Q_.topLeftCorner(nw, nw);
  Q.setIdentity();
  // Q = H_0 ... H_{nh-1} I, the reflectors applied one by one on a workspace of the solver's
  // (householderQ() also turns blocked, and allocating, from 48 reflectors on)
  for (int i = nh - 1; i >= 0; --i)
    Q.bottomRightCorner(nw - i, nw - i)
        .applyHouseholderOnTheLeft(HwT.col(i).tail(nw - i - 1), hcoeffs(i), eq_work_.data());
  auto W = eq_W_.topRows(nh);  // R^{-T} [H_x H_t h]
  W.leftCols(ndx_) = d.H_x;
  W.middleCols(ndx_, np_) = d.H_theta;
  W.col(ndx_ + np_) = d.h;
  R.triangularView<Eigen::Upper>().transpose().solveInPlace(W);
  map.leftCols(nz) = Q.rightCols(nz);
  auto C = map.rightCols(ncols);
  C.noalias() = -Q.leftCols(nh) * W;
  const auto Cx = C.leftCols(ndx_);
  const auto Ct = C.middleCols(ndx_, np_);
  const auto c = C.col(ndx_ + np_);
  copyLowerToUpper(Qww);  // the products below read Q_ww whole
  auto T = eq_T_.topRows(nw);
  T.noalias() = Qww * C;
  const auto Tx = T.leftCols(ndx_);
  const auto Tt = T.middleCols(ndx_, np_);
  const auto Tc = T.col(ndx_ + np_);
  // dz's terms from the unchanged Q_xw, Q_wt, Q_w.
  auto Z = map.leftCols(nz);
  auto QwwZ = eq_QwwZ_.topLeftCorner(nw, nz);
  QwwZ.noalias() = Qww * Z;
  policy.leftCols(nz).triangularView<Eigen::Lower>() = Z.transpose() * QwwZ;
  auto Yb = policy.middleCols(nz, ndx_);
  Yb.noalias() = Z.transpose() * Qxw.transpose();
  Yb.noalias() += Z.transpose() * Tx;
  auto Ytb = policy.middleCols(nz + ndx_, np_);
  Ytb.noalias() = Z.transpose() * Qwt;
  Ytb.noalias() += Z.transpose() * Tt;
  auto yb = policy.col(nz + ndx_ + np_);
  yb.noalias() = Z.transpose() * Qw;
  yb.noalias() += Z.transpose() * Tc;
  // The substitution into the x and theta blocks (Q_xx: the lower triangle is what is read).
  Qxx_.noalias() += Qxw * Cx;
  Qxx_.noalias() += Cx.transpose() * Qxw.transpose();
  Qxx_.noalias() += Cx.transpose() * Tx;
  Qxt_.noalias() += Qxw * Ct;
  Qxt_.noalias() += Cx.transpose() * Qwt;
  Qxt_.noalias() += Cx.transpose() * Tt;
  Qtt_.noalias() += Qwt.transpose() * Ct;
  Qtt_.noalias() += Ct.transpose() * Qwt;
  Qtt_.noalias() += Ct.transpose() * Tt;
  Qx_.noalias() += Cx.transpose() * Qw;
  Qx_.noalias() += Qxw * c;
  Qx_.noalias() += Cx.transpose() * Tc;
  Qt_.noalias() += Ct.transpose() * Qw;
  Qt_.noalias() += Qwt.transpose() * c;
  Qt_.noalias() += Ct.transpose() * Tc;
  if (nz == 0) return true;
  return eliminate(policy, 0, nz, Qxx_, Qxt_, Qtt_, Qx_, Qt_);
}

// H_uu = L L^T (its lower triangle in the policy's L block on entry), and with Y = L^{-1} H_xu^T,
// Y_t = L^{-1} H_utheta, y = L^{-1} g_u (their blocks hold H_xu^T, H_utheta, g_u on entry) the
// model minimized over u: H_xx -= Y^T Y, H_xtheta -= Y^T Y_t, H_thetatheta -= Y_t^T Y_t (lower
// triangles of the symmetric ones), g_x -= Y^T y, g_theta -= Y_t^T y. The same as H + H_xu K etc.
// with K = -L^{-T} Y, in fewer products, and H_xx as a symmetric rank update.
bool RiccatiSolver::Impl::eliminate(Eigen::MatrixXd& policy, int first, int size,
                                    Eigen::MatrixXd& Hxx, Eigen::MatrixXd& Hxt,
                                    Eigen::MatrixXd& Htt, Eigen::VectorXd& gx,
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
bool RiccatiSolver::Impl::eliminateConfigurationNoise(const StageData& d, Eigen::MatrixXd& policy) {
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

void RiccatiSolver::Impl::addTimesBlockDiagonal(const Eigen::Ref<const Eigen::MatrixXd>& X,
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

void RiccatiSolver::Impl::addBlockDiagonalTimes(const Eigen::MatrixXd& M,
                                                const Eigen::Ref<const Eigen::VectorXd>& x,
                                                Eigen::Ref<Eigen::VectorXd> out,
                                                bool transposed) const {
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

void RiccatiSolver::Impl::addBlockDiagonalTransposeTimes(const Eigen::MatrixXd& M,
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
void RiccatiSolver::Impl::structuredQ(const StageData& d, int nw) {
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

}  // namespace heft::estimation
