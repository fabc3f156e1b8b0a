#pragma once
/// \file The `heft predict` job: a model (a URDF or a bundled robot, plus the friction, armature
/// and torque offsets of a result.json) applied to a log it was not fitted on: measured against
/// predicted joint torque, per joint (fixed base) or per contact-projected row (floating base),
/// RMSE and relative error, next to a second model (the nominal one). The guide page
/// docs/guide/predict.md documents every config field.
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "heft/identify/problem.hpp"
#include "heft/identify/samples.hpp"
#include "heft/jobs/job.hpp"
#include "heft/model/model.hpp"
#include "heft/model/robots.hpp"
#include "heft/results/prediction.hpp"

namespace heft::jobs {

struct PredictJob {
  struct Config {
    std::string source = "<config>";  ///< where it came from, for messages
    std::string robot;                ///< the model to evaluate: short name or URDF path
    model::BaseType base = model::BaseType::Default;
    std::string result;   ///< optional result.json: friction, armature, torque offsets
    std::string nominal;  ///< optional second model to compare with (short name or URDF path)
    std::string log;
    /// Joints held at a position (`locked_joints`): a gripper, a passive joint, a joint the log
    /// lacks. Every 1-DoF joint of the robot must be in the log or here.
    std::vector<model::LockedJoint> locked_joints;
    /// Time ranges to predict (seconds from the log's first sample); empty = the whole log.
    std::vector<identify::TimeRange> ranges;
    identify::PreparationOptions preparation;
    identify::ProblemOptions problem;  ///< projection, contact_offset, coulomb_rate, min_speed
    /// \throws InputError naming the field.
    void validate() const;
  };

  struct Result {
    Config config;
    /// The model's prediction, then the nominal model's (when config.nominal is set).
    std::vector<results::TorquePrediction> predictions;
    std::vector<std::string> warnings;
    std::string report() const;
    nlohmann::json toJson() const;
  };

  /// Reads a YAML config; errors name the file, the line and the field.
  static Config load(const std::string& path);
  static Config parse(const std::string& yaml_text, const std::string& source,
                      const std::string& base_dir);

  /// \throws InputError for bad input: a log or range that does not fit, a result.json that is
  ///   not heft's or names joints or bodies the model does not have (another robot's).
  static Result run(const Config& config, Progress& progress);
  static Result run(const Config& config) {
    Progress silent;
    return run(config, silent);
  }

  /// Writes DIR/result.json atomically. Returns the paths written.
  static std::vector<std::string> write(const Result& result, const std::string& out_dir,
                                        const WriteOptions& options = {});
};

}  // namespace heft::jobs
