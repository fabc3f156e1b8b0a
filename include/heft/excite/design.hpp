#pragma once
/// \file Excitation design for fixed-base arms (Swevers et al. 1997; Gautier and Khalil 1992):
/// the Fourier coefficients of every excited joint chosen by CMA-ES so that the stacked
/// joint-torque regressor of the base parameters is well conditioned (or carries the most
/// information), within the joint position, velocity, acceleration and torque limits.
///
/// Model/Data split: ExcitationDesign holds a const reference to a pinocchio::Model and owns its
/// pinocchio::Data and every buffer; cost() allocates nothing.
#include <Eigen/Core>
#include <Eigen/Eigenvalues>
#include <cstdint>
#include <string>
#include <vector>

#include <pinocchio/multibody/data.hpp>
#include <pinocchio/multibody/model.hpp>

#include "heft/excite/cmaes.hpp"
#include "heft/excite/fourier.hpp"

namespace heft::excite {

/// What the design maximizes.
enum class Criterion {
  Condition,  ///< minimize cond(Y_b), the 2-norm condition number of the base regressor
  LogDet,     ///< maximize log det(Y_b^T Y_b / sigma^2), the information (D-optimality)
};
std::string toString(Criterion criterion);
/// "condition" or "logdet". \throws InputError otherwise.
Criterion parseCriterion(const std::string& text);

struct DesignOptions {
  /// Joints the design moves (names of 1-DoF joints); empty = every 1-DoF joint. The others are
  /// held at the middle of their range (0 without limits) with zero rate.
  std::vector<std::string> joints;
  int harmonics = 5;               ///< L per joint
  double base_frequency = 0.1;     ///< [Hz]; the trajectory's period is 1 / this
  double duration = 20;            ///< [s]
  double ramp = 2;                 ///< [s] envelope at the start (excite::evaluate); 0 = none
  int samples = 201;               ///< design grid on [0, duration]: regressor rows and limits
  double position_margin = 0.15;   ///< fraction of the half range kept free at each limit
  double velocity_fraction = 0.6;  ///< of the URDF velocity limit, (0, 1]
  double max_acceleration = 8;     ///< [rad/s^2] every joint
  double torque_fraction = 0.9;    ///< of the URDF effort limit, (0, 1]
  Criterion criterion = Criterion::Condition;
  double torque_noise_std = 0.5;  ///< sigma [N m] of the information matrix and parameter stds
  int basis_samples = 200;        ///< random states that determine the base parameters
  std::uint64_t basis_seed = 1;
  /// Relative pivot threshold of the QR that finds the base: |R_ii| <= this max|R_jj| is zero.
  double basis_threshold = 1e-8;
  /// \throws InputError naming the field (unknown joints among them).
  void validate(const pinocchio::Model& model) const;
};

/// A trajectory of every 1-DoF joint of a fixed-base model: one series per velocity index.
struct ExcitationTrajectory {
  std::vector<FourierSeries> joints;  ///< nv entries; held joints have no harmonics
  double ramp = 0;                    ///< [s]
  /// q (nq), v, a (nv) at time t. Revolute and prismatic joints only (nq = nv).
  void evaluate(double t, Eigen::VectorXd& q, Eigen::VectorXd& v, Eigen::VectorXd& a) const;
};

/// States of a trajectory on a time grid.
struct TrajectorySamples {
  Eigen::VectorXd t;        ///< N times [s]
  Eigen::MatrixXd q, v, a;  ///< nq x N, nv x N, nv x N
  int size() const { return static_cast<int>(t.size()); }
};
/// `n` samples evenly spaced on [0, duration] (both ends included).
TrajectorySamples sampleTrajectory(const ExcitationTrajectory& trajectory, double duration, int n);

/// A base of the inertial parameters (10 per body, Pinocchio's dynamic-parameter order m, m c,
/// I about the joint frame's origin): the identifiable combinations beta = theta_b + K theta_d.
/// Found numerically: QR with column pivoting of the regressor stacked over random states
/// (positions, rates and accelerations uniform within the limits on the excited joints); the
/// first r pivoted columns are independent, the rest depend on them through K = R11^-1 R12.
struct BaseParameters {
  std::vector<int> columns;        ///< r independent columns of the full regressor
  std::vector<int> dependent;      ///< the other columns
  Eigen::MatrixXd K;               ///< r x (10 nb - r)
  std::vector<std::string> names;  ///< of the independent columns, "body.m", "body.Ixx", ...
  int rank() const { return static_cast<int>(columns.size()); }
};
BaseParameters baseParameters(const pinocchio::Model& model, const DesignOptions& options);

/// How a trajectory excites the base parameters.
struct Identifiability {
  int rows = 0;          ///< stacked regressor rows (samples x nv)
  int rank = 0;          ///< numerical rank of Y_b (singular values above 1e-10 of the largest)
  double condition = 0;  ///< sigma_max / sigma_min of Y_b (infinite when rank < columns)
  double log_det = 0;    ///< log det(Y_b^T Y_b / sigma^2) (-infinity when singular)
  /// Expected standard deviation of each base parameter, sigma sqrt(diag((Y_b^T Y_b)^-1)), for
  /// torque noise of std sigma on every row (infinite when singular).
  Eigen::VectorXd std;
};
Identifiability identifiability(const pinocchio::Model& model, const BaseParameters& base,
                                const TrajectorySamples& samples, double torque_noise_std);

/// The limits a trajectory must respect, per velocity index.
struct JointLimits {
  Eigen::VectorXd center, half_range;  ///< usable range: center +- half_range (margin applied)
  Eigen::VectorXd velocity, acceleration, torque;  ///< bounds on |qd|, |qdd|, |tau|
  static JointLimits from(const pinocchio::Model& model, const DesignOptions& options);
};

/// The largest use of each limit over samples and joints: |value| / bound (<= 1 within).
struct LimitUse {
  double position = 0, velocity = 0, acceleration = 0, torque = 0;
  std::string worst;  ///< "joint at t = ... s: velocity" of the largest use
  bool satisfied() const {
    return position <= 1 && velocity <= 1 && acceleration <= 1 && torque <= 1;
  }
};
/// Torques by RNEA of `model` (the nominal one).
LimitUse limitUse(const pinocchio::Model& model, const JointLimits& limits,
                  const TrajectorySamples& samples);

/// The design problem: decision vector x -> cost. Per excited joint, 2 L + 1 entries:
/// q0 = center + x_0 half_range and a_l, b_l = x vmax / L (vmax the joint's velocity bound).
class ExcitationDesign {
 public:
  ExcitationDesign(const pinocchio::Model& model, DesignOptions options);
  int dimension() const { return static_cast<int>(excited_.size()) * (2 * options_.harmonics + 1); }
  const DesignOptions& options() const { return options_; }
  const pinocchio::Model& model() const { return model_; }
  const BaseParameters& base() const { return base_; }
  const JointLimits& limits() const { return limits_; }
  ExcitationTrajectory decode(const Eigen::VectorXd& x) const;
  /// Feasible: the criterion (log cond(Y_b), or -log det(Y_b^T Y_b / sigma^2)). Infeasible:
  /// kInfeasible plus the summed limit excess, so every feasible trajectory ranks first.
  double cost(const Eigen::VectorXd& x);
  static constexpr double kInfeasible = 1e6;

 private:
  void decodeInto(const Eigen::VectorXd& x, ExcitationTrajectory& trajectory) const;
  double excess();    // limit excess of the current sample (q_, v_, a_); runs RNEA
  void accumulate();  // A_ += R_b^T R_b of the current sample
  double criterion();

  const pinocchio::Model& model_;
  DesignOptions options_;
  BaseParameters base_;
  JointLimits limits_;
  std::vector<int> excited_;  // velocity indices
  pinocchio::Data data_;
  ExcitationTrajectory trajectory_;
  Eigen::VectorXd q_, v_, a_;
  Eigen::MatrixXd Rb_, A_;
  Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> eigen_;
};

struct DesignResult {
  ExcitationTrajectory trajectory;
  CmaesSummary summary;
  LimitUse limits;                  ///< on the design grid
  Identifiability identifiability;  ///< on the design grid
  bool feasible() const { return limits.satisfied(); }
};

/// Runs CMA-ES on `design` from x = 0 (every joint still at mid-range).
DesignResult designExcitation(ExcitationDesign& design, const CmaesOptions& optimizer);

}  // namespace heft::excite
