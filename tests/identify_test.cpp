// heft::identify: data preparation, methods 1-4 against MuJoCo ground truth (heft::sim), the MAP
// residual Jacobian against finite differences, and bad input.
#include <gtest/gtest.h>

#include <Eigen/Geometry>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "heft/common/error.hpp"
#include "heft/identify/fusion.hpp"
#include "heft/identify/identify.hpp"
#include "heft/inertia/inertia.hpp"
#include "heft/io/log.hpp"
#include "heft/model/identified_set.hpp"
#include "heft/model/model.hpp"
#include "heft/sim/scenario.hpp"
#include "support/finite_difference.hpp"
#include "support/perturbed_prior.hpp"

namespace heft::identify {
namespace {

double now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// One simulated log per (scenario, noise, duration), made once per test binary run.
const io::Log& simLog(const std::string& scenario, const std::string& noise, double duration = 0) {
  static std::map<std::string, io::Log> cache;
  const std::string key = scenario + "/" + noise + "/" + std::to_string(duration);
  auto it = cache.find(key);
  if (it != cache.end()) return it->second;
  sim::SimulationOptions o;
  o.noise = noise;
  o.seed = 1;
  o.duration = duration;
  const double t0 = now();
  sim::SimulationResult r = sim::simulate(sim::findScenario(scenario), o);
  std::printf("[sim] %s (%s, %g s): %s in %.2f s\n", scenario.c_str(), noise.c_str(),
              r.summary.simulated_time, sim::toString(r.summary.status).c_str(), now() - t0);
  EXPECT_TRUE(r.summary.ok()) << r.summary.report();
  return cache.emplace(key, std::move(r.log)).first->second;
}

const model::RobotModel& robot(const std::string& name) {
  static std::map<std::string, model::RobotModel> cache;
  auto it = cache.find(name);
  if (it == cache.end()) it = cache.emplace(name, model::loadRobot(name)).first;
  return it->second;
}

std::vector<results::JointFrictionTruth> scenarioFriction(const std::string& scenario) {
  std::vector<results::JointFrictionTruth> out;
  for (const auto& [joint, f] : sim::findScenario(scenario).model.joint_friction) {
    out.push_back({joint, f.frictionloss, f.damping, f.armature});
  }
  return out;
}

std::vector<std::string> pandaArmJoints() {
  std::vector<std::string> j;
  for (int i = 1; i <= 7; ++i) j.push_back("panda_joint" + std::to_string(i));
  return j;
}

// ---- data preparation ---------------------------------------------------------------------------

// The table of docs/identify.md: RMS acceleration error against MuJoCo's truth for each
// estimator and window, on panda-friction at each noise profile.
TEST(Identify, AccelerationFilterTable) {
  const auto& panda = robot("panda");
  std::printf("| noise | method | window | order | RMS error [rad/s^2] | relative |\n");
  std::printf("|---|---|---|---|---|---|\n");
  for (const std::string noise : {"none", "nominal", "harsh"}) {
    const io::Log& log = simLog("panda-friction", noise);
    double best = 1e300;
    int best_window = 0;
    std::string best_method;
    for (auto method :
         {AccelerationMethod::ForwardDifference, AccelerationMethod::SavitzkyGolayDerivative}) {
      for (int window : {1, 11, 21, 41, 81, 121, 161, 241, 321}) {
        if (window == 1 && method != AccelerationMethod::ForwardDifference) continue;
        PreparationOptions o;
        o.acceleration = method;
        o.filter = {window, window == 1 ? 0 : 3};
        o.start_time = 0.1;  // same kept samples for every window (edges of the widest)
        o.end_time = 19.8;
        const AccelerationError e = accelerationError(panda, log, o);
        std::printf("| %s | %s | %d | %d | %.4g | %.3g |\n", noise.c_str(),
                    toString(method).c_str(), window, o.filter.order, e.rms, e.rms / e.truth_rms);
        if (e.rms < best) {
          best = e.rms;
          best_window = window;
          best_method = toString(method);
        }
        EXPECT_TRUE(std::isfinite(e.rms));
      }
    }
    std::printf("best for %s: %s window %d (%.4g rad/s^2)\n", noise.c_str(), best_method.c_str(),
                best_window, best);
  }
}

TEST(Identify, JointsThatDoNotMatchTheModelAreRefusedByName) {
  io::Log log = simLog("panda", "none");
  log.truth.reset();
  log.joints.names[2] = "elbow_of_another_robot";
  try {
    prepareSamples(robot("panda"), log);
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("elbow_of_another_robot"), std::string::npos) << m;
    std::printf("message: %s\n", m.c_str());
  }
}

// ---- method 1 -----------------------------------------------------------------------------------

struct PandaSetup {
  model::IdentifiedSet set;
  ProblemOptions problem;
  Samples samples;
  StackedProblem stacked;
};

PandaSetup pandaSetup(const std::string& scenario, const std::string& noise, bool friction,
                      const PreparationOptions& prep, double min_speed = 0) {
  PandaSetup s;
  const auto& panda = robot("panda");
  model::IdentifiedSetOptions so;
  so.identify_friction = friction;
  if (friction) so.friction_joints = pandaArmJoints();
  s.set = test::perturbedPrior(model::IdentifiedSet::build(panda, so), 11);
  s.problem.identify_armature = friction;
  s.problem.min_speed = min_speed;
  s.samples = prepareSamples(panda, simLog(scenario, noise), prep);
  s.stacked = buildProblem(panda, s.samples, s.set, s.problem);
  return s;
}

TEST(Identify, PandaWithoutNoiseRecoversBaseParametersWithinOnePercent) {
  // exact accelerations (forward difference: MuJoCo's explicit Euler) and the SG derivative
  for (int config = 0; config < 2; ++config) {
    PreparationOptions prep;
    if (config == 0) {
      prep.acceleration = AccelerationMethod::ForwardDifference;
      prep.filter = {1, 0};
    } else {
      prep.filter = {11, 3};
    }
    prep.decimation = 5;
    const double t0 = now();
    const PandaSetup s = pandaSetup("panda", "none", false, prep);
    const double t_build = now() - t0;
    const LinearSystem sys = torqueSystem(s.stacked);
    const Eigen::VectorXd x0 = nominalLinearVector(s.stacked.layout, s.set, s.problem);
    const Eigen::VectorXd xt =
        results::truthLinearVector(robot("panda"), simLog("panda", "none"), sys.layout);
    for (bool weighted : {false, true}) {
      LeastSquaresOptions lo;
      lo.weighted = weighted;
      const LeastSquaresResult ls = solveLeastSquares(sys, x0, lo);
      const BaseParameterError e = baseParameterError(sys, ls.base, ls.x, xt);
      const BaseParameterError e0 = baseParameterError(sys, ls.base, x0, xt);
      std::printf(
          "%s, %s window %d: rows %d, rank %d of %d, cond %.3g; base-parameter error: "
          "norm %.3g %%, projected %.3g %%, max %.3g %% (%s) [prior: norm %.3g %%]; "
          "build %.2f s, solve %.3f s\n",
          weighted ? "WLS" : "OLS", toString(prep.acceleration).c_str(), prep.filter.window,
          ls.rows, ls.base.rank, static_cast<int>(ls.x.size()), ls.condition_number, 100 * e.norm,
          100 * e.projected, 100 * e.max, ls.base.expressions[e.argmax].substr(0, 60).c_str(),
          100 * e0.norm, t_build, ls.time_s);
      EXPECT_EQ(ls.status, Status::Converged);
      EXPECT_LT(e.projected, 0.01);
      EXPECT_LT(e.norm, 0.01);
      // each base parameter on its own: only with exact accelerations (small ones, such as a
      // product of inertia of 1e-4 kg m^2, lose tens of % to the filter's 0.7 % acceleration error)
      if (config == 0) EXPECT_LT(e.max, 0.01);
      EXPECT_TRUE(ls.x.allFinite());
      EXPECT_TRUE(ls.covariance.allFinite());
    }
  }
}

// ---- friction -----------------------------------------------------------------------------------

TEST(Identify, PandaFrictionWithinFivePercent) {
  const auto truth = scenarioFriction("panda-friction");
  for (double min_speed : {0.0, 0.05}) {
    PreparationOptions prep;
    prep.acceleration = AccelerationMethod::ForwardDifference;
    prep.filter = {1, 0};
    prep.decimation = 5;
    const PandaSetup s = pandaSetup("panda-friction", "none", true, prep, min_speed);
    const LinearSystem sys = torqueSystem(s.stacked);
    const Eigen::VectorXd x0 = nominalLinearVector(s.stacked.layout, s.set, s.problem);
    const auto& log = simLog("panda-friction", "none");
    const Eigen::VectorXd xt = results::truthLinearVector(robot("panda"), log, sys.layout, truth);
    const LeastSquaresResult ls = solveLeastSquares(sys, x0);
    const results::TruthErrors te =
        results::truthErrors(robot("panda"), log, sys.layout, ls.x, truth);
    const BaseParameterError be = baseParameterError(sys, ls.base, ls.x, xt);
    // an entry is identifiable on its own when no unseen direction moves it
    auto identifiable = [&](int i) { return ls.base.nullspace.row(i).norm() < 1e-6; };
    double worst_c = 0, worst_v = 0, worst_a = 0;
    for (std::size_t k = 0; k < te.joints.size(); ++k) {
      const auto& j = te.joints[k];
      worst_c = std::max(worst_c, j.coulomb_relative);
      worst_v = std::max(worst_v, j.viscous_relative);
      if (identifiable(sys.layout.armatureOffset() + static_cast<int>(k))) {
        worst_a = std::max(worst_a, j.armature_relative);
      } else {
        std::printf(
            "armature[%s] is not identifiable on its own (it moves the same torque as a "
            "link inertia): only its base-parameter combination is checked\n",
            j.joint.c_str());
      }
    }
    std::printf(
        "OLS min_speed %.2f: rows %d, base-parameter error max %.3g %%; worst coulomb "
        "%.3g %%, viscous %.3g %%, armature %.3g %%\n%s",
        min_speed, ls.rows, 100 * be.max, 100 * worst_c, 100 * worst_v, 100 * worst_a,
        te.report().c_str());
    if (min_speed > 0) {
      EXPECT_LT(worst_c, 0.05);
      EXPECT_LT(worst_v, 0.05);
      EXPECT_LT(worst_a, 0.05);
    }
  }
}
// ---- method 2 -----------------------------------------------------------------------------------

TEST(Identify, EnergyMethodOnPandaFriction) {
  const auto truth = scenarioFriction("panda-friction");
  const auto& log = simLog("panda-friction", "none");
  PreparationOptions prep;
  prep.acceleration = AccelerationMethod::ForwardDifference;
  prep.filter = {1, 0};
  const Samples samples = prepareSamples(robot("panda"), log, prep);
  model::IdentifiedSetOptions so;
  so.identify_friction = true;
  so.friction_joints = pandaArmJoints();
  const auto set = model::IdentifiedSet::build(robot("panda"), so);
  ProblemOptions po;
  po.identify_armature = true;
  for (int interval : {50, 200, 1000}) {
    EnergyOptions eo;
    eo.interval = interval;
    const double t0 = now();
    const LinearSystem sys = energySystem(robot("panda"), samples, set, po, eo);
    const Eigen::VectorXd x0 = nominalLinearVector(sys.layout, set, po);
    const Eigen::VectorXd xt = results::truthLinearVector(robot("panda"), log, sys.layout, truth);
    const LeastSquaresResult ls = solveLeastSquares(sys, x0);
    const BaseParameterError be = baseParameterError(sys, ls.base, ls.x, xt);
    const results::TruthErrors te =
        results::truthErrors(robot("panda"), log, sys.layout, ls.x, truth);
    double worst_c = 0, worst_v = 0;
    for (const auto& j : te.joints) {
      worst_c = std::max(worst_c, j.coulomb_relative);
      worst_v = std::max(worst_v, j.viscous_relative);
    }
    std::printf(
        "energy interval %d: %d rows, rank %d of %d, base-parameter error norm %.3g %%, "
        "max %.3g %%; worst coulomb %.3g %%, viscous %.3g %%; %.2f s\n",
        interval, sys.rows(), ls.base.rank, static_cast<int>(ls.x.size()), 100 * be.norm,
        100 * be.max, 100 * worst_c, 100 * worst_v, now() - t0);
    EXPECT_TRUE(ls.x.allFinite());
    EXPECT_GT(ls.base.rank, 0);
  }
}

// ---- method 3 -----------------------------------------------------------------------------------

// Central differences of every residual, column by column, with the tolerance model's defaults
// (tests/support/finite_difference.hpp): h = eps^(1/3), |D_h f - f'| <= 2 h^2/6 max|f3| +
// 10 eps max|f| / h, the third derivative f3 from the 4-point stencil at H = 1e-3.
// `rounding_scale`: magnitude of the terms f is computed from, when f is a small difference of
// large terms (a constraint E pi - e), 0 = max|f|. Returns the worst error / tolerance ratio.
template <class F>
double worstJacobianRatio(const F& f, const Eigen::VectorXd& x, const Eigen::MatrixXd& J,
                          double rounding_scale = 0) {
  heft::test::FiniteDifferenceOptions options;
  options.rounding_scale = rounding_scale;
  auto value = [&](const Eigen::VectorXd& y) {
    Eigen::VectorXd out;
    f(y, out);
    return out;
  };
  return heft::test::worstRatio(J, heft::test::centralDifferencesInVectorSpace(x, value, options));
}

TEST(Identify, MapResidualJacobianMatchesFiniteDifferences) {
  PreparationOptions prep;
  prep.decimation = 100;
  const auto& panda = robot("panda");
  const Samples samples = prepareSamples(panda, simLog("panda-friction", "nominal"), prep);
  std::mt19937 rng(3);
  std::normal_distribution<double> normal(0.0, 0.3);
  struct Case {
    inertia::Parametrization param;
    FrictionForm form;
    RobustLoss loss;
  };
  const std::vector<Case> cases = {
      {inertia::Parametrization::LogCholesky, FrictionForm::CoulombViscous, RobustLoss::None},
      {inertia::Parametrization::LogCholesky, FrictionForm::Full, RobustLoss::None},
      {inertia::Parametrization::ExponentialEigenvalue, FrictionForm::CoulombViscous,
       RobustLoss::None},
      {inertia::Parametrization::ExponentialEigenvalue, FrictionForm::Full, RobustLoss::None},
      {inertia::Parametrization::LogCholesky, FrictionForm::CoulombViscous, RobustLoss::Huber},
      {inertia::Parametrization::ExponentialEigenvalue, FrictionForm::Full, RobustLoss::Cauchy}};
  for (const Case& test_case : cases) {
    const auto param = test_case.param;
    const auto form = test_case.form;
    {
      model::IdentifiedSetOptions so;
      so.identify_friction = true;
      so.friction_joints = pandaArmJoints();
      so.parametrization = param;
      const auto set = model::IdentifiedSet::build(panda, so);
      ProblemOptions po;
      po.identify_armature = true;
      po.identify_torque_offsets = true;  // every joint: offsets enter the Jacobian too
      po.torque_offset_prior_std = 0.5;
      po.friction_form = form;
      const StackedProblem sp = buildProblem(panda, samples, set, po);
      MapOptions mo;
      mo.loss = test_case.loss;
      mo.constraints.push_back(totalMassConstraint(panda, sp.layout, panda.totalMass() + 0.5));
      const MapProblem mp(sp, set, po, mo);
      Eigen::VectorXd x = mp.initial();
      for (Eigen::Index i = 0; i < x.size(); ++i) x[i] += normal(rng);
      Eigen::MatrixXd J;
      mp.jacobian(x, J);
      const double ratio = worstJacobianRatio(
          [&](const Eigen::VectorXd& xx, Eigen::VectorXd& r) { mp.residual(xx, r); }, x, J);
      Eigen::VectorXd c;
      Eigen::MatrixXd C;
      mp.constraints(x, c, C);
      const double cratio = worstJacobianRatio(
          [&](const Eigen::VectorXd& xx, Eigen::VectorXd& cc) {
            Eigen::MatrixXd CC;
            mp.constraints(xx, cc, CC);
          },
          x, C, mp.constraintScale());
      std::printf(
          "%s, %s, loss %s: %d residuals x %d parameters, worst error / tolerance %.3g "
          "(constraints %.3g)\n",
          inertia::toString(param).c_str(), toString(form).c_str(),
          toString(test_case.loss).c_str(), mp.numResiduals(), mp.dimension(), ratio, cratio);
      EXPECT_LT(ratio, 1.0);
      EXPECT_LT(cratio, 1.0);
      if (form == FrictionForm::CoulombViscous && test_case.loss == RobustLoss::None) {
        // the same posterior with the data as information rows (heft fuse's MapProblem)
        const MapProblem rows(whitenedRows(dataInformation(torqueSystem(sp), mp.weights())), set,
                              po, mo);
        Eigen::MatrixXd JR;
        rows.jacobian(x, JR);
        const double rratio = worstJacobianRatio(
            [&](const Eigen::VectorXd& xx, Eigen::VectorXd& r) { rows.residual(xx, r); }, x, JR);
        std::printf("  information rows: %d residuals, worst error / tolerance %.3g\n",
                    rows.numResiduals(), rratio);
        EXPECT_LT(rratio, 1.0);
      }
    }
  }
}

// LM from the prior can stop with a body on the consistency boundary, where the log-Cholesky map
// flattens; the restart from the data's least-squares bodies must then reach a lower cost and say
// so. (Here the data pull several links outside, so the restart gains little; on the 30 s fleet
// of studies/fleet it is what brings arm0's fused tool from 13 % to 1.5 % inertia error.)
TEST(Identify, MapStoppedOnTheBoundaryRestartsToALowerCost) {
  PreparationOptions prep;
  prep.decimation = 20;
  const PandaSetup s = pandaSetup("panda-friction", "nominal", true, prep, 0.05);
  MapOptions without;
  without.boundary_restart = false;
  const MapResult stopped = solveMap(s.stacked, s.set, s.problem, without);
  double smallest_margin = 1;
  for (Eigen::Index b = 0; b < stopped.pi.size() / 10; ++b)
    smallest_margin = std::min(
        smallest_margin, inertia::checkConsistency(stopped.pi.segment<10>(10 * b)).relative_margin);
  ASSERT_LT(smallest_margin, 1e-3) << "the case no longer stops on the boundary";
  const MapResult restarted = solveMap(s.stacked, s.set, s.problem);
  std::printf("final cost %.8g without the restart, %.8g with it (%s)\n", stopped.final_cost,
              restarted.final_cost, restarted.message.c_str());
  EXPECT_LT(restarted.final_cost, stopped.final_cost);
  EXPECT_NE(restarted.message.find("restarted from the least-squares estimate"), std::string::npos)
      << restarted.message;
  EXPECT_TRUE(restarted.pi.allFinite() && restarted.pi_covariance.allFinite());
}

TEST(Identify, MapPandaFriction) {
  const auto truth = scenarioFriction("panda-friction");
  for (const std::string noise : {"none", "nominal"}) {
    PreparationOptions prep;
    if (noise == "none") {
      prep.acceleration = AccelerationMethod::ForwardDifference;
      prep.acceleration = AccelerationMethod::ForwardDifference;
      prep.filter = {1, 0};
    }
    prep.decimation = 20;
    const double t0 = now();
    const PandaSetup s = pandaSetup("panda-friction", noise, true, prep, 0.05);
    const auto& log = simLog("panda-friction", noise);
    const MapResult map = solveMap(s.stacked, s.set, s.problem);
    std::printf("cost history:");
    for (std::size_t k = 0; k < map.cost_history.size();
         k += std::max<std::size_t>(1, map.cost_history.size() / 15)) {
      std::printf(" %.6g", map.cost_history[k]);
    }
    std::printf("\n");
    const LinearSystem sys = torqueSystem(s.stacked);
    const Eigen::VectorXd xt = results::truthLinearVector(robot("panda"), log, sys.layout, truth);
    const LeastSquaresResult ls =
        solveLeastSquares(sys, nominalLinearVector(sys.layout, s.set, s.problem));
    const BaseParameterError be_map = baseParameterError(sys, ls.base, map.linear, xt);
    const BaseParameterError be_ls = baseParameterError(sys, ls.base, ls.x, xt);
    const results::TruthErrors te =
        results::truthErrors(robot("panda"), log, sys.layout, map.linear, truth);
    double worst_c = 0, worst_v = 0, worst_a = 0;
    for (std::size_t k = 0; k < te.joints.size(); ++k) {
      const auto& j = te.joints[k];
      worst_c = std::max(worst_c, j.coulomb_relative);
      worst_v = std::max(worst_v, j.viscous_relative);
      // armature of joints 1, 2 moves the same torque as a link inertia: not checked alone
      if (ls.base.nullspace.row(sys.layout.armatureOffset() + static_cast<int>(k)).norm() < 1e-6) {
        worst_a = std::max(worst_a, j.armature_relative);
      }
    }
    int inconsistent_ls = 0;
    for (int b = 0; b < sys.layout.numBodies(); ++b) {
      // consistent up to rounding: the MAP may converge to the boundary of the consistent set
      // (a degenerate body, pseudo-inertia rank deficient) when the data and the prior pull there
      const Vector10 pb = map.pi.segment<10>(10 * b);
      const auto rep = inertia::checkConsistency(pb);
      EXPECT_GT(rep.pseudo_inertia_margin, -1e-12 * pb.cwiseAbs().maxCoeff())
          << sys.layout.body_names[b];
      EXPECT_GT(pb[0], 0);
      if (!rep.consistent) {
        std::printf("MAP %s on the boundary: pseudo-inertia margin %.3g\n",
                    sys.layout.body_names[b].c_str(), rep.pseudo_inertia_margin);
      }
      if (!inertia::checkConsistency(ls.x.segment<10>(10 * b)).consistent) ++inconsistent_ls;
    }
    std::printf(
        "MAP panda-friction %s: %s after %d iterations, %.2f s (total %.2f s); base-param "
        "error norm %.3g %% (OLS %.3g %%), max %.3g %% (OLS %.3g %%); worst coulomb %.3g %%, "
        "viscous %.3g %%, armature %.3g %%; OLS bodies inconsistent: %d\n%s",
        noise.c_str(), toString(map.status).c_str(), map.iterations, map.time_s, now() - t0,
        100 * be_map.norm, 100 * be_ls.norm, 100 * be_map.max, 100 * be_ls.max, 100 * worst_c,
        100 * worst_v, 100 * worst_a, inconsistent_ls, te.report().c_str());
    EXPECT_NE(map.status, Status::Failed) << map.message;
    EXPECT_TRUE(map.pi_covariance.allFinite());
    EXPECT_LT(map.final_cost, map.initial_cost);
    if (noise == "none") {
      EXPECT_LT(worst_c, 0.05);
      EXPECT_LT(worst_v, 0.05);
      EXPECT_LT(worst_a, 0.05);
    }
  }
}

TEST(Identify, MapTotalMassConstraintHolds) {
  PreparationOptions prep;
  prep.decimation = 20;
  const PandaSetup s = pandaSetup("panda", "nominal", false, prep);
  const auto& log = simLog("panda", "nominal");
  double true_mass = 0;
  for (Eigen::Index i = 0; i < log.truth->body_pi.rows(); ++i)
    true_mass += log.truth->body_pi(i, 0);
  MapOptions mo;
  mo.constraints.push_back(totalMassConstraint(robot("panda"), s.stacked.layout, true_mass + 0.2));
  const MapResult map = solveMap(s.stacked, s.set, s.problem, mo);
  double mass = 0;
  for (int b = 0; b < s.stacked.layout.numBodies(); ++b) mass += map.pi[10 * b];
  std::printf("constrained total %.9f kg (target %.9f), violation %.3g, %s, %d iterations\n", mass,
              true_mass + 0.2, map.constraint_violation, toString(map.status).c_str(),
              map.iterations);
  EXPECT_NEAR(mass, true_mass + 0.2, 1e-8);
  EXPECT_NE(map.status, Status::Failed);
  // the posterior covariance has no spread along the constraint
  Eigen::RowVectorXd e = Eigen::RowVectorXd::Zero(map.pi.size());
  for (int b = 0; b < s.stacked.layout.numBodies(); ++b) e[10 * b] = 1;
  EXPECT_LT(std::sqrt(std::abs((e * map.pi_covariance * e.transpose())(0, 0))), 1e-8);
}

// ---- unobservable sets --------------------------------------------------------------------------

TEST(Identify, UnobservableSetIsRegularizedByThePriorWithAWarning) {
  // panda_link1 turns about the vertical axis: of its ten parameters only I_zz moves a torque
  const auto& panda = robot("panda");
  model::IdentifiedSetOptions so;
  so.bodies = {"panda_link1"};
  const auto set = model::IdentifiedSet::build(panda, so);
  PreparationOptions prep;
  prep.decimation = 20;
  const Samples samples = prepareSamples(panda, simLog("panda", "nominal"), prep);
  const ProblemOptions po;
  const StackedProblem sp = buildProblem(panda, samples, set, po);
  const LinearSystem sys = torqueSystem(sp);
  const LeastSquaresResult ls = solveLeastSquares(sys, nominalLinearVector(sys.layout, set, po));
  std::printf("LS: rank %d, warnings: %s\nbase parameters: %s\n", ls.base.rank,
              ls.warnings.empty() ? "none" : ls.warnings[0].c_str(),
              ls.base.expressions.empty() ? "-" : ls.base.expressions[0].c_str());
  std::printf("LS I_zz %.6g (std %.3g), nominal %.6g\n", ls.x[9], ls.stddev[9], ls.x0[9]);
  EXPECT_LT(ls.base.rank, 10);
  EXPECT_FALSE(ls.warnings.empty());
  EXPECT_TRUE(ls.x.allFinite() && ls.covariance.allFinite());
  const MapResult map = solveMap(sp, set, po);
  std::printf("MAP: %s, warnings: %s\n", toString(map.status).c_str(),
              map.warnings.empty() ? "none" : map.warnings[0].c_str());
  EXPECT_FALSE(map.warnings.empty());
  EXPECT_TRUE(map.pi.allFinite() && map.pi_covariance.allFinite());
  EXPECT_TRUE(inertia::checkConsistency(map.pi.head<10>()).consistent);
  // the unseen mass stays at the prior, with the prior's spread
  EXPECT_NEAR(map.pi[0], set.bodies[0].prior_mean[0], 1e-6 * set.bodies[0].prior_mean[0]);
  EXPECT_NEAR(map.pi_stddev[0], std::sqrt(set.bodies[0].prior_covariance(0, 0)),
              1e-3 * std::sqrt(set.bodies[0].prior_covariance(0, 0)));
}

// ---- method 4 -----------------------------------------------------------------------------------

struct Go2Setup {
  Samples samples;
  model::IdentifiedSet set;
  ProblemOptions problem;
};

Go2Setup go2Setup(const std::string& scenario, const std::vector<std::string>& bodies,
                  int decimation = 10) {
  Go2Setup s;
  const auto& go2 = robot("go2");
  PreparationOptions prep;
  prep.base_state = BaseStateSource::Truth;
  prep.decimation = decimation;
  s.samples = prepareSamples(go2, simLog(scenario, "nominal"), prep);
  model::IdentifiedSetOptions so;
  so.bodies = bodies;
  s.set = model::IdentifiedSet::build(go2, so);
  s.problem.contact_offset = sim::findScenario(scenario).model.contact_radius;
  return s;
}

TEST(Identify, Go2PayloadBaseMassAndComByContactNullSpace) {
  const auto& go2 = robot("go2");
  for (const std::string scenario : {"go2-payload-3kg", "go2-com-shift"}) {
    const double t0 = now();
    Go2Setup s = go2Setup(scenario, {"base"});
    const auto& log = simLog(scenario, "nominal");
    const StackedProblem sp = buildProblem(go2, s.samples, s.set, s.problem);
    const LinearSystem sys = torqueSystem(sp);
    const LeastSquaresResult ls =
        solveLeastSquares(sys, nominalLinearVector(sys.layout, s.set, s.problem));
    const results::TruthErrors te_ls = results::truthErrors(go2, log, sys.layout, ls.x);
    const results::TruthErrors te_nom = results::truthErrors(
        go2, log, sys.layout, nominalLinearVector(sys.layout, s.set, s.problem));
    const MapResult map = solveMap(sp, s.set, s.problem);
    const results::TruthErrors te_map = results::truthErrors(go2, log, sys.layout, map.linear);
    std::printf(
        "%s, method 4 (contact null space), base body, %d samples, %d rows, rank %d, "
        "cond %.3g, %.2f s\n nominal: %s OLS:     %s MAP:     %s",
        scenario.c_str(), s.samples.size(), sp.rows(), ls.base.rank, ls.condition_number,
        now() - t0, te_nom.report().c_str(), te_ls.report().c_str(), te_map.report().c_str());
    EXPECT_TRUE(ls.x.allFinite());
    EXPECT_NE(map.status, Status::Failed) << map.message;
    // measured (docs/identify.md): 0.3-0.5 % mass, 1-2 mm COM; checked with margin
    EXPECT_LT(te_map.bodies[0].mass_relative, 0.02);
    EXPECT_LT(te_map.bodies[0].com_error, 0.005);
    EXPECT_LT(te_ls.bodies[0].mass_relative, 0.02);
    EXPECT_LT(te_ls.bodies[0].com_error, 0.005);
  }
  // the base-rows variant: with four feet on the ground no base row is free of contact forces
  Go2Setup s = go2Setup("go2-payload-3kg", {"base"});
  s.problem.projection = Projection::BaseContactNullSpace;
  try {
    buildProblem(go2, s.samples, s.set, s.problem);
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    std::printf("base variant: %s\n", e.what());
  }
}

// The tilt columns against central differences of the rows under R <- R Exp(+-eps e_i) (on the
// manifold): every row is affine in the gravity seen in the base frame, which turns by
// -(sin eps / eps) (e_i x g_b) per unit of the difference, so the truncation error is eps^2 / 6 of
// the column, rounding about 1e-16 |tau| / eps.
TEST(Identify, BaseTiltColumnsAreTheTorqueChangeUnderABaseRotation) {
  const auto& go2 = robot("go2");
  Go2Setup s = go2Setup("go2-payload-3kg", {"base"}, 200);
  s.problem.projection = Projection::None;  // rows that do not depend on a null-space basis
  ProblemOptions with_tilt = s.problem;
  with_tilt.estimate_base_tilt = true;
  const StackedProblem p = buildProblem(go2, s.samples, s.set, with_tilt);
  ASSERT_EQ(p.base_tilt.rows(), p.rows());
  ASSERT_EQ(p.base_tilt.cols(), 2);
  EXPECT_EQ(buildProblem(go2, s.samples, s.set, s.problem).base_tilt.size(), 0);
  const double eps = 1e-4;
  // residual of the nominal model: full inverse dynamics minus the measured torques
  auto residual = [&](const Eigen::Vector2d& w) {
    Samples tilted = s.samples;
    tiltBase(w, tilted);
    const StackedProblem q = buildProblem(go2, tilted, s.set, s.problem);
    return Eigen::VectorXd(q.A * q.nominal_pi - q.b);
  };
  for (int i = 0; i < 2; ++i) {
    const Eigen::Vector2d e = Eigen::Vector2d::Unit(i) * eps;
    const Eigen::VectorXd fd = (residual(e) - residual(-e)) / (2 * eps);
    const double scale = p.base_tilt.col(i).cwiseAbs().maxCoeff();
    const double tau_scale = p.b.cwiseAbs().maxCoeff() + scale;
    const double tolerance = scale * eps * eps / 6 * 10 + 1e-16 * tau_scale / eps * 100;
    const double error = (fd - p.base_tilt.col(i)).cwiseAbs().maxCoeff();
    std::printf(
        "tilt column %d: max |column| %.3g N m/rad, max |fd - column| %.3g (tolerance %.3g)\n", i,
        scale, error, tolerance);
    EXPECT_GT(scale, 1.0);  // 15 kg of robot, gravity turned by a radian: tens of N m
    EXPECT_LT(error, tolerance);
  }
  // separation is at most 1: asking for more leaves the tilt unidentified and zero; a problem
  // built without the columns is refused
  const BaseTiltFit fit = fitBaseTilt(p);
  EXPECT_TRUE(fit.identified);
  EXPECT_GT(fit.separation, 1e-3);
  EXPECT_LE(fit.separation, 1.0);
  const BaseTiltFit refused = fitBaseTilt(p, 2.0);
  EXPECT_FALSE(refused.identified);
  EXPECT_TRUE(refused.tilt.isZero());
  EXPECT_THROW(fitBaseTilt(buildProblem(go2, s.samples, s.set, s.problem)), InputError);
  // tiltBase is a rotation about the base's own axes: the base z axis in the world moves by it
  Samples tilted = s.samples;
  tiltBase(Eigen::Vector2d(0.01, 0), tilted);
  const Eigen::Vector4d a = s.samples.q.col(0).segment<4>(3), b = tilted.q.col(0).segment<4>(3);
  const Eigen::Quaterniond ra(a[3], a[0], a[1], a[2]), rb(b[3], b[0], b[1], b[2]);
  EXPECT_NEAR((ra.conjugate() * rb).vec().x(), std::sin(0.005), 1e-12);
  EXPECT_NEAR((ra.conjugate() * rb).vec().y(), 0, 1e-12);
}

// A base-state estimate that stands 0.23 deg off the vertical (an accelerometer bias that no IMU
// can tell from a tilt while the robot stands), TALOS with a box on its torso, flat feet: the
// torso's estimate moves by centimetres; the tilt fitted to the torques undoes it. Study-style:
// the truth base pose, rotated by a known tilt, stands in for an estimator's output so that the
// tilt is the only error (a real log's estimate has one of this size: studies/unseen/base-tilt.md).
TEST(Identify, BaseTiltFitUndoesATiltedBaseState) {
  const auto& talos = robot("talos");
  io::Log log = simLog("talos-torso-2.9kg", "nominal");
  ASSERT_TRUE(log.truth.has_value());
  ASSERT_EQ(log.truth->base_pose.rows(), log.joints.time.size());
  const Eigen::Vector2d error(0.004, -0.0015);  // [rad], the estimate's tilt
  Samples rotate;
  rotate.free_flyer = true;
  rotate.q = log.truth->base_pose.transpose();
  rotate.time.resize(rotate.q.cols());
  tiltBase(error, rotate);
  log.joints.base_pose = rotate.q.transpose();
  log.joints.base_twist = log.truth->base_twist;
  // data/examples/talos_torso_identify.yaml
  model::IdentifiedSetOptions so;
  so.bodies = {"torso_2_link"};
  so.payload_bodies = {"torso_2_link"};
  const model::IdentifiedSet set = model::IdentifiedSet::build(talos, so);
  IdentifyOptions o;
  o.preparation.base_state = BaseStateSource::Log;
  o.preparation.filter = {161, 3};
  o.preparation.decimation = 10;
  o.problem.projection = Projection::ContactNullSpace;
  const IdentifyResult plain = identify(talos, log, set, o);
  o.problem.estimate_base_tilt = true;
  const IdentifyResult fitted = identify(talos, log, set, o);
  o.problem.estimate_base_tilt = false;
  o.preparation.base_state = BaseStateSource::Truth;
  const IdentifyResult truth = identify(talos, log, set, o);
  ASSERT_TRUE(plain.truth && fitted.truth && truth.truth);
  const auto& bp = plain.truth->bodies[0];
  const auto& bf = fitted.truth->bodies[0];
  const auto& bt = truth.truth->bodies[0];
  std::printf(
      "tilted base state: mass %.3f %%, COM %.2f mm; tilt fitted (%.5f, %.5f) rad for "
      "(%.5f, %.5f), separation %.3f: mass %.3f %%, COM %.2f mm; truth base state: mass "
      "%.3f %%, COM %.2f mm\n",
      100 * bp.mass_relative, 1e3 * bp.com_error, fitted.base_tilt[0], fitted.base_tilt[1],
      -error[0], -error[1], fitted.base_tilt_separation, 100 * bf.mass_relative, 1e3 * bf.com_error,
      100 * bt.mass_relative, 1e3 * bt.com_error);
  EXPECT_FALSE(plain.base_tilt_estimated);
  ASSERT_TRUE(fitted.base_tilt_estimated);
  EXPECT_GT(fitted.base_tilt_separation, 1e-3);
  // the fit undoes the error to a tenth of it
  EXPECT_LT((fitted.base_tilt + error).norm(), 0.1 * error.norm());
  // and the torso comes back to what the truth base state gives, where the tilted one is off
  EXPECT_LT(std::abs(bf.com_error - bt.com_error), 1e-3);
  EXPECT_LT(std::abs(bf.mass_relative - bt.mass_relative), 2e-3);
  EXPECT_GT(bp.com_error, 5e-3);
}

TEST(Identify, ContactDetectionFromKinematicsAgreesWithTheLog) {
  const auto& go2 = robot("go2");
  PreparationOptions prep;
  prep.base_state = BaseStateSource::Truth;
  prep.decimation = 10;
  const Samples from_log = prepareSamples(go2, simLog("go2-payload-3kg", "nominal"), prep);
  prep.detect_contacts = true;
  const Samples detected = prepareSamples(go2, simLog("go2-payload-3kg", "nominal"), prep);
  const double agree = (from_log.contact.array() == detected.contact.array()).cast<double>().mean();
  std::printf("detected contact flags agree with the log's on %.4f of foot-samples\n", agree);
  EXPECT_TRUE(detected.contacts_detected);
  EXPECT_GT(agree, 0.95);
}

TEST(Identify, SymmetryConstraintMirrorsLegs) {
  const auto& go2 = robot("go2");
  Go2Setup s = go2Setup("go2-nominal", {"base", "FL_thigh", "FR_thigh"}, 20);
  const StackedProblem sp = buildProblem(go2, s.samples, s.set, s.problem);
  MapOptions mo;
  mo.constraints.push_back(symmetryConstraint(sp.layout, "FL_thigh", "FR_thigh"));
  const MapResult map = solveMap(sp, s.set, s.problem, mo);
  std::printf("symmetry: violation %.3g, %s, %d iterations\n", map.constraint_violation,
              toString(map.status).c_str(), map.iterations);
  EXPECT_NE(map.status, Status::Failed);
  EXPECT_LT(map.constraint_violation, 1e-8);
}

}  // namespace
}  // namespace heft::identify

namespace heft::identify {
namespace {

// The whole run as the CLI will call it: every method on one log, truth errors attached.
TEST(Identify, IdentifyRunsEveryMethodEndToEnd) {
  const auto& panda = robot("panda");
  const auto& log = simLog("panda-friction", "nominal");
  model::IdentifiedSetOptions so;
  so.identify_friction = true;
  so.friction_joints = pandaArmJoints();
  const auto set = test::perturbedPrior(model::IdentifiedSet::build(panda, so), 11);
  for (auto method :
       {Method::LeastSquares, Method::WeightedLeastSquares, Method::Energy, Method::Map}) {
    IdentifyOptions o;
    o.method = method;
    o.preparation.decimation = 20;
    o.problem.identify_armature = true;
    o.problem.min_speed = method == Method::Energy ? 0.0 : 0.05;
    o.energy.interval = 3;  // 0.06 s at the decimated 50 Hz
    o.friction_truth = scenarioFriction("panda-friction");
    EXPECT_EQ(parseMethod(toString(method)), method);
    const IdentifyResult r = identify(panda, log, set, o);
    ASSERT_TRUE(r.truth.has_value());
    double worst_mass = 0;
    for (const auto& b : r.truth->bodies) worst_mass = std::max(worst_mass, b.mass_relative);
    std::printf("%s: %s, %d rows, rank %d, %.2f s, worst body mass error %.3g %%\n",
                toString(method).c_str(), toString(r.status).c_str(), r.rows, r.base.rank, r.time_s,
                100 * worst_mass);
    EXPECT_NE(r.status, Status::Failed) << r.message;
    EXPECT_TRUE(r.estimate.allFinite() && r.covariance.allFinite());
    EXPECT_EQ(r.estimate.size(), static_cast<Eigen::Index>(r.names.size()));
    if (method == Method::Map) std::printf("%s", r.report().substr(0, 1500).c_str());
  }
  EXPECT_THROW(parseMethod("magic"), InputError);
}

}  // namespace
}  // namespace heft::identify

namespace heft::identify {
namespace {

// The guard band: no kept sample lies within contact_guard of a contact change (a trotting go2,
// whose feet touch down and lift off twice a second).
// Least squares with gross outliers (5 % of the rows carry an effect the model lacks, hundreds of
// noise stds, one channel noisier than the other): the robust losses' reweighting brings the
// estimate back to the clean fit's accuracy, ordinary least squares does not; rows that fit keep
// their weight.
TEST(LeastSquares, RobustLossReweightsOutliersAway) {
  std::mt19937 rng(5);
  std::normal_distribution<double> n(0, 1);
  const int rows = 2000, cols = 6;
  identify::LinearSystem system;
  system.Phi = Eigen::MatrixXd::NullaryExpr(rows, cols, [&] { return n(rng); });
  const Eigen::VectorXd x_true = Eigen::VectorXd::LinSpaced(cols, 1.0, 6.0);
  system.channel.resize(rows);
  system.channel_names = {"quiet", "noisy"};
  for (int c = 0; c < cols; ++c) system.names.push_back("x" + std::to_string(c));
  Eigen::VectorXd clean(rows);
  for (int i = 0; i < rows; ++i) {
    system.channel[i] = i % 2;
    clean[i] = (system.Phi.row(i) * x_true)(0) + (i % 2 ? 0.05 : 0.01) * n(rng);
  }
  system.y = clean;
  int outliers = 0;
  // an effect the model lacks on 5 % of the rows, along the first column: it biases x[0]
  for (int i = 0; i < rows; i += 20, ++outliers) system.y[i] += (i % 2 ? 15 : 3) * system.Phi(i, 0);
  const Eigen::VectorXd x0 = Eigen::VectorXd::Zero(cols);
  auto error = [&](const identify::LeastSquaresResult& r) { return (r.x - x_true).norm(); };
  identify::LinearSystem clean_system = system;
  clean_system.y = clean;
  identify::LeastSquaresOptions o;
  const double clean_error = error(identify::solveLeastSquares(clean_system, x0, o));
  for (const bool weighted : {false, true}) {
    SCOPED_TRACE(weighted ? "weighted" : "ordinary");
    o.weighted = weighted;
    o.loss = RobustLoss::None;
    const double plain = error(identify::solveLeastSquares(system, x0, o));
    // the premise: the outliers hurt (weighted least squares already gives their channel less
    // weight, 7x the clean error here)
    EXPECT_GT(plain, (weighted ? 5 : 10) * clean_error);
    for (const RobustLoss loss : {RobustLoss::Huber, RobustLoss::Cauchy}) {
      SCOPED_TRACE(toString(loss));
      o.loss = loss;
      const identify::LeastSquaresResult r = identify::solveLeastSquares(system, x0, o);
      EXPECT_EQ(r.status, identify::Status::Converged);
      EXPECT_LT(error(r), 3 * clean_error) << "plain " << plain << ", clean " << clean_error;
      EXPECT_LT(error(r), plain / 3);
      EXPECT_GE(r.downweighted_rows, outliers * 9 / 10);
      EXPECT_LT(r.downweighted_rows, outliers + rows / 20);
      EXPECT_LT(r.robust_passes, o.robust_iterations);
    }
  }
}

TEST(Prepare, ContactGuardDropsSamplesNearContactChanges) {
  const auto& go2 = robot("go2");
  PreparationOptions prep;
  prep.base_state = BaseStateSource::Truth;  // the samples, not the state estimate, are under test
  prep.decimation = 5;
  const io::Log& log = simLog("go2-trot", "nominal", 2.0);
  const Samples all = prepareSamples(go2, log, prep);
  std::vector<double> changes;
  for (int k = 1; k < all.size(); ++k)
    if ((all.contact.col(k).array() != all.contact.col(k - 1).array()).any())
      changes.push_back(all.time[k]);
  ASSERT_GE(changes.size(), 4u);
  prep.contact_guard = 0.02;
  const Samples guarded = prepareSamples(go2, log, prep);
  EXPECT_LT(guarded.size(), all.size());
  EXPECT_GT(guarded.size(), all.size() / 3);
  for (int k = 0; k < guarded.size(); ++k)
    for (double c : changes)
      ASSERT_GT(std::abs(guarded.time[k] - c), 0.02 - all.dt) << "t = " << guarded.time[k];
  EXPECT_EQ(guarded.q.cols(), guarded.size());
  EXPECT_EQ(guarded.contact.cols(), guarded.size());
  EXPECT_NE(guarded.warnings.back().find("contact_guard"), std::string::npos);
}

}  // namespace
}  // namespace heft::identify

namespace heft::identify {
namespace {

// A layout with two bodies' worth of columns is not needed: the information algebra only sees the
// linear vector. One body (10), one friction joint (2), two offsets.
ParameterLayout informationLayout() {
  ParameterLayout l;
  l.body_names = {"link"};
  l.bodies = {1};
  l.friction_joints = {"j1"};
  l.friction_joint = {0};
  l.torque_offset_joints = {"j1", "j2"};
  l.torque_offset_joint = {0, 1};
  return l;
}

LinearSystem randomSystem(int rows, std::mt19937& rng) {
  std::normal_distribution<double> n(0.0, 1.0);
  LinearSystem s;
  s.layout = informationLayout();
  s.names = s.layout.linearNames();
  const int dim = s.layout.linearDimension();
  s.Phi = Eigen::MatrixXd::NullaryExpr(rows, dim, [&] { return n(rng); });
  s.y = Eigen::VectorXd::NullaryExpr(rows, [&] { return n(rng); });
  s.channel = Eigen::VectorXi::Zero(rows);
  s.channel_names = {"c"};
  return s;
}

TEST(Information, WhitenedRowsHaveTheLogsCostUpToAConstant) {
  std::mt19937 rng(3);
  const LinearSystem sys = randomSystem(200, rng);
  Eigen::VectorXd w = Eigen::VectorXd::LinSpaced(200, 0.5, 2.0);
  const DataInformation info = dataInformation(sys, w);
  const LinearSystem rows = whitenedRows(info);
  EXPECT_EQ(rows.rows(), info.dimension());  // 200 random rows see every direction
  // the cost 0.5 |W (Phi l - y)|^2 and 0.5 |R l - z|^2 differ by a constant: compare differences
  std::normal_distribution<double> n(0.0, 1.0);
  const auto cost = [&](const Eigen::VectorXd& l) {
    return 0.5 * (w.asDiagonal() * (sys.Phi * l - sys.y)).squaredNorm();
  };
  const auto whitened = [&](const Eigen::VectorXd& l) {
    return 0.5 * (rows.Phi * l - rows.y).squaredNorm();
  };
  const Eigen::VectorXd l0 = Eigen::VectorXd::NullaryExpr(info.dimension(), [&] { return n(rng); });
  for (int k = 0; k < 5; ++k) {
    const Eigen::VectorXd l =
        Eigen::VectorXd::NullaryExpr(info.dimension(), [&] { return n(rng); });
    const double scale = std::abs(cost(l) - cost(l0)) + 1.0;
    EXPECT_NEAR(cost(l) - cost(l0), whitened(l) - whitened(l0), 1e-10 * scale);
  }
  // and the constant is the data's own: the minimum of the whitened rows is 0 only when the logs
  // fit exactly; their cost at the least-squares solution is c - b' D^-1 b
  const Eigen::VectorXd l_star = info.matrix.ldlt().solve(info.vector);
  EXPECT_NEAR(2 * cost(l_star), info.scalar - info.vector.dot(l_star), 1e-8 * info.scalar);
}

TEST(Information, MarginalizedOffsetsGiveTheJointMinimumAndRecoverTheOffsets) {
  std::mt19937 rng(5);
  const LinearSystem sys = randomSystem(60, rng);
  const DataInformation info = dataInformation(sys, Eigen::VectorXd::Ones(60));
  const double s = 0.7;  // offset prior std
  // joint minimum over (t, o) of 0.5 l'Dl - b'l + 0.5 |o|^2 / s^2
  Eigen::MatrixXd H = info.matrix;
  const int no = info.layout.numTorqueOffsets(), nt = info.dimension() - no;
  H.bottomRightCorner(no, no).diagonal().array() += 1.0 / (s * s);
  const Eigen::VectorXd joint = H.ldlt().solve(info.vector);
  OffsetMap offsets;
  const DataInformation marginal = marginalizeTorqueOffsets(info, s, &offsets);
  EXPECT_EQ(marginal.layout.numTorqueOffsets(), 0);
  EXPECT_EQ(marginal.dimension(), nt);
  const Eigen::VectorXd t = marginal.matrix.ldlt().solve(marginal.vector);
  EXPECT_LT((t - joint.head(nt)).lpNorm<Eigen::Infinity>(), 1e-10 * joint.norm());
  const Eigen::VectorXd o = offsets.mean - offsets.gain * t;
  EXPECT_LT((o - joint.tail(no)).lpNorm<Eigen::Infinity>(), 1e-10 * joint.norm());
}

TEST(Information, SumsRefuseLogsOfAnotherLayoutNamingThem) {
  std::mt19937 rng(7);
  const DataInformation a = dataInformation(randomSystem(40, rng), Eigen::VectorXd::Ones(40));
  DataInformation b = a;
  b.layout.body_names = {"other_link"};
  const DataInformation sum = sumInformation({a, a}, {"a.json", "a2.json"});
  EXPECT_EQ(sum.rows, 80);
  EXPECT_LT((sum.matrix - 2 * a.matrix).norm(), 1e-12 * a.matrix.norm());
  try {
    sumInformation({a, b}, {"a.json", "b.json"});
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("b.json"), std::string::npos) << what;
    EXPECT_NE(what.find("m[other_link]"), std::string::npos) << what;
  }
}

TEST(Fusion, RefusesNoLogsBadGatesAndALogOfAnotherLayoutNamingEach) {
  std::mt19937 rng(9);
  const DataInformation a = dataInformation(randomSystem(40, rng), Eigen::VectorXd::Ones(40));
  DataInformation b = a;
  b.layout.body_names = {"other_link"};
  const model::IdentifiedSet set;  // never reached: each refusal comes before the solve
  const auto refusal = [&](const std::vector<LogInformation>& logs, const FusionOptions& o) {
    try {
      fuse(logs, set, ProblemOptions{}, MapOptions{}, o);
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(refusal({}, {}).find("logs"), std::string::npos) << refusal({}, {});
  FusionOptions negative;
  negative.outlier_gate = -1;
  const std::string gate = refusal({{"a.json", a, 1.0}}, negative);
  EXPECT_NE(gate.find("outlier_gate"), std::string::npos) << gate;
  FusionOptions no_drift_gate;
  no_drift_gate.drift_gate = std::nan("");
  const std::string drift = refusal({{"a.json", a, 1.0}}, no_drift_gate);
  EXPECT_NE(drift.find("drift_gate"), std::string::npos) << drift;
  const std::string other = refusal({{"a.json", a, 1.0}, {"b.json", b, 1.0}}, {});
  EXPECT_NE(other.find("b.json"), std::string::npos) << other;
  EXPECT_NE(other.find("m[other_link]"), std::string::npos) << other;
}

}  // namespace
}  // namespace heft::identify
