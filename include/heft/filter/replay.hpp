#pragma once
/// \file Replaying samples through an inertial filter as a control loop would, and the metrics of
/// the estimates over time against a simulated log's truth: settle time after a mass step, mass
/// error RMS, impact transients, time spent physically inconsistent.
#include <optional>
#include <string>
#include <vector>

#include <Eigen/Core>

#include "heft/filter/inertial_ekf.hpp"
#include "heft/io/log.hpp"
#include "heft/results/truth.hpp"

namespace heft::filter {

/// Samples as the control loop sees them: one column per sample, Pinocchio order.
struct ReplaySamples {
  Eigen::VectorXd time;
  Eigen::MatrixXd q, v, tau, forces;  ///< nq x N, nv x N, nv x N, 3 nc x N
};

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

/// Metrics of one body under one filter, against truth (the user guide's filter page defines each).
struct BodyMetrics {
  std::string name;
  /// The last estimate against the truth at its time: the metrics every estimator reports.
  results::BodyError final;
  double mass_rms_relative = 0;  ///< RMS of m / m_true - 1, updated samples after catch-up
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

/// Feeds every sample to `filter` in order (update() timed on this machine) and keeps each
/// estimate that left the window; `names` are the estimated bodies'.
FilterTrace replay(InertialEkf& filter, const ReplaySamples& samples,
                   const std::vector<std::string>& names);

/// Counters, timing and consistency of a trace; with `truth`, each body's metrics against it
/// (`truth_names`: the bodies' names in the truth group; `contacts`: for touchdown times;
/// `settle_tolerance`: on the relative mass error, for the settle time after a truth step).
FilterRunSummary summarize(const FilterTrace& trace, const std::vector<std::string>& truth_names,
                           const std::optional<io::TruthSeries>& truth,
                           const std::vector<ContactPoint>& contacts, double settle_tolerance);

}  // namespace heft::filter
