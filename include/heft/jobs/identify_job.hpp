#pragma once
/// \file The `heft identify` job: a YAML config names the robot, the log, the identified set, the
/// priors and the method; the job prepares the samples, builds the rows, solves, and gathers what a
/// person and a program need: estimates with their prior and standard deviation, residuals before
/// and after, the directions the data cannot see, errors against the log's truth group, and a new
/// URDF. The user guide's identify page documents every config field with a commented example.
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include <Eigen/Core>
#include <nlohmann/json.hpp>

#include "heft/identify/identify.hpp"
#include "heft/io/data_quality.hpp"
#include "heft/jobs/job.hpp"
#include "heft/model/identified_set.hpp"
#include "heft/model/model.hpp"
#include "heft/model/robots.hpp"
#include "heft/results/body_estimate.hpp"
#include "heft/results/prediction.hpp"
#include "heft/results/truth.hpp"

namespace heft::jobs {

struct IdentifyJob {
  /// Everything a job needs, as read from the config (paths already resolved against the config's
  /// folder).
  struct Config {
    std::string source = "<config>";  ///< where it came from, for messages
    std::string robot;                ///< short name or URDF / MJCF path
    model::BaseType base = model::BaseType::Default;
    std::string log;  ///< log path (HDF5 file or CSV folder)
    /// Further recordings of the same robot that share the parameters (`log: [a.h5, b.h5]`):
    /// each prepared on its own clock, the time ranges applied to each.
    std::vector<std::string> more_logs;
    /// Joints held at a position (`locked_joints`): a gripper, a passive joint, a joint the log
    /// lacks. Every 1-DoF joint of the robot must be in the log or here.
    std::vector<model::LockedJoint> locked_joints;
    model::IdentifiedSetOptions set;
    /// Method and its options; options.map.constraints are built by the job from the two fields
    /// below; options.friction_truth holds the true friction of a simulated log, if given.
    identify::IdentifyOptions options;
    std::optional<double> total_mass;                            ///< [kg], map only
    std::vector<std::pair<std::string, std::string>> symmetric;  ///< (left, right) bodies, map only
    /// Held-out time ranges: excluded from the fit, then the nominal and the identified model
    /// predict their torques (Result::heldout).
    std::vector<identify::TimeRange> validation;

    /// \throws InputError naming the field.
    void validate() const;
  };

  struct Result {
    Config config;  ///< what ran
    identify::Method method = identify::Method::Map;
    identify::Status status = identify::Status::NotRun;
    std::string message;
    int iterations = 0;
    double time_s = 0;
    int samples = 0, rows = 0;
    std::vector<results::BodyEstimate> bodies;
    std::vector<results::JointFrictionEstimate> friction;
    std::vector<std::pair<std::string, double>> armature;  ///< joint, estimate [kg m^2]
    /// joint, estimate, std [N m]: constant torque-sensor offsets (measured = true + offset)
    std::vector<std::tuple<std::string, double, double>> torque_offsets;
    /// With config.validation: the held-out prediction of the nominal model (the priors) and of
    /// the identified one, in that order.
    std::vector<results::TorquePrediction> heldout;
    /// Measured torque and the two models' predictions, one entry per row of the problem (a
    /// joint, or a contact-projected row on a floating base) over the fitted samples and the
    /// held-out ranges: torques.csv, what `heft report` plots. Empty when the solve failed.
    struct TorqueRows {
      std::vector<int> recording;  ///< index into config.log, config.more_logs...
      std::vector<double> time;    ///< [s], the recording's clock
      std::vector<int> channel;    ///< index into channel_names
      std::vector<bool> held_out;  ///< in a validation range
      std::vector<double> measured, nominal, identified;  ///< [N m]
    } torques;
    std::vector<std::string> names;          ///< of the linear vector
    Eigen::VectorXd linear;                  ///< pi_S, friction, armature (layout order)
    Eigen::MatrixXd covariance;              ///< of `linear`
    std::vector<std::string> channel_names;  ///< residual channels (joints or rows)
    Eigen::VectorXd rms_before, rms_after;   ///< torque residual RMS per channel [N m]
    /// Rank-revealing factorization of the stacked torque regressor (every method): what the
    /// data can see.
    int rank = 0, dimension = 0;
    double condition_number = 0;
    std::vector<std::string> base_parameters;  ///< "m[link3] + 0.42 hx[link4] - ..."
    std::vector<std::string> warnings;         ///< the data-quality warnings among them
    /// problem.base_tilt: the tilt the samples were corrected by [rad] (base x, y axes) and its
    /// separation (identify::BaseTiltFit); in result.json as base_tilt.
    bool base_tilt_estimated = false;
    Eigen::Vector2d base_tilt = Eigen::Vector2d::Zero();
    double base_tilt_separation = 0;
    std::optional<results::TruthErrors> truth;
    /// io::assessDataQuality of the log's joint group (against the robot's effort limits).
    std::optional<io::DataQualityReport> data_quality;
    /// The data in information form (identify::IdentifyResult::information): information.json,
    /// what `heft fuse` combines across runs.
    std::optional<identify::DataInformation> information;

    /// True when the estimate may be written: a converged (or iteration-limited) solve with
    /// every body physically consistent.
    bool writable() const;
    /// The report a person reads.
    /// Why the URDF may not be written (empty when writable()), for the CLI's message.
    std::string refusal() const;
    std::string report() const;
    /// result.json (the user guide's result schema).
    nlohmann::json toJson() const;
  };

  /// Reads a YAML config. Unknown keys, wrong types and out-of-range values are InputErrors
  /// naming the file, the line and the field. Relative paths are relative to the config's folder.
  static Config load(const std::string& path);
  /// The same from YAML text; `base_dir` resolves relative paths, `source` names it in errors.
  static Config parse(const std::string& yaml_text, const std::string& source,
                      const std::string& base_dir);

  /// Runs the job. Throws InputError for bad inputs (log, robot, set); a failed solve is a result
  /// with status Failed, not an exception.
  static Result run(const Config& config, Progress& progress);
  static Result run(const Config& config) {
    Progress silent;
    return run(config, silent);
  }
  /// The MAP's equality constraints of the config (total_mass, symmetric) over the set's bodies.
  static std::vector<model::LinearConstraint> mapConstraints(const model::RobotModel& robot,
                                                             const model::IdentifiedSet& set,
                                                             const Config& config);
  /// The estimate of an identification (one run, or fused runs) as a Result's fields: config,
  /// status, linear vector and covariance, bodies (moved inside the margin when a MAP estimate
  /// sits on the boundary), friction, armature, offsets, identifiability, warnings, truth.
  static Result fromIdentification(const Config& config, const model::IdentifiedSet& set,
                                   const identify::IdentifyResult& run);

  /// Writes DIR/result.json and, when result.writable() and the robot came from a URDF,
  /// DIR/robot.urdf (the input URDF with the identified bodies' <inertial> replaced), then
  /// DIR/torques.csv and, with result.information, DIR/information.json, each atomically. DIR is
  /// created if missing. Existing outputs are replaced only with options.overwrite. Returns the
  /// paths written.
  static std::vector<std::string> write(const Result& result, const std::string& out_dir,
                                        const WriteOptions& options = {});
};

}  // namespace heft::jobs
