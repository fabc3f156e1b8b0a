#pragma once
/// \file The `heft sample` job: sampling-based identification (heft::sampling, spi-active's SPI)
/// of a log. Candidate models are replayed in MuJoCo from the log's states with its commands and
/// CMA-ES keeps the one whose rollouts match the log best; held-out clips at the end of the log
/// score it against the start model. Writes result.json (bodies through the shared results layer,
/// actuator groups, joint friction, the held-out prediction error, truth errors of a simulated
/// log), robot.urdf (when bodies were sampled) and history.csv (CMA-ES, one row per generation).
/// docs/guide/sample.md documents every config field.
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "heft/jobs/job.hpp"
#include "heft/results/body_estimate.hpp"
#include "heft/results/truth.hpp"
#include "heft/sampling/sysid.hpp"
#include "heft/sim/sim_model.hpp"

namespace heft::jobs {

struct SampleJob {
  /// A body to sample, with the parts of its range the config sets (the rest from
  /// sampling::defaultBodyRange of the nominal body).
  struct BodyChoice {
    std::string name;  ///< a body name or its joint name
    std::optional<std::pair<double, double>> mass;
    std::optional<std::pair<Vector3, Vector3>> com;  ///< min, max, body frame
    std::optional<std::pair<double, double>> inertia;
  };
  /// An actuator group by joint names (resolved against the robot in run()).
  struct GroupChoice {
    sampling::ActuatorGroup group;  ///< everything but `joints`
    std::vector<std::string> joints;
  };
  struct JointChoice {
    std::string name;
    sim::JointFriction start;
    double damping_max = 0, frictionloss_max = 0, armature_max = 0;
  };

  struct Config {
    std::string source = "<config>";  ///< where it came from, for messages
    std::string robot;                ///< short name or URDF path
    std::string log;
    /// Further recordings identified together with `log` (spi-active's second stage: the first
    /// log and the designed experiment's); no clip crosses from one to the next, and the held-out
    /// clips come from the end of the last.
    std::vector<std::string> more_logs;
    std::vector<BodyChoice> bodies;
    std::vector<GroupChoice> actuators;
    std::vector<JointChoice> joints;
    sampling::SamplingOptions sampling;
    double kp = 0, kd = 0;  ///< the robot's joint PD (replay.kp, kd); kp = 0: open loop
    /// The simulator's contact spheres and floor (as `heft simulate`'s).
    double contact_radius = 0.022;
    double floor_friction = 0.9;
    /// Put a floating base's logged height on the simulator's floor (sampling::groundBaseHeight);
    /// false keeps the logged heights (a base position measured over the same floor).
    bool ground_base = true;
    /// [m] the floor's height under the grounded base heights is sampled in [-range, range]
    /// (sampling::ParameterSpace); 0 = not sampled. Floating base only.
    double floor_offset_range = 0.01;
    /// \throws InputError naming the field.
    void validate() const;
  };

  struct GroupEstimate {
    std::string name;
    std::vector<std::string> joints;
    sim::ActuatorModel start, estimate;
    bool gain_sampled = false, saturation_sampled = false;
    /// max |tau_cmd| over the group's joints / the estimated kappa: below 0.5 tanh barely bends
    /// and kappa is hardly observable (a warning says so)
    double command_reach = 0;
    double gain_std = 0, saturation_std = 0;  ///< Fisher bound (Result::information)
  };
  struct JointEstimate {
    std::string name;
    sim::JointFriction start, estimate;
  };
  /// One CMA-ES generation.
  struct Generation {
    int generation = 0;
    double best_cost = 0;
    double seconds = 0;
  };

  struct Result {
    Config config;
    double floor_offset = 0;  ///< [m] the best candidate's (0 when not sampled)
    sampling::SamplingSummary summary;
    std::vector<results::BodyEstimate> bodies;
    std::vector<GroupEstimate> groups;
    std::vector<JointEstimate> joints;
    std::vector<Generation> history;
    /// At the estimate, over the fitted clips: the bodies' and groups' std come from it.
    sampling::RolloutInformation information;
    std::vector<std::string> names;             ///< the sampled coordinates (ParameterSpace::names)
    std::vector<std::string> joint_names;       ///< the actuated joints (summary.torque_offsets')
    std::optional<results::TruthErrors> truth;  ///< a simulated log's bodies
    bool base_state_estimated = false;          ///< the log had no base state
    std::vector<std::string> warnings;
    bool ok() const { return summary.usable(); }
    std::string report() const;
    nlohmann::json toJson() const;
  };

  /// Reads a YAML config; errors name the file, the line and the field.
  static Config load(const std::string& path);
  static Config parse(const std::string& yaml_text, const std::string& source,
                      const std::string& base_dir);

  /// \throws InputError for bad input (a start outside its range, a log without commands or
  /// joints of the model, a log too short for the clips); a search whose start model diverges is a
  /// Failed summary, not a throw.
  static Result run(const Config& config, Progress& progress);
  static Result run(const Config& config) {
    Progress silent;
    return run(config, silent);
  }

  /// The search space the config describes (the order of SamplingSummary::best_x).
  /// \throws InputError naming a body, joint or range of the config.
  static sampling::ParameterSpace space(const Config& config, const model::RobotModel& robot,
                                        const sim::SimModel& sim);

  /// Writes DIR/result.json, DIR/history.csv and (bodies sampled, search usable) DIR/robot.urdf,
  /// atomically. \throws SolveError (exit 1) after result.json when the search failed or the URDF
  /// writer refused.
  static std::vector<std::string> write(const Result& result, const std::string& out_dir,
                                        const WriteOptions& options = {});
};

}  // namespace heft::jobs
