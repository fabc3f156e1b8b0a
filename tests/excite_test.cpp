// heft::excite: Fourier trajectories, CMA-ES, base parameters and the excitation design.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include <pinocchio/algorithm/regressor.hpp>

#include "heft/common/error.hpp"
#include "heft/excite/cmaes.hpp"
#include "heft/excite/collision.hpp"
#include "heft/excite/design.hpp"
#include "heft/excite/fourier.hpp"
#include "heft/model/robots.hpp"
#include "heft/sim/controller.hpp"
#include "heft/sim/scenario.hpp"
#include "support/malloc_counter.hpp"

using namespace heft;
using excite::FourierSeries;

namespace {

FourierSeries someSeries() {
  FourierSeries s;
  s.q0 = 0.3;
  s.base_frequency = 0.2;
  s.a = (Eigen::VectorXd(4) << 0.4, -0.2, 0.15, 0.05).finished();
  s.b = (Eigen::VectorXd(4) << -0.1, 0.3, -0.05, 0.1).finished();
  return s;
}

// Bound on |d^k/dt^k d(t)| of the periodic part d = q_F - q0: sum_l (w l)^(k-1) (|a_l| + |b_l|).
double seriesBound(const FourierSeries& s, int k) {
  const double w = 2 * M_PI * s.base_frequency;
  double bound = 0;
  for (int l = 0; l < s.harmonics(); ++l)
    bound += std::pow(w * (l + 1), k - 1) * (std::abs(s.a[l]) + std::abs(s.b[l]));
  return bound;
}

// Bound on the k-th derivative of e(t) d(t) (Leibniz), with the quintic smoothstep's derivative
// bounds max|e^(j)| = 1, 15/8, 10/sqrt(3), 60, 360 (times ramp^-j).
double envelopedBound(const FourierSeries& s, int k, double ramp) {
  const double e[5] = {1, 15.0 / 8, 10 / std::sqrt(3.0), 60, 360};
  const int binom[5][5] = {{1}, {1, 1}, {1, 2, 1}, {1, 3, 3, 1}, {1, 4, 6, 4, 1}};
  double bound = 0;
  for (int j = 0; j <= k; ++j)
    bound += binom[k][j] * e[j] / std::pow(ramp, j) * seriesBound(s, k - j);
  return bound;
}

}  // namespace

// Central differences of q and qd match the analytic qd and qdd within the truncation error
// h^2 / 6 max|f'''| plus the rounding error eps max|f| / h, during the ramp and after it.
TEST(Fourier, AnalyticRatesMatchFiniteDifferences) {
  const FourierSeries s = someSeries();
  const double ramp = 1.5, h = 1e-4, eps = std::numeric_limits<double>::epsilon();
  const double q_max = std::abs(s.q0) + envelopedBound(s, 0, ramp);
  const double tol_qd = h * h / 6 * envelopedBound(s, 3, ramp) + 4 * eps * q_max / h;
  const double tol_qdd =
      h * h / 6 * envelopedBound(s, 4, ramp) + 4 * eps * envelopedBound(s, 1, ramp) / h;
  for (double t : {0.2, 0.7, 1.2, 1.49, 2.0, 3.3, 4.9, 7.1}) {
    const excite::JointState x = excite::evaluate(s, t, ramp);
    const excite::JointState plus = excite::evaluate(s, t + h, ramp);
    const excite::JointState minus = excite::evaluate(s, t - h, ramp);
    EXPECT_NEAR((plus.q - minus.q) / (2 * h), x.qd, tol_qd) << "t = " << t;
    EXPECT_NEAR((plus.qd - minus.qd) / (2 * h), x.qdd, tol_qdd) << "t = " << t;
  }
}

// Without a ramp the series is periodic; with one it starts at rest at q0.
TEST(Fourier, PeriodicAndStartsAtRest) {
  const FourierSeries s = someSeries();
  const double period = 1 / s.base_frequency;
  for (double t : {0.0, 1.3, 2.9}) {
    const excite::JointState a = excite::evaluate(s, t, 0), b = excite::evaluate(s, t + period, 0);
    EXPECT_NEAR(a.q, b.q, 1e-12);
    EXPECT_NEAR(a.qd, b.qd, 1e-12);
    EXPECT_NEAR(a.qdd, b.qdd, 1e-12);
  }
  const excite::JointState start = excite::evaluate(s, 0, 2.0);
  EXPECT_EQ(start.q, s.q0);
  EXPECT_EQ(start.qd, 0);
  EXPECT_EQ(start.qdd, 0);
  FourierSeries bad = s;
  bad.b.resize(3);
  EXPECT_THROW(bad.validate(), InputError);
}

// CMA-ES finds the minimum of an ill-conditioned shifted ellipsoid (condition 1e6) in 10
// dimensions; f >= |x_i - c_i|^2 bounds the distance to the minimizer by sqrt(f).
TEST(Cmaes, MinimizesShiftedEllipsoid) {
  const int n = 10;
  const Eigen::VectorXd c = Eigen::VectorXd::LinSpaced(n, -2, 3);
  auto f = [&](const Eigen::VectorXd& x) {
    double sum = 0;
    for (int i = 0; i < n; ++i) sum += std::pow(10.0, 6.0 * i / (n - 1)) * std::pow(x[i] - c[i], 2);
    return sum;
  };
  excite::CmaesOptions options;
  options.sigma0 = 1;
  options.max_iterations = 3000;
  options.seed = 5;
  const excite::CmaesSummary summary = excite::cmaes(f, Eigen::VectorXd::Zero(n), options);
  EXPECT_NE(summary.status, excite::CmaesSummary::Status::MaxIterations) << summary.report();
  EXPECT_LT(summary.best_cost, 1e-14) << summary.report();
  EXPECT_LT((summary.best_x - c).cwiseAbs().maxCoeff(), 1e-7);
  EXPECT_EQ(summary.cost_history.size(), static_cast<std::size_t>(summary.iterations));
  // deterministic given the seed
  const excite::CmaesSummary again = excite::cmaes(f, Eigen::VectorXd::Zero(n), options);
  EXPECT_EQ(again.best_x, summary.best_x);
  EXPECT_EQ(again.evaluations, summary.evaluations);
}

TEST(Cmaes, OptionsValidate) {
  excite::CmaesOptions o;
  o.population = 1;
  EXPECT_THROW(o.validate(), InputError);
  o = {};
  o.sigma0 = 0;
  EXPECT_THROW(o.validate(), InputError);
  auto f = [](const Eigen::VectorXd& x) { return x.squaredNorm(); };
  EXPECT_THROW(excite::cmaes(f, Eigen::VectorXd(), excite::CmaesOptions{}), InputError);
}

// The numerical base reproduces the torques of the full parameter vector on states it was not
// found from: Y theta = Y_b (theta_b + K theta_d).
TEST(BaseParameters, PandaBaseReproducesTorques) {
  const model::RobotModel robot = model::loadRobot("panda");
  const pinocchio::Model& model = robot.pinocchio();
  excite::DesignOptions options;
  const excite::BaseParameters base = excite::baseParameters(model, options);
  const int np = 10 * (model.njoints - 1);
  EXPECT_GT(base.rank(), 0);
  EXPECT_LT(base.rank(), np);
  EXPECT_EQ(base.names.size(), base.columns.size());
  Eigen::VectorXd theta(np);
  for (int j = 1; j < model.njoints; ++j)
    theta.segment<10>(10 * (j - 1)) = model.inertias[j].toDynamicParameters();
  Eigen::VectorXd theta_b(base.rank()), theta_d(np - base.rank());
  for (int i = 0; i < base.rank(); ++i) theta_b[i] = theta[base.columns[i]];
  for (int i = 0; i < np - base.rank(); ++i) theta_d[i] = theta[base.dependent[i]];
  const Eigen::VectorXd beta = theta_b + base.K * theta_d;
  pinocchio::Data data(model);
  for (int trial = 0; trial < 5; ++trial) {
    const Eigen::VectorXd q = 0.5 * Eigen::VectorXd::Random(model.nq).cwiseProduct(
                                        model.upperPositionLimit - model.lowerPositionLimit) +
                              0.5 * (model.upperPositionLimit + model.lowerPositionLimit);
    const Eigen::VectorXd v = Eigen::VectorXd::Random(model.nv),
                          a = Eigen::VectorXd::Random(model.nv);
    const Eigen::MatrixXd Y = pinocchio::computeJointTorqueRegressor(model, data, q, v, a);
    Eigen::MatrixXd Yb(model.nv, base.rank());
    for (int i = 0; i < base.rank(); ++i) Yb.col(i) = Y.col(base.columns[i]);
    EXPECT_LT((Y * theta - Yb * beta).cwiseAbs().maxCoeff(), 1e-9 * (1 + (Y * theta).norm()));
  }
}

TEST(Design, BadOptionsNameTheField) {
  const model::RobotModel robot = model::loadRobot("panda");
  excite::DesignOptions o;
  o.joints = {"panda_joint1", "elbow"};
  try {
    o.validate(robot.pinocchio());
    FAIL() << "no error";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("joints"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("elbow"), std::string::npos) << e.what();
  }
  o = {};
  o.duration = 0;
  EXPECT_THROW(o.validate(robot.pinocchio()), InputError);
  o = {};
  o.velocity_fraction = 0;
  EXPECT_THROW(o.validate(robot.pinocchio()), InputError);
}

// The designed panda trajectory respects every limit at every sample of the design grid and of
// a 100 Hz grid, and its base regressor is better conditioned than the seed-7 excitation of the
// panda scenario over the same duration.
TEST(Design, PandaBeatsTheSeedExcitation) {
  const model::RobotModel robot = model::loadRobot("panda");
  const pinocchio::Model& model = robot.pinocchio();
  excite::DesignOptions options;
  options.duration = 20;
  excite::ExcitationDesign design(model, options);
  excite::CmaesOptions optimizer;
  optimizer.max_iterations = 300;
  optimizer.seed = 1;
  const excite::DesignResult result = excite::designExcitation(design, optimizer);
  EXPECT_TRUE(result.feasible()) << result.limits.worst;
  const excite::TrajectorySamples fine =
      excite::sampleTrajectory(result.trajectory, options.duration, 2001);
  const excite::LimitUse use = excite::limitUse(model, design.limits(), fine);
  EXPECT_TRUE(use.satisfied()) << use.worst << " " << use.position << " " << use.velocity << " "
                               << use.acceleration << " " << use.torque;
  EXPECT_EQ(result.identifiability.rank, design.base().rank());

  const sim::Reference seed =
      sim::fourierReference(robot, sim::findScenario("panda").fourier, options.duration,
                            options.duration / (options.samples - 1));
  excite::TrajectorySamples before;
  before.t = Eigen::VectorXd::LinSpaced(options.samples, 0, options.duration);
  before.q = seed.q;
  before.v = seed.v;
  before.a = seed.a;
  const excite::Identifiability reference =
      excite::identifiability(model, design.base(), before, options.torque_noise_std);
  EXPECT_LT(result.identifiability.condition, reference.condition) << result.summary.report();
  std::cout << "condition number: seed-7 " << reference.condition << ", designed "
            << result.identifiability.condition << " (" << result.summary.briefReport() << ")\n";
}

// The objective CMA-ES calls allocates nothing: every buffer is the design's (Model/Data split).
TEST(Design, CostAllocatesNothing) {
  const model::RobotModel robot = model::loadRobot("panda");
  excite::DesignOptions options;
  options.samples = 21;
  excite::ExcitationDesign design(robot.pinocchio(), options);
  const Eigen::VectorXd x = 0.2 * Eigen::VectorXd::Ones(design.dimension());
  const double first = design.cost(x);
  double again = 0;
  const long mallocs = test::countMallocs([&] { again = design.cost(x); });
  EXPECT_EQ(again, first);
  EXPECT_LT(first, excite::ExcitationDesign::kInfeasible);
#if defined(HEFT_CAN_COUNT_MALLOCS)
  EXPECT_EQ(mallocs, 0);
#else
  GTEST_SKIP() << "heap allocations cannot be counted on this platform (" << mallocs << ")";
#endif
}

// The panda's collision meshes: the designed trajectory of a short design is checked at every
// sample, and a configuration folding the arm onto itself is found in contact.
TEST(SelfCollision, PandaMeshes) {
  const model::RobotModel robot = model::loadRobot("panda");
  const pinocchio::Model& model = robot.pinocchio();
  const std::string urdf = robot.source();
  const std::string root = urdf.substr(0, urdf.find("/example-robot-data/"));
  const std::string srdf = root + "/example-robot-data/robots/panda_description/srdf/panda.srdf";
  excite::TrajectorySamples samples;
  samples.t = Eigen::Vector2d(0, 1);
  samples.q.resize(model.nq, 2);
  samples.q.col(0) = 0.5 * (model.lowerPositionLimit + model.upperPositionLimit);
  // elbow fully bent and the wrist turned back towards the base
  samples.q.col(1) = samples.q.col(0);
  samples.q(1, 1) = model.upperPositionLimit[1];
  samples.q(3, 1) = model.upperPositionLimit[3];
  samples.q(5, 1) = model.lowerPositionLimit[5];
  const excite::SelfCollision check = excite::selfCollision(model, urdf, srdf, root, samples);
  EXPECT_GT(check.pairs, 0);
  EXPECT_EQ(check.samples, 2);
  std::cout << "pairs " << check.pairs << ", colliding samples " << check.colliding << ": "
            << check.first << "\n";
  EXPECT_NE(check.first.find("t = 1 s"), std::string::npos) << check.first;
  EXPECT_EQ(check.colliding, 1);
}
