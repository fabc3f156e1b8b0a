#include "heft/sampling/sysid.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <exception>
#include <limits>
#include <memory>
#include <sstream>
#include <thread>

#include "heft/common/error.hpp"
#include "heft/common/format.hpp"
#include "heft/inertia/inertia.hpp"

namespace heft::sampling {

namespace {

std::string num(double x, int precision = 4) { return formatNumber(x, precision); }

double medianStep(const Eigen::VectorXd& time) {
  std::vector<double> steps(time.size() - 1);
  for (Eigen::Index k = 0; k + 1 < time.size(); ++k) steps[k] = time[k + 1] - time[k];
  std::nth_element(steps.begin(), steps.begin() + steps.size() / 2, steps.end());
  return steps[steps.size() / 2];
}

// The clips' terms of one candidate on one rollout; stops at the first clip that diverges.
CostTerms evaluate(Rollout& rollout, const Candidate& candidate, const ReplayData& data,
                   const std::vector<Clip>& clips, const Replay& replay,
                   std::atomic<long>& rollouts) {
  rollout.apply(candidate);
  CostTerms total;
  for (const Clip& clip : clips) {
    total += rollout.run(data, clip, replay);
    ++rollouts;
    if (!total.finite) break;
  }
  return total;
}

std::string termsLine(const char* name, double start, double best, long start_steps,
                      long best_steps, const char* unit) {
  return std::string("  ") + name + " RMS " + num(std::sqrt(start / start_steps), 3) + " -> " +
         num(std::sqrt(best / best_steps), 3) + " " + unit + "\n";
}

}  // namespace

excite::CmaesOptions SamplingOptions::defaultOptimizer() {
  excite::CmaesOptions o;
  o.sigma0 = 1.0;
  o.max_iterations = 60;
  o.x_tolerance = 1e-3;
  o.f_tolerance = 1e-6;
  return o;
}

void SamplingOptions::validate() const {
  require(clips >= 1, "clips.count", ">= 1", std::to_string(clips));
  require(std::isfinite(min_horizon) && min_horizon > 0, "clips.min_horizon", "> 0 s",
          formatNumber(min_horizon));
  require(std::isfinite(max_horizon) && max_horizon >= min_horizon, "clips.max_horizon",
          ">= clips.min_horizon", formatNumber(max_horizon));
  weights.validate();
  require(replay.kp.size() == replay.kd.size(), "replay", "as many kd as kp",
          std::to_string(replay.kd.size()));
  require(replay.kp.allFinite() && (replay.kp.array() >= 0).all() && replay.kd.allFinite() &&
              (replay.kd.array() >= 0).all(),
          "replay", "finite gains >= 0", "a negative or non-finite gain");
  require(threads >= 0, "threads", ">= 0", std::to_string(threads));
  optimizer.validate();
}

std::string toString(SamplingSummary::Status status) {
  switch (status) {
    case SamplingSummary::Status::NotRun:
      return "not_run";
    case SamplingSummary::Status::Converged:
      return "converged";
    case SamplingSummary::Status::MaxIterations:
      return "max_iterations";
    case SamplingSummary::Status::Failed:
      return "failed";
  }
  return "?";
}

SamplingSummary identifyBySampling(const sim::SimModel& sim, const ParameterSpace& space,
                                   const ReplayData& data, const SamplingOptions& options,
                                   const GenerationCallback& on_generation) {
  options.validate();
  if (options.replay.closedLoop() && options.replay.kp.size() != sim.nu())
    throw InputError("replay: expected " + std::to_string(sim.nu()) +
                     " PD gains (one per joint), got " + std::to_string(options.replay.kp.size()));
  const auto start_time = std::chrono::steady_clock::now();
  const auto elapsed = [&start_time] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_time).count();
  };
  SamplingSummary summary;
  summary.dt = medianStep(data.time);
  const int min_steps =
      std::max(1, static_cast<int>(std::lround(options.min_horizon / summary.dt)));
  const int max_steps =
      std::max(min_steps, static_cast<int>(std::lround(options.max_horizon / summary.dt)));
  summary.clips = drawClips(data.samples(), options.clips, min_steps, max_steps, options.clip_seed);
  summary.threads = options.threads > 0
                        ? options.threads
                        : std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
  std::vector<std::unique_ptr<Rollout>> rollouts;
  for (int t = 0; t < summary.threads; ++t)
    rollouts.push_back(std::make_unique<Rollout>(sim, space));
  std::atomic<long> rollout_count{0};

  const Eigen::VectorXd x0 = Eigen::VectorXd::Zero(space.dimension());
  summary.start = space.candidate(x0);
  summary.start_terms =
      evaluate(*rollouts[0], summary.start, data, summary.clips, options.replay, rollout_count);
  if (!summary.start_terms.finite) {
    summary.status = SamplingSummary::Status::Failed;
    summary.message =
        "the start model's rollouts diverged (MuJoCo warning or non-finite state): check the "
        "log's base state, the PD gains and the contact settings";
    summary.rollouts = rollout_count;
    summary.seconds = elapsed();
    return summary;
  }
  const CostTerms& reference = summary.start_terms;

  // Candidate k runs on thread k % threads: the cost of a candidate does not depend on which
  // thread computed it, so the result is the same for any number of threads.
  const excite::BatchObjective objective = [&](const Eigen::MatrixXd& X, Eigen::VectorXd& costs) {
    const int count = static_cast<int>(X.cols());
    const int threads = std::min(summary.threads, count);
    std::vector<std::exception_ptr> errors(threads);
    const auto work = [&](int t) {
      try {
        for (int k = t; k < count; k += threads) {
          const Candidate c = space.candidate(X.col(k));
          if (!space.inRange(c)) {
            costs[k] = std::numeric_limits<double>::infinity();
            continue;
          }
          const CostTerms terms =
              evaluate(*rollouts[t], c, data, summary.clips, options.replay, rollout_count);
          costs[k] = weightedCost(terms, reference, options.weights);
        }
      } catch (...) {
        errors[t] = std::current_exception();
      }
    };
    std::vector<std::thread> pool;
    for (int t = 1; t < threads; ++t) pool.emplace_back(work, t);
    work(0);
    for (std::thread& th : pool) th.join();
    for (const std::exception_ptr& e : errors)
      if (e) std::rethrow_exception(e);
  };
  const excite::GenerationObserver observe = [&](const excite::CmaesSummary& s) {
    if (on_generation) on_generation(s.iterations, s.best_cost, elapsed());
  };
  summary.optimizer = excite::cmaesBatch(objective, x0, options.optimizer, observe);
  summary.start_cost = summary.optimizer.initial_cost;
  summary.best_cost = summary.optimizer.best_cost;
  summary.best_x = summary.optimizer.best_x;
  summary.best = space.candidate(summary.best_x);
  summary.best_terms =
      evaluate(*rollouts[0], summary.best, data, summary.clips, options.replay, rollout_count);
  switch (summary.optimizer.status) {
    case excite::CmaesSummary::Status::XTolerance:
    case excite::CmaesSummary::Status::FTolerance:
      summary.status = SamplingSummary::Status::Converged;
      break;
    case excite::CmaesSummary::Status::MaxIterations:
      summary.status = SamplingSummary::Status::MaxIterations;
      break;
    default:
      summary.status = SamplingSummary::Status::Failed;
  }
  summary.message = summary.optimizer.message;
  summary.rollouts = rollout_count;
  summary.seconds = elapsed();
  return summary;
}

std::string SamplingSummary::report() const {
  std::ostringstream s;
  s << "sampling sysid: " << toString(status) << (message.empty() ? "" : " (" + message + ")")
    << "\n";
  s << "  " << optimizer.iterations << " generations, " << optimizer.evaluations << " candidates, "
    << rollouts << " clip rollouts on " << threads << " thread" << (threads == 1 ? "" : "s") << ", "
    << num(seconds, 3) << " s\n";
  s << "  " << clips.size() << " clips, log step " << num(dt * 1e3, 3) << " ms; cost "
    << num(start_cost) << " -> " << num(best_cost) << "\n";
  if (start_terms.steps > 0 && best_terms.steps > 0) {
    const long a = start_terms.steps, b = best_terms.steps;
    if (start_terms.base_position > 0) {
      s << termsLine("base position", start_terms.base_position, best_terms.base_position, a, b,
                     "m");
      s << termsLine("base velocity", start_terms.base_velocity, best_terms.base_velocity, a, b,
                     "m/s");
    }
    s << termsLine("joint position", start_terms.joint_position, best_terms.joint_position, a, b,
                   "rad");
    s << termsLine("joint velocity", start_terms.joint_velocity, best_terms.joint_velocity, a, b,
                   "rad/s");
    s << termsLine("joint torque", start_terms.joint_torque, best_terms.joint_torque, a, b, "N m");
  }
  return s.str();
}

}  // namespace heft::sampling
