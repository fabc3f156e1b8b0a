#pragma once
/// \file The energy observation (docs/estimation.md, "Energy observations") measured at an
/// estimate, for the studies that report what the row sees: per running stage, e_E at std 1 J,
/// the process noise's work dt v_m^T w_tau, and their difference (the step's own energy error).
/// The including test file must itself include "heft/estimation/..." (tests/CMakeLists.txt).
#include <cmath>
#include <vector>

#include <Eigen/Core>

#include "heft/estimation/inverse_dynamics_stage.hpp"
#include "heft/estimation/log_problem.hpp"
#include "heft/estimation/multibody_stage.hpp"

namespace heft::test {

struct EnergyRowsAtEstimate {
  double energy_rms = 0, noise_work_rms = 0, difference_rms = 0;  ///< [J] per step
};

/// `options` the estimate's (either formulation); `trajectory` the guess buildLogProblem took, if
/// any; xs, ws, theta the estimate.
inline EnergyRowsAtEstimate energyRowsAt(const model::RobotModel& robot, const io::Log& log,
                                         estimation::LogProblemOptions options,
                                         const std::vector<Eigen::VectorXd>* trajectory,
                                         const std::vector<Eigen::VectorXd>& xs,
                                         const std::vector<Eigen::VectorXd>& ws,
                                         const Eigen::VectorXd& theta) {
  options.use_energy = true;
  options.energy_std = 1;  // unwhitened; the row is the stage's last
  const estimation::LogProblem le =
      trajectory ? estimation::buildLogProblem(robot, log, options, *trajectory)
                 : estimation::buildLogProblem(robot, log, options);
  const int N = le.problem->horizon(), nv = robot.pinocchio().nv;
  double e2 = 0, p2 = 0, d2 = 0;
  for (int k = 0; k < N; ++k) {
    const estimation::StageModel& stage = le.problem->running(k);
    auto data = stage.createData();
    stage.calc(*data, xs[k], ws[k], theta);
    const double energy = data->r(stage.nr() - 1);
    // the step's start and end velocities and its generalized-force noise: the forward stage's
    // w_tau, the inverse stage's e
    Eigen::VectorXd v_start = xs[k].tail(nv), noise = ws[k].tail(nv);
    if (const auto* inverse = dynamic_cast<const estimation::InverseDynamicsStageModel*>(&stage)) {
      if (inverse->hasImpulse()) v_start = ws[k].segment(inverse->impulseStart(), nv);
      noise = ws[k].segment(2 * nv, nv);
    } else {
      v_start = static_cast<const estimation::MultibodyStageData&>(*data).v_start;
    }
    const double work = le.dt * 0.5 * (v_start + data->xnext.tail(nv)).dot(noise);
    e2 += energy * energy;
    p2 += work * work;
    d2 += (energy - work) * (energy - work);
  }
  return {std::sqrt(e2 / N), std::sqrt(p2 / N), std::sqrt(d2 / N)};
}

}  // namespace heft::test
