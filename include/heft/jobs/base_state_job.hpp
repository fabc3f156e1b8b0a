#pragma once
/// \file The `heft base-state` job: the base pose and twist of a floating-base log from its IMU,
/// joint encoders and contact flags (heft::basestate, a contact-aided invariant EKF and an RTS
/// smoother), written into a copy of the log (joints/base_pose, joints/base_twist), with a
/// result.json scoring it against the log's truth when there is one. docs/guide/base-state.md
/// documents the options.
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "heft/basestate/base_state.hpp"
#include "heft/io/log.hpp"
#include "heft/jobs/job.hpp"
#include "heft/model/contact_points.hpp"

namespace heft::jobs {

struct BaseStateJob {
  struct Config {
    std::string source = "<command line>";  ///< where the options came from, for messages
    std::string robot;                      ///< short name or URDF / MJCF path
    std::string log;                        ///< HDF5 file or CSV folder
    basestate::BaseStateOptions options;
    /// Contact points the log names but does not define (`contact_points:`).
    std::vector<model::ContactPoint> contact_points;
    /// \throws InputError naming the field.
    void validate() const;
  };

  struct Result {
    Config config;
    io::Log log;  ///< the input log with joints/base_pose and base_twist filled
    basestate::BaseStateSummary summary;
    std::optional<basestate::BaseStateErrors> errors;  ///< against truth, when the log has it
    std::string report() const;
    nlohmann::json toJson() const;
  };

  /// Reads the options of a YAML file (`filter:` noise and initial uncertainty, `smooth`,
  /// `imu_frame`, `ground_height`, `contact_points`) into `config`; errors name file, line, key.
  static void loadOptions(const std::string& path, Config& config);
  static void parseOptions(const std::string& yaml_text, const std::string& source, Config& config);

  /// \throws InputError for a bad log (no IMU, an IMU frame the model lacks, no touchdown, ...).
  static Result run(const Config& config, Progress& progress);
  static Result run(const Config& config) {
    Progress silent;
    return run(config, silent);
  }

  /// Writes `out_log` (HDF5 for .h5 / .hdf5, else a CSV folder) and result.json in its folder,
  /// each atomically; refuses existing files unless options.overwrite, and the input log always.
  static std::vector<std::string> write(const Result& result, const std::string& out_log,
                                        const WriteOptions& options = {});
};

}  // namespace heft::jobs
