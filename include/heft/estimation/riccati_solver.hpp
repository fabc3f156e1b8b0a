#pragma once
/// \file Parametrized multiple-shooting Riccati solver for Problem (multi-contact paper, sec. V).
///
/// Gauss-Newton on the whitened residuals. Each iteration:
///  1. derivatives: every stage's calc + calcDiff at the current guess, the gaps
///     fbar_{k+1} = f_k(x_k, w_k; theta) ⊖ x_{k+1}, linearized exactly on the state's curved
///     blocks (StateManifold::curvedBlocks);
///  2. backward pass: the action-value expansion Q (eq. 23, with the gap deflection of V_x and
///     V_theta; the stage's own terms from StageModel::gaussNewton; the products with the value
///     function through the stage's semi-implicit structure where it has one) and the policy
///     dw = k + K dx + K_theta dtheta (eq. 25), value V_xx, V_xtheta, V_thetatheta, V_x, V_theta
///     (eq. 27), in Cholesky form: Q_ww = L L^T, Y = L^{-1} Q_xw^T, V_xx = Q_xx - Y^T Y, the
///     policy kept as L, Y (K = -L^{-T} Y) (docs/estimation.md, "Speed and memory"); where the
///     structure holds, the configuration noise w_q is eliminated first, from the next value
///     function, and then w_v: two eliminations of nv instead of one of 2 nv (exact: the same
///     minimizer);
///  3. arrival node: the arrival prior and the parameter prior are added to V at k = 0 and the
///     system of eq. 28 is solved by eliminating dx_0 first; its Schur complement S in theta is the
///     information of theta given the data (its inverse is the posterior covariance). Directions
///     of S below `nullspace_tolerance` are the nullspace of eq. 31: no step along them and
///     infinite variance (reported, excluded from the covariance);
///  4. a linear rollout of the step gives dx_k, dw_k and the expected change of the cost
///     (its first and second order terms d1, d2, exactly the quadratic model along the step);
///  5. forward pass: single shooting, feasibility-driven (eq. 33) or multiple shooting (eq. 34),
///     merit phi = cost + nu sum_k |fbar_k|_1 (eq. 37) with nu updated by eq. 38, nonmonotone
///     Armijo backtracking, Levenberg-Marquardt regularization mu on the decision Hessians.
/// Sign choices and where the paper's printed equations needed fixing: docs/estimation.md.
///
/// No heap allocation inside an iteration when every running stage has the same nw and nr (all
/// buffers are sized at construction), other than the stages' own (with contacts, Pinocchio's
/// constraint Cholesky allocates on every solve; docs/estimation.md). The stages' datas share one
/// scratch per dynamics model (StageModel::createDataSharing): the solver evaluates them one at a
/// time.
#include <chrono>
#include <iosfwd>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <Eigen/Cholesky>
#include <Eigen/Core>
#include <Eigen/Eigenvalues>
#include <Eigen/LU>

#include "heft/estimation/problem.hpp"

namespace heft::estimation {

enum class Rollout {
  SingleShooting,     ///< gaps closed at every trial: x_{k+1} = f(x_k, w_k; theta)
  FeasibilityDriven,  ///< eq. 33: nonlinear rollout that keeps (1 - alpha) of each gap
  MultipleShooting,   ///< eq. 34: linear update of every node, gaps from nonlinear shots
};
std::string toString(Rollout rollout);
/// "single" / "feasibility-driven" / "multiple-shooting"; throws InputError otherwise.
Rollout parseRollout(const std::string& name);

struct RiccatiOptions {
  Rollout rollout = Rollout::MultipleShooting;
  int max_iterations = 100;
  /// Converged when the expected decrease |d1| <= tolerance (1 + cost) and every gap is below
  /// gap_tolerance (infinity norm, tangent space).
  double tolerance = 1e-9;
  double gap_tolerance = 1e-8;
  double armijo = 1e-4;  ///< sufficient-decrease fraction c1 in (0, 1)
  /// Nonmonotone Armijo: a trial is compared with the largest merit among the current iterate
  /// and the last this-many accepted ones; 0: monotone. Default 2: 4 (the default until session
  /// 9) let full steps raise the merit in a cycle that converged linearly (go2 standing, 990
  /// knots: 161 iterations, 50 with 2, 18 with 0), 0 is slow on the fixed-base pendulum
  /// (docs/estimation.md, "Line search").
  int nonmonotone_memory = 2;
  double min_step = 1.0 / 1024;
  /// Levenberg-Marquardt: mu added to Q_ww and to the arrival node's diagonal.
  double regularization = 1e-9;
  double min_regularization = 1e-12;
  double max_regularization = 1e9;
  double regularization_factor = 10;
  /// Merit penalty (eq. 38): nu <- max(penalty_decrease nu, d(1) / ((1 - penalty_rho)
  /// sum|fbar|_1)).
  double penalty = 1.0;
  double penalty_decrease = 0.9;
  double penalty_rho = 0.3;
  /// Trust region on the theta step (2-norm in theta's coordinates): the step solves the
  /// arrival node's problem with |dtheta| <= radius (Levenberg-Marquardt on the Schur complement's
  /// eigenvalues). Halved with the accepted step length after a shortened step, doubled after a
  /// full step that reached it. Inertia directions that a short log barely excites otherwise take
  /// steps the Gauss-Newton model cannot follow (docs/estimation.md).
  double theta_trust_radius = 0.5;
  double min_theta_trust_radius = 1e-8;
  double max_theta_trust_radius = 1e3;
  /// Eigenvalues of the theta Schur complement below this fraction of the largest are treated as
  /// its nullspace (eq. 31).
  double nullspace_tolerance = 1e-10;
  /// Use the stages' semi-implicit structure (StageData::semi_implicit) in the backward pass: the
  /// same Q in about half the products. Off: dense products with F (for tests and comparison).
  bool exploit_structure = true;
  /// End solve() with one more backward pass at the returned iterate for its theta covariance
  /// (the loop's is one step behind). Off only to time iterations alone (bench/).
  bool posterior_covariance = true;
  std::ostream* progress = nullptr;  ///< one line per iteration when set

  /// Throws InputError naming the field.
  void validate() const;
};

struct RiccatiSummary {
  enum class Status {
    NotRun,
    Converged,
    MaxIterations,     ///< not converged; the last accepted iterate is kept
    LineSearchFailed,  ///< no step decreased the merit even at max regularization
    NumericalFailure,  ///< NaN in the derivatives at the current iterate
  };
  Status status = Status::NotRun;
  std::string message;
  int iterations = 0;
  std::vector<double> cost_history;  ///< cost of the iterate at the start of each iteration + final
  std::vector<double> gap_history;   ///< max |gap| (same points)
  std::vector<double> step_history;  ///< accepted alpha per iteration (0 when rejected)
  double cost = 0;
  double max_gap = 0;
  int nullspace_dimension = 0;  ///< of the theta Schur complement at the last iteration
  double derivative_seconds = 0, backward_seconds = 0, forward_seconds = 0, total_seconds = 0;
  bool ok() const { return status == Status::Converged; }
  std::string report() const;
};
std::string toString(RiccatiSummary::Status status);

class RiccatiSolver {
 public:
  /// Sizes every buffer. \throws InputError on invalid options.
  RiccatiSolver(std::shared_ptr<const Problem> problem, const RiccatiOptions& options = {});

  /// Sets the initial guess (N+1 states, N decisions, theta). \throws InputError on sizes or
  /// non-finite values.
  void setInitialGuess(const std::vector<Eigen::VectorXd>& xs,
                       const std::vector<Eigen::VectorXd>& ws, const Eigen::VectorXd& theta);
  /// Initial guess from the arrival prior's means and a single-shooting rollout with w = 0.
  void setInitialGuessFromRollout(const Eigen::VectorXd& theta);

  /// Runs until convergence or a stop; the iterate is always the last accepted one.
  const RiccatiSummary& solve();

  /// One direction at the current guess (derivatives, backward pass, arrival, linear rollout), no
  /// step taken. For tests: compare with the dense KKT solution.
  /// \return false if the backward pass failed (Q_ww not positive definite at this mu) or the
  /// derivatives are not finite.
  bool computeDirection();

  const std::vector<Eigen::VectorXd>& xs() const { return cur_.xs; }
  const std::vector<Eigen::VectorXd>& ws() const { return cur_.ws; }
  const Eigen::VectorXd& theta() const { return cur_.theta; }
  const std::vector<Eigen::VectorXd>& directionX() const { return dxs_; }
  const std::vector<Eigen::VectorXd>& directionW() const { return dws_; }
  const Eigen::VectorXd& directionTheta() const { return dtheta_; }
  /// Gaps of the current guess, gap(k) = f_{k-1} ⊖ x_k for k >= 1 (index 0 is zero), in the
  /// tangent space at x_k.
  const std::vector<Eigen::VectorXd>& gaps() const { return cur_.gaps; }
  /// Posterior covariance of theta (np x np) at the last direction: pseudo-inverse of the Schur
  /// complement on its range.
  const Eigen::MatrixXd& thetaCovariance() const { return theta_covariance_; }
  /// Basis of the unobservable directions of theta (np x nullity) at the last direction.
  Eigen::MatrixXd thetaNullspace() const;
  /// The quadratic model of the cost along the last direction: cost(x ⊕ a d) ~ cost + a d1 + a^2 d2
  /// / 2 (d1 is the directional derivative; d2 = |J d|^2).
  double expectedFirstOrder() const { return d1_; }
  double expectedSecondOrder() const { return d2_; }
  /// Cost of the current guess (from the last evaluation).
  double cost() const { return cur_.cost; }
  const RiccatiSummary& summary() const { return summary_; }
  const RiccatiOptions& options() const { return options_; }
  void setRegularization(double mu) { mu_ = mu; }

 private:
  struct Trajectory {
    std::vector<Eigen::VectorXd> xs, ws, gaps;
    Eigen::VectorXd theta;
    double cost = 0, gap_norm1 = 0, max_gap = 0;
  };
  void resizeTrajectory(Trajectory& traj) const;
  void closeGaps(Trajectory& traj);  // x_{k+1} = f(x_k, w_k; theta) from x_0
  void evaluate(Trajectory& traj);   // calc everywhere: gaps and cost
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
  bool solveArrival();              // false if the arrival Hessian is not positive definite
  void linearRollout();             // dxs_, dws_, d1_, d2_
  void rolloutTrial(double alpha);  // trial_ from cur_ and the direction
  double arrivalCost(const Trajectory& traj);
  void printProgress(int iteration, double alpha) const;

  std::shared_ptr<const Problem> problem_;
  RiccatiOptions options_;
  RiccatiSummary summary_;
  int N_ = 0, nx_ = 0, ndx_ = 0, np_ = 0, nw_max_ = 0, nr_max_ = 0;
  double mu_ = 0;
  double penalty_ = 0;

  // The current guess and a trial point of the line search, each with its evaluation.
  Trajectory cur_, trial_;
  /// datas_ and terminal_data_ hold calc at cur_ and cur_.gaps are up to date: the derivative
  /// pass then skips calc (evaluate and the accepted trial already did it).
  bool datas_at_current_ = false;
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
  int nullity_ = 0;
  double theta_radius_ = 0;         ///< current trust radius
  bool theta_at_boundary_ = false;  ///< the last theta step was limited by the radius
  // Direction and its expected change of the cost.
  std::vector<Eigen::VectorXd> dxs_, dws_;
  Eigen::VectorXd dtheta_, e_, tangent_;
  double d1_ = 0, d2_ = 0;
  std::vector<std::pair<double, double>>
      merit_memory_;  ///< (cost, sum |gap|_1) of accepted iterates
};

}  // namespace heft::estimation
