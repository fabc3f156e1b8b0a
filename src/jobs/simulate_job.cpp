#include "heft/jobs/simulate_job.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <sstream>

#include "heft/common/error.hpp"
#include "heft/common/format.hpp"
#include "heft/io/log_io.hpp"

namespace heft::jobs {

void SimulateJob::Config::validate() const {
  const sim::Scenario& s = scenario;
  if (s.name.empty())
    throw InputError("SCENARIO: expected a name (see --list) or a file, got none");
  require(!s.robot.empty(), "robot", "a short name such as go2, or a path", "none");
  require(std::isfinite(s.duration) && s.duration > 0 && s.duration <= 3600, "duration",
          "a value in (0, 3600] s", formatNumber(s.duration));
  require(std::isfinite(s.kp) && s.kp >= 0, "gains.kp", "a finite value >= 0", formatNumber(s.kp));
  require(std::isfinite(s.kd) && s.kd >= 0, "gains.kd", "a finite value >= 0", formatNumber(s.kd));
  require(std::isfinite(s.bandwidth) && s.bandwidth > 0, "gains.bandwidth", "a value > 0 rad/s",
          formatNumber(s.bandwidth));
  require(std::isfinite(s.damping_ratio) && s.damping_ratio > 0, "gains.damping_ratio",
          "a value > 0", formatNumber(s.damping_ratio));
  for (const auto& [joint, kp_kd] : s.joint_gains) {
    require(std::isfinite(kp_kd.first) && kp_kd.first >= 0 && std::isfinite(kp_kd.second) &&
                kp_kd.second >= 0,
            "gains.joints." + joint, "kp >= 0 and kd >= 0",
            formatNumber(kp_kd.first) + ", " + formatNumber(kp_kd.second));
  }
  require(std::isfinite(s.bounds.min_base_height), "bounds.min_base_height", "a finite value [m]",
          formatNumber(s.bounds.min_base_height));
  require(std::isfinite(s.bounds.max_tilt) && s.bounds.max_tilt > 0, "bounds.max_tilt",
          "a value > 0 rad", formatNumber(s.bounds.max_tilt));
  require(std::isfinite(s.max_tracking_error) && s.max_tracking_error > 0,
          "bounds.max_tracking_error", "a value > 0 rad", formatNumber(s.max_tracking_error));
  s.model.validate();
  if (s.motion == sim::Motion::Humanoid) s.humanoid.validate();
  options.validate();
}

std::string SimulateJob::list() {
  std::ostringstream s;
  size_t width = 0;  // the names in one column, however long the longest
  for (const auto& scenario : sim::scenarios()) width = std::max(width, scenario.name.size());
  for (const auto& scenario : sim::scenarios()) {
    s << scenario.name << std::string(width + 1 - scenario.name.size(), ' ') << scenario.description
      << "\n";
  }
  return s.str();
}

SimulateJob::Config SimulateJob::builtIn(const std::string& name) {
  if (name.empty()) throw InputError("SCENARIO: expected a name (see --list) or a file, got none");
  Config config;
  config.source = "built-in";
  config.scenario = sim::findScenario(name);
  return config;
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
  Result result;
  result.config = config;
  const double duration =
      config.options.duration > 0 ? config.options.duration : config.scenario.duration;
  progress.say("simulating " + config.scenario.name + ": " + formatNumber(duration) + " s of " +
               config.scenario.robot);
  double last_line = 0;
  const sim::SimulationProgress on_progress = [&](double simulated, double total) {
    const double now = progress.seconds();
    if (now - last_line < 1.0) return;  // a line a second at most: short runs stay quiet
    last_line = now;
    progress.say("simulated " + formatNumber(simulated, 3) + " of " + formatNumber(total, 3) +
                 " s, about " + formatNumber(now / simulated * (total - simulated), 2) + " s left");
  };
  result.simulation = sim::simulate(config.scenario, config.options, on_progress);
  return result;
}

std::vector<std::string> SimulateJob::write(const Result& result, const std::string& out,
                                            const WriteOptions& options) {
  if (!result.ok()) {
    throw SolveError("scenario " + result.config.scenario.name + ": " +
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
