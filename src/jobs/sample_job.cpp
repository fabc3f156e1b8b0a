#include "heft/jobs/sample_job.hpp"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cmath>
#include <sstream>

#include "heft/basestate/base_state.hpp"
#include "heft/common/error.hpp"
#include "heft/common/format.hpp"
#include "heft/inertia/inertia.hpp"
#include "heft/io/atomic_file.hpp"
#include "heft/io/log_io.hpp"
#include "heft/model/robots.hpp"
#include "heft/results/json.hpp"
#include "optimizer_section.hpp"
#include "result_files.hpp"
#include "yaml_section.hpp"

namespace heft::jobs {

namespace {

struct Section : yaml::YamlSection {
  Section(const YAML::Node& node, std::string path, const std::string& source)
      : yaml::YamlSection(node, std::move(path), source, "docs/guide/sample.md") {}
};

std::string num(double x, int precision = 4) { return formatNumber(x, precision); }

// Below this share of kappa (max |tau_cmd| / kappa) the tanh saturation is reported as barely
// observable: tanh(0.5) is 7.6 % below 0.5.
constexpr double kSaturationReach = 0.5;

// [lo, hi] with 0 <= lo < hi (`positive`: 0 < lo).
std::pair<double, double> readRange(Section& s, const YAML::Node& node, const std::string& key,
                                    bool positive) {
  std::vector<double> v;
  s.read(key, v);
  if (v.size() != 2 || !std::isfinite(v[0]) || !std::isfinite(v[1]) || v[0] >= v[1] ||
      (positive ? v[0] <= 0 : v[0] < 0))
    s.fail(
        node[key], s.field(key),
        std::string("expected [min, max] with ") + (positive ? "0 < min" : "0 <= min") + " < max");
  return {v[0], v[1]};
}

Vector3 readVector3(Section& s, const YAML::Node& node, const std::string& key) {
  std::vector<double> v;
  s.read(key, v);
  if (v.size() != 3 || !std::isfinite(v[0]) || !std::isfinite(v[1]) || !std::isfinite(v[2]))
    s.fail(node[key], s.field(key), "expected [x, y, z] in metres");
  return Vector3(v[0], v[1], v[2]);
}

// A list under `key` (absent: an empty node).
YAML::Node readList(Section& top, const std::string& key) {
  const YAML::Node list = top.raw(key);
  if (!list.IsNull() && !list.IsSequence()) top.fail(list, key, "expected a list");
  return list;
}

void readBodies(Section& top, const std::string& source, SampleJob::Config& config) {
  const YAML::Node list = readList(top, "bodies");
  for (std::size_t i = 0; i < list.size(); ++i) {
    const std::string path = "bodies[" + std::to_string(i) + "]";
    SampleJob::BodyChoice body;
    if (list[i].IsScalar()) {
      body.name = list[i].as<std::string>();
    } else {
      Section s(list[i], path, source);
      body.name = s.string("name");
      if (s.has("mass")) body.mass = readRange(s, list[i], "mass", true);
      if (s.has("com_min") || s.has("com_max")) {
        if (!s.has("com_min") || !s.has("com_max"))
          s.fail(list[i], path, "expected both com_min and com_max");
        body.com =
            std::make_pair(readVector3(s, list[i], "com_min"), readVector3(s, list[i], "com_max"));
      }
      if (s.has("inertia")) body.inertia = readRange(s, list[i], "inertia", true);
      s.finish();
    }
    if (body.name.empty()) top.fail(list[i], path + ".name", "missing (a body or joint name)");
    config.bodies.push_back(body);
  }
}

void readActuators(Section& top, const std::string& source, SampleJob::Config& config) {
  const YAML::Node list = readList(top, "actuators");
  for (std::size_t i = 0; i < list.size(); ++i) {
    const std::string path = "actuators[" + std::to_string(i) + "]";
    Section s(list[i], path, source);
    SampleJob::GroupChoice g;
    g.group.name = s.string("name");
    if (g.group.name.empty()) s.fail(list[i], path + ".name", "missing (hip, calf, ...)");
    s.read("joints", g.joints);
    if (g.joints.empty()) s.fail(list[i], path + ".joints", "expected a list of joint names");
    s.read("gain", g.group.gain, yaml::positive);
    s.read("saturation", g.group.saturation, yaml::nonNegative);
    if (s.has("gain_range"))
      std::tie(g.group.gain_min, g.group.gain_max) = readRange(s, list[i], "gain_range", true);
    if (s.has("saturation_range"))
      std::tie(g.group.saturation_min, g.group.saturation_max) =
          readRange(s, list[i], "saturation_range", true);
    if (s.has("sample")) {
      std::vector<std::string> what;
      s.read("sample", what);
      g.group.sample_gain = std::count(what.begin(), what.end(), "gain") > 0;
      g.group.sample_saturation = std::count(what.begin(), what.end(), "saturation") > 0;
      for (const std::string& w : what)
        if (w != "gain" && w != "saturation")
          s.fail(list[i]["sample"], path + ".sample",
                 "expected a list of gain and/or saturation, got \"" + w + "\"");
    }
    s.finish();
    config.actuators.push_back(g);
  }
}

void readJoints(Section& top, const std::string& source, SampleJob::Config& config) {
  const YAML::Node list = readList(top, "joints");
  for (std::size_t i = 0; i < list.size(); ++i) {
    const std::string path = "joints[" + std::to_string(i) + "]";
    Section s(list[i], path, source);
    SampleJob::JointChoice j;
    j.name = s.string("name");
    if (j.name.empty()) s.fail(list[i], path + ".name", "missing (a joint name)");
    s.read("damping", j.start.damping, yaml::nonNegative);
    s.read("frictionloss", j.start.frictionloss, yaml::nonNegative);
    s.read("armature", j.start.armature, yaml::nonNegative);
    s.read("damping_max", j.damping_max, yaml::nonNegative);
    s.read("frictionloss_max", j.frictionloss_max, yaml::nonNegative);
    s.read("armature_max", j.armature_max, yaml::nonNegative);
    s.finish();
    config.joints.push_back(j);
  }
}

void readClips(const YAML::Node& node, const std::string& source, sampling::SamplingOptions& o) {
  Section s(node, "clips", source);
  s.read("count", o.clips, yaml::positiveCount);
  s.read("min_horizon", o.min_horizon, yaml::positive);
  s.read("max_horizon", o.max_horizon, yaml::positive);
  s.read("seed", o.clip_seed);
  s.read("holdout_fraction", o.holdout_fraction, [](double f) {
    if (!(f >= 0 && f <= 0.5)) throw InputError("expected [0, 0.5], got " + formatNumber(f));
  });
  s.read("holdout_clips", o.holdout_clips, yaml::positiveCount);
  s.finish();
}

void readWeights(const YAML::Node& node, const std::string& source, sampling::CostWeights& w) {
  Section s(node, "weights", source);
  s.read("base_position", w.base_position, yaml::nonNegative);
  s.read("base_velocity", w.base_velocity, yaml::nonNegative);
  s.read("base_orientation", w.base_orientation, yaml::nonNegative);
  s.read("base_angular_velocity", w.base_angular_velocity, yaml::nonNegative);
  s.read("joint_position", w.joint_position, yaml::nonNegative);
  s.read("joint_velocity", w.joint_velocity, yaml::nonNegative);
  s.read("joint_torque", w.joint_torque, yaml::nonNegative);
  s.read("actuator_torque", w.actuator_torque, yaml::nonNegative);
  s.finish();
}

int jointIndex(const sim::SimModel& sim, const std::string& name, const std::string& where) {
  const std::vector<std::string>& names = sim.jointNames();
  const auto it = std::find(names.begin(), names.end(), name);
  if (it == names.end()) {
    std::string valid;
    for (const std::string& n : names) valid += (valid.empty() ? "" : ", ") + n;
    throw InputError(where + ": expected a joint of the robot (" + valid + "), got \"" + name +
                     "\"");
  }
  return static_cast<int>(it - names.begin());
}

}  // namespace

sampling::ParameterSpace SampleJob::space(const Config& config, const model::RobotModel& robot,
                                          const sim::SimModel& sim) {
  std::vector<sampling::SampledBody> bodies;
  for (std::size_t i = 0; i < config.bodies.size(); ++i) {
    const SampleJob::BodyChoice& choice = config.bodies[i];
    sampling::SampledBody b;
    try {
      b.joint = robot.bodyIndex(choice.name);
    } catch (const InputError& e) {
      throw InputError(config.source + ": bodies[" + std::to_string(i) + "]: " + e.what());
    }
    b.name = robot.body(b.joint).name;  // the link's name: the URDF writer's and the truth's
    b.start_pi = robot.pi(b.joint);
    b.range = sampling::defaultBodyRange(b.start_pi);
    if (choice.mass) std::tie(b.range.mass_min, b.range.mass_max) = *choice.mass;
    if (choice.com) std::tie(b.range.com_min, b.range.com_max) = *choice.com;
    if (choice.inertia) std::tie(b.range.inertia_min, b.range.inertia_max) = *choice.inertia;
    bodies.push_back(b);
  }
  std::vector<sampling::ActuatorGroup> groups;
  for (std::size_t i = 0; i < config.actuators.size(); ++i) {
    sampling::ActuatorGroup g = config.actuators[i].group;
    for (const std::string& name : config.actuators[i].joints)
      g.joints.push_back(
          jointIndex(sim, name, config.source + ": actuators[" + std::to_string(i) + "].joints"));
    groups.push_back(g);
  }
  std::vector<sampling::SampledJoint> joints;
  for (std::size_t i = 0; i < config.joints.size(); ++i) {
    const SampleJob::JointChoice& c = config.joints[i];
    sampling::SampledJoint j;
    j.name = c.name;
    j.joint = jointIndex(sim, c.name, config.source + ": joints[" + std::to_string(i) + "].name");
    j.start = c.start;
    j.damping_max = c.damping_max;
    j.frictionloss_max = c.frictionloss_max;
    j.armature_max = c.armature_max;
    joints.push_back(j);
  }
  const double floor = sim.hasFreeFlyer() && !sim.contactGeoms().empty() && config.ground_base
                           ? config.floor_offset_range
                           : 0.0;
  try {
    return sampling::ParameterSpace(bodies, groups, joints, floor);
  } catch (const InputError& e) {
    throw InputError(config.source + ": " + e.what());
  }
}

namespace {

// d pi / d x of body b at x (10 x 10, central differences): maps the covariance of the body's
// log-Cholesky coordinates (x units) to pi's.
Eigen::MatrixXd piJacobian(const sampling::ParameterSpace& space, const Eigen::VectorXd& x, int b) {
  Eigen::MatrixXd A(10, 10);
  const double h = 1e-4;
  Eigen::VectorXd xi = x;
  for (int j = 0; j < 10; ++j) {
    xi[10 * b + j] = x[10 * b + j] + h;
    const Vector10 plus = space.candidate(xi).body_pi[b];
    xi[10 * b + j] = x[10 * b + j] - h;
    const Vector10 minus = space.candidate(xi).body_pi[b];
    xi[10 * b + j] = x[10 * b + j];
    A.col(j) = (plus - minus) / (2 * h);
  }
  return A;
}

}  // namespace

void SampleJob::Config::validate() const {
  require(!robot.empty(), source + ": robot", "a robot", "nothing");
  require(!log.empty(), source + ": log", "a log path", "nothing");
  require(!bodies.empty() || !actuators.empty() || !joints.empty(),
          source + ": bodies, actuators, joints", "something to sample", "none of them");
  require(std::isfinite(kp) && kp >= 0 && std::isfinite(kd) && kd >= 0, source + ": replay",
          "gains >= 0", num(kp) + ", " + num(kd));
  requirePositive(contact_radius, source + ": simulator.contact_radius", " m");
  requirePositive(floor_friction, source + ": simulator.floor_friction", "");
  require(std::isfinite(floor_offset_range) && floor_offset_range >= 0,
          source + ": simulator.floor_offset_range", ">= 0 m", num(floor_offset_range));
  sampling.validate();
}

SampleJob::Config SampleJob::parse(const std::string& yaml_text, const std::string& source,
                                   const std::string& base_dir) {
  const YAML::Node root =
      yaml::loadYamlMapping(yaml_text, source, "robot, log, bodies, actuators, ...");
  Config config;
  config.source = source;
  Section top(root, "", source);
  std::tie(config.robot, config.log) = yaml::readRobotAndLog(top, root, base_dir);
  readBodies(top, source, config);
  readActuators(top, source, config);
  readJoints(top, source, config);
  readClips(top.raw("clips"), source, config.sampling);
  {
    Section s(top.raw("replay"), "replay", source);
    s.read("kp", config.kp, yaml::nonNegative);
    s.read("kd", config.kd, yaml::nonNegative);
    s.finish();
  }
  readWeights(top.raw("weights"), source, config.sampling.weights);
  yaml::readCmaesOptions(top.raw("optimizer"), source, "docs/guide/sample.md",
                         config.sampling.optimizer);
  top.read("threads", config.sampling.threads, yaml::nonNegativeCount);
  top.read("torque_offsets", config.sampling.weights.torque_offsets);
  {
    Section s(top.raw("simulator"), "simulator", source);
    s.read("contact_radius", config.contact_radius, yaml::positive);
    s.read("floor_friction", config.floor_friction, yaml::positive);
    s.read("ground_base", config.ground_base);
    s.read("floor_offset_range", config.floor_offset_range, yaml::nonNegative);
    s.finish();
  }
  if (top.has("more_logs")) {
    top.read("more_logs", config.more_logs);
    for (std::string& path : config.more_logs) path = yaml::resolveConfigPath(base_dir, path);
  }
  top.raw("robot");
  top.raw("log");
  top.finish();
  if (config.sampling.max_horizon < config.sampling.min_horizon)
    top.fail(root["clips"], "clips.max_horizon", "expected >= clips.min_horizon");
  yaml::validateNamingSource(config, source);
  return config;
}

SampleJob::Config SampleJob::load(const std::string& path) {
  return parse(io::readTextFile(path), path, yaml::configFolder(path));
}

SampleJob::Result SampleJob::run(const Config& config, Progress& progress) {
  progress.start();
  config.validate();
  Result result;
  result.config = config;
  const model::RobotModel robot = model::loadRobot(config.robot);
  sim::SimModelOptions sim_options;
  sim_options.contact_radius = config.contact_radius;
  sim_options.floor_friction = config.floor_friction;
  const sim::SimModel sim(robot, sim_options);
  const sampling::ParameterSpace space = SampleJob::space(config, robot, sim);
  const auto replayOf = [&](const std::string& path, io::Log& log) {
    try {
      if (robot.hasFreeFlyer() && log.joints.base_pose.rows() == 0) {
        // a real log has no base state: heft base-state's estimator (smoothed, offline) gives it
        progress.say("estimating the base state of " + path +
                     " from the IMU, the legs and the contacts");
        basestate::fillBaseState(robot.pinocchio(), log);
        if (!result.base_state_estimated)
          result.warnings.push_back(
              "base pose and twist estimated from the IMU, the legs and the contacts (the log "
              "has none)");
        result.base_state_estimated = true;
      }
      return sampling::ReplayData::fromLog(sim, log, config.ground_base);
    } catch (const InputError& e) {
      throw InputError(path + ": " + e.what());
    }
  };
  // the first log's truth group (a simulated log) scores the bodies; the others' are not read
  io::Log log = io::readLog(config.log);
  sampling::ReplayData data = replayOf(config.log, log);
  for (const std::string& path : config.more_logs) {
    io::Log more = io::readLog(path);
    data.append(replayOf(path, more));
  }
  sampling::SamplingOptions options = config.sampling;
  if (config.kp > 0 || config.kd > 0) {
    options.replay.kp = Eigen::VectorXd::Constant(sim.nu(), config.kp);
    options.replay.kd = Eigen::VectorXd::Constant(sim.nu(), config.kd);
  }
  progress.say("sampling " + std::to_string(space.dimension()) +
               " parameters: " + std::to_string(options.clips) + " clips of " + config.log);
  const sampling::GenerationCallback on_generation = [&](int g, double best, double seconds) {
    result.history.push_back({g, best, seconds});
    // CMA-ES may stop before its budget: the time left is an upper bound
    const int budget = options.optimizer.max_iterations;
    if (g % 10 == 0 && g > 0)
      progress.say("generation " + std::to_string(g) + " of at most " + std::to_string(budget) +
                   ": best cost " + num(best) + ", at most about " +
                   formatNumber(seconds / g * std::max(0, budget - g), 2) + " s left");
  };
  try {
    result.summary = sampling::identifyBySampling(sim, space, data, options, on_generation);
  } catch (const InputError& e) {  // the clips' options against this log
    throw InputError(config.source + ": " + e.what());
  }

  const sampling::Candidate& best =
      result.summary.usable() ? result.summary.best : result.summary.start;
  const Eigen::VectorXd best_x =
      result.summary.usable() ? result.summary.best_x : Eigen::VectorXd::Zero(space.dimension());
  // CMA-ES's search distribution is not a posterior; the Fisher information at the estimate gives
  // the white-noise bound of each parameter's standard deviation
  Eigen::MatrixXd covariance = Eigen::MatrixXd::Zero(space.dimension(), space.dimension());
  if (result.summary.usable()) {
    progress.say("Fisher information at the estimate (" +
                 std::to_string(2 * space.dimension() * result.summary.clips.size()) +
                 " rollouts)");
    result.information =
        sampling::rolloutInformation(sim, space, data, result.summary.clips, options.replay, best_x,
                                     0.2, Eigen::VectorXd(), options.weights.torque_offsets);
    if (result.information.ok) covariance = result.information.covariance;
  }
  const Eigen::VectorXd std_natural =
      space.steps().cwiseProduct(covariance.diagonal().cwiseMax(0).cwiseSqrt());
  results::ParameterLayout layout;
  Eigen::VectorXd linear(10 * space.bodies().size());
  for (std::size_t b = 0; b < space.bodies().size(); ++b) {
    const sampling::SampledBody& body = space.bodies()[b];
    Vector10 pi = best.body_pi[b];
    results::moveInsideMargin(body.name, pi, body.start_pi, result.warnings);
    const Eigen::MatrixXd A = piJacobian(space, best_x, static_cast<int>(b));
    const Eigen::MatrixXd pi_covariance =
        A * covariance.block(10 * b, 10 * b, 10, 10) * A.transpose();
    result.bodies.push_back(
        results::makeBodyEstimate(body.name, body.start_pi, Vector10::Zero(), pi, pi_covariance));
    layout.body_names.push_back(body.name);
    layout.bodies.push_back(body.joint);
    linear.segment<10>(10 * b) = pi;
  }
  results::appendNearBoundaryWarnings(result.bodies, result.warnings);
  int index = static_cast<int>(10 * space.bodies().size());  // the groups' first coordinate
  for (std::size_t g = 0; g < space.groups().size(); ++g) {
    GroupEstimate e;
    e.name = space.groups()[g].name;
    e.joints = config.actuators[g].joints;
    e.start = result.summary.start.groups[g];
    e.estimate = best.groups[g];
    e.gain_sampled = space.groups()[g].sample_gain;
    e.saturation_sampled = space.groups()[g].sample_saturation;
    if (e.gain_sampled) e.gain_std = std_natural[index++];
    if (e.saturation_sampled) e.saturation_std = std_natural[index++];
    // tanh(u / kappa) bends by 1.9 % at u = 0.24 kappa, 11 % at 0.62: commands that stay low
    // leave kappa to the noise
    e.command_reach = 0;
    for (int joint : space.groups()[g].joints)
      e.command_reach = std::max(e.command_reach, data.tau_cmd.row(joint).cwiseAbs().maxCoeff());
    if (e.estimate.saturation > 0) e.command_reach /= e.estimate.saturation;
    if (e.saturation_sampled && e.command_reach < kSaturationReach)
      result.warnings.push_back(
          "actuator group " + e.name + ": the commands reach at most " + num(e.command_reach, 2) +
          " of the estimated kappa " + num(e.estimate.saturation, 3) +
          " N m, where tanh barely bends: its kappa is hardly observable (a motion that drives "
          "these motors harder would pin it down)");
    result.groups.push_back(e);
  }
  for (std::size_t j = 0; j < space.joints().size(); ++j)
    result.joints.push_back(
        {space.joints()[j].name, result.summary.start.joints[j], best.joints[j]});
  result.floor_offset = best.floor_offset;
  result.names = space.names();
  result.joint_names = sim.jointNames();
  if (!space.bodies().empty() && log.truth && !log.truth->body_names.empty())
    result.truth = results::truthErrors(robot, log, layout, linear);
  if (result.summary.status == sampling::SamplingSummary::Status::MaxIterations)
    result.warnings.push_back(
        "CMA-ES used all " + std::to_string(options.optimizer.max_iterations) +
        " generations (optimizer.iterations) before its tolerances stopped it: the estimate may "
        "still move; a larger budget, or a run started at this result, shows whether it does");
  if (!result.summary.usable()) result.warnings.push_back(result.summary.message);
  progress.say("done");
  return result;
}

std::string SampleJob::Result::report() const {
  std::ostringstream s;
  s << summary.report();
  if (information.ok)
    s << "\n+- std: the Fisher information of the fitted clips at the estimate (white-noise "
         "bound: rollout residuals are correlated, the true spread is larger); rank "
      << information.rank << " of " << information.information.rows() << "\n";
  if (!bodies.empty()) s << "\n" << results::bodiesReport(bodies, information.ok);
  if (!groups.empty()) {
    s << "\nactuator groups (tau = gain kappa tanh(tau_cmd / kappa); start -> estimate)\n";
    for (const GroupEstimate& g : groups)
      s << "  " << g.name << ": gain " << num(g.start.gain) << " -> " << num(g.estimate.gain)
        << (g.gain_sampled ? " +- " + num(g.gain_std, 2) : std::string()) << ", kappa "
        << num(g.start.saturation) << " -> " << num(g.estimate.saturation)
        << (g.saturation_sampled ? " +- " + num(g.saturation_std, 2) : std::string()) << " N m\n";
  }
  if (!joints.empty()) {
    s << "\njoints (start -> estimate)\n";
    for (const JointEstimate& j : joints)
      s << "  " << j.name << ": damping " << num(j.start.damping) << " -> "
        << num(j.estimate.damping) << " N m s/rad, frictionloss " << num(j.start.frictionloss)
        << " -> " << num(j.estimate.frictionloss) << " N m, armature " << num(j.start.armature)
        << " -> " << num(j.estimate.armature) << " kg m^2\n";
  }
  if (summary.torque_offsets.size() > 0) {
    const bool direct = config.sampling.weights.actuator_torque > 0;  // the actuator term's
    s << "\ntorque-sensor offsets (logged minus modelled torque, mean over "
      << (direct ? "the fitted samples for a sampled group's joint, the fitted clips for the others"
                 : "the fitted clips")
      << ")\n";
    const Eigen::MatrixXd& offsets = summary.torque_offsets;
    if (offsets.cols() > 1) s << "  one per recording: the log, then more_logs in their order\n";
    for (Eigen::Index j = 0; j < offsets.rows(); ++j) {
      s << "  " << joint_names[j] << ":";
      for (Eigen::Index r = 0; r < offsets.cols(); ++r)
        s << (r > 0 ? ", " : " ") << num(offsets(j, r), 3);
      s << " N m\n";
    }
  }
  if (floor_offset != 0)
    s << "\nfloor " << num(floor_offset * 1e3, 3)
      << " mm from the grounded feet (MuJoCo's contact penetration under load)\n";
  if (truth) s << "\nerrors against the log's truth group\n" << truth->report();
  if (!warnings.empty()) {
    s << "\nwarnings\n";
    for (const std::string& w : warnings) s << "  - " << w << "\n";
  }
  return s.str();
}

namespace {

nlohmann::json termsJson(const sampling::CostTerms& t) {
  if (t.steps == 0 || !t.finite) return nullptr;
  const auto rms = [&t](double sum) { return std::sqrt(sum / t.steps); };
  nlohmann::json j = {{"steps", t.steps},
                      {"base_position_rms_m", rms(t.base_position)},
                      {"base_velocity_rms_m_s", rms(t.base_velocity)},
                      {"joint_position_rms_rad", rms(t.joint_position)},
                      {"joint_velocity_rms_rad_s", rms(t.joint_velocity)},
                      {"joint_torque_rms_nm", rms(t.joint_torque)}};
  if (t.actuator_samples > 0) {  // as summed, offsets not taken off
    j["actuator_samples"] = t.actuator_samples;
    j["actuator_torque_rms_nm"] = std::sqrt(t.actuator_torque / t.actuator_samples);
  }
  return j;
}

}  // namespace

nlohmann::json SampleJob::Result::toJson() const {
  nlohmann::json j;
  j["schema_version"] = results::kResultSchemaVersion;
  j["method"] = "sampling";
  j["robot"] = {{"name", config.robot}};
  j["log"] = config.log;
  if (!config.more_logs.empty()) j["more_logs"] = config.more_logs;
  j["parameters"] = results::parametersJson(bodies);
  nlohmann::json actuators = nlohmann::json::object();
  for (const GroupEstimate& g : groups)
    actuators[g.name] = {
        {"joints", g.joints},
        {"gain", g.estimate.gain},
        {"saturation", g.estimate.saturation},
        {"start", {{"gain", g.start.gain}, {"saturation", g.start.saturation}}},
        {"sampled", {{"gain", g.gain_sampled}, {"saturation", g.saturation_sampled}}}};
  j["actuators"] = actuators;
  // MuJoCo's frictionloss is a Coulomb term and its damping a viscous one: the same shape as the
  // other jobs' friction, so heft predict reads it
  std::vector<results::JointFrictionEstimate> friction;
  std::vector<results::JointScalarEstimate> armature;
  for (const JointEstimate& e : joints) {
    results::JointFrictionEstimate f;
    f.joint = e.name;
    f.coulomb = e.estimate.frictionloss;
    f.coulomb_prior = e.start.frictionloss;
    f.viscous = e.estimate.damping;
    f.viscous_prior = e.start.damping;
    friction.push_back(f);
    armature.push_back({e.name, e.estimate.armature, 0, e.start.armature});
  }
  if (summary.torque_offsets.size() > 0) {
    // the other jobs' shape ({"offset": ...} per joint, what heft predict applies): the offset of
    // the first log, which a held-out log of the same session shares; with more_logs, also one per
    // recording (the log, then more_logs); no std: the search gives none
    nlohmann::json offsets = nlohmann::json::object();
    const Eigen::MatrixXd& o = summary.torque_offsets;
    for (Eigen::Index k = 0; k < o.rows(); ++k) {
      nlohmann::json joint = {{"offset", o(k, 0)}};
      if (o.cols() > 1) {
        std::vector<double> per_recording(o.cols());
        for (Eigen::Index r = 0; r < o.cols(); ++r) per_recording[r] = o(k, r);
        joint["per_recording"] = per_recording;
      }
      offsets[joint_names[k]] = joint;
    }
    j["torque_offsets"] = offsets;
  }
  j["friction"] = results::frictionJson(friction);
  j["armature"] = results::armatureJson(armature);
  j["sampling"] = {{"generations", summary.optimizer.iterations},
                   {"candidates", summary.optimizer.evaluations},
                   {"rollouts", summary.rollouts},
                   {"threads", summary.threads},
                   {"clips", summary.clips.size()},
                   {"log_step_s", summary.dt},
                   {"start_cost", summary.start_cost},
                   {"best_cost", summary.best_cost},
                   {"start_terms", termsJson(summary.start_terms)},
                   {"best_terms", termsJson(summary.best_terms)},
                   {"base_state_estimated", base_state_estimated},
                   {"floor_offset_m", floor_offset},
                   {"best_x", results::jsonArray(summary.best_x)}};
  if (information.ok)
    j["information"] = {{"names", names},
                        {"rank", information.rank},
                        {"std_x", results::jsonArray(information.std_x)},
                        {"channel_rms", results::jsonArray(information.channel_rms)},
                        {"bound",
                         "white-noise Cramer-Rao (Fisher information of the fitted "
                         "clips at the estimate)"}};
  if (summary.holdout_prediction_error >= 0)
    j["validation"] = {{"clips", summary.holdout_clips.size()},
                       {"holdout_fraction", config.sampling.holdout_fraction},
                       {"prediction_error", summary.holdout_prediction_error},
                       {"start_terms", termsJson(summary.holdout_start_terms)},
                       {"best_terms", termsJson(summary.holdout_best_terms)}};
  j["summary"] = {{"status", sampling::toString(summary.status)},
                  {"message", summary.message},
                  {"iterations", summary.optimizer.iterations},
                  {"time_s", summary.seconds}};
  j["warnings"] = warnings;
  if (truth) j["truth_errors"] = results::truthErrorsJson(*truth);
  return j;
}

std::vector<std::string> SampleJob::write(const Result& result, const std::string& out_dir,
                                          const WriteOptions& options) {
  std::vector<std::string> inputs = {result.config.log};
  inputs.insert(inputs.end(), result.config.more_logs.begin(), result.config.more_logs.end());
  const OutputFolder folder(out_dir, {"result.json", "robot.urdf", "history.csv"}, inputs, options);
  std::vector<std::string> written;
  std::ostringstream csv;
  csv << "generation,best_cost,seconds\n";
  for (const Generation& g : result.history)
    csv << g.generation << "," << formatNumber(g.best_cost, 10) << "," << formatNumber(g.seconds, 6)
        << "\n";
  const std::string csv_out = folder.path("history.csv");
  io::writeTextFileAtomically(csv_out, csv.str(), options.overwrite);
  written.push_back(csv_out);

  nlohmann::json json = result.toJson();
  const std::string json_out = folder.path("result.json");
  if (!result.bodies.empty()) {
    const bool consistent =
        std::all_of(result.bodies.begin(), result.bodies.end(),
                    [](const results::BodyEstimate& b) { return b.consistent; });
    writeUrdf(json, result.config.robot, model::BaseType::Default, {}, result.bodies,
              !result.ok()  ? "the search failed"
              : !consistent ? "an estimate is not physically consistent"
                            : "",
              folder.path("robot.urdf"), options.overwrite, written);
  }
  io::writeTextFileAtomically(json_out, json.dump(2) + "\n", options.overwrite);
  written.push_back(json_out);
  if (!result.bodies.empty()) throwIfUrdfRefused(json, json_out);
  if (!result.ok())
    throw SolveError("the sampling search failed (" + result.summary.message + "); " + json_out +
                     " says why");
  return written;
}

}  // namespace heft::jobs
