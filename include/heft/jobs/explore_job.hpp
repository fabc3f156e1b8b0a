#pragma once
/// \file The `heft explore` job: spi-active's active exploration. Stage 1 is a `heft sample` run
/// (its config, given by path); then base commands of the robot's stance controller are designed
/// to make the sampled parameters observable (heft::sampling::designCommands: CMA-ES on tr F^-1
/// of the stage-1 estimate), and written as a scenario file `heft simulate` plays (the reference
/// scenario's model, controller and bounds with the designed motion), a CSV of the commanded
/// motion a robot can play, and result.json with the stage-1 result, the design and a random
/// design's criterion for scale. The second stage is `heft sample` with `more_logs`.
/// docs/guide/explore.md documents every config field.
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "heft/jobs/job.hpp"
#include "heft/jobs/sample_job.hpp"
#include "heft/sampling/exploration.hpp"

namespace heft::jobs {

struct ExploreJob {
  struct Config {
    std::string source = "<config>";  ///< where it came from, for messages
    std::string sample_config;        ///< the stage-1 `heft sample` config (path)
    SampleJob::Config sample;         ///< read from it
    /// The built-in scenario whose posture, stance controller (its kp, kd must be the sample
    /// config's replay gains), contact model and fall bounds the design and the written scenario
    /// use; its phases are replaced by the designed commands.
    std::string reference_scenario = "go2-stand";
    sampling::ExplorationOptions exploration;
    /// The random design reported beside the optimized one (CMA-ES starts from the random
    /// design of its own seed, 1 by default: another seed here gives another draw).
    std::uint64_t random_seed = 0;
    double csv_rate = 100;  ///< [Hz] of reference.csv
    /// A finished stage 1: the result.json heft sample wrote for `sample_config` (its estimate
    /// and residual RMS are what the design needs); empty = run stage 1.
    std::string stage1_result;
    /// \throws InputError naming the field.
    void validate() const;
  };

  struct Result {
    Config config;
    SampleJob::Result stage1;    ///< not run when config.stage1_result is read instead
    nlohmann::json stage1_json;  ///< config.stage1_result's contents (null when stage 1 ran)
    sampling::ExplorationSummary design;
    sampling::CommandDesign random;  ///< uniform in the bounds, for scale
    std::vector<std::string> names;  ///< the sampled coordinates
    Eigen::VectorXd steps;           ///< each coordinate's units per x unit
    std::string scenario_yaml;       ///< for scenario.yaml
    std::string csv;                 ///< for reference.csv
    bool stage1Ok() const { return stage1.ok() || !stage1_json.is_null(); }
    bool ok() const { return stage1Ok() && design.usable(); }
    std::string report() const;
    nlohmann::json toJson() const;
  };

  /// Reads a YAML config; errors name the file, the line and the field.
  static Config load(const std::string& path);
  static Config parse(const std::string& yaml_text, const std::string& source,
                      const std::string& base_dir);

  /// Runs stage 1 (or reads config.stage1_result) and the design. \throws InputError for bad
  /// input (the sample config's, a reference scenario that is not a stance motion or whose gains
  /// differ from the replay's, a stage1_result that is not heft sample's for this config or
  /// holds no usable estimate).
  static Result run(const Config& config, Progress& progress);
  static Result run(const Config& config) {
    Progress silent;
    return run(config, silent);
  }

  /// Writes DIR/result.json, and when the design is usable DIR/scenario.yaml and
  /// DIR/reference.csv, atomically. \throws SolveError (exit 1) after result.json when stage 1
  /// failed or no feasible design was found.
  static std::vector<std::string> write(const Result& result, const std::string& out_dir,
                                        const WriteOptions& options = {});
};

}  // namespace heft::jobs
