// Fleets of logs: `heft fuse` (heft/jobs/fuse_job.hpp) on identify runs' information.json, and
// `heft fleet` (python/fleet.py on a local Dask cluster) end to end on a small simulated fleet
// (studies/fleet/make_fleet.py): failed logs reported and skipped, a neighbour's log left out, a
// task killed mid-run, a rerun that skips what is done, bad manifests.
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <Eigen/Core>
#include <Eigen/Eigenvalues>
#include <nlohmann/json.hpp>

#include "heft/common/error.hpp"
#include "heft/common/statistics.hpp"
#include "heft/io/atomic_file.hpp"
#include "heft/io/log_io.hpp"
#include "heft/jobs/fuse_job.hpp"
#include "heft/jobs/identify_job.hpp"
#include "heft/model/model.hpp"
#include "support/heft_cli.hpp"
#include "support/scratch.hpp"

namespace heft::jobs {
namespace {

namespace fs = std::filesystem;

fs::path scratch(const std::string& name) { return test::scratchPath("fleet", name); }

nlohmann::json readJson(const fs::path& path) {
  return nlohmann::json::parse(io::readTextFile(path.string()));
}

std::string slurp(const fs::path& path) { return io::readTextFile(path.string()); }

void writeText(const fs::path& path, const std::string& text) { std::ofstream(path) << text; }

// The panda example's identify config on the 2 s fixture log, run into `dir`.
IdentifyJob::Result identifyExample(const fs::path& dir) {
  const IdentifyJob::Config config = IdentifyJob::load(
      std::string(HEFT_SOURCE_DIR) + "/data/examples/panda_friction_identify.yaml");
  IdentifyJob::Result result = IdentifyJob::run(config);
  IdentifyJob::write(result, dir.string());
  return result;
}

TEST(FuseJob, OneRunFusedIsThatRunsEstimate) {
  const fs::path dir = scratch("one_run");
  const IdentifyJob::Result single = identifyExample(dir / "run");
  ASSERT_TRUE(fs::exists(dir / "run" / "information.json"));
  writeText(dir / "fuse.yaml", "identify: " + std::string(HEFT_SOURCE_DIR) +
                                   "/data/examples/panda_friction_identify.yaml\nruns: [run]\n");
  const FuseJob::Result fused = FuseJob::run(FuseJob::load((dir / "fuse.yaml").string()));
  ASSERT_TRUE(fused.writable()) << fused.report();
  ASSERT_EQ(fused.fused.linear.size(), single.linear.size());
  // the same posterior (the log's rows in information form): both Levenberg-Marquardt runs stop
  // at a relative cost change of 1e-9 (map.function_tolerance), so parameters agree to about
  // sqrt(1e-9) of their posterior std; compared in units of that std
  const Eigen::VectorXd z =
      (fused.fused.linear - single.linear).cwiseQuotient(single.covariance.diagonal().cwiseSqrt());
  EXPECT_LT(z.lpNorm<Eigen::Infinity>(), 1e-2) << z.transpose();
  ASSERT_TRUE(fused.fused.information && single.information);
  EXPECT_EQ(fused.fused.information->rows, single.rows);
  EXPECT_EQ(fused.fused.information->samples, single.samples);
  EXPECT_EQ(single.information->samples, single.samples);
  FuseJob::write(fused, (dir / "out").string());
  const nlohmann::json j = readJson(dir / "out" / "result.json");
  EXPECT_EQ(j["method"], "fused-map");
  EXPECT_EQ(j["fusion"]["runs"].size(), 1u);
  // one run leaves no degree of freedom for a dispersion: nothing is scaled
  EXPECT_EQ(j["fusion"]["dispersion"]["degrees_of_freedom"], 0);
  EXPECT_EQ(j["fusion"]["dispersion"]["scale"], 1.0);
  EXPECT_TRUE(fs::exists(dir / "out" / "robot.urdf"));
  EXPECT_TRUE(fs::exists(dir / "out" / "information.json"));
}

// Logs made to scatter sqrt(k) times wider than their own covariances say: copies of one log's data
// (its offsets marginalized, rows R l = z) whose minima are moved by sqrt(k) R^+ eps, eps ~ N(0,
// I), own minimum costs kept. M such logs fused: the scatter sum_j |z_j - mean z|^2 is k times a
// chi-square with (M - 1) rank degrees of freedom, so the dispersion S^2 is k within a few
// sqrt(2 / dof).
struct ScatteredLogs {
  std::vector<identify::LogInformation> logs;
  int rank = 0;
};

ScatteredLogs scatteredLogs(const identify::DataInformation& marginal, double k, int count,
                            unsigned seed) {
  const identify::LinearSystem rows = identify::whitenedRows(marginal);
  std::mt19937 rng(seed);
  std::normal_distribution<double> normal(0.0, 1.0);
  ScatteredLogs out;
  out.rank = rows.rows();
  const double own_minimum = marginal.scalar - rows.y.squaredNorm();  // c - |z|^2
  for (int j = 0; j < count; ++j) {
    const Eigen::VectorXd z = rows.y + std::sqrt(k) * Eigen::VectorXd::NullaryExpr(
                                                          rows.rows(), [&] { return normal(rng); });
    identify::DataInformation log = marginal;
    log.vector = rows.Phi.transpose() * z;  // b = R' z, since D = R' R
    log.scalar = own_minimum + z.squaredNorm();
    out.logs.push_back({"log-" + std::to_string(j), log, 1.0});
  }
  return out;
}

TEST(Fusion, TheLogsDispersionDividesTheDataInformationInTheCovarianceAndKeepsTheEstimate) {
  // the panda example's job on its 2 s log with the tool link alone identified (with all seven
  // links the Gauss-Newton Hessian is so ill-conditioned that its inverse broke the bounds below
  // by up to 16 %: rounding, not the scale)
  std::string text = io::readTextFile(std::string(HEFT_SOURCE_DIR) +
                                      "/data/examples/panda_friction_identify.yaml");
  const std::string bodies =
      "bodies: [panda_link1, panda_link2, panda_link3, panda_link4, "
      "panda_link5, panda_link6, panda_link7]";
  ASSERT_NE(text.find(bodies), std::string::npos);
  text.replace(text.find(bodies), bodies.size(), "bodies: [panda_link7]");
  const IdentifyJob::Config job =
      IdentifyJob::parse(text, "tool-link.yaml", std::string(HEFT_SOURCE_DIR) + "/data/examples");
  const IdentifyJob::Result single = IdentifyJob::run(job);
  ASSERT_TRUE(single.information);
  model::LoadOptions load;
  load.base = job.base;
  const model::RobotModel robot =
      model::lockJoints(model::loadRobot(job.robot, load), job.locked_joints);
  const model::IdentifiedSet set = model::IdentifiedSet::build(robot, job.set);
  identify::MapOptions map = job.options.map;
  map.constraints = IdentifyJob::mapConstraints(robot, set, job);
  const identify::DataInformation marginal = identify::marginalizeTorqueOffsets(
      *single.information, job.options.problem.torque_offset_prior_std);
  identify::FusionOptions options;
  options.outlier_gate = 0;  // every log scatters alike: none is an outlier
  options.drift_gate = 0;
  identify::FusionOptions unscaled = options;
  unscaled.scale_by_dispersion = false;
  const int count = 6;

  for (const auto& [k, seed] : {std::pair{1.0, 11u}, std::pair{25.0, 12u}}) {
    const ScatteredLogs scattered = scatteredLogs(marginal, k, count, seed);
    const int dof = (count - 1) * scattered.rank;
    const identify::FusionResult fused =
        identify::fuse(scattered.logs, set, job.options.problem, map, options);
    ASSERT_TRUE(fused.fused.status == identify::Status::Converged ||
                fused.fused.status == identify::Status::MaxIterations)
        << fused.fused.message;
    EXPECT_EQ(fused.dispersion.degrees_of_freedom, dof);
    const double sigma = std::sqrt(2.0 / dof);
    EXPECT_GT(fused.dispersion.ratio / k, 1 - 5 * sigma) << "k " << k;
    EXPECT_LT(fused.dispersion.ratio / k, 1 + 5 * sigma) << "k " << k;
    EXPECT_DOUBLE_EQ(fused.dispersion.scale, std::max(1.0, fused.dispersion.ratio));

    // the scatter of the logs' information divided by the scale is the scale's share of it
    std::vector<identify::LogInformation> divided = scattered.logs;
    for (identify::LogInformation& log : divided) {
      log.information.matrix /= fused.dispersion.scale;
      log.information.vector /= fused.dispersion.scale;
      log.information.scalar /= fused.dispersion.scale;
    }
    EXPECT_NEAR(identify::fuse(divided, set, job.options.problem, map, unscaled).dispersion.ratio,
                fused.dispersion.ratio / fused.dispersion.scale, 1e-9 * fused.dispersion.ratio);

    // without scaling: the same dispersion, the same estimate (the scale enters the covariance
    // only), the data's covariance as it is
    const identify::FusionResult plain =
        identify::fuse(scattered.logs, set, job.options.problem, map, unscaled);
    EXPECT_EQ(plain.dispersion.scale, 1.0);
    EXPECT_DOUBLE_EQ(plain.dispersion.ratio, fused.dispersion.ratio);
    EXPECT_LE((fused.fused.estimate - plain.fused.estimate).lpNorm<Eigen::Infinity>(),
              1e-12 * plain.fused.estimate.lpNorm<Eigen::Infinity>());
    // at one estimate the precisions are H_s = P + D / s and H = P + D (P the prior's Gauss-Newton
    // information, D the data's), so (P + D)^-1 <= H_s^-1 <= s (P + D)^-1 along every direction:
    // the whitened data directions of one log and random ones (to rounding in the inverses)
    const identify::LinearSystem rows = identify::whitenedRows(marginal);
    std::mt19937 rng(seed);
    std::normal_distribution<double> normal(0.0, 1.0);
    Eigen::MatrixXd directions(rows.Phi.cols(), rows.rows() + 20);
    directions << rows.Phi.transpose(),
        Eigen::MatrixXd::NullaryExpr(rows.Phi.cols(), 20, [&] { return normal(rng); });
    const double scale = fused.dispersion.scale;
    for (Eigen::Index c = 0; c < directions.cols(); ++c) {
      const Eigen::VectorXd u = directions.col(c);
      const double with = u.dot(fused.fused.covariance * u),
                   without = u.dot(plain.fused.covariance * u);
      EXPECT_GE(with, without * (1 - 1e-6)) << "k " << k << ", direction " << c;
      EXPECT_LE(with, scale * without * (1 + 1e-6)) << "k " << k << ", direction " << c;
    }
  }
}

TEST(FuseCommand, RunsWithoutInformationOrOfAnotherSetExitTwoNamingThem) {
  const fs::path dir = scratch("bad_runs");
  identifyExample(dir / "run");
  fs::create_directories(dir / "empty");
  const std::string example =
      std::string(HEFT_SOURCE_DIR) + "/data/examples/panda_friction_identify.yaml";
  writeText(dir / "missing.yaml", "identify: " + example + "\nruns: [run, empty]\n");
  EXPECT_EQ(
      test::runHeft("fuse " + (dir / "missing.yaml").string() + " --out " + (dir / "o1").string(),
                    dir / "err1.txt"),
      2);
  EXPECT_NE(slurp(dir / "err1.txt").find("empty: no information.json"), std::string::npos)
      << slurp(dir / "err1.txt");
  writeText(dir / "gate.yaml", "identify: " + example + "\nruns: [run]\ndrift: {gate: -1}\n");
  EXPECT_EQ(
      test::runHeft("fuse " + (dir / "gate.yaml").string() + " --out " + (dir / "o3").string(),
                    dir / "err3.txt"),
      2);
  EXPECT_NE(slurp(dir / "err3.txt").find("drift.gate"), std::string::npos)
      << slurp(dir / "err3.txt");
  // the same runs against a config that identifies other bodies
  std::string other = slurp(example);
  const std::string from = "bodies: [panda_link1, ";
  ASSERT_NE(other.find(from), std::string::npos);
  other.replace(other.find(from), from.size(), "bodies: [");
  writeText(dir / "other.yaml", other);
  fs::copy_file(std::string(HEFT_SOURCE_DIR) + "/data/fixtures/sim_panda_friction_2s.h5",
                dir / "log.h5", fs::copy_options::overwrite_existing);
  writeText(dir / "set.yaml", "identify: other.yaml\nruns: [run]\n");
  std::string yaml = slurp(dir / "other.yaml");
  yaml.replace(yaml.find("../fixtures/sim_panda_friction_2s.h5"),
               std::string("../fixtures/sim_panda_friction_2s.h5").size(), "log.h5");
  writeText(dir / "other.yaml", yaml);
  EXPECT_EQ(test::runHeft("fuse " + (dir / "set.yaml").string() + " --out " + (dir / "o2").string(),
                          dir / "err2.txt"),
            2);
  EXPECT_NE(slurp(dir / "err2.txt").find("identified bodies differ"), std::string::npos)
      << slurp(dir / "err2.txt");
  EXPECT_FALSE(fs::exists(dir / "o2" / "result.json"));
}

// ---- heft fleet
// -----------------------------------------------------------------------------------

std::string toolsPython() { return std::string(HEFT_SOURCE_DIR) + "/.deps/venv-tools/bin/python"; }

// 2 arms x 4 logs of 8 s, plus per arm a broken log and a neighbour's; arm0 a double pendulum's.
fs::path smallFleet() {
  const fs::path dir = scratch("fleet_" + std::to_string(getpid()));
  const std::string heft = std::string(HEFT_BINARY_DIR) + "/bin/heft";
  const std::string cmd = toolsPython() + " " + HEFT_SOURCE_DIR +
                          "/studies/fleet/make_fleet.py --heft " + heft + " --out " + dir.string() +
                          " --robots 2 --logs 4 --duration 8 > " + (dir.string() + ".make.txt") +
                          " 2>&1";
  fs::create_directories(dir);
  EXPECT_EQ(std::system(cmd.c_str()), 0) << slurp(dir.string() + ".make.txt");
  return dir;
}

// pi - pi_true of the fleet's tool link (panda_link7, the truth group's panda_joint7) in
// `result`, against the truth of `log`.
Eigen::Matrix<double, 10, 1> errorToTruth(const nlohmann::json& result, const std::string& log) {
  const io::Log truth_log = io::readLog(log);
  const io::TruthSeries& truth = truth_log.truth.value();
  const auto body = std::find(truth.body_names.begin(), truth.body_names.end(), "panda_joint7");
  if (body == truth.body_names.end())
    throw std::runtime_error(log + ": the truth group has no body panda_joint7");
  const Eigen::Index row = body - truth.body_names.begin();
  Eigen::Matrix<double, 10, 1> error;
  for (int k = 0; k < 10; ++k)
    error(k) = result["parameters"]["panda_link7"]["pi"][k].get<double>() - truth.body_pi(row, k);
  return error;
}

// |(pi - pi_true) / prior std| of the tool link: the whole body's error in prior stds.
double distanceToTruth(const nlohmann::json& result, const Eigen::Matrix<double, 10, 1>& error) {
  double squared = 0;
  for (int k = 0; k < 10; ++k)
    squared +=
        std::pow(error(k) / result["parameters"]["panda_link7"]["prior_std"][k].get<double>(), 2);
  return std::sqrt(squared);
}

// (pi - pi_true)' Cov^+ (pi - pi_true) of the fleet's tool link: the normalized estimation error
// squared, a chi-square with 10 degrees of freedom when the covariance is right.
double neesToTruth(const nlohmann::json& result, const Eigen::Matrix<double, 10, 1>& error) {
  const std::vector<std::string> names = result["covariance"]["names"];
  std::vector<Eigen::Index> index;
  for (const char* k : {"m", "hx", "hy", "hz", "Ixx", "Ixy", "Iyy", "Ixz", "Iyz", "Izz"}) {
    const auto at = std::find(names.begin(), names.end(), std::string(k) + "[panda_link7]");
    if (at == names.end()) throw std::runtime_error(std::string("no covariance of ") + k);
    index.push_back(at - names.begin());
  }
  Eigen::Matrix<double, 10, 10> covariance;
  for (int i = 0; i < 10; ++i)
    for (int j = 0; j < 10; ++j)
      covariance(i, j) = result["covariance"]["matrix"][index[i]][index[j]].get<double>();
  // pseudo-inverse, as studies/fleet's: the directions with no variance carry no error measure
  const Eigen::SelfAdjointEigenSolver<Eigen::Matrix<double, 10, 10>> eig(covariance);
  const Eigen::Matrix<double, 10, 1> projected = eig.eigenvectors().transpose() * error;
  double nees = 0;
  for (int i = 0; i < 10; ++i)
    if (eig.eigenvalues()(i) > 1e-12 * eig.eigenvalues().maxCoeff())
      nees += projected(i) * projected(i) / eig.eigenvalues()(i);
  return nees;
}

std::map<std::string, nlohmann::json> logsByName(const nlohmann::json& robot) {
  std::map<std::string, nlohmann::json> out;
  for (const nlohmann::json& l : robot["logs"])
    out[fs::path(l["log"].get<std::string>()).filename().string()] = l;
  return out;
}

nlohmann::json withoutTimes(nlohmann::json j) {
  if (j.is_object()) {
    j.erase("time_s");
    for (auto& [key, value] : j.items()) value = withoutTimes(value);
  } else if (j.is_array()) {
    for (auto& value : j) value = withoutTimes(value);
  }
  return j;
}

TEST(FleetCommand, FailedLogsAreReportedOutliersLeftOutAndAKilledTaskChangesNothing) {
  const fs::path fleet = smallFleet();
  // the same recording twice under one robot: its information must not count twice
  fs::copy_file(fleet / "logs" / "arm0" / "00.h5", fleet / "logs" / "arm0" / "93-copy.h5");
  const std::string manifest = (fleet / "manifest.yaml").string();
  const fs::path out = fleet / "out";
  ASSERT_EQ(test::runHeft("fleet " + manifest + " --out " + out.string() + " --workers 2",
                          fleet / "err.txt"),
            0)
      << slurp(fleet / "err.txt");
  const nlohmann::json result = readJson(out / "fleet.json");
  ASSERT_EQ(result["robots"].size(), 2u);
  for (const nlohmann::json& robot : result["robots"]) {
    const std::string id = robot["id"];
    auto logs = logsByName(robot);
    EXPECT_EQ(logs["90-broken.h5"]["status"], "bad input") << id;
    EXPECT_NE(logs["90-broken.h5"]["message"].get<std::string>().find("90-broken.h5"),
              std::string::npos);
    EXPECT_EQ(logs["91-neighbour.h5"]["status"], "identified") << id;
    EXPECT_FALSE(logs["91-neighbour.h5"]["used_in_fusion"].get<bool>()) << id;
    for (const char* name : {"00.h5", "01.h5", "02.h5", "03.h5"}) {
      EXPECT_EQ(logs[name]["status"], "identified") << id << " " << name;
      EXPECT_TRUE(logs[name]["used_in_fusion"].get<bool>()) << id << " " << name;
    }
    if (id == "arm0") {
      EXPECT_EQ(logs["92-other-model.h5"]["status"], "bad input");
      EXPECT_EQ(logs["93-copy.h5"]["status"], "duplicate");
      EXPECT_NE(logs["93-copy.h5"]["message"].get<std::string>().find("the same bytes as 00.h5"),
                std::string::npos);
    }
    ASSERT_EQ(robot["fusion"]["status"], "fused") << robot["fusion"].dump();
    EXPECT_EQ(robot["fusion"]["drift"]["detected"], "none") << id;
    // the fused tool link is closer to truth than the typical single log: below the median
    // single log's distance (with four logs, the best single one may beat the fusion by chance;
    // studies/fleet checks "closer than the best single log" on fleets of 10 and 20 logs)
    const nlohmann::json fused = readJson(out / robot["fusion"]["result"].get<std::string>());
    const Eigen::Matrix<double, 10, 1> fused_error = errorToTruth(fused, logs["00.h5"]["log"]);
    std::vector<double> single;
    for (const char* name : {"00.h5", "01.h5", "02.h5", "03.h5"}) {
      const nlohmann::json run =
          readJson(fs::path(logs[name]["run"].get<std::string>()) / "result.json");
      single.push_back(distanceToTruth(run, errorToTruth(run, logs[name]["log"])));
    }
    EXPECT_LT(distanceToTruth(fused, fused_error), median(single)) << id;
    // and its covariance (scaled by the logs' dispersion) consistent with its error: the NEES
    // below chi-square(10)'s 0.999 quantile, which a right covariance exceeds once in 1000
    EXPECT_LT(neesToTruth(fused, fused_error), 29.59) << id;
  }
  EXPECT_TRUE(fs::exists(out / "fleet.html"));

  // heft fuse over some of the fleet's runs, given as (robot, log) in order
  const auto fuseRuns = [&](const std::string& name,
                            const std::vector<std::pair<std::string, std::string>>& runs) {
    std::string list;
    for (const auto& [id, log] : runs)
      for (const nlohmann::json& robot : result["robots"])
        if (robot["id"] == id)
          list += (list.empty() ? "" : ", ") + logsByName(robot)[log]["run"].get<std::string>();
    writeText(fleet / name,
              "identify: " + (fleet / "identify.yaml").string() + "\nruns: [" + list + "]\n");
    return FuseJob::run(FuseJob::load((fleet / name).string()));
  };
  // a tool changed between two logs: arm0's logs, then arm1's (another tool) filed as one robot
  const FuseJob::Result changed = fuseRuns("changed.yaml", {{"arm0", "00.h5"},
                                                            {"arm0", "01.h5"},
                                                            {"arm0", "02.h5"},
                                                            {"arm1", "00.h5"},
                                                            {"arm1", "01.h5"},
                                                            {"arm1", "02.h5"}});
  EXPECT_EQ(changed.drift.detected, identify::DriftScan::Sign::Split) << changed.report();
  EXPECT_EQ(changed.drift.last_before, 2);
  EXPECT_EQ(changed.drift.first_after, 3);
  EXPECT_TRUE(std::any_of(changed.fused.warnings.begin(), changed.fused.warnings.end(),
                          [](const std::string& w) { return w.find("the robot changed") == 0; }));
  // four logs, then two after the change: the gate leaves the two out as a minority, and the scan
  // tells that they agree with each other (the robot as it is now), not strays
  const FuseJob::Result tail = fuseRuns("tail.yaml", {{"arm0", "00.h5"},
                                                      {"arm0", "01.h5"},
                                                      {"arm0", "02.h5"},
                                                      {"arm0", "03.h5"},
                                                      {"arm1", "00.h5"},
                                                      {"arm1", "01.h5"}});
  EXPECT_FALSE(tail.runs[4].used || tail.runs[5].used) << tail.report();
  EXPECT_EQ(tail.drift.detected, identify::DriftScan::Sign::LeftOutTail) << tail.report();
  EXPECT_EQ(tail.drift.first_after, 4);
  // and two logs before a change to the four: this estimate is the robot as it is now
  const FuseJob::Result head = fuseRuns("head.yaml", {{"arm1", "00.h5"},
                                                      {"arm1", "01.h5"},
                                                      {"arm0", "00.h5"},
                                                      {"arm0", "01.h5"},
                                                      {"arm0", "02.h5"},
                                                      {"arm0", "03.h5"}});
  EXPECT_EQ(head.drift.detected, identify::DriftScan::Sign::LeftOutHead) << head.report();
  EXPECT_EQ(head.drift.last_before, 1);
  EXPECT_EQ(head.drift.first_after, 2);

  // a rerun runs nothing and writes the same fleet.json
  const std::string first = slurp(out / "fleet.json");
  ASSERT_EQ(test::runHeft("fleet " + manifest + " --out " + out.string(), fleet / "err2.txt"), 0);
  EXPECT_EQ(readJson(out / "timing.json")["tasks_run"], 0);
  EXPECT_EQ(slurp(out / "fleet.json"), first);

  // a task's heft process killed in the middle of its run: it runs again, the fusion is the same
  // (a worker process killed on a cluster of them: tests/fleet_cluster_test.py)
  const fs::path killed = fleet / "killed";
  const std::string env = "HEFT_FLEET_FAULT=kill-task:01.h5 ";
  const int code = std::system((env + HEFT_BINARY_DIR + "/bin/heft fleet " + manifest + " --out " +
                                killed.string() + " --workers 2 --no-report > " +
                                (fleet / "killed.txt").string() + " 2>&1")
                                   .c_str());
  ASSERT_TRUE(WIFEXITED(code) && WEXITSTATUS(code) == 0) << slurp(fleet / "killed.txt");
  const nlohmann::json again = readJson(killed / "fleet.json");
  int most_attempts = 0;
  for (const nlohmann::json& robot : again["robots"])
    for (const nlohmann::json& l : robot["logs"])
      most_attempts = std::max(most_attempts, l["attempts"].get<int>());
  EXPECT_GE(most_attempts, 2);
  for (const char* id : {"arm0", "arm1"}) {
    const nlohmann::json a = readJson(out / "robots" / id / "result.json");
    const nlohmann::json b = readJson(killed / "robots" / id / "result.json");
    EXPECT_EQ(withoutTimes(a["parameters"]), withoutTimes(b["parameters"])) << id;
    EXPECT_EQ(a["friction"], b["friction"]) << id;
  }
}

TEST(FleetCommand, ATaskOverItsTimeLimitIsStoppedAndReported) {
  const fs::path dir = scratch("timeout");
  fs::create_directories(dir);
  writeText(dir / "manifest.yaml",
            "job: " + std::string(HEFT_SOURCE_DIR) +
                "/data/examples/panda_friction_identify.yaml\ntask_timeout_s: 0.001\nrobots: "
                "[{id: arm, logs: [" +
                HEFT_SOURCE_DIR + "/data/fixtures/sim_panda_friction_2s.h5]}]\n");
  // no log identified, so no fused estimate: exit 1, and the log's status says why
  EXPECT_EQ(test::runHeft("fleet " + (dir / "manifest.yaml").string() + " --out " +
                              (dir / "out").string() + " --workers 1 --no-report",
                          dir / "err.txt"),
            1)
      << slurp(dir / "err.txt");
  const nlohmann::json fleet = readJson(dir / "out" / "fleet.json");
  EXPECT_EQ(fleet["robots"][0]["logs"][0]["status"], "timed out");
  EXPECT_EQ(fleet["robots"][0]["fusion"]["status"], "not fused");
}

TEST(FleetCommand, ASchedulerAddressDaskCannotParseExitsTwoBeforeAnyTask) {
  const fs::path dir = scratch("scheduler");
  fs::create_directories(dir);
  writeText(dir / "manifest.yaml", "job: " + std::string(HEFT_SOURCE_DIR) +
                                       "/data/examples/panda_friction_identify.yaml\nrobots: "
                                       "[{id: arm, logs: [" +
                                       HEFT_SOURCE_DIR +
                                       "/data/fixtures/sim_panda_friction_2s.h5]}]\n");
  EXPECT_EQ(test::runHeft("fleet " + (dir / "manifest.yaml").string() + " --out " +
                              (dir / "out").string() + " --scheduler no-port-here",
                          dir / "err.txt"),
            2);
  const std::string err = slurp(dir / "err.txt");
  EXPECT_NE(err.find("--scheduler: missing port number in address 'no-port-here'"),
            std::string::npos)
      << err;
  EXPECT_FALSE(fs::exists(dir / "out" / "runs"));
  EXPECT_FALSE(fs::exists(dir / "out" / "fleet.json"));
}

TEST(FleetCommand, BadManifestsExitTwoNamingTheKey) {
  const fs::path dir = scratch("manifests");
  fs::create_directories(dir);
  writeText(dir / "job.yaml", "robot: panda\nlog: x.h5\n");
  writeText(dir / "typo.yaml", "robot: panda\nlog: x.h5\nmethd: map\n");
  const std::map<std::string, std::string> cases = {
      {"robots: [{id: a, logs: [x.h5]}]\n", "job"},
      {"job: job.yaml\nrobots: [{id: a, logs: [x.h5]}]\nworker: 2\n", "unknown key 'worker'"},
      {"job: job.yaml\nrobots: [{id: a, logs: [x.h5]}, {id: a, logs: [y.h5]}]\n",
       "robots[1].id: 'a' is used twice"},
      {"job: job.yaml\nrobots: [{id: a, logs: nowhere}]\n", "robots[0].logs"},
      {"job: job.yaml\nrobots: [{id: a, logs: [x.h5]}\n", "not valid YAML"},
      {"job: job.yaml\ntask_timeout_s: 0\nrobots: [{id: a, logs: [x.h5]}]\n",
       "task_timeout_s: expected a number of seconds > 0"},
      {"job: job.yaml\nrobots: [{id: a, logs: [x.h5], job: typo.yaml}]\n", "typo.yaml:3"},
      {"job: job.yaml\nworkers: 1\nrobots: [{id: a, logs: [x.h5]}]\nworkers: 2\n",
       ":4: 'workers' is given twice in the same mapping"},
      {"job: job.yaml\nfuse: {scale_by_dispersion: 2}\nrobots: [{id: a, logs: [x.h5]}]\n",
       "fuse.scale_by_dispersion: expected true or false"},
  };
  int k = 0;
  for (const auto& [text, expected] : cases) {
    const fs::path manifest = dir / ("m" + std::to_string(k++) + ".yaml");
    writeText(manifest, text);
    EXPECT_EQ(test::runHeft("fleet " + manifest.string() + " --out " + (dir / "out").string(),
                            dir / "err.txt"),
              2)
        << text;
    const std::string err = slurp(dir / "err.txt");
    EXPECT_NE(err.find(manifest.filename().string()), std::string::npos) << err;
    EXPECT_NE(err.find(expected), std::string::npos) << err;
  }
  EXPECT_FALSE(fs::exists(dir / "out" / "fleet.json"));
}

}  // namespace
}  // namespace heft::jobs
