#include "heft/jobs/predict_job.hpp"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <filesystem>
#include <sstream>

#include "heft/common/error.hpp"
#include "heft/common/format.hpp"
#include "heft/identify/prediction.hpp"
#include "heft/io/atomic_file.hpp"
#include "heft/io/log_io.hpp"
#include "heft/model/identified_set.hpp"
#include "heft/model/model.hpp"
#include "heft/results/json.hpp"
#include "identify_sections.hpp"
#include "locked_joints.hpp"
#include "result_files.hpp"
#include "time_ranges.hpp"
#include "yaml_section.hpp"

namespace heft::jobs {

namespace fs = std::filesystem;
using namespace heft::identify;

namespace {

struct Section : yaml::YamlSection {
  Section(const YAML::Node& node, std::string path, const std::string& source)
      : yaml::YamlSection(node, std::move(path), source, "docs/guide/predict.md") {}
};

// The joint-side terms of a result.json, by joint name.
struct ActuatorTerms {
  std::vector<std::pair<std::string, std::pair<double, double>>> friction;  // coulomb, viscous
  std::vector<std::pair<std::string, double>> armature;
  std::vector<std::pair<std::string, double>> torque_offsets;
};

// Reads the terms and checks that every joint and body it names is the model's: a result.json
// of another robot is bad input.
ActuatorTerms readTerms(const std::string& path, const model::RobotModel& robot,
                        const std::vector<std::string>& joints) {
  const nlohmann::json j = readResultJson(path);
  auto requireJoint = [&](const std::string& field, const std::string& name) {
    if (std::find(joints.begin(), joints.end(), name) == joints.end()) {
      std::string valid;
      for (const std::string& n : joints) valid += (valid.empty() ? "" : ", ") + n;
      throw InputError(path + ": " + field + ": joint \"" + name + "\" is not a joint of " +
                       robot.displayName() + " (" + valid + "): a result of another robot?");
    }
  };
  if (j.contains("parameters")) {
    for (const auto& [body, value] : j["parameters"].items()) {
      try {
        robot.bodyIndex(body);
      } catch (const InputError&) {
        throw InputError(path + ": parameters: body \"" + body + "\" is not a body of " +
                         robot.displayName() + " (" + robot.bodyNames() +
                         "): a result of another robot?");
      }
    }
  }
  ActuatorTerms terms;
  if (j.contains("friction")) {
    for (const auto& [joint, value] : j["friction"].items()) {
      requireJoint("friction", joint);
      const std::string where = path + ": friction." + joint;
      terms.friction.push_back({joint,
                                {resultMemberNumber(value, "coulomb", where),
                                 resultMemberNumber(value, "viscous", where)}});
    }
  }
  if (j.contains("armature")) {
    for (const auto& [joint, value] : j["armature"].items()) {
      requireJoint("armature", joint);
      terms.armature.push_back({joint, resultNumber(value, path + ": armature." + joint)});
    }
  }
  if (j.contains("torque_offsets")) {
    for (const auto& [joint, value] : j["torque_offsets"].items()) {
      requireJoint("torque_offsets", joint);
      terms.torque_offsets.push_back(
          {joint, resultMemberNumber(value, "offset", path + ": torque_offsets." + joint)});
    }
  }
  return terms;
}

int jointOf(const Samples& samples, const std::string& name) {
  return static_cast<int>(std::find(samples.joint_names.begin(), samples.joint_names.end(), name) -
                          samples.joint_names.begin());
}

// The rigid-body model of `robot` plus `terms`, predicting the samples.
results::TorquePrediction predict(const std::string& label, const model::RobotModel& robot,
                                  const io::Log& log, const PredictJob::Config& config,
                                  const ActuatorTerms& terms) {
  PreparationOptions preparation = config.preparation;
  preparation.only = config.ranges;
  const Samples samples = prepareSamples(robot, log, preparation);
  StackedProblem problem = buildProblem(robot, samples, model::IdentifiedSet{}, config.problem);
  results::ParameterLayout& layout = problem.layout;
  for (const auto& [joint, value] : terms.friction) {
    layout.friction_joints.push_back(joint);
    layout.friction_joint.push_back(jointOf(samples, joint));
  }
  for (const auto& [joint, value] : terms.armature) {
    layout.armature_joints.push_back(joint);
    layout.armature_joint.push_back(jointOf(samples, joint));
  }
  for (const auto& [joint, value] : terms.torque_offsets) {
    layout.torque_offset_joints.push_back(joint);
    layout.torque_offset_joint.push_back(jointOf(samples, joint));
  }
  Eigen::VectorXd x(layout.linearDimension());
  int i = 0;
  for (const auto& [joint, value] : terms.friction) {
    x[i++] = value.first;
    x[i++] = value.second;
  }
  for (const auto& [joint, value] : terms.armature) x[i++] = value;
  for (const auto& [joint, value] : terms.torque_offsets) x[i++] = value;
  return predictTorques(label, problem, samples, x);
}

}  // namespace

void PredictJob::Config::validate() const {
  require(!robot.empty(), source + ": robot", "a robot short name or model path", "nothing");
  require(!log.empty(), source + ": log", "a log path", "nothing");
  preparation.validate();
  problem.validate();
}

PredictJob::Config PredictJob::parse(const std::string& yaml_text, const std::string& source,
                                     const std::string& base_dir) {
  const YAML::Node root = yaml::loadYamlMapping(yaml_text, source, "robot, log, result, ...");
  Config config;
  config.source = source;
  Section top(root, "", source);
  std::tie(config.robot, config.log) = yaml::readRobotAndLog(top, root, base_dir);
  config.locked_joints = yaml::readLockedJoints(top);
  if (top.has("base")) config.base = yaml::located(top, "base", model::parseBaseType);
  if (top.has("result")) config.result = yaml::resolveConfigPath(base_dir, top.string("result"));
  if (top.has("nominal")) {
    config.nominal = top.string("nominal");
    if (config.nominal.find('/') != std::string::npos ||
        config.nominal.find('.') != std::string::npos)
      config.nominal = yaml::resolveConfigPath(base_dir, config.nominal);
  }
  for (const auto& [start, end] : top.timeRanges("ranges")) config.ranges.push_back({start, end});
  readPreparationSection(top.raw("preparation"), source, config.preparation);
  readProblemSection(top.raw("problem"), source, config.problem);
  top.raw("robot");
  top.raw("log");
  top.finish();
  yaml::validateNamingSource(config, source);
  return config;
}

PredictJob::Config PredictJob::load(const std::string& path) {
  return parse(io::readTextFile(path), path, yaml::configFolder(path));
}

PredictJob::Result PredictJob::run(const Config& config, Progress& progress) {
  config.validate();
  progress.start();
  model::LoadOptions load;
  load.base = config.base;
  progress.say("reading " + config.log);
  io::Log log = io::readLog(config.log);
  const model::RobotModel robot =
      robotForLog(model::loadRobot(config.robot, load), config.locked_joints, log, config.source);
  progress.say("robot " + robot.displayName());
  requireRangesHoldSamples(config.ranges, {&log}, config.source + ": ranges", false);
  std::vector<std::string> joints;
  for (pinocchio::JointIndex j = 1; j < robot.pinocchio().joints.size(); ++j)
    if (robot.pinocchio().joints[j].nv() == 1) joints.push_back(robot.pinocchio().names[j]);
  const ActuatorTerms terms =
      config.result.empty() ? ActuatorTerms{} : readTerms(config.result, robot, joints);

  Result result;
  result.config = config;
  result.predictions.push_back(predict(robot.displayName(), robot, log, config, terms));
  if (!config.nominal.empty()) {
    io::Log nominal_log = log;
    const model::RobotModel nominal = robotForLog(model::loadRobot(config.nominal, load),
                                                  config.locked_joints, nominal_log, config.source);
    result.predictions.push_back(
        predict(nominal.displayName(), nominal, nominal_log, config, ActuatorTerms{}));
    if (result.predictions.back().channels != result.predictions.front().channels)
      throw InputError(config.source + ": nominal: " + nominal.displayName() +
                       " has other joints than " + robot.displayName());
  }
  progress.say("predicted " + std::to_string(result.predictions.front().samples) + " samples");
  return result;
}

std::string PredictJob::Result::report() const {
  std::ostringstream s;
  s << "torque prediction on " << config.log;
  if (!config.ranges.empty()) {
    s << ", ranges";
    for (const TimeRange& r : config.ranges)
      s << " [" << formatNumber(r.start, 4) << ", " << formatNumber(r.end, 4) << "]";
    s << " s";
  }
  s << " (" << predictions.front().samples << " samples)\n"
    << results::predictionReport(predictions);
  for (const std::string& w : warnings) s << "warning: " << w << "\n";
  return s.str();
}

nlohmann::json PredictJob::Result::toJson() const {
  nlohmann::json j;
  j["schema_version"] = results::kResultSchemaVersion;
  j["robot"] = {{"name", config.robot}, {"base", model::toString(config.base)}};
  j["log"] = config.log;
  j["result"] = config.result;
  nlohmann::json ranges = nlohmann::json::array();
  for (const TimeRange& r : config.ranges) ranges.push_back({r.start, r.end});
  j["ranges_s"] = ranges;
  nlohmann::json predictions_json = nlohmann::json::array();
  for (const results::TorquePrediction& p : predictions)
    predictions_json.push_back(results::predictionJson(p));
  j["predictions"] = predictions_json;
  j["warnings"] = warnings;
  return j;
}

std::vector<std::string> PredictJob::write(const Result& result, const std::string& out_dir,
                                           const WriteOptions& options) {
  const OutputFolder folder(out_dir, {"result.json"}, {result.config.log}, options);
  const std::string json_out = folder.path("result.json");
  io::writeTextFileAtomically(json_out, result.toJson().dump(2) + "\n", options.overwrite);
  return {json_out};
}

}  // namespace heft::jobs
