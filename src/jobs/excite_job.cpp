#include "heft/jobs/excite_job.hpp"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cmath>
#include <sstream>

#include <pinocchio/algorithm/rnea.hpp>

#include "heft/common/error.hpp"
#include "heft/common/format.hpp"
#include "heft/io/atomic_file.hpp"
#include "heft/jobs/simulate_job.hpp"
#include "heft/model/robots.hpp"
#include "heft/results/json.hpp"
#include "heft/sim/scenario.hpp"
#include "optimizer_section.hpp"
#include "yaml_section.hpp"

namespace heft::jobs {

namespace {

struct Section : yaml::YamlSection {
  Section(const YAML::Node& node, std::string path, const std::string& source)
      : yaml::YamlSection(node, std::move(path), source, "docs/guide/excite.md") {}
};

std::string num(double x, int precision = 6) { return formatNumber(x, precision); }

// A fraction in (0, 1]: 0 leaves no trajectory that moves.
void fraction(double x) {
  if (!(std::isfinite(x) && x > 0 && x <= 1))
    throw InputError("expected a fraction in (0, 1], got " + formatNumber(x));
}
void margin(double x) {
  if (!(std::isfinite(x) && x >= 0 && x < 1))
    throw InputError("expected a fraction in [0, 1), got " + formatNumber(x));
}

// `joints:` names of 1-DoF joints of the robot, each checked where it stands.
void readJoints(Section& top, const pinocchio::Model& model, std::vector<std::string>& joints) {
  if (!top.has("joints")) return;
  const YAML::Node list = top.raw("joints");
  if (!list.IsSequence() || list.size() == 0)
    top.fail(list, "joints", "expected a non-empty list of joint names");
  std::string valid;
  for (pinocchio::JointIndex j = 1; j < model.joints.size(); ++j)
    if (model.joints[j].nv() == 1) valid += (valid.empty() ? "" : ", ") + model.names[j];
  for (std::size_t i = 0; i < list.size(); ++i) {
    const std::string name = list[i].as<std::string>("");
    const bool known = model.existJointName(name) && model.joints[model.getJointId(name)].nv() == 1;
    if (!known)
      top.fail(list[i], "joints[" + std::to_string(i) + "]",
               "expected a 1-DoF joint of the robot (" + valid + "), got \"" + name + "\"");
    if (std::count(joints.begin(), joints.end(), name))
      top.fail(list[i], "joints[" + std::to_string(i) + "]", "\"" + name + "\" listed twice");
    joints.push_back(name);
  }
}

void readLimits(const YAML::Node& node, const std::string& source, excite::DesignOptions& d) {
  Section s(node, "limits", source);
  s.read("position_margin", d.position_margin, margin);
  s.read("velocity_fraction", d.velocity_fraction, fraction);
  s.read("max_acceleration", d.max_acceleration, yaml::positive);
  s.read("torque_fraction", d.torque_fraction, fraction);
  s.finish();
}

// The name of the joint with velocity index i.
std::string jointOf(const pinocchio::Model& model, int i) {
  for (pinocchio::JointIndex j = 1; j < model.joints.size(); ++j)
    if (model.joints[j].idx_v() == i) return model.names[j];
  return "?";
}

// The held posture (every joint at mid-range, at rest) must be within the torque limits:
// otherwise no trajectory that starts from rest there can respect them.
void requireHeldPostureFeasible(const Section& top, const YAML::Node& root,
                                const pinocchio::Model& model, const excite::DesignOptions& d) {
  const excite::JointLimits limits = excite::JointLimits::from(model, d);
  pinocchio::Data data(model);
  const Eigen::VectorXd zero = Eigen::VectorXd::Zero(model.nv);
  const Eigen::VectorXd tau = pinocchio::rnea(model, data, limits.center, zero, zero);
  for (int i = 0; i < model.nv; ++i) {
    if (std::abs(tau[i]) > limits.torque[i]) {
      const YAML::Node n = root["limits"] && root["limits"]["torque_fraction"]
                               ? root["limits"]["torque_fraction"]
                               : root;
      top.fail(n, "limits.torque_fraction",
               "the gravity torque " + num(tau[i], 4) + " N m of " + jointOf(model, i) +
                   " at rest mid-range exceeds the bound " + num(limits.torque[i], 4) +
                   " N m: no trajectory satisfies the limits");
    }
  }
}

}  // namespace

void ExciteJob::Config::validate() const {
  const model::RobotModel loaded = model::loadRobot(robot);
  require(!loaded.hasFreeFlyer(), "robot", "a fixed-base robot", loaded.displayName());
  design.validate(loaded.pinocchio());
  optimizer.validate();
  requirePositive(csv_rate, "csv_rate", " Hz");
  sim::findScenario(reference_scenario);
}

ExciteJob::Config ExciteJob::parse(const std::string& yaml_text, const std::string& source,
                                   const std::string& base_dir) {
  const YAML::Node root = yaml::loadYamlMapping(yaml_text, source, "robot, joints, duration, ...");
  Config config;
  config.source = source;
  Section top(root, "", source);
  excite::DesignOptions& d = config.design;
  config.robot = top.string("robot", config.robot);
  if (config.robot.find('/') != std::string::npos || config.robot.find('.') != std::string::npos)
    config.robot = yaml::resolveConfigPath(base_dir, config.robot);
  const std::string robot_path = config.robot;
  auto loadFixedBase = [&](const std::string&) {
    model::RobotModel r = model::loadRobot(robot_path);
    if (r.hasFreeFlyer()) throw InputError("expected a fixed-base robot, got " + r.displayName());
    return r;
  };
  const model::RobotModel robot =
      top.has("robot") ? yaml::located(top, "robot", loadFixedBase) : loadFixedBase(robot_path);
  readJoints(top, robot.pinocchio(), d.joints);
  top.read("harmonics", d.harmonics, [](int n) {
    if (n < 1 || n > 20) throw InputError("expected 1 .. 20, got " + std::to_string(n));
  });
  top.read("base_frequency", d.base_frequency, yaml::positive);
  top.read("duration", d.duration, yaml::positive);
  top.read("ramp", d.ramp, yaml::positive);  // the scenario starts the robot at rest
  top.read("samples", d.samples, [](int n) {
    if (n < 2) throw InputError("expected an integer >= 2, got " + std::to_string(n));
  });
  if (top.has("criterion")) d.criterion = yaml::located(top, "criterion", excite::parseCriterion);
  top.read("torque_noise_std", d.torque_noise_std, yaml::positive);
  top.read("csv_rate", config.csv_rate, yaml::positive);
  top.read("self_collision", config.self_collision);
  if (top.has("reference_scenario"))
    config.reference_scenario = yaml::located(top, "reference_scenario", [](const std::string& n) {
      if (sim::findScenario(n).motion != sim::Motion::Fourier)
        throw InputError("expected a scenario with a Fourier excitation, got " + n);
      return n;
    });
  readLimits(top.raw("limits"), source, d);
  yaml::readCmaesOptions(top.raw("optimizer"), source, "docs/guide/excite.md", config.optimizer);
  top.finish();
  if (d.ramp >= d.duration)
    top.fail(
        root["ramp"] ? root["ramp"] : root["duration"], "ramp",
        "expected less than the duration " + num(d.duration) + " s, got " + num(d.ramp) + " s");
  requireHeldPostureFeasible(top, root, robot.pinocchio(), d);
  yaml::validateNamingSource(config, source);
  return config;
}

ExciteJob::Config ExciteJob::load(const std::string& path) {
  return parse(io::readTextFile(path), path, yaml::configFolder(path));
}

}  // namespace heft::jobs
