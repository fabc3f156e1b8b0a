// The scenario files of data/scenarios that are not built-in scenarios (those run in
// sim_long_test.cpp) run their whole duration without a fall or a MuJoCo warning.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "heft/jobs/simulate_job.hpp"
#include "heft/sim/scenario.hpp"

namespace heft::jobs {
namespace {

namespace fs = std::filesystem;

std::vector<std::string> filesOfTheirOwn() {
  std::vector<std::string> files;
  const fs::path folder = fs::path(HEFT_SOURCE_DIR) / "data" / "scenarios";
  for (const auto& entry : fs::directory_iterator(folder)) {
    if (entry.path().extension() != ".yaml") continue;
    bool builtin = false;
    for (const auto& s : sim::scenarios()) builtin |= s.name == entry.path().stem().string();
    if (!builtin) files.push_back(entry.path().string());
  }
  std::sort(files.begin(), files.end());
  return files;
}

TEST(ScenarioFilesLong, EveryFileOfItsOwnRunsItsWholeDuration) {
  const std::vector<std::string> files = filesOfTheirOwn();
  EXPECT_GE(files.size(), 3u);
  for (const auto& file : files) {
    SCOPED_TRACE(file);
    const SimulateJob::Config config = SimulateJob::load(file);
    Progress silent;
    const SimulateJob::Result result = SimulateJob::run(config, silent);
    EXPECT_TRUE(result.ok()) << result.report();
    EXPECT_EQ(result.simulation.summary.mujoco_warnings, 0);
    EXPECT_NEAR(result.simulation.summary.simulated_time, config.scenario.duration, 2e-3);
  }
}

}  // namespace
}  // namespace heft::jobs
