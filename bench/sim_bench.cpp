// Simulated seconds per wall second of a go2 and a humanoid (TALOS) scenario, with and without the
// sensor models, against the baseline of MuJoCo's mj_step alone on the same model (measured in the
// same run): the applied torques of a recorded run replayed open loop through qfrc_applied, no
// controller, no reference, no recording.
// Counters: `sim_s_per_wall_s` = simulated time / wall time (higher is faster); `x_mj_step` = this
// benchmark's rate / the mj_step rate of the same model (1 = as fast as MuJoCo alone).
#include <benchmark/benchmark.h>
#include <mujoco/mujoco.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <string>

#include "heft/model/model.hpp"
#include "heft/sim/scenario.hpp"

namespace {

constexpr double kSimulated = 2.0;  // seconds per iteration
const char* kGo2 = "go2-payload-3kg";
const char* kHumanoid = "talos-torso-2.9kg";

// Wall seconds of mj_step over kSimulated seconds of `scenario`, torques replayed from a run
// (best of three).
double mujocoStepSeconds(const std::string& name) {
  static std::map<std::string, double> cache;
  const auto found = cache.find(name);
  if (found != cache.end()) return found->second;
  const heft::sim::Scenario& scenario = heft::sim::findScenario(name);
  heft::sim::SimulationOptions options;
  options.duration = kSimulated;
  options.noise = "none";
  const auto recorded = heft::sim::simulate(scenario, options);
  const heft::model::RobotModel robot = heft::model::loadRobot(scenario.robot);
  const heft::sim::SimModel sim(robot, scenario.model);
  auto data = sim.makeData();
  const auto& truth = *recorded.log.truth;
  Eigen::VectorXd q(sim.nq()), v(sim.nv());
  q << truth.base_pose.row(0).transpose(), truth.q.row(0).transpose();
  v << truth.base_twist.row(0).transpose(), truth.v.row(0).transpose();
  const Eigen::MatrixXd& tau = recorded.log.joints.tau;  // noise none: the applied torque
  const int steps = static_cast<int>(tau.rows());
  double best = 1e300;
  for (int trial = 0; trial < 3; ++trial) {
    sim.setState(data.get(), q, v);
    const auto start = std::chrono::steady_clock::now();
    for (int k = 0; k < steps; ++k) {
      sim.setJointTorques(data.get(), tau.row(k).transpose());
      mj_step(sim.mujoco(), data.get());
    }
    benchmark::DoNotOptimize(data->qpos[2]);
    best = std::min(
        best, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  cache[name] = best;
  return best;
}

void runScenario(benchmark::State& state, const std::string& name, bool sensors) {
  const double baseline = mujocoStepSeconds(name);
  heft::sim::SimulationOptions options;
  options.duration = kSimulated;
  options.noise = "nominal";
  options.make_log = sensors;
  double physics = 0, reference = 0, sensor = 0, wall = 0;
  for (auto _ : state) {
    const auto start = std::chrono::steady_clock::now();
    const auto result = heft::sim::simulate(heft::sim::findScenario(name), options);
    wall += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (!result.summary.ok()) state.SkipWithError(result.summary.report().c_str());
    benchmark::DoNotOptimize(result.log.joints.q.data());
    physics += result.summary.physics_seconds;
    reference += result.summary.reference_seconds;
    sensor += result.summary.sensor_seconds;
  }
  const double n = static_cast<double>(state.iterations());
  state.counters["sim_s_per_wall_s"] =
      benchmark::Counter(kSimulated, benchmark::Counter::kIsIterationInvariantRate);
  state.counters["x_mj_step"] = baseline / (wall / n);
  state.counters["physics_ms"] = 1e3 * physics / n;
  state.counters["reference_ms"] = 1e3 * reference / n;
  state.counters["sensors_ms"] = 1e3 * sensor / n;
  state.counters["mj_step_ms"] = 1e3 * baseline;
}

void runMujocoStep(benchmark::State& state, const std::string& name) {
  double seconds = 0;
  for (auto _ : state) {
    state.PauseTiming();
    seconds = mujocoStepSeconds(name);
    state.ResumeTiming();
    state.SetIterationTime(seconds);
  }
  state.counters["sim_s_per_wall_s"] = kSimulated / seconds;
  state.counters["x_mj_step"] = 1.0;
}

void BM_Go2MujocoStepOnly(benchmark::State& state) { runMujocoStep(state, kGo2); }
void BM_Go2WithoutSensors(benchmark::State& state) { runScenario(state, kGo2, false); }
void BM_Go2WithSensors(benchmark::State& state) { runScenario(state, kGo2, true); }
void BM_HumanoidMujocoStepOnly(benchmark::State& state) { runMujocoStep(state, kHumanoid); }
void BM_HumanoidWithoutSensors(benchmark::State& state) { runScenario(state, kHumanoid, false); }
void BM_HumanoidWithSensors(benchmark::State& state) { runScenario(state, kHumanoid, true); }

BENCHMARK(BM_Go2MujocoStepOnly)->Unit(benchmark::kMillisecond)->UseManualTime()->Iterations(1);
BENCHMARK(BM_Go2WithoutSensors)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Go2WithSensors)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_HumanoidMujocoStepOnly)->Unit(benchmark::kMillisecond)->UseManualTime()->Iterations(1);
BENCHMARK(BM_HumanoidWithoutSensors)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_HumanoidWithSensors)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
