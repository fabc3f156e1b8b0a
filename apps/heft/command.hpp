#pragma once
/// \file How a subcommand joins the `heft` CLI: one file apps/heft/<name>.cpp per subcommand, with
///   static const heft::cli::Registration reg{"info", "Print a robot's bodies ...", &setupInfo};
/// where setupInfo adds options to its CLI::App and returns the function that runs it.
/// Errors: throw heft::InputError for bad input (exit 2), heft::SolveError for failed solves (exit
/// 1).
#include <unistd.h>
#include <CLI/CLI.hpp>

#include <cstdio>
#include <functional>
#include <iostream>
#include <string>
#include <vector>

#include "heft/jobs/job.hpp"

namespace heft::cli {

/// Progress lines on stderr when it is a terminal and `--quiet` was not given; none in pipes and
/// files, where the report on stdout is what a batch run keeps.
inline jobs::Progress progressFor(bool quiet) {
  if (quiet || !isatty(fileno(stderr))) return jobs::Progress();
  return jobs::Progress::to(std::cerr);
}

/// Adds the subcommand's options to `app`; returns the action that runs it (returns the exit code).
using Setup = std::function<std::function<int()>(CLI::App& app)>;

struct Command {
  std::string name;
  std::string description;
  Setup setup;
};

std::vector<Command>& commands();

struct Registration {
  Registration(std::string name, std::string description, Setup setup) {
    commands().push_back({std::move(name), std::move(description), std::move(setup)});
  }
};

}  // namespace heft::cli
