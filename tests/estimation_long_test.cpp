// Study of issue 5 (label `long`, outside the default suite): heft::estimation on MuJoCo payload
// logs of legged robots. Simulates each log with heft::sim, estimates the base body's inertia and
// the trajectory, writes the table to studies/payload/estimate.md and checks the targets.
//
// Regenerate: cmake --build build --target test_estimation_long && build/bin/test_estimation_long
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <sstream>
#include <string>
#include <vector>

#include "heft/estimation/log_problem.hpp"
#include "heft/estimation/riccati_solver.hpp"
#include "heft/identify/truth.hpp"
#include "heft/inertia/inertia.hpp"
#include "heft/io/atomic_file.hpp"
#include "heft/model/model.hpp"
#include "heft/sim/scenario.hpp"

namespace heft {
namespace {

double now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

struct Row {
  std::string scenario, setting, status;
  double true_mass = 0, nominal_mass = 0, mass = 0, mass_error = 0, com_error = 0;
  double base_rmse = 0, mocap_rmse = 0, seconds = 0;
  int iterations = 0;
};

constexpr int kFirstSample = 1000;  // after settling: t = 1 s
constexpr int kKnots = 1000;        // 1 s at the log's 1 kHz
constexpr int kIterations = 60;

// The two noise settings of the table: buildLogProblem's defaults (configuration noise 1e-4 per
// step at knots in contact, generalized-force noise x100 within 10 ms of a contact change: slack
// for the mismatch between rigid and MuJoCo's soft contacts), and "tight": 1e-6 everywhere and no
// inflation (rigid contacts trusted to the encoders' precision; the defaults before 2026-11-23).
Row estimate(const std::string& robot_name, const std::string& scenario, bool tight,
             int first_sample = kFirstSample) {
  Row row;
  row.scenario =
      scenario + (first_sample == kFirstSample
                      ? ""
                      : " from " + std::to_string(first_sample / 1000.0).substr(0, 3) + " s");
  row.setting = tight ? "tight" : "default";
  sim::SimulationOptions sim_options;
  sim_options.duration = (first_sample + kKnots + 10) / 1000.0;
  sim_options.seed = 1;
  // Nominal sensors without the torque bias: heft::estimation has no actuator-bias parameter yet.
  sim::NoiseProfile profile = sim::NoiseProfile::fromName("nominal");
  profile.torque_bias = 0;
  sim_options.profile = profile;
  const auto sim = sim::simulate(sim::findScenario(scenario), sim_options);
  EXPECT_TRUE(sim.summary.ok()) << sim.summary.report();
  const io::Log& log = sim.log;

  const model::RobotModel robot = model::loadRobot(robot_name);
  estimation::LogProblemOptions options;
  options.identified_bodies = {robot.body(1).name};
  options.knots = kKnots;
  options.first_sample = first_sample;
  if (tight) {
    options.contact_configuration_std = 1e-6;
    options.transition_noise_scale = 1;
  }
  const double t0 = now();
  const estimation::LogProblem lp = estimation::buildLogProblem(robot, log, options);
  estimation::RiccatiOptions solver_options;
  solver_options.max_iterations = kIterations;
  estimation::RiccatiSolver solver(lp.problem, solver_options);
  solver.setInitialGuess(lp.xs, lp.ws, lp.theta);
  const auto& summary = solver.solve();
  row.seconds = now() - t0;
  row.iterations = summary.iterations;
  row.status = estimation::toString(summary.status);
  std::printf("%s\n%s", scenario.c_str(), summary.report().c_str());

  const auto& truth = *log.truth;
  const Vector10 pi_true = identify::truthPi(robot, log, 1);
  const Vector10 pi = inertia::piFromTheta(options.parametrization, solver.theta().head<10>());
  row.true_mass = pi_true(0);
  row.nominal_mass = robot.pi(1)(0);
  row.mass = pi(0);
  row.mass_error = std::abs(pi(0) - pi_true(0)) / pi_true(0);
  row.com_error = (pi.segment<3>(1) / pi(0) - pi_true.segment<3>(1) / pi_true(0)).norm();

  // Base position against the truth: the estimate and the motion capture interpolated at the
  // knots (the initial guess, the raw measurement).
  double est = 0, raw = 0;
  for (int k = 0; k <= kKnots; ++k) {
    const Eigen::Vector3d p_true = truth.base_pose.row(lp.samples[k]).head<3>().transpose();
    est += (solver.xs()[k].head<3>() - p_true).squaredNorm();
    raw += (lp.xs[k].head<3>() - p_true).squaredNorm();
  }
  row.base_rmse = std::sqrt(est / (kKnots + 1));
  row.mocap_rmse = std::sqrt(raw / (kKnots + 1));
  return row;
}

TEST(Studies, PayloadEstimate) {
  std::vector<Row> rows;
  for (bool tight : {false, true}) {
    rows.push_back(estimate("go2", "go2-payload-3kg", tight));
    rows.push_back(estimate("go2", "go2-com-shift", tight));
    rows.push_back(estimate("go1", "go1-7.2kg", tight));
  }
  // go1's trot fades in over 1-1.5 s: the same window at full height
  rows.push_back(estimate("go1", "go1-7.2kg", false, 1600));

  std::ostringstream md;
  md << "# Payload: batch MAP estimation of trajectory and base inertia (heft::estimation)\n\n"
     << "Generated by `Studies.PayloadEstimate` in tests/estimation_long_test.cpp; regenerate "
        "with\n\n"
     << "```\ncmake --build build --target test_estimation_long && "
        "build/bin/test_estimation_long\n```\n\n"
     << "## Protocol\n\n"
     << "- Logs: heft::sim, noise profile `nominal` without the torque bias (heft::estimation has "
        "no actuator-bias parameter yet), seed 1.\n"
     << "- Window: " << kKnots << " knots at the log's 1 kHz from t = " << kFirstSample / 1000.0
     << " s (the issue's protocol asks for 10 s at dt 0.01; semi-implicit Euler at 10 ms with the "
        "torque held over the step was not tried).\n"
     << "- `buildLogProblem` defaults: base body identified (log-Cholesky, prior std 1 around the "
        "nominal model), encoders, IMU gyro and orientation, motion capture, contact phases from "
        "the flags (rigid point feet, an impulse at every touchdown), generalized-force noise "
        "0.05 N m on the joints and 2 N / 0.5 N m on the base, configuration noise 1e-6 per step "
        "(1e-4 at knots in contact), the generalized-force noise x100 within 10 ms of a contact "
        "change (setting `default`: rigid vs MuJoCo's soft contacts, docs/estimation.md); "
        "setting `tight`: configuration noise 1e-6 everywhere and no inflation.\n"
     << "- Solver: multiple shooting, at most " << kIterations
     << " iterations, default tolerances.\n"
     << "- Base RMSE: base position against the truth at the knots; motion capture: the raw "
        "measurement interpolated at the knots.\n\n"
     << "## Results (measured)\n\n"
     << "| scenario | setting | true mass [kg] | nominal [kg] | estimated [kg] | mass rel. error | "
        "COM error "
        "[mm] | base RMSE [mm] | motion capture RMSE [mm] | solver | iterations | time [s] |\n"
     << "|---|---|---|---|---|---|---|---|---|---|---|---|\n";
  char buffer[512];
  for (const Row& r : rows) {
    std::snprintf(
        buffer, sizeof(buffer),
        "| %s | %s | %.3f | %.3f | %.3f | %.3g %% | %.3g | %.3g | %.3g | %s | %d | %.1f |\n",
        r.scenario.c_str(), r.setting.c_str(), r.true_mass, r.nominal_mass, r.mass,
        100 * r.mass_error, 1000 * r.com_error, 1000 * r.base_rmse, 1000 * r.mocap_rmse,
        r.status.c_str(), r.iterations, r.seconds);
    md << buffer;
  }
  md << "\nIssue 5 targets (mass within 1 %, COM within 1 cm, base RMSE below the motion "
        "capture's):\n\n";
  for (const Row& r : rows) {
    md << "- " << r.scenario << " (" << r.setting << "): mass "
       << (r.mass_error < 0.01 ? "met" : "NOT met") << ", COM "
       << (r.com_error < 0.01 ? "met" : "NOT met") << ", base RMSE "
       << (r.base_rmse < r.mocap_rmse ? "met" : "NOT met") << ".\n";
  }
  md << "\nThe motion capture's RMSE is mostly its constant marker offset (2, -1, 3) mm, which the "
        "estimator trusts as much as the measurement: both RMSEs sit near 3.7 mm.\n";
  std::printf("%s", md.str().c_str());
  io::writeTextFileAtomically(std::string(HEFT_SOURCE_DIR) + "/studies/payload/estimate.md",
                              md.str(), true);

  // The targets: mass within 1 %, COM within 1 cm, base trajectory better than the raw
  // measurement.
  for (const Row& r : rows) {
    SCOPED_TRACE(r.scenario + " " + r.setting);
    EXPECT_LT(r.mass_error, 0.01);
    EXPECT_LT(r.com_error, 0.01);
    EXPECT_LT(r.base_rmse, r.mocap_rmse);
  }
}

}  // namespace
}  // namespace heft
