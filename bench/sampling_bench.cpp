// Clip rollouts per second of heft::sampling on go2 (go2-rear-4.7kg, 6 s at nominal noise, base
// state estimated from the IMU and legs; the trunk sampled, the robot's PD replayed) with 1 and 2
// threads, and one CMA-ES generation's time as a ratio to one clip rollout, all in one run.
// Counters: `rollouts_per_s` (clips of 0.2-0.5 s simulated per wall second), `x_one_thread`
// (this run's rate / the 1-thread rate measured in the same run), `generation_per_rollout`
// (wall time of one generation / wall time of one clip rollout on one thread).
#include <benchmark/benchmark.h>

#include <algorithm>
#include <memory>
#include <vector>

#include "heft/basestate/base_state.hpp"
#include "heft/model/robots.hpp"
#include "heft/sampling/sysid.hpp"
#include "heft/sim/scenario.hpp"

namespace {

using namespace heft;

struct Go2Case {
  model::RobotModel robot = model::loadRobot("go2");
  std::unique_ptr<sim::SimModel> sim;
  std::unique_ptr<sampling::ParameterSpace> space;
  sampling::ReplayData data;
  sampling::SamplingOptions options;

  Go2Case() {
    sim::SimulationOptions o;
    o.duration = 6.0;
    o.noise = "nominal";
    o.seed = 1;
    io::Log log = sim::simulate(sim::findScenario("go2-rear-4.7kg"), o).log;
    basestate::fillBaseState(robot.pinocchio(), log);
    sim = std::make_unique<sim::SimModel>(robot);
    sampling::SampledBody trunk;
    trunk.name = "base";
    trunk.joint = robot.bodyIndex("base");
    trunk.start_pi = robot.pi(trunk.joint);
    trunk.range = sampling::defaultBodyRange(trunk.start_pi);
    space = std::make_unique<sampling::ParameterSpace>(std::vector<sampling::SampledBody>{trunk},
                                                       std::vector<sampling::ActuatorGroup>{},
                                                       std::vector<sampling::SampledJoint>{});
    data = sampling::ReplayData::fromLog(*sim, log);
    options.clips = 12;
    options.min_horizon = 0.2;
    options.max_horizon = 0.5;
    options.holdout_fraction = 0;
    options.optimizer.max_iterations = 8;
    options.replay.kp = Eigen::VectorXd::Constant(sim->nu(), 60);
    options.replay.kd = Eigen::VectorXd::Constant(sim->nu(), 1.5);
  }
};

Go2Case& go2() {
  static Go2Case c;
  return c;
}

// Rollouts per second of one thread, for the ratio: the median of three searches, measured once
// per run.
double oneThreadRate() {
  static double rate = 0;
  if (rate > 0) return rate;
  Go2Case& c = go2();
  sampling::SamplingOptions o = c.options;
  o.threads = 1;
  std::vector<double> rates;
  for (int i = 0; i < 3; ++i) {
    const sampling::SamplingSummary s = sampling::identifyBySampling(*c.sim, *c.space, c.data, o);
    rates.push_back(s.rollouts / s.seconds);
  }
  std::sort(rates.begin(), rates.end());
  rate = rates[1];
  return rate;
}

void BM_Go2Sampling(benchmark::State& state) {
  Go2Case& c = go2();
  const double baseline = oneThreadRate();
  sampling::SamplingOptions o = c.options;
  o.threads = static_cast<int>(state.range(0));
  long rollouts = 0;
  double seconds = 0, generation = 0;
  for (auto _ : state) {
    const sampling::SamplingSummary s = sampling::identifyBySampling(*c.sim, *c.space, c.data, o);
    rollouts += s.rollouts;
    seconds += s.seconds;
    generation += s.seconds / s.optimizer.iterations;
  }
  const double rate = rollouts / seconds;
  state.counters["rollouts_per_s"] = rate;
  state.counters["x_one_thread"] = rate / baseline;
  state.counters["generation_per_rollout"] =
      (generation / static_cast<double>(state.iterations())) * baseline;
}

BENCHMARK(BM_Go2Sampling)
    ->Arg(1)
    ->Arg(2)
    ->Unit(benchmark::kMillisecond)
    ->Iterations(3)
    ->Repetitions(3)
    ->ReportAggregatesOnly(true);

}  // namespace

BENCHMARK_MAIN();
