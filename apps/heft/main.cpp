// heft: one CLI for every job. Subcommands register themselves (command.hpp).
#include <algorithm>
#include <iostream>
#include <map>

#include "command.hpp"
#include "heft/common/error.hpp"

namespace heft::cli {
std::vector<Command>& commands() {
  static std::vector<Command> registry;
  return registry;
}
}  // namespace heft::cli

int main(int argc, char** argv) {
  using heft::cli::commands;
  CLI::App app{
      "heft: physically consistent inertial, friction and actuator identification for legged "
      "robots"};
  app.require_subcommand(1);
  auto& registry = commands();
  std::sort(registry.begin(), registry.end(),
            [](const auto& a, const auto& b) { return a.name < b.name; });
  std::map<CLI::App*, std::function<int()>> actions;
  for (const auto& command : registry) {
    CLI::App* sub = app.add_subcommand(command.name, command.description);
    actions[sub] = command.setup(*sub);
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::cerr << "heft: error: " << e.what() << " (see heft --help)\n";
    return 2;
  }
  for (auto& [sub, action] : actions) {
    if (!sub->parsed()) continue;
    try {
      return action();
    } catch (const heft::InputError& e) {
      std::cerr << "heft " << sub->get_name() << ": error: " << e.what() << "\n";
      return 2;
    } catch (const heft::SolveError& e) {
      std::cerr << "heft " << sub->get_name() << ": failed: " << e.what() << "\n";
      return 1;
    } catch (const std::exception& e) {
      std::cerr << "heft " << sub->get_name() << ": internal error: " << e.what() << "\n";
      return 1;
    }
  }
  return 2;
}
