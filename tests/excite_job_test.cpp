// The `heft excite` job: config errors, the written scenario replayed by `heft simulate`, the CLI.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "heft/common/error.hpp"
#include "heft/jobs/excite_job.hpp"
#include "heft/jobs/simulate_job.hpp"
#include "heft/model/robots.hpp"
#include "heft/sim/controller.hpp"
#include "heft/sim/scenario.hpp"
#include "support/heft_cli.hpp"
#include "support/scratch.hpp"

using namespace heft;
using jobs::ExciteJob;
namespace fs = std::filesystem;

namespace {

fs::path scratch(const std::string& name) { return test::scratchPath("excite_job", name); }

std::string readFile(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// A short design: 6 s, three joints excited, few generations.
const char* kShortConfig = R"(robot: panda
joints: [panda_joint1, panda_joint2, panda_joint4]
harmonics: 3
base_frequency: 0.25
duration: 6
ramp: 1
samples: 61
optimizer:
  iterations: 40
  seed: 3
csv_rate: 100
)";

// The error of parse(text) (none: "").
std::string parseError(const std::string& text) {
  try {
    ExciteJob::parse(text, "bad.yaml", ".");
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST(ExciteJob, BadInputNamesFileLineAndField) {
  const std::string unknown = parseError("robot: panda\njoints: [panda_joint1, elbow]\n");
  EXPECT_NE(unknown.find("bad.yaml:2: joints[1]"), std::string::npos) << unknown;
  EXPECT_NE(unknown.find("elbow"), std::string::npos) << unknown;
  const std::string still = parseError("robot: panda\nlimits:\n  velocity_fraction: 0\n");
  EXPECT_NE(still.find("bad.yaml:3: limits.velocity_fraction"), std::string::npos) << still;
  const std::string duration = parseError("robot: panda\nduration: -1\n");
  EXPECT_NE(duration.find("bad.yaml:2: duration"), std::string::npos) << duration;
  const std::string zero = parseError("robot: panda\nduration: 0\n");
  EXPECT_NE(zero.find("bad.yaml:2: duration"), std::string::npos) << zero;
  const std::string weak = parseError("robot: panda\nlimits:\n  torque_fraction: 0.001\n");
  EXPECT_NE(weak.find("bad.yaml:3: limits.torque_fraction"), std::string::npos) << weak;
  EXPECT_NE(weak.find("no trajectory satisfies"), std::string::npos) << weak;
  const std::string criterion = parseError("criterion: fastest\n");
  EXPECT_NE(criterion.find("bad.yaml:1: criterion"), std::string::npos) << criterion;
  const std::string typo = parseError("harmonic: 4\n");
  EXPECT_NE(typo.find("bad.yaml:1: harmonic: unknown key"), std::string::npos) << typo;
  const std::string free_flyer = parseError("robot: go2\n");
  EXPECT_NE(free_flyer.find("bad.yaml:1: robot"), std::string::npos) << free_flyer;
}

// The scenario file parses back, its reference is the designed trajectory (the CSV) sample for
// sample, and MuJoCo tracks it within the scenario's bound.
TEST(ExciteJob, TheWrittenScenarioReplaysTheDesign) {
  const ExciteJob::Config config = ExciteJob::parse(kShortConfig, "short.yaml", ".");
  const ExciteJob::Result result = ExciteJob::run(config);
  ASSERT_TRUE(result.ok()) << result.report();
  EXPECT_EQ(result.collision.samples, 601);
  EXPECT_GT(result.collision.pairs, 0);
  EXPECT_EQ(result.after.rank, static_cast<int>(result.base_names.size())) << result.report();
  const fs::path out = scratch("replay_" + std::to_string(::getpid()));
  const std::vector<std::string> written = ExciteJob::write(result, out.string());
  EXPECT_EQ(written.size(), 3u);
  EXPECT_THROW(ExciteJob::write(result, out.string()), InputError);  // no --overwrite

  const jobs::SimulateJob::Config scenario =
      jobs::SimulateJob::load((out / "scenario.yaml").string());
  EXPECT_EQ(scenario.scenario.fourier.series.size(), 9u);
  const model::RobotModel robot = model::loadRobot("panda");
  const sim::Reference ref =
      sim::fourierReference(robot, scenario.scenario.fourier, config.design.duration, 0.01);
  const excite::TrajectorySamples csv =
      excite::sampleTrajectory(result.design.trajectory, config.design.duration, 601);
  ASSERT_EQ(ref.samples(), csv.size());
  EXPECT_LT((ref.q - csv.q).cwiseAbs().maxCoeff(), 1e-12);
  EXPECT_LT((ref.v - csv.v).cwiseAbs().maxCoeff(), 1e-12);
  EXPECT_LT((ref.a - csv.a).cwiseAbs().maxCoeff(), 1e-12);
  // the CSV: header t, q_*, qd_*, qdd_* and one row per sample at csv_rate
  const std::string text = readFile(out / "trajectory.csv");
  EXPECT_EQ(text.rfind("t,q_panda_joint1,", 0), 0u);
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 1 + 601);

  sim::SimulationOptions options = scenario.options;
  options.make_log = false;
  const sim::SimulationResult run = sim::simulate(scenario.scenario, options);
  EXPECT_TRUE(run.summary.ok()) << run.summary.report();
  EXPECT_LT(run.summary.max_tracking_error, scenario.scenario.max_tracking_error);
}

// A design that fails a final check (here: marked as colliding) writes result.json saying so and
// no scenario, then throws SolveError (exit 1).
TEST(ExciteJob, AFailedCheckWritesOnlyTheResult) {
  const ExciteJob::Config config = ExciteJob::parse(kShortConfig, "short.yaml", ".");
  ExciteJob::Result result = ExciteJob::run(config);
  ASSERT_TRUE(result.ok()) << result.report();
  result.collision.colliding = 1;
  result.collision.first = "panda_link0_0 / panda_leftfinger_0 at t = 1 s";
  const fs::path out = scratch("failed_" + std::to_string(::getpid()));
  EXPECT_THROW(ExciteJob::write(result, out.string()), SolveError);
  EXPECT_TRUE(fs::exists(out / "result.json"));
  EXPECT_FALSE(fs::exists(out / "scenario.yaml"));
  EXPECT_FALSE(fs::exists(out / "trajectory.csv"));
  const std::string json = readFile(out / "result.json");
  EXPECT_NE(json.find("\"ok\": false"), std::string::npos);
  EXPECT_NE(json.find("panda_leftfinger_0"), std::string::npos);
}

// The seeded path is untouched: a file without `series` still reads as the panda scenario.
TEST(ExciteJob, ScenarioFilesWithoutSeriesKeepTheSeed) {
  jobs::SimulateJob::Config panda = jobs::SimulateJob::builtIn("panda");
  const std::string text = jobs::SimulateJob::toYaml(panda);
  EXPECT_EQ(text.find("series"), std::string::npos);
  const jobs::SimulateJob::Config back = jobs::SimulateJob::parse(text, "panda.yaml", ".");
  EXPECT_TRUE(back.scenario.fourier.series.empty());
  EXPECT_EQ(back.scenario.fourier.coefficient_seed, 7u);
}

TEST(ExciteJob, SeriesErrorsNameTheField) {
  const std::string base = "robot: panda\nmotion:\n  type: fourier\n  series:\n";
  auto error = [&](const std::string& series) {
    try {
      jobs::SimulateJob::parse(base + series, "s.yaml", ".");
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  const std::string unknown = error("    elbow: {q0: 0, a: [0.1], b: [0.1]}\n");
  EXPECT_NE(unknown.find("s.yaml:5: motion.series.elbow"), std::string::npos) << unknown;
  const std::string lengths = error("    panda_joint1: {q0: 0, a: [0.1, 0.2], b: [0.1]}\n");
  EXPECT_NE(lengths.find("motion.series.panda_joint1.b"), std::string::npos) << lengths;
  const std::string missing = error("    panda_joint1: {a: [0.1], b: [0.1]}\n");
  EXPECT_NE(missing.find("motion.series.panda_joint1.q0"), std::string::npos) << missing;
}

// The CLI: bad input is one line on stderr naming the field, exit 2, nothing written.
TEST(ExciteCommand, BadInputExitsTwoWritingNothing) {
  const fs::path config = scratch("bad_" + std::to_string(::getpid()) + ".yaml");
  std::ofstream(config) << "robot: panda\nduration: 0\n";
  const fs::path out = scratch("bad_out_" + std::to_string(::getpid()));
  const fs::path err = scratch("bad_err_" + std::to_string(::getpid()));
  EXPECT_EQ(test::runHeft("excite " + config.string() + " --out " + out.string() + " --quiet", err),
            2);
  const std::string message = readFile(err);
  EXPECT_EQ(std::count(message.begin(), message.end(), '\n'), 1) << message;
  EXPECT_NE(message.find(config.string() + ":2: duration"), std::string::npos) << message;
  EXPECT_FALSE(fs::exists(out));
}
