#pragma once
/// \file The `heft simulate` job: one of heft::sim's MuJoCo ground-truth scenarios, simulated with
/// a noise profile and a seed, written as a log (what a robot writes, plus the truth group).
#include <string>
#include <vector>

#include "heft/jobs/job.hpp"
#include "heft/sim/scenario.hpp"

namespace heft::jobs {

struct SimulateJob {
  struct Config {
    std::string scenario;  ///< a name of heft::sim::scenarios()
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

  /// Every scenario, one line each ("name  description").
  static std::string list();

  /// Simulates. \throws InputError for an unknown scenario or bad options; a simulation that
  /// fails (a fall, a MuJoCo warning) is a result with !ok().
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
