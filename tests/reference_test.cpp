// Crocoddyl (PyPI libcrocoddyl 3.2.1) is our reference solver. The wheel was compiled against
// libpinocchio 4.0.0, whose ModelTpl layout differs from the 4.1 that heft uses, so it lives in
// .deps/venv-reference and runs as separate programs (heft-reference-crocoddyl,
// heft-reference-estimation) that this test drives through files. This test links heft's modules
// (Pinocchio 4.1); never link crocoddyl into a heft target.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <random>
#include <sstream>
#include <string>

#include <Eigen/Cholesky>
#include <pinocchio/algorithm/aba.hpp>
#include <pinocchio/algorithm/joint-configuration.hpp>
#include <pinocchio/parsers/urdf.hpp>

#include "heft/common/error.hpp"
#include "heft/estimation/log_problem.hpp"
#include "heft/estimation/multibody_stage.hpp"
#include "heft/estimation/reference_export.hpp"
#include "heft/estimation/riccati_solver.hpp"
#include "heft/inertia/inertia.hpp"
#include "heft/io/log_io.hpp"
#include "heft/model/model.hpp"
#include "heft/results/truth.hpp"
#include "heft/sim/scenario.hpp"
#include "support/simulated_log.hpp"

namespace {

const std::string kUrdf =
    std::string(HEFT_ROBOTS_DIR_FOR_TESTS) + "/panda_description/urdf/panda.urdf";

// One line per solver: iterations, time, cost, and the mass of theta's first body (log-Cholesky)
// against the MuJoCo truth.
void printComparison(const heft::estimation::RiccatiSolver& solver,
                     const heft::estimation::ReferenceResult& ref, double true_mass) {
  const auto mass = [](const Eigen::VectorXd& theta) {
    return heft::inertia::piFromLogCholesky(theta.head<10>())(0);
  };
  const heft::estimation::RiccatiSummary& summary = solver.summary();
  std::cout << std::setprecision(10) << "heft:      " << summary.iterations << " iterations, "
            << summary.total_seconds << " s, cost " << summary.cost << ", max gap "
            << summary.max_gap << ", mass " << mass(solver.theta()) << "\n"
            << "crocoddyl: " << ref.iterations << " iterations (get_iter " << ref.solver_iter
            << "), " << ref.medianSeconds() << " s, cost " << ref.cost << ", stop " << ref.stop
            << " < " << ref.th_stop << ", initial " << ref.initial_cost << ", mass "
            << mass(ref.theta) << " (truth " << true_mass << ")\n";
}

// The reference's stage equals heft's at every check point: f(x, w; theta) within `tolerance` (1 +
// |f|) on the manifold, the stage cost within `tolerance` (1 + cost), the Jacobians within
// `jacobian_tolerance` relative.
void expectChecksMatch(const heft::estimation::LogProblem& lp,
                       const heft::estimation::ReferenceOptions& options,
                       const heft::estimation::ReferenceResult& ref, double tolerance,
                       double jacobian_tolerance) {
  ASSERT_EQ(ref.checks.size(), options.checks.size());
  for (size_t i = 0; i < ref.checks.size(); ++i) {
    const heft::estimation::ReferenceCheck& c = options.checks[i];
    const heft::estimation::StageModel& stage = lp.problem->running(c.knot);
    auto data = stage.createData();
    stage.calc(*data, c.x, c.w, c.theta);
    Eigen::VectorXd diff(stage.ndx());
    lp.state->difference(data->xnext, ref.checks[i].xnext, diff);
    std::cout << "check " << i << " (knot " << c.knot
              << "): |f_crocoddyl - f_heft| = " << diff.norm() << ", cost " << data->cost << " vs "
              << ref.checks[i].cost << "\n";
    EXPECT_EQ(ref.checks[i].knot, c.knot);
    EXPECT_LE(diff.norm(), tolerance * (1 + data->xnext.norm()))
        << "check " << i << "\ncrocoddyl " << ref.checks[i].xnext.transpose() << "\nheft      "
        << data->xnext.transpose();
    EXPECT_LE(std::abs(ref.checks[i].cost - data->cost), tolerance * (1 + data->cost))
        << "check " << i;
    // The reference's derivatives against heft's (which the stage's finite-difference tests
    // cover): d f / d(x, theta) and d f / d w, relative to their norms.
    stage.calcDiff(*data, c.x, c.w, c.theta);
    Eigen::MatrixXd F(stage.ndx(), stage.ndx() + stage.np());
    F << data->F_x, data->F_theta;
    ASSERT_EQ(ref.checks[i].F.rows(), F.rows());
    ASSERT_EQ(ref.checks[i].F.cols(), F.cols());
    ASSERT_EQ(ref.checks[i].G.cols(), data->F_w.cols());
    const double dF = (ref.checks[i].F - F).norm() / (1 + F.norm());
    const double dG = (ref.checks[i].G - data->F_w).norm() / (1 + data->F_w.norm());
    std::cout << "  derivatives: d(x, theta) " << dF << ", dw " << dG << " (relative)\n";
    EXPECT_LE(dF, jacobian_tolerance) << "check " << i;
    EXPECT_LE(dG, jacobian_tolerance) << "check " << i;
  }
}

// The same optimum. Each solver stopped with a predicted decrease of its last Gauss-Newton step
// below eps_stop = 0.5 tol (1 + J) (heft: |d1| / 2 <= tol (1 + J) / 2 at its returned iterate;
// Crocoddyl: th_stop set to the same value, tested after the step), so each final cost is within
// eps_stop of the minimum J*, and |J_heft - J_croc| <= 2 eps_stop. heft's returned iterate may
// keep gaps up to gap_tolerance: they must be negligible too (a full multiple-shooting step leaves
// gaps of second order).
// theta: near the minimum the cost minimized over the trajectory for a fixed theta (the profile
// cost) is J* + 0.5 dtheta^T S dtheta, with S the information of theta (the inverse of heft's
// posterior covariance). A final cost within eps_stop of J* puts theta within sqrt(2 eps_stop) of
// the optimum in that metric, so the two estimates differ by at most 2 sqrt(2 eps_stop) posterior
// standard deviations (Mahalanobis). `ref_theta`: Crocoddyl's, mirrored where the problem has
// mirror optima.
void expectSameOptimum(const heft::estimation::RiccatiSolver& solver,
                       const heft::estimation::RiccatiOptions& options,
                       const heft::estimation::ReferenceResult& ref,
                       const Eigen::VectorXd& ref_theta) {
  const heft::estimation::RiccatiSummary& summary = solver.summary();
  ASSERT_TRUE(summary.ok()) << summary.report();
  EXPECT_TRUE(ref.converged);
  EXPECT_EQ(ref.cost_history.size(), static_cast<size_t>(ref.iterations));
  EXPECT_EQ(ref.time_history.size(), static_cast<size_t>(ref.iterations));
  EXPECT_EQ(ref.feasible_history.size(), static_cast<size_t>(ref.iterations));
  EXPECT_LE(summary.max_gap, options.gap_tolerance);
  const double J = summary.cost;
  const double eps_stop = 0.5 * options.tolerance * (1 + J);
  std::cout << "cost difference " << ref.cost - J << ", bound " << 2 * eps_stop << "\n";
  EXPECT_LE(std::abs(ref.cost - J), 2 * eps_stop) << "heft " << J << ", crocoddyl " << ref.cost;
  const Eigen::VectorXd dtheta = ref_theta - solver.theta();
  const Eigen::LDLT<Eigen::MatrixXd> covariance(solver.thetaCovariance());
  ASSERT_EQ(covariance.info(), Eigen::Success);
  const double mahalanobis = std::sqrt(dtheta.dot(covariance.solve(dtheta)));
  std::cout << "theta difference: " << dtheta.norm() << " (2-norm), " << mahalanobis
            << " posterior std (Mahalanobis), bound " << 2 * std::sqrt(2 * eps_stop) << "\n";
  EXPECT_LE(mahalanobis, 2 * std::sqrt(2 * eps_stop));
}

TEST(Reference, CrocoddylMatchesPinocchioAbaAndFddpConverges) {
  pinocchio::Model model;
  pinocchio::urdf::buildModel(kUrdf, model);
  pinocchio::Data data(model);
  const std::string in_path = std::string(HEFT_BINARY_DIR) + "/reference_problem.txt";
  const std::string out_path = std::string(HEFT_BINARY_DIR) + "/reference_solution.txt";
  std::srand(7);
  const int n = 5;
  std::vector<Eigen::VectorXd> expected;
  {
    std::ofstream in(in_path);
    in.precision(17);
    in << kUrdf << "\naba " << n << "\n";
    for (int k = 0; k < n; ++k) {
      const Eigen::VectorXd q = pinocchio::randomConfiguration(model);
      Eigen::VectorXd v = Eigen::VectorXd::Random(model.nv);
      const Eigen::VectorXd tau = Eigen::VectorXd::Random(model.nv) * 5;
      if (k == 0) v.setZero();  // gravity-dominated case
      in << q.transpose() << " " << v.transpose() << " " << tau.transpose() << "\n";
      expected.push_back(pinocchio::aba(model, data, q, v, tau));
    }
    in << "fddp 30 0.01 100 0.5\n";
  }
  const std::string cmd = std::string(HEFT_REFERENCE_EXE) + " " + in_path + " " + out_path;
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  std::ifstream out(out_path);
  for (int k = 0; k < n; ++k) {
    Eigen::VectorXd a(model.nv);
    for (Eigen::Index i = 0; i < a.size(); ++i) out >> a(i);
    EXPECT_LT((a - expected[k]).norm(), 1e-9 * (1 + expected[k].norm()))
        << "crocoddyl: " << a.transpose() << "\npinocchio: " << expected[k].transpose();
  }
  std::string tag;
  int converged = 0, iters = 0;
  double cost = 0, stop = 0, xT0 = 0;
  out >> tag >> converged >> cost >> stop >> iters >> xT0;
  ASSERT_EQ(tag, "fddp");
  EXPECT_TRUE(converged);
  EXPECT_TRUE(std::isfinite(cost));
  EXPECT_LT(stop, 1e-6);
  EXPECT_GT(xT0, 0.05);
  std::cout << "fddp: iters " << iters << " cost " << cost << " stop " << stop << " xT0 " << xT0
            << "\n";
}

// heft's MAP problem on the MuJoCo double pendulum with a payload (link 2 identified, encoders,
// torque-space process noise), solved by heft's RiccatiSolver and by Crocoddyl's FDDP with theta
// appended to the state (reference/estimation_reference.cpp): the same problem, the same initial
// guess, the same optimum.
TEST(Reference, CrocoddylAugmentedStateFddpReachesHeftsOptimum) {
  using namespace heft;
  // without the torque bias, as in EstimateFromMujoco.DoublePendulumPayloadMassComAndTrajectory
  const auto sim = test::simulateNominalWithoutTorqueBias("double-pendulum-payload", 1.5, 1);
  const model::RobotModel robot = model::loadRobot("double_pendulum");
  estimation::LogProblemOptions options;
  options.identified_bodies = {robot.body(2).name};
  options.parametrization = inertia::Parametrization::LogCholesky;  // the reference's
  options.first_sample = 1000;
  options.knots = 400;
  const estimation::LogProblem lp = estimation::buildLogProblem(robot, sim.log, options);
  const int N = options.knots;

  estimation::RiccatiOptions heft_options;
  heft_options.max_iterations = 100;
  estimation::RiccatiSolver solver(lp.problem, heft_options);
  solver.setInitialGuess(lp.xs, lp.ws, lp.theta);
  const estimation::RiccatiSummary& summary = solver.solve();
  ASSERT_TRUE(summary.ok()) << summary.report();

  estimation::ReferenceOptions ref_options;
  ref_options.max_iterations = heft_options.max_iterations;
  ref_options.tolerance = heft_options.tolerance;
  // Cross-checks of the reference's stage model: at the initial guess (w = 0, encoders as q: the
  // residual is zero there) and at perturbed points that exercise every term (w_q, w_tau, a theta
  // away from the nominal one, encoder residuals).
  std::mt19937 rng(3);
  std::normal_distribution<double> normal;
  for (int k : {0, N / 2, N - 1}) {
    ref_options.checks.push_back({k, lp.xs[k], lp.ws[k], lp.theta});
    estimation::ReferenceCheck c{k, lp.xs[k], lp.ws[k], lp.theta};
    for (int i = 0; i < c.x.size(); ++i) c.x(i) += (i < 2 ? 1e-3 : 0.1) * normal(rng);
    for (int i = 0; i < c.w.size(); ++i) c.w(i) = (i < 2 ? 1e-6 : 0.05) * normal(rng);
    for (int i = 0; i < c.theta.size(); ++i) c.theta(i) += 0.1 * normal(rng);
    ref_options.checks.push_back(c);
  }
  const std::string in_path = std::string(HEFT_BINARY_DIR) + "/reference_estimation_problem.txt";
  const std::string out_path = std::string(HEFT_BINARY_DIR) + "/reference_estimation_result.txt";
  estimation::writeReferenceProblem(in_path, lp, robot.source(), ref_options);
  const estimation::ReferenceResult ref =
      estimation::runReference(HEFT_REFERENCE_ESTIMATION_EXE, in_path, out_path);

  printComparison(solver, ref, results::truthPi(robot, sim.log, 2)(0));

  // The same problem: the reference's stage dynamics and cost are heft's. Both sides run
  // Pinocchio's ABA on the same model (the problem file carries heft's inertias, armature and
  // gravity), compiled from two Pinocchio versions: the results may differ by the rounding of a few
  // hundred flops, ~1e2 eps relative to the magnitudes involved.
  // Jacobians: measured <= 8e-16 relative; 1e-10 is far below any modelling error (a missing
  // term shows as 1e-2 or more: the reference's uninitialized dIntegrate blocks gave 0.04-0.8).
  expectChecksMatch(lp, ref_options, ref, 1e-13, 1e-10);

  // Mirror optima. The motion is planar about the joints' x axes, so the data see only m, m c_y,
  // m c_z and I_xx = Sigma_yy + Sigma_zz of link 2 (Sigma = second moments). In log-Cholesky
  // coordinates (J = U U^T), s23 = U_23 / e^alpha enters Sigma_yy as s23^2 and otherwise only
  // Sigma_yz and Sigma_xy, which the data do not see: the data term is exactly even in s23, and
  // the prior nearly so (its mean s23 is 2.7e-10, an asymmetry of 2 |s23 mean s23| ~ 3e-11 in the
  // cost). The data want a larger Sigma_yy than the prior's, so s23 = 0 is a saddle of the cost and
  // the iterates leave it on the side rounding picks (Gauss-Newton's model does not see the
  // negative curvature, hence the slow escape). Compare Crocoddyl's estimate mirrored into heft's.
  // (s23 is theta[5]: [alpha, d1, d2, d3, s12, s23, s13, t1, t2, t3].)
  // The Mahalanobis bound of expectSameOptimum uses the Gauss-Newton information; along s23 it
  // overstates the curvature (the saddle above), so there the check is stricter than the argument.
  Eigen::VectorXd ref_theta = ref.theta;
  if (ref_theta(5) * solver.theta()(5) < 0) ref_theta(5) = -ref_theta(5);
  expectSameOptimum(solver, heft_options, ref, ref_theta);
}

// heft's MAP problem on a floating base: go2 trotting in MuJoCo, the trunk identified, encoders,
// IMU (gyro, orientation, accelerometer), motion capture, the log's contact flags, rigid point
// contacts and touchdown impulses. The reference builds the same stages from Crocoddyl's contact,
// impulse and free forward-dynamics models.
TEST(Reference, CrocoddylAugmentedStateFddpOnAFloatingBaseReachesHeftsOptimum) {
  using namespace heft;
  // 2.6 s: settle 1 s, fade-in 0.5 s, the feet swing fully from 1.5 s. Nominal noise with its
  // torque bias (0.05 N m, which heft does not model): on the bias-free log neither solver
  // converged in 100 iterations (docs/estimation.md, "Floating base").
  sim::SimulationOptions sim_options;
  sim_options.duration = 2.6;
  sim_options.seed = 1;
  sim_options.profile = sim::NoiseProfile::fromName("nominal");
  const auto sim = sim::simulate(sim::findScenario("go2-trot"), sim_options);
  ASSERT_TRUE(sim.summary.ok()) << sim.summary.report();
  const model::RobotModel robot = model::loadRobot("go2");
  estimation::LogProblemOptions options;
  options.identified_bodies = {robot.body(1).name};
  options.parametrization = inertia::Parametrization::LogCholesky;  // the reference's
  options.first_sample = 2000;
  options.knots = 300;
  options.theta_prior_std = 0.1;
  const estimation::LogProblem lp = estimation::buildLogProblem(robot, sim.log, options);
  const int N = options.knots;
  std::cout << "go2 window: " << lp.contact_phases << " contact changes, " << lp.touchdowns
            << " touchdowns, " << lp.transition_knots << " transition knots\n";
  ASSERT_GT(lp.touchdowns, 0);

  estimation::RiccatiOptions heft_options;
  heft_options.max_iterations = 100;
  estimation::RiccatiSolver solver(lp.problem, heft_options);
  solver.setInitialGuess(lp.xs, lp.ws, lp.theta);
  const estimation::RiccatiSummary& summary = solver.solve();

  estimation::ReferenceOptions ref_options;
  ref_options.max_iterations = heft_options.max_iterations;
  ref_options.tolerance = heft_options.tolerance;
  // Checks at every kind of stage: the first touchdown, a stance stage without impulse, knot 0.
  std::vector<int> knots = {0};
  for (int k = 1; k < N; ++k) {
    const auto& stage =
        dynamic_cast<const estimation::MultibodyStageModel&>(lp.problem->running(k));
    if (stage.impulse() && knots.size() == 1) knots.push_back(k);
    if (stage.contact() && !stage.impulse() && knots.size() == 2) knots.push_back(k);
  }
  std::mt19937 rng(5);
  std::normal_distribution<double> normal;
  const pinocchio::Model& model = *lp.model;
  for (int k : knots) {
    ref_options.checks.push_back({k, lp.xs[k], lp.ws[k], lp.theta});
    estimation::ReferenceCheck c{k, lp.xs[k], lp.ws[k], lp.theta};
    Eigen::VectorXd dq(model.nv);
    for (int i = 0; i < model.nv; ++i) dq(i) = 1e-3 * normal(rng);
    c.x.head(model.nq) = pinocchio::integrate(model, lp.xs[k].head(model.nq), dq);
    for (int i = 0; i < model.nv; ++i) c.x(model.nq + i) += 0.05 * normal(rng);
    for (int i = 0; i < c.w.size(); ++i) c.w(i) = (i < model.nv ? 1e-6 : 0.05) * normal(rng);
    for (int i = 0; i < c.theta.size(); ++i) c.theta(i) += 0.05 * normal(rng);
    ref_options.checks.push_back(c);
  }
  const std::string in_path =
      std::string(HEFT_BINARY_DIR) + "/reference_estimation_go2_problem.txt";
  const std::string out_path =
      std::string(HEFT_BINARY_DIR) + "/reference_estimation_go2_result.txt";
  estimation::writeReferenceProblem(in_path, lp, robot.source(), ref_options);
  const estimation::ReferenceResult ref =
      estimation::runReference(HEFT_REFERENCE_ESTIMATION_EXE, in_path, out_path);
  printComparison(solver, ref, results::truthPi(robot, sim.log, 1)(0));
  // The same stages. The contact dynamics are solved by two algorithms (Crocoddyl: the KKT system
  // through J M^-1 J^T; heft: Pinocchio 4.1's constraint Cholesky) from two Pinocchio versions, so
  // the results differ by rounding, amplified by the conditioning of the contact system (measured:
  // ~3e-15 for |v'| ~ 1); 1e-12 leaves room for that, far below any modelling difference (a
  // contact frame moved by 1 mm changes f by ~1e-6).
  // Jacobians: measured <= 1.3e-14 relative (different contact algorithms); bound 1e-10.
  expectChecksMatch(lp, ref_options, ref, 1e-12, 1e-10);
  expectSameOptimum(solver, heft_options, ref, ref.theta);
}

// What the reference does not model is refused with the field named, not silently changed.
TEST(Reference, ProblemExportRefusesWhatTheReferenceDoesNotModel) {
  using namespace heft;
  const model::RobotModel robot = model::loadRobot("go2");
  const io::Log log =
      io::readLog(std::string(HEFT_SOURCE_DIR) + "/data/fixtures/sim_go2_payload_3kg_2s.h5");
  estimation::LogProblemOptions options;
  options.identified_bodies = {robot.body(1).name};
  options.first_sample = 1000;
  options.knots = 20;
  const std::string path = std::string(HEFT_BINARY_DIR) + "/reference_refused_problem.txt";
  auto refusal = [&](const estimation::LogProblemOptions& o) {
    try {
      estimation::writeReferenceProblem(path, estimation::buildLogProblem(robot, log, o),
                                        robot.source(), estimation::ReferenceOptions());
    } catch (const heft::InputError& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  // exponential eigenvalue (the default)
  EXPECT_NE(refusal(options).find("parametrization"), std::string::npos) << refusal(options);
  options.parametrization = inertia::Parametrization::LogCholesky;
  EXPECT_EQ(refusal(options), "accepted");
  options.contact_damping = 5;  // Baumgarte damping: Crocoddyl's gains are not heft's terms
  const std::string damped = refusal(options);
  EXPECT_NE(damped.find("contact options"), std::string::npos) << damped;
  EXPECT_NE(damped.find("stage 0"), std::string::npos) << damped;
}

}  // namespace
