#pragma once
// RiccatiSolver's state: the problem, the current and trial iterates, the stages' datas and every
// buffer of the derivative, backward, arrival and rollout passes, kept out of the public header.
// The passes are defined in riccati_backward.cpp, riccati_arrival.cpp and riccati_rollout.cpp;
// the constructor and the iteration loop in riccati_solver.cpp.
#include <chrono>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <Eigen/Cholesky>
#include <Eigen/Core>
#include <Eigen/Eigenvalues>
#include <Eigen/LU>
#include <Eigen/QR>

#include "heft/common/dense_qp.hpp"
#include "heft/estimation/riccati_solver.hpp"

namespace heft::estimation {

inline double secondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

struct RiccatiSolver::Impl {
  Impl(std::shared_ptr<const Problem> problem, const RiccatiOptions& options);

  // The public operations (RiccatiSolver forwards to them).
  void setInitialGuess(const std::vector<Eigen::VectorXd>& xs,
                       const std::vector<Eigen::VectorXd>& ws, const Eigen::VectorXd& theta);
  void setInitialGuessFromRollout(const Eigen::VectorXd& theta);
  const RiccatiSummary& solve();
  bool computeDirection();
  Eigen::MatrixXd thetaNullspace() const;

  // Steps of one iteration of solve().
  /// The direction at cur_, raising mu until the backward pass and the arrival node factorize;
  /// false on a numerical failure (summary_'s status and message set).
  bool regularizedDirection(int iteration);
  /// Backtracking from alpha = 1 (nonmonotone Armijo on the merit, eq. 37); the accepted alpha,
  /// 0 when none. trial_ holds the last trial.
  double lineSearch(double reference, double gap1);
  /// Whether the line search's accepted alpha < 1 was theta's doing: the direction with theta's
  /// part halved (dtheta / 2 and the trajectory's linear response to it) is tried at 2 alpha, the
  /// rejected length, into probe_ (which replaces trial_ when it is acceptable and better). True
  /// when that trial is acceptable; false without a theta step.
  bool thetaShortenedStep(double alpha, double reference, double gap1);
  /// cur_ <- trial_ and the updates of the merit memory, mu and the trust radius (shrunk after a
  /// shortened step only when theta_shortened).
  void acceptTrial(double accepted, double cost_before, double gap1, bool theta_shortened);
  /// Shrinks the trust radius and raises mu; false (summary_ set) when mu is at its maximum.
  bool rejectTrial();
  /// The posterior covariance at the returned iterate (unless the last direction is there) and
  /// the summary's totals.
  void finishSolve(bool direction_at_current, std::chrono::steady_clock::time_point start);

  struct Trajectory {
    std::vector<Eigen::VectorXd> xs, ws, gaps;
    Eigen::VectorXd theta;
    double cost = 0, gap_norm1 = 0, max_gap = 0;
    double constraint_norm1 = 0, constraint_max = 0;  ///< parameter constraints' violation
    double equality_norm1 = 0, equality_max = 0;      ///< the stages' equality rows' violation
  };
  /// The merit's infeasibility: sum |gap|_1 (none under single shooting) + the stages' equality
  /// rows' sum |h|_1 + the parameter constraints' violation.
  double infeasibility(const Trajectory& traj) const;
  void resizeTrajectory(Trajectory& traj) const;
  void closeGaps(Trajectory& traj);  // x_{k+1} = f(x_k, w_k; theta) from x_0
  void evaluate(Trajectory& traj);   // calc everywhere: gaps and cost
  /// traj's equality sums += knot k's |h| (its data at traj).
  void addEqualityViolation(int k, Trajectory& traj) const;
  // Derivatives: calc where the datas are not at cur_, the terminal stage, the arrival Jacobian
  // (prepareDerivatives), and calcDiff with the gap's linearization per knot; false on NaN.
  bool prepareDerivatives();
  bool differentiateKnot(int k);
  // Backward pass: false if Q_ww is not positive definite (at some knot).
  bool backwardPass();
  void terminalValue();
  bool backwardStep(int k);
  /// The derivatives and the backward pass in one sweep (the knots' data stay in cache); their
  /// times in pass_*_seconds_. false if either failed (finite tells which).
  bool derivativesAndBackwardPass(bool& finite);
  double pass_derivative_seconds_ = 0, pass_backward_seconds_ = 0;
  bool solveArrival();  // false if the arrival Hessian is not positive definite
  void
  addParametrizationCurvature();  // to S_, from gs_ (RiccatiOptions::parametrization_curvature)
  // The parameter QP of eq. 81 on the Schur complement (eigenvalues floored at `floor`) within
  // the trust radius: replaces dtheta_, theta_at_boundary_ and (true) the covariance; false when
  // the QP failed (the unconstrained step stays, counted) or no constraint was active (the
  // covariance stays).
  bool constrainedThetaStep(double floor);
  bool solveThetaQp(double nu, double floor);        // qp_ at S + nu I (floored); true when solved
  void linearRollout();                              // dxs_, dws_, d1_, d2_
  void rolloutTrial(double alpha, Trajectory& out);  // out from cur_ and alpha times the direction
  double merit(const Trajectory& traj) const { return traj.cost + penalty_ * infeasibility(traj); }
  /// The nonmonotone Armijo test of the line search for a trial at alpha along the direction.
  bool acceptable(const Trajectory& trial, double alpha, double reference, double gap1);
  double arrivalCost(Trajectory& traj);  // also the parameter constraints' violation
  void printProgress(int iteration, double alpha) const;

  std::shared_ptr<const Problem> problem_;
  RiccatiOptions options_;
  RiccatiSummary summary_;
  int N_ = 0, nx_ = 0, ndx_ = 0, np_ = 0, nw_max_ = 0, nr_max_ = 0;
  double mu_ = 0;
  double penalty_ = 0;

  // The current guess and a trial point of the line search, each with its evaluation.
  Trajectory cur_, trial_, probe_;
  /// datas_ and terminal_data_ hold calc at cur_ and cur_.gaps are up to date: the derivative
  /// pass then skips calc (evaluate and the accepted trial already did it).
  bool datas_at_current_ = false;
  bool datas_at_trial_ = false;  ///< datas_ hold calc at trial_ (the last evaluation was trial_'s)
  StageWorkspace workspace_;  ///< the stages' shared scratch (declared before the datas using it)
  std::vector<std::unique_ptr<StageData>> datas_;
  std::unique_ptr<StageData> terminal_data_;

  // Exact linearization of the gap on the manifold: difference(x_{k+1}, f_k) = 0 gives
  // D0 dx_{k+1} + D1 df + fbar = 0, so the solver uses F <- -D0^{-1} D1 F and the gap
  // -D0^{-1} fbar (both equal the stage's when the gap is zero).
  // Only the state's curved blocks (StateManifold::curvedBlocks) differ from the identity map,
  // so the map is applied block by block: T_b = -D0_b^{-1} D1_b on the block's rows.
  std::vector<Eigen::VectorXd> lin_gaps_;
  Eigen::MatrixXd D0_, D1_;
  std::vector<Eigen::PartialPivLU<Eigen::MatrixXd>> block_lu_;
  std::vector<Eigen::MatrixXd> block_map_;  ///< T_b per curved block
  Eigen::MatrixXd block_rows_;              ///< workspace: largest block x max(ndx, nw, np)
  Eigen::VectorXd block_gap_;
  void linearizeGap(StageData& data, int k);
  // Policy per running stage, kept factored: with Q_ww = L L^T, dw = -L^{-T} (y + Y dx + Y_t
  // dtheta) (K = -L^{-T} Y is never formed: the rollouts apply it to one vector).
  /// nw x (nw + ndx + np + 1) per knot, [L | Y | Y_t | y]: L in the lower triangle, Y = L^{-1}
  /// Q_xw^T, Y_t = L^{-1} Q_wtheta, y = L^{-1} Q_w (one block: the rollouts read it in one stream).
  /// A structured knot keeps two policies in its rows: w_q's (rows [0, nv), L in the leading
  /// nv x nv block, Y acting on the state step before the configuration noise) and w_v's (rows
  /// [nv, nw), L in the trailing block, Y acting on dx).
  std::vector<Eigen::MatrixXd> policy_;
  Eigen::VectorXd policy_tmp_;
  /// policy_tmp_.head(nw) = -dw_k, the step of w_k for the state step dx and the fraction
  /// `scale` of the direction's feedforward and theta step; at a structured knot pre_noise_ = y.
  void policyCorrection(int k, double scale, const Eigen::VectorXd& dx);
  /// e = L^{-T} (scale y + Y z + scale Y_t dtheta_) for the policy rows [first, first + size).
  void applyPolicy(const Eigen::MatrixXd& policy, int first, int size, double scale,
                   const Eigen::VectorXd& z, Eigen::Ref<Eigen::VectorXd> e) const;
  /// Minimizes the quadratic model over the decision rows [first, first + size) of `policy`
  /// (definitions at the function); false if its Hessian is not positive definite.
  bool eliminate(Eigen::MatrixXd& policy, int first, int size, Eigen::MatrixXd& Hxx,
                 Eigen::MatrixXd& Hxt, Eigen::MatrixXd& Htt, Eigen::VectorXd& gx,
                 Eigen::VectorXd& gt) const;
  /// Knot k's equality rows eliminated on the nullspace of H_w (bayesian-sysid eqs. 76-79) from
  /// its dense Q (Q_ww's lower triangle, mu added): dw = c + C_x dx + C_t dtheta + Z dz with
  /// H_w Z = 0 and H_w (c + C_x dx + C_t dtheta) = -(h + H_x dx + H_t dtheta); the change of
  /// variables is applied to Q and the policy of dz (nz = nw - nh rows) is formed in policy_[k];
  /// eq_map_[k] = [Z | C_x | C_t | c]. False if H_w has not full row rank or the reduced Hessian
  /// is not positive definite.
  bool eliminateEqualities(int k, int nw);
  std::vector<char> constrained_;        ///< running stages with equality rows
  std::vector<Eigen::MatrixXd> eq_map_;  ///< nw x (nz + ndx + np + 1) per constrained knot
  /// H_w^T's Householder QR in place in eq_HwT_ (the reflectors below R) with these coefficients
  /// and workspace, sized once for every knot's shape.
  Eigen::VectorXd eq_hcoeffs_, eq_qr_temp_;
  Eigen::MatrixXd eq_HwT_, eq_Q_, eq_W_, eq_T_, eq_QwwZ_;
  Eigen::VectorXd eq_z_;
  Eigen::RowVectorXd eq_work_;  ///< the Householder reflectors' workspace (nw)
  /// w_q eliminated from the next value function (a structured knot's first policy).
  bool eliminateConfigurationNoise(const StageData& d, Eigen::MatrixXd& policy);
  // Semi-implicit structure (StageData::semi_implicit), per running stage whether the backward
  // pass uses it, the segments of [0, nv) on which A_q, B_q, S_q are dense blocks (the state's
  // curved blocks) or diagonal, and the products' workspaces.
  struct Segment {
    int start = 0, size = 0;
    bool block = false;
  };
  std::vector<char> structured_;
  std::vector<Segment> segments_;
  int nv_ = 0;
  Eigen::MatrixXd Z_, FxVS_, FwVS_, SG_, SVt_;
  Eigen::VectorXd tmp_v_;
  Eigen::VectorXd pre_noise_;                    ///< ndx: the linear step of the state before w_q
  void structuredQ(const StageData& d, int nw);  // Q's value-function terms from the structure
  // out += X M and out += M^T X for M (nv x nv) block diagonal on segments_.
  void addTimesBlockDiagonal(const Eigen::Ref<const Eigen::MatrixXd>& X, const Eigen::MatrixXd& M,
                             Eigen::Ref<Eigen::MatrixXd> out) const;
  /// out += M x, or M^T x when `transposed`.
  void addBlockDiagonalTimes(const Eigen::MatrixXd& M, const Eigen::Ref<const Eigen::VectorXd>& x,
                             Eigen::Ref<Eigen::VectorXd> out, bool transposed = false) const;
  void addBlockDiagonalTransposeTimes(const Eigen::MatrixXd& M,
                                      const Eigen::Ref<const Eigen::MatrixXd>& X,
                                      Eigen::Ref<Eigen::MatrixXd> out) const;
  // Value function at the next knot (a step forms the current one in the Q's and swaps).
  Eigen::MatrixXd Vxx_next_, Vxt_next_, Vtt_next_;
  Eigen::VectorXd Vx_next_, Vt_next_;
  // Action-value expansion and temporaries.
  Eigen::MatrixXd Qxx_, Qxw_, Qww_, Qxt_, Qwt_, Qtt_, FxV_, FwV_, G_;
  Eigen::VectorXd Qx_, Qw_, Qt_, vx_plus_;
  // Arrival node.
  Eigen::VectorXd arrival_r_, prior_r_, theta_diff_, gx_, gt_, gs_;
  Eigen::VectorXd data_gradient_;  // gs_ without the prior's part (addParametrizationCurvature)
  Eigen::MatrixXd arrival_J_, J_unused_, J_next_unused_, Hxx_, Hxt_, Htt_, HxxInvHxt_, S_;
  Eigen::VectorXd HxxInvGx_;
  Eigen::LLT<Eigen::MatrixXd> Hxx_llt_;
  // Eigen-decomposition of S without allocation: tridiagonalize, form Q with a preallocated
  // workspace, diagonalize the tridiagonal matrix (SelfAdjointEigenSolver::compute allocates
  // when it forms Q).
  Eigen::Tridiagonalization<Eigen::MatrixXd> S_tri_;
  Eigen::MatrixXd S_Q_, S_vectors_;
  Eigen::VectorXd S_diag_, S_subdiag_, S_workspace_;
  Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> S_eig_;
  Eigen::MatrixXd theta_covariance_;
  const ParameterConstraints* constraints_ = nullptr;
  std::unique_ptr<DenseQp> qp_;
  Eigen::VectorXd con_h_, con_g_, qp_g_, qp_h_lin_, qp_g_lin_;
  Eigen::MatrixXd con_H_, con_G_, qp_H_;
  int qp_failures_ = 0;
  bool constrained_covariance_ = false;  ///< the covariance is on the active constraints' nullspace
  Eigen::MatrixXd constrained_nullspace_;
  int nullity_ = 0;
  /// Half the smallest eigenvalue of theta's prior information (0 without a prior on every
  /// direction): S >= the prior's information, so an eigenvalue above it is determined however
  /// large the largest (a stiff row), and the relative nullspace tolerance stops there.
  double prior_information_floor_ = 0;
  double nullspaceThreshold(double largest_eigenvalue) const;
  double theta_radius_ = 0;         ///< current trust radius
  bool theta_at_boundary_ = false;  ///< the last theta step was limited by the radius
  // Direction and its expected change of the cost.
  std::vector<Eigen::VectorXd> dxs_, dws_;
  std::vector<Eigen::VectorXd> saved_dxs_, saved_dws_;  ///< swapped with dxs_, dws_ by a probe
  Eigen::VectorXd dtheta_, e_, tangent_;
  double d1_ = 0, d2_ = 0;
  std::vector<std::pair<double, double>>
      merit_memory_;  ///< (cost, sum |gap|_1) of accepted iterates
};

}  // namespace heft::estimation
