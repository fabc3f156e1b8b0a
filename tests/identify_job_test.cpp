// The `heft identify` job (heft/jobs/identify_job.hpp): config parsing and its errors, a whole job
// on a MuJoCo log (heft::sim) through result.json and the written URDF, and the output rules (no
// overwrite, no URDF from a failed or inconsistent estimate).
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "heft/common/error.hpp"
#include "heft/inertia/inertia.hpp"
#include "heft/io/log_io.hpp"
#include "heft/io/urdf_writer.hpp"
#include "heft/jobs/identify_job.hpp"
#include "heft/model/model.hpp"
#include "heft/sim/scenario.hpp"
#include "support/scratch.hpp"

namespace heft::identify {
namespace {

using jobs::IdentifyJob;

namespace fs = std::filesystem;

fs::path scratch(const std::string& name) { return test::scratchPath("identify_job", name); }

std::string errorOf(const std::string& yaml) {
  try {
    IdentifyJob::parse(yaml, "job.yaml", ".");
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

TEST(IdentifyJobConfig, ErrorsNameFileLineAndField) {
  const std::string base = "robot: panda\nlog: x.h5\n";
  EXPECT_EQ(errorOf("log: x.h5\n").rfind("job.yaml:", 0), 0u);
  EXPECT_NE(errorOf("log: x.h5\n").find("robot"), std::string::npos);

  const std::string typo = errorOf(base + "methd: map\n");
  EXPECT_NE(typo.find("job.yaml:3: methd: unknown key"), std::string::npos) << typo;

  const std::string method = errorOf(base + "method: newton\n");
  EXPECT_EQ(method.rfind("job.yaml:3: method: ", 0), 0u) << method;
  EXPECT_NE(method.find("expected ls, wls, energy or map"), std::string::npos) << method;

  const std::string window = errorOf(base + "preparation:\n  window: wide\n");
  EXPECT_NE(window.find("job.yaml:4: preparation.window: expected an integer, got 'wide'"),
            std::string::npos)
      << window;

  const std::string nested = errorOf(base + "map:\n  total_mass: -3\n");
  EXPECT_NE(nested.find("job.yaml:4: map.total_mass: expected a finite value > 0"),
            std::string::npos)
      << nested;

  // Out-of-range values name the YAML key and its line, not the C++ option.
  const std::string prior =
      errorOf(base + "prior:\n  length_scale: 0.1\n  mass_relative_std: -1\n");
  EXPECT_NE(prior.find("job.yaml:5: prior.mass_relative_std: expected a finite value > 0"),
            std::string::npos)
      << prior;
  const std::string rank = errorOf(base + "least_squares:\n  rank_tolerance: 2\n");
  EXPECT_NE(rank.find("job.yaml:4: least_squares.rank_tolerance: expected a value in (0, 1)"),
            std::string::npos)
      << rank;

  const std::string wrong_method = errorOf(base + "method: ls\nmap:\n  total_mass: 18\n");
  EXPECT_NE(wrong_method.find("need method map"), std::string::npos) << wrong_method;

  const std::string yaml = errorOf("robot: [unclosed\n");
  EXPECT_NE(yaml.find("not valid YAML"), std::string::npos) << yaml;
}

TEST(IdentifyJobConfig, BundledExamplesParse) {
  int found = 0;
  for (const auto& entry :
       fs::directory_iterator(fs::path(HEFT_SOURCE_DIR) / "data" / "examples")) {
    const std::string name = entry.path().filename().string();
    const std::string suffix = "_identify.yaml";  // the filter's examples end in _filter.yaml
    if (name.size() < suffix.size() || name.substr(name.size() - suffix.size()) != suffix) continue;
    const IdentifyJob::Config config = IdentifyJob::load(entry.path().string());
    EXPECT_FALSE(config.robot.empty()) << entry.path();
    // relative log paths resolve against the config's folder
    EXPECT_TRUE(fs::path(config.log).is_absolute() ||
                config.log.find("examples/..") != std::string::npos ||
                config.log.find("fixtures") != std::string::npos)
        << config.log;
    ++found;
  }
  EXPECT_GE(found, 1);
}

// A short panda-friction log, made once.
const std::string& pandaLog() {
  static const std::string path = [] {
    // ctest runs each test in its own process, in parallel: one file per process
    const fs::path p = scratch("panda_friction_3s_" + std::to_string(::getpid()) + ".h5");
    sim::SimulationOptions o;
    o.duration = 3;
    o.noise = "nominal";
    o.seed = 3;
    const sim::SimulationResult r = sim::simulate(sim::findScenario("panda-friction"), o);
    EXPECT_TRUE(r.summary.ok()) << r.summary.report();
    io::writeLog(r.log, p.string());
    return p.string();
  }();
  return path;
}

IdentifyJob::Config pandaConfig(const std::string& method) {
  std::ostringstream y;
  y << "robot: panda\nlog: " << pandaLog() << "\nmethod: " << method << "\n"
    << "identify:\n  bodies: [panda_link5, panda_link6, panda_link7]\n"
    << "  friction: [panda_joint5, panda_joint6, panda_joint7]\n"
    << "preparation:\n  decimation: 5\nproblem:\n  min_speed: 0.05\n";
  return IdentifyJob::parse(y.str(), "panda.yaml", ".");
}

TEST(Job, PandaMapWritesResultJsonAndAConsistentUrdfThatReloads) {
  const IdentifyJob::Config config = pandaConfig("map");
  const IdentifyJob::Result result = IdentifyJob::run(config);
  ASSERT_TRUE(result.writable()) << result.report();
  ASSERT_EQ(result.bodies.size(), 3u);
  EXPECT_GT(result.rank, 0);
  EXPECT_LE(result.rank, result.dimension);
  EXPECT_TRUE(result.truth.has_value()) << "the simulated log has a truth group";
  for (Eigen::Index c = 0; c < result.rms_after.size(); ++c)
    EXPECT_TRUE(std::isfinite(result.rms_after[c]));

  const fs::path out = scratch("panda_map");
  const auto written = IdentifyJob::write(result, out.string(), {false});
  ASSERT_EQ(written.size(), 2u);
  std::ifstream in(out / "result.json");
  const nlohmann::json j = nlohmann::json::parse(in);
  for (const char* key : {"method", "parameters", "friction", "covariance", "residuals", "summary",
                          "truth_errors", "identifiability", "urdf", "data_quality"})
    EXPECT_TRUE(j.contains(key)) << key;
  EXPECT_EQ(j["method"], "map");
  // a simulated log is clean by construction: no data-quality warning
  ASSERT_TRUE(result.data_quality.has_value());
  EXPECT_TRUE(result.data_quality->ok()) << result.data_quality->report();
  EXPECT_TRUE(j["data_quality"]["ok"].get<bool>());
  EXPECT_EQ(j["summary"]["status"], toString(result.status));
  EXPECT_TRUE(j["parameters"].contains("panda_link7"));
  EXPECT_TRUE(j["parameters"]["panda_link7"]["std"].contains("mass"));
  EXPECT_EQ(j["covariance"]["matrix"].size(), result.names.size());

  // The written URDF passes the full consistency check and, loaded again, its bodies are the
  // estimates (the writer re-expressed lumped body parameters per link).
  const model::RobotModel written_robot =
      model::loadRobot((out / "robot.urdf").string(), {model::BaseType::Fixed});
  for (const results::BodyEstimate& b : result.bodies) {
    const Vector10 pi = written_robot.pi(b.name);
    EXPECT_TRUE(inertia::checkConsistency(pi, 0.0).consistent) << b.name;
    EXPECT_LT((pi - b.pi).cwiseAbs().maxCoeff(), 1e-9 * std::max(1.0, b.pi.cwiseAbs().maxCoeff()))
        << b.name << "\nwritten " << pi.transpose() << "\nestimate " << b.pi.transpose();
  }

  // A second run into the same folder is refused unless --overwrite; the input stays untouched.
  EXPECT_THROW(IdentifyJob::write(result, out.string(), {false}), InputError);
  EXPECT_NO_THROW(IdentifyJob::write(result, out.string(), {true}));
}

// A computed estimate is never lost. The bundled panda example's MAP estimate of panda_link7 sits
// on the consistency boundary; the URDF writer then refused the hand link it re-expresses
// (triangle-inequality margin -2.6e-18 kg m^2) with an InputError, so the job ended as bad input
// (exit 2) without result.json. Now result.json is written first, says why the URDF was refused,
// and the job fails as a computation (SolveError, exit 1).
TEST(Job, BundledPandaExampleWritesResultJsonWhateverTheUrdfWriterDoes) {
  const IdentifyJob::Config config = IdentifyJob::load(
      std::string(HEFT_SOURCE_DIR) + "/data/examples/panda_friction_identify.yaml");
  const IdentifyJob::Result result = IdentifyJob::run(config);
  ASSERT_TRUE(result.writable()) << result.report();
  const fs::path out = scratch("panda_example");
  bool refused = false;
  try {
    IdentifyJob::write(result, out.string(), {false});
  } catch (const SolveError& e) {
    refused = true;
    EXPECT_NE(std::string(e.what()).find("result.json"), std::string::npos) << e.what();
  }
  ASSERT_TRUE(fs::exists(out / "result.json"));
  std::ifstream in(out / "result.json");
  const nlohmann::json j = nlohmann::json::parse(in);
  EXPECT_TRUE(j["parameters"].contains("panda_link7"));
  const std::string status = j["urdf"]["status"];
  if (refused) {
    EXPECT_EQ(status.rfind("refused: ", 0), 0u) << status;
    EXPECT_FALSE(fs::exists(out / "robot.urdf"));
  } else {
    EXPECT_EQ(status, "written");
    EXPECT_TRUE(fs::exists(out / "robot.urdf"));
  }
}

TEST(Job, FailedOrInconsistentEstimateWritesNoUrdf) {
  const IdentifyJob::Config config = pandaConfig("ls");
  IdentifyJob::Result result = IdentifyJob::run(config);
  result.status = Status::Failed;
  result.message = "forced for the test";
  const fs::path out = scratch("failed");
  const auto written = IdentifyJob::write(result, out.string(), {false});
  EXPECT_FALSE(fs::exists(out / "robot.urdf"));
  ASSERT_TRUE(fs::exists(out / "result.json"));
  std::ifstream in(out / "result.json");
  const nlohmann::json j = nlohmann::json::parse(in);
  EXPECT_EQ(j["summary"]["status"], "failed");
  EXPECT_NE(j["urdf"]["status"].get<std::string>().find("not written"), std::string::npos);

  IdentifyJob::Result inconsistent = IdentifyJob::run(config);
  inconsistent.status = Status::Converged;
  inconsistent.bodies[0].consistent = false;
  EXPECT_FALSE(inconsistent.writable());
}

TEST(Job, LogOfAnotherRobotIsRefusedNamingTheJoints) {
  std::ostringstream y;
  y << "robot: go2\nbase: fixed\nlog: " << pandaLog() << "\nmethod: ls\n";
  const IdentifyJob::Config config = IdentifyJob::parse(y.str(), "go2.yaml", ".");
  try {
    IdentifyJob::run(config);
    FAIL() << "expected an InputError";
  } catch (const InputError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("panda_joint1"), std::string::npos) << what;
  }
}

}  // namespace
}  // namespace heft::identify
