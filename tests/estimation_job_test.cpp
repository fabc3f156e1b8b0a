// The `heft estimate` job (heft/jobs/estimate_job.hpp): config parsing and its errors, a whole job
// on a MuJoCo log (heft::sim, a payload the model does not know) through result.json, the estimated
// trajectory log and the written URDF, and the output and input rules (no overwrite, the input
// log never an output, a NaN in the log named by group and row).
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>
#include <string>

#include <unistd.h>

#include <nlohmann/json.hpp>

#include "heft/common/error.hpp"
#include "heft/estimation/log_problem.hpp"
#include "heft/estimation/multibody_stage.hpp"
#include "heft/inertia/inertia.hpp"
#include "heft/io/log_io.hpp"
#include "heft/io/validation.hpp"
#include "heft/jobs/estimate_job.hpp"
#include "heft/model/model.hpp"
#include "heft/sim/scenario.hpp"
#include "support/scratch.hpp"
#include "support/simulated_log.hpp"

namespace heft::estimation {
namespace {

using jobs::EstimateJob;

namespace fs = std::filesystem;

fs::path scratch(const std::string& name) { return test::scratchPath("estimation_job", name); }

std::string configErrorOf(const std::string& yaml) {
  try {
    EstimateJob::parse(yaml, "job.yaml", ".");
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

// The MuJoCo log of a double pendulum carrying a 0.15 kg payload on link 2 that the model lacks
// (nominal sensor noise without the torque bias: no actuator-bias parameter yet), written once.
const std::string& pendulumLog() {
  static const std::string path = [] {
    const auto run = test::simulateNominalWithoutTorqueBias("double-pendulum-payload", 3.2, 1);
    EXPECT_TRUE(run.summary.ok()) << run.summary.report();
    // every case of this file reads it, each in its own process (support/scratch.hpp)
    const fs::path p = scratch("double_pendulum_payload_" + std::to_string(::getpid()) + ".h5");
    io::WriteOptions write;
    write.overwrite = true;
    io::writeLog(run.log, p.string(), write);
    return p.string();
  }();
  return path;
}

std::string pendulumConfig(const std::string& log, const std::string& extra = "") {
  const model::RobotModel robot = model::loadRobot("double_pendulum");
  std::ostringstream y;
  y << "robot: double_pendulum\nlog: " << log << "\nestimate:\n  bodies: [" << robot.body(2).name
    << "]\nwindow:\n  start_time: 1.0\n  knots: 2000\nsolver:\n  max_iterations: 50\n"
    << extra;
  return y.str();
}

TEST(EstimateJobConfig, ErrorsNameFileLineAndField) {
  const std::string base = "robot: go2\nlog: x.h5\nestimate:\n  bodies: [base]\n";
  std::string e = configErrorOf(base + "solver:\n  max_iteration: 3\n");
  EXPECT_NE(e.find("job.yaml:6"), std::string::npos) << e;
  EXPECT_NE(e.find("solver.max_iteration"), std::string::npos) << e;
  EXPECT_NE(e.find("unknown key"), std::string::npos) << e;

  // Values out of range: the key and its line, not the C++ option's name.
  e = configErrorOf(base + "noise:\n  gyro: 0.01\n  torque: -1\n");
  EXPECT_NE(e.find("job.yaml:7: noise.torque: expected a finite value > 0"), std::string::npos)
      << e;
  e = configErrorOf(base + "window:\n  stride: 0\n");
  EXPECT_NE(e.find("job.yaml:6: window.stride: expected an integer >= 1"), std::string::npos) << e;
  e = configErrorOf(base + "solver:\n  nullspace_tolerance: 2\n");
  EXPECT_NE(e.find("job.yaml:6: solver.nullspace_tolerance: expected a value in [0, 1)"),
            std::string::npos)
      << e;
  e = configErrorOf(base + "solver:\n  tolerance: -1.0e-12\n");  // not "-0.000000"
  EXPECT_NE(e.find("job.yaml:6: solver.tolerance: expected a finite value > 0, got -1e-12"),
            std::string::npos)
      << e;
  e = configErrorOf(base + "contacts:\n  damping: -0.5\n");
  EXPECT_NE(e.find("job.yaml:6: contacts.damping: expected a finite value >= 0"), std::string::npos)
      << e;

  e = configErrorOf("robot: go2\nlog: x.h5\n");
  EXPECT_NE(e.find("estimate.bodies"), std::string::npos) << e;

  e = configErrorOf(base + "  parametrization: cholesky\n");
  EXPECT_NE(e.find("job.yaml:5"), std::string::npos) << e;
  EXPECT_NE(e.find("log-cholesky"), std::string::npos) << e;

  e = configErrorOf(base + "window:\n  knots: many\n");
  EXPECT_NE(e.find("window.knots"), std::string::npos) << e;
  EXPECT_NE(e.find("an integer"), std::string::npos) << e;

  e = configErrorOf(base + "solver:\n  rollout: double\n");
  EXPECT_NE(e.find("multiple-shooting"), std::string::npos) << e;

  e = configErrorOf(base + "contacts:\n  source: sometimes\n");
  EXPECT_NE(e.find("job.yaml:6"), std::string::npos) << e;
  EXPECT_NE(e.find("kinematic"), std::string::npos) << e;

  e = configErrorOf(base + "contacts:\n  transition_noise_scale: 0\n");
  EXPECT_NE(e.find("transition_noise_scale"), std::string::npos) << e;
}

TEST(EstimateJobConfig, BundledExampleParses) {
  const fs::path example =
      fs::path(HEFT_SOURCE_DIR) / "data" / "examples" / "go2_payload_estimate.yaml";
  const EstimateJob::Config config = EstimateJob::load(example.string());
  EXPECT_EQ(config.robot, "go2");
  EXPECT_TRUE(fs::exists(config.log)) << config.log;
  ASSERT_EQ(config.problem.identified_bodies.size(), 1u);
  EXPECT_EQ(config.problem.identified_bodies[0], "base");
  ASSERT_TRUE(config.knots.has_value());
  EXPECT_EQ(*config.knots, 500);
}

// The whole job on a log the estimator's model did not generate: the payload's mass within three
// posterior standard deviations, the trajectory closer to the truth than the encoders, and every
// output readable: result.json in identify's schema, a trajectory log that validates, a URDF that
// reloads with the estimate.
TEST(EstimateJob, PendulumPayloadWritesResultTrajectoryAndUrdf) {
  const EstimateJob::Config config =
      EstimateJob::parse(pendulumConfig(pendulumLog()), "job.yaml", ".");
  const EstimateJob::Result result = EstimateJob::run(config);
  ASSERT_EQ(result.summary.status, RiccatiSummary::Status::Converged) << result.report();
  ASSERT_TRUE(result.writable());
  ASSERT_EQ(result.bodies.size(), 1u);
  const results::BodyEstimate& body = result.bodies[0];
  ASSERT_TRUE(result.truth.has_value());
  const results::BodyError& error = result.truth->bodies.at(0);
  EXPECT_LT(std::abs(body.mass - error.mass_true), 3 * body.mass_std) << result.report();
  EXPECT_LT(error.com_error, 0.01) << result.report();
  ASSERT_TRUE(result.trajectory_errors.has_value());
  EXPECT_LT(result.trajectory_errors->joint_position, result.trajectory_errors->joint_position_raw)
      << result.report();

  const fs::path out = scratch("pendulum");
  const auto written = EstimateJob::write(result, out.string(), {false});
  EXPECT_EQ(written.size(), 3u);

  std::ifstream in(out / "result.json");
  const nlohmann::json j = nlohmann::json::parse(in);
  for (const char* key : {"method", "parameters", "covariance", "summary", "truth_errors",
                          "estimation", "urdf", "data_quality"})
    EXPECT_TRUE(j.contains(key)) << key;
  // a simulated log is clean by construction: no data-quality warning
  ASSERT_TRUE(result.data_quality.has_value());
  EXPECT_TRUE(result.data_quality->ok()) << result.data_quality->report();
  EXPECT_EQ(j["method"], "riccati-map");
  EXPECT_EQ(j["summary"]["status"], "converged");
  EXPECT_DOUBLE_EQ(j["parameters"][body.name]["mass"].get<double>(), body.mass);
  EXPECT_DOUBLE_EQ(j["parameters"][body.name]["std"]["mass"].get<double>(), body.mass_std);
  EXPECT_EQ(j["covariance"]["matrix"].size(), 10u);
  EXPECT_EQ(j["estimation"]["solver"]["cost_history"].size(), result.summary.cost_history.size());
  EXPECT_EQ(j["urdf"]["status"], "written");

  // The URDF reloads with the estimate, consistent.
  const model::RobotModel written_robot =
      model::loadRobot((out / "robot.urdf").string(), {model::BaseType::Fixed});
  const Vector10 pi = written_robot.pi(body.name);
  EXPECT_TRUE(inertia::checkConsistency(pi, 0.0).consistent);
  EXPECT_LT((pi - body.pi).cwiseAbs().maxCoeff(),
            1e-9 * std::max(1.0, body.pi.cwiseAbs().maxCoeff()));

  // The trajectory log validates against the model and holds the knots and the parameters.
  const io::Log trajectory = io::readLog((out / "trajectory.h5").string());
  const io::ValidationReport report = io::validateLog(trajectory, written_robot.pinocchio());
  EXPECT_TRUE(report.ok()) << report.report();
  EXPECT_EQ(trajectory.joints.time.size(), result.knots + 1);
  EXPECT_EQ(io::firstDifference(trajectory, result.trajectory), "");
  ASSERT_TRUE(trajectory.estimates.has_value());
  EXPECT_DOUBLE_EQ(trajectory.estimates->body_pi(0, 0), body.pi(0));

  // Outputs are not replaced without --overwrite.
  try {
    EstimateJob::write(result, out.string(), {false});
    FAIL() << "expected an InputError";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("--overwrite"), std::string::npos) << e.what();
  }
  EXPECT_NO_THROW(EstimateJob::write(result, out.string(), {true}));
}

TEST(EstimateJob, InputLogIsNeverAnOutput) {
  const fs::path out = scratch("input_in_out");
  fs::create_directories(out);
  const fs::path log = out / "trajectory.h5";
  fs::copy_file(pendulumLog(), log);
  const auto before = fs::file_size(log);
  EstimateJob::Config config =
      EstimateJob::parse(pendulumConfig(log.string(), ""), "job.yaml", ".");
  config.knots = 50;
  config.solver.max_iterations = 2;
  const EstimateJob::Result result = EstimateJob::run(config);
  try {
    EstimateJob::write(result, out.string(), {true});
    FAIL() << "expected an InputError";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("input log"), std::string::npos) << e.what();
  }
  EXPECT_EQ(fs::file_size(log), before);
}

TEST(EstimateJob, BadWindowAndNonFiniteLogAreNamed) {
  EstimateJob::Config config = EstimateJob::parse(pendulumConfig(pendulumLog()), "job.yaml", ".");
  config.knots = 1000000;
  try {
    EstimateJob::run(config);
    FAIL() << "expected an InputError";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("window.knots"), std::string::npos) << e.what();
  }
  config.knots = 100;
  config.start_time = 99.0;
  try {
    EstimateJob::run(config);
    FAIL() << "expected an InputError";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("window.start_time"), std::string::npos) << e.what();
  }

  io::Log log = io::readLog(pendulumLog());
  log.joints.q(1234, 1) = std::numeric_limits<double>::quiet_NaN();
  const fs::path bad = scratch("nan.h5");
  io::WriteOptions write;
  write.check_log = false;
  io::writeLog(log, bad.string(), write);
  config = EstimateJob::parse(pendulumConfig(bad.string()), "job.yaml", ".");
  try {
    EstimateJob::run(config);
    FAIL() << "expected an InputError";
  } catch (const InputError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("joints/q"), std::string::npos) << what;
    EXPECT_NE(what.find("1234"), std::string::npos) << what;
  }
}

// Without motion capture the base's initial guess is the log's own base state (a state
// estimator's joints/base_pose and base_twist); with neither, one error names both. The base state
// here is the truth copied into the joints group, standing in for an estimator's output: this test
// checks where the initial guess comes from, not how good an estimator is.
TEST(EstimateLogProblem, InitialBaseStateFromTheLogWithoutMotionCapture) {
  const sim::SimulationResult run = sim::simulate(sim::findScenario("go2-stand"), [] {
    sim::SimulationOptions o;
    o.duration = 0.3;
    return o;
  }());
  io::Log log = run.log;
  log.mocap.reset();
  const model::RobotModel go2 = model::loadRobot("go2");
  LogProblemOptions options;
  options.identified_bodies = {"base"};
  options.knots = 50;
  try {
    buildLogProblem(go2, log, options);
    ADD_FAILURE() << "a floating-base log with neither mocap nor base_pose was accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("joints/base_pose"), std::string::npos) << e.what();
  }
  const io::TruthSeries& truth = *run.log.truth;
  ASSERT_EQ(truth.time.size(), log.joints.time.size());
  log.joints.base_pose = truth.base_pose;
  log.joints.base_twist = truth.base_twist;
  const LogProblem p = buildLogProblem(go2, log, options);
  for (int k : {0, 25, 50}) {
    const Eigen::VectorXd pose = log.joints.base_pose.row(p.samples[k]).transpose();
    EXPECT_LT((p.xs[k].head<3>() - pose.head<3>()).norm(), 1e-12) << "knot " << k;
    EXPECT_LT((p.xs[k].segment<4>(3) - pose.tail<4>().normalized()).norm(), 1e-12);
    const Eigen::VectorXd twist = log.joints.base_twist.row(p.samples[k]).transpose();
    // linear velocity from the log; the angular one from the gyro, a direct measurement
    EXPECT_LT((p.xs[k].segment<3>(go2.pinocchio().nq) - twist.head<3>()).norm(), 1e-12) << k;
  }
}

// TALOS' sole corners (contacts/frames, offsets in the log) make each sole one flat foot: a 6D
// contact, so a stage in double support holds 12 constraints, not 8 points x 3.
TEST(EstimateLogProblem, SoleCornersMakeSixDimensionalContacts) {
  const sim::SimulationResult run = sim::simulate(sim::findScenario("talos-stand"), [] {
    sim::SimulationOptions o;
    o.duration = 0.2;
    return o;
  }());
  ASSERT_TRUE(run.log.contacts.has_value());
  ASSERT_EQ(run.log.contacts->frames.size(), 8u);
  const model::RobotModel talos = model::loadRobot("talos");
  LogProblemOptions options;
  options.identified_bodies = {"torso_2_link"};
  options.knots = 20;
  options.first_sample = 100;
  options.use_imu = false;  // TALOS' IMU sits on the torso; the estimator's IMU must be on the base
  const LogProblem p = buildLogProblem(talos, run.log, options);
  const auto* contact = dynamic_cast<const MultibodyStageModel&>(p.problem->running(10)).contact();
  ASSERT_NE(contact, nullptr);
  ASSERT_EQ(contact->contacts().size(), 2u);
  for (const auto& spec : contact->contacts()) {
    EXPECT_EQ(spec.type, dynamics::ContactSpec::Type::Surface6D) << spec.frame;
  }
}

}  // namespace
}  // namespace heft::estimation
