#pragma once
/// \file Method 3: physically consistent maximum a posteriori identification by
/// Levenberg-Marquardt over x = [theta_S, friction log-parameters, log armature]
/// (docs/identify.md, "Method 3"):
/// \f[ \min_x \tfrac12 \sum_r w_r^2 \big(A_r \pi(\theta) + G_r (\tau_f(v; \mu) + I_a a) -
/// b_r\big)^2
///     + \tfrac12 \|L_\pi^{-1}(\pi(\theta) - \bar\pi)\|^2 + \tfrac12 \|L_\mu^{-1}(\mu -
///     \bar\mu)\|^2
///     + \tfrac12 \|(\log I_a - \log \bar I_a) / s_a\|^2 \f]
/// subject to optional linear equalities E pi_S = e (total mass, left-right symmetry), enforced by
/// a KKT step at every iteration. theta is log-Cholesky or exponential-eigenvalue
/// (heft::inertia), so every iterate is physically consistent; friction amplitudes and rates and
/// armature are exp-parametrized, so they stay positive. Rows A, G, b come from a StackedProblem
/// (fixed base or the contact-null-space projection of method 4), weights w_r = 1 / sigma_c of
/// the row's channel.
#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include <Eigen/Core>

#include "heft/common/robust_loss.hpp"
#include "heft/dynamics/friction.hpp"
#include "heft/identify/information.hpp"
#include "heft/identify/least_squares.hpp"
#include "heft/identify/problem.hpp"
#include "heft/model/parameter_constraints.hpp"

namespace heft::identify {

/// E pi_S = e over the stacked pi_S (10 nb): heft/model/parameter_constraints.hpp. The MAP takes
/// equalities only.
using model::LinearConstraint;

/// model::totalMassConstraint over the layout's bodies.
LinearConstraint totalMassConstraint(const model::RobotModel& robot, const ParameterLayout& layout,
                                     double total_mass);
/// model::symmetryConstraint over the layout's bodies.
LinearConstraint symmetryConstraint(const ParameterLayout& layout, const std::string& left,
                                    const std::string& right);

/// A robust loss on the weighted data rows (the prior rows stay quadratic): heft/common/
/// robust_loss.hpp.
using heft::RobustLoss;

struct MapOptions {
  int max_iterations = 100;
  double function_tolerance = 1e-9;   ///< stop when the relative cost decrease is below this
  double step_tolerance = 1e-10;      ///< stop when |dx| <= tol (|x| + tol)
  double gradient_tolerance = 1e-10;  ///< stop when max |J^T r| <= tol
  double initial_lambda = 1e-4;       ///< LM damping, relative to diag(J^T J)
  /// When LM stops with a body near the consistency boundary, run it again from the data's
  /// least-squares bodies and keep the lower cost (the parametrization flattens at the boundary,
  /// where LM can stop short of the minimum). Unconstrained problems only.
  bool boundary_restart = true;
  /// Per channel std of the torque residual (StackedProblem channels). Empty: the RMS residual of
  /// an ordinary least-squares fit of the same rows (floored at 1e-3 of the largest).
  Eigen::VectorXd channel_std;
  /// Floor of an estimated channel std [N m]: a noise-free log fitted exactly must not get
  /// weights of 1e14 (the Gauss-Newton Hessian would lose the prior to rounding).
  double min_channel_std = 1e-2;
  std::vector<LinearConstraint> constraints;
  RobustLoss loss = RobustLoss::None;
  /// k of the robust loss in units of the row's channel std (rows are weighted by 1 / sigma);
  /// 0 = the loss's default: Huber 1.345, Cauchy 2.385 (95 % efficiency on Gaussian noise).
  double loss_scale = 0;
  /// The posterior covariance with the data's information divided by this (>= 1), the prior's
  /// kept; the estimate is unchanged. heft fuse's dispersion scale (fusion.hpp).
  double covariance_data_scale = 1;
  /// \throws InputError naming the field.
  void validate() const;
};

/// Friction of one joint as identified.
struct FrictionEstimate {
  std::string joint;
  /// gamma of eq. 56; CoulombViscous: (0, 0, 0, g3, coulomb_rate, g5).
  dynamics::Vector6 gamma = dynamics::Vector6::Zero();
  dynamics::Vector6 gamma_std = dynamics::Vector6::Zero();  ///< delta method: gamma std(mu)
  double coulomb() const { return gamma[3]; }
  double viscous() const { return gamma[5]; }
};

/// The MAP residual model: built once, evaluated by the solver and by the derivative tests.
class MapProblem {
 public:
  /// \throws InputError on inconsistent inputs (wrong channel_std size, a prior mean that is not
  ///   strictly consistent, constraint sizes).
  MapProblem(const StackedProblem& problem, const model::IdentifiedSet& set,
             const ProblemOptions& problem_options, const MapOptions& options);
  /// The same posterior with the data as rows linear in the linear vector l: r = Phi l - y
  /// (weights 1; whitenedRows of fused logs). Coulomb + viscous friction and no robust loss only.
  /// \throws InputError otherwise.
  MapProblem(const LinearSystem& rows, const model::IdentifiedSet& set,
             const ProblemOptions& problem_options, const MapOptions& options);
  int dimension() const { return dim_; }
  int numResiduals() const { return rows_ + prior_rows_; }
  int numDataResiduals() const { return rows_; }
  int numConstraints() const { return static_cast<int>(c_e_.size()); }
  /// Largest |e| of the constraints (1 when none): the scale of their rounding errors.
  double constraintScale() const {
    return c_e_.size() > 0 ? std::max(1.0, c_e_.cwiseAbs().maxCoeff()) : 1.0;
  }
  int frictionParametersPerJoint() const { return friction_per_joint_; }
  /// x at the prior means (the torque offsets at their least-squares values).
  Eigen::VectorXd initial() const;
  /// The second start: `from` with each body at the data's ordinary least-squares pi where that
  /// pi is consistent with the project's margin. Empty when no body's is.
  std::optional<Eigen::VectorXd> leastSquaresStart(const Eigen::VectorXd& from) const;
  /// pi_S (10 nb) of x.
  Eigen::VectorXd pi(const Eigen::VectorXd& x) const;
  /// Residuals r(x) (numResiduals): weighted data rows, then prior rows.
  void residual(const Eigen::VectorXd& x, Eigen::VectorXd& r) const;
  /// Analytical d r / d x (numResiduals x dimension).
  void jacobian(const Eigen::VectorXd& x, Eigen::MatrixXd& J) const;
  /// The weighted data rows before the robust loss (equal to residual()'s without one).
  void dataResidual(const Eigen::VectorXd& x, Eigen::VectorXd& r) const;
  /// Constraints c(x) = E pi(theta) - e and their Jacobian (numConstraints x dimension).
  void constraints(const Eigen::VectorXd& x, Eigen::VectorXd& c, Eigen::MatrixXd& C) const;
  /// Block diagonal d pi / d x (10 nb x dimension).
  Eigen::MatrixXd piJacobian(const Eigen::VectorXd& x) const;
  /// Friction estimates and armature from x (with std from a covariance of x, may be empty).
  std::vector<FrictionEstimate> friction(const Eigen::VectorXd& x,
                                         const Eigen::MatrixXd& covariance) const;
  Eigen::VectorXd armature(const Eigen::VectorXd& x) const;
  /// Torque offsets (layout.torque_offset_joints) from x [N m].
  Eigen::VectorXd torqueOffsets(const Eigen::VectorXd& x) const;
  /// Linear vector of the layout (pi, coulomb, viscous, armature, offsets) at x, to compare with
  /// methods 1-2.
  Eigen::VectorXd linearVector(const Eigen::VectorXd& x) const;
  /// d linearVector / d x (linearDimension x dimension).
  Eigen::MatrixXd linearJacobian(const Eigen::VectorXd& x) const;
  const ParameterLayout& layout() const { return layout_; }
  const Eigen::VectorXd& weights() const { return w_; }

 private:
  void frictionTerms(const Eigen::VectorXd& x, Eigen::MatrixXd& T, Eigen::MatrixXd* dT) const;
  void setDimensions(const MapOptions& options);
  void buildPriors(const model::IdentifiedSet& set, const ProblemOptions& po);
  void buildConstraints(const MapOptions& options);
  ParameterLayout layout_;
  inertia::Parametrization parametrization_;
  FrictionForm form_;
  double rate_;
  int nb_, nf_, na_, no_, dim_, rows_, prior_rows_, friction_per_joint_, nj_, N_;
  RobustLoss loss_ = RobustLoss::None;
  double loss_scale_ = 1;
  double offset_std_ = 1;
  Eigen::VectorXd offset_start_;   ///< initial() offsets: ordinary least squares'
  Eigen::VectorXd least_squares_;  ///< the data's ordinary least-squares linear vector (or empty)
  Eigen::MatrixXd WA_, WG_;
  Eigen::VectorXd Wb_, w_;
  Eigen::VectorXi sample_;
  Eigen::MatrixXd v_, a_;
  std::vector<Vector10> pi_mean_;
  std::vector<Matrix10> pi_Linv_;
  std::vector<Eigen::VectorXd> mu_mean_;
  std::vector<Eigen::MatrixXd> mu_Linv_;
  Eigen::VectorXd la_mean_;
  double la_std_;
  Eigen::MatrixXd c_E_;
  Eigen::VectorXd c_e_;
  bool linear_rows_ = false;  ///< data rows Phi l - y (second constructor)
  Eigen::MatrixXd Phi_;
  Eigen::VectorXd y_;
};

struct MapResult {
  Status status = Status::NotRun;
  std::string message;
  int iterations = 0;
  std::vector<double> cost_history;  ///< cost after each accepted iteration (first: initial)
  double initial_cost = 0, final_cost = 0;
  double constraint_violation = 0;  ///< max |E pi - e|
  Eigen::VectorXd x;                ///< solver coordinates
  Eigen::MatrixXd x_covariance;     ///< posterior, Gauss-Newton
  Eigen::VectorXd pi;               ///< 10 nb
  Eigen::MatrixXd pi_covariance;    ///< 10 nb x 10 nb, J_pi Cov_x J_pi^T
  Eigen::VectorXd pi_stddev;
  std::vector<FrictionEstimate> friction;
  Eigen::VectorXd armature, armature_std;
  Eigen::VectorXd linear;             ///< linear-layout vector (pi, coulomb, viscous, armature)
  Eigen::MatrixXd linear_covariance;  ///< its covariance, J_lin Cov_x J_lin^T
  ParameterLayout layout;
  std::vector<std::string> channel_names;
  Eigen::VectorXd channel_rms_before, channel_rms_after;  ///< unweighted torque residuals
  int data_rank = 0;  ///< rank of the data's linear regressor (identifiable directions)
  int linear_dimension = 0;
  /// The data in information form with the weights of this fit (Coulomb + viscous friction, no
  /// robust loss; empty otherwise): what fusing this log with others needs.
  std::optional<DataInformation> information;
  double time_s = 0;
  std::vector<std::string> warnings;
  std::string report() const;
};

/// Solves the MAP problem from the prior means. Never throws on a failed solve: the status says
/// why and the estimate is the last accepted (consistent) iterate. Directions the data cannot see
/// are regularized by the prior and reported as a warning.
/// \throws InputError on bad options or inputs.
MapResult solveMap(const StackedProblem& problem, const model::IdentifiedSet& set,
                   const ProblemOptions& problem_options, const MapOptions& options = {});
/// The same on rows linear in the linear vector (whitenedRows of fused logs' information).
MapResult solveMap(const LinearSystem& rows, const model::IdentifiedSet& set,
                   const ProblemOptions& problem_options, const MapOptions& options = {});

}  // namespace heft::identify
