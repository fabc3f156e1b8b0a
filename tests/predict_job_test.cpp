// heft predict: a model and the actuator terms of a result.json applied to a log, next to the
// nominal model; the same numbers as identify's held-out prediction; bad input named.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "heft/common/error.hpp"
#include "heft/io/log_io.hpp"
#include "heft/jobs/identify_job.hpp"
#include "heft/jobs/predict_job.hpp"
#include "heft/sim/scenario.hpp"
#include "support/scratch.hpp"
#include "support/sim_log.hpp"

namespace heft::jobs {
namespace {

namespace fs = std::filesystem;

fs::path scratch(const std::string& name) { return test::scratchPath("predict_job", name); }

const std::string& pandaLog() {
  static const std::string path = test::writeSimulatedLog("predict_job", "panda-friction", 3, 5);
  return path;
}

const std::string kPreparation = "preparation:\n  decimation: 5\nproblem:\n  min_speed: 0.05\n";

// Identify on all but [2.0, 2.6] s, write robot.urdf and result.json; predict the held-out range
// from those files: the identified model's errors are identify's own held-out numbers.
TEST(PredictJob, TheWrittenModelPredictsWhatIdentifyHeldOut) {
  std::ostringstream y;
  y << "robot: panda\nlog: " << pandaLog() << "\nmethod: map\n"
    << "identify:\n  bodies: [panda_link5, panda_link6, panda_link7]\n"
    << "  friction: [panda_joint1, panda_joint2, panda_joint3, panda_joint4, panda_joint5, "
       "panda_joint6, panda_joint7]\n"
    << "  armature: [panda_joint1, panda_joint2, panda_joint3, panda_joint4, panda_joint5, "
       "panda_joint6, panda_joint7]\n"
    << "  torque_offsets: [panda_joint5, panda_joint6, panda_joint7]\n"
    << kPreparation << "validation: [[2.0, 2.6]]\n";
  const IdentifyJob::Result identified =
      IdentifyJob::run(IdentifyJob::parse(y.str(), "id.yaml", "."));
  ASSERT_TRUE(identified.writable()) << identified.report();
  ASSERT_EQ(identified.heldout.size(), 2u);
  const fs::path out = scratch("identified");
  IdentifyJob::write(identified, out.string(), {false});

  std::ostringstream p;
  p << "robot: " << (out / "robot.urdf").string()
    << "\nbase: fixed\nresult: " << (out / "result.json").string()
    << "\nnominal: panda\nlog: " << pandaLog() << "\nranges: [[2.0, 2.6]]\n"
    << kPreparation;
  const PredictJob::Config config = PredictJob::parse(p.str(), "predict.yaml", ".");
  const PredictJob::Result result = PredictJob::run(config);
  ASSERT_EQ(result.predictions.size(), 2u);
  const results::TorquePrediction& model = result.predictions[0];
  const results::TorquePrediction& nominal = result.predictions[1];
  const results::TorquePrediction& heldout = identified.heldout[1];
  EXPECT_EQ(model.samples, heldout.samples);
  EXPECT_EQ(model.channels, heldout.channels);
  EXPECT_NEAR(model.rmse_all, heldout.rmse_all, 1e-6 * heldout.rmse_all)
      << result.report() << "\n"
      << results::predictionReport(identified.heldout);
  for (int c = 0; c < model.rmse.size(); ++c)
    EXPECT_NEAR(model.rmse[c], heldout.rmse[c], 1e-6 * heldout.rmse_all) << model.channels[c];
  // the rigid-body nominal model, without friction, armature or offsets, predicts worse
  EXPECT_GT(nominal.rmse_all, model.rmse_all) << result.report();

  const fs::path predicted = scratch("predicted");
  const auto written = PredictJob::write(result, predicted.string(), {false});
  ASSERT_EQ(written.size(), 1u);
  std::ifstream in(written[0]);
  const nlohmann::json j = nlohmann::json::parse(in);
  EXPECT_EQ(j["predictions"][0]["rmse_all"].get<double>(), model.rmse_all);
  EXPECT_EQ(j["schema_version"], 1);
}

std::string errorOfRun(const std::string& yaml) {
  try {
    PredictJob::run(PredictJob::parse(yaml, "predict.yaml", "."));
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

TEST(PredictJob, AResultOfAnotherRobotOrARangeOutsideTheLogIsBadInput) {
  const fs::path other = scratch("go2_result.json");
  std::ofstream(other) << R"({"schema_version": 1, "parameters": {},
    "friction": {"FL_hip_joint": {"coulomb": 0.1, "viscous": 0.2}}})";
  const std::string base = "robot: panda\nlog: " + pandaLog() + "\n";
  const std::string robot = errorOfRun(base + "result: " + other.string() + "\n");
  EXPECT_NE(robot.find("friction: joint \"FL_hip_joint\" is not a joint of"), std::string::npos)
      << robot;
  EXPECT_NE(robot.find("go2_result.json"), std::string::npos) << robot;

  const std::string range = errorOfRun(base + "ranges: [[40, 50]]\n");
  EXPECT_NE(range.find("predict.yaml: ranges: [40, 50] s holds no sample"), std::string::npos)
      << range;
  const std::string reversed = errorOfRun(base + "ranges: [[2, 1]]\n");
  EXPECT_NE(reversed.find("predict.yaml:3: ranges:"), std::string::npos) << reversed;

  // a joint's entry that is not the object the jobs write: named, not an internal error
  const fs::path bare = scratch("bare_offsets.json");
  std::ofstream(bare) << R"({"schema_version": 1, "torque_offsets": {"panda_joint1": 0.3}})";
  const std::string shape = errorOfRun(base + "result: " + bare.string() + "\n");
  EXPECT_NE(shape.find("torque_offsets.panda_joint1: expected an object with \"offset\", got 0.3"),
            std::string::npos)
      << shape;

  const fs::path not_heft = scratch("other.json");
  std::ofstream(not_heft) << "{\"a\": 1}";
  const std::string foreign = errorOfRun(base + "result: " + not_heft.string() + "\n");
  EXPECT_NE(foreign.find("expected a heft result.json"), std::string::npos) << foreign;
}

}  // namespace
}  // namespace heft::jobs
