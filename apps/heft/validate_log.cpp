// heft validate-log MODEL LOG: checks a log against a robot and prints what it holds.
#include <iostream>
#include <string>

#include "command.hpp"
#include "heft/jobs/inspect_jobs.hpp"

namespace {

struct ValidateLogArgs {
  std::string model;
  std::string log;
  int max_errors = 10;
  double quaternion_tolerance = 1e-3;
  double dropout_factor = 2.5;
};

int runValidateLog(const ValidateLogArgs& args) {
  heft::jobs::ValidateLogJob::Config config;
  config.model = args.model;
  config.log = args.log;
  config.validation.max_errors = args.max_errors;
  config.validation.quaternion_tolerance = args.quaternion_tolerance;
  config.summary.dropout_factor = args.dropout_factor;
  const heft::jobs::ValidateLogJob::Result result = heft::jobs::ValidateLogJob::run(config);
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
  app.add_option("MODEL", args->model, "robot short name (e.g. go2) or URDF / MJCF path")
      ->required();
  app.add_option("LOG", args->log,
                 "log: an .h5 file or a directory of CSV files (docs/log-format.md)")
      ->required();
  app.add_option("--max-errors", args->max_errors, "list at most this many errors")
      ->capture_default_str();
  app.add_option("--quaternion-tolerance", args->quaternion_tolerance,
                 "accepted | |q| - 1 | for quaternions")
      ->capture_default_str();
  app.add_option("--dropout-factor", args->dropout_factor,
                 "a gap longer than this many median periods counts as a dropout")
      ->capture_default_str();
  return [args] { return runValidateLog(*args); };
}

const heft::cli::Registration registration{
    "validate-log",
    "Check a log (HDF5 or CSV) against a robot model; print its groups, rates, gaps and contents",
    &setupValidateLog};

}  // namespace
