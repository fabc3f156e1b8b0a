#include "heft/jobs/simulate_job.hpp"

#include <cstdio>
#include <filesystem>
#include <sstream>

#include "heft/common/error.hpp"
#include "heft/io/log_io.hpp"

namespace heft::jobs {

void SimulateJob::Config::validate() const {
  if (scenario.empty()) throw InputError("SCENARIO: expected a name (see --list), got none");
  options.validate();
}

std::string SimulateJob::list() {
  std::ostringstream s;
  for (const auto& scenario : sim::scenarios()) {
    char line[512];
    std::snprintf(line, sizeof line, "%-22s %s\n", scenario.name.c_str(),
                  scenario.description.c_str());
    s << line;
  }
  return s.str();
}

void SimulateJob::checkOutput(const std::string& out, const WriteOptions& options) {
  if (out.empty()) throw InputError("--out: expected a .h5 file or a CSV folder, got none");
  if (!options.overwrite && std::filesystem::exists(out)) {
    throw InputError("--out " + out + ": expected a new path, got an existing one " +
                     "(pass --overwrite to replace it)");
  }
}

SimulateJob::Result SimulateJob::run(const Config& config, Progress& progress) {
  config.validate();
  progress.start();
  const sim::Scenario& scenario = sim::findScenario(config.scenario);
  Result result;
  result.config = config;
  result.simulation = sim::simulate(scenario, config.options);
  return result;
}

std::vector<std::string> SimulateJob::write(const Result& result, const std::string& out,
                                            const WriteOptions& options) {
  if (!result.ok()) {
    throw SolveError("scenario " + result.config.scenario + ": " +
                     toString(result.simulation.summary.status) + ": " +
                     result.simulation.summary.message + " (no log written)");
  }
  checkOutput(out, options);
  io::WriteOptions write;
  write.overwrite = options.overwrite;
  io::writeLog(result.simulation.log, out, write);
  return {out};
}

}  // namespace heft::jobs
