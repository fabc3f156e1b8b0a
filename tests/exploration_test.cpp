// Active exploration (heft::sampling::CommandExperiment, designCommands) and the pieces it stands
// on: Bezier base commands of the stance motion, combined recordings, a given noise model.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "heft/common/error.hpp"
#include "heft/model/robots.hpp"
#include "heft/sampling/exploration.hpp"
#include "heft/sim/scenario.hpp"

namespace heft {
namespace {

sim::BezierCommands oneSegment(int degree, double duration) {
  sim::BezierCommands c;
  c.degree = degree;
  c.segment_duration = duration;
  c.points = Eigen::MatrixXd::Zero(6, degree + 1);
  return c;
}

TEST(BezierCommands, BernsteinWeightsSumToOneAndEndsAreTheEndPoints) {
  sim::BezierCommands c = oneSegment(6, 2.0);
  c.points.setConstant(0.3);  // every control point equal: the curve is that constant
  for (double t : {0.0, 0.1, 0.77, 1.0, 1.5, 1.999})
    EXPECT_NEAR(c.evaluate(t)[2], 0.3, 1e-14) << "t = " << t;
  c.points.setZero();
  c.points(4, 0) = 1;   // P_0 alone: (1 - u)^6
  c.points(5, 6) = 2;   // P_6 alone: 2 u^6
  c.points(0, 3) = -1;  // P_3 alone: -20 u^3 (1 - u)^3
  EXPECT_NEAR(c.evaluate(0)[4], 1, 1e-15);
  const double u = 0.4;
  const Eigen::Matrix<double, 6, 1> v = c.evaluate(u * 2.0);
  EXPECT_NEAR(v[4], std::pow(1 - u, 6), 1e-14);
  EXPECT_NEAR(v[5], 2 * std::pow(u, 6), 1e-14);
  EXPECT_NEAR(v[0], -20 * std::pow(u, 3) * std::pow(1 - u, 3), 1e-14);
  EXPECT_EQ(c.evaluate(2.0).norm(), 0.0);  // after the last segment: standing
  EXPECT_EQ(c.evaluate(-0.1).norm(), 0.0);
}

TEST(BezierCommands, SegmentsMustStartAndEndAtRest) {
  sim::BezierCommands c = oneSegment(6, 2.0);
  c.points(1, 3) = 0.1;
  EXPECT_NO_THROW(c.validate());
  c.points(1, 5) = 0.1;  // the second-to-last point: the rate at the end would not be 0
  try {
    c.validate();
    FAIL() << "accepted a segment that ends moving";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("commands.points"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("segment 1"), std::string::npos) << e.what();
  }
  c.points = Eigen::MatrixXd::Zero(5, 7);
  EXPECT_THROW(c.validate(), InputError);  // five channels
}

TEST(BezierCommands, TheStanceReferenceFollowsTheCommandedBase) {
  const sim::Scenario& scenario = sim::findScenario("go2-stand");
  const model::RobotModel robot = model::loadRobot("go2");
  const sim::SimModel sim(robot, scenario.model);
  sim::StanceMotionOptions motion = scenario.stance;
  motion.settle = 0.5;
  motion.commands = oneSegment(6, 1.0);
  motion.commands.points(0, 3) = 0.03;   // x
  motion.commands.points(2, 2) = -0.04;  // z
  motion.commands.points(5, 4) = 0.1;    // yaw
  const double dt = 1e-3;
  const sim::Reference still = sim::stanceReference(
      robot, sim.contactNames(), scenario.model.contact_radius, scenario.stance, 2.0, dt);
  const sim::Reference moving = sim::stanceReference(
      robot, sim.contactNames(), scenario.model.contact_radius, motion, 2.0, dt);
  for (double t : {0.6, 0.9, 1.2}) {
    const int k = static_cast<int>(std::lround(t / dt));
    const Eigen::Matrix<double, 6, 1> c = motion.commands.evaluate(t - motion.settle);
    EXPECT_NEAR(moving.q(0, k) - still.q(0, k), c[0], 1e-12);
    EXPECT_NEAR(moving.q(2, k) - still.q(2, k), c[2], 1e-12);
    const Eigen::Quaterniond qk(moving.q(6, k), moving.q(3, k), moving.q(4, k), moving.q(5, k));
    EXPECT_NEAR(qk.toRotationMatrix().eulerAngles(2, 1, 0)[0], c[5], 1e-9);
  }
  // standing again after the commands
  const int end = static_cast<int>(std::lround(1.8 / dt));
  EXPECT_LT((moving.q.col(end) - still.q.col(end)).norm(), 1e-9);
}

TEST(ReplayData, AppendedRecordingsAreNeverCrossedByAClip) {
  sampling::ReplayData a, b;
  a.time = Eigen::VectorXd::LinSpaced(300, 0, 0.299);
  b.time = Eigen::VectorXd::LinSpaced(200, 5, 5.199);
  for (sampling::ReplayData* d : {&a, &b}) {
    d->q = Eigen::MatrixXd::Random(3, d->time.size());
    d->v = d->tau = d->tau_cmd = Eigen::MatrixXd::Random(2, d->time.size());
  }
  sampling::ReplayData both = a;
  both.append(b);
  ASSERT_EQ(both.samples(), 500);
  ASSERT_EQ(both.joins, std::vector<int>{300});
  EXPECT_NEAR(both.time[300] - both.time[299], 1e-3, 1e-12);  // the clock continues
  EXPECT_EQ(both.q.col(300), b.q.col(0));
  const std::vector<sampling::Clip> clips = sampling::drawClips(500, 400, 20, 80, 3, both.joins);
  int in_second = 0;
  for (const sampling::Clip& c : clips) {
    EXPECT_FALSE(c.start < 300 && 300 <= c.start + c.steps) << c.start << " + " << c.steps;
    in_second += c.start >= 300;
  }
  EXPECT_GT(in_second, 50);  // both recordings are drawn from
  // no recording holds the longest clip: a clear error, not an endless redraw
  EXPECT_THROW(sampling::drawClips(500, 10, 20, 350, 3, both.joins), InputError);
  sampling::ReplayData other = a;
  other.q = Eigen::MatrixXd::Zero(4, 300);
  EXPECT_THROW(both.append(other), InputError);
}

// go2 standing with its PD; the design space: the calf group's gain and kappa.
struct Go2Experiment {
  model::RobotModel robot = model::loadRobot("go2");
  sim::SimModel sim{robot, sim::findScenario("go2-stand").model};
  sampling::ParameterSpace space = makeSpace();
  sampling::Replay replay;
  Eigen::VectorXd sigma = (Eigen::VectorXd(6) << 1e-3, 1e-2, 1e-2, 1e-3, 1e-2, 0.1).finished();
  sampling::ExplorationOptions options;

  sampling::ParameterSpace makeSpace() const {
    sampling::ActuatorGroup calf;
    calf.name = "calf";
    for (int j = 0; j < sim.nu(); ++j)
      if (sim.jointNames()[j].find("calf") != std::string::npos) calf.joints.push_back(j);
    calf.saturation = 15;
    return sampling::ParameterSpace({}, {calf}, {});
  }
  Go2Experiment() {
    replay.kp = Eigen::VectorXd::Constant(sim.nu(), 60);
    replay.kd = Eigen::VectorXd::Constant(sim.nu(), 1.5);
    options.segments = 1;
    options.segment_duration = 1.0;
    options.degree = 5;
    options.threads = 1;
    options.max_hop_flight = 0;  // one-second segments: no room for a hop
  }
  sampling::CommandExperiment experiment() const {
    sim::StanceMotionOptions base = sim::findScenario("go2-stand").stance;
    base.settle = 0.2;
    return sampling::CommandExperiment(sim, space, Eigen::VectorXd::Zero(2), replay, sigma, base,
                                       options);
  }
};

TEST(CommandExperiment, MovingCommandsCarryMoreInformationThanStandingStill) {
  const Go2Experiment go2;
  const sampling::CommandExperiment experiment = go2.experiment();
  ASSERT_EQ(experiment.dimension(), 6 * 2);
  const sampling::CommandDesign still = experiment.evaluate(Eigen::VectorXd::Zero(12));
  ASSERT_TRUE(still.feasible) << still.why;
  Eigen::VectorXd squat = Eigen::VectorXd::Zero(12);
  squat[2] = squat[8] = -1;  // z of both free points: a squat as deep as the bound
  const sampling::CommandDesign moving = experiment.evaluate(squat);
  ASSERT_TRUE(moving.feasible) << moving.why;
  EXPECT_EQ(moving.information.information.rows(), 2);
  EXPECT_LT(moving.criterion, still.criterion);
  EXPECT_GT(moving.max_feedforward_ratio, still.max_feedforward_ratio);
  // the design's motion is the one evaluated
  EXPECT_DOUBLE_EQ(moving.motion.commands.points(2, 2), -go2.options.bounds[2]);
}

TEST(CommandExperiment, OutsideTheBoundsIsClampedAndPenalized) {
  Go2Experiment go2;
  Eigen::VectorXd z = Eigen::VectorXd::Zero(12);
  z[2] = -1;
  const sampling::CommandDesign at_bound = go2.experiment().evaluate(z);
  z[2] = -1.5;  // half a bound beyond: the same motion, the criterion times 1 + 0.5^2
  const sampling::CommandDesign beyond = go2.experiment().evaluate(z);
  ASSERT_TRUE(at_bound.feasible && beyond.feasible) << at_bound.why << beyond.why;
  EXPECT_EQ(beyond.motion.commands.points, at_bound.motion.commands.points);
  EXPECT_NEAR(beyond.criterion, 1.25 * at_bound.criterion, 1e-12 * at_bound.criterion);
}

TEST(CommandExperiment, InfeasibleDesignsSayWhy) {
  Go2Experiment go2;
  Eigen::VectorXd z = Eigen::VectorXd::Zero(12);
  go2.options.bounds[2] = 1.0;  // a squat deeper than the legs are long
  z.setZero();
  z[2] = z[8] = -1;
  const sampling::CommandDesign deep = go2.experiment().evaluate(z);
  EXPECT_FALSE(deep.feasible);
  EXPECT_FALSE(deep.why.empty());
}

TEST(CommandExperiment, APronkingSegmentHopsInTheCommandedMotion) {
  Go2Experiment go2;
  go2.options.segment_duration = 2.0;
  go2.options.max_hop_flight = 0.1;
  const sampling::CommandExperiment experiment = go2.experiment();
  ASSERT_EQ(experiment.dimension(), 6 * 2 + 1);
  Eigen::VectorXd z = Eigen::VectorXd::Zero(13);
  z[12] = -0.4;  // z_h <= 0: standing
  EXPECT_FALSE(experiment.commands(z).hops());
  z[12] = 0.5;  // half the largest flight: 0.05 s hops
  const sim::BezierCommands c = experiment.commands(z);
  ASSERT_TRUE(c.hops());
  EXPECT_DOUBLE_EQ(c.hop_flight[0], 0.05);
  const sampling::CommandDesign hopping = experiment.evaluate(z);
  ASSERT_TRUE(hopping.feasible) << hopping.why;
  const sampling::CommandDesign standing = experiment.evaluate(Eigen::VectorXd::Zero(13));
  ASSERT_TRUE(standing.feasible) << standing.why;
  // a push and a landing load the calves: more of kappa seen, more information
  EXPECT_GT(hopping.max_feedforward_ratio, 1.5 * standing.max_feedforward_ratio);
  EXPECT_LT(hopping.criterion, standing.criterion);
  Go2Experiment too_long;
  too_long.options.segment_duration = 2.0;
  too_long.options.max_hop_flight = 1.0;  // 2 x 0.3 s push + 1 s flight > 2 s - 1 s
  try {
    (void)too_long.experiment();
    FAIL() << "accepted hops longer than a segment";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("exploration.max_hop_flight"), std::string::npos)
        << e.what();
  }
}

TEST(CommandExperiment, BadInputIsRefusedWithTheField) {
  Go2Experiment go2;
  go2.sigma = Eigen::VectorXd::Zero(6);
  try {
    (void)go2.experiment();
    FAIL() << "accepted a noise model of zeros";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("channel noise"), std::string::npos) << e.what();
  }
  Go2Experiment no_pd;
  no_pd.replay = sampling::Replay{};
  EXPECT_THROW((void)no_pd.experiment(), InputError);
  Go2Experiment bad;
  bad.options.clip_horizon = 2.0;  // longer than a segment
  EXPECT_THROW((void)bad.experiment(), InputError);
  EXPECT_THROW(sampling::informationCriterionFromName("trace", "exploration.criterion"),
               InputError);
  EXPECT_EQ(sampling::informationCriterionFromName("log_det", "c"),
            sampling::InformationCriterion::LogDet);
}

TEST(DesignCommands, CmaesLowersTheCriterionFromItsStart) {
  Go2Experiment go2;
  go2.options.optimizer.max_iterations = 4;
  go2.options.optimizer.population = 6;
  const sampling::CommandExperiment experiment = go2.experiment();
  const sampling::ExplorationSummary summary = sampling::designCommands(experiment);
  ASSERT_TRUE(summary.usable()) << summary.report();
  EXPECT_LE(summary.best.criterion, summary.optimizer.initial_cost);
  // the optimizer's designs, the random start's draws (at least one) and the best re-evaluated
  EXPECT_GE(summary.designs, summary.optimizer.evaluations + 2);
  EXPECT_LE(summary.infeasible, summary.designs);
  EXPECT_NE(summary.report().find("designed"), std::string::npos);
}

TEST(RolloutInformation, AGivenNoiseModelScalesTheInformation) {
  const Go2Experiment go2;
  const sampling::CommandExperiment experiment = go2.experiment();
  Eigen::VectorXd z = Eigen::VectorXd::Zero(12);
  z[2] = z[8] = -1;
  const sampling::CommandDesign design = experiment.evaluate(z);
  ASSERT_TRUE(design.feasible);
  Go2Experiment doubled;
  doubled.sigma = 2 * go2.sigma;
  const sampling::CommandDesign noisier = doubled.experiment().evaluate(z);
  ASSERT_TRUE(noisier.feasible);
  // F = J^T diag(1 / sigma^2) J: twice the noise, a quarter of the information
  EXPECT_NEAR((4 * noisier.information.information - design.information.information).norm(), 0,
              1e-9 * design.information.information.norm());
}

}  // namespace
}  // namespace heft
