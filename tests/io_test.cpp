// heft::io: log formats (round trips, corrupted inputs), validation messages, resampling,
// Savitzky-Golay filtering, and the URDF inertial writer.
#include <gtest/gtest.h>
#include <unistd.h>

#include <Eigen/Geometry>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <thread>

#include <pinocchio/algorithm/rnea.hpp>
#include <pinocchio/parsers/urdf.hpp>

#include "heft/common/error.hpp"
#include "heft/inertia/inertia.hpp"
#include "heft/io/atomic_file.hpp"
#include "heft/io/log_io.hpp"
#include "heft/io/signal.hpp"
#include "heft/io/summary.hpp"
#include "heft/io/urdf_writer.hpp"
#include "heft/io/validation.hpp"

namespace fs = std::filesystem;
using namespace heft;
using namespace heft::io;

namespace {

const std::string kRobots = HEFT_ROBOTS_DIR_FOR_TESTS;
const std::string kGo2 = kRobots + "/go2_description/urdf/go2.urdf";
const std::string kPendulum = kRobots + "/double_pendulum_description/urdf/double_pendulum.urdf";
const std::string kFixtures = std::string(HEFT_SOURCE_DIR) + "/data/fixtures";

pinocchio::Model loadUrdf(const std::string& path, bool floating) {
  pinocchio::Model model;
  if (floating) {
    pinocchio::urdf::buildModel(path, pinocchio::JointModelFreeFlyer(), model);
  } else {
    pinocchio::urdf::buildModel(path, model);
  }
  return model;
}

/// A fresh directory per test, removed afterwards.
class IoTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = fs::temp_directory_path() / ("heft_io_test_" + std::to_string(::getpid()) + "_" +
                                        info->test_suite_name() + "_" + info->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }
  fs::path dir_;
};

Eigen::MatrixXd quaternionsAboutZ(const Eigen::VectorXd& angle) {
  Eigen::MatrixXd q(angle.size(), 4);
  for (Eigen::Index i = 0; i < angle.size(); ++i) {
    q.row(i) << 0.1 * std::sin(angle(i)), 0, std::sin(angle(i) / 2), std::cos(angle(i) / 2);
    q.row(i).normalize();
  }
  return q;
}

Eigen::VectorXd timeVector(Eigen::Index n, double start, double period) {
  Eigen::VectorXd t(n);
  for (Eigen::Index k = 0; k < n; ++k) t(k) = start + static_cast<double>(k) * period;
  return t;
}

/// A small log with every group filled; the base groups only for a free-flyer.
Log makeLog(const std::vector<std::string>& names, bool floating, Eigen::Index n = 40) {
  Log log;
  log.meta.robot = floating ? "test-floater" : "test-arm";
  log.meta.base_type = floating ? BaseType::FreeFlyer : BaseType::Fixed;
  log.meta.noise_profile = "none";
  log.meta.scenario = "unit test, \"quoted\"";
  log.meta.seed = -7;
  const auto nj = static_cast<Eigen::Index>(names.size());
  JointSeries& j = log.joints;
  j.time = timeVector(n, 0.5, 0.01);
  j.names = names;
  j.q.resize(n, nj);
  j.v.resize(n, nj);
  j.tau.resize(n, nj);
  for (Eigen::Index k = 0; k < n; ++k) {
    for (Eigen::Index i = 0; i < nj; ++i) {
      const double w = 2 * M_PI * (i + 1), t = j.time(k);
      j.q(k, i) = 0.3 * std::sin(w * t) + 0.1 * i;
      j.v(k, i) = 0.3 * w * std::cos(w * t);
      j.tau(k, i) = -0.3 * w * w * std::sin(w * t) + 1e-7 * k;
    }
  }
  j.tau_cmd = j.tau * 1.01;
  if (floating) {
    j.base_pose.resize(n, 7);
    j.base_pose.leftCols(3) = Eigen::MatrixXd::Random(n, 3);
    j.base_pose.rightCols(4) = quaternionsAboutZ(j.time);
    j.base_twist = Eigen::MatrixXd::Random(n, 6);
  }
  ImuSeries imu;
  imu.frame = "imu_link";
  imu.time = timeVector(2 * n, 0.5025, 0.005);
  imu.gyro = Eigen::MatrixXd::Random(2 * n, 3);
  imu.accel = Eigen::MatrixXd::Random(2 * n, 3) * 10;
  imu.orientation = quaternionsAboutZ(imu.time * 3);
  log.imu = imu;
  // mocap at 50 Hz with a dropout: rows 8..11 are missing
  MocapSeries mocap;
  mocap.frame = "base";
  std::vector<double> mocap_time;
  for (int k = 0; k < n / 2; ++k) {
    if (k < 8 || k > 11) mocap_time.push_back(0.5 + 0.02 * k);
  }
  mocap.time =
      Eigen::Map<Eigen::VectorXd>(mocap_time.data(), static_cast<Eigen::Index>(mocap_time.size()));
  mocap.position = Eigen::MatrixXd::Random(mocap.time.size(), 3);
  mocap.orientation = quaternionsAboutZ(mocap.time * 2);
  log.mocap = mocap;
  ContactSeries contacts;
  contacts.time = j.time;
  contacts.names = {"FL_foot", "FR_foot"};
  contacts.flags.resize(n, 2);
  for (Eigen::Index k = 0; k < n; ++k) contacts.flags.row(k) << (k / 5) % 2, 1 - (k / 5) % 2;
  log.contacts = contacts;
  TruthSeries truth;
  truth.time = j.time;
  truth.q = j.q;
  truth.v = j.v;
  truth.a = j.tau * 0.5;
  if (floating) {
    truth.base_pose = j.base_pose;
    truth.base_twist = j.base_twist;
    truth.base_acceleration = Eigen::MatrixXd::Random(n, 6);
  }
  truth.contact_names = contacts.names;
  truth.contact_forces = Eigen::MatrixXd::Random(n, 6) * 50;
  truth.contact_flags = contacts.flags;
  truth.body_names = {names.front(), names.back()};
  truth.body_pi.resize(2, 10);
  truth.body_pi.row(0) = inertia::piFromMassComInertia(1.5, Vector3(0.01, -0.02, 0.1),
                                                       Vector3(0.01, 0.02, 0.025).asDiagonal())
                             .transpose();
  truth.body_pi.row(1) = inertia::piFromMassComInertia(0.5, Vector3(0, 0, 0.2),
                                                       Vector3(0.003, 0.003, 0.001).asDiagonal())
                             .transpose();
  log.truth = truth;
  return log;
}

/// Adds two F/T sensors at 250 Hz (a different rate from the joints), with values a round trip
/// could get wrong (-0, a subnormal, 0.1 + 0.2).
Log withForceTorque(Log log) {
  ForceTorqueSeries ft;
  ft.time = timeVector(50, 0.501, 0.004);
  ft.names = {"left_ankle_ft", "right_ankle_ft"};
  ft.frames = {"left_sole_link", "right_sole_link"};
  ft.wrench = Eigen::MatrixXd::Random(50, 12) * 300;
  ft.wrench(0, 0) = -0.0;
  ft.wrench(1, 5) = 4.9e-324;
  ft.wrench(2, 11) = 0.1 + 0.2;
  log.force_torque = ft;
  return log;
}

Log smallFixedLog() { return makeLog({"j1", "j2", "j3"}, false); }
Log smallFloatingLog() { return makeLog({"j1", "j2", "j3"}, true); }

/// Estimates of `bodies` at 20 Hz (E = `e` samples), every optional field filled, with values a
/// round trip could get wrong: -0, a subnormal, 0.1 + 0.2, status 255.
EstimateSeries makeEstimates(const std::vector<std::string>& bodies, Eigen::Index e = 15) {
  EstimateSeries est;
  est.estimator = "log-cholesky-ekf";
  est.time = timeVector(e, 0.55, 0.05);
  est.body_names = bodies;
  const auto nb = static_cast<Eigen::Index>(bodies.size());
  est.body_pi.resize(e, 10 * nb);
  for (Eigen::Index k = 0; k < e; ++k) {
    for (Eigen::Index b = 0; b < nb; ++b) {
      const double mass = 1.0 + 0.5 * static_cast<double>(b) + 0.01 * std::sin(0.3 * k);
      est.body_pi.block<1, 10>(k, 10 * b) =
          inertia::piFromMassComInertia(mass, Vector3(0.01 * k, -0.02, 0.1 + 0.1 * b),
                                        Vector3(0.01, 0.02, 0.025 + 0.001 * k).asDiagonal())
              .transpose();
    }
  }
  est.body_pi(0, 1) = -0.0;
  est.body_pi(1, 2) = 0.1 + 0.2;
  est.body_pi_std = Eigen::MatrixXd::Random(e, 10 * nb).cwiseAbs() * 1e-2;
  est.body_pi_std(0, 0) = 0;
  est.body_pi_std(2, 3) = 5e-324;
  est.nis = Eigen::VectorXd::Random(e).cwiseAbs() * 3;
  est.nis(0) = 0;  // no update at the first sample
  est.status.resize(e, 1);
  for (Eigen::Index k = 0; k < e; ++k) est.status(k, 0) = static_cast<std::uint8_t>(k % 3);
  est.status(e - 1, 0) = 255;
  return est;
}

/// The log with estimates of its first and last joints' bodies.
Log withEstimates(Log log) {
  log.estimates = makeEstimates({log.joints.names.front(), log.joints.names.back()});
  return log;
}

/// Metadata and estimates only (what `heft filter` may write on its own).
Log estimatesOnlyLog() {
  Log log;
  log.meta.robot = "go2";
  log.meta.base_type = BaseType::FreeFlyer;
  log.meta.scenario = "filter run";
  log.estimates = makeEstimates({"base", "FL_calf_joint"});
  return log;
}

/// Validates and returns the messages, one per line.
std::string errors(const Log& log, const ValidationOptions& options = {}) {
  return validateLog(log, options).report();
}

::testing::AssertionResult mentions(const std::string& text,
                                    const std::vector<std::string>& parts) {
  for (const auto& p : parts) {
    if (text.find(p) == std::string::npos) {
      return ::testing::AssertionFailure() << "\"" << p << "\" not in:\n" << text;
    }
  }
  return ::testing::AssertionSuccess();
}

// A CSV text without the column named `column` (header and every row lose it).
std::string withoutColumn(const std::string& csv, const std::string& column) {
  std::istringstream lines(csv);
  std::string line, out;
  std::size_t drop = 0;
  bool header = true;
  while (std::getline(lines, line)) {
    std::vector<std::string> fields;
    std::stringstream s(line);
    std::string f;
    while (std::getline(s, f, ',')) fields.push_back(f);
    if (header) drop = std::find(fields.begin(), fields.end(), column) - fields.begin();
    header = false;
    fields.erase(fields.begin() + drop);
    for (std::size_t i = 0; i < fields.size(); ++i) out += (i ? "," : "") + fields[i];
    out += "\n";
  }
  return out;
}

template <typename F>
std::string inputErrorOf(F&& f) {
  try {
    f();
  } catch (const InputError& e) {
    return e.what();
  }
  return "(no InputError thrown)";
}

}  // namespace

// ---- round trips
// ---------------------------------------------------------------------------------

TEST_F(IoTest, Hdf5RoundTripIsExact) {
  for (const Log& log : {smallFixedLog(), smallFloatingLog()}) {
    ASSERT_TRUE(validateLog(log).ok()) << validateLog(log).report();
    const std::string file = path(log.meta.robot + ".h5");
    writeLog(log, file);
    const Log back = readLog(file);
    EXPECT_EQ(firstDifference(log, back), "");
  }
}

TEST_F(IoTest, CsvRoundTripIsExact) {
  for (const Log& log : {smallFixedLog(), smallFloatingLog()}) {
    const std::string directory = path(log.meta.robot);
    writeLog(log, directory);
    EXPECT_EQ(detectLogFormat(directory), LogFormat::Csv);
    const Log back = readLog(directory);
    EXPECT_EQ(firstDifference(log, back), "");
  }
}

TEST_F(IoTest, RoundTripOfMinimalLogKeepsOptionalGroupsAbsent) {
  Log log = smallFixedLog();
  log.imu.reset();
  log.mocap.reset();
  log.contacts.reset();
  log.truth.reset();
  log.joints.tau_cmd.resize(0, 0);
  log.meta.seed.reset();
  writeLog(log, path("min.h5"));
  writeLog(log, path("min"));
  for (const std::string& p : {path("min.h5"), path("min")}) {
    const Log back = readLog(p);
    EXPECT_EQ(firstDifference(log, back), "") << p;
    EXPECT_FALSE(back.imu || back.mocap || back.contacts || back.truth) << p;
  }
  // truth with bodies only
  log.truth = TruthSeries();
  log.truth->body_names = {"j2"};
  log.truth->body_pi = smallFixedLog().truth->body_pi.topRows(1);
  writeLog(log, path("bodies.h5"));
  writeLog(log, path("bodies"));
  EXPECT_EQ(firstDifference(log, readLog(path("bodies.h5"))), "");
  EXPECT_EQ(firstDifference(log, readLog(path("bodies"))), "");
}

TEST_F(IoTest, EstimatesRoundTripIsExactInBothFormats) {
  for (const Log& log : {withEstimates(smallFixedLog()), withEstimates(smallFloatingLog())}) {
    ASSERT_TRUE(validateLog(log).ok()) << validateLog(log).report();
    const std::string file = path(log.meta.robot + ".h5"), directory = path(log.meta.robot);
    writeLog(log, file);
    writeLog(log, directory);
    EXPECT_EQ(firstDifference(log, readLog(file)), "");
    EXPECT_EQ(firstDifference(log, readLog(directory)), "");
    // the CSV columns are <dataset>/<body>/<channel>, bodies in the order of estimates/body_names
    const std::string csv = readTextFile(directory + "/estimates.csv");
    EXPECT_EQ(csv.substr(0, csv.find(",body_pi/j3/m,")),
              "time,body_pi/j1/m,body_pi/j1/mcx,body_pi/j1/mcy,body_pi/j1/mcz,body_pi/j1/Ixx,"
              "body_pi/j1/Ixy,body_pi/j1/Iyy,body_pi/j1/Ixz,body_pi/j1/Iyz,body_pi/j1/Izz");
    EXPECT_TRUE(mentions(csv.substr(0, csv.find('\n')),
                         {",body_pi_std/j1/m,", ",body_pi_std/j3/Izz,nis,status"}));
    EXPECT_TRUE(
        mentions(readTextFile(directory + "/metadata.yaml"), {"estimator: \"log-cholesky-ekf\""}));
  }
  // the optional fields stay absent
  Log bare = withEstimates(smallFixedLog());
  bare.estimates->estimator.clear();
  bare.estimates->body_pi_std.resize(0, 0);
  bare.estimates->nis.resize(0);
  bare.estimates->status.resize(0, 0);
  writeLog(bare, path("bare.h5"));
  writeLog(bare, path("bare"));
  for (const std::string& p : {path("bare.h5"), path("bare")}) {
    const Log back = readLog(p);
    EXPECT_EQ(firstDifference(bare, back), "") << p;
    ASSERT_TRUE(back.estimates) << p;
    EXPECT_EQ(back.estimates->body_pi_std.size() + back.estimates->nis.size() +
                  back.estimates->status.size(),
              0)
        << p;
  }
}

TEST_F(IoTest, ForceTorqueRoundTripIsExactInBothFormats) {
  const Log log = withForceTorque(smallFloatingLog());
  ASSERT_TRUE(validateLog(log).ok()) << validateLog(log).report();
  writeLog(log, path("ft.h5"));
  writeLog(log, path("ft"));
  for (const std::string& p : {path("ft.h5"), path("ft")}) {
    const Log back = readLog(p);
    EXPECT_EQ(firstDifference(log, back), "") << p;
    ASSERT_TRUE(back.force_torque) << p;
    EXPECT_EQ(back.force_torque->frames[1], "right_sole_link") << p;
    EXPECT_TRUE(std::signbit(back.force_torque->wrench(0, 0))) << p;
  }
  // the CSV: wrench/<sensor>/<channel> columns and a sensor -> frame table
  const std::string csv = readTextFile(path("ft") + "/force_torque.csv");
  EXPECT_EQ(csv.substr(0, csv.find(",wrench/right_ankle_ft/fx")),
            "time,wrench/left_ankle_ft/fx,wrench/left_ankle_ft/fy,wrench/left_ankle_ft/fz,"
            "wrench/left_ankle_ft/tx,wrench/left_ankle_ft/ty,wrench/left_ankle_ft/tz");
  EXPECT_EQ(readTextFile(path("ft") + "/force_torque_sensors.csv"),
            "sensor,frame\nleft_ankle_ft,left_sole_link\nright_ankle_ft,right_sole_link\n");
  // a log without the group reads back without it, and the group survives resampling
  writeLog(smallFloatingLog(), path("no_ft.h5"));
  writeLog(smallFloatingLog(), path("no_ft"));
  EXPECT_FALSE(readLog(path("no_ft.h5")).force_torque);
  EXPECT_FALSE(readLog(path("no_ft")).force_torque);
  EXPECT_FALSE(fs::exists(path("no_ft") + "/force_torque.csv"));
  ResampleOptions options;
  options.rate = 100;
  const Log resampled = resample(log, options);
  ASSERT_TRUE(resampled.force_torque);
  EXPECT_EQ(resampled.force_torque->frames, log.force_torque->frames);
  EXPECT_NEAR(resampled.force_torque->time(0), 0.51, 1e-12);
}

TEST_F(IoTest, ForceTorqueValidationNamesFieldAndRow) {
  const Log good = withForceTorque(smallFloatingLog());
  Log bad = good;
  bad.force_torque->wrench(7, 8) = std::nan("");
  bad.force_torque->time(4) = bad.force_torque->time(3);
  EXPECT_TRUE(mentions(errors(bad),
                       {"force_torque/wrench row 7: column right_ankle_ft/fz: expected a finite "
                        "value, got nan",
                        "force_torque/time row 4: duplicated time stamp"}));
  Log twice = good;
  twice.force_torque->names[1] = "left_ankle_ft";
  EXPECT_TRUE(
      mentions(errors(twice), {"force_torque/names row 1: duplicated name \"left_ankle_ft\""}));
  Log shapes = good;
  shapes.force_torque->wrench.conservativeResize(50, 11);
  shapes.force_torque->frames.pop_back();
  EXPECT_TRUE(mentions(errors(shapes),
                       {"force_torque/wrench: expected 50 x 12 (samples of "
                        "force_torque/time x 6 per name in force_torque/names), got 50 x 11",
                        "force_torque/frames: expected one frame per name"}));
  // against a model: every frame must be one of its frames
  const pinocchio::Model go2 = loadUrdf(kGo2, true);
  std::vector<std::string> names;
  for (std::size_t j = 2; j < go2.names.size(); ++j) names.push_back(go2.names[j]);
  Log feet = withForceTorque(makeLog(names, true));
  feet.truth->body_names = {"base", "FL_calf_joint"};
  feet.force_torque->frames = {"FL_foot", "RR_foot"};
  EXPECT_TRUE(validateLog(feet, go2).ok()) << validateLog(feet, go2).report();
  feet.force_torque->frames[1] = "RR_toe";
  EXPECT_TRUE(mentions(validateLog(feet, go2).report(),
                       {"force_torque/frames[1]: sensor right_ankle_ft: \"RR_toe\" is not a "
                        "frame of model \"go2_description\""}));
}

TEST_F(IoTest, ForceTorqueCsvReaderErrorsNameTheFile) {
  const Log log = withForceTorque(smallFixedLog());
  writeLog(log, path("ft"));
  const std::string sensors = path("ft") + "/force_torque_sensors.csv";
  std::ofstream(sensors, std::ios::binary | std::ios::trunc)
      << "sensor,frame\nleft_ankle_ft,left_sole_link\n";
  EXPECT_TRUE(mentions(inputErrorOf([&] { readLog(path("ft")); }),
                       {"force_torque_sensors.csv", "right_ankle_ft", "has no frame"}));
  std::ofstream(sensors, std::ios::binary | std::ios::trunc)
      << "sensor,frame\nleft_ankle_ft,a\nright_ankle_ft,b\nthird,c\n";
  EXPECT_TRUE(mentions(inputErrorOf([&] { readLog(path("ft")); }),
                       {"force_torque_sensors.csv:4: sensor \"third\""}));
  fs::remove(sensors);
  EXPECT_TRUE(mentions(inputErrorOf([&] { readLog(path("ft")); }),
                       {"force_torque_sensors.csv: not found"}));
}

TEST_F(IoTest, EstimatesOnlyLogRoundTripsAndIsValidWithoutAModel) {
  const Log log = estimatesOnlyLog();
  ASSERT_TRUE(log.joints.empty());
  EXPECT_TRUE(validateLog(log).ok()) << validateLog(log).report();
  writeLog(log, path("estimates.h5"));
  writeLog(log, path("estimates"));
  for (const std::string& p : {path("estimates.h5"), path("estimates")}) {
    const Log back = readLog(p);
    EXPECT_EQ(firstDifference(log, back), "") << p;
    EXPECT_TRUE(back.joints.empty()) << p;
    EXPECT_FALSE(back.imu || back.mocap || back.contacts || back.truth) << p;
  }
  // the CSV directory holds the metadata and the estimates, nothing else
  std::vector<std::string> files;
  for (const auto& e : fs::directory_iterator(path("estimates")))
    files.push_back(e.path().filename().string());
  std::sort(files.begin(), files.end());
  EXPECT_EQ(files, (std::vector<std::string>{"estimates.csv", "metadata.yaml"}));
  // the summary lists the estimates group
  const LogSummary summary = summarize(log);
  ASSERT_EQ(summary.groups.size(), 1u);
  EXPECT_EQ(summary.groups[0].name, "estimates");
  EXPECT_NEAR(summary.groups[0].median_rate, 20, 1e-9);
  EXPECT_TRUE(mentions(summary.report(), {"body_pi body_pi_std nis status (2 bodies, "
                                          "log-cholesky-ekf)",
                                          "(estimates)"}));

  // against a model the joints are required, with one clear message
  const pinocchio::Model go2 = loadUrdf(kGo2, true);
  const ValidationReport with_model = validateLog(log, go2);
  ASSERT_EQ(with_model.total_errors, 1u) << with_model.report();
  EXPECT_TRUE(mentions(with_model.report(), {"joints: group missing", "model \"go2_description\"",
                                             "needs the joint measurements", "only estimates"}));
  // estimated bodies are checked against the model (beside the joints)
  Log go2_log = makeLog(
      [&] {
        std::vector<std::string> names;
        for (std::size_t j = 2; j < go2.names.size(); ++j) names.push_back(go2.names[j]);
        return names;
      }(),
      true);
  go2_log.truth->body_names = {"base", "FL_calf_joint"};
  go2_log.estimates = makeEstimates({"base", "FL_hip_rotor"});
  EXPECT_TRUE(mentions(validateLog(go2_log, go2).report(),
                       {"estimates/body_names row 1", "\"FL_hip_rotor\" is not a body"}));
  go2_log.estimates = makeEstimates({"base", "FL_calf_joint"});
  EXPECT_TRUE(validateLog(go2_log, go2).ok()) << validateLog(go2_log, go2).report();

  // without joints, nothing but estimates: another group is an error, in memory and in CSV
  Log with_imu = log;
  with_imu.imu = smallFixedLog().imu;
  EXPECT_TRUE(mentions(errors(with_imu),
                       {"joints: group missing", "nothing but metadata and estimates", "imu"}));
  writeLog(log, path("with_imu"));
  writeLog(smallFixedLog(), path("full"));
  fs::copy_file(path("full") + "/imu.csv", path("with_imu") + "/imu.csv");
  EXPECT_TRUE(mentions(inputErrorOf([&] { readLog(path("with_imu")); }),
                       {"with_imu/joints.csv: not found", "also holds imu.csv"}));
  // a log without joints nor estimates is still an empty log
  EXPECT_TRUE(mentions(errors(Log()), {"joints/time: expected at least 2 samples, got 0"}));
  fs::create_directories(path("metadata_only"));
  fs::copy_file(path("estimates") + "/metadata.yaml", path("metadata_only") + "/metadata.yaml");
  EXPECT_TRUE(
      mentions(inputErrorOf([&] { readLog(path("metadata_only")); }), {"joints.csv", "not found"}));
}

TEST_F(IoTest, EstimatesValidationNamesFieldAndRow) {
  const Log good = withEstimates(smallFloatingLog());
  ASSERT_TRUE(validateLog(good).ok()) << errors(good);
  struct Case {
    std::string what;
    std::function<void(EstimateSeries&)> corrupt;
    std::vector<std::string> expected;
  };
  const std::vector<Case> cases = {
      {"body_pi one column short",
       [](EstimateSeries& e) { e.body_pi.conservativeResize(Eigen::NoChange, 19); },
       {"estimates/body_pi", "expected 15 x 20", "10 per name in estimates/body_names",
        "got 15 x 19"}},
      {"body_pi one row short",
       [](EstimateSeries& e) { e.body_pi.conservativeResize(14, Eigen::NoChange); },
       {"estimates/body_pi", "expected 15 x 20", "got 14 x 20"}},
      {"a name more than blocks",
       [](EstimateSeries& e) { e.body_names.push_back("j2"); },
       {"estimates/body_pi", "expected 15 x 30"}},
      {"body_pi_std shape",
       [](EstimateSeries& e) { e.body_pi_std.conservativeResize(Eigen::NoChange, 10); },
       {"estimates/body_pi_std", "expected 15 x 20", "got 15 x 10"}},
      {"nis length",
       [](EstimateSeries& e) { e.nis.conservativeResize(14); },
       {"estimates/nis", "expected 15 x 1", "got 14 x 1"}},
      {"status shape",
       [](EstimateSeries& e) { e.status.conservativeResize(15, 2); },
       {"estimates/status", "expected 15 x 1", "got 15 x 2"}},
      {"NaN pi",
       [](EstimateSeries& e) { e.body_pi(3, 14) = std::nan(""); },
       {"estimates/body_pi row 3", "column j3/Ixx", "expected a finite value, got nan"}},
      {"Inf std",
       [](EstimateSeries& e) { e.body_pi_std(6, 0) = INFINITY; },
       {"estimates/body_pi_std row 6", "column j1/m", "finite"}},
      {"negative std",
       [](EstimateSeries& e) { e.body_pi_std(2, 11) = -1e-3; },
       {"estimates/body_pi_std row 2", "column j3/mcx", "non-negative standard deviation"}},
      {"NaN nis",
       [](EstimateSeries& e) { e.nis(9) = std::nan(""); },
       {"estimates/nis row 9", "column nis", "finite"}},
      {"negative nis",
       [](EstimateSeries& e) { e.nis(4) = -2; },
       {"estimates/nis row 4", "non-negative normalized innovation squared"}},
      {"decreasing time",
       [](EstimateSeries& e) { e.time(4) = e.time(2); },
       {"estimates/time row 4", "expected strictly increasing time", "(row 3)"}},
      {"duplicated time",
       [](EstimateSeries& e) { e.time(7) = e.time(6); },
       {"estimates/time row 7", "duplicated time stamp", "same as row 6"}},
      {"NaN time",
       [](EstimateSeries& e) { e.time(0) = std::nan(""); },
       {"estimates/time row 0", "finite time"}},
      {"no samples",
       [](EstimateSeries& e) {
         e.time.resize(0);
         e.body_pi.resize(0, 20);
         e.body_pi_std.resize(0, 0);
         e.nis.resize(0);
         e.status.resize(0, 0);
       },
       {"estimates/time", "expected at least 1 samples, got 0"}},
      {"duplicated body",
       [](EstimateSeries& e) { e.body_names[1] = "j1"; },
       {"estimates/body_names row 1", "duplicated name \"j1\""}},
      {"empty body name",
       [](EstimateSeries& e) { e.body_names[0] = ""; },
       {"estimates/body_names row 0", "non-empty name"}},
      {"no bodies",
       [](EstimateSeries& e) {
         e.body_names.clear();
         e.body_pi.resize(15, 0);
         e.body_pi_std.resize(0, 0);
       },
       {"estimates/body_names", "at least one name"}},
  };
  for (const auto& c : cases) {
    Log log = good;
    c.corrupt(*log.estimates);
    const ValidationReport report = validateLog(log);
    EXPECT_FALSE(report.ok()) << c.what;
    EXPECT_TRUE(mentions(report.report(), c.expected)) << c.what;
    // an estimates-only log gets the same messages
    Log alone = estimatesOnlyLog();
    alone.estimates = log.estimates;
    EXPECT_TRUE(mentions(validateLog(alone).report(), c.expected)) << c.what << " (alone)";
    // and the writers refuse it
    EXPECT_TRUE(mentions(inputErrorOf([&] { writeLog(log, path("refused.h5")); }),
                         {"refused.h5 (log to write): " + report.errors.front().message}))
        << c.what;
  }
  EXPECT_FALSE(fs::exists(path("refused.h5")));
  // estimates need not be physically consistent (a linear filter's may not be)
  Log negative_mass = good;
  negative_mass.estimates->body_pi(5, 0) = -0.1;
  EXPECT_TRUE(validateLog(negative_mass).ok()) << errors(negative_mass);
  // firstDifference compares the group
  Log other = good;
  other.estimates->body_pi(3, 4) += 1e-15;
  EXPECT_TRUE(mentions(firstDifference(good, other), {"estimates/body_pi row 3 column 4"}));
  other = good;
  other.estimates->status(2, 0) = 7;
  EXPECT_TRUE(mentions(firstDifference(good, other), {"estimates/status row 2 column 0"}));
  other = good;
  other.estimates->estimator = "linear-kf";
  EXPECT_TRUE(mentions(firstDifference(good, other), {"estimates/estimator"}));
  other.estimates.reset();
  EXPECT_TRUE(mentions(firstDifference(good, other), {"estimates: present in the first log only"}));
}

TEST_F(IoTest, Hdf5WriterGivesTheSameBytesForTheSameLog) {
  for (const Log& log : {withEstimates(smallFloatingLog()), estimatesOnlyLog()}) {
    writeLog(log, path("a.h5"));
    // object headers could carry modification times (seconds): write the twin a second later
    std::this_thread::sleep_for(std::chrono::milliseconds(1100));
    writeLog(log, path("b.h5"));
    Log changed = log;
    changed.estimates->nis(3) += 1;
    writeLog(changed, path("c.h5"));
    const std::string a = readTextFile(path("a.h5"));
    EXPECT_EQ(a, readTextFile(path("b.h5"))) << log.meta.robot;
    EXPECT_NE(a, readTextFile(path("c.h5"))) << log.meta.robot;
    for (const char* name : {"a.h5", "b.h5", "c.h5"}) fs::remove(path(name));
  }
}

TEST_F(IoTest, FirstDifferenceNamesFieldAndRow) {
  const Log a = smallFixedLog();
  Log b = a;
  b.joints.v(4, 1) += 1e-12;
  EXPECT_TRUE(mentions(firstDifference(a, b), {"joints/v row 4 column 1"}));
  b = a;
  b.mocap.reset();
  EXPECT_TRUE(mentions(firstDifference(a, b), {"mocap: present in the first log only"}));
}

TEST_F(IoTest, WritersRefuseToOverwriteAndAreAtomic) {
  const Log log = smallFixedLog();
  writeLog(log, path("log.h5"));
  writeLog(log, path("log"));
  const std::string before = readTextFile(path("log.h5"));
  Log changed = log;
  changed.joints.q(0, 0) = 42;
  EXPECT_TRUE(mentions(inputErrorOf([&] { writeLog(changed, path("log.h5")); }),
                       {"log.h5", "refusing to overwrite"}));
  EXPECT_TRUE(
      mentions(inputErrorOf([&] { writeLog(changed, path("log")); }), {"refusing to overwrite"}));
  EXPECT_EQ(readTextFile(path("log.h5")), before);
  // an invalid log is refused before anything is written
  Log invalid = log;
  invalid.joints.q(3, 2) = std::nan("");
  EXPECT_TRUE(mentions(inputErrorOf([&] { writeLog(invalid, path("other.h5")); }),
                       {"joints/q row 3", "column j3"}));
  EXPECT_FALSE(fs::exists(path("other.h5")));
  // overwrite replaces both kinds
  WriteOptions overwrite;
  overwrite.overwrite = true;
  writeLog(changed, path("log.h5"), overwrite);
  writeLog(changed, path("log"), overwrite);
  EXPECT_EQ(readLog(path("log.h5")).joints.q(0, 0), 42);
  EXPECT_EQ(readLog(path("log")).joints.q(0, 0), 42);
  // no temporary is left next to the outputs
  std::vector<std::string> entries;
  for (const auto& e : fs::directory_iterator(dir_))
    entries.push_back(e.path().filename().string());
  std::sort(entries.begin(), entries.end());
  EXPECT_EQ(entries, (std::vector<std::string>{"log", "log.h5"}));
  // a missing directory is an input error
  EXPECT_TRUE(
      mentions(inputErrorOf([&] { writeLog(log, path("missing/x.h5")); }), {"does not exist"}));
}

// ---- validation
// -----------------------------------------------------------------------------------

TEST_F(IoTest, ValidationNamesFieldAndRowForEveryError) {
  const Log good = smallFloatingLog();
  ASSERT_TRUE(validateLog(good).ok()) << errors(good);
  struct Case {
    std::string what;
    std::function<void(Log&)> corrupt;
    std::vector<std::string> expected;
  };
  const std::vector<Case> cases = {
      {"duplicated time",
       [](Log& l) { l.joints.time(5) = l.joints.time(4); },
       {"joints/time row 5", "duplicated time stamp", "same as row 4"}},
      {"decreasing time",
       [](Log& l) { l.imu->time(7) = l.imu->time(5); },
       {"imu/time row 7", "expected strictly increasing time"}},
      {"NaN time",
       [](Log& l) { l.mocap->time(2) = std::nan(""); },
       {"mocap/time row 2", "finite time"}},
      {"NaN q",
       [](Log& l) { l.joints.q(7, 1) = std::nan(""); },
       {"joints/q row 7", "column j2", "expected a finite value, got nan"}},
      {"Inf gyro",
       [](Log& l) { l.imu->gyro(3, 2) = INFINITY; },
       {"imu/gyro row 3", "column z", "inf"}},
      {"Inf truth force",
       [](Log& l) { l.truth->contact_forces(9, 4) = -INFINITY; },
       {"truth/contact_forces row 9", "column FR_foot/fy"}},
      {"too few q columns",
       [](Log& l) { l.joints.q.conservativeResize(Eigen::NoChange, 2); },
       {"joints/q", "expected 40 x 3", "got 40 x 2"}},
      {"too few tau rows",
       [](Log& l) { l.joints.tau.conservativeResize(39, Eigen::NoChange); },
       {"joints/tau", "expected 40 x 3", "got 39 x 3"}},
      {"names vs columns",
       [](Log& l) { l.joints.names.push_back("j4"); },
       {"joints/v", "expected 40 x 4"}},
      {"flags vs names",
       [](Log& l) { l.contacts->names.pop_back(); },
       {"contacts/flags", "expected 40 x 1"}},
      {"non-unit mocap quaternion",
       [](Log& l) { l.mocap->orientation.row(3) *= 0.9; },
       {"mocap/orientation row 3", "unit quaternion", "got norm 0.9"}},
      {"non-unit base quaternion",
       [](Log& l) { l.joints.base_pose(11, 6) += 0.5; },
       {"joints/base_pose row 11", "unit quaternion"}},
      {"empty log",
       [](Log& l) {
         l.joints.time.resize(0);
         l.joints.q.resize(0, 3);
         l.joints.v.resize(0, 3);
         l.joints.tau.resize(0, 3);
       },
       {"joints/time", "expected at least 2 samples, got 0 (empty log)"}},
      {"flag value",
       [](Log& l) { l.contacts->flags(6, 1) = 3; },
       {"contacts/flags row 6", "column FR_foot", "0 or 1, got 3"}},
      {"duplicated joint name",
       [](Log& l) { l.joints.names[2] = "j1"; },
       {"joints/names row 2", "duplicated name \"j1\""}},
      {"comma in a name",
       [](Log& l) { l.contacts->names[0] = "a,b"; },
       {"contacts/names row 0", "comma"}},
      {"inconsistent truth body",
       [](Log& l) { l.truth->body_pi(1, 0) = -1; },
       {"truth/bodies/pi row 1", "body j3", "physically consistent", "mass"}},
      {"units", [](Log& l) { l.meta.units = "imperial"; }, {"units", "expected \"SI\""}},
      {"base pose on a fixed base",
       [](Log& l) { l.meta.base_type = BaseType::Fixed; },
       {"joints/base_pose", "base_type is \"fixed\""}},
      {"empty truth", [](Log& l) { l.truth = TruthSeries(); }, {"truth", "neither a time series"}},
  };
  for (const auto& c : cases) {
    Log log = good;
    c.corrupt(log);
    const ValidationReport report = validateLog(log);
    EXPECT_FALSE(report.ok()) << c.what;
    EXPECT_TRUE(mentions(report.report(), c.expected)) << c.what;
    // throwing API: the first error, with the source
    EXPECT_TRUE(mentions(inputErrorOf([&] { requireValid(report, "run.h5"); }),
                         {"run.h5: " + report.errors.front().message}))
        << c.what;
  }
}

TEST_F(IoTest, ValidationCollectsAtMostMaxErrors) {
  Log log = smallFixedLog();
  for (int r = 0; r < 25; ++r) log.joints.v(r, 0) = std::nan("");
  const ValidationReport report = validateLog(log);
  EXPECT_EQ(report.total_errors, 25u);
  ASSERT_EQ(report.errors.size(), 10u);
  for (int r = 0; r < 10; ++r) {
    EXPECT_EQ(report.errors[r].field, "joints/v");
    EXPECT_EQ(report.errors[r].row, r);
  }
  EXPECT_TRUE(mentions(report.report(), {"... and 15 more errors"}));
  ValidationOptions three;
  three.max_errors = 3;
  EXPECT_EQ(validateLog(log, three).errors.size(), 3u);
  ValidationOptions bad;
  bad.max_errors = 0;
  EXPECT_TRUE(mentions(inputErrorOf([&] { validateLog(log, bad); }), {"max_errors", ">= 1"}));
  bad = ValidationOptions();
  bad.quaternion_tolerance = -1;
  EXPECT_TRUE(mentions(inputErrorOf([&] { bad.validate(); }), {"quaternion_tolerance"}));
}

TEST_F(IoTest, QuaternionToleranceIsTheDocumentedOne) {
  Log log = smallFloatingLog();
  log.mocap->orientation.row(0) *= 1 + 0.9e-3;  // inside 1e-3
  EXPECT_TRUE(validateLog(log).ok()) << errors(log);
  log.mocap->orientation.row(0) /= 1 + 0.9e-3;
  log.mocap->orientation.row(0) *= 1 + 1.1e-3;
  EXPECT_TRUE(mentions(errors(log), {"mocap/orientation row 0"}));
}

TEST_F(IoTest, ValidationAgainstModelNamesMissingAndUnknownJoints) {
  const pinocchio::Model go2 = loadUrdf(kGo2, true);
  std::vector<std::string> names;
  for (std::size_t j = 2; j < go2.names.size(); ++j) names.push_back(go2.names[j]);
  ASSERT_EQ(names.size(), 12u);
  Log log = makeLog(names, true);
  log.truth->body_names = {"base", "FL_calf_joint"};  // a link at its joint frame, and a joint name
  EXPECT_TRUE(validateLog(log, go2).ok()) << validateLog(log, go2).report();

  Log wrong = log;
  wrong.joints.names[3] = "FL_knee_joint";
  wrong.joints.names[5] = "tail_joint";
  EXPECT_TRUE(mentions(
      validateLog(wrong, go2).report(),
      {"joints/names: joints the model \"go2_description\" lacks: FL_knee_joint, tail_joint",
       "model joints missing from the log: FR_hip_joint, FR_calf_joint"}));
  Log fixed = log;
  fixed.meta.base_type = BaseType::Fixed;
  fixed.joints.base_pose.resize(0, 0);
  fixed.joints.base_twist.resize(0, 0);
  fixed.truth->base_pose.resize(0, 0);
  fixed.truth->base_twist.resize(0, 0);
  fixed.truth->base_acceleration.resize(0, 0);
  EXPECT_TRUE(mentions(
      validateLog(fixed, go2).report(),
      {"base_type: model \"go2_description\" has a free-flyer base, the log says \"fixed\""}));
  Log body = log;
  body.truth->body_names[1] = "FL_hip_rotor";  // lumped into the base body, not a body
  EXPECT_TRUE(
      mentions(validateLog(body, go2).report(), {"truth/bodies/names row 1", "FL_hip_rotor"}));

  // a fixed-base model
  const pinocchio::Model pendulum = loadUrdf(kPendulum, false);
  Log arm = makeLog({"joint1", "joint2"}, false);
  // the fixture's foot contacts are not frames of the pendulum
  EXPECT_TRUE(mentions(validateLog(arm, pendulum).report(),
                       {"contacts/names row 0: contact \"FL_foot\" is not a frame"}));
  arm.contacts.reset();
  EXPECT_TRUE(validateLog(arm, pendulum).ok()) << validateLog(arm, pendulum).report();
}

// Sole corners are points on a frame: the contacts group defines them, both formats keep them
// exactly, and validation against the model names a bad frame or a contact that is neither.
TEST_F(IoTest, ContactPointsRoundTripAndValidateAgainstTheModel) {
  const pinocchio::Model go2 = loadUrdf(kGo2, true);
  std::vector<std::string> names;
  for (std::size_t j = 2; j < go2.names.size(); ++j) names.push_back(go2.names[j]);
  Log log = makeLog(names, true);
  log.contacts->names = {"front_toe", "FR_foot"};
  log.contacts->frames = {"FL_foot", "FR_foot"};
  log.contacts->offsets.resize(2, 3);
  log.contacts->offsets << 0.1, -0.0, 0.1 + 0.2, 0, 0, 0;
  log.truth->contact_names = log.contacts->names;
  ASSERT_TRUE(validateLog(log, go2).ok()) << validateLog(log, go2).report();
  writeLog(log, path("points.h5"));
  writeLog(log, path("points"));
  for (const std::string& p : {path("points.h5"), path("points")}) {
    const Log back = readLog(p);
    EXPECT_EQ(firstDifference(log, back), "") << p;
    const auto points = back.contacts->definedPoints();
    ASSERT_EQ(points.size(), 2u) << p;
    EXPECT_EQ(points[0].frame, "FL_foot");
    EXPECT_EQ(points[0].offset.z(), 0.1 + 0.2);
  }
  Log bad_frame = log;
  bad_frame.contacts->frames[1] = "FR_toe_link";
  EXPECT_TRUE(mentions(validateLog(bad_frame, go2).report(),
                       {"contacts/frames row 1", "FR_toe_link", "not a frame"}));
  Log undefined = log;
  undefined.contacts->frames.clear();
  undefined.contacts->offsets.resize(0, 0);
  EXPECT_TRUE(mentions(validateLog(undefined, go2).report(),
                       {"contacts/names row 0", "front_toe", "contacts/offsets"}));
  Log short_offsets = log;
  short_offsets.contacts->offsets.conservativeResize(1, 3);
  EXPECT_TRUE(
      mentions(validateLog(short_offsets).report(), {"contacts/offsets", "expected 2 x 3"}));
}

// ---- readers: errors name the file and the place
// ----------------------------------------------------

TEST_F(IoTest, CsvReaderErrorsNameFileLineAndColumn) {
  const Log log = smallFloatingLog();
  const std::string dir = path("csv");
  writeLog(log, dir);
  const std::string joints = dir + "/joints.csv";
  const std::string original = readTextFile(joints);
  auto rewrite = [&](const std::string& text) {
    std::ofstream(joints, std::ios::binary | std::ios::trunc) << text;
  };
  // a bad number on line 4 (row 2)
  std::string text = original;
  std::size_t line3 = 0;
  for (int i = 0; i < 3; ++i) line3 = text.find('\n', line3) + 1;
  text.replace(text.find(',', line3) + 1, 0, "x");
  rewrite(text);
  EXPECT_TRUE(mentions(inputErrorOf([&] { readLog(dir); }),
                       {"joints.csv:4:", "column q/j1", "expected a number"}));
  // a missing column
  text = original;
  const std::size_t v2 = text.find(",v/j2");
  text.erase(v2, 5);
  rewrite(text);
  EXPECT_TRUE(mentions(inputErrorOf([&] { readLog(dir); }), {"joints.csv:2:", "expected"}));
  // a row with one field less than the header
  text = original;
  const std::size_t last_comma = text.rfind(',');
  text.erase(last_comma, text.find('\n', last_comma) - last_comma);
  rewrite(text);
  EXPECT_TRUE(
      mentions(inputErrorOf([&] { readLog(dir); }), {"joints.csv:41:", "fields (as the header)"}));
  // a column whose partner is missing: header and rows both lack v/j2
  rewrite(withoutColumn(original, "v/j2"));
  EXPECT_TRUE(
      mentions(inputErrorOf([&] { readLog(dir); }), {"joints.csv", "column \"v/j2\" missing"}));
  // a stray column
  rewrite(original);
  std::string contacts = readTextFile(dir + "/contacts.csv");
  contacts.replace(contacts.find('\n'), 0, ",flag/typo");
  for (std::size_t p = contacts.find('\n') + 1; p < contacts.size();
       p = contacts.find('\n', p) + 1) {
    contacts.replace(contacts.find('\n', p), 0, ",0");
  }
  std::ofstream(dir + "/contacts.csv", std::ios::binary | std::ios::trunc) << contacts;
  EXPECT_TRUE(mentions(inputErrorOf([&] { readLog(dir); }),
                       {"contacts.csv", "unexpected column \"flag/typo\""}));
  // NaN is read, then validation names it (row 5 is on line 7)
  writeLog(log, path("csv2"));
  text = readTextFile(path("csv2") + "/joints.csv");
  std::size_t line7 = 0;
  for (int i = 0; i < 6; ++i) line7 = text.find('\n', line7) + 1;
  const std::size_t field = text.find(',', line7) + 1;
  text.replace(field, text.find(',', field) - field, "nan");
  std::ofstream(path("csv2") + "/joints.csv", std::ios::binary | std::ios::trunc) << text;
  EXPECT_TRUE(mentions(inputErrorOf([&] { readLog(path("csv2")); }),
                       {"csv2: joints/q row 5", "column j1"}));
  // metadata
  std::ofstream(path("csv2") + "/metadata.yaml", std::ios::binary | std::ios::trunc)
      << "robot: x\nbase_typo: fixed\n";
  EXPECT_TRUE(mentions(inputErrorOf([&] { readLog(path("csv2")); }),
                       {"metadata.yaml", "unknown key \"base_typo\""}));
  std::ofstream(path("csv2") + "/metadata.yaml", std::ios::binary | std::ios::trunc)
      << "base_type: floating\n";
  EXPECT_TRUE(
      mentions(inputErrorOf([&] { readLog(path("csv2")); }), {"base_type", "\"free-flyer\""}));
  std::ofstream(path("csv2") + "/metadata.yaml", std::ios::binary | std::ios::trunc)
      << "robot: x\nbase_type: fixed\nrobot: y\n";
  EXPECT_TRUE(mentions(inputErrorOf([&] { readLog(path("csv2")); }),
                       {"metadata.yaml:3: 'robot' is given twice in the same mapping"}));
  // not a log at all
  EXPECT_TRUE(
      mentions(inputErrorOf([&] { readLog(path("nothing")); }), {"nothing", "no such file"}));
  fs::create_directories(path("empty_dir"));
  EXPECT_TRUE(
      mentions(inputErrorOf([&] { readLog(path("empty_dir")); }), {"joints.csv", "not found"}));
}

TEST_F(IoTest, Hdf5ReaderErrorsNameFileAndDataset) {
  // written with the writer's checks off, then read: the reader's validation names the field
  Log log = smallFixedLog();
  log.joints.v.conservativeResize(Eigen::NoChange, 2);
  WriteOptions unchecked;
  unchecked.check_log = false;
  writeLog(log, path("ragged.h5"), unchecked);
  EXPECT_TRUE(mentions(inputErrorOf([&] { readLog(path("ragged.h5")); }),
                       {"ragged.h5: joints/v: expected 40 x 3", "got 40 x 2"}));
  // a missing dataset
  Log no_truth_q = smallFixedLog();
  no_truth_q.truth->time.resize(0);  // the writer then skips truth/time..., keeping the group
  no_truth_q.truth->body_names.clear();
  no_truth_q.truth->body_pi.resize(0, 0);
  writeLog(no_truth_q, path("empty_truth.h5"), unchecked);
  EXPECT_TRUE(mentions(inputErrorOf([&] { readLog(path("empty_truth.h5")); }),
                       {"empty_truth.h5", "truth"}));
  // a text file with an .h5 name
  std::ofstream(path("text.h5")) << "time,q/j1\n0,1\n";
  EXPECT_TRUE(mentions(inputErrorOf([&] { readLog(path("text.h5")); }),
                       {"text.h5", "cannot open as HDF5"}));
}

TEST_F(IoTest, EstimatesReaderErrorsNameFileAndPlace) {
  const Log log = withEstimates(smallFixedLog());
  writeLog(log, path("csv"));
  const std::string file = path("csv") + "/estimates.csv";
  const std::string original = readTextFile(file);
  auto rewrite = [&](const std::string& text) {
    std::ofstream(file, std::ios::binary | std::ios::trunc) << text;
  };
  auto lineStart = [&](const std::string& text, int line) {  // 1-based line
    std::size_t at = 0;
    for (int i = 1; i < line; ++i) at = text.find('\n', at) + 1;
    return at;
  };
  // a bad number on line 5 (row 3), second column
  std::string text = original;
  text.insert(text.find(',', lineStart(text, 5)) + 1, "x");
  rewrite(text);
  EXPECT_TRUE(mentions(inputErrorOf([&] { readLog(path("csv")); }),
                       {"estimates.csv:5:", "column body_pi/j1/m", "expected a number"}));
  // a status that is not a small integer, on line 3
  text = original;
  const std::size_t end3 = text.find('\n', lineStart(text, 3));
  const std::size_t status3 = text.rfind(',', end3) + 1;
  text.replace(status3, end3 - status3, "2.5");
  rewrite(text);
  EXPECT_TRUE(mentions(inputErrorOf([&] { readLog(path("csv")); }),
                       {"estimates.csv:3:", "column status", "expected an integer 0 to 255"}));
  // a std block missing one body's column: the header and the rows lose it
  rewrite(withoutColumn(original, "body_pi_std/j3/Iyy"));
  EXPECT_TRUE(mentions(inputErrorOf([&] { readLog(path("csv")); }),
                       {"estimates.csv", "column \"body_pi_std/j3/Iyy\" missing"}));
  // NaN is read, then validation names field and row (row 6 is on line 8)
  text = original;
  const std::size_t field8 = text.find(',', lineStart(text, 8)) + 1;
  text.replace(field8, text.find(',', field8) - field8, "nan");
  rewrite(text);
  EXPECT_TRUE(mentions(inputErrorOf([&] { readLog(path("csv")); }),
                       {"csv: estimates/body_pi row 6", "column j1/m"}));
  // a stray column
  text = original;
  text.insert(text.find('\n'), ",nis_typo");
  for (std::size_t p = text.find('\n') + 1; p < text.size(); p = text.find('\n', p) + 1)
    text.insert(text.find('\n', p), ",0");
  rewrite(text);
  EXPECT_TRUE(mentions(inputErrorOf([&] { readLog(path("csv")); }),
                       {"estimates.csv", "unexpected column \"nis_typo\""}));

  // HDF5 written with the writer's checks off: the reader's validation names file and dataset
  WriteOptions unchecked;
  unchecked.check_log = false;
  Log ragged = log;
  ragged.estimates->body_pi.conservativeResize(Eigen::NoChange, 13);
  writeLog(ragged, path("ragged.h5"), unchecked);
  EXPECT_TRUE(mentions(inputErrorOf([&] { readLog(path("ragged.h5")); }),
                       {"ragged.h5: estimates/body_pi: expected 15 x 20", "got 15 x 13"}));
  Log backwards = estimatesOnlyLog();
  std::swap(backwards.estimates->time(3), backwards.estimates->time(4));
  writeLog(backwards, path("backwards.h5"), unchecked);
  EXPECT_TRUE(mentions(inputErrorOf([&] { readLog(path("backwards.h5")); }),
                       {"backwards.h5: estimates/time row 4", "strictly increasing"}));
}

// ---- fuzz: corrupted files never crash the readers
// --------------------------------------------------

namespace {

/// Fixed seeds keep the suite reproducible; HEFT_FUZZ_SEED=<n> explores other corruptions.
unsigned fuzzSeed(unsigned fixed) {
  const char* seed = std::getenv("HEFT_FUZZ_SEED");
  return seed ? static_cast<unsigned>(std::strtoul(seed, nullptr, 10)) : fixed;
}

struct FuzzTally {
  int accepted = 0;
  int rejected = 0;
};

/// Reads `p`: either a log that passes validation or an InputError; anything else fails the test.
void readCorrupted(const std::string& p, const std::string& what, FuzzTally& tally) {
  try {
    const Log log = readLog(p);
    EXPECT_TRUE(validateLog(log).ok()) << what;
    ++tally.accepted;
  } catch (const InputError& e) {
    EXPECT_GT(std::string(e.what()).size(), 10u) << what;
    ++tally.rejected;
  } catch (const std::exception& e) {
    ADD_FAILURE() << what << ": " << typeid(e).name() << ": " << e.what();
  } catch (...) {
    ADD_FAILURE() << what << ": unknown exception";
  }
}

std::string corruptBytes(std::string bytes, std::mt19937& rng, std::string& what) {
  std::uniform_int_distribution<int> kind(0, 4);
  auto position = [&](std::size_t size) {
    return std::uniform_int_distribution<std::size_t>(0, size - 1)(rng);
  };
  switch (kind(rng)) {
    case 0: {
      const std::size_t keep = position(bytes.size());
      what = "truncated to " + std::to_string(keep);
      bytes.resize(keep);
      break;
    }
    case 1: {
      const int flips = std::uniform_int_distribution<int>(1, 8)(rng);
      what = std::to_string(flips) + " flipped bytes";
      for (int i = 0; i < flips; ++i)
        bytes[position(bytes.size())] ^= static_cast<char>(1 + rng() % 255);
      break;
    }
    case 2: {
      const std::size_t at = position(bytes.size());
      const std::size_t length = std::min<std::size_t>(bytes.size() - at, 1 + rng() % 64);
      what = "garbage at " + std::to_string(at);
      for (std::size_t i = 0; i < length; ++i) bytes[at + i] = static_cast<char>(rng());
      break;
    }
    case 3: {
      const std::size_t at = position(bytes.size());
      what = "garbage inserted at " + std::to_string(at);
      bytes.insert(at, "#garbage,1e999,nan,,\n\x01\xff");
      break;
    }
    default: {
      const std::size_t at = position(bytes.size());
      const std::size_t length = std::min<std::size_t>(bytes.size() - at, 1 + rng() % 512);
      what = "zeroed " + std::to_string(length) + " bytes at " + std::to_string(at);
      std::fill(bytes.begin() + at, bytes.begin() + at + length, '\0');
    }
  }
  return bytes;
}

/// CSV-aware corruptions: delete a column, shuffle rows, NaN / empty fields, delete a file.
void corruptCsvDirectory(const fs::path& dir, std::mt19937& rng, std::string& what) {
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(dir)) files.push_back(e.path());
  std::sort(files.begin(), files.end());
  const fs::path file = files[rng() % files.size()];
  std::string text = readTextFile(file.string());
  std::vector<std::string> lines;
  {
    std::istringstream in(text);
    std::string line;
    while (std::getline(in, line)) lines.push_back(line);
  }
  auto save = [&] {
    std::string out;
    for (const auto& l : lines) out += l + "\n";
    std::ofstream(file, std::ios::binary | std::ios::trunc) << out;
  };
  auto split = [](const std::string& line) {
    std::vector<std::string> fields;
    std::stringstream s(line);
    std::string f;
    while (std::getline(s, f, ',')) fields.push_back(f);
    return fields;
  };
  auto join = [](const std::vector<std::string>& fields) {
    std::string out;
    for (std::size_t i = 0; i < fields.size(); ++i) out += (i ? "," : "") + fields[i];
    return out;
  };
  const int kind = std::uniform_int_distribution<int>(0, 6)(rng);
  const bool csv = file.extension() == ".csv" && lines.size() > 2;
  if (kind == 0 || !csv) {
    what = file.filename().string() + ": ";
    std::string detail;
    std::ofstream(file, std::ios::binary | std::ios::trunc) << corruptBytes(text, rng, detail);
    what += detail;
    return;
  }
  const std::size_t columns = split(lines[0]).size();
  const std::size_t row = 1 + rng() % (lines.size() - 1);
  switch (kind) {
    case 1: {  // delete one column everywhere
      const std::size_t c = rng() % columns;
      what = file.filename().string() + ": column " + std::to_string(c) + " deleted";
      for (auto& l : lines) {
        auto fields = split(l);
        if (c < fields.size()) fields.erase(fields.begin() + c);
        l = join(fields);
      }
      break;
    }
    case 2: {  // swap the time of two rows
      const std::size_t other = 1 + rng() % (lines.size() - 1);
      what = file.filename().string() + ": time of rows " + std::to_string(row) + ", " +
             std::to_string(other) + " swapped";
      auto a = split(lines[row]), b = split(lines[other]);
      std::swap(a[0], b[0]);
      lines[row] = join(a);
      lines[other] = join(b);
      break;
    }
    case 3: {  // a NaN, Inf, empty or text field
      const char* values[] = {"nan", "inf", "-inf", "", "abc", "1e999", "0x1p3", " 2 "};
      auto fields = split(lines[row]);
      const std::size_t c = rng() % fields.size();
      fields[c] = values[rng() % 8];
      what = file.filename().string() + ": row " + std::to_string(row) + " field " +
             std::to_string(c) + " = \"" + fields[c] + "\"";
      lines[row] = join(fields);
      break;
    }
    case 4: {  // a garbage line
      what = file.filename().string() + ": garbage line at " + std::to_string(row);
      lines.insert(lines.begin() + row, "this is not, a sample\t\x7f");
      break;
    }
    case 5: {  // shuffle all rows
      what = file.filename().string() + ": rows shuffled";
      std::shuffle(lines.begin() + 1, lines.end(), rng);
      break;
    }
    default: {  // the file disappears
      what = file.filename().string() + ": deleted";
      fs::remove(file);
      return;
    }
  }
  save();
}

}  // namespace

TEST_F(IoTest, FuzzCorruptedHdf5NeverCrashes) {
  const Log log = makeLog({"j1", "j2"}, true, 20);
  writeLog(log, path("good.h5"));
  const std::string bytes = readTextFile(path("good.h5"));
  std::mt19937 rng(fuzzSeed(20240611));
  FuzzTally tally;
  for (int trial = 0; trial < 300; ++trial) {
    std::string what;
    const std::string corrupted = corruptBytes(bytes, rng, what);
    const std::string file = path("bad" + std::to_string(trial) + ".h5");
    std::ofstream(file, std::ios::binary) << corrupted;
    readCorrupted(file, "trial " + std::to_string(trial) + ": " + what, tally);
    fs::remove(file);
  }
  // semantic corruptions written through the HDF5 writer with its checks off
  WriteOptions unchecked;
  unchecked.check_log = false;
  for (int trial = 0; trial < 60; ++trial) {
    Log bad = log;
    const int kind = trial % 6;
    const Eigen::Index row = static_cast<Eigen::Index>(rng() % 20);
    if (kind == 0) bad.joints.q.conservativeResize(Eigen::NoChange, 1);  // a deleted column
    if (kind == 1) bad.joints.tau(row, rng() % 2) = std::nan("");
    if (kind == 2) std::shuffle(bad.joints.time.data(), bad.joints.time.data() + 20, rng);
    if (kind == 3) bad.imu->accel(row, 1) = INFINITY;
    if (kind == 4) bad.contacts->names.push_back("extra");
    if (kind == 5) {  // a duplicated mocap time stamp
      const Eigen::Index k = 1 + row % (bad.mocap->time.size() - 1);
      bad.mocap->time(k) = bad.mocap->time(k - 1);
    }
    const std::string file = path("semantic" + std::to_string(trial) + ".h5");
    writeLog(bad, file, unchecked);
    const std::string message = inputErrorOf([&] { readLog(file); });
    EXPECT_TRUE(mentions(message, {file + ": "})) << "kind " << kind;
    EXPECT_EQ(message.find("no InputError"), std::string::npos) << "kind " << kind;
    ++tally.rejected;
  }
  // both outcomes occur, so the loop exercised the reader rather than the file system
  EXPECT_GT(tally.rejected, 200);
  EXPECT_GT(tally.accepted, 0);
  std::cout << "hdf5 fuzz: " << tally.accepted << " accepted, " << tally.rejected << " rejected\n";
}

TEST_F(IoTest, FuzzCorruptedCsvNeverCrashes) {
  const Log log = makeLog({"j1", "j2"}, true, 20);
  writeLog(log, path("good"));
  std::mt19937 rng(fuzzSeed(77));
  FuzzTally tally;
  for (int trial = 0; trial < 300; ++trial) {
    const std::string dir = path("bad" + std::to_string(trial));
    fs::copy(path("good"), dir);
    std::string what;
    const int corruptions = 1 + static_cast<int>(rng() % 2);
    for (int c = 0; c < corruptions; ++c) {
      std::string one;
      corruptCsvDirectory(dir, rng, one);
      what += one + "; ";
    }
    readCorrupted(dir, "trial " + std::to_string(trial) + ": " + what, tally);
    fs::remove_all(dir);
  }
  EXPECT_GT(tally.rejected, 150);
  EXPECT_GT(tally.accepted, 0);
  std::cout << "csv fuzz: " << tally.accepted << " accepted, " << tally.rejected << " rejected\n";
}

TEST_F(IoTest, FuzzCorruptedEstimatesNeverCrash) {
  // bytes of an HDF5 log with joints and estimates, and of an estimates-only one
  std::mt19937 rng(fuzzSeed(4242));
  FuzzTally tally;
  const std::vector<Log> logs = {withEstimates(makeLog({"j1", "j2"}, false, 20)),
                                 estimatesOnlyLog()};
  for (std::size_t l = 0; l < logs.size(); ++l) {
    const std::string good = path("good" + std::to_string(l) + ".h5");
    writeLog(logs[l], good);
    const std::string bytes = readTextFile(good);
    for (int trial = 0; trial < 150; ++trial) {
      std::string what;
      const std::string file = path("bad.h5");
      std::ofstream(file, std::ios::binary | std::ios::trunc) << corruptBytes(bytes, rng, what);
      readCorrupted(file,
                    "log " + std::to_string(l) + " trial " + std::to_string(trial) + ": " + what,
                    tally);
      fs::remove(file);
    }
  }
  // semantic corruptions through the HDF5 writer with its checks off: an InputError naming the
  // file and the estimates dataset
  WriteOptions unchecked;
  unchecked.check_log = false;
  for (int trial = 0; trial < 30; ++trial) {
    Log bad = estimatesOnlyLog();
    EstimateSeries& e = *bad.estimates;
    const int kind = trial % 5;
    const Eigen::Index row = static_cast<Eigen::Index>(rng() % 15);
    if (kind == 0) e.body_pi.conservativeResize(Eigen::NoChange, 10 + rng() % 10);
    if (kind == 1) e.body_pi(row, rng() % 20) = std::nan("");
    if (kind == 2) std::shuffle(e.time.data(), e.time.data() + 15, rng);
    if (kind == 3) e.nis.conservativeResize(1 + rng() % 14);
    if (kind == 4) e.body_names.push_back("extra");
    if (kind == 2 && e.time == estimatesOnlyLog().estimates->time) std::swap(e.time(0), e.time(1));
    const std::string file = path("semantic" + std::to_string(trial) + ".h5");
    writeLog(bad, file, unchecked);
    EXPECT_TRUE(mentions(inputErrorOf([&] { readLog(file); }), {file + ": estimates/"}))
        << "kind " << kind;
    ++tally.rejected;
  }
  // CSV: only metadata.yaml and estimates.csv to corrupt
  writeLog(estimatesOnlyLog(), path("good"));
  for (int trial = 0; trial < 200; ++trial) {
    const std::string dir = path("bad" + std::to_string(trial));
    fs::copy(path("good"), dir);
    std::string what;
    corruptCsvDirectory(dir, rng, what);
    readCorrupted(dir, "csv trial " + std::to_string(trial) + ": " + what, tally);
    fs::remove_all(dir);
  }
  EXPECT_GT(tally.rejected, 300);
  EXPECT_GT(tally.accepted, 0);
  std::cout << "estimates fuzz: " << tally.accepted << " accepted, " << tally.rejected
            << " rejected\n";
}

// ---- resampling
// ----------------------------------------------------------------------------------

TEST_F(IoTest, LinearInterpolationIsExactOnLinesAndRefusesExtrapolation) {
  const Eigen::VectorXd t = (Eigen::VectorXd(5) << 0.0, 0.1, 0.25, 0.3, 0.7).finished();
  Eigen::MatrixXd x(5, 2);
  x.col(0) = 3 * t.array() - 1;
  x.col(1) = -2 * t.array() + 0.5;
  const Eigen::VectorXd query = (Eigen::VectorXd(4) << 0.0, 0.05, 0.29, 0.7).finished();
  const Eigen::MatrixXd y = interpolateLinear(t, x, query);
  for (Eigen::Index i = 0; i < query.size(); ++i) {
    EXPECT_NEAR(y(i, 0), 3 * query(i) - 1, 1e-15);
    EXPECT_NEAR(y(i, 1), -2 * query(i) + 0.5, 1e-15);
  }
  const Eigen::VectorXd outside = (Eigen::VectorXd(2) << 0.1, 0.71).finished();
  EXPECT_TRUE(mentions(inputErrorOf([&] { interpolateLinear(t, x, outside, "imu/gyro"); }),
                       {"imu/gyro: query row 1", "outside the samples' span", "no extrapolation"}));
  // a uniform grid has exact multiples and includes the end when it falls on the grid
  const Eigen::VectorXd grid = uniformGrid(1.0, 2.0, 100);
  ASSERT_EQ(grid.size(), 101);
  EXPECT_EQ(grid(100), 2.0);
  EXPECT_EQ(grid(37), 1.0 + 37 / 100.0);
  EXPECT_TRUE(mentions(inputErrorOf([&] { uniformGrid(0, 1, 0); }), {"rate", "> 0"}));
}

TEST_F(IoTest, SlerpFollowsTheShorterArcAndKeepsUnitNorm) {
  const Eigen::VectorXd t = (Eigen::VectorXd(2) << 0.0, 1.0).finished();
  const Eigen::Quaterniond a(Eigen::AngleAxisd(0.2, Eigen::Vector3d::UnitZ()));
  const Eigen::Quaterniond b(Eigen::AngleAxisd(1.2, Eigen::Vector3d::UnitZ()));
  Eigen::MatrixXd q(2, 4);
  q.row(0) << a.x(), a.y(), a.z(), a.w();
  q.row(1) << -b.x(), -b.y(), -b.z(), -b.w();  // same rotation as b, other hemisphere
  const Eigen::VectorXd query = (Eigen::VectorXd(3) << 0.0, 0.25, 0.5).finished();
  const Eigen::MatrixXd r = interpolateQuaternions(t, q, query);
  for (Eigen::Index i = 0; i < 3; ++i) {
    const Eigen::Quaterniond got(r(i, 3), r(i, 0), r(i, 1), r(i, 2));
    const Eigen::Quaterniond expected(Eigen::AngleAxisd(0.2 + query(i), Eigen::Vector3d::UnitZ()));
    EXPECT_NEAR(got.norm(), 1, 1e-15);
    EXPECT_NEAR(got.angularDistance(expected), 0, 1e-12) << "query " << query(i);
  }
  FlagMatrix flags(3, 1);
  flags << 0, 1, 0;
  const Eigen::VectorXd tf = (Eigen::VectorXd(3) << 0.0, 1.0, 2.0).finished();
  const Eigen::VectorXd qf = (Eigen::VectorXd(5) << 0.0, 0.99, 1.0, 1.5, 2.0).finished();
  const FlagMatrix held = interpolateFlags(tf, flags, qf);
  EXPECT_EQ(held.col(0).cast<int>().transpose(),
            Eigen::RowVectorXi::Map(std::vector<int>{0, 0, 1, 1, 0}.data(), 5));
}

TEST_F(IoTest, ResampleLogKeepsDropoutsOut) {
  const Log log = smallFloatingLog();
  ResampleOptions options;
  options.rate = 100;
  const Log r = resample(log, options);
  EXPECT_TRUE(validateLog(r).ok()) << validateLog(r).report();
  EXPECT_EQ(r.joints.time.size(), log.joints.time.size());
  EXPECT_NEAR((r.joints.q - log.joints.q).cwiseAbs().maxCoeff(), 0, 1e-12);
  // mocap: 50 Hz with rows 8..11 (0.66..0.72 s) missing, i.e. a 0.1 s gap (0.64, 0.74); the 100 Hz
  // grid points 0.65..0.73 inside it are dropped, and none outside the mocap span [0.5, 0.88] is
  // kept
  for (Eigen::Index i = 0; i < r.mocap->time.size(); ++i) {
    const double t = r.mocap->time(i);
    EXPECT_FALSE(t > 0.64 + 1e-9 && t < 0.74 - 1e-9) << t;
    EXPECT_GE(t, 0.5);
    EXPECT_LE(t, 0.88 + 1e-12);
  }
  EXPECT_EQ(r.mocap->time.size(), 39 - 9);  // 0.50..0.88 at 0.01 s is 39 points
  // IMU at 200 Hz starting at 0.5025: the first grid point inside is 0.51
  EXPECT_NEAR(r.imu->time(0), 0.51, 1e-12);
  options.max_gap = 0.15;  // now the 0.1 s gap is bridged
  EXPECT_EQ(resample(log, options).mocap->time.size(), 39);
  options.rate = -1;
  EXPECT_TRUE(mentions(inputErrorOf([&] { resample(log, options); }), {"ResampleOptions.rate"}));
}

TEST_F(IoTest, UniformPeriodNamesTheFirstIrregularRow) {
  Eigen::VectorXd t = timeVector(10, 0, 0.002);
  EXPECT_DOUBLE_EQ(uniformPeriod(t, "joints/time"), 0.002);
  t(6) += 1e-5;
  EXPECT_TRUE(mentions(inputErrorOf([&] { uniformPeriod(t, "joints/time"); }),
                       {"joints/time row 6", "resample first"}));
}

// ---- Savitzky-Golay
// ------------------------------------------------------------------------------

TEST_F(IoTest, SavitzkyGolayIsExactOnPolynomialsEdgesIncluded) {
  const double dt = 0.01;
  const Eigen::VectorXd t = timeVector(60, -0.2, dt);
  // cubic and quadratic columns: derivatives known in closed form
  Eigen::MatrixXd x(60, 2), dx(60, 2), ddx(60, 2);
  for (Eigen::Index i = 0; i < t.size(); ++i) {
    const double s = t(i);
    x.row(i) << 2 - 3 * s + 5 * s * s - 7 * s * s * s, 0.5 + 4 * s * s;
    dx.row(i) << -3 + 10 * s - 21 * s * s, 8 * s;
    ddx.row(i) << 10 - 42 * s, 8;
  }
  for (const int window : {5, 11, 31}) {
    SavitzkyGolayOptions options;
    options.window = window;
    options.order = 3;
    const Eigen::MatrixXd f0 = savitzkyGolay(t, x, 0, options);
    const Eigen::MatrixXd f1 = savitzkyGolay(t, x, 1, options);
    const Eigen::MatrixXd f2 = savitzkyGolay(t, x, 2, options);
    // rounding only: the weights amplify it by sum |w| ~ (window dt / 2)^-n
    EXPECT_LT((f0 - x).cwiseAbs().maxCoeff(), 1e-12) << window;
    EXPECT_LT((f1 - dx).cwiseAbs().maxCoeff(), 1e-9) << window;
    EXPECT_LT((f2 - ddx).cwiseAbs().maxCoeff(), 1e-6) << window;
  }
}

TEST_F(IoTest, SavitzkyGolayDifferentiatesASine) {
  // x = sin(w t), w = 2 pi rad/s, 1 kHz, window 31 (half width h = 15 ms), order 4; e = w h.
  // Leading error of a least-squares polynomial fit (continuous approximation, u = t / h in [-1,
  // 1]): the first Taylor term the fit cannot represent, u^k = c P_k(u) + lower degrees, is left as
  // c P_k(u) x^(k)(0) h^k / k!, and its n-th derivative at u is c P_k^(n)(u) x^(k) h^(k-n) / k!.
  //  centre, d1: order 4 acts as order 3 (symmetric window): k = 5, c = 8/63, P5'(0) = 15/8
  //  centre, d2: order 4 acts as order 5: k = 6, c = 16/231, P6''(0) = 105/8
  //  edge (u = +-1), d1: k = 5, P5'(1) = 15;  edge, d2: k = 5, P5''(1) = 105
  const double w = 2 * M_PI, dt = 1e-3, h = 0.015, e = w * h;
  const double centre_d1 = (8.0 / 63) * (15.0 / 8) / 120 * std::pow(e, 4);     // relative to w
  const double centre_d2 = (16.0 / 231) * (105.0 / 8) / 720 * std::pow(e, 4);  // relative to w^2
  const double edge_d1 = (8.0 / 63) * 15 / 120 * std::pow(e, 4);
  const double edge_d2 = (8.0 / 63) * 105 / 120 * std::pow(e, 3);
  const Eigen::VectorXd t = timeVector(1001, 0, dt);
  const Eigen::MatrixXd x = t.array().unaryExpr([&](double s) { return std::sin(w * s); }).matrix();
  SavitzkyGolayOptions options;
  options.window = 31;
  options.order = 4;
  const Eigen::VectorXd truth1 =
      t.array().unaryExpr([&](double s) { return w * std::cos(w * s); }).matrix();
  const Eigen::VectorXd truth2 =
      t.array().unaryExpr([&](double s) { return -w * w * std::sin(w * s); }).matrix();
  const Eigen::VectorXd error1 = (savitzkyGolay(t, x, 1, options) - truth1) / w;
  const Eigen::VectorXd error2 = (savitzkyGolay(t, x, 2, options) - truth2) / (w * w);
  const auto centre = Eigen::seqN(15, 1001 - 30);
  // the 31-point sums differ from the continuous integrals by about 12 %, the next Taylor terms
  // by e^2 = 1 %: the centre error is the predicted one within 25 %, the edges at most 1.25 times
  const double c1 = error1(centre).cwiseAbs().maxCoeff(), c2 = error2(centre).cwiseAbs().maxCoeff();
  EXPECT_LT(c1, 1.25 * centre_d1);
  EXPECT_GT(c1, 0.75 * centre_d1);
  EXPECT_LT(c2, 1.25 * centre_d2);
  EXPECT_GT(c2, 0.75 * centre_d2);
  EXPECT_LT(error1.cwiseAbs().maxCoeff(), 1.25 * edge_d1);
  EXPECT_LT(error2.cwiseAbs().maxCoeff(), 1.25 * edge_d2);
  // smoothing (derivative 0) of the sine: error of order e^6 at the centre
  const Eigen::VectorXd error0 = savitzkyGolay(t, x, 0, options) - x;
  EXPECT_LT(error0(centre).cwiseAbs().maxCoeff(), std::pow(e, 6));
}

TEST_F(IoTest, SavitzkyGolayOptionsAreValidated) {
  SavitzkyGolayOptions options;
  options.window = 10;
  EXPECT_TRUE(mentions(inputErrorOf([&] { options.validate(); }), {"window", "odd"}));
  options.window = 5;
  options.order = 5;
  EXPECT_TRUE(mentions(inputErrorOf([&] { options.validate(); }), {"order", "< window"}));
  options.order = 1;
  EXPECT_TRUE(mentions(inputErrorOf([&] { SavitzkyGolayFilter(options, 2, 0.01); }),
                       {"derivative", "<= order (1)"}));
  options.order = 3;
  EXPECT_TRUE(mentions(inputErrorOf([&] { SavitzkyGolayFilter(options, 3, 0.01); }),
                       {"derivative", "0, 1 or 2"}));
  const SavitzkyGolayFilter filter(options, 1, 0.01);
  EXPECT_TRUE(mentions(inputErrorOf([&] { filter.apply(Eigen::MatrixXd::Zero(4, 1)); }),
                       {"at least window = 5"}));
}

// ---- summary
// ---------------------------------------------------------------------------------------

TEST_F(IoTest, SummaryReportsRatesGapsDropoutsContactsAndTruth) {
  const LogSummary s = summarize(smallFloatingLog());
  ASSERT_EQ(s.groups.size(), 5u);
  EXPECT_EQ(s.groups[0].name, "joints");
  EXPECT_EQ(s.groups[0].samples, 40);
  EXPECT_NEAR(s.groups[0].median_rate, 100, 1e-6);
  EXPECT_NEAR(s.groups[1].median_rate, 200, 1e-6);
  const GroupSummary& mocap = s.groups[2];
  EXPECT_EQ(mocap.name, "mocap");
  EXPECT_NEAR(mocap.median_rate, 50, 1e-6);
  EXPECT_EQ(mocap.dropouts, 1);
  EXPECT_NEAR(mocap.largest_gap, 0.1, 1e-12);
  EXPECT_NEAR(mocap.largest_gap_at, 0.64, 1e-12);
  EXPECT_EQ(s.contact_names, (std::vector<std::string>{"FL_foot", "FR_foot"}));
  EXPECT_NEAR(s.contact_fraction[0] + s.contact_fraction[1], 1.0, 1e-12);
  EXPECT_TRUE(s.has_truth);
  EXPECT_TRUE(mentions(
      s.report(), {"mocap", "dropouts", "FL_foot", "truth: states (q v a base_pose", "2 bodies"}));
}

// ---- fixture
// -----------------------------------------------------------------------------------------

namespace {

/// Double pendulum swinging for 1 s at 100 Hz: tau = RNEA(q, v, a), with truth. Regenerate the
/// files in data/fixtures with HEFT_WRITE_FIXTURES=1 ./test_io --gtest_filter=*Fixture*.
Log doublePendulumLog() {
  const pinocchio::Model model = loadUrdf(kPendulum, false);
  pinocchio::Data data(model);
  const Eigen::Index n = 101;
  Log log;
  log.meta.robot = "double_pendulum";
  log.meta.scenario = "two sines, 1 s";
  log.meta.noise_profile = "none";
  log.meta.seed = 0;
  log.joints.time = timeVector(n, 0, 0.01);
  log.joints.names = {"joint1", "joint2"};
  log.joints.q.resize(n, 2);
  log.joints.v.resize(n, 2);
  log.joints.tau.resize(n, 2);
  TruthSeries truth;
  truth.time = log.joints.time;
  truth.a.resize(n, 2);
  for (Eigen::Index k = 0; k < n; ++k) {
    const double t = log.joints.time(k);
    const Eigen::Vector2d w(2.0, 3.5), amplitude(0.8, 0.5);
    const Eigen::Vector2d q = amplitude.cwiseProduct((w * t).array().sin().matrix());
    const Eigen::Vector2d v =
        amplitude.cwiseProduct(w).cwiseProduct((w * t).array().cos().matrix());
    const Eigen::Vector2d a =
        -amplitude.cwiseProduct(w).cwiseProduct(w).cwiseProduct((w * t).array().sin().matrix());
    log.joints.q.row(k) = q.transpose();
    log.joints.v.row(k) = v.transpose();
    log.joints.tau.row(k) = pinocchio::rnea(model, data, q, v, a).transpose();
    truth.a.row(k) = a.transpose();
  }
  truth.q = log.joints.q;
  truth.v = log.joints.v;
  truth.body_names = {"joint1", "joint2"};
  truth.body_pi.resize(2, 10);
  for (int j = 0; j < 2; ++j)
    truth.body_pi.row(j) = model.inertias[j + 1].toDynamicParameters().transpose();
  log.truth = truth;
  return log;
}

}  // namespace

TEST_F(IoTest, FixtureDoublePendulumIsValidAndMatchesItsDynamics) {
  const std::string h5 = kFixtures + "/double_pendulum_short.h5";
  const std::string csv = kFixtures + "/double_pendulum_short";
  if (std::getenv("HEFT_WRITE_FIXTURES")) {
    WriteOptions overwrite;
    overwrite.overwrite = true;
    fs::create_directories(kFixtures);
    writeLog(doublePendulumLog(), h5, overwrite);
    writeLog(doublePendulumLog(), csv, overwrite);
  }
  const pinocchio::Model model = loadUrdf(kPendulum, false);
  pinocchio::Data data(model);
  const Log from_h5 = readLog(h5);
  const Log from_csv = readLog(csv);
  EXPECT_EQ(firstDifference(from_h5, from_csv), "");
  EXPECT_TRUE(validateLog(from_h5, model).ok()) << validateLog(from_h5, model).report();
  // the stored torques are the model's inverse dynamics of the stored truth (1e-9 N m: the values
  // are stored exactly, only the RNEA of this build may differ in the last bits)
  for (Eigen::Index k = 0; k < from_h5.joints.time.size(); ++k) {
    const Eigen::VectorXd tau =
        pinocchio::rnea(model, data, from_h5.truth->q.row(k).transpose(),
                        from_h5.truth->v.row(k).transpose(), from_h5.truth->a.row(k).transpose());
    EXPECT_LT((tau - from_h5.joints.tau.row(k).transpose()).cwiseAbs().maxCoeff(), 1e-9)
        << "row " << k;
  }
}

// ---- URDF writer
// ----------------------------------------------------------------------------------

TEST_F(IoTest, UrdfReaderReadsGo2Inertials) {
  const auto inertials = readUrdfInertials(kGo2);
  ASSERT_TRUE(inertials.count("base"));
  const UrdfInertial& base = inertials.at("base");
  EXPECT_EQ(base.mass, 6.921);
  EXPECT_EQ(base.xyz, Vector3(0.021112, 0, -0.005366));
  EXPECT_EQ(base.inertia(1, 2), -3.12E-05);
  EXPECT_EQ(base.inertia(2, 1), -3.12E-05);
  EXPECT_EQ(base.inertia(0, 2), 0.0014849);
  // the calf body is the calf link plus the foot link fixed below it, as Pinocchio lumps them
  const pinocchio::Model model = loadUrdf(kGo2, true);
  const Vector10 calf_body =
      model.inertias[model.getJointId("FL_calf_joint")].toDynamicParameters();
  const auto& foot_frame = model.frames[model.getFrameId("FL_foot", pinocchio::BODY)];
  const Vector10 foot_in_calf =
      foot_frame.placement
          .act(pinocchio::Inertia::FromDynamicParameters(inertials.at("FL_foot").pi()))
          .toDynamicParameters();
  // O(1) kg entries summed in a different order: a few ulps
  EXPECT_LT((calf_body - (inertials.at("FL_calf").pi() + foot_in_calf)).cwiseAbs().maxCoeff(),
            1e-14);
}

TEST_F(IoTest, UrdfWriterChangesOnlyTheTrunkInertial) {
  const pinocchio::Model nominal = loadUrdf(kGo2, true);
  const auto inertials = readUrdfInertials(kGo2);
  // an identified trunk (root joint body): 0.4 kg more, COM moved, inertia rotated and grown
  const Vector10 lumped = nominal.inertias[1].toDynamicParameters();
  const Matrix3 rotation = Eigen::AngleAxisd(0.3, Vector3(1, 2, 3).normalized()).toRotationMatrix();
  const Matrix3 at_com =
      rotation * inertia::rotationalInertiaAtCom(lumped) * rotation.transpose() * 1.1;
  const Vector10 identified = inertia::piFromMassComInertia(
      inertia::mass(lumped) + 0.4, inertia::centerOfMass(lumped) + Vector3(0.01, -0.005, 0.003),
      at_com);
  const Vector10 base_pi =
      linkPiFromLumpedPi(nominal, "base", identified, inertials.at("base").pi());
  const std::string out = path("go2_identified.urdf");
  writeUrdfInertials(kGo2, {{"base", base_pi}}, out);

  // reload: the trunk body has the identified parameters, every other body is bit-for-bit unchanged
  const pinocchio::Model identified_model = loadUrdf(out, true);
  ASSERT_EQ(identified_model.njoints, nominal.njoints);
  EXPECT_LT((identified_model.inertias[1].toDynamicParameters() - identified).cwiseAbs().maxCoeff(),
            1e-12);
  for (int j = 2; j < nominal.njoints; ++j) {
    EXPECT_EQ(identified_model.inertias[j].toDynamicParameters(),
              nominal.inertias[j].toDynamicParameters())
        << nominal.names[j];
  }
  for (std::size_t f = 0; f < nominal.frames.size(); ++f) {
    EXPECT_TRUE(identified_model.frames[f].placement == nominal.frames[f].placement)
        << nominal.frames[f].name;
  }
  // the text: everything before and after the base link's <inertial> element is byte-for-byte equal
  const std::string before = readTextFile(kGo2), after = readTextFile(out);
  const std::size_t link = before.find("name=\"base\">");
  const std::size_t begin = before.find("<inertial>", link), end = before.find("</inertial>", link);
  ASSERT_NE(begin, std::string::npos);
  std::size_t prefix = 0;
  while (prefix < before.size() && prefix < after.size() && before[prefix] == after[prefix])
    ++prefix;
  std::size_t suffix = 0;
  while (suffix < before.size() && suffix < after.size() &&
         before[before.size() - 1 - suffix] == after[after.size() - 1 - suffix]) {
    ++suffix;
  }
  EXPECT_GT(prefix, begin);
  EXPECT_GE(before.size() - suffix, prefix);
  EXPECT_LE(before.size() - suffix, end);
  EXPECT_EQ(after.substr(after.size() - suffix), before.substr(before.size() - suffix));
  // and every other link reads back with its old inertial
  const auto reread = readUrdfInertials(out);
  for (const auto& [name, in] : inertials) {
    if (name == "base") continue;
    EXPECT_EQ(reread.at(name).pi(), in.pi()) << name;
  }
  EXPECT_LT((reread.at("base").pi() - base_pi).cwiseAbs().maxCoeff(), 1e-15);
}

TEST_F(IoTest, LumpedChangeCanBeCarriedByAnOffsetLink) {
  // a small payload identified on the base body, sitting on FL_hip_rotor (fixed to the base at an
  // offset): carried by the rotor link, the rotor gains exactly the payload
  const pinocchio::Model nominal = loadUrdf(kGo2, true);
  const auto inertials = readUrdfInertials(kGo2);
  const Vector10 payload_in_rotor = inertia::piFromMassComInertia(
      0.05, Vector3(0.01, -0.02, 0.005), Vector3(2e-5, 1e-5, 1.5e-5).asDiagonal());
  const auto& rotor_frame = nominal.frames[nominal.getFrameId("FL_hip_rotor", pinocchio::BODY)];
  ASSERT_EQ(rotor_frame.parentJoint, 1u);
  const Vector10 identified =
      nominal.inertias[1].toDynamicParameters() +
      rotor_frame.placement.act(pinocchio::Inertia::FromDynamicParameters(payload_in_rotor))
          .toDynamicParameters();
  const Vector10 rotor = inertials.at("FL_hip_rotor").pi();
  const Vector10 new_rotor = linkPiFromLumpedPi(nominal, "FL_hip_rotor", identified, rotor);
  EXPECT_LT((new_rotor - (rotor + payload_in_rotor)).cwiseAbs().maxCoeff(), 1e-15);
  writeUrdfInertials(kGo2, {{"FL_hip_rotor", new_rotor}}, path("rotor.urdf"));
  const pinocchio::Model model = loadUrdf(path("rotor.urdf"), true);
  EXPECT_LT((model.inertias[1].toDynamicParameters() - identified).cwiseAbs().maxCoeff(), 1e-12);
  EXPECT_TRUE(mentions(
      inputErrorOf([&] { linkPiFromLumpedPi(nominal, "no_such_link", identified, identified); }),
      {"link no_such_link", "not a body frame"}));
}

TEST_F(IoTest, UrdfWriterRefusesInputOverwriteInconsistencyAndUnknownLinks) {
  const auto inertials = readUrdfInertials(kGo2);
  const std::string copy = path("go2.urdf");
  fs::copy_file(kGo2, copy);
  const Vector10 good = inertials.at("base").pi();
  EXPECT_TRUE(mentions(inputErrorOf([&] {
                         writeUrdfInertials(copy, {{"base", good}}, copy);
                       }),
                       {"is the input URDF", "refusing to overwrite"}));
  UrdfWriteOptions overwrite;
  overwrite.overwrite = true;
  EXPECT_TRUE(mentions(inputErrorOf([&] {
                         writeUrdfInertials(copy, {{"base", good}}, copy, overwrite);
                       }),
                       {"is the input URDF"}));
  EXPECT_EQ(readTextFile(copy), readTextFile(kGo2));
  writeUrdfInertials(copy, {{"base", good}}, path("out.urdf"));
  EXPECT_TRUE(mentions(inputErrorOf([&] {
                         writeUrdfInertials(copy, {{"base", good}}, path("out.urdf"));
                       }),
                       {"out.urdf", "refusing to overwrite"}));
  writeUrdfInertials(copy, {{"base", good}}, path("out.urdf"), overwrite);

  // a triangle inequality violated: principal moments 0.01, 0.01, 0.05
  const Vector10 flat =
      inertia::piFromMassComInertia(1.0, Vector3::Zero(), Vector3(0.01, 0.01, 0.05).asDiagonal());
  EXPECT_TRUE(mentions(inputErrorOf([&] {
                         writeUrdfInertials(copy, {{"FL_thigh", flat}}, path("bad.urdf"));
                       }),
                       {"link FL_thigh", "not physically consistent", "triangle"}));
  Vector10 negative = good;
  negative(0) = -1;
  EXPECT_TRUE(mentions(inputErrorOf([&] {
                         writeUrdfInertials(copy, {{"base", negative}}, path("bad.urdf"));
                       }),
                       {"link base", "mass"}));
  EXPECT_FALSE(fs::exists(path("bad.urdf")));
  EXPECT_TRUE(
      mentions(inputErrorOf([&] {
                 writeUrdfInertials(copy, {{"trunk", good}, {"tail", good}}, path("bad.urdf"));
               }),
               {"no <link> named tail, trunk"}));
}

TEST_F(IoTest, UrdfWriterAddsMissingInertialElements) {
  const std::string urdf = R"(<?xml version="1.0"?>
<!-- <link name="commented"/> must be ignored -->
<robot name="toy">
  <link name="world_link"/>
  <link name="a">
    <inertial>
      <origin xyz="0 0 0.1" rpy="0.3 -0.1 0.2"/>
      <mass value="1"/>
      <inertia ixx="0.1" ixy="0" ixz="0" iyy="0.1" iyz="0" izz="0.1"/>
    </inertial>
  </link>
  <joint name="j1" type="revolute">
    <parent link="world_link"/><child link="a"/>
    <axis xyz="0 0 1"/><limit lower="-1" upper="1" effort="1" velocity="1"/>
  </joint>
  <link name="b">
  </link>
  <joint name="j2" type="revolute">
    <origin xyz="0 0 0.5" rpy="0 0 0"/>
    <parent link="a"/><child link="b"/>
    <axis xyz="0 1 0"/><limit lower="-1" upper="1" effort="1" velocity="1"/>
  </joint>
  <link name="c"><inertial><mass value="0.1"/><inertia ixx="1e-4" ixy="0" ixz="0" iyy="1e-4" iyz="0" izz="1e-4"/></inertial></link>
  <joint name="j3" type="fixed"><origin xyz="0.2 0 0"/><parent link="b"/><child link="c"/></joint>
</robot>
)";
  std::ofstream(path("toy.urdf")) << urdf;
  const Vector10 pa =
      inertia::piFromMassComInertia(2.0, Vector3(0.1, 0, 0), Vector3(0.2, 0.3, 0.4).asDiagonal());
  const Vector10 pb = inertia::piFromMassComInertia(0.5, Vector3(0, 0, 0.25),
                                                    Vector3(0.01, 0.01, 0.001).asDiagonal());
  const Vector10 pc = inertia::piFromMassComInertia(0.2, Vector3(0.01, 0.02, 0),
                                                    Vector3(1e-4, 2e-4, 2.5e-4).asDiagonal());
  writeUrdfInertials(path("toy.urdf"), {{"a", pa}, {"b", pb}, {"c", pc}, {"world_link", pb}},
                     path("toy_out.urdf"));
  const auto back = readUrdfInertials(path("toy_out.urdf"));
  // a kept its rotated inertial frame (the inertia is written in it), c gained an <origin>
  EXPECT_EQ(back.at("a").rpy, Vector3(0.3, -0.1, 0.2));
  EXPECT_LT((back.at("a").pi() - pa).cwiseAbs().maxCoeff(), 1e-15);
  EXPECT_LT((back.at("c").pi() - pc).cwiseAbs().maxCoeff(), 1e-15);
  EXPECT_LT((back.at("b").pi() - pb).cwiseAbs().maxCoeff(), 1e-15);
  EXPECT_LT((back.at("world_link").pi() - pb).cwiseAbs().maxCoeff(), 1e-15);
  EXPECT_FALSE(back.count("commented"));
  const pinocchio::Model model = loadUrdf(path("toy_out.urdf"), false);
  // Pinocchio reads the new values: j1 carries a, j2 carries b plus c (fixed 0.2 m along x)
  EXPECT_LT(
      (model.inertias[model.getJointId("j1")].toDynamicParameters() - pa).cwiseAbs().maxCoeff(),
      1e-15);
  const pinocchio::SE3 c_in_b(Matrix3::Identity(), Vector3(0.2, 0, 0));
  const Vector10 j2_body =
      pb + c_in_b.act(pinocchio::Inertia::FromDynamicParameters(pc)).toDynamicParameters();
  EXPECT_LT((model.inertias[model.getJointId("j2")].toDynamicParameters() - j2_body)
                .cwiseAbs()
                .maxCoeff(),
            1e-15);
  // malformed XML names the line
  std::ofstream(path("broken.urdf")) << "<robot name=\"x\">\n  <link name=\"a\">\n  </robot>\n";
  EXPECT_TRUE(mentions(inputErrorOf([&] { readUrdfInertials(path("broken.urdf")); }),
                       {"broken.urdf:3:", "</robot> closes <link>"}));
}
