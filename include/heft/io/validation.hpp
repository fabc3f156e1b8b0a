#pragma once
/// \file Checks a Log before anyone computes with it: sizes against names, finite values, strictly
/// increasing time, unit quaternions, 0/1 flags, and (with a model) joint names and base type.
/// Every error names the field (HDF5 path, e.g. "joints/q"), the row (0-based sample index; in a
/// CSV file row r is on line r + 2) and what was expected.
#include <cstddef>
#include <string>
#include <vector>

#include <pinocchio/multibody/model.hpp>

#include "heft/io/log.hpp"

namespace heft::io {

struct ValidationOptions {
  /// Stop recording after this many errors (the count goes on). Must be >= 1.
  int max_errors = 10;
  /// A quaternion q is accepted when | ||q|| - 1 | <= quaternion_tolerance. 1e-3 admits quaternions
  /// written with 4 significant digits and float32 storage, and rejects un-normalized ones.
  double quaternion_tolerance = 1e-3;
  /// 1-DoF model joints the log may leave out (a closed loop's passive joints:
  /// model::loopJointNames).
  std::vector<std::string> unlogged_joints;
  /// Throws InputError naming the field when an option is out of range.
  void validate() const;
};

/// One error: `field` is the HDF5 path of the dataset ("joints/q"), `row` the 0-based sample index
/// or -1 when the error concerns the whole field, `message` the full one-line text.
struct ValidationIssue {
  std::string field;
  std::ptrdiff_t row = -1;
  std::string message;
};

struct ValidationReport {
  std::vector<ValidationIssue> errors;  ///< the first max_errors errors, in check order
  std::size_t total_errors = 0;         ///< every error found, recorded or not
  bool ok() const { return total_errors == 0; }
  /// "log is valid" or one line per recorded error plus "... and N more".
  std::string report() const;
};

/// Checks the log on its own (no model).
ValidationReport validateLog(const Log& log, const ValidationOptions& options = {});

/// Checks the log and its agreement with `model`: every log joint is a 1-DoF joint of the model,
/// every 1-DoF model joint is in the log, the base type matches the model's root joint, truth
/// bodies are model bodies (a movable joint's name or the link at that joint's frame).
ValidationReport validateLog(const Log& log, const pinocchio::Model& model,
                             const ValidationOptions& options = {});

/// How a time stamp follows the previous one: the order rule of every time vector (validateLog
/// reports Duplicated and Backwards as errors; assessDataQuality counts them).
enum class TimeOrder { Increasing, Duplicated, Backwards, NotFinite };
/// Order of time(i) after time(i - 1), for 1 <= i < time.size(); NotFinite when either is not
/// finite.
TimeOrder timeOrderAt(const Eigen::VectorXd& time, Eigen::Index i);

/// Throws InputError with the first error (prefixed with `source`, e.g. the file name) if any.
void requireValid(const ValidationReport& report, const std::string& source);

}  // namespace heft::io
