#pragma once
/// \file The `heft identify` job: a YAML config names the robot, the log, the identified set, the
/// priors and the method; the job prepares the samples, builds the rows, solves, and gathers what a
/// person and a program need: estimates with their prior and standard deviation, residuals before
/// and after, the directions the data cannot see, errors against the log's truth group, and a new
/// URDF. docs/identify.md ("The job") documents every config field with a commented example.
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <Eigen/Core>
#include <nlohmann/json.hpp>

#include "heft/identify/identify.hpp"
#include "heft/model/identified_set.hpp"
#include "heft/model/robots.hpp"

namespace heft::identify {

/// Everything a job needs, as read from the config (paths already resolved against the config's
/// folder).
struct JobConfig {
  std::string source = "<config>";  ///< where it came from, for messages
  std::string robot;                ///< short name or URDF / MJCF path
  model::BaseType base = model::BaseType::Default;
  std::string log;  ///< log path (HDF5 file or CSV folder)
  model::IdentifiedSetOptions set;
  /// Method and its options; options.map.constraints are built by the job from the two fields
  /// below; options.friction_truth holds the true friction of a simulated log, if given.
  IdentifyOptions options;
  std::optional<double> total_mass;                            ///< [kg], map only
  std::vector<std::pair<std::string, std::string>> symmetric;  ///< (left, right) bodies, map only

  /// \throws InputError naming the field.
  void validate() const;
};

/// Reads a YAML config. Unknown keys, wrong types and out-of-range values are InputErrors naming
/// the file, the line and the field. Relative paths are relative to the config's folder.
JobConfig loadJobConfig(const std::string& path);
/// The same from YAML text; `base_dir` resolves relative paths, `source` names it in errors.
JobConfig parseJobConfig(const std::string& yaml_text, const std::string& source,
                         const std::string& base_dir);

/// One identified body, in the units a URDF uses.
struct BodyEstimate {
  std::string name;
  Vector10 prior_pi = Vector10::Zero();  ///< prior mean (the robot's nominal values)
  Vector10 pi = Vector10::Zero();        ///< estimate (Pinocchio order, joint frame)
  Vector10 pi_std = Vector10::Zero();    ///< sqrt of the diagonal of its covariance
  Vector10 prior_std = Vector10::Zero();
  double mass = 0, mass_std = 0;
  Eigen::Vector3d com = Eigen::Vector3d::Zero(), com_std = Eigen::Vector3d::Zero();
  /// About the COM, body-frame axes; std entry-wise (delta method through pi's covariance).
  Eigen::Matrix3d inertia = Eigen::Matrix3d::Zero(), inertia_std = Eigen::Matrix3d::Zero();
  bool consistent = false;  ///< passes inertia::checkConsistency at tolerance 0
};

/// A body's estimate from its pi (Pinocchio order, joint frame) and pi's 10 x 10 covariance: mass,
/// COM and inertia about the COM with their standard deviations (delta method), consistency.
/// Shared with `heft estimate`, which writes the same schema.
BodyEstimate makeBodyEstimate(const std::string& name, const Vector10& prior_pi,
                              const Vector10& prior_std, const Vector10& pi,
                              const Eigen::MatrixXd& covariance);
/// The report's lines of the bodies (prior -> estimate +- std).
std::string bodiesReport(const std::vector<BodyEstimate>& bodies);
/// result.json's "parameters" object.
nlohmann::json parametersJson(const std::vector<BodyEstimate>& bodies);

struct JointFrictionEstimate {
  std::string joint;
  double coulomb = 0, coulomb_std = 0, coulomb_prior = 0;
  double viscous = 0, viscous_std = 0, viscous_prior = 0;
};

struct JobResult {
  Method method = Method::Map;
  Status status = Status::NotRun;
  std::string message;
  int iterations = 0;
  double time_s = 0;
  int samples = 0, rows = 0;
  std::vector<BodyEstimate> bodies;
  std::vector<JointFrictionEstimate> friction;
  std::vector<std::pair<std::string, double>> armature;  ///< joint, estimate [kg m^2]
  std::vector<std::string> names;                        ///< of the linear vector
  Eigen::VectorXd linear;                  ///< pi_S, friction, armature (layout order)
  Eigen::MatrixXd covariance;              ///< of `linear`
  std::vector<std::string> channel_names;  ///< residual channels (joints or rows)
  Eigen::VectorXd rms_before, rms_after;   ///< torque residual RMS per channel [N m]
  /// Rank-revealing factorization of the stacked torque regressor (every method): what the data
  /// can see.
  int rank = 0, dimension = 0;
  double condition_number = 0;
  std::vector<std::string> base_parameters;  ///< "m[link3] + 0.42 hx[link4] - ..."
  std::vector<std::string> warnings;
  std::optional<TruthErrors> truth;

  /// True when the estimate may be written: a converged (or iteration-limited) solve with every
  /// body physically consistent.
  bool writable() const;
  /// The report a person reads (docs/identify.md shows one).
  std::string report() const;
  /// result.json (docs/identify.md, "result.json").
  nlohmann::json toJson() const;
};

/// Progress lines ("preparing 12000 samples", ...) go to this callback when set.
using ProgressCallback = std::function<void(const std::string&)>;

/// Runs the job. Throws InputError for bad inputs (log, robot, set); a failed solve is a result
/// with status Failed, not an exception.
JobResult runJob(const JobConfig& config, const ProgressCallback& progress = {});

/// Writes `urdf_out` atomically: the robot's URDF with the <inertial> of every body in `bodies`
/// replaced (a lumped body's change goes to its own link, or is shared by its links when that
/// link alone would be inconsistent: a warning then). The caller checks that every body is
/// consistent. Returns "written", or why not (the robot does not come from a URDF).
std::string writeIdentifiedUrdf(const model::RobotModel& robot,
                                const std::vector<BodyEstimate>& bodies,
                                const std::string& urdf_out, bool overwrite,
                                std::vector<std::string>& warnings);

/// Writes DIR/result.json and, when result.writable() and the robot came from a URDF,
/// DIR/robot.urdf (the input URDF with the identified bodies' <inertial> replaced), each
/// atomically. DIR is created if missing. Existing outputs are replaced only with `overwrite`.
/// Returns the paths written.
std::vector<std::string> writeJobOutputs(const JobConfig& config, const JobResult& result,
                                         const std::string& out_dir, bool overwrite);

}  // namespace heft::identify
