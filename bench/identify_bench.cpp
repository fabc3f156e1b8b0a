// Time to identify vs log length: panda-friction (MuJoCo, nominal noise), links 1-7 and joint
// friction 1-7, 1, 10 and 100 s of data at 1 kHz (decimation 5). The whole pipeline of
// heft::identify::identify (preparation, rows, solve, truth errors) is timed; the MAP runs a fixed
// number of Levenberg-Marquardt iterations so that lengths compare at equal work per row.
//
//   ./bench_identify --benchmark_repetitions=3 --benchmark_report_aggregates_only=true
//
// The summary prints each median with its ratio to the same method on 1 s of data: linear growth
// shows as ratios near 10 and 100.
#include <benchmark/benchmark.h>

#include <cstdio>
#include <string>
#include <vector>

#include "heft/identify/identify.hpp"
#include "heft/model/model.hpp"
#include "heft/sim/scenario.hpp"
#include "support/ratio_reporter.hpp"

namespace {

using namespace heft;

struct Fixture {
  model::RobotModel robot = model::loadRobot("panda");
  io::Log log;
  model::IdentifiedSet set;
  Fixture() {
    sim::SimulationOptions o;
    o.duration = 101;  // 100 s kept after the filter's edges
    o.noise = "nominal";
    o.seed = 1;
    sim::SimulationResult r = sim::simulate(sim::findScenario("panda-friction"), o);
    if (!r.summary.ok()) std::fprintf(stderr, "%s\n", r.summary.report().c_str());
    log = std::move(r.log);
    model::IdentifiedSetOptions so;
    for (int i = 1; i <= 7; ++i) {
      so.bodies.push_back("panda_link" + std::to_string(i));
      so.friction_joints.push_back("panda_joint" + std::to_string(i));
    }
    so.identify_friction = true;
    set = model::IdentifiedSet::build(robot, so);
  }
};

const Fixture& fixture() {
  static const Fixture f;
  return f;
}

void run(benchmark::State& state, identify::Method method, double seconds) {
  const Fixture& f = fixture();
  identify::IdentifyOptions o;
  o.method = method;
  o.preparation.decimation = 5;
  o.preparation.end_time = seconds;
  o.problem.min_speed = 0.05;
  o.map.max_iterations = 10;
  o.map.function_tolerance = 1e-300;  // tolerances that never stop it: all 10 iterations run
  o.map.step_tolerance = 1e-300;
  o.map.gradient_tolerance = 1e-300;
  int rows = 0;
  for (auto _ : state) {
    const identify::IdentifyResult r = identify::identify(f.robot, f.log, f.set, o);
    benchmark::DoNotOptimize(r.estimate.data());
    rows = r.rows;
  }
  state.counters["rows"] = rows;
  state.counters["data_s"] = seconds;
}

#define HEFT_IDENTIFY_BENCH(NAME, METHOD, SECONDS)                    \
  void NAME(benchmark::State& state) { run(state, METHOD, SECONDS); } \
  BENCHMARK(NAME)->Unit(benchmark::kMillisecond)->Iterations(1)

HEFT_IDENTIFY_BENCH(ls_1s, identify::Method::LeastSquares, 1);
HEFT_IDENTIFY_BENCH(ls_10s, identify::Method::LeastSquares, 10);
HEFT_IDENTIFY_BENCH(ls_100s, identify::Method::LeastSquares, 100);
HEFT_IDENTIFY_BENCH(map_1s, identify::Method::Map, 1);
HEFT_IDENTIFY_BENCH(map_10s, identify::Method::Map, 10);
HEFT_IDENTIFY_BENCH(map_100s, identify::Method::Map, 100);

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  fixture();  // simulate before timing anything
  heft::bench::RatioReporter reporter(
      "ratio to the same method on 1 s of data",
      [](const std::string& name) { return name.substr(0, name.find('_')) + "_1s"; });
  benchmark::RunSpecifiedBenchmarks(&reporter);
  benchmark::Shutdown();
  return 0;
}
