#pragma once
/// \file What a log holds, in numbers a person checks before identifying: per group the samples,
/// span, rate, largest gap and dropouts; contacts; truth.
#include <string>
#include <vector>

#include "heft/io/log.hpp"

namespace heft::io {

struct SummaryOptions {
  /// A gap between two samples is a dropout when it exceeds this many median sample periods (> 1).
  double dropout_factor = 2.5;
  void validate() const;
};

/// One time series ("joints", "imu", "mocap", "contacts", "truth", "estimates"; an estimates-only
/// log has no "joints").
struct GroupSummary {
  std::string name;
  long samples = 0;
  double start = 0, end = 0;  ///< [s]
  double median_rate = 0;     ///< [Hz], 1 / median sample period (0 with fewer than 2 samples)
  double largest_gap = 0;     ///< [s], longest interval between consecutive samples
  double largest_gap_at = 0;  ///< [s], time of the sample that starts it
  long dropouts = 0;          ///< gaps longer than dropout_factor median periods
  double dropout_time = 0;    ///< [s], total time inside those gaps
  std::string channels;       ///< e.g. "q v tau tau_cmd base_pose (12 joints)"
};

struct LogSummary {
  Metadata meta;
  std::vector<GroupSummary> groups;
  std::vector<std::string> contact_names;
  std::vector<double>
      contact_fraction;  ///< share of contact samples with the flag set, per contact
  bool has_truth = false;
  std::string
      truth;  ///< what the truth holds, e.g. "states (q v a base), 4 contact forces, 13 bodies"
  /// Multi-line text for the terminal.
  std::string report() const;
};

/// Summarizes a log that passed validateLog.
LogSummary summarize(const Log& log, const SummaryOptions& options = {});

}  // namespace heft::io
