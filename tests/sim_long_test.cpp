// heft::sim at full duration (label `long`): every scenario runs its whole duration at the
// nominal noise without a fall (base height and tilt within bounds), a MuJoCo warning or lost
// tracking, and its log validates against the robot model.
#include <gtest/gtest.h>

#include <cctype>
#include <cmath>
#include <string>
#include <vector>

#include "heft/io/validation.hpp"
#include "heft/model/model.hpp"
#include "heft/sim/scenario.hpp"

namespace sim = heft::sim;

class FullScenario : public ::testing::TestWithParam<std::string> {};

TEST_P(FullScenario, RunsItsWholeDurationWithoutFall) {
  const sim::Scenario& scenario = sim::findScenario(GetParam());
  sim::SimulationOptions options;
  options.noise = "nominal";
  options.seed = 1;
  const auto result = sim::simulate(scenario, options);
  const auto& s = result.summary;
  ASSERT_TRUE(s.ok()) << s.report();
  EXPECT_EQ(s.mujoco_warnings, 0);
  EXPECT_NEAR(s.simulated_time, scenario.duration + scenario.model.timestep, 1e-9);
  const auto& truth = *result.log.truth;
  for (int k = 0; k < truth.base_pose.rows(); ++k) {
    const Eigen::Vector4d c = truth.base_pose.row(k).tail<4>().transpose();
    const double tilt = std::acos(std::min(
        1.0, Eigen::Quaterniond(c[3], c[0], c[1], c[2]).normalized().toRotationMatrix()(2, 2)));
    ASSERT_GT(truth.base_pose(k, 2), scenario.bounds.min_base_height) << "t = " << truth.time[k];
    ASSERT_LT(tilt, scenario.bounds.max_tilt) << "t = " << truth.time[k];
  }
  EXPECT_LT(s.max_tracking_error, scenario.max_tracking_error);
  const auto report =
      heft::io::validateLog(result.log, heft::model::loadRobot(scenario.robot).pinocchio());
  EXPECT_TRUE(report.ok()) << report.report();
  std::printf("%s", s.report().c_str());
}

INSTANTIATE_TEST_SUITE_P(All, FullScenario, ::testing::ValuesIn([] {
                           std::vector<std::string> names;
                           for (const auto& s : sim::scenarios()) names.push_back(s.name);
                           return names;
                         }()),
                         [](const auto& info) {
                           std::string n = info.param;
                           for (auto& ch : n) {
                             if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
                           }
                           return n;
                         });
