// The `heft explore` job: config errors naming file, line and field; a short run on a go2-actuator
// log whose scenario.yaml plays in heft simulate and whose reference.csv has the documented
// columns; the CLI's exit codes.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "heft/common/error.hpp"
#include "heft/jobs/explore_job.hpp"
#include "heft/jobs/sample_job.hpp"
#include "heft/jobs/simulate_job.hpp"
#include "support/heft_cli.hpp"
#include "support/sim_log.hpp"

using namespace heft;
using jobs::ExploreJob;
namespace fs = std::filesystem;

namespace {

// ctest runs the cases in parallel processes: every file carries the process id.
fs::path scratch(const std::string& name) {
  return test::scratchPath("explore_job", std::to_string(::getpid()) + "_" + name);
}

std::string readFile(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

void writeFile(const fs::path& p, const std::string& text) {
  fs::create_directories(p.parent_path());
  std::ofstream(p) << text;
}

// A small stage 1: the calf group of a short go2-actuator log, a few clips and generations.
// `extra`: more keys, or weights replacing the default ones.
fs::path sampleConfig(const std::string& log, double kp = 60, const std::string& extra = "",
                      const std::string& name = "stage1") {
  const fs::path p = scratch(name + "_kp" + std::to_string(static_cast<int>(kp)) + ".yaml");
  writeFile(
      p, "robot: go2\nlog: " + log +
             "\nactuators:\n"
             "  - {name: calf, joints: [FL_calf_joint, FR_calf_joint, RL_calf_joint, "
             "RR_calf_joint]}\n" +
             (extra.find("weights:") == std::string::npos ? "weights: {joint_torque: 1.0}\n" : "") +
             "replay: {kp: " + std::to_string(kp) +
             ", kd: 1.5}\n"
             "clips: {count: 6, min_horizon: 0.2, max_horizon: 0.3, seed: 1, "
             "holdout_fraction: 0}\n"
             "optimizer: {iterations: 4, seed: 1}\nthreads: 2\n" +
             extra);
  return p;
}

const char* kExploration =
    "exploration: {segments: 1, segment_duration: 2.5, degree: 4, max_hop_flight: 0.1}\n"
    "optimizer: {iterations: 2, population: 4, seed: 3}\n";

std::string parseError(const std::string& text) {
  try {
    const fs::path config = scratch("bad.yaml");
    ExploreJob::parse(text, config.string(), config.parent_path().string());
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST(ExploreJob, BadInputNamesFileLineAndField) {
  const std::string log = test::writeSimulatedLog("explore_job", "go2-actuator", 3.0, 5);
  const std::string sample = sampleConfig(log).filename().string();
  EXPECT_NE(parseError("exploration: {segments: 1}\n").find("sample: missing"), std::string::npos)
      << parseError("exploration: {segments: 1}\n");
  const std::string criterion =
      parseError("sample: " + sample + "\nexploration:\n  criterion: trace\n");
  EXPECT_NE(criterion.find("bad.yaml:3: exploration.criterion: expected trace_inverse"),
            std::string::npos)
      << criterion;
  const std::string bounds =
      parseError("sample: " + sample + "\nexploration:\n  bounds: [0.1, 0.1]\n");
  EXPECT_NE(bounds.find("exploration.bounds: expected 6 numbers"), std::string::npos) << bounds;
  const std::string other_robot =
      parseError("sample: " + sample + "\nreference_scenario: go1-7.2kg\n");
  EXPECT_NE(
      other_robot.find("reference_scenario: expected a scenario of the sample config's robot"),
      std::string::npos)
      << other_robot;
  const std::string missing = parseError("sample: nowhere.yaml\n");
  EXPECT_NE(missing.find("nowhere.yaml"), std::string::npos) << missing;
  // the design replays the commands through the robot's PD: the reference scenario's gains
  const std::string gains_config = sampleConfig(log, 40).filename().string();
  const std::string gains = parseError("sample: " + gains_config + "\n");
  EXPECT_NE(gains.find("the gains of the sample config's replay (kp 40"), std::string::npos)
      << gains;
}

TEST(ExploreJob, DesignsCommandsThatHeftSimulatePlays) {
  const std::string log = test::writeSimulatedLog("explore_job", "go2-actuator", 3.0, 5);
  const fs::path config = scratch("explore.yaml");
  writeFile(config, "sample: " + sampleConfig(log).filename().string() + "\n" + kExploration);
  const ExploreJob::Result result = ExploreJob::run(ExploreJob::load(config.string()));
  ASSERT_TRUE(result.ok()) << result.report();
  EXPECT_TRUE(result.random.feasible) << result.random.why;
  EXPECT_LE(result.design.best.criterion, result.design.optimizer.initial_cost);
  // the calf's gain and kappa, and the floor under the grounded base
  EXPECT_EQ(result.names,
            (std::vector<std::string>{"gain[calf]", "saturation[calf]", "floor_offset"}));
  const fs::path out = scratch("explore_out");
  fs::remove_all(out);
  ExploreJob::write(result, out.string());
  // the scenario plays: the reference scenario (go2-stand) with the designed commands
  const jobs::SimulateJob::Config played =
      jobs::SimulateJob::load((out / "scenario.yaml").string());
  EXPECT_EQ(played.scenario.stance.commands.points, result.design.best.motion.commands.points);
  EXPECT_EQ(played.scenario.duration, result.design.best.duration);
  EXPECT_EQ(played.scenario.kp, 60);
  // reference.csv: t, 7 base columns, 12 joints, 12 feed-forward torques at 100 Hz
  std::ifstream csv(out / "reference.csv");
  std::string header, line;
  std::getline(csv, header);
  EXPECT_EQ(std::count(header.begin(), header.end(), ','), 32 - 1) << header;
  EXPECT_EQ(header.rfind("t,base_x,base_y,base_z,base_qx,base_qy,base_qz,base_qw,FL_hip_joint", 0),
            0u)
      << header;
  int rows = 0;
  while (std::getline(csv, line)) ++rows;
  EXPECT_EQ(rows, static_cast<int>(std::floor(result.design.best.duration * 100 + 1e-9)) + 1);
  const nlohmann::json j = nlohmann::json::parse(readFile(out / "result.json"));
  EXPECT_EQ(j["status"], "designed");
  EXPECT_EQ(j["design"]["criterion_name"], "trace_inverse");
  EXPECT_TRUE(j["design"]["predicted_std"].contains("saturation[calf]")) << j["design"].dump();
  EXPECT_EQ(j["design"]["commands"]["points"]["z"].size(), 5u);
  EXPECT_EQ(j["stage1"]["method"], "sampling");
}

// A finished stage 1 read instead of run (stage1_result): the same design as the run that
// computed it, since the design needs only its estimate and residual RMS; a result of another
// job or config, or of a failed search, is bad input naming the file.
TEST(ExploreJob, DesignsFromAFinishedStageOne) {
  const std::string log = test::writeSimulatedLog("explore_job", "go2-actuator", 3.0, 5);
  // with the torque sensor's terms (offsets profiled out, the actuator term), as the example's
  const fs::path sample = sampleConfig(
      log, 60, "torque_offsets: true\nweights: {joint_torque: 1.0, actuator_torque: 100}\n",
      "stage1_offsets");
  const std::string text = "sample: " + sample.filename().string() + "\n" + kExploration;
  const fs::path config = scratch("explore_first.yaml");
  writeFile(config, text);
  const ExploreJob::Result first = ExploreJob::run(ExploreJob::load(config.string()));
  ASSERT_TRUE(first.ok()) << first.report();
  const fs::path stage1 = scratch("stage1_out");
  fs::remove_all(stage1);
  jobs::SampleJob::write(first.stage1, stage1.string());
  const fs::path stage1_json = stage1 / "result.json";

  const fs::path again = scratch("explore_again.yaml");
  writeFile(again, text + "stage1_result: " + stage1.filename().string() + "/result.json\n");
  const ExploreJob::Result second = ExploreJob::run(ExploreJob::load(again.string()));
  ASSERT_TRUE(second.ok()) << second.report();
  EXPECT_EQ(second.stage1.summary.status, sampling::SamplingSummary::Status::NotRun);
  EXPECT_EQ(second.names, first.names);
  EXPECT_EQ(second.design.best.criterion, first.design.best.criterion);
  EXPECT_EQ(second.design.best.motion.commands.points, first.design.best.motion.commands.points);
  EXPECT_NE(second.report().find(stage1_json.string() + " (not re-run)"), std::string::npos)
      << second.report();
  const nlohmann::json j = second.toJson();
  EXPECT_EQ(j["stage1_result"], stage1_json.string());
  EXPECT_EQ(j["stage1"]["method"], "sampling");
  EXPECT_EQ(j["status"], "designed");

  const nlohmann::json written = nlohmann::json::parse(readFile(stage1_json));
  const auto errorWith = [&](const std::string& name, const nlohmann::json& contents) {
    const fs::path file = scratch(name);
    writeFile(file, contents.dump());
    try {
      writeFile(again, text + "stage1_result: " + file.filename().string() + "\n");
      ExploreJob::run(ExploreJob::load(again.string()));
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  nlohmann::json other = written;
  other["information"]["names"][0] = "gain[hip]";
  const std::string config_error = errorWith("other_config.json", other);
  EXPECT_NE(config_error.find("other_config.json: stage1_result: expected the coordinates of the "
                              "sample config (gain[calf], saturation[calf], floor_offset), got "
                              "(gain[hip], saturation[calf], floor_offset)"),
            std::string::npos)
      << config_error;
  nlohmann::json failed = written;
  failed["summary"]["status"] = "failed";
  const std::string failed_error = errorWith("failed.json", failed);
  EXPECT_NE(failed_error.find("expected a usable stage 1"), std::string::npos) << failed_error;
  nlohmann::json map = written;
  map["method"] = "map";
  const std::string method_error = errorWith("map.json", map);
  EXPECT_NE(method_error.find("expected the result.json of heft sample, got method \"map\""),
            std::string::npos)
      << method_error;
  nlohmann::json short_x = written;
  short_x["sampling"]["best_x"].erase(0);
  const std::string x_error = errorWith("short_x.json", short_x);
  EXPECT_NE(x_error.find("sampling.best_x: expected 3 numbers"), std::string::npos) << x_error;
}

TEST(ExploreJob, LimitsThatStandingStillBreaksAreBadInput) {
  // refused before stage 1 (no estimate computed and dropped): the log is not even read
  const std::string log = scratch("never_read.h5").string();
  const fs::path config = scratch("tight.yaml");
  writeFile(config, "sample: " + sampleConfig(log).filename().string() +
                        "\nexploration: {segments: 1, segment_duration: 2.5, degree: 4, "
                        "torque_fraction: 0.01}\noptimizer: {iterations: 2, population: 4}\n");
  try {
    ExploreJob::run(ExploreJob::load(config.string()));
    FAIL() << "designed under limits that standing still breaks";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("tight.yaml: exploration.torque_fraction: expected a "
                                         "share of the effort limits that standing still"),
              std::string::npos)
        << e.what();
  }
}

TEST(ExploreJob, AHopThatDoesNotFitASegmentIsBadInputBeforeStageOne) {
  // go2-stand's hop_push with a 1 s flight in 2.5 s segments: refused at load, the log not read
  const std::string log = scratch("never_read_hop.h5").string();
  const fs::path config = scratch("long_hop.yaml");
  writeFile(config, "sample: " + sampleConfig(log).filename().string() +
                        "\nexploration: {segments: 1, segment_duration: 2.5, degree: 4, "
                        "max_hop_flight: 1.0}\noptimizer: {iterations: 2, population: 4}\n");
  try {
    ExploreJob::run(ExploreJob::load(config.string()));
    FAIL() << "a hop longer than its segment was accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("long_hop.yaml: exploration.max_hop_flight: expected a "
                                         "hop (2 hop_push + flight) that fits in a segment"),
              std::string::npos)
        << e.what();
  }
}

TEST(ExploreJob, CliExitCodes) {
  const fs::path config = scratch("cli_bad.yaml");
  writeFile(config, "sample: missing.yaml\n");
  const fs::path out = scratch("cli_out"), err = scratch("cli_err.txt");
  fs::remove_all(out);
  EXPECT_EQ(
      test::runHeft("explore " + config.string() + " --out " + out.string() + " --quiet", err), 2);
  const std::string message = readFile(err);
  EXPECT_EQ(std::count(message.begin(), message.end(), '\n'), 1) << message;
  EXPECT_NE(message.find("missing.yaml"), std::string::npos) << message;
  EXPECT_FALSE(fs::exists(out));
}

TEST(ExploreJob, TheExampleConfigLoads) {
  const ExploreJob::Config config =
      ExploreJob::load(std::string(HEFT_SOURCE_DIR) + "/data/examples/go2_actuator_explore.yaml");
  EXPECT_EQ(config.sample.actuators.size(), 3u);
  EXPECT_EQ(config.exploration.degree, 6);
  EXPECT_EQ(config.exploration.optimizer.max_iterations, 20);
  EXPECT_EQ(config.reference_scenario, "go2-stand");
}
