// Cost of one iteration of heft::estimation's Riccati solver on go2 (free flyer, four feet in rigid
// contact, base identified), against the cost of the dynamics derivatives of the same horizon alone
// (every stage's calc + calcDiff), and 2000 knots against 1000, measured in the same run. The
// targets: iteration / derivatives at most 2; T(2000) / T(1000) at most 2.2.
//
//   ./bench_estimation --benchmark_repetitions=5 --benchmark_report_aggregates_only=true
//
// The problem is built from a MuJoCo log (go2-payload-3kg, simulated before timing). Timed:
//  - derivatives_N: every stage's calc + calcDiff (the baseline), datas made as the solver makes
//    them (createDataSharing: outputs per stage, the dynamics' scratch shared);
//  - direction_N: RiccatiSolver::computeDirection(), i.e. the derivatives, the exact gap
//    linearization, the backward pass, the arrival node and the linear rollout: an iteration
//    without its line search;
//  - iteration_N: solve() with max_iterations = 1 from the same initial guess, without the final
//    covariance pass: one evaluation, a direction and the line search, whose number of trials
//    depends on the problem (so iteration_2000 / iteration_1000 is not a complexity ratio);
//  - mean_iteration_N: solve() for at most 10 iterations from the same guess, manual time = its
//    wall time over the iterations taken: what an iteration costs in a real solve, every
//    line-search trial included (counter `trials`), solve()'s initial evaluation spread over the
//    iterations instead of charged to the first. Counters: the solver's time split per iteration
//    and kB_per_knot, the heap the solver took when it was constructed (buffers and stage datas).
//
// Energy observations (prefix go2_energy/): the same problem with measurements.energy, derivatives
// and direction at 1000 knots over go2/'s (the energy row's price per iteration).
//
// Inverse dynamics (prefix go2_inverse/): the same problem with the inverse-dynamics stages
// (estimate.dynamics: inverse: the acceleration and the feet's forces decisions, the torque
// balance and the feet's accelerations equality rows eliminated in the backward pass);
// derivatives, direction and mean_iteration at 1000 and 2000 knots. Ratios: _1000 over go2/'s
// (the equality-constrained iteration against the forward-dynamics one), _2000 over _1000
// (target at most 2.1).
//
// Contact-implicit (prefix go2_implicit/): the same log simulated for 11.1 s, PRIME's smoothed
// contact dynamics instead of rigid contacts (no flags), derivatives_N and mean_iteration_N at 1000
// and 2000 knots of 1 ms (ratios: _2000 over _1000, target at most 2.1; _1000 over the rigid
// problem's go2/ benchmark of the same name: the price of the smoothed step), and
// solve_1000_at_10ms: a whole solve of 1000 knots of 10 ms (10 s, PRIME's horizon; target 20 s).
//
// And the reference ratio: heft's time to convergence over Crocoddyl's augmented-state
// FDDP on the same problem (target at most 0.5), on two MuJoCo problems of
// tests/reference_test.cpp: the double pendulum with a payload (link 2 identified, encoders, 1 kHz
// from t = 1 s; 1000 and 2000 knots) and go2 trotting in place (free flyer, trunk identified,
// encoders, IMU, accelerometer, motion capture, the log's contact flags, rigid point contacts,
// touchdown impulses; 300 knots at 1 kHz from t = 2 s, prior std 0.1), prefixes pendulum/ and
// go2_trot/:
//  - pendulum/heft_solve_N: RiccatiSolver::solve() from the LogProblem's initial guess, default
//    options (multiple shooting, tolerance 1e-9), without the final covariance pass (Crocoddyl
//    computes none); manual time = solve() alone;
//  - pendulum/crocoddyl_fddp_N: heft-reference-estimation (reference/estimation_reference.cpp)
//    run once per benchmark iteration on the same problem file, one thread, heft's stopping rule;
//    manual time = its own measurement of SolverFDDP::solve() alone (not the process, the file or
//    the problem's construction). The ratio heft_solve_N / crocoddyl_fddp_N is in the summary;
//  - pendulum/crocoddyl_to_optimum_N: the same with a stricter stop (1e-13), manual time = from
//    the start of solve() to the end of the first iteration that leaves a feasible iterate (FDDP's
//    gaps all closed; an infeasible one can cost less than the optimum) whose cost is within
//    1e-9 (1 + J) of heft's optimum J (the bound of tests/reference_test.cpp). Why: with heft's
//    rule FDDP can stop on the plateau of a saddle of the cost (docs/estimation.md, "Crocoddyl
//    reference"); iterations counts the iterations up to that one.
//  - pendulum/heft_solve_probe_N (and go2_trot/): heft_solve_N with the theta trust region's
//    probe (ThetaTrustUpdate::Probe: it shrinks only after steps theta's part shortened); the
//    ratio over heft_solve_N (the default, Always) is the probe's net price or gain.
// Counters: iterations, final cost, converged, and the mass / COM errors of link 2 against the
// MuJoCo truth; heft's solves also forward_ms and total_ms, the solver's own time per iteration.
//
//   ./bench_estimation --benchmark_filter='pendulum|go2_trot' --benchmark_repetitions=3
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <utility>

#include <malloc.h>

#include "heft/estimation/log_problem.hpp"
#include "heft/estimation/multibody_stage.hpp"
#include "heft/estimation/reference_export.hpp"
#include "heft/estimation/riccati_solver.hpp"
#include "heft/inertia/inertia.hpp"
#include "heft/model/model.hpp"
#include "heft/results/truth.hpp"
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

// energy: with energy observations (measurements.energy: one row per running stage); inverse:
// with the inverse-dynamics stages (estimate.dynamics: inverse).
const heft::estimation::LogProblem& problem(int knots, bool energy = false, bool inverse = false) {
  static std::map<std::tuple<int, bool, bool>, heft::estimation::LogProblem> cache;
  auto it = cache.find({knots, energy, inverse});
  if (it == cache.end()) {
    static const heft::model::RobotModel robot = heft::model::loadRobot("go2");
    heft::estimation::LogProblemOptions options;
    options.identified_bodies = {robot.body(1).name};
    options.first_sample = 1000;
    options.knots = knots;
    options.use_energy = energy;
    if (inverse) options.dynamics = heft::estimation::DynamicsFormulation::Inverse;
    it = cache
             .emplace(std::make_tuple(knots, energy, inverse),
                      heft::estimation::buildLogProblem(robot, log(), options))
             .first;
  }
  return it->second;
}

// Contact-implicit (smoothed contact dynamics, no contact flags; the feet's spheres of 0.022 m):
// the same go2 log simulated for 11.1 s, knots of 1 ms or 10 ms (stride 10) from t = 1 s.
const heft::estimation::LogProblem& implicitProblem(int knots, int stride) {
  static std::map<std::pair<int, int>, heft::estimation::LogProblem> cache;
  auto it = cache.find({knots, stride});
  if (it == cache.end()) {
    static const heft::io::Log long_log = [] {
      heft::sim::SimulationOptions options;
      options.duration = 11.1;
      return heft::sim::simulate(heft::sim::findScenario("go2-payload-3kg"), options).log;
    }();
    static const heft::model::RobotModel robot = heft::model::loadRobot("go2");
    heft::estimation::LogProblemOptions options;
    options.identified_bodies = {robot.body(1).name};
    options.first_sample = 1000;
    options.knots = knots;
    options.stride = stride;
    options.contact_source = heft::estimation::ContactSource::Implicit;
    options.implicit.ground_height = 0.022;
    it = cache
             .emplace(std::make_pair(knots, stride),
                      heft::estimation::buildLogProblem(robot, long_log, options))
             .first;
  }
  return it->second;
}

void derivativesOf(benchmark::State& state, const heft::estimation::LogProblem& lp) {
  const int knots = lp.problem->horizon();
  const heft::estimation::Problem& p = *lp.problem;
  // The solver's data layout: per-stage outputs, the dynamics' scratch shared per contact set.
  heft::estimation::StageWorkspace workspace;
  std::vector<std::unique_ptr<heft::estimation::StageData>> datas;
  for (int k = 0; k < knots; ++k) datas.push_back(p.running(k).createDataSharing(workspace));
  for (auto _ : state) {
    for (int k = 0; k < knots; ++k) {
      p.running(k).calc(*datas[k], lp.xs[k], lp.ws[k], lp.theta);
      p.running(k).calcDiff(*datas[k], lp.xs[k], lp.ws[k], lp.theta);
    }
    benchmark::DoNotOptimize(datas.back()->F_x.data());
  }
  // contact-implicit: Newton steps per smoothed contact step, over the horizon (untimed pass; the
  // datas share the step's scratch, so each is read right after its calc)
  long newton = 0, steps = 0;
  for (int k = 0; k < knots; ++k) {
    p.running(k).calc(*datas[k], lp.xs[k], lp.ws[k], lp.theta);
    const auto* d = dynamic_cast<const heft::estimation::MultibodyStageData*>(datas[k].get());
    if (d && d->smoothed) newton += d->smoothed->summary.iterations, ++steps;
  }
  if (steps > 0) state.counters["newton_steps"] = static_cast<double>(newton) / steps;
}

void derivatives(benchmark::State& state, int knots) { derivativesOf(state, problem(knots)); }

void directionOf(benchmark::State& state, const heft::estimation::LogProblem& lp) {
  heft::estimation::RiccatiSolver solver(lp.problem);
  solver.setInitialGuess(lp.xs, lp.ws, lp.theta);
  for (auto _ : state) benchmark::DoNotOptimize(solver.computeDirection());
}

void direction(benchmark::State& state, int knots) { directionOf(state, problem(knots)); }

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

// Heap bytes in use [kB] (glibc's mallinfo2: small blocks and mmapped ones; -1 elsewhere). Not the
// resident size: memory freed by an earlier benchmark stays resident and is reused.
double heapInUseKilobytes() {
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 33))
  const struct mallinfo2 info = mallinfo2();
  return (static_cast<double>(info.uordblks) + static_cast<double>(info.hblkhd)) / 1024.0;
#else
  return -1;
#endif
}

// The mean time of an iteration in a real solve: solve() for at most 10 iterations from the same
// guess, manual time = its wall time over the iterations it took (every line-search trial
// included, solve()'s one initial evaluation spread over them).
void meanIterationOf(benchmark::State& state, const heft::estimation::LogProblem& lp) {
  const int knots = lp.problem->horizon();
  heft::estimation::RiccatiOptions options;
  options.max_iterations = 10;
  options.posterior_covariance = false;
  const double before = heapInUseKilobytes();
  heft::estimation::RiccatiSolver solver(lp.problem, options);
  // What the solver holds per knot: its buffers and every stage's data.
  state.counters["kB_per_knot"] = (heapInUseKilobytes() - before) / knots;
  for (auto _ : state) {
    solver.setInitialGuess(lp.xs, lp.ws, lp.theta);
    const auto t0 = std::chrono::steady_clock::now();
    const auto& summary = solver.solve();
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    state.SetIterationTime(seconds / std::max(summary.iterations, 1));
  }
  const auto& summary = solver.summary();
  int trials = 0;  // alpha = 2^-j took j + 1 trials; a rejected iteration all 11
  for (double alpha : summary.step_history)
    trials += alpha > 0 ? 1 + static_cast<int>(std::lround(-std::log2(alpha))) : 11;
  const double per_iteration_ms = 1e3 / std::max(summary.iterations, 1);
  state.counters["iterations"] = summary.iterations;
  state.counters["trials"] = trials;
  // The solver's own time split of the last solve, per iteration [ms].
  state.counters["deriv_ms"] = summary.derivative_seconds * per_iteration_ms;
  state.counters["backward_ms"] = summary.backward_seconds * per_iteration_ms;
  state.counters["forward_ms"] = summary.forward_seconds * per_iteration_ms;
}

void meanIteration(benchmark::State& state, int knots) { meanIterationOf(state, problem(knots)); }

// A whole contact-implicit solve (default options, the covariance pass included: what heft estimate
// runs), manual time = solve() alone; counters: iterations, converged.
void implicitSolve(benchmark::State& state, int knots, int stride) {
  const auto& lp = implicitProblem(knots, stride);
  heft::estimation::RiccatiSolver solver(lp.problem);
  for (auto _ : state) {
    solver.setInitialGuess(lp.xs, lp.ws, lp.theta);
    const auto t0 = std::chrono::steady_clock::now();
    solver.solve();
    state.SetIterationTime(
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  state.counters["iterations"] = solver.summary().iterations;
  state.counters["converged"] =
      solver.summary().status == heft::estimation::RiccatiSummary::Status::Converged;
}

// Simulates and builds the go2 problems before the first go2 benchmark runs (outside timing).
void prepareGo2(const benchmark::State&) {
  static bool done = false;
  if (done) return;
  done = true;
  problem(1000);
  problem(2000);
  problem(1000, true);
  problem(1000, false, true);
  problem(2000, false, true);
  std::printf("go2: nv %d, stage residuals %d, 1000 and 2000 knots at 1 kHz\n",
              problem(1000).model->nv, problem(1000).problem->running(0).nr());
}

// ---- heft against Crocoddyl's augmented-state FDDP ------------------------------------------

// A problem both solvers solve: a MuJoCo log, the body identified, the window.
struct Comparison {
  std::string name;  // benchmark prefix
  std::string robot_name, scenario;
  double duration = 0;  // [s] simulated
  bool torque_bias = true;
  int body = 1;  // identified body (joint index; the truth's)
  int first_sample = 1000;
  double theta_prior_std = 1.0;

  const heft::model::RobotModel& robot() const {
    static std::map<std::string, heft::model::RobotModel> robots;
    auto it = robots.find(robot_name);
    if (it == robots.end())
      it = robots.emplace(robot_name, heft::model::loadRobot(robot_name)).first;
    return it->second;
  }
  const heft::io::Log& log() const {
    static std::map<std::string, heft::io::Log> logs;
    auto it = logs.find(name);
    if (it == logs.end()) {
      heft::sim::SimulationOptions options;
      options.duration = duration;
      options.seed = 1;
      heft::sim::NoiseProfile profile = heft::sim::NoiseProfile::fromName("nominal");
      if (!torque_bias) profile.torque_bias = 0;  // heft has no actuator-bias parameter
      options.profile = profile;
      it = logs.emplace(name, heft::sim::simulate(heft::sim::findScenario(scenario), options).log)
               .first;
    }
    return it->second;
  }
  const heft::estimation::LogProblem& problem(int knots) const {
    static std::map<std::pair<std::string, int>, heft::estimation::LogProblem> cache;
    auto it = cache.find({name, knots});
    if (it == cache.end()) {
      heft::estimation::LogProblemOptions options;
      options.identified_bodies = {robot().body(body).name};
      options.parametrization = heft::inertia::Parametrization::LogCholesky;  // the reference's
      options.first_sample = first_sample;
      options.knots = knots;
      options.theta_prior_std = theta_prior_std;
      it = cache
               .emplace(std::make_pair(name, knots),
                        heft::estimation::buildLogProblem(robot(), log(), options))
               .first;
    }
    return it->second;
  }
  std::string referencePath(int knots, const std::string& what) const {
    return std::string(HEFT_BINARY_DIR) + "/bench_reference_" + name + "_" + std::to_string(knots) +
           "_" + what + ".txt";
  }
};

// The double pendulum with a payload on link 2 (encoders, 1 kHz from t = 1 s; the problem of
// tests/reference_test.cpp's first estimation test), and go2 trotting in place (free flyer, the
// trunk identified, encoders, IMU, accelerometer, motion capture, the log's contact flags,
// touchdown impulses; from t = 2 s, when the feet swing fully; the problem of its floating-base
// test).
const Comparison kPendulum{
    "pendulum", "double_pendulum", "double-pendulum-payload", 3.2, false, 2, 1000, 1.0};
const Comparison kTrot{"go2_trot", "go2", "go2-trot", 2.6, true, 1, 2000, 0.1};

// heft's optimum cost per problem and the bound within which another solver's cost counts as the
// same optimum: 2 eps_stop, eps_stop = 0.5 tol (1 + J), the bound of tests/reference_test.cpp.
std::map<std::string, double>& optimumCost() {
  static std::map<std::string, double> costs;
  return costs;
}
double sameOptimumBound(double cost) {
  return heft::estimation::RiccatiOptions().tolerance * (1 + cost);
}

// Simulates and builds the problem, solves it once with heft (its optimum cost) and writes the
// reference's problem files, before the first benchmark of this problem runs (outside timing).
// Two files: heft's stopping rule, and a stricter one for the run to the optimum.
void prepare(const Comparison& c, int knots) {
  const std::string key = c.name + std::to_string(knots);
  if (optimumCost().count(key)) return;
  const auto& lp = c.problem(knots);
  heft::estimation::RiccatiSolver solver(lp.problem);
  solver.setInitialGuess(lp.xs, lp.ws, lp.theta);
  optimumCost()[key] = solver.solve().cost;
  heft::estimation::ReferenceOptions options;
  options.max_iterations = heft::estimation::RiccatiOptions().max_iterations;
  options.tolerance = heft::estimation::RiccatiOptions().tolerance;
  options.threads = 1;
  heft::estimation::writeReferenceProblem(c.referencePath(knots, "rule"), lp, c.robot().source(),
                                          options);
  // Only long enough to pass the optimum: its time is read from the iteration history.
  options.max_iterations = 300;
  options.tolerance = 1e-13;
  heft::estimation::writeReferenceProblem(c.referencePath(knots, "optimum"), lp, c.robot().source(),
                                          options);
}

// One line per solver and size, printed after the tables (the counters' 4 digits hide the costs).
std::map<std::string, std::string>& details() {
  static std::map<std::string, std::string> lines;
  return lines;
}

// Counters (iterations, cost, converged, mass error [%] and COM error [mm] of the identified body
// against the MuJoCo truth) and the detail line.
void report(benchmark::State& state, const Comparison& c, const std::string& name, int iterations,
            double cost, bool converged, const Eigen::VectorXd& theta) {
  const heft::Vector10 truth = heft::results::truthPi(c.robot(), c.log(), c.body);
  const heft::Vector10 pi = heft::inertia::piFromLogCholesky(theta.head<10>());
  const double mass_error = 100 * (pi(0) - truth(0)) / truth(0);
  const double com_error = 1e3 * (pi.segment<3>(1) / pi(0) - truth.segment<3>(1) / truth(0)).norm();
  state.counters["iterations"] = iterations;
  state.counters["cost"] = cost;
  state.counters["converged"] = converged;
  state.counters["mass_err_%"] = mass_error;
  state.counters["com_err_mm"] = com_error;
  char line[256];
  std::snprintf(line, sizeof line,
                "%-37s %s, %3d iterations, cost %.10f, mass %.6f kg (truth %.6f, %+.3f %%), "
                "COM error %.2f mm",
                (c.name + "/" + name).c_str(), converged ? "converged" : "NOT converged",
                iterations, cost, pi(0), truth(0), mass_error, com_error);
  details()[c.name + "/" + name] = line;
}

void heftSolve(benchmark::State& state, const Comparison* c, int knots,
               heft::estimation::ThetaTrustUpdate update) {
  prepare(*c, knots);
  const auto& lp = c->problem(knots);
  heft::estimation::RiccatiOptions options;
  options.posterior_covariance = false;
  options.theta_trust_update = update;
  heft::estimation::RiccatiSolver solver(lp.problem, options);
  for (auto _ : state) {
    solver.setInitialGuess(lp.xs, lp.ws, lp.theta);
    const auto t0 = std::chrono::steady_clock::now();
    const auto& summary = solver.solve();
    state.SetIterationTime(
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    benchmark::DoNotOptimize(summary.cost);
  }
  const auto& summary = solver.summary();
  const bool probe = update == heft::estimation::ThetaTrustUpdate::Probe;
  report(state, *c,
         std::string(probe ? "heft_solve_probe_" : "heft_solve_") + std::to_string(knots),
         summary.iterations, summary.cost, summary.ok(), solver.theta());
  // The probe's evaluations are forward work: the split shows what one iteration pays for it.
  const double per_iteration_ms = 1e3 / std::max(summary.iterations, 1);
  state.counters["forward_ms"] = summary.forward_seconds * per_iteration_ms;
  state.counters["total_ms"] = summary.total_seconds * per_iteration_ms;
}

// Crocoddyl with heft's stopping rule: the time of solve() as the reference measured it.
void crocoddylSolve(benchmark::State& state, const Comparison* c, int knots) {
  prepare(*c, knots);
  heft::estimation::ReferenceResult r;
  for (auto _ : state) {
    r = heft::estimation::runReference(HEFT_REFERENCE_ESTIMATION_EXE,
                                       c->referencePath(knots, "rule"),
                                       c->referencePath(knots, "rule_result"));
    state.SetIterationTime(r.seconds.front());
  }
  report(state, *c, "crocoddyl_fddp_" + std::to_string(knots), r.iterations, r.cost, r.converged,
         r.theta);
}

// Crocoddyl until a feasible iterate's cost first comes within the same-optimum bound of heft's:
// the time from the start of solve() to the end of that iteration (the reference's clock).
void crocoddylToOptimum(benchmark::State& state, const Comparison* c, int knots) {
  prepare(*c, knots);
  const double optimum = optimumCost().at(c->name + std::to_string(knots));
  const double target = optimum + sameOptimumBound(optimum);
  heft::estimation::ReferenceResult r;
  double seconds = -1;
  for (auto _ : state) {
    r = heft::estimation::runReference(HEFT_REFERENCE_ESTIMATION_EXE,
                                       c->referencePath(knots, "optimum"),
                                       c->referencePath(knots, "optimum_result"));
    seconds = r.secondsToCost(target);
    if (seconds < 0) {
      state.SkipWithError("Crocoddyl did not reach heft's optimum cost in 300 iterations");
      break;
    }
    state.SetIterationTime(seconds);
  }
  if (seconds < 0) return;
  int iterations = 0;
  while (!r.feasible_history[iterations] || r.cost_history[iterations] > target) ++iterations;
  // theta is the final one of this longer run (the histories do not keep theta).
  report(state, *c, "crocoddyl_to_optimum_" + std::to_string(knots), iterations + 1,
         r.cost_history[iterations], true, r.theta);
}

// The RatioReporter's table, and the medians of the pendulum benchmarks for the second ratio.
class PendulumReporter : public heft::bench::RatioReporter {
 public:
  using RatioReporter::RatioReporter;
  void ReportRuns(const std::vector<Run>& runs) override {
    RatioReporter::ReportRuns(runs);
    for (const Run& run : runs)
      if (!run.error_occurred && run.run_type == Run::RT_Aggregate &&
          run.aggregate_name == "median")
        medians[run.run_name.function_name] = run.GetAdjustedRealTime();
      else if (!run.error_occurred && run.run_type == Run::RT_Iteration && run.repetitions <= 1)
        medians[run.run_name.function_name] = run.GetAdjustedRealTime();
  }
  std::map<std::string, double> medians;  // in the benchmarks' unit (ms here)
};

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  for (int knots : {1000, 2000}) {
    benchmark::RegisterBenchmark(("go2/derivatives_" + std::to_string(knots)).c_str(), derivatives,
                                 knots)
        ->Setup(prepareGo2)
        ->Unit(benchmark::kMillisecond);
    benchmark::RegisterBenchmark(("go2/direction_" + std::to_string(knots)).c_str(), direction,
                                 knots)
        ->Setup(prepareGo2)
        ->Unit(benchmark::kMillisecond);
    benchmark::RegisterBenchmark(("go2/iteration_" + std::to_string(knots)).c_str(), iteration,
                                 knots)
        ->Setup(prepareGo2)
        ->Unit(benchmark::kMillisecond);
    benchmark::RegisterBenchmark(("go2/mean_iteration_" + std::to_string(knots)).c_str(),
                                 meanIteration, knots)
        ->Setup(prepareGo2)
        ->UseManualTime()
        ->Unit(benchmark::kMillisecond);
  }
  // go2 with energy observations: the price of the energy row in the derivatives and in a
  // direction (no line search, so the same work on both problems), over go2/ at 1000 knots.
  benchmark::RegisterBenchmark("go2_energy/derivatives_1000",
                               [](benchmark::State& s) { derivativesOf(s, problem(1000, true)); })
      ->Setup(prepareGo2)
      ->Unit(benchmark::kMillisecond);
  benchmark::RegisterBenchmark("go2_energy/direction_1000",
                               [](benchmark::State& s) { directionOf(s, problem(1000, true)); })
      ->Setup(prepareGo2)
      ->Unit(benchmark::kMillisecond);
  // The inverse-dynamics stages on the same go2 problem.
  for (int knots : {1000, 2000}) {
    const std::string n = std::to_string(knots);
    benchmark::RegisterBenchmark(
        ("go2_inverse/derivatives_" + n).c_str(),
        [knots](benchmark::State& s) { derivativesOf(s, problem(knots, false, true)); })
        ->Setup(prepareGo2)
        ->Unit(benchmark::kMillisecond);
    benchmark::RegisterBenchmark(
        ("go2_inverse/direction_" + n).c_str(),
        [knots](benchmark::State& s) { directionOf(s, problem(knots, false, true)); })
        ->Setup(prepareGo2)
        ->Unit(benchmark::kMillisecond);
    benchmark::RegisterBenchmark(
        ("go2_inverse/mean_iteration_" + n).c_str(),
        [knots](benchmark::State& s) { meanIterationOf(s, problem(knots, false, true)); })
        ->Setup(prepareGo2)
        ->UseManualTime()
        ->Unit(benchmark::kMillisecond);
  }
  // Contact-implicit go2: derivatives and mean iteration at 1000 and 2000 knots of 1 ms, and a
  // whole solve of 1000 knots of 10 ms (10 s of log, PRIME's horizon and step).
  for (int knots : {1000, 2000}) {
    const std::string n = std::to_string(knots);
    benchmark::RegisterBenchmark(
        ("go2_implicit/derivatives_" + n).c_str(),
        [knots](benchmark::State& s) { derivativesOf(s, implicitProblem(knots, 1)); })
        ->Unit(benchmark::kMillisecond);
    benchmark::RegisterBenchmark(
        ("go2_implicit/mean_iteration_" + n).c_str(),
        [knots](benchmark::State& s) { meanIterationOf(s, implicitProblem(knots, 1)); })
        ->UseManualTime()
        ->Unit(benchmark::kMillisecond);
  }
  benchmark::RegisterBenchmark("go2_implicit/solve_1000_at_10ms", implicitSolve, 1000, 10)
      ->UseManualTime()
      ->Unit(benchmark::kMillisecond);
  // The reference comparisons: the pendulum at 1000 and 2000 knots, go2 trotting at 300.
  for (const auto& [c, knots] : {std::make_pair(&kPendulum, 1000), std::make_pair(&kPendulum, 2000),
                                 std::make_pair(&kTrot, 300)}) {
    const std::string n = std::to_string(knots);
    benchmark::RegisterBenchmark((c->name + "/heft_solve_" + n).c_str(), heftSolve, c, knots,
                                 heft::estimation::ThetaTrustUpdate::Always)
        ->UseManualTime()
        ->Unit(benchmark::kMillisecond);
    // The theta trust region with its probe (shrinks only after steps theta shortened).
    benchmark::RegisterBenchmark((c->name + "/heft_solve_probe_" + n).c_str(), heftSolve, c, knots,
                                 heft::estimation::ThetaTrustUpdate::Probe)
        ->UseManualTime()
        ->Unit(benchmark::kMillisecond);
    benchmark::RegisterBenchmark((c->name + "/crocoddyl_fddp_" + n).c_str(), crocoddylSolve, c,
                                 knots)
        ->UseManualTime()
        ->Unit(benchmark::kMillisecond);
    benchmark::RegisterBenchmark((c->name + "/crocoddyl_to_optimum_" + n).c_str(),
                                 crocoddylToOptimum, c, knots)
        ->UseManualTime()
        ->Unit(benchmark::kMillisecond);
  }
  PendulumReporter reporter(
      "go2: direction and iteration over derivatives at 1000 knots, _2000 over _1000; "
      "go2_energy: over go2 (the energy row's price); go2_inverse: over go2 at 1000 knots, "
      "_2000 over _1000 (target at most 2.1); "
      "go2_implicit: _2000 over _1000, _1000 over go2 (rigid contacts); pendulum, "
      "go2_trot: heft over Crocoddyl's augmented-state FDDP, target at most 0.5; heft_solve_probe "
      "(theta trust region with its probe) over heft_solve",
      [](const std::string& name) {
        if (name == "go2/direction_1000" || name == "go2/iteration_1000" ||
            name == "go2/mean_iteration_1000")
          return std::string("go2/derivatives_1000");
        for (const char* what : {"derivatives", "direction", "iteration", "mean_iteration"})
          if (name == std::string("go2/") + what + "_2000")
            return std::string("go2/") + what + "_1000";
        for (const char* what : {"derivatives", "direction"})
          if (name == std::string("go2_energy/") + what + "_1000")
            return std::string("go2/") + what + "_1000";
        // inverse dynamics: over the forward stages' go2/ at 1000 knots; its 2000 over its 1000
        for (const char* what : {"derivatives", "direction", "mean_iteration"}) {
          if (name == std::string("go2_inverse/") + what + "_1000")
            return std::string("go2/") + what + "_1000";
          if (name == std::string("go2_inverse/") + what + "_2000")
            return std::string("go2_inverse/") + what + "_1000";
        }
        // contact-implicit: 2000 over 1000 knots, and 1000 over the rigid-contact problem's
        for (const char* what : {"derivatives", "mean_iteration"}) {
          if (name == std::string("go2_implicit/") + what + "_2000")
            return std::string("go2_implicit/") + what + "_1000";
          if (name == std::string("go2_implicit/") + what + "_1000")
            return std::string("go2/") + what + "_1000";
        }
        for (const std::string prefix : {"pendulum/", "go2_trot/"}) {
          if (name.rfind(prefix + "heft_solve_probe_", 0) == 0)
            return prefix + "heft_solve_" + name.substr(prefix.size() + 17);
          if (name.rfind(prefix + "heft_solve_", 0) == 0)
            return prefix + "crocoddyl_fddp_" + name.substr(prefix.size() + 11);
        }
        return std::string();
      });
  benchmark::RunSpecifiedBenchmarks(&reporter);
  if (!details().empty()) std::printf("\nReference comparisons (last run of each):\n");
  for (const auto& [name, line] : details()) std::printf("  %s\n", line.c_str());
  for (const auto& [prefix, n] : {std::make_pair(std::string("pendulum/"), std::string("1000")),
                                  std::make_pair(std::string("pendulum/"), std::string("2000")),
                                  std::make_pair(std::string("go2_trot/"), std::string("300"))}) {
    const auto heft = reporter.medians.find(prefix + "heft_solve_" + n);
    const auto to_optimum = reporter.medians.find(prefix + "crocoddyl_to_optimum_" + n);
    if (heft != reporter.medians.end() && to_optimum != reporter.medians.end())
      std::printf("  %sheft_solve_%s over crocoddyl_to_optimum_%s: x%.2f\n", prefix.c_str(),
                  n.c_str(), n.c_str(), heft->second / to_optimum->second);
  }
  benchmark::Shutdown();
  return 0;
}
