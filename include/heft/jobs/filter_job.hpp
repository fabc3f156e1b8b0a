#pragma once
/// \file The `heft filter` job: replay a log through the online inertial EKF (and, on request, the
/// linear-KF baseline) sample by sample, as a 1 kHz control loop would run it, and report the
/// estimates over time against the log's truth group. The user guide's filter page documents every
/// config field and metric.
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <Eigen/Core>
#include <nlohmann/json.hpp>

#include "heft/filter/inertial_ekf.hpp"
#include "heft/filter/replay.hpp"
#include "heft/io/data_quality.hpp"
#include "heft/io/log.hpp"
#include "heft/jobs/job.hpp"
#include "heft/model/model.hpp"

namespace heft::jobs {

struct FilterJob {
  /// Where the free-flyer base state comes from: the log's joints/base_pose and base_twist (a state
  /// estimator's output), heft::basestate on the log (Estimate), the log's when present else
  /// estimated (Auto), or the truth group (studies).
  enum class BaseStateSource { Auto, Log, Estimate, Truth };
  /// Where the contact forces come from: none (a fixed base, or no contact); the truth group's
  /// contact_forces (a simulated log); the log's force_torque group (measured wrenches at the
  /// sensor frames, interpolated at the joint times); or nowhere: projected out of the
  /// measurement while the contact frames of `contacts` are in stance (contacts/flags).
  enum class ContactForceSource { None, Truth, Sensors, Projected };

  struct Config {
    std::string source = "<config>";  ///< for messages
    std::string robot;                ///< short name or URDF / MJCF path
    std::string log;                  ///< HDF5 file or CSV folder
    /// Joints held at a position (`locked_joints`): a gripper, a passive joint, a joint the log
    /// lacks. Every 1-DoF joint of the robot must be in the log or here.
    std::vector<model::LockedJoint> locked_joints;
    std::vector<std::string> bodies;  ///< estimated bodies (heft body names); prior = the model's
    filter::InertialEkfOptions options;  ///< options.state is the main filter's state
    bool baseline = true;                ///< also run the linear-pi KF on the same samples
    BaseStateSource base_state = BaseStateSource::Auto;
    /// When heft estimates the base state: the feet stand on a level floor
    /// (basestate::ContactEkfOptions::level_ground).
    bool level_ground = false;
    /// When heft estimates the base state: run its RTS smoother too (offline replay only: a
    /// control loop has no later samples); false: the causal filter, as online.
    bool smooth_base_state = false;
    ContactForceSource contact_forces = ContactForceSource::None;
    /// Contact points, names as in truth/contact_names (truth) or contacts/names (projected: their
    /// frames, grouped by model::groupContactFrames, are the stance frames).
    std::vector<filter::ContactPoint> contacts;
    std::optional<double> start_time, end_time;  ///< [s] of the joints' clock
    /// Metrics: tolerance on the relative mass error for the settling time after a truth step.
    double settle_tolerance = 0.03;
    /// \throws InputError naming the field.
    void validate() const;
  };

  struct Result {
    Config config;  ///< what ran
    std::string robot, log, scenario;
    std::vector<std::string> bodies;
    int rows = 0;  ///< measurement dimension
    double gate_threshold = 0;
    std::vector<filter::FilterTrace> traces;  ///< the main filter first, then the baseline
    std::vector<filter::FilterRunSummary> summaries;
    std::vector<std::string> warnings;  ///< the data-quality warnings among them
    /// io::assessDataQuality of the log's joint group (against the robot's effort limits).
    std::optional<io::DataQualityReport> data_quality;
    bool has_truth = false;
    std::string report() const;
    nlohmann::json toJson() const;
  };

  /// Reads a YAML config: unknown keys, wrong types and out-of-range values are InputErrors
  /// naming the file, line and field. Relative paths are relative to the config's folder.
  static Config load(const std::string& path);
  static Config parse(const std::string& yaml_text, const std::string& source,
                      const std::string& base_dir);
  /// Runs the job. \throws InputError for a bad log, robot, body or contact.
  static Result run(const Config& config, Progress& progress);
  static Result run(const Config& config) {
    Progress silent;
    return run(config, silent);
  }
  /// Writes DIR/estimates.h5 (the main filter, log format with an estimates group),
  /// DIR/baseline.h5 (when run) and DIR/summary.json, each atomically; refuses to replace
  /// existing files unless options.overwrite. Returns the paths written.
  static std::vector<std::string> write(const Result& result, const std::string& out_dir,
                                        const WriteOptions& options = {});
};

}  // namespace heft::jobs
