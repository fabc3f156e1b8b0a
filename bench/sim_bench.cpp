// Simulated seconds per wall second of the go2 scenario, with and without the sensor models, and
// the baseline of MuJoCo stepping the same model with no controller and no recording.
// Counter `sim_s_per_wall_s`: simulated time / wall time (higher is faster).
#include <benchmark/benchmark.h>
#include <mujoco/mujoco.h>

#include "heft/model/model.hpp"
#include "heft/sim/scenario.hpp"

namespace {

constexpr double kSimulated = 2.0;  // seconds per iteration
const char* kScenario = "go2-payload-3kg";

void runScenario(benchmark::State& state, bool sensors) {
  heft::sim::SimulationOptions options;
  options.duration = kSimulated;
  options.noise = "nominal";
  options.make_log = sensors;
  double physics = 0, reference = 0, sensor = 0;
  for (auto _ : state) {
    const auto result = heft::sim::simulate(heft::sim::findScenario(kScenario), options);
    if (!result.summary.ok()) state.SkipWithError(result.summary.report().c_str());
    benchmark::DoNotOptimize(result.log.joints.q.data());
    physics += result.summary.physics_seconds;
    reference += result.summary.reference_seconds;
    sensor += result.summary.sensor_seconds;
  }
  const double n = static_cast<double>(state.iterations());
  state.counters["sim_s_per_wall_s"] = benchmark::Counter(kSimulated, benchmark::Counter::kIsIterationInvariantRate);
  state.counters["physics_ms"] = 1e3 * physics / n;
  state.counters["reference_ms"] = 1e3 * reference / n;
  state.counters["sensors_ms"] = 1e3 * sensor / n;
}

void BM_Go2WithSensors(benchmark::State& state) { runScenario(state, true); }
void BM_Go2WithoutSensors(benchmark::State& state) { runScenario(state, false); }

// Baseline in the same run: mj_step on the same MuJoCo model, torques zero, nothing recorded
// (the robot sags on its feet; the contact count stays the same).
void BM_Go2MujocoStepOnly(benchmark::State& state) {
  const heft::sim::Scenario& scenario = heft::sim::findScenario(kScenario);
  const heft::model::RobotModel robot = heft::model::loadRobot(scenario.robot);
  const heft::sim::SimModel sim(robot, scenario.model);
  auto data = sim.makeData();
  const auto ref = heft::sim::stanceReference(robot, sim.contactNames(), scenario.model.contact_radius,
                                              scenario.stance, 0.01, scenario.model.timestep);
  const int steps = static_cast<int>(kSimulated / scenario.model.timestep);
  for (auto _ : state) {
    sim.setState(data.get(), ref.q.col(0), ref.v.col(0));
    for (int k = 0; k < steps; ++k) mj_step(sim.mujoco(), data.get());
    benchmark::DoNotOptimize(data->qpos[2]);
  }
  state.counters["sim_s_per_wall_s"] = benchmark::Counter(kSimulated, benchmark::Counter::kIsIterationInvariantRate);
}

BENCHMARK(BM_Go2MujocoStepOnly)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Go2WithoutSensors)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Go2WithSensors)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
