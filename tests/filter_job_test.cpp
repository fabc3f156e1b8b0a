// The `heft filter` job (heft/jobs/filter_job.hpp) on MuJoCo logs: a different simulator, payloads
// and mass changes the filter is not told about. These are the filter's claims, measured on the
// bundled example configs (data/examples/talos_*_filter.yaml) with a seed the defaults were not
// tuned on (docs/filter.md, Tuning): the forearm payload step, the torso mass wave while stepping
// with and without innovation gating; plus config errors and the output rules. The claims isolate
// the filter: the base state and the contact forces come from the truth group there (a study's
// right, said in each case); the bundled examples themselves read no truth, and one case runs the
// forearm example as a user would, with heft's own base state and the F/T sensors.
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <string>

#include "heft/common/error.hpp"
#include "heft/filter/measurement.hpp"
#include "heft/io/joint_binding.hpp"
#include "heft/io/log_io.hpp"
#include "heft/jobs/filter_job.hpp"
#include "heft/model/robots.hpp"
#include "heft/sim/scenario.hpp"
#include "support/scratch.hpp"
#include "support/simulated_log.hpp"

namespace heft::filter {
namespace {

using jobs::FilterJob;

namespace fs = std::filesystem;

fs::path scratch(const std::string& name) { return test::scratchPath("filter_job", name); }

// One MuJoCo log per test process (ctest runs the cases as parallel processes).
std::string simulatedLog(const std::string& scenario, std::uint64_t seed) {
  const fs::path path =
      scratch(scenario + "_" + std::to_string(seed) + "_" + std::to_string(::getpid()) + ".h5");
  const sim::SimulationSummary summary =
      test::writeSimulatedLog(scenario, seed, "nominal", path.string());
  EXPECT_TRUE(summary.ok()) << summary.report();
  return path.string();
}

FilterJob::Config exampleConfig(const std::string& name, const std::string& log) {
  FilterJob::Config config =
      FilterJob::load(std::string(HEFT_SOURCE_DIR) + "/data/examples/" + name);
  config.log = log;
  return config;
}

// The example with the base state and the contact forces (at the sole corners the example lists)
// from the truth group: measures the filter alone, free of the base-state estimator's errors.
FilterJob::Config filterOnlyConfig(const std::string& name, const std::string& log) {
  FilterJob::Config config = exampleConfig(name, log);
  config.base_state = FilterJob::BaseStateSource::Truth;
  config.contact_forces = FilterJob::ContactForceSource::Truth;
  return config;
}

const BodyMetrics& onlyBody(const FilterRunSummary& run) {
  EXPECT_EQ(run.bodies.size(), 1u);
  return run.bodies.at(0);
}

std::string errorOf(const std::string& yaml) {
  try {
    FilterJob::parse(yaml, "job.yaml", ".");
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

TEST(FilterJobConfig, ErrorsNameFileLineAndField) {
  const std::string base = "robot: talos\nlog: x.h5\nbodies: [torso_2_link]\n";
  EXPECT_NO_THROW(FilterJob::parse(base, "job.yaml", "."));
  EXPECT_NE(errorOf("robot: talos\nlog: x.h5\n").find("bodies"), std::string::npos);

  const std::string typo = errorOf(base + "filter:\n  gatting: true\n");
  EXPECT_NE(typo.find("job.yaml:5: filter.gatting: unknown key"), std::string::npos) << typo;

  const std::string state = errorOf(base + "state: kalman\n");
  EXPECT_EQ(state.rfind("job.yaml:4: state: ", 0), 0u) << state;
  EXPECT_NE(state.find("log-cholesky or linear-pi"), std::string::npos) << state;

  const std::string width = errorOf(base + "filter:\n  difference_half_width: 0\n");
  EXPECT_NE(
      width.find("job.yaml:5: filter.difference_half_width: expected an integer in [1, 1000]"),
      std::string::npos)
      << width;
  const std::string gate = errorOf(base + "filter:\n  gating: true\n  gate_probability: 1.5\n");
  EXPECT_NE(gate.find("job.yaml:6: filter.gate_probability: expected a probability in (0, 1)"),
            std::string::npos)
      << gate;

  const std::string frame = errorOf(base + "contacts:\n  - {name: a, offset: [0, 0, 0]}\n");
  EXPECT_NE(frame.find("contacts[0].frame"), std::string::npos) << frame;

  const std::string forces = errorOf(base + "contact_forces: truth\n");
  EXPECT_NE(forces.find("contacts"), std::string::npos) << forces;
}

TEST(FilterJobConfig, BundledExamplesParse) {
  int found = 0;
  for (const auto& entry :
       fs::directory_iterator(fs::path(HEFT_SOURCE_DIR) / "data" / "examples")) {
    const std::string name = entry.path().filename().string();
    const std::string suffix = "_filter.yaml";
    if (name.size() < suffix.size() || name.substr(name.size() - suffix.size()) != suffix) continue;
    const FilterJob::Config config = FilterJob::load(entry.path().string());
    EXPECT_EQ(config.robot, "talos") << name;
    EXPECT_EQ(config.contacts.size(), 8u) << name;
    EXPECT_NE(config.log.find("build/demo"), std::string::npos) << config.log;
    // a bundled example reads nothing from the truth group: a real log has none
    EXPECT_NE(config.base_state, FilterJob::BaseStateSource::Truth) << name;
    EXPECT_NE(config.contact_forces, FilterJob::ContactForceSource::Truth) << name;
    EXPECT_TRUE(config.level_ground) << name;
    ++found;
  }
  EXPECT_EQ(found, 2);
}

// The first claim: a 5.4 kg payload appears on the forearm during elbow curls; the mass
// estimate is within 3 % within 1 s of the step (counted from the step to the time the estimate
// is available, the differentiation delay included) and stays there, every estimate physically
// consistent. The linear KF on pi, same data and tuning, leaves the consistent set.
TEST(FilterJob, ForearmPayloadTrackedWithinOneSecondAndAlwaysConsistent) {
  const FilterJob::Config config =
      filterOnlyConfig("talos_forearm_filter.yaml", simulatedLog("talos-forearm-step", 1));
  const FilterJob::Result result = FilterJob::run(config);
  ASSERT_EQ(result.summaries.size(), 2u);
  const FilterRunSummary& ekf = result.summaries[0];
  const FilterRunSummary& baseline = result.summaries[1];
  EXPECT_EQ(ekf.estimator, "log-cholesky-ekf");
  EXPECT_EQ(ekf.counters.failures, 0);
  EXPECT_EQ(ekf.inconsistent_time, 0.0) << result.report();
  const BodyMetrics& forearm = onlyBody(ekf);
  ASSERT_EQ(forearm.steps.size(), 1u) << result.report();
  EXPECT_NEAR(forearm.steps[0].time, 6.0, 0.01);
  EXPECT_NEAR(forearm.steps[0].mass_after - forearm.steps[0].mass_before, 5.4, 1e-6);
  ASSERT_TRUE(forearm.steps[0].settle_time.has_value()) << result.report();
  EXPECT_LE(*forearm.steps[0].settle_time, 1.0) << result.report();
  EXPECT_NEAR(forearm.final.mass_estimate, forearm.final.mass_true, 0.03 * forearm.final.mass_true);
  EXPECT_GT(baseline.inconsistent_time, 1.0) << result.report();
  std::cout << result.report();
}

// The second claim: the torso mass follows a square wave while the robot steps, and foot impacts
// do not throw the estimate: the largest change within 0.3 s after a touchdown stays within 1 %
// of the 30 kg mean mass, gated or not. (The paper gates the innovation to cut impact spikes; in
// simulation those spikes came from averaging the torques and forces differently from what the
// slope does to the accelerations, 0.74-0.83 kg gated and about 2 kg ungated on seeds 0-3.
// With matched averaging they are 0.12-0.14 kg and the gate has no outlier left to cut:
// docs/filter.md, "Gating".)
TEST(FilterJob, ImpactTransientsStayWithinOnePercentWhileStepping) {
  FilterJob::Config config =
      filterOnlyConfig("talos_step_mass_wave_filter.yaml", simulatedLog("talos-step-mass-wave", 1));
  config.baseline = false;
  const FilterJob::Result gated = FilterJob::run(config);
  config.options.gating = false;
  const FilterJob::Result ungated = FilterJob::run(config);
  const BodyMetrics& with_gate = onlyBody(gated.summaries.at(0));
  const BodyMetrics& without_gate = onlyBody(ungated.summaries.at(0));
  EXPECT_GE(with_gate.touchdowns, 4) << gated.report();
  EXPECT_EQ(with_gate.touchdowns, without_gate.touchdowns);
  EXPECT_GT(gated.summaries[0].counters.gated, 0);
  EXPECT_EQ(ungated.summaries[0].counters.gated, 0);
  EXPECT_GT(without_gate.largest_impact_transient, 0);
  EXPECT_LE(with_gate.largest_impact_transient, 0.3) << gated.report();
  EXPECT_LE(without_gate.largest_impact_transient, 0.3) << ungated.report();
  EXPECT_EQ(with_gate.steps.size(), 5u);  // 35 -> 25 -> 35 ... kg at 2.5, 5, ..., 12.5 s
  EXPECT_LT(with_gate.mass_rms_relative, 0.05) << gated.report();
  EXPECT_EQ(gated.summaries[0].inconsistent_time, 0.0);
  std::cout << gated.report() << ungated.report();
}

// A talos-forearm-step log with the ankle F/T sensors (nominal noise, the whole 14 s) in the
// scratch folder: what the bundled forearm example reads.
std::string forearmLogWithSensors(std::uint64_t seed) {
  sim::SimulationOptions options;
  options.seed = seed;
  options.force_torque = true;
  const sim::SimulationResult run = sim::simulate(sim::findScenario("talos-forearm-step"), options);
  EXPECT_TRUE(run.summary.ok()) << run.summary.report();
  const std::string path =
      scratch("forearm_ft_" + std::to_string(seed) + "_" + std::to_string(::getpid()) + ".h5")
          .string();
  io::WriteOptions write;
  write.overwrite = true;
  io::writeLog(run.log, path, write);
  return path;
}

// What every no-truth forearm run must show: no input from the truth group, no numerical
// failure, every estimate consistent, the one payload step seen, the final mass within 3 %.
// Returns the forearm's metrics.
const BodyMetrics& expectSoundNoTruthForearmRun(const FilterJob::Result& result) {
  for (const std::string& w : result.warnings)
    EXPECT_EQ(w.find("truth group"), std::string::npos) << w;
  const FilterRunSummary& ekf = result.summaries.at(0);
  EXPECT_EQ(ekf.counters.failures, 0) << result.report();
  EXPECT_EQ(ekf.inconsistent_time, 0.0) << result.report();
  const BodyMetrics& forearm = onlyBody(ekf);
  EXPECT_EQ(forearm.steps.size(), 1u) << result.report();
  EXPECT_NEAR(forearm.final.mass_estimate, forearm.final.mass_true, 0.03 * forearm.final.mass_true)
      << result.report();
  return forearm;
}

// The forearm example as a user runs it, reading no truth: heft's base state (IMU, legs, contact
// flags, level floor; causal, as in a control loop) and the ankle F/T sensors, on a log simulated
// with --force-torque, seed 1 (h was chosen on seeds 0-3, the other defaults on seed 0). Every
// estimate consistent and the final mass within 3 %. The 1 s settle of the truth-fed case is not
// claimed here: on this seed the causal base state's slow velocity error keeps the mass within
// about 4 % after the step (7.7 s to settle; docs/filter.md), as on three of eight seeds.
TEST(FilterJob, ForearmExampleWithNoTruthInputStaysConsistentAndEndsWithinThreePercent) {
  const std::string path = forearmLogWithSensors(1);
  FilterJob::Config config = exampleConfig("talos_forearm_filter.yaml", path);
  config.baseline = false;
  const FilterJob::Result result = FilterJob::run(config);
  expectSoundNoTruthForearmRun(result);
  std::cout << result.report();
}

// The same example replayed offline with the smoothed base state (`smooth_base_state: true`), on
// a seed nothing was chosen on (9): with the F/T sensors and with the contact forces projected out
// (joints, IMU and contact flags only), the 5.4 kg step is within 3 % within 1 s and stays there,
// every estimate consistent. (The causal base state misses on this seed: 3.6 s, docs/filter.md.)
TEST(FilterJob, ForearmOfflineWithSmoothedBaseStateTracksTheStepWithinOneSecond) {
  const std::string path = forearmLogWithSensors(9);
  for (const auto forces :
       {FilterJob::ContactForceSource::Sensors, FilterJob::ContactForceSource::Projected}) {
    FilterJob::Config config = exampleConfig("talos_forearm_filter.yaml", path);
    config.baseline = false;
    config.smooth_base_state = true;
    config.contact_forces = forces;
    const FilterJob::Result result = FilterJob::run(config);
    const BodyMetrics& forearm = expectSoundNoTruthForearmRun(result);
    ASSERT_EQ(forearm.steps.size(), 1u) << result.report();
    ASSERT_TRUE(forearm.steps[0].settle_time.has_value()) << result.report();
    EXPECT_LE(*forearm.steps[0].settle_time, 1.0) << result.report();
  }
}

// A short TALOS log (the forearm scenario's first second, nominal noise) with F/T sensors.
io::Log shortTalosLogWithSensors() {
  sim::SimulationOptions options;
  options.duration = 1.0;
  options.seed = 3;
  options.force_torque = true;
  const sim::SimulationResult run = sim::simulate(sim::findScenario("talos-forearm-step"), options);
  EXPECT_TRUE(run.summary.ok()) << run.summary.report();
  return run.log;
}

std::string writeScratchLog(const io::Log& log, const std::string& name) {
  const std::string path = scratch(name + "_" + std::to_string(::getpid()) + ".h5").string();
  io::WriteOptions write;
  write.overwrite = true;
  io::writeLog(log, path, write);
  return path;
}

std::string runError(const FilterJob::Config& config) {
  try {
    FilterJob::run(config);
  } catch (const InputError& e) {
    return e.what();
  }
  return "(no InputError)";
}

// Without truth forces: the sensors' wrenches, or the contact forces projected out. Both run the
// whole log without failure, consistent, the forearm near its prior (no payload yet); bad input is
// one InputError naming the field.
TEST(FilterJob, SensorsAndProjectedContactForcesRunAndRefuseBadInput) {
  const io::Log log = shortTalosLogWithSensors();
  const std::string path = writeScratchLog(log, "talos_ft");
  FilterJob::Config config = filterOnlyConfig("talos_forearm_filter.yaml", path);
  config.baseline = false;
  for (const auto source :
       {FilterJob::ContactForceSource::Sensors, FilterJob::ContactForceSource::Projected}) {
    config.contact_forces = source;
    const FilterJob::Result result = FilterJob::run(config);
    const FilterRunSummary& ekf = result.summaries.at(0);
    EXPECT_GT(ekf.counters.updated, 300) << result.report();
    EXPECT_EQ(ekf.counters.failures, 0) << result.report();
    EXPECT_EQ(ekf.inconsistent_time, 0.0) << result.report();
    const BodyMetrics& forearm = onlyBody(ekf);
    EXPECT_NEAR(forearm.final.mass_estimate, forearm.final.mass_true, 0.1 * forearm.final.mass_true)
        << result.report();
  }
  // sensors on a log without the group
  io::Log without = log;
  without.force_torque.reset();
  config.log = writeScratchLog(without, "talos_no_ft");
  config.contact_forces = FilterJob::ContactForceSource::Sensors;
  EXPECT_NE(runError(config).find("force_torque: expected a force/torque group"), std::string::npos)
      << runError(config);
  // a sensor on a frame the robot lacks
  io::Log unknown = log;
  unknown.force_torque->frames[1] = "right_toe";
  config.log = writeScratchLog(unknown, "talos_bad_frame");
  EXPECT_NE(runError(config).find("force_torque/frames[1]: expected a frame of the robot, got "
                                  "\"right_toe\""),
            std::string::npos)
      << runError(config);
  // projected: flags that never touch down on a floating base, and no flags at all
  config.contact_forces = FilterJob::ContactForceSource::Projected;
  io::Log flying = log;
  flying.contacts->flags.setZero();
  config.log = writeScratchLog(flying, "talos_flying");
  EXPECT_NE(runError(config).find("contacts/flags: expected some contact of contacts: touching "
                                  "down"),
            std::string::npos)
      << runError(config);
  io::Log no_flags = log;
  no_flags.contacts.reset();
  config.log = writeScratchLog(no_flags, "talos_no_flags");
  EXPECT_NE(runError(config).find(": contacts: expected contact flags"), std::string::npos)
      << runError(config);
}

// The measurement against MuJoCo's own forces: on a noise-free log, with the true parameters and
// the true q, v, a, the residual Delta tau - Y pi with the F/T sensors' wrenches is as small as
// with the truth contact forces at the sole corners (the example config's points), on every row.
// The sensors take each force where it acts (the sphere bottom), so they may only do better; the
// margin allows 5 % plus 0.01 N (N m) for rounding.
TEST(FilterJob, SensorWrenchResidualIsAsSmallAsWithTruthForces) {
  sim::SimulationOptions options;
  options.duration = 1.0;
  options.noise = "none";
  options.force_torque = true;
  const sim::SimulationResult run = sim::simulate(sim::findScenario("talos-forearm-step"), options);
  ASSERT_TRUE(run.summary.ok()) << run.summary.report();
  const io::Log& log = run.log;
  const FilterJob::Config config = exampleConfig("talos_forearm_filter.yaml", "unused.h5");
  const pinocchio::Model model = model::loadRobot("talos").pinocchio();
  const std::vector<pinocchio::JointIndex> bodies{model.getJointId("arm_left_4_joint")};
  ExternalInputs sensors;
  sensors.wrench_frames = log.force_torque->frames;
  const MeasurementModel with_truth(model, bodies, config.contacts);
  const MeasurementModel with_sensors(model, bodies, {}, sensors);
  MeasurementData truth_data(with_truth), sensor_data(with_sensors);
  const io::TruthSeries& t = *log.truth;
  const io::JointBinding binding = io::bindJoints(model, log.joints.names);
  Eigen::VectorXd truth_sq = Eigen::VectorXd::Zero(with_truth.numRows()), sensor_sq = truth_sq;
  int samples = 0;
  for (Eigen::Index k = 300; k < t.time.size(); ++k) {
    Eigen::VectorXd q(model.nq), v(model.nv), a(model.nv), tau = Eigen::VectorXd::Zero(model.nv);
    q.head<7>() = t.base_pose.row(k).transpose();
    v.head<6>() = t.base_twist.row(k).transpose();
    a.head<6>() = t.base_acceleration.row(k).transpose();
    for (int j = 0; j < binding.size(); ++j) {
      q[binding.idx_q[j]] = t.q(k, binding.log_column[j]);
      v[binding.idx_v[j]] = t.v(k, binding.log_column[j]);
      a[binding.idx_v[j]] = t.a(k, binding.log_column[j]);
      tau[binding.idx_v[j]] = log.joints.tau(k, binding.log_column[j]);
    }
    Eigen::VectorXd points(3 * config.contacts.size());
    for (std::size_t c = 0; c < config.contacts.size(); ++c) {
      const auto column =
          std::find(t.contact_names.begin(), t.contact_names.end(), config.contacts[c].name) -
          t.contact_names.begin();
      points.segment<3>(3 * c) = t.contact_forces.row(k).segment<3>(3 * column).transpose();
    }
    computeMeasurement(with_truth, truth_data, q, v, a, tau, points);
    computeMeasurement(with_sensors, sensor_data, q, v, a, tau,
                       log.force_torque->wrench.row(k).transpose());
    const Eigen::VectorXd pi = with_truth.nominalParameters();
    truth_sq += (truth_data.delta_tau - truth_data.Y * pi).cwiseAbs2();
    sensor_sq += (sensor_data.delta_tau - sensor_data.Y * pi).cwiseAbs2();
    ++samples;
  }
  const Eigen::VectorXd truth_rms = (truth_sq / samples).cwiseSqrt();
  const Eigen::VectorXd sensor_rms = (sensor_sq / samples).cwiseSqrt();
  std::cout << "residual RMS per row, truth forces:  " << truth_rms.transpose() << "\n"
            << "residual RMS per row, F/T sensors:   " << sensor_rms.transpose() << "\n";
  for (int r = 0; r < with_truth.numRows(); ++r)
    EXPECT_LE(sensor_rms[r], 1.05 * truth_rms[r] + 0.01) << "row " << r;
}

// Estimates go out as a log (docs/log-format.md, estimates group), the summary as JSON; an
// existing output is replaced only with overwrite, and never when it is the replayed log.
TEST(FilterJob, OutputsAreLogsAndNeverReplaceTheInput) {
  const std::string log = simulatedLog("talos-forearm-step", 2);
  FilterJob::Config config = filterOnlyConfig("talos_forearm_filter.yaml", log);
  config.end_time = 1.0;
  const FilterJob::Result result = FilterJob::run(config);
  const fs::path out = scratch("outputs_" + std::to_string(::getpid()));
  const auto written = FilterJob::write(result, out.string(), {false});
  EXPECT_EQ(written.size(), 3u);
  const io::Log estimates = io::readLog((out / "estimates.h5").string());
  ASSERT_TRUE(estimates.estimates.has_value());
  EXPECT_EQ(estimates.estimates->estimator, "log-cholesky-ekf");
  EXPECT_EQ(estimates.estimates->body_names, std::vector<std::string>{"arm_left_4_link"});
  EXPECT_EQ(estimates.estimates->body_pi.rows(), result.traces[0].series.time.size());
  EXPECT_EQ(estimates.estimates->body_pi.cols(), 10);
  EXPECT_TRUE(fs::exists(out / "summary.json"));
  std::ifstream summary(out / "summary.json");
  EXPECT_TRUE(nlohmann::json::parse(summary).contains("data_quality"));
  // a simulated log is clean by construction; but the 5.4 kg on the forearm drives
  // arm_left_4_joint past its URDF effort limit (17.86 N m), which the report rightly says
  ASSERT_TRUE(result.data_quality.has_value());
  for (const io::DataQualityFinding& f : result.data_quality->findings) {
    if (f.severity == io::Severity::Warning)
      EXPECT_EQ(f.check, "effort-limits") << result.data_quality->report();
  }
  EXPECT_THROW(FilterJob::write(result, out.string(), {false}), InputError);
  EXPECT_NO_THROW(FilterJob::write(result, out.string(), {true}));

  // the replayed log sits where an output would go: refused, the log untouched
  const fs::path trap = scratch("trap_" + std::to_string(::getpid()));
  fs::create_directories(trap);
  fs::copy_file(log, trap / "estimates.h5");
  const auto size = fs::file_size(trap / "estimates.h5");
  FilterJob::Result from_trap = result;
  from_trap.log = (trap / "estimates.h5").string();
  EXPECT_THROW(FilterJob::write(from_trap, trap.string(), {true}), InputError);
  EXPECT_EQ(fs::file_size(trap / "estimates.h5"), size);

  // an estimate the log writer refuses (a non-finite standard deviation) loses nothing else:
  // summary.json says what was not written, the baseline is written, and the job fails (exit 1)
  FilterJob::Result broken = result;
  broken.traces[0].series.body_pi_std(3, 0) = std::nan("");
  const fs::path kept = scratch("kept_" + std::to_string(::getpid()));
  EXPECT_THROW(FilterJob::write(broken, kept.string(), {false}), SolveError);
  ASSERT_TRUE(fs::exists(kept / "summary.json"));
  std::ifstream kept_summary(kept / "summary.json");
  const nlohmann::json outputs = nlohmann::json::parse(kept_summary).at("outputs");
  EXPECT_EQ(outputs.at("estimates.h5").at("status").get<std::string>().rfind("not written: ", 0),
            0u)
      << outputs.dump();
  EXPECT_EQ(outputs.at("baseline.h5").at("status"), "written");
  EXPECT_FALSE(fs::exists(kept / "estimates.h5"));
  EXPECT_TRUE(fs::exists(kept / "baseline.h5"));
}

}  // namespace
}  // namespace heft::filter
