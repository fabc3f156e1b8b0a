#pragma once
/// \file A fixed-base estimation problem from a log: one knot per joint sample (every `stride`-th),
/// the logged torque as the dynamics input, encoders as measurements, the nominal model as the
/// prior and the initial guess (docs/estimation.md, "From a log").
///
/// Floating-base logs need contact phases and IMU residuals, which do not exist yet: they are
/// rejected with an InputError that says so.
#include <memory>
#include <string>
#include <vector>

#include <Eigen/Core>

#include "heft/dynamics/forward_dynamics.hpp"
#include "heft/estimation/multibody_stage.hpp"
#include "heft/estimation/problem.hpp"
#include "heft/inertia/inertia.hpp"
#include "heft/io/log.hpp"
#include "heft/model/model.hpp"

namespace heft::estimation {

struct LogProblemOptions {
  std::vector<std::string> identified_bodies;  ///< body names (model::RobotModel::bodyIndex)
  inertia::Parametrization parametrization = inertia::Parametrization::LogCholesky;
  int first_sample = 0;      ///< joint sample of knot 0
  int knots = 1000;          ///< N: running stages (N + 1 knots)
  int stride = 1;            ///< samples per step: dt = stride * the log's period
  double torque_std = 0.05;  ///< joint-torque noise [N m]: the generalized-force process noise
  /// Configuration process noise per step [rad]: what semi-implicit Euler misses over one step.
  double configuration_std = 1e-6;
  double encoder_std = 3e-5;         ///< [rad]
  bool use_logged_velocity = false;  ///< add the log's joint velocities as measurements
  double velocity_std = 0.05;        ///< [rad/s], logged velocity and the arrival prior on v
  /// Prior on theta around the nominal model: this std on every coordinate of theta (log-Cholesky
  /// coordinates are logarithms and lengths of the pseudo-inertia's factor).
  double theta_prior_std = 1.0;
  /// Throws InputError naming the field.
  void validate() const;
};

struct LogProblem {
  std::shared_ptr<const pinocchio::Model> model;
  std::shared_ptr<const dynamics::ForwardDynamicsModel> dynamics;
  std::shared_ptr<const MultibodyState> state;
  std::shared_ptr<const Problem> problem;
  std::vector<pinocchio::JointIndex> identified;  ///< S
  Eigen::VectorXd time;                           ///< N + 1 knot times [s]
  double dt = 0;
  // Initial guess: encoders, central-difference velocities, w = 0, nominal theta.
  std::vector<Eigen::VectorXd> xs, ws;
  Eigen::VectorXd theta;
};

/// \throws InputError naming the field: unknown body, free-flyer log, too few samples, a joint of
/// the model missing from the log, non-uniform sampling.
LogProblem buildLogProblem(const model::RobotModel& robot, const io::Log& log,
                           const LogProblemOptions& options);

}  // namespace heft::estimation
