// Cost of one iteration of heft::estimation's Riccati solver on go2 (free flyer, four feet in rigid
// contact, base identified), against the cost of the dynamics derivatives of the same horizon alone
// (every stage's calc + calcDiff), and 2000 knots against 1000, measured in the same run. The
// issue's targets: iteration / derivatives at most 2; T(2000) / T(1000) at most 2.2.
//
//   ./bench_estimation --benchmark_repetitions=5 --benchmark_report_aggregates_only=true
//
// The problem is built from a MuJoCo log (go2-payload-3kg, simulated before timing). Timed:
//  - derivatives_N: every stage's calc + calcDiff (the baseline);
//  - direction_N: RiccatiSolver::computeDirection(), i.e. the derivatives, the exact gap
//    linearization, the backward pass, the arrival node and the linear rollout: an iteration
//    without its line search;
//  - iteration_N: solve() with max_iterations = 1 from the same initial guess, without the final
//    covariance pass: one evaluation, a direction and the line search, whose number of trials
//    depends on the problem (so iteration_2000 / iteration_1000 is not a complexity ratio).
#include <benchmark/benchmark.h>

#include <cstdio>
#include <map>
#include <memory>
#include <string>

#include "heft/estimation/log_problem.hpp"
#include "heft/estimation/riccati_solver.hpp"
#include "heft/model/model.hpp"
#include "heft/sim/scenario.hpp"
#include "support/ratio_reporter.hpp"

namespace {

const heft::io::Log& log() {
  static const heft::io::Log log = [] {
    heft::sim::SimulationOptions options;
    options.duration = 3.1;
    return heft::sim::simulate(heft::sim::findScenario("go2-payload-3kg"), options).log;
  }();
  return log;
}

const heft::estimation::LogProblem& problem(int knots) {
  static std::map<int, heft::estimation::LogProblem> cache;
  auto it = cache.find(knots);
  if (it == cache.end()) {
    static const heft::model::RobotModel robot = heft::model::loadRobot("go2");
    heft::estimation::LogProblemOptions options;
    options.identified_bodies = {robot.body(1).name};
    options.first_sample = 1000;
    options.knots = knots;
    it = cache.emplace(knots, heft::estimation::buildLogProblem(robot, log(), options)).first;
  }
  return it->second;
}

void derivatives(benchmark::State& state, int knots) {
  const auto& lp = problem(knots);
  const heft::estimation::Problem& p = *lp.problem;
  std::vector<std::unique_ptr<heft::estimation::StageData>> datas;
  for (int k = 0; k < knots; ++k) datas.push_back(p.running(k).createData());
  for (auto _ : state) {
    for (int k = 0; k < knots; ++k) {
      p.running(k).calc(*datas[k], lp.xs[k], lp.ws[k], lp.theta);
      p.running(k).calcDiff(*datas[k], lp.xs[k], lp.ws[k], lp.theta);
    }
    benchmark::DoNotOptimize(datas.back()->F_x.data());
  }
}

void direction(benchmark::State& state, int knots) {
  const auto& lp = problem(knots);
  heft::estimation::RiccatiSolver solver(lp.problem);
  solver.setInitialGuess(lp.xs, lp.ws, lp.theta);
  for (auto _ : state) benchmark::DoNotOptimize(solver.computeDirection());
}

void iteration(benchmark::State& state, int knots) {
  const auto& lp = problem(knots);
  heft::estimation::RiccatiOptions options;
  options.max_iterations = 1;
  options.posterior_covariance = false;
  heft::estimation::RiccatiSolver solver(lp.problem, options);
  for (auto _ : state) {
    state.PauseTiming();
    solver.setInitialGuess(lp.xs, lp.ws, lp.theta);
    state.ResumeTiming();
    benchmark::DoNotOptimize(solver.solve().cost);
  }
}

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  problem(1000);  // simulate and build before timing anything
  problem(2000);
  std::printf("go2: nv %d, stage residuals %d, 1000 and 2000 knots at 1 kHz\n",
              problem(1000).model->nv, problem(1000).problem->running(0).nr());
  for (int knots : {1000, 2000}) {
    benchmark::RegisterBenchmark(("go2/derivatives_" + std::to_string(knots)).c_str(), derivatives,
                                 knots)
        ->Unit(benchmark::kMillisecond);
    benchmark::RegisterBenchmark(("go2/direction_" + std::to_string(knots)).c_str(), direction,
                                 knots)
        ->Unit(benchmark::kMillisecond);
    benchmark::RegisterBenchmark(("go2/iteration_" + std::to_string(knots)).c_str(), iteration,
                                 knots)
        ->Unit(benchmark::kMillisecond);
  }
  heft::bench::RatioReporter reporter(
      "direction and iteration over derivatives at 1000 knots; _2000 over _1000",
      [](const std::string& name) {
        if (name == "go2/direction_1000" || name == "go2/iteration_1000")
          return std::string("go2/derivatives_1000");
        for (const char* what : {"derivatives", "direction", "iteration"})
          if (name == std::string("go2/") + what + "_2000")
            return std::string("go2/") + what + "_1000";
        return std::string();
      });
  benchmark::RunSpecifiedBenchmarks(&reporter);
  benchmark::Shutdown();
  return 0;
}
