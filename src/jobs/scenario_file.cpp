// Scenario files of `heft simulate FILE.yaml` (docs/guide/simulate.md lists every key): the reader
// (SimulateJob::load / parse) and the writer (SimulateJob::toYaml) share one table of keys per
// options struct, so the two cannot list different keys.
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <set>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "heft/common/error.hpp"
#include "heft/io/atomic_file.hpp"
#include "heft/jobs/simulate_job.hpp"
#include "heft/model/model.hpp"
#include "yaml_section.hpp"

#include <pinocchio/multibody/model.hpp>

namespace heft::jobs {

namespace fs = std::filesystem;

namespace {

// ---- the keys of each options struct --------------------------------------------------------

template <typename T>
using Numbers = std::vector<std::pair<const char*, double T::*>>;

const Numbers<sim::StanceMotionOptions>& stanceNumbers() {
  using O = sim::StanceMotionOptions;
  static const Numbers<O> keys = {{"settle", &O::settle},
                                  {"phase_duration", &O::phase_duration},
                                  {"ramp", &O::ramp},
                                  {"roll_amplitude", &O::roll_amplitude},
                                  {"pitch_amplitude", &O::pitch_amplitude},
                                  {"yaw_amplitude", &O::yaw_amplitude},
                                  {"rotation_frequency", &O::rotation_frequency},
                                  {"squat_depth", &O::squat_depth},
                                  {"squat_frequency", &O::squat_frequency},
                                  {"trot_height", &O::trot_height},
                                  {"trot_frequency", &O::trot_frequency},
                                  {"trot_swing", &O::trot_swing},
                                  {"hop_flight", &O::hop_flight},
                                  {"hop_push", &O::hop_push},
                                  {"hop_clearance", &O::hop_clearance}};
  return keys;
}

const Numbers<sim::FourierExcitationOptions>& fourierNumbers() {
  using O = sim::FourierExcitationOptions;
  static const Numbers<O> keys = {{"base_frequency", &O::base_frequency},
                                  {"limit_margin", &O::limit_margin},
                                  {"velocity_fraction", &O::velocity_fraction},
                                  {"max_acceleration", &O::max_acceleration},
                                  {"ramp", &O::ramp},
                                  {"unlimited_amplitude", &O::unlimited_amplitude}};
  return keys;
}

const Numbers<sim::HumanoidMotionOptions>& humanoidNumbers() {
  using O = sim::HumanoidMotionOptions;
  static const Numbers<O> keys = {
      {"settle", &O::settle}, {"phase_duration", &O::phase_duration}, {"ramp", &O::ramp}};
  return keys;
}

const Numbers<sim::HumanoidPhase>& phaseNumbers() {
  using O = sim::HumanoidPhase;
  static const Numbers<O> keys = {{"squat_depth", &O::squat_depth},
                                  {"squat_frequency", &O::squat_frequency},
                                  {"shift_amplitude", &O::shift_amplitude},
                                  {"shift_frequency", &O::shift_frequency},
                                  {"step_height", &O::step_height},
                                  {"step_shift", &O::step_shift},
                                  {"step_transfer", &O::step_transfer},
                                  {"step_swing", &O::step_swing},
                                  {"step_landing_speed", &O::step_landing_speed}};
  return keys;
}

const Numbers<sim::JointWave>& waveNumbers() {
  using O = sim::JointWave;
  static const Numbers<O> keys = {
      {"amplitude", &O::amplitude}, {"frequency", &O::frequency}, {"phase", &O::phase}};
  return keys;
}

const Numbers<sim::NoiseProfile>& noiseNumbers() {
  using O = sim::NoiseProfile;
  static const Numbers<O> keys = {{"encoder_noise", &O::encoder_noise},
                                  {"encoder_resolution", &O::encoder_resolution},
                                  {"torque_noise", &O::torque_noise},
                                  {"torque_bias", &O::torque_bias},
                                  {"joint_time_jitter", &O::joint_time_jitter},
                                  {"imu_rate", &O::imu_rate},
                                  {"gyro_noise", &O::gyro_noise},
                                  {"gyro_bias", &O::gyro_bias},
                                  {"accel_noise", &O::accel_noise},
                                  {"accel_bias", &O::accel_bias},
                                  {"orientation_noise", &O::orientation_noise},
                                  {"orientation_bias", &O::orientation_bias},
                                  {"imu_time_jitter", &O::imu_time_jitter},
                                  {"mocap_rate", &O::mocap_rate},
                                  {"mocap_position_noise", &O::mocap_position_noise},
                                  {"mocap_orientation_noise", &O::mocap_orientation_noise},
                                  {"mocap_dropout", &O::mocap_dropout},
                                  {"mocap_burst_probability", &O::mocap_burst_probability},
                                  {"mocap_burst_duration", &O::mocap_burst_duration},
                                  {"mocap_time_jitter", &O::mocap_time_jitter},
                                  {"contact_threshold", &O::contact_threshold},
                                  {"contact_force_noise", &O::contact_force_noise},
                                  {"ft_force_noise", &O::ft_force_noise},
                                  {"ft_force_bias", &O::ft_force_bias},
                                  {"ft_torque_noise", &O::ft_torque_noise},
                                  {"ft_torque_bias", &O::ft_torque_bias}};
  return keys;
}

template <typename T>
std::vector<std::string> keysOf(const Numbers<T>& numbers, std::vector<std::string> more) {
  for (const auto& [key, member] : numbers) more.emplace_back(key);
  return more;
}

std::string join(const std::vector<std::string>& names) {
  std::string s;
  for (const auto& n : names) s += (s.empty() ? "" : ", ") + n;
  return s;
}

const char* motionName(sim::Motion motion) {
  switch (motion) {
    case sim::Motion::Stance:
      return "stance";
    case sim::Motion::Fourier:
      return "fourier";
    case sim::Motion::Humanoid:
      return "humanoid";
  }
  return "?";
}

const char* waveformName(sim::MassVariation::Waveform w) {
  switch (w) {
    case sim::MassVariation::Waveform::Square:
      return "square";
    case sim::MassVariation::Waveform::Sine:
      return "sine";
    case sim::MassVariation::Waveform::Step:
      return "step";
  }
  return "?";
}

// ---- reading --------------------------------------------------------------------------------

// A mapping whose keys must be among `allowed` (checked at once: a typo is an error naming the
// keys it could have been).
class Section : public yaml::YamlSection {
 public:
  Section(const YAML::Node& node, std::string path, const std::string& source,
          const std::vector<std::string>& allowed)
      : yaml::YamlSection(node, path, source, "docs/guide/simulate.md"),
        node_(node),
        path_(std::move(path)),
        source_(source) {
    if (!node || !node.IsMap()) return;
    for (const auto& kv : node) {
      const std::string key = kv.first.as<std::string>();
      if (std::find(allowed.begin(), allowed.end(), key) == allowed.end())
        fail(kv.first, field(key), "unknown key; expected one of " + join(allowed));
    }
  }

  const YAML::Node& node() const { return node_; }
  const std::string& path() const { return path_; }
  const std::string& source() const { return source_; }

  // Every number of `numbers` present in the section (finite; ranges are the struct's validate).
  template <typename T>
  void readNumbers(const Numbers<T>& numbers, T& object) {
    for (const auto& [key, member] : numbers) read(key, object.*member, yaml::finite);
  }

  // A list of `size` finite numbers (any length when size < 0).
  Eigen::VectorXd vector(const std::string& key, int size = -1) {
    const YAML::Node n = raw(key);
    std::vector<double> x;
    try {
      x = n.as<std::vector<double>>();
    } catch (const YAML::Exception&) {
      fail(n, field(key), "expected a list of numbers, got '" + text(n) + "'");
    }
    if (size >= 0 && static_cast<int>(x.size()) != size)
      fail(n, field(key),
           "expected " + std::to_string(size) + " numbers, got " + std::to_string(x.size()));
    for (double v : x) {
      if (!std::isfinite(v)) fail(n, field(key), "expected finite numbers");
    }
    return Eigen::Map<const Eigen::VectorXd>(x.data(), static_cast<Eigen::Index>(x.size()));
  }
  void read3(const std::string& key, Vector3& v) {
    if (has(key)) v = vector(key, 3);
  }

  // A list of names.
  std::vector<std::string> names(const std::string& key) {
    const YAML::Node n = raw(key);
    try {
      return n.as<std::vector<std::string>>();
    } catch (const YAML::Exception&) {
      fail(n, field(key), "expected a list of names, got '" + text(n) + "'");
    }
  }

  // A string that must be present and not empty.
  std::string required(const std::string& key, const std::string& what) {
    if (!has(key)) fail(node_, field(key), "missing (" + what + ")");
    std::string value;
    read(key, value);
    if (value.empty()) fail(node_[key], field(key), "expected " + what + ", got \"\"");
    return value;
  }

  // A list under `key` (absent: empty), each item a Section named key[i].
  template <typename F>
  void forEachItem(const std::string& key, const std::vector<std::string>& allowed, F&& f) {
    if (!has(key)) return;
    const YAML::Node list = raw(key);
    if (!list.IsSequence()) fail(list, field(key), "expected a list");
    for (std::size_t i = 0; i < list.size(); ++i) {
      Section item(list[i], field(key) + "[" + std::to_string(i) + "]", source_, allowed);
      f(item);
    }
  }

  // A mapping under `key` from names to values: f(name, name node, value node, field).
  template <typename F>
  void forEachNamed(const std::string& key, F&& f) {
    if (!has(key)) return;
    const YAML::Node map = raw(key);
    if (!map.IsMap()) fail(map, field(key), "expected a mapping of names to values");
    for (const auto& kv : map) {
      const std::string name = kv.first.as<std::string>();
      f(name, kv.first, kv.second, field(key) + "." + name);
    }
  }

  // A number node (value of a named mapping).
  double number(const YAML::Node& n, const std::string& where) const {
    try {
      const double x = n.as<double>();
      if (std::isfinite(x)) return x;
    } catch (const YAML::Exception&) {
    }
    fail(n, where, "expected a finite number, got '" + text(n) + "'");
  }

  // Runs `f` (a struct's validate()); its InputError becomes one naming this section's line.
  template <typename F>
  void check(F&& f) const {
    try {
      f();
    } catch (const InputError& e) {
      fail(node_, path_.empty() ? std::string("config") : path_, e.what());
    }
  }

  static std::string text(const YAML::Node& n) {
    if (n.IsScalar()) return n.Scalar();
    if (n.IsSequence()) return "a list";
    if (n.IsMap()) return "a mapping";
    return "nothing";
  }

 private:
  YAML::Node node_;
  std::string path_;
  const std::string& source_;
};

// The robot of the file: the names its bodies, joints and frames may take.
struct RobotNames {
  model::RobotModel robot;
  std::vector<std::string> joints;  // actuated 1-DoF joints, in order (sim::SimModel::jointNames)
  std::set<std::string> payloads;   // names of the file's payloads (mass variations may use them)

  explicit RobotNames(model::RobotModel model) : robot(std::move(model)) {
    const pinocchio::Model& m = robot.pinocchio();
    for (pinocchio::JointIndex j = 1; j < static_cast<pinocchio::JointIndex>(m.njoints); ++j) {
      if (j == 1 && robot.hasFreeFlyer()) continue;
      joints.push_back(m.names[j]);
    }
  }
  int nu() const { return static_cast<int>(joints.size()); }

  void joint(const Section& s, const YAML::Node& n, const std::string& field,
             const std::string& name) const {
    if (std::find(joints.begin(), joints.end(), name) == joints.end())
      s.fail(n, field,
             "expected a joint of " + robot.displayName() + " (" + join(joints) + "), got \"" +
                 name + "\"");
  }
  void body(const Section& s, const YAML::Node& n, const std::string& field,
            const std::string& name) const {
    try {
      robot.bodyIndex(name);
    } catch (const InputError& e) {
      s.fail(n, field, e.what());
    }
  }
  void frame(const Section& s, const YAML::Node& n, const std::string& field,
             const std::string& name) const {
    if (!robot.pinocchio().existFrame(name))
      s.fail(n, field, "expected a frame of " + robot.displayName() + ", got \"" + name + "\"");
  }
};

// Reads a name key and checks it with robot.joint / body / frame.
template <typename Check>
std::string namedKey(Section& s, const std::string& key, const std::string& what, Check&& check) {
  const std::string name = s.required(key, what);
  check(s, s.node()[key], s.field(key), name);
  return name;
}

void readPayloads(Section& m, RobotNames& robot, sim::SimModelOptions& model) {
  m.forEachItem("payloads", {"name", "body", "mass", "com", "inertia", "box"}, [&](Section& s) {
    sim::PayloadSpec p;
    s.read("name", p.name);
    if (p.name.empty() || !robot.payloads.insert(p.name).second)
      s.fail(s.node(), s.field("name"),
             "expected a unique, non-empty name, got \"" + p.name + "\"");
    p.body = namedKey(s, "body", "a body of the robot", [&](auto&&... a) { robot.body(a...); });
    if (!s.has("mass")) s.fail(s.node(), s.field("mass"), "missing (the payload's mass [kg])");
    s.read("mass", p.payload.mass, yaml::positive);
    s.read3("com", p.payload.com);
    if (s.has("inertia") && s.has("box"))
      s.fail(s.node(), s.field("box"), "expected inertia or box, got both");
    if (s.has("inertia")) {
      const Eigen::VectorXd i = s.vector("inertia", 6);  // Ixx Iyy Izz Ixy Ixz Iyz
      p.payload.inertia << i[0], i[3], i[4], i[3], i[1], i[5], i[4], i[5], i[2];
    } else if (s.has("box")) {
      // a solid box of edge lengths a (x), b (y), c (z) centered at the COM
      const Eigen::VectorXd e = s.vector("box", 3);
      const double mass = p.payload.mass, a = e[0], b = e[1], c = e[2];
      if (!(a >= 0 && b >= 0 && c >= 0))
        s.fail(s.node()["box"], s.field("box"), "expected three edge lengths >= 0 m");
      p.payload.inertia = Matrix3::Zero();
      p.payload.inertia(0, 0) = mass * (b * b + c * c) / 12;
      p.payload.inertia(1, 1) = mass * (a * a + c * c) / 12;
      p.payload.inertia(2, 2) = mass * (a * a + b * b) / 12;
    }
    s.check([&] { p.payload.validate(); });
    model.payloads.push_back(p);
  });
}

sim::MassVariation::Waveform parseWaveform(const std::string& name) {
  for (auto w : {sim::MassVariation::Waveform::Square, sim::MassVariation::Waveform::Sine,
                 sim::MassVariation::Waveform::Step}) {
    if (name == waveformName(w)) return w;
  }
  throw InputError("expected square, sine or step, got \"" + name + "\"");
}

void readModelLists(Section& m, RobotNames& robot, sim::SimModelOptions& model) {
  m.forEachItem("link_edits", {"body", "mass_scale", "com_shift"}, [&](Section& s) {
    sim::LinkEdit e;
    e.body = namedKey(s, "body", "a body of the robot", [&](auto&&... a) { robot.body(a...); });
    s.read("mass_scale", e.mass_scale, yaml::positive);
    s.read3("com_shift", e.com_shift);
    model.link_edits.push_back(e);
  });
  readPayloads(m, robot, model);
  if (m.has("passive_joints")) {
    model.passive_joints = m.names("passive_joints");
    for (const auto& j : model.passive_joints)
      robot.joint(m, m.node()["passive_joints"], m.field("passive_joints"), j);
  }
  if (m.has("contact_frames")) {
    model.contact_frames = m.names("contact_frames");
    for (const auto& f : model.contact_frames)
      robot.frame(m, m.node()["contact_frames"], m.field("contact_frames"), f);
  }
  m.forEachItem("contact_points", {"name", "frame", "offset"}, [&](Section& s) {
    sim::ContactPoint c;
    c.name = s.required("name", "a unique name");
    c.frame = namedKey(s, "frame", "a frame of the robot", [&](auto&&... a) { robot.frame(a...); });
    s.read3("offset", c.offset);
    model.contact_points.push_back(c);
  });
  m.forEachItem("mass_variations",
                {"body", "waveform", "offset", "amplitude", "frequency", "step_time"},
                [&](Section& s) {
                  sim::MassVariation v;
                  v.body = s.required("body", "a payload or body name");
                  if (!robot.payloads.count(v.body))
                    robot.body(s, s.node()["body"], s.field("body"), v.body);
                  if (s.has("waveform")) v.waveform = yaml::located(s, "waveform", parseWaveform);
                  s.read("offset", v.offset, yaml::finite);
                  s.read("amplitude", v.amplitude, yaml::finite);
                  s.read("frequency", v.frequency, yaml::finite);
                  s.read("step_time", v.step_time, yaml::finite);
                  model.mass_variations.push_back(v);
                });
}

void readModelMaps(Section& m, const RobotNames& robot, sim::SimModelOptions& model) {
  m.forEachNamed("joint_friction", [&](const std::string& joint, const YAML::Node& key,
                                       const YAML::Node& value, const std::string& field) {
    robot.joint(m, key, field, joint);
    Section s(value, field, m.source(), {"damping", "frictionloss", "armature"});
    sim::JointFriction f;
    s.read("damping", f.damping, yaml::nonNegative);
    s.read("frictionloss", f.frictionloss, yaml::nonNegative);
    s.read("armature", f.armature, yaml::nonNegative);
    model.joint_friction[joint] = f;
  });
  m.forEachNamed("actuators", [&](const std::string& joint, const YAML::Node& key,
                                  const YAML::Node& value, const std::string& field) {
    robot.joint(m, key, field, joint);
    Section s(value, field, m.source(), {"gain", "saturation"});
    sim::ActuatorModel a;
    s.read("gain", a.gain, yaml::positive);
    s.read("saturation", a.saturation, yaml::nonNegative);
    model.actuators[joint] = a;
  });
  m.forEachNamed("torque_offsets", [&](const std::string& joint, const YAML::Node& key,
                                       const YAML::Node& value, const std::string& field) {
    robot.joint(m, key, field, joint);
    model.torque_offsets[joint] = m.number(value, field);
  });
}

void readModel(const YAML::Node& node, const std::string& source, RobotNames& robot,
               sim::SimModelOptions& model) {
  Section m(node, "model", source,
            {"timestep", "contact_radius", "floor_friction", "imu_frame", "imu_frame_optional",
             "contact_frames", "contact_points", "link_edits", "payloads", "joint_friction",
             "actuators", "mass_variations", "torque_offsets", "passive_joints"});
  m.read("timestep", model.timestep, yaml::positive);
  m.read("contact_radius", model.contact_radius, yaml::positive);
  m.read("floor_friction", model.floor_friction, yaml::positive);
  m.read("imu_frame", model.imu_frame);
  m.read("imu_frame_optional", model.imu_frame_optional);
  if (!model.imu_frame_optional && !model.imu_frame.empty())
    robot.frame(m, m.node()["imu_frame"], m.field("imu_frame"), model.imu_frame);
  readModelLists(m, robot, model);
  readModelMaps(m, robot, model);
  m.check([&] { model.validate(); });
}

std::vector<sim::JointWave> readWaves(Section& parent, const std::string& key,
                                      const RobotNames& robot) {
  std::vector<sim::JointWave> waves;
  parent.forEachItem(key, keysOf(waveNumbers(), {"joint"}), [&](Section& s) {
    sim::JointWave w;
    w.joint = namedKey(s, "joint", "a joint of the robot", [&](auto&&... a) { robot.joint(a...); });
    s.readNumbers(waveNumbers(), w);
    waves.push_back(w);
  });
  return waves;
}

void readHumanoid(Section& m, const RobotNames& robot, sim::HumanoidMotionOptions& h) {
  m.readNumbers(humanoidNumbers(), h);
  m.forEachNamed("posture", [&](const std::string& joint, const YAML::Node& key,
                                const YAML::Node& value, const std::string& field) {
    robot.joint(m, key, field, joint);
    h.posture[joint] = m.number(value, field);
  });
  if (m.has("soles")) {
    h.soles = m.names("soles");
    for (const auto& f : h.soles) robot.frame(m, m.node()["soles"], m.field("soles"), f);
  }
  m.forEachItem("phases", keysOf(phaseNumbers(), {"joints"}), [&](Section& s) {
    sim::HumanoidPhase phase;
    s.readNumbers(phaseNumbers(), phase);
    phase.joints = readWaves(s, "joints", robot);
    h.phases.push_back(phase);
  });
  h.continuous = readWaves(m, "continuous", robot);
  m.check([&] { h.validate(); });
}

// `series:` explicit Fourier coefficients by joint: {q0, a: [...], b: [...], base_frequency}.
void readSeries(Section& m, const RobotNames& robot, sim::FourierExcitationOptions& o) {
  m.forEachNamed("series", [&](const std::string& joint, const YAML::Node& key,
                               const YAML::Node& value, const std::string& field) {
    robot.joint(m, key, field, joint);
    Section s(value, field, m.source(), {"q0", "a", "b", "base_frequency"});
    excite::FourierSeries series;
    series.base_frequency = o.base_frequency;
    if (!s.has("q0")) s.fail(value, s.field("q0"), "missing (the joint's offset [rad])");
    s.read("q0", series.q0, yaml::finite);
    s.read("base_frequency", series.base_frequency, yaml::positive);
    if (s.has("a")) series.a = s.vector("a");
    if (s.has("b")) series.b = s.vector("b", static_cast<int>(series.a.size()));
    if (series.a.size() != series.b.size())
      s.fail(value, s.field("b"),
             "expected as many numbers as a (" + std::to_string(series.a.size()) + ")");
    o.series[joint] = series;
  });
}

// motion.commands: {degree, segment_duration, points: six lists (x, y, z, roll, pitch, yaw) of
// segments (degree + 1) control points, hop_flight: one per segment}, the form heft::sampling's
// active exploration designs.
void readCommands(Section& m, double hop_push, sim::BezierCommands& commands) {
  Section c(m.raw("commands"), m.field("commands"), m.source(),
            {"degree", "segment_duration", "points", "hop_flight"});
  c.read("degree", commands.degree, yaml::positiveCount);
  if (c.has("hop_flight")) commands.hop_flight = c.vector("hop_flight");
  c.read("segment_duration", commands.segment_duration, yaml::positive);
  const YAML::Node rows = c.raw("points");
  if (!rows || !rows.IsSequence() || rows.size() != sim::BezierCommands::kChannels)
    c.fail(rows ? rows : c.node(), c.field("points"),
           "expected 6 lists of control points (x, y, z, roll, pitch, yaw)");
  for (std::size_t r = 0; r < rows.size(); ++r) {
    const std::string where = c.field("points") + "[" + std::to_string(r) + "]";
    if (!rows[r].IsSequence()) c.fail(rows[r], where, "expected a list of numbers");
    if (r == 0) commands.points.resize(sim::BezierCommands::kChannels, rows[0].size());
    if (rows[r].size() != static_cast<std::size_t>(commands.points.cols()))
      c.fail(rows[r], where,
             "expected " + std::to_string(commands.points.cols()) + " numbers, as points[0]");
    for (std::size_t i = 0; i < rows[r].size(); ++i)
      commands.points(static_cast<Eigen::Index>(r), static_cast<Eigen::Index>(i)) =
          c.number(rows[r][i], where);
  }
  c.check([&] { commands.validate(hop_push); });
}

void readMotion(const YAML::Node& node, const std::string& source, const RobotNames& robot,
                sim::Scenario& scenario) {
  auto failAt = [&](const YAML::Node& n, const std::string& where, const std::string& what) {
    throw InputError(source + ":" + std::to_string(n.Mark().line + 1) + ": " + where + ": " + what);
  };
  if (!node || node.IsNull())
    throw InputError(source + ": motion: missing (a mapping with type and its options)");
  if (!node.IsMap()) failAt(node, "motion", "expected a mapping of keys to values");
  if (!node["type"]) failAt(node, "motion.type", "missing (stance, fourier or humanoid)");
  const std::string type = node["type"].as<std::string>("");
  // the motion the robot can do: stance and humanoid stand on a floating base
  const bool free_flyer = robot.robot.hasFreeFlyer();
  const std::string where = robot.robot.displayName();
  if (type == "stance" || type == "humanoid") {
    if (!free_flyer)
      failAt(node["type"], "motion.type",
             "expected fourier for a fixed-base robot (" + where + "), got " + type);
  } else if (type == "fourier") {
    if (free_flyer)
      failAt(node["type"], "motion.type",
             "expected stance or humanoid for a free-flyer robot (" + where + "), got " + type);
  } else {
    failAt(node["type"], "motion.type",
           "expected stance, fourier or humanoid, got \"" + type + "\"");
  }
  std::vector<std::string> keys;
  if (type == "stance") keys = keysOf(stanceNumbers(), {"type", "posture", "commands"});
  if (type == "fourier")
    keys = keysOf(fourierNumbers(), {"type", "harmonics", "coefficient_seed", "center", "series"});
  if (type == "humanoid")
    keys = keysOf(humanoidNumbers(), {"type", "posture", "soles", "phases", "continuous"});
  Section m(node, "motion", source, keys);
  m.raw("type");
  if (type == "stance") {
    scenario.motion = sim::Motion::Stance;
    auto& o = scenario.stance;
    m.readNumbers(stanceNumbers(), o);
    if (m.has("posture")) o.posture = m.vector("posture", robot.nu());
    if (m.has("commands")) readCommands(m, o.hop_push, o.commands);
    m.check([&] { o.validate(robot.nu()); });
  } else if (type == "fourier") {
    scenario.motion = sim::Motion::Fourier;
    auto& o = scenario.fourier;
    m.readNumbers(fourierNumbers(), o);
    m.read("harmonics", o.harmonics, yaml::positiveCount);
    m.read("coefficient_seed", o.coefficient_seed);
    if (m.has("center")) o.center = m.vector("center", robot.nu());
    readSeries(m, robot, o);
    m.check([&] { o.validate(robot.nu()); });
  } else {
    scenario.motion = sim::Motion::Humanoid;
    readHumanoid(m, robot, scenario.humanoid);
  }
}

void readGains(const YAML::Node& node, const std::string& source, const RobotNames& robot,
               sim::Scenario& scenario) {
  Section g(node, "gains", source, {"kp", "kd", "bandwidth", "damping_ratio", "joints"});
  g.read("kp", scenario.kp, yaml::nonNegative);
  g.read("kd", scenario.kd, yaml::nonNegative);
  g.read("bandwidth", scenario.bandwidth, yaml::positive);
  g.read("damping_ratio", scenario.damping_ratio, yaml::positive);
  g.forEachNamed("joints", [&](const std::string& joint, const YAML::Node& key,
                               const YAML::Node& value, const std::string& field) {
    robot.joint(g, key, field, joint);
    Section s(value, field, source, {"kp", "kd"});
    if (!s.has("kp") || !s.has("kd")) s.fail(value, field, "expected kp and kd");
    std::pair<double, double> kp_kd;
    s.read("kp", kp_kd.first, yaml::nonNegative);
    s.read("kd", kp_kd.second, yaml::nonNegative);
    scenario.joint_gains[joint] = kp_kd;
  });
}

void readBounds(const YAML::Node& node, const std::string& source, sim::Scenario& scenario) {
  Section b(node, "bounds", source, {"min_base_height", "max_tilt", "max_tracking_error"});
  b.read("min_base_height", scenario.bounds.min_base_height, yaml::finite);
  b.read("max_tilt", scenario.bounds.max_tilt, yaml::positive);
  b.read("max_tracking_error", scenario.max_tracking_error, yaml::positive);
}

// `noise:` a profile name, or a mapping: a profile (`base`, default none) with numbers replaced.
void readNoise(Section& top, sim::SimulationOptions& options) {
  if (!top.has("noise")) return;
  const YAML::Node n = top.raw("noise");
  if (n.IsScalar()) {
    options.noise = yaml::located(top, "noise", [](const std::string& name) {
      sim::NoiseProfile::fromName(name);
      return name;
    });
    return;
  }
  Section s(n, "noise", top.source(),
            keysOf(noiseNumbers(), {"name", "base", "velocity_by_differencing",
                                    "mocap_position_offset", "mocap_rpy_offset"}));
  sim::NoiseProfile p;
  if (s.has("base")) p = yaml::located(s, "base", sim::NoiseProfile::fromName);
  p.name = "custom";
  s.read("name", p.name);
  s.readNumbers(noiseNumbers(), p);
  s.read("velocity_by_differencing", p.velocity_by_differencing);
  s.read3("mocap_position_offset", p.mocap_position_offset);
  s.read3("mocap_rpy_offset", p.mocap_rpy_offset);
  s.check([&] { p.validate(); });
  options.profile = p;
}

}  // namespace

SimulateJob::Config SimulateJob::parse(const std::string& yaml_text, const std::string& source,
                                       const std::string& base_dir) {
  const YAML::Node root = yaml::loadYamlMapping(yaml_text, source, "robot, model, motion, ...");
  Config config;
  config.source = source;
  sim::Scenario& s = config.scenario;
  Section top(root, "", source,
              {"name", "description", "robot", "duration", "seed", "noise", "sensors",
               "stop_on_fall", "model", "motion", "gains", "bounds"});
  s.name = fs::path(source).stem().string();
  top.read("name", s.name);
  top.read("description", s.description);
  s.robot = top.required("robot", "a short name such as go2, or a path");
  if (s.robot.find('/') != std::string::npos || s.robot.find('.') != std::string::npos)
    s.robot = yaml::resolveConfigPath(base_dir, s.robot);
  const std::string robot_path = s.robot;
  RobotNames robot(yaml::located(top, "robot",
                                 [&](const std::string&) { return model::loadRobot(robot_path); }));
  top.read("duration", s.duration, yaml::positive);
  top.read("seed", config.options.seed);
  readNoise(top, config.options);
  {
    // optional sensors beyond what every log holds
    Section sensors(top.raw("sensors"), "sensors", source, {"force_torque"});
    sensors.read("force_torque", config.options.force_torque);
  }
  top.read("stop_on_fall", config.options.stop_on_fall);
  readModel(top.raw("model"), source, robot, s.model);
  readMotion(top.raw("motion"), source, robot, s);
  readGains(top.raw("gains"), source, robot, s);
  readBounds(top.raw("bounds"), source, s);
  try {
    config.validate();
  } catch (const InputError& e) {
    const std::string what = e.what();
    throw InputError(what.rfind(source, 0) == 0 ? what : source + ": " + what);
  }
  return config;
}

SimulateJob::Config SimulateJob::load(const std::string& path) {
  const std::string text = io::readTextFile(path);
  const fs::path folder = fs::path(path).parent_path();
  return parse(text, path, folder.empty() ? std::string(".") : folder.string());
}

// ---- writing --------------------------------------------------------------------------------

namespace {

// The shortest decimal that reads back to the same double, without an exponent between 1e-4 and
// 1e15 (60, not 6e+01).
std::string exact(double x) {
  char text[64];
  const bool plain = std::abs(x) >= 1e-4 && std::abs(x) < 1e15;
  for (int precision = 1; precision <= 17; ++precision) {
    std::snprintf(text, sizeof text, "%.*g", precision, x);
    if (std::strtod(text, nullptr) == x && !(plain && std::strchr(text, 'e'))) break;
  }
  return text;
}

std::string list(const Eigen::VectorXd& v) {
  std::string s = "[";
  for (Eigen::Index i = 0; i < v.size(); ++i) s += (i ? ", " : "") + exact(v[i]);
  return s + "]";
}

// A plain YAML scalar when it reads back as the same string, else a double-quoted one.
std::string quoted(const std::string& text) {
  static const std::set<std::string> reserved = {"true", "false", "yes", "no", "on",
                                                 "off",  "null",  "y",   "n",  "~"};
  bool plain = !text.empty() && !reserved.count(text) &&
               (std::isalpha(static_cast<unsigned char>(text[0])) || text[0] == '_');
  for (char c : text) {
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.' ||
          c == '/'))
      plain = false;
  }
  if (plain) return text;
  std::string s = "\"";
  for (char c : text) {
    if (c == '"' || c == '\\') s += '\\';
    s += c;
  }
  return s + "\"";
}

std::string names(const std::vector<std::string>& list) {
  std::string s = "[";
  for (std::size_t i = 0; i < list.size(); ++i) s += (i ? ", " : "") + quoted(list[i]);
  return s + "]";
}

// Lines of a YAML mapping, indented relative to their parent.
using Lines = std::vector<std::string>;

void add(Lines& lines, const std::string& key, const std::string& value) {
  lines.push_back(key + ": " + value);
}
void addNumber(Lines& lines, const std::string& key, double value) {
  add(lines, key, exact(value));
}
void addBlock(Lines& lines, const std::string& key, const Lines& block) {
  if (block.empty()) return;
  lines.push_back(key + ":");
  for (const auto& line : block) lines.push_back("  " + line);
}
// One item of a list of mappings.
void addItem(Lines& lines, const Lines& item) {
  if (item.empty()) lines.push_back("- {}");
  for (std::size_t i = 0; i < item.size(); ++i) lines.push_back((i ? "  " : "- ") + item[i]);
}

// The numbers of `numbers` that differ from the defaults.
template <typename T>
void addNumbers(Lines& lines, const Numbers<T>& numbers, const T& object) {
  const T defaults{};
  for (const auto& [key, member] : numbers) {
    if (object.*member != defaults.*member) addNumber(lines, key, object.*member);
  }
}

Lines payloadLines(const sim::PayloadSpec& p) {
  Lines l;
  add(l, "name", quoted(p.name));
  add(l, "body", quoted(p.body));
  addNumber(l, "mass", p.payload.mass);
  add(l, "com", list(p.payload.com));
  const Matrix3& I = p.payload.inertia;
  add(l, "inertia",
      list(
          (Eigen::VectorXd(6) << I(0, 0), I(1, 1), I(2, 2), I(0, 1), I(0, 2), I(1, 2)).finished()));
  return l;
}

Lines modelListLines(const sim::SimModelOptions& m) {
  Lines l;
  Lines edits, payloads, points, variations;
  for (const auto& e : m.link_edits) {
    Lines item;
    add(item, "body", quoted(e.body));
    if (e.mass_scale != 1) addNumber(item, "mass_scale", e.mass_scale);
    if (!e.com_shift.isZero(0)) add(item, "com_shift", list(e.com_shift));
    addItem(edits, item);
  }
  for (const auto& p : m.payloads) addItem(payloads, payloadLines(p));
  for (const auto& c : m.contact_points) {
    Lines item;
    add(item, "name", quoted(c.name));
    add(item, "frame", quoted(c.frame));
    add(item, "offset", list(c.offset));
    addItem(points, item);
  }
  for (const auto& v : m.mass_variations) {
    Lines item;
    add(item, "body", quoted(v.body));
    add(item, "waveform", waveformName(v.waveform));
    addNumber(item, "offset", v.offset);
    addNumber(item, "amplitude", v.amplitude);
    if (v.frequency != 0) addNumber(item, "frequency", v.frequency);
    if (v.step_time != 0) addNumber(item, "step_time", v.step_time);
    addItem(variations, item);
  }
  if (!m.contact_frames.empty()) add(l, "contact_frames", names(m.contact_frames));
  if (!m.passive_joints.empty()) add(l, "passive_joints", names(m.passive_joints));
  addBlock(l, "contact_points", points);
  addBlock(l, "link_edits", edits);
  addBlock(l, "payloads", payloads);
  addBlock(l, "mass_variations", variations);
  return l;
}

Lines modelLines(const sim::SimModelOptions& m) {
  const sim::SimModelOptions defaults;
  Lines l;
  if (m.timestep != defaults.timestep) addNumber(l, "timestep", m.timestep);
  if (m.contact_radius != defaults.contact_radius) addNumber(l, "contact_radius", m.contact_radius);
  if (m.floor_friction != defaults.floor_friction) addNumber(l, "floor_friction", m.floor_friction);
  if (m.imu_frame != defaults.imu_frame) add(l, "imu_frame", quoted(m.imu_frame));
  if (m.imu_frame_optional != defaults.imu_frame_optional)
    add(l, "imu_frame_optional", m.imu_frame_optional ? "true" : "false");
  for (const auto& line : modelListLines(m)) l.push_back(line);
  Lines friction, actuators, offsets;
  for (const auto& [joint, f] : m.joint_friction) {
    add(friction, quoted(joint),
        "{damping: " + exact(f.damping) + ", frictionloss: " + exact(f.frictionloss) +
            ", armature: " + exact(f.armature) + "}");
  }
  for (const auto& [joint, a] : m.actuators) {
    add(actuators, quoted(joint),
        "{gain: " + exact(a.gain) + ", saturation: " + exact(a.saturation) + "}");
  }
  for (const auto& [joint, offset] : m.torque_offsets) addNumber(offsets, quoted(joint), offset);
  addBlock(l, "joint_friction", friction);
  addBlock(l, "actuators", actuators);
  addBlock(l, "torque_offsets", offsets);
  return l;
}

Lines waveLines(const std::vector<sim::JointWave>& waves) {
  Lines l;
  for (const auto& w : waves) {
    Lines item;
    add(item, "joint", quoted(w.joint));
    addNumber(item, "amplitude", w.amplitude);
    addNumber(item, "frequency", w.frequency);
    if (w.phase != 0) addNumber(item, "phase", w.phase);
    addItem(l, item);
  }
  return l;
}

Lines motionLines(const sim::Scenario& s) {
  Lines l;
  add(l, "type", motionName(s.motion));
  if (s.motion == sim::Motion::Stance) {
    if (s.stance.posture.size() > 0) add(l, "posture", list(s.stance.posture));
    addNumbers(l, stanceNumbers(), s.stance);
    const sim::BezierCommands& c = s.stance.commands;
    if (c.points.size() > 0) {
      Lines commands, rows;
      add(commands, "degree", std::to_string(c.degree));
      addNumber(commands, "segment_duration", c.segment_duration);
      if (c.hop_flight.size() > 0) add(commands, "hop_flight", list(c.hop_flight));
      for (Eigen::Index r = 0; r < c.points.rows(); ++r)
        rows.push_back("- " + list(Eigen::VectorXd(c.points.row(r).transpose())));
      addBlock(commands, "points", rows);
      addBlock(l, "commands", commands);
    }
  } else if (s.motion == sim::Motion::Fourier) {
    const sim::FourierExcitationOptions defaults;
    if (s.fourier.harmonics != defaults.harmonics)
      add(l, "harmonics", std::to_string(s.fourier.harmonics));
    if (s.fourier.coefficient_seed != defaults.coefficient_seed)
      add(l, "coefficient_seed", std::to_string(s.fourier.coefficient_seed));
    if (s.fourier.center.size() > 0) add(l, "center", list(s.fourier.center));
    addNumbers(l, fourierNumbers(), s.fourier);
    Lines series;
    for (const auto& [joint, f] : s.fourier.series) {
      add(series, quoted(joint),
          "{q0: " + exact(f.q0) + ", base_frequency: " + exact(f.base_frequency) +
              ", a: " + list(f.a) + ", b: " + list(f.b) + "}");
    }
    addBlock(l, "series", series);
  } else {
    const sim::HumanoidMotionOptions& h = s.humanoid;
    addNumbers(l, humanoidNumbers(), h);
    if (h.soles != sim::HumanoidMotionOptions{}.soles) add(l, "soles", names(h.soles));
    Lines posture, phases;
    for (const auto& [joint, angle] : h.posture) addNumber(posture, quoted(joint), angle);
    addBlock(l, "posture", posture);
    for (const auto& phase : h.phases) {
      Lines item;
      addNumbers(item, phaseNumbers(), phase);
      addBlock(item, "joints", waveLines(phase.joints));
      addItem(phases, item);
    }
    if (!h.phases.empty()) addBlock(l, "phases", phases);
    addBlock(l, "continuous", waveLines(h.continuous));
  }
  return l;
}

Lines noiseLines(const sim::SimulationOptions& o) {
  Lines l;
  if (!o.profile) return l;
  const sim::NoiseProfile& p = *o.profile;
  add(l, "name", quoted(p.name));
  addNumbers(l, noiseNumbers(), p);
  if (p.velocity_by_differencing) add(l, "velocity_by_differencing", "true");
  if (!p.mocap_position_offset.isZero(0))
    add(l, "mocap_position_offset", list(p.mocap_position_offset));
  if (!p.mocap_rpy_offset.isZero(0)) add(l, "mocap_rpy_offset", list(p.mocap_rpy_offset));
  return l;
}

}  // namespace

std::string SimulateJob::toYaml(const Config& config) {
  const sim::Scenario& s = config.scenario;
  const sim::Scenario defaults;
  const sim::SimulationOptions options;
  Lines l;
  add(l, "name", quoted(s.name));
  if (!s.description.empty()) add(l, "description", quoted(s.description));
  add(l, "robot", quoted(s.robot));
  addNumber(l, "duration", s.duration);
  if (config.options.seed != options.seed) add(l, "seed", std::to_string(config.options.seed));
  if (config.options.profile) {
    addBlock(l, "noise", noiseLines(config.options));
  } else if (config.options.noise != options.noise) {
    add(l, "noise", quoted(config.options.noise));
  }
  if (config.options.force_torque) add(l, "sensors", "{force_torque: true}");
  if (config.options.stop_on_fall != options.stop_on_fall)
    add(l, "stop_on_fall", config.options.stop_on_fall ? "true" : "false");
  addBlock(l, "model", modelLines(s.model));
  addBlock(l, "motion", motionLines(s));
  Lines gains, joints;
  if (s.kp != defaults.kp) addNumber(gains, "kp", s.kp);
  if (s.kd != defaults.kd) addNumber(gains, "kd", s.kd);
  if (s.bandwidth != defaults.bandwidth) addNumber(gains, "bandwidth", s.bandwidth);
  if (s.damping_ratio != defaults.damping_ratio) addNumber(gains, "damping_ratio", s.damping_ratio);
  for (const auto& [joint, kp_kd] : s.joint_gains) {
    add(joints, quoted(joint), "{kp: " + exact(kp_kd.first) + ", kd: " + exact(kp_kd.second) + "}");
  }
  addBlock(gains, "joints", joints);
  addBlock(l, "gains", gains);
  Lines bounds;
  if (s.bounds.min_base_height != defaults.bounds.min_base_height)
    addNumber(bounds, "min_base_height", s.bounds.min_base_height);
  if (s.bounds.max_tilt != defaults.bounds.max_tilt)
    addNumber(bounds, "max_tilt", s.bounds.max_tilt);
  if (s.max_tracking_error != defaults.max_tracking_error)
    addNumber(bounds, "max_tracking_error", s.max_tracking_error);
  addBlock(l, "bounds", bounds);
  std::string text;
  for (const auto& line : l) text += line + "\n";
  return text;
}

}  // namespace heft::jobs
