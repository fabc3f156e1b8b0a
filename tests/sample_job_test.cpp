// The `heft sample` job: config errors naming file, line and field; a run on the double pendulum
// with a payload whose result.json, robot.urdf and history.csv are written and whose held-out
// prediction beats the start model; the CLI's exit codes.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "heft/common/error.hpp"
#include "heft/io/log_io.hpp"
#include "heft/jobs/predict_job.hpp"
#include "heft/jobs/sample_job.hpp"
#include "heft/sim/scenario.hpp"
#include "support/heft_cli.hpp"
#include "support/sim_log.hpp"

using namespace heft;
using jobs::SampleJob;
namespace fs = std::filesystem;

namespace {

fs::path scratch(const std::string& name) { return test::scratchPath("sample_job", name); }

std::string readFile(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string pendulumConfig(const std::string& log) {
  return "robot: double_pendulum\nlog: " + log +
         "\n"
         "bodies: [joint2]\n"
         "clips: {count: 12, min_horizon: 0.1, max_horizon: 0.3, seed: 1, holdout_fraction: 0.25,"
         " holdout_clips: 10}\n"
         "optimizer: {iterations: 60, seed: 1}\n"
         "threads: 2\n";
}

// The error of parse(text) (none: "").
std::string parseError(const std::string& text) {
  try {
    SampleJob::parse(text, "bad.yaml", ".");
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST(SampleJob, BadInputNamesFileLineAndField) {
  const std::string head = "robot: double_pendulum\nlog: x.h5\n";
  EXPECT_NE(parseError(head).find("bodies, actuators, joints"), std::string::npos);
  const std::string range = parseError(head + "bodies:\n  - {name: joint2, mass: [2, 1]}\n");
  EXPECT_NE(range.find("bad.yaml:4: bodies[0].mass: expected [min, max]"), std::string::npos)
      << range;
  const std::string typo = parseError(head + "bodies: [joint2]\nclips: {count: 3, seeed: 2}\n");
  EXPECT_NE(typo.find("bad.yaml:4: clips.seeed: unknown key"), std::string::npos) << typo;
  const std::string sample =
      parseError(head + "actuators:\n  - {name: a, joints: [joint1], sample: [gains]}\n");
  EXPECT_NE(sample.find("actuators[0].sample: expected a list of gain and/or saturation"),
            std::string::npos)
      << sample;
}

TEST(SampleJob, AStartOutsideItsRangeOrALogWithoutCommandsIsBadInput) {
  const std::string log = test::writeSimulatedLog("sample_job", "double-pendulum-payload", 4.0, 7);
  // the nominal link 2 (0.33 kg) lies outside a range of [0.4, 0.6] kg
  SampleJob::Config config = SampleJob::parse(
      "robot: double_pendulum\nlog: " + log + "\nbodies:\n  - {name: joint2, mass: [0.4, 0.6]}\n",
      "range.yaml", ".");
  try {
    SampleJob::run(config);
    ADD_FAILURE() << "a start outside its range was accepted";
  } catch (const InputError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("range.yaml: bodies: link2: the start model lies outside the range"),
              std::string::npos)
        << what;
  }
  io::Log without = io::readLog(log);
  without.joints.tau_cmd.resize(0, 0);
  const fs::path path = scratch("no_commands_" + std::to_string(::getpid()) + ".h5");
  io::writeLog(without, path.string());
  config = SampleJob::parse(pendulumConfig(path.string()), "ok.yaml", ".");
  try {
    SampleJob::run(config);
    ADD_FAILURE() << "a log without commands was accepted";
  } catch (const InputError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find(path.string() + ": joints/tau_cmd"), std::string::npos) << what;
  }
}

// The payload on link 2 of the double pendulum (0.15 kg at 0.18 m), found from 6 s of clips and
// scored on 2 s the fit did not see.
TEST(SampleJob, FindsThePendulumPayloadAndPredictsHeldOutClips) {
  const std::string log = test::writeSimulatedLog("sample_job", "double-pendulum-payload", 8.0, 11);
  const SampleJob::Config config = SampleJob::parse(pendulumConfig(log), "pendulum.yaml", ".");
  const SampleJob::Result result = SampleJob::run(config);
  std::cout << result.report();
  ASSERT_TRUE(result.ok());
  ASSERT_TRUE(result.truth.has_value());
  const results::BodyError& e = result.truth->bodies.at(0);
  EXPECT_LT(e.mass_relative, 0.02);
  // the budget warning comes exactly when CMA-ES used its whole budget
  const long budget_warnings = std::count_if(
      result.warnings.begin(), result.warnings.end(),
      [](const std::string& w) { return w.find("CMA-ES used all") != std::string::npos; });
  EXPECT_EQ(budget_warnings,
            result.summary.status == sampling::SamplingSummary::Status::MaxIterations ? 1 : 0)
      << result.report();
  EXPECT_GT(result.summary.holdout_prediction_error, 0);
  EXPECT_LT(result.summary.holdout_prediction_error, 0.2);
  EXPECT_EQ(result.summary.holdout_clips.size(), 10u);
  // the Fisher information at the estimate: both joints turn about x, so the COM's x moves
  // nothing and keeps a huge variance; the mass is well determined
  ASSERT_TRUE(result.information.ok);
  EXPECT_LT(result.information.rank, 10);
  const results::BodyEstimate& link2 = result.bodies.at(0);
  EXPECT_GT(link2.com_std[0], 1e3 * link2.com_std[1]);
  EXPECT_GT(link2.mass_std, 0);
  EXPECT_LT(link2.mass_std, 0.01 * link2.mass);
  const int fitted_end = static_cast<int>(0.75 * 8.0 / result.summary.dt + 0.5);
  for (const sampling::Clip& clip : result.summary.clips)
    EXPECT_LE(clip.start + clip.steps, fitted_end);
  for (const sampling::Clip& clip : result.summary.holdout_clips) EXPECT_GE(clip.start, fitted_end);

  const fs::path out = scratch("pendulum_" + std::to_string(::getpid()));
  const std::vector<std::string> written = SampleJob::write(result, out.string());
  EXPECT_EQ(written.size(), 3u);
  const nlohmann::json json = nlohmann::json::parse(readFile(out / "result.json"));
  EXPECT_EQ(json["summary"]["status"], sampling::toString(result.summary.status));
  EXPECT_NEAR(json["parameters"][result.bodies[0].name]["mass"].get<double>(),
              result.bodies[0].mass, 1e-12);
  EXPECT_EQ(json["urdf"]["status"], "written");
  EXPECT_NEAR(json["validation"]["prediction_error"].get<double>(),
              result.summary.holdout_prediction_error, 1e-12);
  const std::string history = readFile(out / "history.csv");
  EXPECT_EQ(static_cast<std::size_t>(std::count(history.begin(), history.end(), '\n')),
            result.history.size() + 1);
  EXPECT_NE(readFile(out / "robot.urdf").find("<robot"), std::string::npos);
}

// Commands far below kappa leave it unobservable: the result says so instead of presenting a
// number as an estimate.
TEST(SampleJob, WarnsWhenTheCommandsNeverReachTheSaturation) {
  const std::string log = test::writeSimulatedLog("sample_job", "double-pendulum", 3.0, 5);
  const SampleJob::Config config = SampleJob::parse(
      "robot: double_pendulum\nlog: " + log +
          "\nactuators:\n  - {name: both, joints: [joint1, joint2], sample: [saturation]}\n"
          "clips: {count: 4, min_horizon: 0.1, max_horizon: 0.2}\noptimizer: {iterations: 3}\n",
      "saturation.yaml", ".");
  const SampleJob::Result result = SampleJob::run(config);
  ASSERT_EQ(result.groups.size(), 1u);
  EXPECT_LT(result.groups[0].command_reach, 0.5);
  const auto warned =
      std::any_of(result.warnings.begin(), result.warnings.end(), [](const std::string& w) {
        return w.find("actuator group both: the commands reach at most") != std::string::npos;
      });
  EXPECT_TRUE(warned) << result.report();
  // three generations do not reach CMA-ES's tolerances: the budget ran out, and the result says so
  ASSERT_EQ(result.summary.status, sampling::SamplingSummary::Status::MaxIterations);
  const auto budget_warned =
      std::any_of(result.warnings.begin(), result.warnings.end(), [](const std::string& w) {
        return w.find("CMA-ES used all 3 generations") != std::string::npos;
      });
  EXPECT_TRUE(budget_warned) << result.report();
}

// `torque_offsets: true`: the offsets the search profiled out are in the report and in
// result.json (the other jobs' shape, one per joint; with more_logs, also one per recording), and
// the configured flag reaches the search.
TEST(SampleJob, WritesTheTorqueOffsetsItProfiledOut) {
  const std::string log = test::writeSimulatedLog("sample_job", "double-pendulum", 3.0, 5);
  const std::string text =
      "robot: double_pendulum\nlog: " + log +
      "\nactuators:\n  - {name: both, joints: [joint1, joint2], sample: [gain], saturation: 0}\n"
      "weights: {joint_torque: 1, actuator_torque: 10}\ntorque_offsets: true\n"
      "clips: {count: 4, min_horizon: 0.1, max_horizon: 0.2}\noptimizer: {iterations: 5}\n";
  const SampleJob::Config config = SampleJob::parse(text, "offsets.yaml", ".");
  ASSERT_TRUE(config.sampling.weights.torque_offsets);
  EXPECT_EQ(config.sampling.weights.actuator_torque, 10);
  EXPECT_FALSE(
      SampleJob::parse(pendulumConfig(log), "p.yaml", ".").sampling.weights.torque_offsets);
  const SampleJob::Result result = SampleJob::run(config);
  ASSERT_TRUE(result.ok()) << result.report();
  ASSERT_EQ(result.summary.torque_offsets.rows(), 2);
  ASSERT_EQ(result.summary.torque_offsets.cols(), 1);
  EXPECT_NE(result.report().find("torque-sensor offsets"), std::string::npos) << result.report();
  const nlohmann::json json = result.toJson();
  ASSERT_TRUE(json.contains("torque_offsets")) << json.dump(2);
  EXPECT_DOUBLE_EQ(json["torque_offsets"]["joint1"]["offset"].get<double>(),
                   result.summary.torque_offsets(0, 0));
  EXPECT_DOUBLE_EQ(json["torque_offsets"]["joint2"]["offset"].get<double>(),
                   result.summary.torque_offsets(1, 0));
  EXPECT_FALSE(json["torque_offsets"]["joint1"].contains("per_recording"));
  // heft predict applies them from the file: the log's torques are predicted better with them
  const fs::path written = scratch("offsets_result.json");
  std::ofstream(written) << json.dump();
  const std::string predict = "robot: double_pendulum\nlog: " + log + "\n";
  const jobs::PredictJob::Result with = jobs::PredictJob::run(
      jobs::PredictJob::parse(predict + "result: " + written.string() + "\n", "p.yaml", "."));
  const jobs::PredictJob::Result without =
      jobs::PredictJob::run(jobs::PredictJob::parse(predict, "p.yaml", "."));
  ASSERT_FALSE(with.predictions.empty());
  ASSERT_FALSE(without.predictions.empty());
  std::cout << "predicted torque RMSE with the offsets " << with.predictions[0].rmse_all
            << " N m, without " << without.predictions[0].rmse_all << " N m\n";
  EXPECT_LT(with.predictions[0].rmse_all, without.predictions[0].rmse_all);
  // the actuator term over the fitted samples: in the terms, and its offsets are the reported ones
  EXPECT_GT(json["sampling"]["best_terms"]["actuator_samples"].get<long>(), 1000);
  EXPECT_LT((result.summary.torque_offsets + result.summary.best_terms.meanActuatorResidual())
                .cwiseAbs()
                .maxCoeff(),
            1e-15);
  const std::string bad = parseError(pendulumConfig(log) + "torque_offsets: maybe\n");
  EXPECT_NE(bad.find("bad.yaml:7: torque_offsets"), std::string::npos) << bad;

  // a second recording: its own offsets, in the report and in result.json after the log's
  const std::string more = test::writeSimulatedLog("sample_job_more", "double-pendulum", 3.0, 6);
  const SampleJob::Result two =
      SampleJob::run(SampleJob::parse(text + "more_logs: [" + more + "]\n", "two.yaml", "."));
  ASSERT_TRUE(two.ok()) << two.report();
  ASSERT_EQ(two.summary.torque_offsets.cols(), 2);
  EXPECT_NE(two.report().find("one per recording: the log, then more_logs"), std::string::npos)
      << two.report();
  const nlohmann::json j2 = two.toJson()["torque_offsets"]["joint2"];
  ASSERT_TRUE(j2.contains("per_recording")) << j2.dump();
  ASSERT_EQ(j2["per_recording"].size(), 2u);
  EXPECT_DOUBLE_EQ(j2["offset"].get<double>(), two.summary.torque_offsets(1, 0));
  EXPECT_DOUBLE_EQ(j2["per_recording"][1].get<double>(), two.summary.torque_offsets(1, 1));
}

// The CLI: bad input is one line on stderr naming the field, exit 2, nothing written.
TEST(SampleCommand, BadInputExitsTwoWritingNothing) {
  const fs::path config = scratch("bad_" + std::to_string(::getpid()) + ".yaml");
  std::ofstream(config) << "robot: double_pendulum\nlog: x.h5\nbodies: [joint2]\nthreads: -1\n";
  const fs::path out = scratch("bad_out_" + std::to_string(::getpid()));
  const fs::path err = scratch("bad_err_" + std::to_string(::getpid()));
  EXPECT_EQ(test::runHeft("sample " + config.string() + " --out " + out.string() + " --quiet", err),
            2);
  const std::string message = readFile(err);
  EXPECT_EQ(std::count(message.begin(), message.end(), '\n'), 1) << message;
  EXPECT_NE(message.find(config.string() + ":4: threads"), std::string::npos) << message;
  EXPECT_FALSE(fs::exists(out));
}
