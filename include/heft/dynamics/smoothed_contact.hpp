#pragma once
/// \file One time step of smoothed, velocity-level contact dynamics between contact points and a
/// flat floor, parametrized by the inertial parameters of an identified set S, with the
/// derivatives of its outputs w.r.t. q, v, tau and theta_S by the implicit function theorem
/// (PRIME paper, eqs. 1, 15-20 and 32-34; docs/smoothed-contact.md).
///
/// The next velocity v+ minimizes the log-barrier relaxation of Anitescu's second-order cone
/// program (eq. 17):
/// \f[ c(v^+) = \tfrac12 \|v^+ - v_{free}\|^2_{M(q)} - \frac{1}{\kappa} \sum_i \log s_i(v^+),
///     \quad s_i = \frac{w_i^2}{\mu^2} - \|J^t_i v^+\|^2,\quad w_i = \frac{\phi_i}{\Delta t} +
///     J^n_i v^+ \f]
/// (eq. 20), with \f$ M v_{free} = M v + \Delta t\,(\tau - h(q, v)) \f$ and \f$\phi_i\f$ the height
/// of point i above the floor. On the cone's upper nappe (w_i > mu |J^t_i v+|) c is strictly
/// convex and, scaled by kappa, self-concordant; Newton's method with a line search finds its
/// minimum. The impulses are the barrier's gradient (eqs. 18-19):
/// \f[ \lambda^n_i = \frac{2 w_i}{\mu^2\kappa s_i},\qquad
///     \lambda^t_i = -\frac{2 J^t_i v^+}{\kappa s_i}, \f]
/// so that the optimality condition g = 0 (eq. 32) is the discrete dynamics of eq. 1,
/// \f$ M(v^+ - v) + \Delta t\,(h - \tau) = \sum_i J_i^T\lambda_i \f$. The outputs are forces,
/// f_i = lambda_i / dt, in world axes: (x, y) tangential, z normal, on the robot.
///
/// Derivatives (eq. 34): \f$ \partial v^+/\partial x = -H^{-1}\,\partial g/\partial x \f$ at the
/// Newton solution, H = M + sum_i J_i^T K_i J_i the Hessian of c (K_i the barrier's Hessian in the
/// point's velocity). g is written as dt (RNEA(q, v, (v+ - v)/dt; f_ext) - tau) with the contact
/// forces as external forces, so that Pinocchio's computeRNEADerivatives gives its q- and
/// v-derivatives; heft adds the rotation of the world-fixed forces in the joint frames, the
/// dependence of the forces on q through J_i(q) v+ (getFrameVelocityDerivatives) and phi_i(q),
/// and the theta columns dt Y_S(q, v, (v+ - v)/dt) dpi/dtheta.
///
/// On a compliant floor (SmoothedContactOptions::compliance > 0) the points' deflections delta_i
/// join v+ as unknowns: delta_i^2 / (2 compliance) is added to c and delta_i / dt to w_i, and the
/// deflections are eliminated from Newton's system and from the derivatives point by point.
///
/// Conventions: those of forward_dynamics.hpp (theta_S, tangent-space q-derivatives). The robot
/// must have a free-flyer root: the feasibility initializer lifts the whole robot.
///
/// Usage: build a SmoothedContactModel once; one SmoothedContactData per thread; the compute calls
/// do not allocate.
#include <string>
#include <vector>

#include <Eigen/Cholesky>
#include <Eigen/Core>
#include <pinocchio/multibody/data.hpp>
#include <pinocchio/multibody/model.hpp>
#include <pinocchio/spatial/force.hpp>
#include <pinocchio/spatial/se3.hpp>

#include "heft/dynamics/forward_dynamics.hpp"
#include "heft/dynamics/regressor.hpp"
#include "heft/inertia/inertia.hpp"
#include "heft/model/contact_points.hpp"

namespace heft::dynamics {

/// Where Newton's method starts.
enum class SmoothedContactStart {
  /// The paper's feasibility initializer (default): the previous velocity v, translated up until
  /// every point is strictly inside its velocity cone.
  Lift,
  /// The rigid sticking start: the points that v leaves outside (or within the margin of) their
  /// cone are held at zero tangential velocity and w_i = margin by the least M-weighted change of
  /// the contact-free velocity, the other points are free; then the lift if a free point ended up
  /// outside its cone. The rigid impulse of the stance, a few Newton steps from the smoothed one.
  Sticking,
};

/// The contact model and the Newton solver's settings. Defaults: the paper's kappa, a rigid
/// floor z = 0.
struct SmoothedContactOptions {
  /// kappa, weight of the log barrier (eq. 17) [1/J]. Larger: stiffer contact, smaller force at a
  /// distance (a point carrying f newtons in sticking contact rests 2 / (kappa f) above the
  /// floor). 500 is the paper's value.
  double kappa = 500;
  /// mu, Coulomb friction coefficient of the second-order cone (eq. 16). 0.9: heft::sim's floor.
  double friction_coefficient = 0.9;
  /// z of the floor plane in the world frame [m]; its normal is +z.
  double ground_height = 0;
  /// Compliance of the contact along the normal [m/N]: a point pressing with normal force f^n
  /// sinks delta = compliance f^n below the plane (a foot pad or a soft floor, a massless linear
  /// spring in series with the barrier). 0 (default): PRIME's rigid floor. With compliance > 0 the
  /// step minimizes over (v+, delta) with delta_i^2 / (2 compliance) added to eq. 17 and delta_i /
  /// dt added to w_i (docs/smoothed-contact.md, Compliance).
  double compliance = 0;

  // ---- Newton ----
  /// Cap on Newton steps (Hessian factorizations). A step that reaches it is reported
  /// (SmoothedContactStatus::MaxIterations) with its last iterate, which is feasible and finite.
  int max_iterations = 50;
  /// Converged when half the Newton decrement of the kappa-scaled cost, kappa g^T H^-1 g / 2
  /// (dimensionless; for a self-concordant function it bounds the suboptimality), is at most
  /// this; the full Newton step computed there is still taken, which squares the error.
  double tolerance = 1e-14;
  /// Feasibility initializer: every point starts with w_i >= mu |J^t_i v| + margin [m/s]. A start
  /// closer to the cone's boundary makes the first Newton steps short (go2 from a foot 2 cm deep
  /// with 2 m/s joint velocities: 2073 steps at 1e-3, 29 at 1e-2).
  double feasibility_margin = 1e-2;
  /// Where Newton starts; the solution (the unique minimizer of eq. 17) does not depend on it.
  /// Lift is faster inside an estimator, where v is close to v+ (go2, 1000 knots of 10 ms: 2.55 s
  /// against 3.1-3.5 s); Sticking takes fewer steps from far starts (TALOS: 10.3 against 19.6).
  SmoothedContactStart start = SmoothedContactStart::Lift;
  /// Armijo fraction of the predicted decrease that a trial step must achieve.
  double armijo = 1e-4;
  /// Backtracking factor of the line search, in (0, 1).
  double backtracking = 0.5;

  /// False with a reason if a field is out of range. `why` may be null.
  bool validate(std::string* why) const;
};

/// How a step ended.
enum class SmoothedContactStatus {
  NotRun,            ///< no step computed yet
  Converged,         ///< the decrement reached the tolerance
  MaxIterations,     ///< max_iterations Newton steps without convergence
  NumericalFailure,  ///< the Hessian lost positive definiteness or no trial step stayed feasible
};

/// "not run" / "converged" / "max iterations" / "numerical failure".
const char* toString(SmoothedContactStatus status);

/// What the Newton solve did. Plain values, so that filling it does not allocate.
struct SmoothedContactSummary {
  SmoothedContactStatus status = SmoothedContactStatus::NotRun;
  int iterations = 0;       ///< Newton steps taken
  double decrement = 0;     ///< kappa g^T H^-1 g / 2 at the last factorized iterate
  double initial_lift = 0;  ///< vertical velocity the feasibility initializer added [m/s]
  int sticking_points = 0;  ///< points the sticking start held on their cone (0 for Lift)
  double cost = 0;          ///< c(v+) (eq. 17, without the constant of v_free) [J]
  bool converged() const { return status == SmoothedContactStatus::Converged; }
  /// One line a person can read (allocates; not for hot loops).
  std::string report() const;
};

/// The constant part: the robot, its contact points, S, the parametrization and the options.
class SmoothedContactModel {
 public:
  /// \param robot with a free-flyer root joint (copied).
  /// \param points at least one; each frame must exist in robot, offsets finite.
  /// \param identified S: joint indices in [1, njoints), unique; may be empty.
  /// \throws InputError on another root joint, an unknown frame, invalid options or S.
  SmoothedContactModel(const pinocchio::Model& robot,
                       const std::vector<model::ContactPoint>& points,
                       const std::vector<pinocchio::JointIndex>& identified,
                       inertia::Parametrization parametrization,
                       const SmoothedContactOptions& options = SmoothedContactOptions());

  const RegressorModel& regressor() const { return regressor_; }
  const pinocchio::Model& model() const { return regressor_.model(); }
  const SupportPattern& support() const { return support_; }
  const std::vector<model::ContactPoint>& points() const { return points_; }
  /// The joint each point is fixed to, and the point's placement in that joint's frame.
  const std::vector<pinocchio::JointIndex>& pointJoints() const { return joints_; }
  const std::vector<pinocchio::SE3>& pointPlacements() const { return placements_; }
  /// Velocity indices in the support of each point's joint: the only nonzero columns of its
  /// Jacobian (the free flyer's and its limb's).
  const std::vector<std::vector<int>>& pointColumns() const { return columns_; }
  /// pointColumns() as contiguous runs (go2: the free flyer's 6 and the leg's 3), so that the
  /// per-point blocks are added as a few dense blocks instead of element by element.
  struct ColumnRun {
    int velocity_index;  ///< first column in the full nv
    int compact_index;   ///< first column in the point's compact Jacobian
    int length;
  };
  const std::vector<std::vector<ColumnRun>>& pointColumnRuns() const { return runs_; }
  const SmoothedContactOptions& options() const { return options_; }
  inertia::Parametrization parametrization() const { return parametrization_; }
  int nq() const { return regressor_.nq(); }
  int nv() const { return regressor_.nv(); }
  int numPoints() const { return static_cast<int>(points_.size()); }
  int numParameters() const { return regressor_.numParameters(); }  ///< 10|S|
  Eigen::VectorXd nominalTheta() const {
    return dynamics::nominalTheta(regressor_, parametrization_);
  }

 private:
  RegressorModel regressor_;
  SupportPattern support_;
  std::vector<model::ContactPoint> points_;
  std::vector<pinocchio::JointIndex> joints_;
  std::vector<pinocchio::SE3> placements_;
  std::vector<std::vector<int>> columns_;
  std::vector<std::vector<ColumnRun>> runs_;
  SmoothedContactOptions options_;
  inertia::Parametrization parametrization_;
};

/// Every buffer of the step and its derivatives. Outputs are public, valid after the call named on
/// each member.
class SmoothedContactData {
 public:
  explicit SmoothedContactData(const SmoothedContactModel& model);

  // ---- smoothedContactStep and computeSmoothedContactDerivatives ----
  Eigen::VectorXd v_next;  ///< nv: v+ [m/s, rad/s], v's frames
  /// 3 np: force of the floor on the robot at each point, world axes, stacked (f_x, f_y, f_z) per
  /// point [N]: f_z the normal force (eq. 18 / dt), (f_x, f_y) the friction force (eq. 19 / dt).
  Eigen::VectorXd force;
  Eigen::VectorXd gap;  ///< np: phi_i(q), height of each point above the floor [m]
  /// np: delta_i, how far each point sinks into the compliant floor [m] (compliance f^n_i at the
  /// solution; zero on a rigid floor).
  Eigen::VectorXd deflection;
  SmoothedContactSummary summary;
  double dt = 0;  ///< the step's dt [s], for computeSmoothedContactForceDerivatives
  /// True once computeSmoothedContactDerivatives filled the derivatives of v+ for this step; every
  /// new step clears it, so that the force derivatives are never built from another step's.
  bool has_derivatives = false;

  // ---- computeSmoothedContactDerivatives (implicit function theorem, eq. 34) ----
  Eigen::MatrixXd dvnext_dq, dvnext_dv, dvnext_dtau;  ///< nv x nv (q: tangent space)
  Eigen::MatrixXd dvnext_dtheta;                      ///< nv x 10|S|
  // ---- computeSmoothedContactForceDerivatives ----
  Eigen::MatrixXd dforce_dq, dforce_dv, dforce_dtau;  ///< 3np x nv
  Eigen::MatrixXd dforce_dtheta;                      ///< 3np x 10|S|

  // ---- workspaces ----
  ParametrizedInertias inertias;
  pinocchio::Data pin;
  RegressorData regressor;
  Eigen::MatrixXd M;               ///< nv x nv, full
  Eigen::VectorXd momentum;        ///< nv: M v + dt (tau - h), the linear term of c
  Eigen::MatrixXd jacobian;        ///< 3np x nv: world-axes linear Jacobians of the points
  Eigen::VectorXd lift;            ///< nv: base velocity that translates the robot up at 1 m/s
  Eigen::VectorXd point_velocity;  ///< 3np: J v+ at the current iterate
  Eigen::VectorXd impulse;         ///< 3np: lambda at the current iterate [N s]
  /// 3 x 3np: K_i = -dlambda_i / d(J_i v+); with compliance, once assembleNewtonSystem ran, the
  /// deflection eliminated (K_i - a_i a_i^T / d_i), so that everything downstream is unchanged.
  Eigen::MatrixXd barrier_hessian;
  /// Compliance (np each): the deflection's gradient g_delta_i = delta_i / compliance -
  /// lambda^n_i / dt, its curvature d_i = 1 / compliance + K_i,zz / dt^2, Newton's deflection step
  /// and a line-search trial's deflection; 3 x np: a_i = K_i e_z / dt, the coupling to J_i v+;
  /// 3np: sum of a_i g_delta_i / d_i per point, the reduced gradient's correction.
  Eigen::VectorXd deflection_gradient, deflection_curvature, deflection_step, trial_deflection;
  Eigen::MatrixXd deflection_coupling;
  Eigen::VectorXd deflection_correction;
  Eigen::VectorXd gradient, newton_step, trial, scratch;  ///< nv
  Eigen::VectorXd mass_velocity;  ///< nv: M x at Newton's iterate, carried along its steps
  Eigen::MatrixXd kj;  ///< 3np x nv: blockdiag(K_i) J, at v+ (computeSmoothedContactDerivatives)
  Eigen::MatrixXd kd;  ///< 3np x nv: blockdiag(K_i) D, D the points' direct q-dependence
  /// Newton's Hessian H = M + sum J_i^T K_i J_i in its M (upper triangle) and H's U D U^T
  /// factorization in its U, D, Dinv: H keeps the sparsity of the kinematic tree (each J_i^T K_i
  /// J_i lives on one branch), which Pinocchio's cholesky::decompose exploits.
  pinocchio::Data factorization;
  Eigen::Matrix<double, 6, Eigen::Dynamic> frame_jacobian, velocity_dq, velocity_dv;  ///< 6 x nv
  std::vector<pinocchio::Force> external_forces;  ///< njoints: contact forces, joint frames
  Eigen::VectorXd mean_acceleration;              ///< nv: (v+ - v) / dt
  Eigen::MatrixXd dg_dq, dg_dv, hessian_inverse;  ///< nv x nv
  Eigen::MatrixXd point_velocity_dq;              ///< 3np x nv: d(J_i v+)/dq at fixed v+
  /// Each point's Jacobian restricted to its pointColumns(), and K_i times it.
  std::vector<Eigen::Matrix<double, 3, Eigen::Dynamic>> compact_jacobians;
  Eigen::Matrix<double, 3, Eigen::Dynamic> compact_kj;
  /// Line search along a Newton step d from x: J x, J d, the barrier's sum of log s_i at x.
  Eigen::VectorXd base_point_velocity, step_point_velocity;
  double base_log_sum = 0;
  // Sticking start (M's sparse factorization in pin.U, pin.D): M^-1 J^T, the Delassus matrix
  // J M^-1 J^T of the held points, and its multipliers.
  Eigen::MatrixXd minv_jt, delassus;
  Eigen::LLT<Eigen::MatrixXd> delassus_llt;
  Eigen::VectorXd free_velocity, contact_target;
  Eigen::VectorXi held_points;  ///< np: 1 for the points the sticking start held
};

/// One step: v+ by Newton's method on eq. 17 from a strictly feasible start (options.start), and
/// the forces of eqs. 18-19 divided by dt. Never returns NaN: a solve that does
/// not converge reports it in data.summary and returns its last (feasible) iterate.
/// \param q (nq, normalized quaternion), v (nv), tau generalized force (nv) [N, N m],
///        theta_S (10|S|), dt > 0 [s].
/// \return data.v_next; data.force, data.gap and data.summary are set too.
/// \throws InputError on a wrong size, a non-finite input or dt <= 0.
const Eigen::VectorXd& smoothedContactStep(const SmoothedContactModel& model,
                                           SmoothedContactData& data,
                                           const Eigen::Ref<const Eigen::VectorXd>& q,
                                           const Eigen::Ref<const Eigen::VectorXd>& v,
                                           const Eigen::Ref<const Eigen::VectorXd>& tau,
                                           const Eigen::Ref<const Eigen::VectorXd>& theta_S,
                                           double dt);

/// The step and the derivatives of v+ w.r.t. q (tangent space), v, tau and theta_S at its solution
/// (eq. 34). The derivatives are those of the converged solution: check data.summary.converged().
/// \param solution optional v+ of an earlier smoothedContactStep at the same inputs (a caller
///        that keeps it, as an estimator's calc does): Newton starts there instead of at
///        options.start and confirms it in one step. Any strictly feasible velocity is a valid
///        start (the minimizer is unique); an infeasible one is lifted into the cones.
/// \throws InputError as smoothedContactStep, or on a solution of the wrong size or not finite.
void computeSmoothedContactDerivatives(const SmoothedContactModel& model, SmoothedContactData& data,
                                       const Eigen::Ref<const Eigen::VectorXd>& q,
                                       const Eigen::Ref<const Eigen::VectorXd>& v,
                                       const Eigen::Ref<const Eigen::VectorXd>& tau,
                                       const Eigen::Ref<const Eigen::VectorXd>& theta_S, double dt,
                                       const Eigen::VectorXd* solution = nullptr);

/// The derivatives of the forces w.r.t. q, v, tau and theta_S, from those of v+ (df_i = -(1/dt)
/// K_i (J_i dv+ + D_i dq)). Call after computeSmoothedContactDerivatives on the same data; kept
/// apart because an estimator that only needs v+ skips them (3np x (3nv + 10|S|) products).
/// \throws InputError unless computeSmoothedContactDerivatives ran on data since its last step.
void computeSmoothedContactForceDerivatives(SmoothedContactData& data);

}  // namespace heft::dynamics
