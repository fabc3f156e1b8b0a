// heft validate-log MODEL LOG: checks a log against a robot and prints what it holds.
#include <iostream>
#include <string>

#include "command.hpp"
#include "heft/common/error.hpp"
#include "heft/io/log_io.hpp"
#include "heft/io/summary.hpp"
#include "heft/io/validation.hpp"
#include "heft/model/model.hpp"

namespace {

struct ValidateLogArgs {
  std::string model;
  std::string log;
  int max_errors = 10;
  double quaternion_tolerance = 1e-3;
  double dropout_factor = 2.5;
};

int runValidateLog(const ValidateLogArgs& args) {
  heft::io::ValidationOptions validation;
  validation.max_errors = args.max_errors;
  validation.quaternion_tolerance = args.quaternion_tolerance;
  validation.validate();
  heft::io::SummaryOptions summary_options;
  summary_options.dropout_factor = args.dropout_factor;
  summary_options.validate();

  const heft::model::RobotModel robot = heft::model::loadRobot(args.model);
  // read without the reader's own check, so that every error is listed, not only the first
  heft::io::ReadOptions read;
  read.check_log = false;
  const heft::io::Log log = heft::io::readLog(args.log, read);
  const heft::io::ValidationReport report =
      heft::io::validateLog(log, robot.pinocchio(), validation);
  if (!report.ok()) {
    std::cerr << "heft validate-log: " << args.log << ": " << report.total_errors
              << (report.total_errors == 1 ? " error" : " errors") << " against model "
              << robot.displayName() << ":\n"
              << report.report();
    return 2;
  }
  std::cout << args.log << ": valid for model " << robot.displayName() << "\n"
            << heft::io::summarize(log, summary_options).report();
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
