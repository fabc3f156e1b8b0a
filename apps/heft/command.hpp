#pragma once
/// \file How a subcommand joins the `heft` CLI: one file apps/heft/<name>.cpp per subcommand, with
///   static const heft::cli::Registration reg{"info", "Print a robot's bodies ...", &setupInfo};
/// where setupInfo adds options to its CLI::App and returns the function that runs it.
/// Errors: throw heft::InputError for bad input (exit 2), heft::SolveError for failed solves (exit
/// 1).
#include <CLI/CLI.hpp>
#include <functional>
#include <string>
#include <vector>

namespace heft::cli {

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
