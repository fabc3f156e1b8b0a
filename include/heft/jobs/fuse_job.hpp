#pragma once
/// \file The `heft fuse` job: several `heft identify` runs of one robot (its logs: other days,
/// other motions, sensors zeroed anew) combined into one estimate. Each run left its data in
/// information form (information.json); the job reads and checks them against the identify config
/// and hands them to identify::fuse (heft/identify/fusion.hpp: offsets marginalized per run,
/// outlier gate, one MAP on the sum). Output: result.json (identify's schema, method
/// "fused-map", plus a `fusion` block: per run its rows, use, excess cost, offsets and share of
/// the information on each base parameter), robot.urdf and the summed information.json.
/// User guide: docs/guide/fuse.md.
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "heft/identify/fusion.hpp"
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
    /// A change of the robot between two consecutive runs (in the order of `runs`) is reported
    /// when the drift scan's largest statistic exceeds gate times the runs' typical excess (0: no
    /// scan; identify::DriftScan).
    double drift_gate = 10;
    /// Divide the data's information in the fused covariance by the runs' dispersion (their
    /// Birge ratio, when above 1); the estimate is unchanged: identify::FusionOptions.
    bool scale_by_dispersion = true;
    /// \throws InputError naming the field.
    void validate() const;
  };

  /// What one run brought (source: its folder).
  using Run = identify::FusedLog;

  struct Result {
    Config config;
    IdentifyJob::Result fused;  ///< the estimate, in identify's shape
    std::vector<Run> runs;
    identify::DriftScan drift;
    identify::Dispersion dispersion;
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
