#pragma once
/// \file The two jobs that look before anything is estimated: `heft info` (a robot's bodies and
/// their physical consistency) and `heft validate-log` (a log checked against a robot, then its
/// data quality).
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "heft/io/data_quality.hpp"
#include "heft/io/summary.hpp"
#include "heft/io/validation.hpp"
#include "heft/model/model.hpp"

namespace heft::jobs {

struct InfoJob {
  struct Config {
    std::string model;  ///< robot short name or URDF / MJCF path
    model::BaseType base = model::BaseType::Default;
    /// Consistency margins must exceed this (kg, kg m^2); >= 0.
    double tolerance = 0.0;
  };
  struct Result {
    int bodies = 0, inconsistent_bodies = 0;
    std::string table;            ///< what a person reads
    nlohmann::ordered_json json;  ///< keys in the order written
  };
  /// \throws InputError for an unknown robot or a bad model file.
  static Result run(const Config& config);
};

struct ValidateLogJob {
  struct Config {
    std::string model;  ///< robot short name or URDF / MJCF path
    std::string log;    ///< HDF5 file or CSV folder
    io::ValidationOptions validation;
    io::SummaryOptions summary;
    io::DataQualityOptions data_quality;
    /// \throws InputError naming the option.
    void validate() const;
  };
  struct Result {
    bool ok = false;
    int total_errors = 0;
    std::string robot;  ///< display name
    /// The log's summary and data-quality section when ok, else its errors.
    std::string report;
    /// io::assessDataQuality against the robot, when the log is valid (its findings are warnings:
    /// they do not make the log invalid).
    std::optional<io::DataQualityReport> data_quality;
    /// The same as JSON: log, robot, valid, total_errors, errors [{field, row, message}],
    /// groups (the summary, when valid), data_quality (results::dataQualityJson, or null).
    nlohmann::json json;
  };
  /// Reads the log without the reader's own check, so that every error is listed, not only the
  /// first; assesses the data quality of a valid log. \throws InputError for an unreadable log or
  /// robot.
  static Result run(const Config& config);
};

}  // namespace heft::jobs
