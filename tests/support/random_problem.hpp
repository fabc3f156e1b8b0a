#pragma once
/// \file Random points of the estimation problems that the derivative and KKT tests build (they
/// need states, not physics). The including test file must itself include "heft/estimation/..."
/// so that CMake links the module (tests/CMakeLists.txt).
#include <random>

#include <Eigen/Core>
#include <pinocchio/algorithm/joint-configuration.hpp>

#include "heft/dynamics/forward_dynamics.hpp"
#include "heft/estimation/actuator_terms.hpp"
#include "heft/estimation/problem.hpp"
#include "heft/estimation/state.hpp"

namespace heft::test {

/// x = (neutral ⊕ dq, v) with dq and v drawn from N(0, spread^2) per coordinate.
inline Eigen::VectorXd randomState(const estimation::MultibodyState& state, std::mt19937& rng,
                                   double spread) {
  std::normal_distribution<double> n(0, 1);
  const pinocchio::Model& m = state.model();
  const Eigen::VectorXd dq = Eigen::VectorXd::NullaryExpr(m.nv, [&] { return spread * n(rng); });
  Eigen::VectorXd x(state.nx());
  pinocchio::integrate(m, pinocchio::neutral(m), dq, x.head(m.nq));
  x.tail(m.nv) = Eigen::VectorXd::NullaryExpr(m.nv, [&] { return spread * n(rng); });
  return x;
}

/// The random problems' arrival prior: x_0 around a random state (square-root information 10),
/// theta around the nominal inertias and the actuator terms' prior means (information 1).
inline estimation::ArrivalPrior randomArrivalPrior(const estimation::MultibodyState& state,
                                                   const dynamics::ForwardDynamicsModel& dynamics,
                                                   const estimation::ActuatorTermsModel* actuators,
                                                   std::mt19937& rng) {
  estimation::ArrivalPrior arrival;
  arrival.x_mean = randomState(state, rng, 0.2);
  arrival.x_sqrt_info = 10 * Eigen::MatrixXd::Identity(state.ndx(), state.ndx());
  const int ns = dynamics.numParameters(), na = actuators ? actuators->numParameters() : 0;
  arrival.theta_mean.resize(ns + na);
  arrival.theta_mean.head(ns) = dynamics.nominalTheta();
  if (actuators) arrival.theta_mean.tail(na) = actuators->priorMean();
  arrival.theta_sqrt_info = Eigen::MatrixXd::Identity(ns + na, ns + na);
  return arrival;
}

}  // namespace heft::test
