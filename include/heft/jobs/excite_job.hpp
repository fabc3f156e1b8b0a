#pragma once
/// \file The `heft excite` job: Fourier excitation designed for a fixed-base arm (heft::excite),
/// written as a scenario file `heft simulate` plays, a CSV of the trajectory and a result.json
/// with the predicted identifiability before (a built-in scenario's seeded excitation of the same
/// duration) and after the design. docs/guide/excite.md documents every config field.
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "heft/excite/cmaes.hpp"
#include "heft/excite/collision.hpp"
#include "heft/excite/design.hpp"
#include "heft/jobs/job.hpp"

namespace heft::jobs {

struct ExciteJob {
  struct Config {
    std::string source = "<config>";  ///< where it came from, for messages
    std::string robot = "panda";      ///< a bundled fixed-base robot or a URDF path
    excite::DesignOptions design;
    excite::CmaesOptions optimizer;
    /// The built-in scenario whose seeded excitation (same duration) is the "before", and whose
    /// controller, gains and tracking bound the written scenario keeps.
    std::string reference_scenario = "panda";
    double csv_rate = 100;  ///< [Hz] of trajectory.csv and of the final limit check
    /// Check the designed trajectory for self-collision at csv_rate (the URDF's collision meshes,
    /// pairs disabled by the robot's SRDF when it has one beside the URDF: ../srdf/NAME.srdf).
    bool self_collision = true;
    /// \throws InputError naming the field.
    void validate() const;
  };

  struct Result {
    Config config;
    excite::DesignResult design;
    std::vector<std::string> base_names;    ///< the base parameters (independent columns)
    excite::Identifiability before, after;  ///< on the design grid
    excite::LimitUse fine_limits;           ///< the designed trajectory at csv_rate
    excite::SelfCollision collision;        ///< at csv_rate (when config.self_collision)
    std::string scenario_yaml;              ///< for scenario.yaml
    std::string csv;                        ///< for trajectory.csv
    bool ok() const { return design.feasible() && fine_limits.satisfied() && collision.free(); }
    std::string report() const;
    nlohmann::json toJson() const;
  };

  /// Reads a YAML config; errors name the file, the line and the field.
  static Config load(const std::string& path);
  static Config parse(const std::string& yaml_text, const std::string& source,
                      const std::string& base_dir);

  /// Designs the excitation. \throws InputError for bad input.
  static Result run(const Config& config, Progress& progress);
  static Result run(const Config& config) {
    Progress silent;
    return run(config, silent);
  }

  /// Writes DIR/result.json, and when the design respects every limit DIR/scenario.yaml and
  /// DIR/trajectory.csv, atomically. Returns the paths written. \throws SolveError (after
  /// result.json) when the design violates a limit or collides with itself.
  static std::vector<std::string> write(const Result& result, const std::string& out_dir,
                                        const WriteOptions& options = {});
};

}  // namespace heft::jobs
