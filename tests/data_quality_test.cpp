// heft::io::assessDataQuality on synthetic logs with one known defect each, and its section in
// heft validate-log (ValidateLogJob) on a bundled fixture.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include <Eigen/Geometry>
#include <pinocchio/multibody/model.hpp>

#include "heft/common/error.hpp"
#include "heft/io/data_quality.hpp"
#include "heft/io/log.hpp"
#include "heft/io/log_io.hpp"
#include "heft/io/validation.hpp"
#include "heft/jobs/inspect_jobs.hpp"
#include "heft/results/json.hpp"
#include "support/scratch.hpp"

namespace heft::io {
namespace {

constexpr double kPi = 3.14159265358979323846;
constexpr int kJoints = 3;
// q_j = A_j sin(2 pi f_j t + phi_j): slow arm-like motions (|v| <= 1.8 rad/s)
const double kAmplitude[kJoints] = {0.5, 0.4, 0.3};
const double kFrequency[kJoints] = {0.5, 0.7, 0.3};
const double kPhase[kJoints] = {0.0, 1.0, 2.0};

// The state of joint j at real time t, shifted by `offset` [rad] (a recording made elsewhere).
double jointQ(int j, double t, double offset = 0) {
  return offset + kAmplitude[j] * std::sin(2 * kPi * kFrequency[j] * t + kPhase[j]);
}
double jointV(int j, double t) {
  const double w = 2 * kPi * kFrequency[j];
  return kAmplitude[j] * w * std::cos(w * t + kPhase[j]);
}
double jointTau(int j, double t) {
  return 3 * std::sin(2 * kPi * kFrequency[j] * t + kPhase[j] + 0.5);
}

// A fixed-base log of three joints sampled at the real times `t`, stamped with `stamps`.
Log sineLog(const Eigen::VectorXd& t, const Eigen::VectorXd& stamps,
            const std::vector<double>& offsets = {}) {
  Log log;
  log.meta.robot = "synthetic";
  JointSeries& js = log.joints;
  js.time = stamps;
  js.names = {"j0", "j1", "j2"};
  const Eigen::Index n = t.size();
  js.q.resize(n, kJoints);
  js.v.resize(n, kJoints);
  js.tau.resize(n, kJoints);
  for (Eigen::Index i = 0; i < n; ++i) {
    const double offset = offsets.empty() ? 0 : offsets[static_cast<std::size_t>(i)];
    for (int j = 0; j < kJoints; ++j) {
      js.q(i, j) = jointQ(j, t(i), offset);
      js.v(i, j) = jointV(j, t(i));
      js.tau(i, j) = jointTau(j, t(i));
    }
  }
  return log;
}
Log sineLog(const Eigen::VectorXd& t) { return sineLog(t, t); }

Eigen::VectorXd uniformTime(Eigen::Index n, double dt) {
  return Eigen::VectorXd::LinSpaced(n, 0, dt * static_cast<double>(n - 1));
}

// Non-uniform but clean: steps 0.7..1.3 ms, inside the default jitter band [1 / 1.5, 1.5].
Eigen::VectorXd wobblyTime(Eigen::Index n) {
  Eigen::VectorXd t(n);
  t(0) = 0;
  for (Eigen::Index i = 1; i < n; ++i)
    t(i) = t(i - 1) + 1e-3 * (1 + 0.3 * std::sin(0.7 * static_cast<double>(i)));
  return t;
}

const DataQualityFinding& findingOf(const DataQualityReport& r, const std::string& check) {
  for (const auto& f : r.findings)
    if (f.check == check) return f;
  throw std::runtime_error("no finding " + check);
}

std::vector<std::string> warningChecks(const DataQualityReport& r) {
  std::vector<std::string> checks;
  for (const auto& f : r.findings)
    if (f.severity == Severity::Warning) checks.push_back(f.check);
  return checks;
}

// Trapezoid integration of a sine of angular rate w over a step h has relative error
// (w h)^2 / 12: below 2e-4 for every log here (w <= 4.4 rad/s, h <= 10 ms), so a clock factor
// (a ratio of sums) is within 1e-3 relative of its true value.
constexpr double kFactorTolerance = 1e-3;

TEST(DataQuality, CleanNonUniformLogHasNoWarnings) {
  const Log log = sineLog(wobblyTime(3000));
  const DataQualityReport r = assessDataQuality(log);
  EXPECT_TRUE(r.ok()) << r.report();
  EXPECT_EQ(r.warnings(), 0);
  EXPECT_EQ(r.samples, 3000);
  EXPECT_EQ(r.held.rows, 0);
  EXPECT_EQ(r.time_steps.jittered, 0);
  EXPECT_EQ(r.time_steps.gaps, 0);
  EXPECT_GT(r.time_steps.spread, 0.05);  // non-uniform, yet inside the band
  EXPECT_EQ(r.rate_segments.size(), 1u);
  EXPECT_TRUE(r.saturation.empty());
  EXPECT_NEAR(r.position_velocity.clock_factor, 1, kFactorTolerance);
  ASSERT_EQ(r.position_velocity.joints.size(), 3u);
  for (const auto& joint : r.position_velocity.joints) {
    EXPECT_TRUE(joint.judged) << joint.name;
    EXPECT_LT(joint.disagreement, 1e-3) << joint.name;
    EXPECT_EQ(joint.jumps, 0) << joint.name;
  }
  EXPECT_TRUE(r.position_velocity.segments.empty());
  EXPECT_NE(r.report().find("no warnings"), std::string::npos) << r.report();
}

TEST(DataQuality, HeldRowsAreCountedAsOneRunAndTheirEndIsAJump) {
  Log log = sineLog(uniformTime(2000, 1e-3));
  JointSeries& js = log.joints;
  for (int i = 500; i < 550; ++i) {  // a logger holding row 499 for 50 samples
    js.q.row(i) = js.q.row(499);
    js.v.row(i) = js.v.row(499);
    js.tau.row(i) = js.tau.row(499);
  }
  const DataQualityReport r = assessDataQuality(log);
  EXPECT_EQ(r.held.rows, 50);
  EXPECT_EQ(r.held.runs, 1);
  EXPECT_EQ(r.held.longest_run, 50);
  EXPECT_EQ(r.held.longest_run_first, 500);
  EXPECT_EQ(r.held.run_first, std::vector<long>{500});
  const DataQualityFinding& held = findingOf(r, "held-samples");
  EXPECT_EQ(held.severity, Severity::Warning);
  EXPECT_EQ(held.count, 50);
  EXPECT_EQ(held.rows, std::vector<long>{500});
  // held steps are left out of the clock: it stays right
  EXPECT_NEAR(r.position_velocity.clock_factor, 1, kFactorTolerance);
  // leaving the hold, j1 (|v| = 1.75 rad/s at t = 0.5 s) catches up 51 ms of motion at once;
  // j0 is at a turning point (v = 0) and moves too little to jump
  const PositionVelocityChannel& j1 = r.position_velocity.joints[1];
  ASSERT_EQ(j1.jumps, 1);
  EXPECT_EQ(j1.jump_rows, std::vector<long>{550});
  EXPECT_NEAR(j1.largest_jump, std::abs(js.q(550, 1) - js.q(549, 1)), 0.01);
  EXPECT_EQ(r.position_velocity.joints[0].jumps, 0);
  EXPECT_EQ(r.position_velocity.joint_jump_rows, 1);
  EXPECT_EQ(findingOf(r, "position-jumps").count, 1);
  EXPECT_EQ(findingOf(r, "position-jumps").rows.front(), 550);
}

TEST(DataQuality, TenfoldClockErrorIsEstimated) {
  // 100 Hz samples stamped on a 1 kHz clock
  const Eigen::VectorXd real = uniformTime(1000, 1e-2);
  const Log log = sineLog(real, uniformTime(1000, 1e-3));
  const DataQualityReport r = assessDataQuality(log);
  EXPECT_NEAR(r.position_velocity.clock_factor, 10, 10 * kFactorTolerance);
  for (const auto& joint : r.position_velocity.joints) {
    EXPECT_TRUE(joint.judged) << joint.name;
    // || 10 Iv - Iv || / || 10 Iv || = 0.9
    EXPECT_NEAR(joint.disagreement, 0.9, 1e-3) << joint.name;
    EXPECT_NEAR(joint.clock_factor, 10, 10 * kFactorTolerance) << joint.name;
    EXPECT_EQ(joint.jumps, 0) << joint.name;
  }
  EXPECT_EQ(warningChecks(r), (std::vector<std::string>{"position-velocity", "clock-factor"}))
      << r.report();
  EXPECT_EQ(findingOf(r, "position-velocity").count, 3);
  EXPECT_NEAR(r.time_steps.median, 1e-3, 1e-12);  // the stamps alone look perfect
}

TEST(DataQuality, VelocityOfTheWrongSignOrJointIsJudgedAndReported) {
  Log log = sineLog(uniformTime(2000, 1e-3));
  log.joints.v.col(0) *= -1;                  // a sign error
  log.joints.v.col(2) = log.joints.v.col(1);  // another joint's velocity
  const DataQualityReport r = assessDataQuality(log);
  const auto& joints = r.position_velocity.joints;
  ASSERT_TRUE(joints[0].judged);
  EXPECT_NEAR(joints[0].disagreement, 2, 1e-3);  // || Dq + Dq || / || Dq ||
  EXPECT_NEAR(joints[0].clock_factor, -1, kFactorTolerance);
  ASSERT_TRUE(joints[2].judged);  // judged on its noise, not on how q and v relate
  EXPECT_GT(joints[2].disagreement, 0.5);
  EXPECT_LT(joints[1].disagreement, 1e-3);
  const DataQualityFinding& f = findingOf(r, "position-velocity");
  EXPECT_EQ(f.severity, Severity::Warning);
  EXPECT_EQ(f.count, 2);
}

// A free-flyer log joined from three recordings (200 Hz, 100 Hz, 100 Hz), all stamped on a 1 kHz
// clock, the joints offset by 0.3 rad in the second and -0.3 rad in the third, and the base
// position 3.44 m away from the second recording on.
Log joinedRecordings() {
  const int n = 1000;
  Eigen::VectorXd real(n);
  std::vector<double> offsets(n);
  for (int i = 0; i < n; ++i) {
    real(i) = i < 400 ? 5e-3 * i : 2.0 + 1e-2 * (i - 400);
    offsets[static_cast<std::size_t>(i)] = i < 400 ? 0.0 : i < 700 ? 0.3 : -0.3;
  }
  Log log = sineLog(real, uniformTime(n, 1e-3), offsets);
  log.meta.base_type = BaseType::FreeFlyer;
  JointSeries& js = log.joints;
  js.base_pose.resize(n, 7);
  js.base_twist.resize(n, 6);
  for (int i = 0; i < n; ++i) {
    const double t = real(i), yaw = 0.3 * t;
    const Eigen::Vector3d p(0.5 * t + (i >= 400 ? 3.44 : 0.0), 0.2 * std::sin(0.8 * t), 0.3);
    const Eigen::Vector3d p_dot(0.5, 0.16 * std::cos(0.8 * t), 0);
    const Eigen::Quaterniond r(Eigen::AngleAxisd(yaw, Eigen::Vector3d::UnitZ()));
    js.base_pose.row(i) << p.transpose(), r.x(), r.y(), r.z(), r.w();
    js.base_twist.row(i) << (r.conjugate() * p_dot).transpose(), 0, 0, 0.3;
  }
  return log;
}

TEST(DataQuality, JoinedRecordingsShowTheirJoinsAndEachClockFactor) {
  const Log log = joinedRecordings();
  ASSERT_TRUE(validateLog(log).ok()) << validateLog(log).report();
  const DataQualityReport r = assessDataQuality(log);
  const PositionVelocity& pv = r.position_velocity;
  // the stamps are uniform: only the positions show the three recordings
  EXPECT_EQ(r.rate_segments.size(), 1u);
  for (const auto& joint : pv.joints) {
    ASSERT_EQ(joint.jumps, 2) << joint.name;
    EXPECT_EQ(std::min(joint.jump_rows[0], joint.jump_rows[1]), 400) << joint.name;
    EXPECT_EQ(std::max(joint.jump_rows[0], joint.jump_rows[1]), 700) << joint.name;
  }
  EXPECT_EQ(pv.joint_jump_rows, 2);
  ASSERT_EQ(pv.segments.size(), 3u);
  EXPECT_EQ(pv.segments[0].first_row, 0);
  EXPECT_EQ(pv.segments[0].last_row, 399);
  EXPECT_EQ(pv.segments[1].first_row, 400);
  EXPECT_EQ(pv.segments[2].first_row, 700);
  EXPECT_EQ(pv.segments[2].last_row, 999);
  EXPECT_NEAR(pv.segments[0].clock_factor, 5, 5 * kFactorTolerance);
  EXPECT_NEAR(pv.segments[1].clock_factor, 10, 10 * kFactorTolerance);
  EXPECT_NEAR(pv.segments[2].clock_factor, 10, 10 * kFactorTolerance);
  EXPECT_GT(pv.clock_factor, 5);
  EXPECT_LT(pv.clock_factor, 10);
  // the base: one jump of 3.44 m (less the 2.5 mm it moved in that step, plus what c iv
  // subtracts: within 1 cm)
  ASSERT_TRUE(pv.has_base);
  EXPECT_EQ(pv.base.jumps, 1);
  EXPECT_EQ(pv.base.jump_rows, std::vector<long>{400});
  EXPECT_NEAR(pv.base.largest_jump, 3.44, 0.01);
  EXPECT_TRUE(pv.base.judged);
  EXPECT_GT(pv.base.clock_factor, 5);
  EXPECT_LT(pv.base.clock_factor, 10);
  EXPECT_EQ(warningChecks(r),
            (std::vector<std::string>{"position-velocity", "clock-factor", "position-jumps",
                                      "base-position-velocity"}))
      << r.report();
  EXPECT_EQ(findingOf(r, "base-position-velocity").rows, std::vector<long>{400});
}

TEST(DataQuality, BaseThatFollowsItsTwistIsClean) {
  // the motion of joinedRecordings, as one recording at 1 kHz, rightly stamped
  const int n = 1000;
  const Eigen::VectorXd t = uniformTime(n, 1e-3);
  Log clean = sineLog(t);
  clean.meta.base_type = BaseType::FreeFlyer;
  clean.joints.base_pose.resize(n, 7);
  clean.joints.base_twist.resize(n, 6);
  for (int i = 0; i < n; ++i) {
    const double yaw = 0.3 * t(i);
    const Eigen::Vector3d p(0.5 * t(i), 0.2 * std::sin(0.8 * t(i)), 0.3);
    const Eigen::Vector3d p_dot(0.5, 0.16 * std::cos(0.8 * t(i)), 0);
    const Eigen::Quaterniond r(Eigen::AngleAxisd(yaw, Eigen::Vector3d::UnitZ()));
    clean.joints.base_pose.row(i) << p.transpose(), r.x(), r.y(), r.z(), r.w();
    clean.joints.base_twist.row(i) << (r.conjugate() * p_dot).transpose(), 0, 0, 0.3;
  }
  const DataQualityReport r = assessDataQuality(clean);
  EXPECT_TRUE(r.ok()) << r.report();
  EXPECT_TRUE(r.position_velocity.base.judged);
  EXPECT_NEAR(r.position_velocity.base.clock_factor, 1, kFactorTolerance);
  EXPECT_LT(r.position_velocity.base.disagreement, 1e-3);
}

pinocchio::Model threeJointModel() {
  pinocchio::Model model;
  pinocchio::JointIndex parent = 0;
  for (int j = 0; j < kJoints; ++j) {
    parent = model.addJoint(parent, pinocchio::JointModelRZ(), pinocchio::SE3::Identity(),
                            "j" + std::to_string(j));
  }
  model.lowerEffortLimit = Eigen::Vector3d(-100, -3.5, -5.5);
  model.upperEffortLimit = Eigen::Vector3d(100, 3.5, 5.5);
  return model;
}

TEST(DataQuality, TorqueHeldAtItsExtremeIsSaturatedAndLimitsAreCounted) {
  Log log = sineLog(uniformTime(2000, 1e-3));
  JointSeries& js = log.joints;
  js.tau.block(300, 1, 60, 1).setConstant(4.0);  // |3 sin| < 4 elsewhere
  js.tau.block(1300, 1, 40, 1).setConstant(4.0);
  js.tau.block(800, 2, 5, 1).setConstant(6.0);  // a 5-sample peak: too short to be a clamp
  const DataQualityReport r = assessDataQuality(log, threeJointModel());
  ASSERT_EQ(r.saturation.size(), 1u) << r.report();
  EXPECT_EQ(r.saturation[0].joint, "j1");
  EXPECT_EQ(r.saturation[0].value, 4.0);
  EXPECT_EQ(r.saturation[0].samples, 100);
  EXPECT_EQ(r.saturation[0].longest_run, 60);
  EXPECT_EQ(r.saturation[0].first_row, 300);
  const DataQualityFinding& saturation = findingOf(r, "saturation");
  EXPECT_EQ(saturation.severity, Severity::Warning);
  EXPECT_EQ(saturation.count, 100);
  ASSERT_TRUE(r.effort_limits_checked);
  ASSERT_EQ(r.effort_limits.size(), 2u);
  EXPECT_EQ(r.effort_limits[0].joint, "j1");
  EXPECT_EQ(r.effort_limits[0].samples, 100);
  EXPECT_EQ(r.effort_limits[0].first_row, 300);
  EXPECT_EQ(r.effort_limits[1].joint, "j2");
  EXPECT_EQ(r.effort_limits[1].samples, 5);
  EXPECT_EQ(r.effort_limits[1].max_abs, 6.0);
  EXPECT_EQ(warningChecks(r), (std::vector<std::string>{"saturation", "effort-limits"}))
      << r.report();
  // without a model there is no limit check
  EXPECT_FALSE(assessDataQuality(log).effort_limits_checked);
}

TEST(DataQuality, RateChangeSplitsTheLogWhereTheStepChanges) {
  // 200 steps of 5 ms, then 300 of 10 ms: the step into row 201 is the first at 100 Hz
  Eigen::VectorXd t(501);
  t(0) = 0;
  for (int i = 1; i <= 500; ++i) t(i) = t(i - 1) + (i <= 200 ? 5e-3 : 1e-2);
  const DataQualityReport r = assessDataQuality(sineLog(t));
  ASSERT_EQ(r.rate_segments.size(), 2u);
  EXPECT_EQ(r.rate_segments[0].first_row, 0);
  EXPECT_EQ(r.rate_segments[0].last_row, 200);
  EXPECT_NEAR(r.rate_segments[0].median_step, 5e-3, 1e-12);
  EXPECT_EQ(r.rate_segments[1].first_row, 201);
  EXPECT_EQ(r.rate_segments[1].last_row, 500);
  EXPECT_NEAR(r.rate_segments[1].median_step, 1e-2, 1e-12);
  // jitter is measured against each segment's own median
  EXPECT_EQ(r.time_steps.jittered, 0);
  EXPECT_EQ(warningChecks(r), std::vector<std::string>{"rate-changes"}) << r.report();
  EXPECT_EQ(findingOf(r, "rate-changes").rows, std::vector<long>{201});
  EXPECT_NEAR(r.position_velocity.clock_factor, 1, kFactorTolerance);
}

TEST(DataQuality, JitterAndGapsAreCountedAgainstTheMedianStep) {
  Eigen::VectorXd t(1000);
  t(0) = 0;
  for (int i = 1; i < 1000; ++i) {
    double step = 1e-3;
    if (i == 100 || i == 200) step = 2e-3;  // jitter: > 1.5 x, < 2.5 x the median
    if (i == 300) step = 0.5e-3;            // jitter: < median / 1.5
    if (i == 400) step = 5e-3;              // a gap: > 2.5 x
    t(i) = t(i - 1) + step;
  }
  const DataQualityReport r = assessDataQuality(sineLog(t));
  const TimeSteps& s = r.time_steps;
  EXPECT_NEAR(s.median, 1e-3, 1e-12);
  EXPECT_EQ(s.jittered, 3);
  EXPECT_EQ(s.jittered_rows, (std::vector<long>{100, 200, 300}));
  EXPECT_EQ(s.gaps, 1);
  EXPECT_EQ(s.gap_rows, std::vector<long>{400});
  EXPECT_NEAR(s.gap_time, 5e-3, 1e-12);
  EXPECT_EQ(s.min_row, 300);
  EXPECT_EQ(s.max_row, 400);
  EXPECT_NEAR(s.max, 5e-3, 1e-12);
  EXPECT_EQ(warningChecks(r), (std::vector<std::string>{"jitter", "gaps"})) << r.report();
}

TEST(DataQuality, ClockResetsAreTheRowsValidationRejects) {
  Log log = sineLog(uniformTime(1000, 1e-3));
  Eigen::VectorXd& t = log.joints.time;
  for (int i = 600; i < 1000; ++i) t(i) = 1e-3 * (i - 600);  // the clock restarts at row 600
  t(800) = t(799);                                           // and repeats a stamp at row 800
  const DataQualityReport r = assessDataQuality(log);
  EXPECT_EQ(r.time_steps.backwards, 1);
  EXPECT_EQ(r.time_steps.duplicated, 1);
  EXPECT_EQ(r.time_steps.order_rows, (std::vector<long>{600, 800}));
  std::vector<long> rejected;
  for (const ValidationIssue& e : validateLog(log).errors)
    if (e.field == "joints/time") rejected.push_back(static_cast<long>(e.row));
  EXPECT_EQ(r.time_steps.order_rows, rejected);
  const DataQualityFinding& order = findingOf(r, "time-order");
  EXPECT_EQ(order.severity, Severity::Warning);
  EXPECT_EQ(order.count, 2);
}

TEST(DataQuality, OptionsOutOfRangeNameTheField) {
  const auto message = [](DataQualityOptions o) {
    try {
      o.validate();
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  DataQualityOptions o;
  EXPECT_NO_THROW(o.validate());
  o.jitter_factor = 1.0;
  EXPECT_NE(message(o).find("DataQualityOptions.jitter_factor"), std::string::npos);
  o = {};
  o.gap_factor = 1.2;  // below the jitter factor
  EXPECT_NE(message(o).find("DataQualityOptions.gap_factor"), std::string::npos);
  o = {};
  o.saturation_run = 1;
  EXPECT_NE(message(o).find("DataQualityOptions.saturation_run"), std::string::npos);
  o = {};
  o.consistency_threshold = 2.0;
  EXPECT_NE(message(o).find("DataQualityOptions.consistency_threshold"), std::string::npos);
  o = {};
  o.min_jump = -1;
  EXPECT_NE(message(o).find("DataQualityOptions.min_jump"), std::string::npos);
  Log log = sineLog(uniformTime(10, 1e-3));
  log.joints.v.resize(9, 3);
  EXPECT_THROW(assessDataQuality(log), InputError);
}

TEST(DataQuality, JsonHoldsEveryFinding) {
  const nlohmann::json j = results::dataQualityJson(assessDataQuality(joinedRecordings()));
  EXPECT_FALSE(j["ok"].get<bool>());
  EXPECT_EQ(j["samples"].get<long>(), 1000);
  EXPECT_EQ(j["findings"].size(), 11u);  // every check, with a base and without a model
  EXPECT_EQ(j["position_velocity"]["base"]["jump_rows"][0].get<long>(), 400);
  EXPECT_TRUE(j["effort_limits"].is_null());
  EXPECT_NEAR(j["position_velocity"]["segments"][0]["clock_factor"].get<double>(), 5, 0.01);
}

// ---- heft validate-log
// ---------------------------------------------------------------------------

jobs::ValidateLogJob::Result validatePanda(const std::string& log) {
  jobs::ValidateLogJob::Config config;
  config.model = "panda";
  config.log = log;
  return jobs::ValidateLogJob::run(config);
}

const std::string kPandaFixture =
    std::string(HEFT_SOURCE_DIR) + "/data/fixtures/sim_panda_friction_2s.h5";

TEST(ValidateLogJob, BundledFixtureHasNoDataQualityWarning) {
  const auto result = validatePanda(kPandaFixture);
  ASSERT_TRUE(result.ok) << result.report;
  ASSERT_TRUE(result.data_quality);
  EXPECT_TRUE(result.data_quality->ok()) << result.report;
  EXPECT_NE(result.report.find("data quality (joints, 2001 samples): no warnings"),
            std::string::npos)
      << result.report;
  EXPECT_TRUE(result.json["data_quality"]["ok"].get<bool>());
  EXPECT_TRUE(result.json["valid"].get<bool>());
}

TEST(ValidateLogJob, HeldRowsAreAWarningOfAValidLog) {
  Log log = readLog(kPandaFixture);
  JointSeries& js = log.joints;
  for (int i = 1000; i < 1050; ++i) {
    js.q.row(i) = js.q.row(999);
    js.v.row(i) = js.v.row(999);
    js.tau.row(i) = js.tau.row(999);
  }
  const auto path = test::scratchPath("data_quality", "held-" + std::to_string(::getpid()) + ".h5");
  writeLog(log, path.string());
  const auto result = validatePanda(path.string());
  ASSERT_TRUE(result.ok) << result.report;  // still valid: findings are warnings
  ASSERT_TRUE(result.data_quality);
  EXPECT_EQ(result.data_quality->held.rows, 50);
  EXPECT_NE(result.report.find("  warning  held samples: 50 row(s) repeat the previous row "
                               "exactly (q, v, tau), in 1 run(s), longest 50 from row 1000"),
            std::string::npos)
      << result.report;
  EXPECT_FALSE(result.json["data_quality"]["ok"].get<bool>());
}

}  // namespace
}  // namespace heft::io
