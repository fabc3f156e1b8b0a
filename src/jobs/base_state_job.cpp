#include "heft/jobs/base_state_job.hpp"

#include <yaml-cpp/yaml.h>

#include <filesystem>
#include <sstream>

#include "heft/common/error.hpp"
#include "heft/common/format.hpp"
#include "heft/io/atomic_file.hpp"
#include "heft/io/log_io.hpp"
#include "heft/model/model.hpp"
#include "yaml_section.hpp"

namespace heft::jobs {

namespace fs = std::filesystem;

namespace {

struct Section : yaml::YamlSection {
  Section(const YAML::Node& node, std::string path, const std::string& source)
      : yaml::YamlSection(node, std::move(path), source, "docs/guide/base-state.md") {}
};

nlohmann::json filterOptionsJson(const basestate::ContactEkfOptions& o) {
  return {{"gyro_noise", o.gyro_noise},
          {"accel_noise", o.accel_noise},
          {"gyro_bias_walk", o.gyro_bias_walk},
          {"accel_bias_walk", o.accel_bias_walk},
          {"foot_velocity_noise", o.foot_velocity_noise},
          {"kinematics_noise", o.kinematics_noise},
          {"encoder_noise", o.encoder_noise},
          {"initial_orientation_std", o.initial_orientation_std},
          {"initial_velocity_std", o.initial_velocity_std},
          {"initial_position_std", o.initial_position_std},
          {"initial_gyro_bias_std", o.initial_gyro_bias_std},
          {"initial_accel_bias_std", o.initial_accel_bias_std},
          {"estimate_biases", o.estimate_biases},
          {"max_step", o.max_step},
          {"level_ground", o.level_ground},
          {"ground_height_noise", o.ground_height_noise},
          {"ground_tilt_noise", o.ground_tilt_noise}};
}

}  // namespace

void BaseStateJob::Config::validate() const {
  require(!robot.empty(), "robot", "a short name or a path", "none");
  require(!log.empty(), "log", "a log path", "none");
  options.validate();
}

void BaseStateJob::parseOptions(const std::string& yaml_text, const std::string& source,
                                Config& config) {
  const YAML::Node root =
      yaml::loadYamlMapping(yaml_text, source, "filter, smooth, imu_frame, ground_height, ...");
  config.source = source;
  Section top(root, "", source);
  top.read("smooth", config.options.smooth);
  top.read("imu_frame", config.options.imu_frame);
  top.read("ground_height", config.options.ground_height, yaml::finite);
  config.contact_points = yaml::readContactPoints(top, "contact_points");
  {
    Section s(top.raw("filter"), "filter", source);
    basestate::ContactEkfOptions& o = config.options.filter;
    s.read("gyro_noise", o.gyro_noise, yaml::nonNegative);
    s.read("accel_noise", o.accel_noise, yaml::nonNegative);
    s.read("gyro_bias_walk", o.gyro_bias_walk, yaml::nonNegative);
    s.read("accel_bias_walk", o.accel_bias_walk, yaml::nonNegative);
    s.read("foot_velocity_noise", o.foot_velocity_noise, yaml::nonNegative);
    s.read("kinematics_noise", o.kinematics_noise, yaml::positive);
    s.read("encoder_noise", o.encoder_noise, yaml::nonNegative);
    s.read("initial_orientation_std", o.initial_orientation_std, yaml::positive);
    s.read("initial_velocity_std", o.initial_velocity_std, yaml::positive);
    s.read("initial_position_std", o.initial_position_std, yaml::positive);
    s.read("initial_gyro_bias_std", o.initial_gyro_bias_std, yaml::positive);
    s.read("initial_accel_bias_std", o.initial_accel_bias_std, yaml::positive);
    s.read("estimate_biases", o.estimate_biases);
    s.read("max_step", o.max_step, yaml::positive);
    s.read("level_ground", o.level_ground);
    s.read("ground_height_noise", o.ground_height_noise, yaml::positive);
    s.read("ground_tilt_noise", o.ground_tilt_noise, yaml::positive);
    s.finish();
  }
  top.finish();
}

void BaseStateJob::loadOptions(const std::string& path, Config& config) {
  parseOptions(io::readTextFile(path), path, config);
}

BaseStateJob::Result BaseStateJob::run(const Config& config, Progress& progress) {
  progress.start();
  config.validate();
  const model::RobotModel robot = model::loadRobot(config.robot);
  require(robot.hasFreeFlyer(), "robot", "a floating-base robot (free-flyer)",
          robot.displayName() + ", a fixed base");
  Result result;
  result.config = config;
  result.log = io::readLog(config.log);
  require(result.log.meta.base_type == io::BaseType::FreeFlyer, config.log + ": base_type",
          "free-flyer", "fixed");
  progress.say("estimating the base state of " + config.log);
  const basestate::BaseStateTrajectory trajectory = basestate::fillBaseState(
      robot.pinocchio(), result.log, config.options, config.contact_points);
  result.summary = trajectory.summary;
  if (result.log.truth && result.log.truth->base_pose.rows() > 0)
    result.errors = basestate::compareWithTruth(result.log, trajectory);
  progress.say("done");
  return result;
}

std::string BaseStateJob::Result::report() const {
  std::ostringstream out;
  out << summary.report();
  if (errors) {
    out << "against truth: orientation " << formatNumber(errors->orientation_rmse_deg, 3)
        << " deg RMS (roll " << formatNumber(errors->roll_rmse_deg, 3) << ", pitch "
        << formatNumber(errors->pitch_rmse_deg, 3) << ", yaw "
        << formatNumber(errors->yaw_rmse_deg, 3) << "), velocity "
        << formatNumber(errors->velocity_rmse, 3) << " m/s RMS, position drift "
        << formatNumber(errors->position_drift_per_minute, 3) << " m/min\n";
  }
  return out.str();
}

nlohmann::json BaseStateJob::Result::toJson() const {
  nlohmann::json j;
  j["job"] = "base-state";
  j["status"] = "completed";
  j["robot"] = config.robot;
  j["log"] = config.log;
  j["options"] = {{"smooth", config.options.smooth},
                  {"imu_frame", config.options.imu_frame},
                  {"ground_height", config.options.ground_height},
                  {"filter", filterOptionsJson(config.options.filter)}};
  j["summary"] = {{"joint_samples", summary.joint_samples},
                  {"imu_samples", summary.imu_samples},
                  {"corrections", summary.corrections},
                  {"ground_corrections", summary.ground_corrections},
                  {"touchdowns", summary.touchdowns},
                  {"flight_samples", summary.flight_samples},
                  {"rejected", summary.rejected},
                  {"failures", summary.failures},
                  {"smoothed", summary.smoothed},
                  {"orientation_from_imu", summary.orientation_from_imu},
                  {"seconds", summary.seconds}};
  if (errors) {
    j["truth"] = {{"orientation_rmse_deg", errors->orientation_rmse_deg},
                  {"roll_rmse_deg", errors->roll_rmse_deg},
                  {"pitch_rmse_deg", errors->pitch_rmse_deg},
                  {"yaw_rmse_deg", errors->yaw_rmse_deg},
                  {"velocity_rmse", errors->velocity_rmse},
                  {"angular_velocity_rmse", errors->angular_velocity_rmse},
                  {"position_drift_per_minute", errors->position_drift_per_minute}};
  } else {
    j["truth"] = nullptr;
  }
  return j;
}

std::vector<std::string> BaseStateJob::write(const Result& result, const std::string& out_log,
                                             const WriteOptions& options) {
  const fs::path out(out_log);
  const std::string folder = out.has_parent_path() ? out.parent_path().string() : ".";
  const OutputFolder outputs(folder, {out.filename().string(), "result.json"}, {result.config.log},
                             options);
  io::WriteOptions log_options;
  log_options.overwrite = true;  // checked above for both outputs
  io::writeLog(result.log, outputs.path(out.filename().string()), log_options);
  const std::string json = outputs.path("result.json");
  io::writeTextFileAtomically(json, result.toJson().dump(2) + "\n", true);
  return {outputs.path(out.filename().string()), json};
}

}  // namespace heft::jobs
