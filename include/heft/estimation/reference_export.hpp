#pragma once
/// \file heft's estimation problem (a fixed-base robot or a free-flyer base with point contacts,
/// touchdown impulses, encoders, IMU and motion capture) in the file format of the Crocoddyl
/// reference (reference/estimation_reference.cpp, program heft-reference-estimation), and its
/// result file.
///
/// Crocoddyl 3.2.1 runs on libpinocchio 4.0.0, heft on 4.1 (different pinocchio::Model layout), so
/// the reference is a separate program driven through files (docs/install.md, "Crocoddyl
/// pairing"). It solves the same problem with FDDP, theta appended to the state (identity
/// dynamics) and the arrival and parameter priors on an extra first node (docs/estimation.md,
/// "Crocoddyl reference"). Used by tests/reference_test.cpp and bench/estimation_bench.cpp.
#include <string>
#include <utility>
#include <vector>

#include <Eigen/Core>

#include "heft/estimation/log_problem.hpp"

namespace heft::estimation {

/// A point where the reference evaluates running stage `knot`: f(x, w; theta) and its cost.
struct ReferenceCheck {
  int knot = 0;
  Eigen::VectorXd x, w, theta;
};

/// The reference solve's settings (its `solver` and `check` records).
struct ReferenceOptions {
  int max_iterations = 100;
  /// heft's relative rule: FDDP stops once its predicted decrease (half the directional
  /// derivative of a Gauss-Newton step) is below 0.5 tolerance (1 + cost), i.e. when
  /// RiccatiOptions::tolerance would stop heft.
  double tolerance = 1e-9;
  int threads = 1;      ///< ShootingProblem threads (the wheel is built with OpenMP)
  int repetitions = 1;  ///< solves of the same problem, each timed (solve() alone)
  /// Points where the reference evaluates a running stage (cross-checks of its model).
  std::vector<ReferenceCheck> checks;
};

/// What heft-reference-estimation wrote.
struct ReferenceResult {
  bool converged = false;  ///< SolverFDDP::solve returned true
  int iterations = 0;      ///< iterations run (each a direction and a line search)
  int solver_iter = 0;     ///< SolverFDDP::get_iter()
  double initial_cost = 0, cost = 0, stop = 0, th_stop = 0;
  std::vector<double> seconds;       ///< solve() wall time per repetition [s]
  Eigen::VectorXd theta;             ///< np
  std::vector<double> cost_history;  ///< cost after each iteration
  std::vector<double> time_history;  ///< seconds from the start of solve() to each iteration's end
  std::vector<bool> feasible_history;  ///< every gap closed after each iteration
  /// One per ReferenceOptions::checks, in order.
  struct Check {
    int knot = 0;
    Eigen::VectorXd xnext;  ///< f(x, w; theta)
    double cost = 0;        ///< 0.5 |r_k(x, w)|^2
    Eigen::MatrixXd F;      ///< ndx x (ndx + np): d f / d(x, theta), tangent spaces
    Eigen::MatrixXd G;      ///< ndx x ndx: d f / d w
  };
  std::vector<Check> checks;
  double medianSeconds() const;
  /// Seconds until the first iteration that leaves a feasible iterate (every gap closed) whose
  /// cost is <= `cost` (from the histories), or a negative number if none does. An infeasible
  /// iterate's cost can be below the optimum.
  double secondsToCost(double cost) const;
};

/// Writes `lp` (its problem, initial guess lp.xs / lp.ws / lp.theta, its model's inertias,
/// armature, gravity and sensor and contact frames, each stage's measurements, process-noise
/// weights, contact set and touchdown) as heft-reference-estimation's input. `urdf` is the robot's
/// file (model::RobotModel::source()).
/// \throws InputError if the problem is not one the reference models: a fixed base or a free-flyer
///   root whose other joints have one coordinate each, log-Cholesky parameters, 3D point contacts
///   in LOCAL_WORLD_ALIGNED without Baumgarte gains or regularization, rigid touchdowns
///   (restitution 0); or if the file cannot be written.
void writeReferenceProblem(const std::string& path, const LogProblem& lp, const std::string& urdf,
                           const ReferenceOptions& options);

/// Parses a result file. \throws InputError naming the file and the record on a malformed one.
ReferenceResult readReferenceResult(const std::string& path);

/// Runs `executable problem_path result_path` and parses the result.
/// \throws SolveError if the program fails (its exit code in the message), InputError as above.
ReferenceResult runReference(const std::string& executable, const std::string& problem_path,
                             const std::string& result_path);

}  // namespace heft::estimation
