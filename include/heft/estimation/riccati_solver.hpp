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
///     minimizer). Running stages with equality rows (StageModel::nh, the bayesian-sysid
///     paper's eq. 72) take the dense path: the rows are eliminated on the nullspace of H_w (its
///     eqs. 76-79) before the decision's own elimination, and their violation joins the gaps in
///     the merit;
///  3. arrival node: the arrival prior and the parameter prior are added to V at k = 0 and the
///     system of eq. 28 is solved by eliminating dx_0 first; its Schur complement S in theta is the
///     information of theta given the data (its inverse is the posterior covariance). Directions
///     of S below `nullspace_tolerance` are the nullspace of eq. 31: no step along them and
///     infinite variance (reported, excluded from the covariance). With parameter constraints
///     the theta step is the QP of the bayesian-sysid paper's eq. 81 on S (heft::DenseQp), dx_0
///     follows by eq. 83, and the covariance is S's inverse on the active constraints'
///     nullspace;
///  4. a linear rollout of the step gives dx_k, dw_k and the expected change of the cost
///     (its first and second order terms d1, d2, exactly the quadratic model along the step);
///  5. forward pass: single shooting, feasibility-driven (eq. 33) or multiple shooting (eq. 34),
///     merit phi = cost + nu (sum_k |fbar_k|_1 + |h(theta)|_1 + |min(g(theta), 0)|_1) (eq. 37)
///     with nu updated by eq. 38, nonmonotone Armijo backtracking, Levenberg-Marquardt
///     regularization mu on the decision Hessians.
/// Sign choices and where the paper's printed equations needed fixing: docs/estimation.md.
///
/// No heap allocation inside an iteration when every running stage has the same nw and nr (all
/// buffers are sized at construction) and there are no parameter constraints (their QP and the
/// constrained covariance allocate, once per iteration), other than the stages' own (with contacts,
/// Pinocchio's constraint Cholesky allocates on every solve; docs/estimation.md). The stages' datas
/// share one scratch per dynamics model (StageModel::createDataSharing): the solver evaluates them
/// one at a time.
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

/// How the theta trust radius answers a step the line search shortened.
enum class ThetaTrustUpdate {
  Always,  ///< shrinks after every shortened step (freezes theta behind stiff rows)
  Probe,   ///< shrinks only when theta's part shortened it: one probe evaluation decides (can
           ///< let theta run away on very noisy logs: docs/estimation.md)
};
std::string toString(ThetaTrustUpdate update);
/// "always" / "probe"; throws InputError otherwise.
ThetaTrustUpdate parseThetaTrustUpdate(const std::string& name);

struct RiccatiOptions {
  Rollout rollout = Rollout::MultipleShooting;
  int max_iterations = 100;
  /// Converged when the expected decrease |d1| <= tolerance (1 + cost) and every gap is below
  /// gap_tolerance (infinity norm, tangent space).
  double tolerance = 1e-9;
  double gap_tolerance = 1e-8;
  /// With parameter constraints (Problem::parameterConstraints): also every constraint within this
  /// (absolute, in pi's units: kg, kg m, kg m^2).
  double constraint_tolerance = 1e-8;
  /// With stages that have equality rows (StageModel::nh): also every row within this (absolute,
  /// in the rows' own units, e.g. N m for an inverse-dynamics balance).
  double equality_tolerance = 1e-8;
  double armijo = 1e-4;  ///< sufficient-decrease fraction c1 in (0, 1)
  /// Nonmonotone Armijo: a trial is compared with the largest merit among the current iterate
  /// and the last this-many accepted ones; 0: monotone. Default 2: a memory of 4 let full steps
  /// raise the merit in a cycle that converged linearly (go2 standing, 990 knots: 161
  /// iterations, 50 with 2, 18 with 0), 0 is slow on the fixed-base pendulum
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
  /// eigenvalues). After a shortened step it shrinks to half the accepted theta step (with Probe
  /// only when theta's part shortened it), after a rejected iteration to a quarter; it doubles
  /// after a full step that reached it. Inertia directions that a short log barely excites
  /// otherwise take steps the Gauss-Newton model cannot follow (docs/estimation.md).
  double theta_trust_radius = 0.5;
  ThetaTrustUpdate theta_trust_update = ThetaTrustUpdate::Always;
  double min_theta_trust_radius = 1e-8;
  double max_theta_trust_radius = 1e3;
  /// Eigenvalues of the theta Schur complement below this fraction of the largest are treated as
  /// its nullspace (eq. 31), but never one above half the smallest eigenvalue of theta's prior
  /// information: a direction the prior holds is determined however stiff another row makes the
  /// largest (energy rows at 1e-5 J froze 15 of the double pendulum's 26 directions otherwise).
  double nullspace_tolerance = 1e-10;
  /// Add the curvature of the inertias' parametrization to theta's Hessian at the arrival node:
  /// the positive part of sum_j g_j d^2 pi_j / d theta^2 per body
  /// (inertia::parametrizationCurvature), g the data's gradient in pi. Gauss-Newton drops it; it
  /// matters when theta sits far from its prior mean along directions the data barely see
  /// (go2's torso and 12 leg bodies from a wrong model: at the trust region's boundary for 1000
  /// iterations without it). Off by default: it slowed the well-excited pendulum (28 to 40
  /// iterations; docs/estimation.md, "Curvature of the parametrization"). Needs
  /// Problem::inertiaLayout() (buildLogProblem sets it); no effect without one.
  bool parametrization_curvature = false;
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
  /// The theta trust radius each iteration's direction was limited to (the radius after the
  /// last iteration is not in it).
  std::vector<double> theta_radius_history;
  /// Per iteration: 1 when the trust radius shortened its theta step, else 0.
  std::vector<int> theta_limited_history;
  double cost = 0;
  double max_gap = 0;
  int nullspace_dimension = 0;  ///< of the theta Schur complement at the last iteration
  /// Parameter constraints: the largest violation at the returned iterate, and the iterations
  /// whose QP failed (the linearized constraints had no common point; the step ignored them).
  double max_constraint_violation = 0;
  int constraint_qp_failures = 0;
  /// The stages' equality rows (StageModel::nh): the largest |h| at the returned iterate.
  double max_equality_violation = 0;
  double derivative_seconds = 0, backward_seconds = 0, forward_seconds = 0, total_seconds = 0;
  bool ok() const { return status == Status::Converged; }
  std::string report() const;
};
std::string toString(RiccatiSummary::Status status);

class RiccatiSolver {
 public:
  /// Sizes every buffer. \throws InputError on invalid options.
  RiccatiSolver(std::shared_ptr<const Problem> problem, const RiccatiOptions& options = {});
  ~RiccatiSolver();
  RiccatiSolver(RiccatiSolver&&) noexcept;
  RiccatiSolver& operator=(RiccatiSolver&&) noexcept;

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

  const std::vector<Eigen::VectorXd>& xs() const;
  const std::vector<Eigen::VectorXd>& ws() const;
  const Eigen::VectorXd& theta() const;
  const std::vector<Eigen::VectorXd>& directionX() const;
  const std::vector<Eigen::VectorXd>& directionW() const;
  const Eigen::VectorXd& directionTheta() const;
  /// Gaps of the current guess, gap(k) = f_{k-1} ⊖ x_k for k >= 1 (index 0 is zero), in the
  /// tangent space at x_k.
  const std::vector<Eigen::VectorXd>& gaps() const;
  /// Posterior covariance of theta (np x np) at the last direction: pseudo-inverse of the Schur
  /// complement on its range.
  const Eigen::MatrixXd& thetaCovariance() const;
  /// Basis of the unobservable directions of theta (np x nullity) at the last direction.
  Eigen::MatrixXd thetaNullspace() const;
  /// The quadratic model of the cost along the last direction: cost(x ⊕ a d) ~ cost + a d1 + a^2 d2
  /// / 2 (d1 is the directional derivative; d2 = |J d|^2).
  double expectedFirstOrder() const;
  double expectedSecondOrder() const;
  /// Cost of the current guess (from the last evaluation).
  double cost() const;
  const RiccatiSummary& summary() const;
  const RiccatiOptions& options() const;
  void setRegularization(double mu);

 private:
  /// The iterates, the stages' datas and every buffer of the passes (src/estimation/
  /// riccati_impl.hpp): sized once at construction, private to the module.
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace heft::estimation
