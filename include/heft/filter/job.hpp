#pragma once
/// \file The `heft filter` job: replay a log through the online inertial EKF (and, on request, the
/// linear-KF baseline) sample by sample, as a 1 kHz control loop would run it, and report the
/// estimates over time against the log's truth group. docs/filter.md documents every config field
/// and metric.
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <Eigen/Core>
#include <nlohmann/json.hpp>

#include "heft/filter/inertial_ekf.hpp"
#include "heft/io/log.hpp"

namespace heft::filter {

/// Where the free-flyer base state comes from: the log's joints/base_pose and base_twist (a state
/// estimator's output), or the truth group (simulated logs; heft has no base state estimator).
enum class BaseStateSource { Log, Truth };
/// Where the contact forces come from: none (a fixed base, or no contact), or the truth group's
/// contact_forces (a simulated log; on hardware: force sensors or a contact estimator).
enum class ContactForceSource { None, Truth };

struct FilterJobConfig {
  std::string source = "<config>";  ///< for messages
  std::string robot;                ///< short name or URDF / MJCF path
  std::string log;                  ///< HDF5 file or CSV folder
  std::vector<std::string> bodies;  ///< estimated bodies (heft body names); prior = the model's
  InertialEkfOptions options;       ///< options.state is the main filter's state
  bool baseline = true;             ///< also run the linear-pi KF on the same samples
  BaseStateSource base_state = BaseStateSource::Log;
  ContactForceSource contact_forces = ContactForceSource::None;
  std::vector<ContactPoint> contacts;          ///< names as in truth/contact_names
  std::optional<double> start_time, end_time;  ///< [s] of the joints' clock
  /// Metrics: tolerance on the relative mass error for the settling time after a truth step.
  double settle_tolerance = 0.03;
  /// \throws InputError naming the field.
  void validate() const;
};

/// Reads a YAML config: unknown keys, wrong types and out-of-range values are InputErrors naming
/// the file, line and field. Relative paths are relative to the config's folder.
FilterJobConfig loadFilterJobConfig(const std::string& path);
FilterJobConfig parseFilterJobConfig(const std::string& yaml_text, const std::string& source,
                                     const std::string& base_dir);

/// One filter over the whole log: its estimates over time (the samples that left the window).
struct FilterTrace {
  std::string estimator;  ///< "log-cholesky-ekf" or "linear-pi-kf"
  io::EstimateSeries series;
  InertialEkf::Counters counters;
  double update_median_us = 0, update_max_us = 0;  ///< wall time of update(), this machine
  std::vector<std::uint8_t> consistent;            ///< per estimate: every body consistent
  /// per estimate: when it became available (the newest sample's time); series.time is the time
  /// it refers to, difference_half_width samples earlier. Settle times are counted from this.
  std::vector<double> available_time;
  /// estimate time at which the rate-limited output first caught up with the filter (start-up)
  std::optional<double> caught_up_time;
};

/// A truth mass step and how the estimate followed it.
struct StepResponse {
  double time = 0;                         ///< [s] of the truth step
  double mass_before = 0, mass_after = 0;  ///< truth [kg]
  std::optional<double> settle_time;       ///< [s] from the step until an estimate available then
                                           ///< is within settle_tolerance for good
};

/// Metrics of one body under one filter, against truth (docs/filter.md defines each).
struct BodyMetrics {
  std::string name;
  double final_mass = 0, final_truth_mass = 0;
  double mass_rms_relative = 0;  ///< RMS of m / m_true - 1, updated samples after catch-up
  double final_com_error = 0;    ///< [m]
  std::vector<StepResponse> steps;
  int touchdowns = 0;  ///< used for the transient: after catch-up, not near a truth step
  double largest_impact_transient = 0;  ///< [kg], max over touchdowns
};

struct FilterRunSummary {
  std::string estimator;
  InertialEkf::Counters counters;
  double update_median_us = 0, update_max_us = 0;
  double inconsistent_time = 0;              ///< [s] with some body not physically consistent
  std::optional<double> first_inconsistent;  ///< [s]
  std::optional<double> caught_up_time;      ///< [s] output first caught up (FilterTrace)
  std::vector<BodyMetrics> bodies;           ///< empty without truth
};

struct FilterJobResult {
  std::string robot, log, scenario;
  std::vector<std::string> bodies;
  int rows = 0;  ///< measurement dimension
  double gate_threshold = 0;
  std::vector<FilterTrace> traces;  ///< the main filter first, then the baseline
  std::vector<FilterRunSummary> summaries;
  std::vector<std::string> warnings;
  bool has_truth = false;
  std::string report() const;
  nlohmann::json toJson() const;
};

using FilterProgress = std::function<void(const std::string&)>;
/// Runs the job. \throws InputError for a bad log, robot, body or contact.
FilterJobResult runFilterJob(const FilterJobConfig& config, const FilterProgress& progress = {});
/// Writes DIR/estimates.h5 (the main filter, log format with an estimates group),
/// DIR/baseline.h5 (when run) and DIR/summary.json, each atomically; refuses to replace existing
/// files unless `overwrite`. Returns the paths written.
std::vector<std::string> writeFilterJobOutputs(const FilterJobResult& result,
                                               const std::string& out_dir, bool overwrite);

}  // namespace heft::filter
