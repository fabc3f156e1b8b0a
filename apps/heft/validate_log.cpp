// heft validate-log MODEL LOG: checks a log against a robot, prints what it holds and its data
// quality.
#include <iostream>
#include <string>

#include "command.hpp"
#include "heft/jobs/inspect_jobs.hpp"

namespace {

struct ValidateLogArgs {
  std::string model;
  std::string log;
  bool json = false;
  heft::io::ValidationOptions validation;
  heft::io::SummaryOptions summary;
  heft::io::DataQualityOptions data_quality;
};

int runValidateLog(const ValidateLogArgs& args) {
  heft::jobs::ValidateLogJob::Config config;
  config.model = args.model;
  config.log = args.log;
  config.validation = args.validation;
  config.summary = args.summary;
  config.data_quality = args.data_quality;
  // one gap threshold for the summary's dropouts and the data quality's gaps
  config.data_quality.gap_factor = args.summary.dropout_factor;
  const heft::jobs::ValidateLogJob::Result result = heft::jobs::ValidateLogJob::run(config);
  if (args.json) {
    std::cout << result.json.dump(2) << "\n";
    return result.ok ? 0 : 2;
  }
  if (!result.ok) {
    std::cerr << "heft validate-log: " << args.log << ": " << result.total_errors
              << (result.total_errors == 1 ? " error" : " errors") << " against model "
              << result.robot << ":\n"
              << result.report;
    return 2;
  }
  std::cout << args.log << ": valid for model " << result.robot << "\n" << result.report;
  return 0;
}

std::function<int()> setupValidateLog(CLI::App& app) {
  auto args = std::make_shared<ValidateLogArgs>();
  heft::io::DataQualityOptions& q = args->data_quality;
  app.add_option("MODEL", args->model, "robot short name (e.g. go2) or URDF / MJCF path")
      ->required();
  app.add_option("LOG", args->log,
                 "log: an .h5 file or a directory of CSV files (docs/log-format.md)")
      ->required();
  app.add_flag("--json", args->json, "print JSON instead of text");
  app.add_option("--max-errors", args->validation.max_errors, "list at most this many errors")
      ->capture_default_str();
  app.add_option("--quaternion-tolerance", args->validation.quaternion_tolerance,
                 "accepted | |q| - 1 | for quaternions")
      ->capture_default_str();
  app.add_option("--dropout-factor", args->summary.dropout_factor,
                 "a gap longer than this many median periods counts as a dropout (and a gap)")
      ->capture_default_str();
  app.add_option("--max-rows", q.max_rows, "data quality: rows listed per finding")
      ->capture_default_str();
  app.add_option("--jitter-factor", q.jitter_factor,
                 "data quality: a step outside [median / F, F x median] is jitter")
      ->capture_default_str();
  app.add_option("--rate-block", q.rate_block,
                 "data quality: time steps per block when looking for rate changes")
      ->capture_default_str();
  app.add_option("--rate-change-tolerance", q.rate_change_tolerance,
                 "data quality: relative change of the median step that is a rate change")
      ->capture_default_str();
  app.add_option("--saturation-run", q.saturation_run,
                 "data quality: consecutive samples at max |tau| that are a saturation")
      ->capture_default_str();
  app.add_option("--consistency-window", q.consistency_window,
                 "data quality: time steps per window comparing dq with the integral of v")
      ->capture_default_str();
  app.add_option("--consistency-threshold", q.consistency_threshold,
                 "data quality: || dq - integral v || / motion above which a joint disagrees")
      ->capture_default_str();
  app.add_option("--motion-to-noise", q.motion_to_noise,
                 "data quality: a joint is judged when its motion is this many times its noise")
      ->capture_default_str();
  app.add_option("--jump-factor", q.jump_factor,
                 "data quality: a step beyond this many typical steps is a jump")
      ->capture_default_str();
  app.add_option("--min-jump", q.min_jump, "data quality: smallest jump reported [rad or m]")
      ->capture_default_str();
  app.add_option("--clock-tolerance", q.clock_tolerance,
                 "data quality: |clock factor - 1| above this is a warning")
      ->capture_default_str();
  return [args] { return runValidateLog(*args); };
}

const heft::cli::Registration registration{
    "validate-log",
    "Check a log (HDF5 or CSV) against a robot model; print its groups, rates, gaps, contents and "
    "data quality (held samples, jitter, rate changes, saturation, position/velocity agreement)",
    &setupValidateLog};

}  // namespace
