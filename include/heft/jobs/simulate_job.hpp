#pragma once
/// \file The `heft simulate` job: a MuJoCo ground-truth scenario (one of heft::sim's built-in ones
/// by name, or a scenario file: docs/guide/simulate.md lists its keys), simulated with a noise
/// profile and a seed, written as a log (what a robot writes, plus the truth group).
#include <string>
#include <vector>

#include "heft/jobs/job.hpp"
#include "heft/sim/scenario.hpp"

namespace heft::jobs {

struct SimulateJob {
  /// The scenario and how to run it.
  struct Config {
    std::string source = "<config>";  ///< the scenario file, or "built-in", for messages
    sim::Scenario scenario;
    /// A file sets seed, noise (a name or a profile) and stop_on_fall; duration stays 0 (the
    /// scenario's) unless the command line sets it.
    sim::SimulationOptions options;
    /// \throws InputError naming the field.
    void validate() const;
  };

  struct Result {
    Config config;  ///< what ran
    sim::SimulationResult simulation;
    /// True when the simulation ran to its end (a log may be written).
    bool ok() const { return simulation.summary.ok(); }
    std::string report() const { return simulation.summary.report(); }
  };

  /// Every built-in scenario, one line each ("name  description").
  static std::string list();

  /// The built-in scenario `name` (sim::findScenario) with the default options.
  /// \throws InputError listing the names.
  static Config builtIn(const std::string& name);

  /// Reads a scenario file (YAML). Unknown keys, wrong types, out-of-range values and names the
  /// robot does not have (bodies, joints, frames) are InputErrors naming the file, the line and
  /// the field. A robot given as a path is relative to the file's folder. The scenario's name is
  /// the file name without its extension unless the file sets `name`.
  static Config load(const std::string& path);
  /// The same from YAML text; `source` names it in errors (and gives the default name),
  /// `base_dir` resolves a robot path.
  static Config parse(const std::string& yaml_text, const std::string& source,
                      const std::string& base_dir);
  /// The scenario file of `config` (every key of the format, numbers written so that they read
  /// back to the same doubles): parse(toYaml(c)) gives c's scenario and options.
  static std::string toYaml(const Config& config);

  /// Simulates. \throws InputError for bad options; a simulation that fails (a fall, a MuJoCo
  /// warning) is a result with !ok().
  static Result run(const Config& config, Progress& progress);

  /// Checks that `out` may be written (new unless options.overwrite), before a simulation runs.
  /// \throws InputError naming the path.
  static void checkOutput(const std::string& out, const WriteOptions& options);

  /// Writes the log to `out` (FILE.h5: HDF5; otherwise a CSV folder). \throws SolveError when
  /// !result.ok() (nothing is written). Returns the paths written.
  static std::vector<std::string> write(const Result& result, const std::string& out,
                                        const WriteOptions& options = {});
};

}  // namespace heft::jobs
