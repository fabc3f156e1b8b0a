// heft::jobs::SimulateJob: scenario files (data/scenarios/*.yaml) read back to the built-in
// scenarios field by field and give the same logs bit for bit; the writer round-trips every
// built-in; every mistake in a file is one InputError naming the file, the line and the field.
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <vector>

#include "heft/common/error.hpp"
#include "heft/io/log.hpp"
#include "heft/jobs/simulate_job.hpp"
#include "heft/sim/scenario.hpp"

namespace heft::jobs {
namespace {

namespace fs = std::filesystem;

fs::path scenarioFolder() { return fs::path(HEFT_SOURCE_DIR) / "data" / "scenarios"; }

// ---- field-by-field equality of two scenarios ---------------------------------------------------

// Same size and the same values, bit for bit (Eigen's == needs equal sizes).
bool same(const Eigen::VectorXd& a, const Eigen::VectorXd& b) {
  return a.size() == b.size() && (a.array() == b.array()).all();
}

void expectSameWaves(const std::vector<sim::JointWave>& a, const std::vector<sim::JointWave>& b,
                     const std::string& where) {
  ASSERT_EQ(a.size(), b.size()) << where;
  for (std::size_t i = 0; i < a.size(); ++i) {
    const std::string at = where + "[" + std::to_string(i) + "]";
    EXPECT_EQ(a[i].joint, b[i].joint) << at;
    EXPECT_EQ(a[i].amplitude, b[i].amplitude) << at;
    EXPECT_EQ(a[i].frequency, b[i].frequency) << at;
    EXPECT_EQ(a[i].phase, b[i].phase) << at;
  }
}

void expectSameModel(const sim::SimModelOptions& a, const sim::SimModelOptions& b) {
  EXPECT_EQ(a.timestep, b.timestep);
  ASSERT_EQ(a.link_edits.size(), b.link_edits.size());
  for (std::size_t i = 0; i < a.link_edits.size(); ++i) {
    EXPECT_EQ(a.link_edits[i].body, b.link_edits[i].body);
    EXPECT_EQ(a.link_edits[i].mass_scale, b.link_edits[i].mass_scale);
    EXPECT_EQ(a.link_edits[i].com_shift, b.link_edits[i].com_shift);
  }
  ASSERT_EQ(a.payloads.size(), b.payloads.size());
  for (std::size_t i = 0; i < a.payloads.size(); ++i) {
    EXPECT_EQ(a.payloads[i].name, b.payloads[i].name);
    EXPECT_EQ(a.payloads[i].body, b.payloads[i].body);
    EXPECT_EQ(a.payloads[i].payload.mass, b.payloads[i].payload.mass);
    EXPECT_EQ(a.payloads[i].payload.com, b.payloads[i].payload.com);
    EXPECT_EQ(a.payloads[i].payload.inertia, b.payloads[i].payload.inertia)
        << a.payloads[i].payload.inertia << "\nvs\n"
        << b.payloads[i].payload.inertia;
  }
  ASSERT_EQ(a.joint_friction.size(), b.joint_friction.size());
  for (const auto& [joint, f] : a.joint_friction) {
    ASSERT_EQ(b.joint_friction.count(joint), 1u) << joint;
    const auto& g = b.joint_friction.at(joint);
    EXPECT_EQ(f.damping, g.damping) << joint;
    EXPECT_EQ(f.frictionloss, g.frictionloss) << joint;
    EXPECT_EQ(f.armature, g.armature) << joint;
  }
  EXPECT_EQ(a.contact_frames, b.contact_frames);
  ASSERT_EQ(a.contact_points.size(), b.contact_points.size());
  for (std::size_t i = 0; i < a.contact_points.size(); ++i) {
    EXPECT_EQ(a.contact_points[i].name, b.contact_points[i].name);
    EXPECT_EQ(a.contact_points[i].frame, b.contact_points[i].frame);
    EXPECT_EQ(a.contact_points[i].offset, b.contact_points[i].offset);
  }
  EXPECT_EQ(a.contact_radius, b.contact_radius);
  ASSERT_EQ(a.mass_variations.size(), b.mass_variations.size());
  for (std::size_t i = 0; i < a.mass_variations.size(); ++i) {
    const auto &v = a.mass_variations[i], &w = b.mass_variations[i];
    EXPECT_EQ(v.body, w.body);
    EXPECT_EQ(v.waveform, w.waveform);
    EXPECT_EQ(v.offset, w.offset);
    EXPECT_EQ(v.amplitude, w.amplitude);
    EXPECT_EQ(v.frequency, w.frequency);
    EXPECT_EQ(v.step_time, w.step_time);
  }
  ASSERT_EQ(a.actuators.size(), b.actuators.size());
  for (const auto& [joint, x] : a.actuators) {
    ASSERT_EQ(b.actuators.count(joint), 1u) << joint;
    EXPECT_EQ(x.gain, b.actuators.at(joint).gain) << joint;
    EXPECT_EQ(x.saturation, b.actuators.at(joint).saturation) << joint;
  }
  EXPECT_EQ(a.torque_offsets, b.torque_offsets);
  EXPECT_EQ(a.passive_joints, b.passive_joints);
  EXPECT_EQ(a.floor_friction, b.floor_friction);
  EXPECT_EQ(a.imu_frame, b.imu_frame);
  EXPECT_EQ(a.imu_frame_optional, b.imu_frame_optional);
}

void expectSameMotion(const sim::Scenario& a, const sim::Scenario& b) {
  EXPECT_EQ(a.motion, b.motion);
  const auto &s = a.stance, &t = b.stance;
  EXPECT_TRUE(same(s.posture, t.posture))
      << s.posture.transpose() << " vs " << t.posture.transpose();
  for (auto member :
       {&sim::StanceMotionOptions::settle, &sim::StanceMotionOptions::phase_duration,
        &sim::StanceMotionOptions::ramp, &sim::StanceMotionOptions::roll_amplitude,
        &sim::StanceMotionOptions::pitch_amplitude, &sim::StanceMotionOptions::yaw_amplitude,
        &sim::StanceMotionOptions::rotation_frequency, &sim::StanceMotionOptions::squat_depth,
        &sim::StanceMotionOptions::squat_frequency, &sim::StanceMotionOptions::trot_height,
        &sim::StanceMotionOptions::trot_frequency, &sim::StanceMotionOptions::trot_swing,
        &sim::StanceMotionOptions::hop_flight, &sim::StanceMotionOptions::hop_push,
        &sim::StanceMotionOptions::hop_clearance}) {
    EXPECT_EQ(s.*member, t.*member);
  }
  EXPECT_EQ(s.commands.degree, t.commands.degree);
  EXPECT_EQ(s.commands.segment_duration, t.commands.segment_duration);
  EXPECT_TRUE(same(s.commands.hop_flight, t.commands.hop_flight));
  ASSERT_EQ(s.commands.points.rows(), t.commands.points.rows());
  ASSERT_EQ(s.commands.points.cols(), t.commands.points.cols());
  EXPECT_TRUE(s.commands.points == t.commands.points);
  const auto &f = a.fourier, &g = b.fourier;
  EXPECT_EQ(f.harmonics, g.harmonics);
  EXPECT_EQ(f.base_frequency, g.base_frequency);
  EXPECT_EQ(f.coefficient_seed, g.coefficient_seed);
  EXPECT_EQ(f.limit_margin, g.limit_margin);
  EXPECT_EQ(f.velocity_fraction, g.velocity_fraction);
  EXPECT_EQ(f.max_acceleration, g.max_acceleration);
  EXPECT_EQ(f.ramp, g.ramp);
  EXPECT_TRUE(same(f.center, g.center)) << f.center.transpose() << " vs " << g.center.transpose();
  EXPECT_EQ(f.unlimited_amplitude, g.unlimited_amplitude);
  const auto &h = a.humanoid, &k = b.humanoid;
  EXPECT_EQ(h.posture, k.posture);
  EXPECT_EQ(h.soles, k.soles);
  EXPECT_EQ(h.settle, k.settle);
  EXPECT_EQ(h.phase_duration, k.phase_duration);
  EXPECT_EQ(h.ramp, k.ramp);
  ASSERT_EQ(h.phases.size(), k.phases.size());
  for (std::size_t i = 0; i < h.phases.size(); ++i) {
    const auto &p = h.phases[i], &q = k.phases[i];
    const std::string at = "phases[" + std::to_string(i) + "]";
    EXPECT_EQ(p.squat_depth, q.squat_depth) << at;
    EXPECT_EQ(p.squat_frequency, q.squat_frequency) << at;
    EXPECT_EQ(p.shift_amplitude, q.shift_amplitude) << at;
    EXPECT_EQ(p.shift_frequency, q.shift_frequency) << at;
    expectSameWaves(p.joints, q.joints, at + ".joints");
    EXPECT_EQ(p.step_height, q.step_height) << at;
    EXPECT_EQ(p.step_shift, q.step_shift) << at;
    EXPECT_EQ(p.step_transfer, q.step_transfer) << at;
    EXPECT_EQ(p.step_swing, q.step_swing) << at;
    EXPECT_EQ(p.step_landing_speed, q.step_landing_speed) << at;
  }
  expectSameWaves(h.continuous, k.continuous, "continuous");
}

// Every field of sim::Scenario.
void expectSameScenario(const sim::Scenario& a, const sim::Scenario& b) {
  SCOPED_TRACE(a.name);
  EXPECT_EQ(a.name, b.name);
  EXPECT_EQ(a.description, b.description);
  EXPECT_EQ(a.robot, b.robot);
  expectSameModel(a.model, b.model);
  expectSameMotion(a, b);
  EXPECT_EQ(a.joint_gains, b.joint_gains);
  EXPECT_EQ(a.kp, b.kp);
  EXPECT_EQ(a.kd, b.kd);
  EXPECT_EQ(a.bandwidth, b.bandwidth);
  EXPECT_EQ(a.damping_ratio, b.damping_ratio);
  EXPECT_EQ(a.duration, b.duration);
  EXPECT_EQ(a.bounds.min_base_height, b.bounds.min_base_height);
  EXPECT_EQ(a.bounds.max_tilt, b.bounds.max_tilt);
  EXPECT_EQ(a.max_tracking_error, b.max_tracking_error);
}

// ---- the built-in scenarios as files ------------------------------------------------------------

TEST(ScenarioFiles, EveryBuiltInHasAFileEqualToItFieldByField) {
  for (const auto& builtin : sim::scenarios()) {
    const fs::path file = scenarioFolder() / (builtin.name + ".yaml");
    ASSERT_TRUE(fs::exists(file)) << file;
    const SimulateJob::Config config = SimulateJob::load(file.string());
    expectSameScenario(builtin, config.scenario);
    // a built-in file leaves the run options at their defaults
    EXPECT_EQ(config.options.seed, 0u);
    EXPECT_EQ(config.options.noise, "nominal");
    EXPECT_FALSE(config.options.profile.has_value());
    EXPECT_TRUE(config.options.stop_on_fall);
  }
}

TEST(ScenarioFiles, EveryFileOfTheFolderLoadsAndValidates) {
  int files = 0;
  for (const auto& entry : fs::directory_iterator(scenarioFolder())) {
    if (entry.path().extension() != ".yaml") continue;
    SCOPED_TRACE(entry.path().string());
    const SimulateJob::Config config = SimulateJob::load(entry.path().string());
    EXPECT_EQ(config.scenario.name, entry.path().stem().string());
    EXPECT_FALSE(config.scenario.description.empty());
    EXPECT_NO_THROW(config.validate());
    ++files;
  }
  EXPECT_GE(files, static_cast<int>(sim::scenarios().size()) + 3);
}

TEST(ScenarioFiles, WriterRoundTripsEveryBuiltInAndCustomRunOptions) {
  for (const auto& builtin : sim::scenarios()) {
    SimulateJob::Config config = SimulateJob::builtIn(builtin.name);
    const std::string text = SimulateJob::toYaml(config);
    expectSameScenario(builtin, SimulateJob::parse(text, "written.yaml", ".").scenario);
  }
  // a noise profile of its own, a seed, stop_on_fall and torque offsets
  SimulateJob::Config config = SimulateJob::builtIn("go2-payload-3kg");
  config.options.seed = 42;
  config.options.stop_on_fall = false;
  sim::NoiseProfile profile = sim::NoiseProfile::fromName("harsh");
  profile.name = "harsh-quiet-torque";
  profile.torque_noise = 0.01;
  profile.mocap_rpy_offset << 0.01, -0.02, 1.0 / 3.0;
  config.options.profile = profile;
  config.scenario.model.torque_offsets["FL_calf_joint"] = 0.1;
  // designed base commands (active exploration's output)
  config.scenario.stance.commands.degree = 5;
  config.scenario.stance.commands.points = Eigen::MatrixXd::Zero(6, 12);
  config.scenario.stance.commands.points(2, 2) = -0.0312345678901;
  config.scenario.stance.commands.points(5, 9) = 1.0 / 3.0;
  config.scenario.stance.commands.segment_duration = 2.5;
  config.scenario.stance.commands.hop_flight = Eigen::Vector2d(0, 0.0812345);
  config.options.force_torque = true;
  profile.ft_force_bias = 3.5;
  config.options.profile = profile;
  const SimulateJob::Config back =
      SimulateJob::parse(SimulateJob::toYaml(config), "custom.yaml", ".");
  expectSameScenario(config.scenario, back.scenario);
  EXPECT_EQ(back.options.seed, 42u);
  EXPECT_FALSE(back.options.stop_on_fall);
  EXPECT_TRUE(back.options.force_torque);
  EXPECT_FALSE(SimulateJob::builtIn("go2-payload-3kg").options.force_torque);
  ASSERT_TRUE(back.options.profile.has_value());
  EXPECT_EQ(back.options.profile->ft_force_bias, 3.5);
  EXPECT_EQ(back.options.profile->name, "harsh-quiet-torque");
  EXPECT_EQ(back.options.profile->torque_noise, 0.01);
  EXPECT_EQ(back.options.profile->torque_bias, profile.torque_bias);
  EXPECT_EQ(back.options.profile->imu_rate, profile.imu_rate);
  EXPECT_EQ(back.options.profile->velocity_by_differencing, profile.velocity_by_differencing);
  EXPECT_EQ(back.options.profile->mocap_rpy_offset, profile.mocap_rpy_offset);
  EXPECT_EQ(back.options.profile->mocap_position_offset, profile.mocap_position_offset);
}

// The file and the name give the same log, bit for bit (0.3 s of each motion type).
TEST(ScenarioFiles, ShortRunFromTheFileAndFromTheNameGiveIdenticalLogs) {
  for (const std::string name :
       {"go2-payload-3kg", "panda-friction", "talos-forearm-step", "double-pendulum-payload"}) {
    SCOPED_TRACE(name);
    SimulateJob::Config from_name = SimulateJob::builtIn(name);
    SimulateJob::Config from_file =
        SimulateJob::load((scenarioFolder() / (name + ".yaml")).string());
    for (auto* config : {&from_name, &from_file}) {
      config->options.duration = 0.3;
      config->options.seed = 5;
    }
    Progress silent;
    const auto a = SimulateJob::run(from_name, silent);
    const auto b = SimulateJob::run(from_file, silent);
    ASSERT_TRUE(a.ok()) << a.report();
    ASSERT_TRUE(b.ok()) << b.report();
    EXPECT_EQ(a.simulation.log.joints.time.size(), 301);
    EXPECT_EQ(io::firstDifference(a.simulation.log, b.simulation.log), "");
  }
}

// ---- errors -------------------------------------------------------------------------------------

const char* kGood = R"(name: test
description: a panda with a payload
robot: panda
duration: 2
model:
  payloads:
    - name: tool
      body: panda_link7
      mass: 0.5
      com: [0, 0, 0.05]
      box: [0.05, 0.05, 0.1]
  torque_offsets:
    panda_joint1: 0.3
motion:
  type: fourier
  harmonics: 3
gains:
  bandwidth: 30
)";

std::string replaced(const std::string& from, const std::string& to) {
  std::string text = kGood;
  const auto at = text.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  return text.replace(at, from.size(), to);
}

// The InputError of parsing `text`, or "" when it parsed.
std::string errorOf(const std::string& text) {
  try {
    SimulateJob::parse(text, "bad.yaml", ".");
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

TEST(ScenarioFiles, AGoodFileParses) {
  const SimulateJob::Config config = SimulateJob::parse(kGood, "good.yaml", ".");
  EXPECT_EQ(config.scenario.name, "test");
  EXPECT_EQ(config.scenario.motion, sim::Motion::Fourier);
  EXPECT_EQ(config.scenario.fourier.harmonics, 3);
  ASSERT_EQ(config.scenario.model.payloads.size(), 1u);
  EXPECT_DOUBLE_EQ(config.scenario.model.payloads[0].payload.inertia(0, 0),
                   0.5 * (0.05 * 0.05 + 0.1 * 0.1) / 12);
  EXPECT_EQ(config.scenario.model.torque_offsets.at("panda_joint1"), 0.3);
  EXPECT_EQ(config.options.duration, 0);
  EXPECT_EQ(config.scenario.duration, 2);
  // without `name`, the file name
  EXPECT_EQ(SimulateJob::parse(replaced("name: test\n", ""), "dir/my-arm.yaml", ".").scenario.name,
            "my-arm");
}

// A designed command file (active exploration's): six rows of control points, each segment
// starting and ending at rest.
TEST(ScenarioFiles, DesignedCommandsAreReadAndTheirMistakesNamed) {
  const std::string head =
      "name: designed\nrobot: go2\nduration: 3\nmotion:\n  type: stance\n"
      "  posture: [0, 0.8, -1.6, 0, 0.8, -1.6, 0, 0.8, -1.6, 0, 0.8, -1.6]\n  commands:\n"
      "    degree: 4\n    segment_duration: 1\n    points:\n";
  const std::string row = "      - [0, 0, 0.02, 0, 0]\n";
  std::string rows;
  for (int r = 0; r < 6; ++r) rows += row;
  const SimulateJob::Config good = SimulateJob::parse(head + rows, "designed.yaml", ".");
  EXPECT_EQ(good.scenario.stance.commands.points.cols(), 5);
  EXPECT_EQ(good.scenario.stance.commands.points(3, 2), 0.02);
  const auto message = [&](const std::string& text) {
    try {
      SimulateJob::parse(text, "bad.yaml", ".");
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  std::string moving = rows;
  moving.replace(moving.find("0.02, 0, 0]"), 11, "0.02, 0.1, 0]");
  EXPECT_NE(message(head + moving).find("bad.yaml:8: motion.commands"), std::string::npos)
      << message(head + moving);
  EXPECT_NE(message(head + moving).find("segment 1"), std::string::npos);
  EXPECT_NE(message(head + row + row).find("motion.commands.points: expected 6 lists"),
            std::string::npos)
      << message(head + row + row);
  std::string short_row = rows;
  short_row.replace(short_row.rfind("[0, 0, 0.02, 0, 0]"), 18, "[0, 0, 0]");
  EXPECT_NE(message(head + short_row).find("points[5]: expected 5 numbers"), std::string::npos)
      << message(head + short_row);
}

TEST(ScenarioFiles, EveryMistakeIsOneInputErrorNamingFileLineAndField) {
  struct Case {
    std::string text, expected;
  };
  const std::vector<Case> cases = {
      // unknown keys, listing the allowed ones
      {replaced("duration: 2", "durration: 2"),
       "bad.yaml:4: durration: unknown key; expected one of name, description, robot, duration"},
      {replaced("      mass: 0.5", "      mass: 0.5\n      colour: red"),
       "bad.yaml:10: model.payloads[0].colour: unknown key; expected one of name, body, mass"},
      {replaced("  harmonics: 3", "  harmonics: 3\n  squat_depth: 0.1"),
       "bad.yaml:17: motion.squat_depth: unknown key; expected one of type,"},
      // wrong types
      {replaced("duration: 2", "duration: long"), "bad.yaml:4: duration: expected a number"},
      {replaced("com: [0, 0, 0.05]", "com: [0, 0]"),
       "bad.yaml:10: model.payloads[0].com: expected 3 numbers, got 2"},
      {replaced("harmonics: 3", "harmonics: three"),
       "bad.yaml:16: motion.harmonics: expected an integer"},
      // out of range
      {replaced("mass: 0.5", "mass: -0.5"),
       "bad.yaml:9: model.payloads[0].mass: expected a finite value > 0, got -0.5"},
      {replaced("bandwidth: 30", "bandwidth: 0"), "bad.yaml:18: gains.bandwidth: expected"},
      // names the robot does not have
      {replaced("robot: panda", "robot: pandaa"), "bad.yaml:3: robot: "},
      {replaced("body: panda_link7", "body: panda_link77"), "bad.yaml:8: model.payloads[0].body: "},
      {replaced("panda_joint1: 0.3", "panda_joint11: 0.3"),
       "bad.yaml:13: model.torque_offsets.panda_joint11: expected a joint of panda (panda_joint1"},
      {replaced("gains:\n", "gains:\n  joints:\n    elbow: {kp: 1, kd: 1}\n"),
       "bad.yaml:19: gains.joints.elbow: expected a joint of panda"},
      // a motion the robot cannot do, a missing key
      {replaced("type: fourier", "type: stance"),
       "bad.yaml:15: motion.type: expected fourier for a fixed-base robot"},
      {replaced("robot: panda\n", ""), "bad.yaml:1: robot: missing"},
      // optional sensors
      {replaced("duration: 2", "duration: 2\nsensors: {force_torque: yes please}"),
       "bad.yaml:5: sensors.force_torque: expected"},
      {replaced("duration: 2", "duration: 2\nsensors: {torque: true}"),
       "bad.yaml:5: sensors.torque: unknown key; expected one of force_torque"},
      {replaced("      mass: 0.5\n", ""), "bad.yaml:7: model.payloads[0].mass: missing"},
  };
  for (const auto& c : cases) {
    const std::string error = errorOf(c.text);
    EXPECT_NE(error.find(c.expected), std::string::npos)
        << "expected \"" << c.expected << "\"\ngot      \"" << error << "\"";
  }
}

TEST(ScenarioFiles, NamesAndBuiltInsAreFoundOrListed) {
  EXPECT_EQ(SimulateJob::builtIn("panda").scenario.name, "panda");
  try {
    SimulateJob::builtIn("no-such-scenario");
    FAIL() << "no error";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("go2-payload-3kg"), std::string::npos) << e.what();
  }
  EXPECT_THROW(SimulateJob::load((scenarioFolder() / "missing.yaml").string()), InputError);
  // --list: one line per built-in, every description starting in the same column, after a space
  std::istringstream list(SimulateJob::list());
  std::string line;
  size_t column = 0;
  for (const auto& builtin : sim::scenarios()) {
    ASSERT_TRUE(std::getline(list, line));
    EXPECT_EQ(line.rfind(builtin.name + " ", 0), 0u) << line;
    const size_t start = line.find(builtin.description);
    ASSERT_NE(start, std::string::npos) << line;
    if (column == 0) column = start;
    EXPECT_EQ(start, column) << line;
  }
  EXPECT_FALSE(std::getline(list, line)) << line;  // and no more lines
}

}  // namespace
}  // namespace heft::jobs

// Progress lines are for a person at a terminal: under a pseudo-terminal (util-linux `script`)
// heft simulate prints them; to a file or a pipe, and with --quiet, it does not.
TEST(SimulateCli, ProgressLinesOnATerminalOnlyAndNotWithQuiet) {
  const std::filesystem::path dir = std::filesystem::path(HEFT_BINARY_DIR) / "test-scratch" /
                                    "simulate_job" / ("progress-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const char* env = std::getenv("HEFT_BINARY_DIR");
  const std::string heft = std::string(env != nullptr ? env : HEFT_BINARY_DIR) + "/bin/heft";
  const std::string run = heft + " simulate go2-payload-3kg --duration 1 --overwrite --out " +
                          (dir / "log.h5").string();
  auto text = [&](const std::string& name) {
    std::ifstream in(dir / name);
    return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  };
  const std::string line = "] simulating go2-payload-3kg: 1 s of go2";
  ASSERT_EQ(
      std::system(("script -qec '" + run + "' /dev/null > " + (dir / "tty.txt").string() + " 2>&1")
                      .c_str()),
      0);
  EXPECT_NE(text("tty.txt").find(line), std::string::npos) << text("tty.txt");
  ASSERT_EQ(
      std::system(
          (run + " > " + (dir / "out.txt").string() + " 2> " + (dir / "err.txt").string()).c_str()),
      0);
  EXPECT_EQ(text("err.txt").find("simulating"), std::string::npos) << text("err.txt");
  EXPECT_NE(text("err.txt").find("scenario  go2-payload-3kg: completed"), std::string::npos);
  ASSERT_EQ(std::system(("script -qec '" + run + " --quiet' /dev/null > " +
                         (dir / "quiet.txt").string() + " 2>&1")
                            .c_str()),
            0);
  EXPECT_EQ(text("quiet.txt").find("simulating"), std::string::npos) << text("quiet.txt");
}
