// heft::sampling: clip rollouts in MuJoCo and CMA-ES over candidate models (docs/sample.md).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <iostream>

#include "heft/common/error.hpp"
#include "heft/inertia/inertia.hpp"
#include "heft/model/robots.hpp"
#include "heft/sampling/sysid.hpp"
#include "heft/sim/scenario.hpp"

namespace {

using namespace heft;

io::Log pendulumLog(const std::string& scenario, const std::string& noise, double duration) {
  sim::SimulationOptions options;
  options.duration = duration;
  options.noise = noise;
  options.seed = 7;
  return sim::simulate(sim::findScenario(scenario), options).log;
}

Vector10 truthPi(const io::Log& log, const std::string& body) {
  const auto& names = log.truth->body_names;
  const auto it = std::find(names.begin(), names.end(), body);
  EXPECT_NE(it, names.end()) << body;
  return log.truth->body_pi.row(it - names.begin()).transpose();
}

sampling::SampledBody link2Body(const model::RobotModel& robot) {
  sampling::SampledBody body;
  body.name = "joint2";
  body.joint = robot.pinocchio().getJointId("joint2");
  body.start_pi = robot.pinocchio().inertias[body.joint].toDynamicParameters();
  body.range = sampling::defaultBodyRange(body.start_pi);
  return body;
}

sampling::ParameterSpace link2Space(const model::RobotModel& robot) {
  return sampling::ParameterSpace({link2Body(robot)}, {}, {});
}

// One linear motor group over both pendulum joints (tau = gain tau_cmd), its gain sampled from
// `gain`.
sampling::ParameterSpace bothJointsGain(double gain) {
  sampling::ActuatorGroup both;
  both.name = "both";
  both.joints = {0, 1};
  both.sample_saturation = false;
  both.saturation = 0;
  both.gain = gain;
  return sampling::ParameterSpace({}, {both}, {});
}

// A short search on the torque terms, a fifth of the log held out.
sampling::SamplingOptions torqueSearchOptions() {
  sampling::SamplingOptions options;
  options.clips = 10;
  options.min_horizon = 0.1;
  options.max_horizon = 0.3;
  options.optimizer.max_iterations = 40;
  options.threads = 2;
  options.holdout_fraction = 0.2;
  options.weights.joint_torque = 1.0;
  return options;
}

// With the model the log was simulated with, a noiseless log is replayed to round-off: the
// conventions of state, time step, torque and inertia all match the simulator's.
TEST(Rollout, TheTrueModelReplaysANoiselessLogToRoundOff) {
  const model::RobotModel robot = model::loadRobot("double_pendulum");
  const io::Log log = pendulumLog("double-pendulum", "none", 4.0);
  const sim::SimModel sim(robot);
  const sampling::ParameterSpace space = link2Space(robot);
  const sampling::ReplayData data = sampling::ReplayData::fromLog(sim, log);
  sampling::Rollout rollout(sim, space);
  rollout.apply(space.candidate(Eigen::VectorXd::Zero(space.dimension())));
  const std::vector<sampling::Clip> clips = sampling::drawClips(data.samples(), 5, 300, 1000, 1);
  for (const sampling::Clip& clip : clips) {
    const sampling::CostTerms t = rollout.run(data, clip, {});
    ASSERT_TRUE(t.finite);
    ASSERT_EQ(t.steps, clip.steps);
    EXPECT_LT(std::sqrt(t.joint_position / t.steps), 1e-9) << clip.start;
    EXPECT_LT(std::sqrt(t.joint_velocity / t.steps), 1e-8) << clip.start;
    EXPECT_LT(std::sqrt(t.joint_torque / t.steps), 1e-12) << clip.start;
  }
  // a heavier link 2 does not replay the log
  Eigen::VectorXd x = Eigen::VectorXd::Zero(space.dimension());
  x[0] = 1.0;  // alpha + 0.1: the mass times 1.22
  rollout.apply(space.candidate(x));
  const sampling::CostTerms heavier = rollout.run(data, clips[0], {});
  EXPECT_GT(std::sqrt(heavier.joint_position / heavier.steps), 1e-4);
}

// A floating base's logged heights, whatever their origin, are put on the floor: the truth's
// heights raised by 0.25 m come back to within MuJoCo's contact penetration of the simulated ones
// (the truth is the known answer here, not a job's input).
TEST(Rollout, GroundsAFloatingBaseOnTheFloor) {
  const model::RobotModel robot = model::loadRobot("go2");
  sim::SimulationOptions options;
  options.duration = 1.0;
  options.noise = "none";
  io::Log log = sim::simulate(sim::findScenario("go2-stand"), options).log;
  ASSERT_TRUE(log.contacts.has_value());
  log.joints.base_pose = log.truth->base_pose;
  log.joints.base_twist = log.truth->base_twist;
  log.joints.base_pose.col(2).array() += 0.25;
  const sim::SimModel sim(robot);
  const sampling::ReplayData data = sampling::ReplayData::fromLog(sim, log);
  const Eigen::VectorXd error = data.q.row(2).transpose() - log.truth->base_pose.col(2);
  std::cout << "grounded minus simulated height: " << error.minCoeff() * 1e3 << " .. "
            << error.maxCoeff() * 1e3 << " mm\n";
  EXPECT_LT(error.cwiseAbs().maxCoeff(), 0.005);  // the feet sink a few mm under load
  EXPECT_GT(error.minCoeff(), -1e-9);  // grounded feet sit on the floor, simulated ones on or in it
  const sampling::ReplayData as_logged = sampling::ReplayData::fromLog(sim, log, false);
  EXPECT_EQ(as_logged.q.row(2), log.joints.base_pose.col(2).transpose());
}

// The payload on link 2 (0.15 kg at 0.18 m) is found by CMA-ES over rollouts of a noisy log
// from the nominal model, with 1 and 2 threads giving the same result.
TEST(SamplingSysId, FindsThePendulumPayloadFromRollouts) {
  const model::RobotModel robot = model::loadRobot("double_pendulum");
  const io::Log log = pendulumLog("double-pendulum-payload", "nominal", 8.0);
  const sim::SimModel sim(robot);
  const sampling::ParameterSpace space = link2Space(robot);
  const sampling::ReplayData data = sampling::ReplayData::fromLog(sim, log);
  sampling::SamplingOptions options;
  options.clips = 12;
  options.min_horizon = 0.1;
  options.max_horizon = 0.3;
  options.optimizer.max_iterations = 80;
  options.threads = 2;
  options.holdout_fraction = 0;  // the whole 8 s log is fitted; the job test scores held-out clips
  const sampling::SamplingSummary two = sampling::identifyBySampling(sim, space, data, options);
  ASSERT_TRUE(two.usable()) << two.report();
  const Vector10 truth = truthPi(log, "joint2");
  const Vector10& found = two.best.body_pi[0];
  const double mass_error = std::abs(inertia::mass(found) / inertia::mass(truth) - 1);
  // Both joints turn about x: the motion is planar, and the COM's x (along the axes) moves no
  // joint, so only its y and z are observable.
  const double com_error =
      (inertia::centerOfMass(found) - inertia::centerOfMass(truth)).tail<2>().norm();
  const Vector10& start = two.start.body_pi[0];
  std::cout << two.report() << "link 2 mass " << inertia::mass(start) << " -> "
            << inertia::mass(found) << " kg (true " << inertia::mass(truth)
            << "), COM error in the plane " << com_error * 1e3 << " mm, COM "
            << inertia::centerOfMass(found).transpose() << " (true "
            << inertia::centerOfMass(truth).transpose() << ")\n";
  EXPECT_LT(mass_error, 0.01);
  EXPECT_LT(com_error, 0.005);
  EXPECT_LT(two.best_cost, 0.2 * two.start_cost);

  options.threads = 1;
  const sampling::SamplingSummary one = sampling::identifyBySampling(sim, space, data, options);
  EXPECT_EQ(one.best_x, two.best_x);
  EXPECT_EQ(one.optimizer.cost_history, two.optimizer.cost_history);
}

// A constant offset per joint on the logged torque is profiled out in closed form: the term
// beyond the offsets equals min over d of sum_k |r_k - d|^2 computed from the residuals
// themselves, also for terms summed over clips; the true model sees the offsets exactly.
TEST(Rollout, TorqueOffsetsAreProfiledOutInClosedForm) {
  const model::RobotModel robot = model::loadRobot("double_pendulum");
  const io::Log log = pendulumLog("double-pendulum", "none", 4.0);
  const sim::SimModel sim(robot);
  const sampling::ParameterSpace space = link2Space(robot);
  sampling::ReplayData data = sampling::ReplayData::fromLog(sim, log);
  const Eigen::Vector2d offsets(0.3, -0.2);  // tau_log = tau + offset
  data.tau.colwise() += offsets;
  sampling::Rollout rollout(sim, space);
  const int per_step = rollout.residualSize();
  const std::vector<sampling::Clip> clips = sampling::drawClips(data.samples(), 3, 200, 600, 3);

  rollout.apply(space.candidate(Eigen::VectorXd::Zero(space.dimension())));
  sampling::CostTerms exact;
  for (const sampling::Clip& clip : clips) exact += rollout.run(data, clip, {});
  ASSERT_TRUE(exact.finite);
  EXPECT_NEAR(exact.joint_torque / exact.steps, offsets.squaredNorm(), 1e-9);
  EXPECT_LT(exact.jointTorqueBeyondOffsets() / exact.steps, 1e-18);
  EXPECT_LT((-exact.meanTorqueResidual() - offsets).cwiseAbs().maxCoeff(), 1e-10);
  // the actuator term sees the same offsets in the logged commands and torques, with no rollout
  const sampling::ParameterSpace gains = bothJointsGain(1.0);
  const sampling::Candidate unit = gains.candidate(Eigen::VectorXd::Zero(gains.dimension()));
  const sampling::CostTerms direct = sampling::actuatorTerms(gains, unit, data, 100, 2100);
  EXPECT_EQ(direct.actuator_samples, 2000);
  EXPECT_EQ(direct.steps, 0);
  // against the residuals computed here: the commands (gain 1) minus the logged torques
  const Eigen::MatrixXd logged =
      data.tau_cmd.middleCols(100, 2000) - data.tau.middleCols(100, 2000);
  const Eigen::Vector2d r_mean = logged.rowwise().mean();
  const double r_squares = logged.squaredNorm();
  EXPECT_NEAR(direct.actuator_torque, r_squares, 1e-12 * r_squares);
  EXPECT_NEAR(direct.actuatorTorqueBeyondOffsets(), (logged.colwise() - r_mean).squaredNorm(),
              1e-12 * r_squares);
  EXPECT_LT((direct.meanActuatorResidual() - r_mean).cwiseAbs().maxCoeff(), 1e-12);
  EXPECT_LT((-direct.meanActuatorResidual() - offsets).cwiseAbs().maxCoeff(), 1e-6);

  // a heavier link 2: the closed form against the residuals' own spread about their mean
  Eigen::VectorXd x = Eigen::VectorXd::Zero(space.dimension());
  x[0] = 1.0;
  rollout.apply(space.candidate(x));
  sampling::CostTerms heavier;
  std::vector<Eigen::Vector2d> residuals;
  Eigen::VectorXd r;
  for (const sampling::Clip& clip : clips) {
    heavier += rollout.run(data, clip, {}, &r);
    for (int k = 0; k < clip.steps; ++k)
      residuals.push_back(r.segment<2>(k * per_step + per_step - 2));
  }
  ASSERT_EQ(static_cast<long>(residuals.size()), heavier.steps);
  Eigen::Vector2d mean = Eigen::Vector2d::Zero();
  for (const Eigen::Vector2d& e : residuals) mean += e / static_cast<double>(residuals.size());
  double spread = 0, total = 0;
  for (const Eigen::Vector2d& e : residuals) {
    spread += (e - mean).squaredNorm();
    total += e.squaredNorm();
  }
  EXPECT_NEAR(heavier.joint_torque, total, 1e-9 * total);
  EXPECT_NEAR(heavier.jointTorqueBeyondOffsets(), spread, 1e-9 * total);
  EXPECT_LT((heavier.meanTorqueResidual() - mean).cwiseAbs().maxCoeff(), 1e-12);
  EXPECT_NEAR(heavier.jointTorqueLess(Eigen::Vector2d::Zero()), total, 1e-9 * total);
}

// An actuator gain fitted on torques that carry a sensor offset: without the offsets the gain
// absorbs them; with them profiled out it comes back, and so do the offsets.
TEST(SamplingSysId, TorqueOffsetsKeepTheActuatorGainOffTheSensorBias) {
  const model::RobotModel robot = model::loadRobot("double_pendulum");
  const io::Log log = pendulumLog("double-pendulum", "none", 6.0);
  const sim::SimModel sim(robot);
  const sampling::ParameterSpace space = bothJointsGain(0.8);  // the log's gain is 1
  sampling::ReplayData data = sampling::ReplayData::fromLog(sim, log);
  const Eigen::Vector2d offsets(0.3, -0.2);
  data.tau.colwise() += offsets;
  sampling::SamplingOptions options = torqueSearchOptions();
  const sampling::SamplingSummary plain = sampling::identifyBySampling(sim, space, data, options);
  options.weights.torque_offsets = true;
  const sampling::SamplingSummary profiled =
      sampling::identifyBySampling(sim, space, data, options);
  ASSERT_TRUE(plain.usable()) << plain.report();
  ASSERT_TRUE(profiled.usable()) << profiled.report();
  const double plain_error = std::abs(plain.best.groups[0].gain - 1);
  const double profiled_error = std::abs(profiled.best.groups[0].gain - 1);
  std::cout << profiled.report() << "gain without offsets " << plain.best.groups[0].gain
            << ", with " << profiled.best.groups[0].gain << "; offsets "
            << profiled.torque_offsets.transpose() << " (true " << offsets.transpose() << ")\n";
  EXPECT_EQ(plain.torque_offsets.size(), 0);
  ASSERT_EQ(profiled.torque_offsets.size(), 2);
  EXPECT_LT(profiled_error, 1e-3);
  EXPECT_GT(plain_error, 10 * profiled_error);
  EXPECT_LT((profiled.torque_offsets - offsets).cwiseAbs().maxCoeff(), 2e-3);
}

// Two recordings of one robot (appended, as heft sample's more_logs are) whose torque sensors
// were zeroed apart: each has its own offsets, fitted from its own clips and samples only; one
// offset shared by both would leave their difference in the term.
TEST(Rollout, EachRecordingHasItsOwnTorqueOffsets) {
  const model::RobotModel robot = model::loadRobot("double_pendulum");
  const io::Log log = pendulumLog("double-pendulum", "none", 4.0);
  const sim::SimModel sim(robot);
  const sampling::ParameterSpace space = link2Space(robot);
  sampling::ReplayData data = sampling::ReplayData::fromLog(sim, log);
  sampling::ReplayData second = data;
  const Eigen::Vector2d a(0.3, -0.2), b(-0.1, 0.25);  // tau_log = tau + offset, per recording
  data.tau.colwise() += a;
  second.tau.colwise() += b;
  data.append(second);
  ASSERT_EQ(data.recordings(), 2);
  const int join = data.joins[0];
  EXPECT_EQ(data.recordingOf(0), 0);
  EXPECT_EQ(data.recordingOf(join - 1), 0);
  EXPECT_EQ(data.recordingOf(join), 1);
  EXPECT_EQ(data.recordingOf(data.samples() - 1), 1);

  sampling::Rollout rollout(sim, space);
  rollout.apply(space.candidate(Eigen::VectorXd::Zero(space.dimension())));
  const std::vector<sampling::Clip> clips =
      sampling::drawClips(data.samples(), 6, 200, 600, 3, data.joins);
  sampling::CostTerms exact;
  for (const sampling::Clip& clip : clips) exact += rollout.run(data, clip, {});
  ASSERT_TRUE(exact.finite);
  ASSERT_EQ(exact.recording_steps.size(), 2);
  ASSERT_GT(exact.recording_steps[0], 0);  // clips in both recordings
  ASSERT_GT(exact.recording_steps[1], 0);
  EXPECT_EQ(exact.recording_steps.sum(), exact.steps);
  // zero up to the cancellation of sums over a few thousand steps (N eps of the squares)
  EXPECT_LT(exact.jointTorqueBeyondOffsets(), 1e-12 * exact.joint_torque);
  const Eigen::MatrixXd mean = exact.meanTorqueResidual();
  ASSERT_EQ(mean.cols(), 2);
  EXPECT_LT((-mean.col(0) - a).cwiseAbs().maxCoeff(), 1e-10);
  EXPECT_LT((-mean.col(1) - b).cwiseAbs().maxCoeff(), 1e-10);
  const Eigen::VectorXd pooled = exact.joint_torque_sum.rowwise().sum() / exact.steps;
  const Eigen::MatrixXd shared = pooled.replicate(1, 2);
  EXPECT_GT(exact.jointTorqueLess(shared) / exact.steps, 1e-3);

  // the actuator term over samples across the join, against the residuals computed here
  const sampling::ParameterSpace gains = bothJointsGain(1.0);
  const sampling::Candidate unit = gains.candidate(Eigen::VectorXd::Zero(gains.dimension()));
  const sampling::CostTerms direct =
      sampling::actuatorTerms(gains, unit, data, join - 1000, join + 1500);
  EXPECT_EQ(direct.actuator_samples, 2500);
  ASSERT_EQ(direct.actuator_recording_samples.size(), 2);
  EXPECT_EQ(direct.actuator_recording_samples[0], 1000);
  EXPECT_EQ(direct.actuator_recording_samples[1], 1500);
  const Eigen::MatrixXd before =
      data.tau_cmd.middleCols(join - 1000, 1000) - data.tau.middleCols(join - 1000, 1000);
  const Eigen::MatrixXd after =
      data.tau_cmd.middleCols(join, 1500) - data.tau.middleCols(join, 1500);
  const Eigen::Vector2d mean_before = before.rowwise().mean(), mean_after = after.rowwise().mean();
  const double squares = before.squaredNorm() + after.squaredNorm();
  EXPECT_NEAR(direct.actuator_torque, squares, 1e-12 * squares);
  EXPECT_NEAR(
      direct.actuatorTorqueBeyondOffsets(),
      (before.colwise() - mean_before).squaredNorm() + (after.colwise() - mean_after).squaredNorm(),
      1e-12 * squares);
  const Eigen::MatrixXd direct_mean = direct.meanActuatorResidual();
  EXPECT_LT((direct_mean.col(0) - mean_before).cwiseAbs().maxCoeff(), 1e-12);
  EXPECT_LT((direct_mean.col(1) - mean_after).cwiseAbs().maxCoeff(), 1e-12);
  EXPECT_LT((-direct_mean.col(0) - a).cwiseAbs().maxCoeff(), 1e-6);
  EXPECT_LT((-direct_mean.col(1) - b).cwiseAbs().maxCoeff(), 1e-6);
  // a recording without samples takes the offsets pooled over the others
  const sampling::CostTerms first_only = sampling::actuatorTerms(gains, unit, data, 100, 1100);
  EXPECT_EQ(first_only.actuator_recording_samples[1], 0);
  EXPECT_EQ(first_only.meanActuatorResidual().col(1), first_only.meanActuatorResidual().col(0));
}

// Offsets that differ between two recordings: the gain and each recording's offsets come back.
TEST(SamplingSysId, FitsTheTorqueOffsetsOfEachRecording) {
  const model::RobotModel robot = model::loadRobot("double_pendulum");
  const io::Log log = pendulumLog("double-pendulum", "none", 6.0);
  const sim::SimModel sim(robot);
  const sampling::ParameterSpace space = bothJointsGain(0.8);
  sampling::ReplayData data = sampling::ReplayData::fromLog(sim, log);
  sampling::ReplayData second = data;
  const Eigen::Vector2d a(0.3, -0.2), b(-0.1, 0.25);
  data.tau.colwise() += a;
  second.tau.colwise() += b;
  data.append(second);
  sampling::SamplingOptions options = torqueSearchOptions();  // held out: the first's end
  options.weights.torque_offsets = true;
  const sampling::SamplingSummary s = sampling::identifyBySampling(sim, space, data, options);
  ASSERT_TRUE(s.usable()) << s.report();
  std::cout << s.report() << "gain " << s.best.groups[0].gain << "; offsets\n"
            << s.torque_offsets << "\n(true " << a.transpose() << " / " << b.transpose() << ")\n";
  EXPECT_LT(std::abs(s.best.groups[0].gain - 1), 1e-3);
  ASSERT_EQ(s.torque_offsets.rows(), 2);
  ASSERT_EQ(s.torque_offsets.cols(), 2);
  EXPECT_LT((s.torque_offsets.col(0) - a).cwiseAbs().maxCoeff(), 2e-3);
  EXPECT_LT((s.torque_offsets.col(1) - b).cwiseAbs().maxCoeff(), 2e-3);
  // the held-out clips are predicted with the first recording's fitted offsets
  EXPECT_LT(s.holdout_prediction_error, 0.1);
}

// With a second recording (heft sample's more_logs: a designed experiment), the held-out part is
// the end of the first one and the second is fitted whole, clips and actuator term alike: holding
// out the end of the combined data cut the second half of a designed recording out of the fit.
TEST(SamplingSysId, HoldsOutTheEndOfTheFirstRecordingAndFitsTheOthersWhole) {
  const model::RobotModel robot = model::loadRobot("double_pendulum");
  const sim::SimModel sim(robot);
  sampling::ReplayData data =
      sampling::ReplayData::fromLog(sim, pendulumLog("double-pendulum", "none", 5.0));
  data.append(sampling::ReplayData::fromLog(sim, pendulumLog("double-pendulum", "none", 3.0)));
  const int join = data.joins.at(0);
  sampling::SamplingOptions options = torqueSearchOptions();
  options.clips = 40;
  options.optimizer.max_iterations = 2;
  options.weights.actuator_torque = 1.0;
  const sampling::SamplingSummary s =
      sampling::identifyBySampling(sim, bothJointsGain(0.8), data, options);
  ASSERT_TRUE(s.usable()) << s.report();
  const int held = static_cast<int>(std::lround(0.2 * join));
  EXPECT_EQ(s.holdout_end, join);
  EXPECT_EQ(s.holdout_begin, join - held);
  for (const sampling::Clip& c : s.holdout_clips) {
    EXPECT_GE(c.start, s.holdout_begin);
    EXPECT_LT(c.start + c.steps, s.holdout_end);  // within the first recording
  }
  int in_second = 0, in_second_end = 0;
  for (const sampling::Clip& c : s.clips) {
    EXPECT_TRUE(c.start + c.steps < s.holdout_begin || c.start >= s.holdout_end)
        << "clip [" << c.start << ", " << c.start + c.steps << "] overlaps the held-out part";
    if (c.start >= join) ++in_second;
    // the second recording's last fifth, which the end of the combined data would have held out
    if (c.start + c.steps >= data.samples() - static_cast<int>(0.2 * data.samples()))
      ++in_second_end;
  }
  EXPECT_GT(in_second, 0);
  EXPECT_GT(in_second_end, 0);
  // the actuator term: every sample but the held-out ones, the held-out ones on their own
  EXPECT_EQ(s.best_terms.actuator_samples, data.samples() - held);
  EXPECT_EQ(s.best_terms.actuator_recording_samples[1], data.samples() - join);
  EXPECT_EQ(s.holdout_best_terms.actuator_samples, held);
  EXPECT_EQ(s.holdout_best_terms.actuator_recording_samples[1], 0);
}

// rolloutInformation's marginalized offsets against the information of the augmented problem,
// built here from the residuals: x's columns by central differences, one column per joint and
// recording for its offset (-1 on that joint's torque entries in that recording), then the Schur
// complement F_xx - F_xo F_oo^-1 F_ox.
TEST(SamplingSysId, TheInformationMarginalizesOneOffsetPerJointAndRecording) {
  const model::RobotModel robot = model::loadRobot("double_pendulum");
  const io::Log log = pendulumLog("double-pendulum", "nominal", 4.0);
  const sim::SimModel sim(robot);
  std::vector<sampling::ActuatorGroup> groups(2);
  for (int g = 0; g < 2; ++g) {
    groups[g].name = "joint" + std::to_string(g + 1);
    groups[g].joints = {g};
    groups[g].saturation = 15.0;
  }
  const sampling::ParameterSpace space({link2Body(robot)}, groups, {});
  sampling::ReplayData data = sampling::ReplayData::fromLog(sim, log);
  data.append(sampling::ReplayData::fromLog(sim, log));
  const std::vector<sampling::Clip> clips =
      sampling::drawClips(data.samples(), 4, 100, 300, 5, data.joins);
  const Eigen::VectorXd x = Eigen::VectorXd::Constant(space.dimension(), 0.1);
  const double step = 0.2;
  Eigen::VectorXd sigma(6);
  sigma << 0, 0, 0, 0.01, 0.1, 0.05;  // joint position, velocity, torque (a fixed base)
  const sampling::RolloutInformation plain =
      sampling::rolloutInformation(sim, space, data, clips, {}, x, step, sigma, false);
  const sampling::RolloutInformation marginal =
      sampling::rolloutInformation(sim, space, data, clips, {}, x, step, sigma, true);
  ASSERT_TRUE(plain.ok);
  ASSERT_TRUE(marginal.ok);

  const int n = space.dimension(), nu = sim.nu(), recordings = data.recordings();
  sampling::Rollout rollout(sim, space);
  const int per_step = rollout.residualSize();
  ASSERT_EQ(per_step, 3 * nu);
  Eigen::MatrixXd augmented = Eigen::MatrixXd::Zero(n + nu * recordings, n + nu * recordings);
  std::vector<int> steps(recordings, 0);
  Eigen::VectorXd plus, minus;
  for (const sampling::Clip& clip : clips) {
    const int r = data.recordingOf(clip.start);
    steps[r] += clip.steps;
    Eigen::MatrixXd J = Eigen::MatrixXd::Zero(clip.steps * per_step, n + nu * recordings);
    for (int i = 0; i < n; ++i) {
      Eigen::VectorXd xi = x;
      xi[i] += step;
      rollout.apply(space.candidate(xi));
      ASSERT_TRUE(rollout.run(data, clip, {}, &plus).finite);
      xi[i] = x[i] - step;
      rollout.apply(space.candidate(xi));
      ASSERT_TRUE(rollout.run(data, clip, {}, &minus).finite);
      J.col(i) = (plus - minus) / (2 * step);
    }
    for (int k = 0; k < clip.steps; ++k)
      for (int j = 0; j < nu; ++j) J(k * per_step + 2 * nu + j, n + r * nu + j) = -1;
    for (int e = 0; e < J.rows(); ++e) J.row(e) /= sigma[3 + (e % per_step) / nu];
    augmented += J.transpose() * J;
  }
  ASSERT_GT(steps[0], 0);  // clips in both recordings
  ASSERT_GT(steps[1], 0);
  const Eigen::MatrixXd Fxx = augmented.topLeftCorner(n, n);
  const Eigen::MatrixXd Fxo = augmented.topRightCorner(n, nu * recordings);
  const Eigen::MatrixXd Foo = augmented.bottomRightCorner(nu * recordings, nu * recordings);
  const Eigen::MatrixXd schur = Fxx - Fxo * Foo.ldlt().solve(Fxo.transpose());
  const double scale = Fxx.norm();
  EXPECT_LT((plain.information - Fxx).norm(), 1e-10 * scale);
  EXPECT_LT((marginal.information - schur).norm(), 1e-10 * scale)
      << marginal.information << "\nagainst\n"
      << schur;
  // the offsets take information from the gains (the torque rows' constant part)
  EXPECT_LT((marginal.information - Fxx).norm(), scale);
  EXPECT_GT((marginal.information - Fxx).norm(), 1e-6 * scale);
}

TEST(SamplingSysId, RefusesAStartOutsideItsRangeAndALogWithoutCommands) {
  const model::RobotModel robot = model::loadRobot("double_pendulum");
  sampling::SampledBody body = link2Body(robot);
  body.range.mass_min = 2 * inertia::mass(body.start_pi);
  body.range.mass_max = 3 * inertia::mass(body.start_pi);
  try {
    sampling::ParameterSpace({body}, {}, {});
    FAIL() << "no error";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("bodies: joint2: the start model lies outside the range: "
                                         "mass of joint2"),
              std::string::npos)
        << e.what();
  }

  io::Log log = pendulumLog("double-pendulum", "none", 1.0);
  log.joints.tau_cmd.resize(0, 0);
  const sim::SimModel sim(robot);
  try {
    sampling::ReplayData::fromLog(sim, log);
    FAIL() << "no error";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("joints/tau_cmd: expected the commanded torques"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
