#pragma once
/// \file The `heft fuse` job: several `heft identify` runs of one robot (its logs: other days,
/// other motions, sensors zeroed anew) combined into one estimate. Each run left its data in
/// information form (information.json, identify/information.hpp); the job marginalizes each run's
/// torque offsets (they belong to a recording), sums the rest, leaves out runs whose data
/// disagree with the others (outlier gate), and solves the identify MAP once on the sum: the
/// joint MAP of all logs with each log's own weights. Output: result.json (identify's schema,
/// method "fused-map", plus a `fusion` block: per run its rows, use, excess cost, offsets and
/// share of the information on each base parameter), robot.urdf and the summed information.json.
/// User guide: docs/guide/fuse.md.
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "heft/jobs/identify_job.hpp"
#include "heft/jobs/job.hpp"

namespace heft::jobs {

struct FuseJob {
  struct Config {
    std::string source = "<config>";
    std::string identify;           ///< the heft identify config every run used (resolved path)
    IdentifyJob::Config job;        ///< read from it: robot, identified set, priors, map options
    std::vector<std::string> runs;  ///< heft identify output folders (resolved)
    /// A simulated log of this robot: its truth group scores the fused estimate (never an input).
    std::string truth_log;
    /// A run whose data the other runs' own estimates explain worse than gate times the runs'
    /// median (Run::excess_others) is left out (0: keep every run).
    double outlier_gate = 10;
    /// \throws InputError naming the field.
    void validate() const;
  };

  /// What one run brought.
  struct Run {
    std::string folder;
    int rows = 0;
    bool used = true;
    std::string left_out_because;  ///< empty when used
    /// 2 (cost of the run's data at the fused estimate - its own minimum) / its data rank: about
    /// 1 when the run agrees with the others, large for a run of another robot or payload.
    double excess = 0;
    /// The median over the other runs of the same at each one's own estimate: the outlier gate's
    /// measure (0 when the gate did not run: fewer than three runs, or gate 0).
    double excess_others = 0;
    int data_rank = 0;
    /// Its torque offsets at the fused estimate (joint, value [N m]).
    std::vector<std::pair<std::string, double>> offsets;
    /// Its share of the information on each base parameter of the fused data (0..1, the shares of
    /// the used runs sum to 1).
    std::vector<double> information_share;
  };

  struct Result {
    Config config;
    IdentifyJob::Result fused;  ///< the estimate, in identify's shape
    std::vector<Run> runs;
    identify::DataInformation information;  ///< the sum over the used runs
    bool writable() const { return fused.writable(); }
    std::string report() const;
    nlohmann::json toJson() const;
  };

  static Config load(const std::string& path);
  static Config parse(const std::string& yaml_text, const std::string& source,
                      const std::string& base_dir);
  /// \throws InputError for a missing or malformed information.json, a run of another robot or
  ///   identified set, or fewer than one usable run.
  static Result run(const Config& config, Progress& progress);
  static Result run(const Config& config) {
    Progress silent;
    return run(config, silent);
  }
  /// DIR/result.json always, DIR/robot.urdf when writable, DIR/information.json (the sum, to fuse
  /// further), atomically.
  static std::vector<std::string> write(const Result& result, const std::string& out_dir,
                                        const WriteOptions& options = {});
};

}  // namespace heft::jobs
