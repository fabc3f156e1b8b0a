#include "heft/sampling/sysid.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <limits>
#include <memory>
#include <sstream>

#include <Eigen/Eigenvalues>

#include "heft/common/error.hpp"
#include "heft/common/format.hpp"
#include "heft/inertia/inertia.hpp"
#include "parallel.hpp"

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

// The held-out samples [begin, end): the end of the first recording (the log), so that the
// recordings added to it (more_logs: a designed experiment) are fitted whole.
struct HeldOut {
  int begin = 0, end = 0;
  int size() const { return end - begin; }
};

// The actuator term over the fitted samples: everything outside the held-out range.
CostTerms fittedActuatorTerms(const ParameterSpace& space, const Candidate& candidate,
                              const ReplayData& data, const HeldOut& held_out) {
  CostTerms terms = actuatorTerms(space, candidate, data, 0, held_out.begin);
  if (held_out.end < data.samples())
    terms += actuatorTerms(space, candidate, data, held_out.end, data.samples());
  return terms;
}

// Scores a generation's candidates on the clips with the threads' rollouts.
//
// The work of a generation is its (candidate, clip) pairs, candidate-major; each thread takes the
// next pair not yet taken, so the threads finish together (whole candidates, 5 per thread in a
// generation of 10, left one idle for half a candidate at the end). A thread re-applies a
// candidate only when its pair belongs to another one. A pair's terms do not depend on the thread
// (apply() sets every sampled value, a clip starts from reset data), and each candidate's clips
// are summed in clip order after the join: the result is the same for any number of threads, and
// the same as evaluate()'s.
class GenerationScorer {
 public:
  GenerationScorer(const ParameterSpace& space, const ReplayData& data,
                   const std::vector<Clip>& clips, HeldOut held_out, const SamplingOptions& options,
                   const CostTerms& reference, std::vector<std::unique_ptr<Rollout>>& rollouts,
                   int threads, std::atomic<long>& rollout_count)
      : space_(space),
        data_(data),
        clips_(clips),
        held_out_(held_out),
        options_(options),
        reference_(reference),
        rollouts_(rollouts),
        threads_(threads),
        rollout_count_(rollout_count) {}

  void operator()(const Eigen::MatrixXd& X, Eigen::VectorXd& costs) {
    const int count = static_cast<int>(X.cols());
    const int clip_count = static_cast<int>(clips_.size());
    candidates_.resize(count);
    in_range_.assign(count, 0);
    for (int k = 0; k < count; ++k) {
      candidates_[k] = space_.candidate(X.col(k));
      in_range_[k] = space_.inRange(candidates_[k]) ? 1 : 0;
    }
    const int pairs = count * clip_count;
    pair_terms_.assign(pairs, CostTerms{});
    // a candidate that diverged on one clip costs infinity: its other clips need not run
    std::unique_ptr<std::atomic<bool>[]> diverged(new std::atomic<bool>[count]);
    for (int k = 0; k < count; ++k) diverged[k] = false;
    std::vector<int> applied(threads_, -1);  // the candidate each thread's rollout holds
    forEachItem(pairs, threads_, [&](int t, int i) {
      const int k = i / clip_count;
      if (!in_range_[k] || diverged[k]) return;
      if (k != applied[t]) {
        rollouts_[t]->apply(candidates_[k]);
        applied[t] = k;
      }
      pair_terms_[i] = rollouts_[t]->run(data_, clips_[i % clip_count], options_.replay);
      ++rollout_count_;
      if (!pair_terms_[i].finite) diverged[k] = true;
    });
    for (int k = 0; k < count; ++k) {
      if (!in_range_[k] || diverged[k]) {
        costs[k] = std::numeric_limits<double>::infinity();
        continue;
      }
      CostTerms total;
      for (int c = 0; c < clip_count; ++c) total += pair_terms_[k * clip_count + c];
      if (options_.weights.actuator_torque > 0)
        total += fittedActuatorTerms(space_, candidates_[k], data_, held_out_);
      costs[k] = weightedCost(total, reference_, options_.weights);
    }
  }

 private:
  const ParameterSpace& space_;
  const ReplayData& data_;
  const std::vector<Clip>& clips_;
  HeldOut held_out_;  // the samples outside it are the actuator term's
  const SamplingOptions& options_;
  const CostTerms& reference_;
  std::vector<std::unique_ptr<Rollout>>& rollouts_;
  int threads_;
  std::atomic<long>& rollout_count_;
  std::vector<Candidate> candidates_;
  std::vector<char> in_range_;
  std::vector<CostTerms> pair_terms_;
};

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
  require(std::isfinite(holdout_fraction) && holdout_fraction >= 0 && holdout_fraction <= 0.5,
          "clips.holdout_fraction", "in [0, 0.5]", formatNumber(holdout_fraction));
  require(holdout_fraction == 0 || holdout_clips >= 1, "clips.holdout_clips", ">= 1",
          std::to_string(holdout_clips));
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

namespace {

// The channel (RolloutInformation::channel_rms) of residual entry e of a step.
int residualChannel(int e, bool free_flyer, int nu) {
  if (free_flyer) {
    if (e < 9) return e / 3;
    e -= 9;
  }
  return 3 + e / nu;
}

}  // namespace

RolloutInformation rolloutInformation(const sim::SimModel& sim, const ParameterSpace& space,
                                      const ReplayData& data, const std::vector<Clip>& clips,
                                      const Replay& replay, const Eigen::VectorXd& x, double step,
                                      const Eigen::VectorXd& channel_sigma, bool torque_offsets) {
  require(x.size() == space.dimension(), "x", std::to_string(space.dimension()) + " entries",
          std::to_string(x.size()));
  require(step > 0, "step", "> 0", formatNumber(step));
  require(channel_sigma.size() == 0 || channel_sigma.size() == 6, "channel_sigma",
          "6 entries or none", std::to_string(channel_sigma.size()));
  RolloutInformation info;
  Rollout rollout(sim, space);
  const int per_step = rollout.residualSize();
  const bool free_flyer = sim.hasFreeFlyer();
  const int nu = sim.nu();
  const int n = space.dimension();
  // the noise model: the given one, else each channel's residual RMS at x
  if (channel_sigma.size() == 0) {
    rollout.apply(space.candidate(x));
    Eigen::VectorXd sum = Eigen::VectorXd::Zero(6), count = Eigen::VectorXd::Zero(6);
    Eigen::VectorXd r;
    CostTerms total;
    for (const Clip& clip : clips) {
      const CostTerms terms = rollout.run(data, clip, replay, &r);
      if (!terms.finite) return info;
      total += terms;
      for (Eigen::Index i = 0; i < r.size(); ++i) {
        const int c = residualChannel(static_cast<int>(i % per_step), free_flyer, nu);
        sum[c] += r[i] * r[i];
        count[c] += 1;
      }
    }
    if (torque_offsets) sum[5] = total.jointTorqueBeyondOffsets();  // the fit's torque residual
    info.channel_rms = (sum.array() / count.array().max(1.0)).sqrt();
  }
  const Eigen::VectorXd& sigma = channel_sigma.size() == 6 ? channel_sigma : info.channel_rms;
  Eigen::VectorXd weight(per_step);
  for (int e = 0; e < per_step; ++e) {
    const double rms = sigma[residualChannel(e, free_flyer, nu)];
    weight[e] = rms > 0 ? 1.0 / rms : 0.0;
  }
  // F = sum over clips of J^T W^2 J, one clip's Jacobian at a time
  info.information = Eigen::MatrixXd::Zero(n, n);
  // per recording and joint, its weighted torque rows summed over the recording's steps: the
  // offsets' cross information
  std::vector<Eigen::MatrixXd> torque_sums(data.recordings(), Eigen::MatrixXd::Zero(nu, n));
  std::vector<long> steps(data.recordings(), 0);
  Eigen::VectorXd plus, minus;
  for (const Clip& clip : clips) {
    Eigen::MatrixXd J(static_cast<Eigen::Index>(clip.steps) * per_step, n);
    for (int i = 0; i < n; ++i) {
      Eigen::VectorXd xi = x;
      xi[i] = x[i] + step;
      rollout.apply(space.candidate(xi));
      if (!rollout.run(data, clip, replay, &plus).finite) return info;
      xi[i] = x[i] - step;
      rollout.apply(space.candidate(xi));
      if (!rollout.run(data, clip, replay, &minus).finite) return info;
      J.col(i) = (plus - minus) / (2 * step);
    }
    for (Eigen::Index row = 0; row < J.rows(); ++row) J.row(row) *= weight[row % per_step];
    info.information.noalias() += J.transpose() * J;
    if (torque_offsets) {
      const int r = data.recordingOf(clip.start);
      for (int k = 0; k < clip.steps; ++k)
        torque_sums[r] += J.middleRows(static_cast<Eigen::Index>(k) * per_step + per_step - nu, nu);
      steps[r] += clip.steps;
    }
  }
  // one offset per joint and recording, its rows 1 (weighted) on that joint's torque entries in
  // that recording: its information is weight^2 N_r, and eliminating it leaves F - s s^T / N_r
  if (torque_offsets)
    for (std::size_t r = 0; r < steps.size(); ++r)
      if (steps[r] > 0)
        info.information.noalias() -=
            torque_sums[r].transpose() * torque_sums[r] / static_cast<double>(steps[r]);
  // a direction the clips do not see keeps a huge variance (1e14 times the best-seen one's), not
  // the zero a pseudo-inverse would give it
  Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> eig(info.information);
  const double largest = std::max(eig.eigenvalues().cwiseAbs().maxCoeff(), 1e-300);
  Eigen::VectorXd inverse(n);
  for (int i = 0; i < n; ++i) {
    const double lambda = eig.eigenvalues()[i];
    if (lambda > 1e-12 * largest) ++info.rank;
    inverse[i] = 1.0 / std::max(lambda, 1e-14 * largest);
  }
  info.covariance = eig.eigenvectors() * inverse.asDiagonal() * eig.eigenvectors().transpose();
  info.std_x = info.covariance.diagonal().cwiseMax(0).cwiseSqrt();
  info.ok = true;
  return info;
}

CostTerms scoreCandidate(const sim::SimModel& sim, const ParameterSpace& space,
                         const ReplayData& data, const std::vector<Clip>& clips,
                         const Replay& replay, const Candidate& candidate) {
  Rollout rollout(sim, space);
  std::atomic<long> rollouts{0};
  return evaluate(rollout, candidate, data, clips, replay, rollouts);
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
  // held out: the end of the first recording (the whole log when there is one)
  const int first_end = data.joins.empty() ? data.samples() : data.joins.front();
  HeldOut held_out;
  held_out.end = first_end;
  held_out.begin = first_end - static_cast<int>(std::lround(options.holdout_fraction * first_end));
  const int held = held_out.size();
  if (held > 0 && held < max_steps + 1)
    throw InputError("clips.holdout_fraction: the held-out end of the log (" +
                     num(held * summary.dt, 3) + " s) is shorter than clips.max_horizon (" +
                     num(options.max_horizon, 3) + " s)");
  // The fitted clips are drawn on the samples outside it, laid end to end (the second
  // recording's start, where the held-out part was cut out, stays a join: no clip spans it) and
  // moved back to their place.
  std::vector<int> fitted_joins;
  for (int j : data.joins) fitted_joins.push_back(j - held);
  summary.clips = drawClips(data.samples() - held, options.clips, min_steps, max_steps,
                            options.clip_seed, fitted_joins);
  for (Clip& clip : summary.clips)
    if (clip.start >= held_out.begin) clip.start += held;
  if (held > 0) {
    summary.holdout_clips =
        drawClips(held, options.holdout_clips, min_steps, max_steps, options.clip_seed + 1);
    for (Clip& clip : summary.holdout_clips) clip.start += held_out.begin;
  }
  summary.holdout_begin = held_out.begin;
  summary.holdout_end = held_out.end;
  summary.threads = threadCount(options.threads);
  std::vector<std::unique_ptr<Rollout>> rollouts;
  for (int t = 0; t < summary.threads; ++t)
    rollouts.push_back(std::make_unique<Rollout>(sim, space));
  std::atomic<long> rollout_count{0};

  // a candidate's terms on clips, with the actuator term (when weighted) over the fitted samples
  // or over the held-out ones
  const auto score = [&](const Candidate& c, const std::vector<Clip>& clips, bool on_held_out) {
    CostTerms terms = evaluate(*rollouts[0], c, data, clips, options.replay, rollout_count);
    if (options.weights.actuator_torque > 0 && terms.finite)
      terms += on_held_out ? actuatorTerms(space, c, data, held_out.begin, held_out.end)
                           : fittedActuatorTerms(space, c, data, held_out);
    return terms;
  };
  const Eigen::VectorXd x0 = Eigen::VectorXd::Zero(space.dimension());
  summary.start = space.candidate(x0);
  summary.start_terms = score(summary.start, summary.clips, false);
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

  GenerationScorer scorer(space, data, summary.clips, held_out, options, reference, rollouts,
                          summary.threads, rollout_count);
  const excite::BatchObjective objective = [&scorer](const Eigen::MatrixXd& X,
                                                     Eigen::VectorXd& costs) { scorer(X, costs); };
  const excite::GenerationObserver observe = [&](const excite::CmaesSummary& s) {
    if (on_generation) on_generation(s.iterations, s.best_cost, elapsed());
  };
  summary.optimizer = excite::cmaesBatch(objective, x0, options.optimizer, observe);
  summary.start_cost = summary.optimizer.initial_cost;
  summary.best_cost = summary.optimizer.best_cost;
  summary.best_x = summary.optimizer.best_x;
  summary.best = space.candidate(summary.best_x);
  summary.best_terms = score(summary.best, summary.clips, false);
  // a sampled group's joints take the actuator term's offsets when it is weighted (the logged
  // commands against the logged torques: no rollout's feedback in them), the others the rollouts'
  if (options.weights.torque_offsets && summary.best_terms.finite) {
    summary.torque_offsets = -summary.best_terms.meanTorqueResidual();
    const Eigen::MatrixXd actuator = -summary.best_terms.meanActuatorResidual();
    if (options.weights.actuator_torque > 0 && actuator.rows() == summary.torque_offsets.rows() &&
        actuator.cols() == summary.torque_offsets.cols())
      for (const ActuatorGroup& g : space.groups())
        for (int j : g.joints) summary.torque_offsets.row(j) = actuator.row(j);
  }
  if (!summary.holdout_clips.empty()) {
    summary.holdout_start_terms = score(summary.start, summary.holdout_clips, true);
    summary.holdout_best_terms = score(summary.best, summary.holdout_clips, true);
    CostTerms ref = summary.holdout_start_terms, best = summary.holdout_best_terms;
    CostWeights weights = options.weights;
    if (weights.torque_offsets) {
      // each model predicts the held-out torques with the offsets it fitted, not refitted ones
      ref.joint_torque = ref.jointTorqueLess(summary.start_terms.meanTorqueResidual());
      best.joint_torque = best.jointTorqueLess(summary.best_terms.meanTorqueResidual());
      ref.actuator_torque = ref.actuatorTorqueLess(summary.start_terms.meanActuatorResidual());
      best.actuator_torque = best.actuatorTorqueLess(summary.best_terms.meanActuatorResidual());
      weights.torque_offsets = false;
    }
    // the clips' prediction, as without the actuator term (whose held-out RMS is in the terms)
    weights.actuator_torque = 0;
    if (ref.finite)  // else the start model diverges on held-out data: nothing to compare with
      summary.holdout_prediction_error =
          weightedCost(best, ref, weights) / weightedCost(ref, ref, weights);
  }
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
    if (torque_offsets.size() > 0)
      s << termsLine("joint torque (beyond the offsets)", start_terms.jointTorqueBeyondOffsets(),
                     best_terms.jointTorqueBeyondOffsets(), a, b, "N m");
    else
      s << termsLine("joint torque", start_terms.joint_torque, best_terms.joint_torque, a, b,
                     "N m");
    if (start_terms.actuator_samples > 0 && best_terms.actuator_samples > 0) {
      const bool less = torque_offsets.size() > 0;
      s << termsLine(less ? "actuator torque (beyond the offsets)" : "actuator torque",
                     less ? start_terms.actuatorTorqueBeyondOffsets() : start_terms.actuator_torque,
                     less ? best_terms.actuatorTorqueBeyondOffsets() : best_terms.actuator_torque,
                     start_terms.actuator_samples, best_terms.actuator_samples, "N m");
    }
  }
  if (holdout_prediction_error >= 0) {
    const long a = holdout_start_terms.steps, b = holdout_best_terms.steps;
    s << "  held out (" << holdout_clips.size() << " clips at the end of the log): prediction "
      << "error " << num(holdout_prediction_error, 3) << " of the start model's\n";
    if (a > 0 && b > 0)
      s << termsLine("joint position", holdout_start_terms.joint_position,
                     holdout_best_terms.joint_position, a, b, "rad");
  }
  return s.str();
}

}  // namespace heft::sampling
