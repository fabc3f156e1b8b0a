#include "heft/sampling/exploration.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <limits>
#include <sstream>

#include <mujoco/mujoco.h>
#include <Eigen/Eigenvalues>

#include "heft/common/error.hpp"
#include "heft/common/format.hpp"
#include "heft/sim/random.hpp"
#include "parallel.hpp"

namespace heft::sampling {

namespace {

constexpr int kChannels = sim::BezierCommands::kChannels;
constexpr double kInfinity = std::numeric_limits<double>::infinity();

std::string num(double x, int precision = 4) { return formatNumber(x, precision); }

// The criterion of F (to minimize), from its floored inverse as rolloutInformation keeps it.
double criterionValue(InformationCriterion criterion, const RolloutInformation& info) {
  switch (criterion) {
    case InformationCriterion::TraceInverse:
      return info.covariance.trace();
    case InformationCriterion::LogDet: {
      // -log det F = log det of the floored covariance
      Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> eig(info.covariance);
      return eig.eigenvalues().cwiseMax(1e-300).array().log().sum();
    }
    case InformationCriterion::MinEigenvalue: {
      Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> eig(info.information);
      return -eig.eigenvalues()[0];
    }
  }
  return kInfinity;
}

}  // namespace

std::string toString(InformationCriterion criterion) {
  switch (criterion) {
    case InformationCriterion::TraceInverse:
      return "trace_inverse";
    case InformationCriterion::LogDet:
      return "log_det";
    case InformationCriterion::MinEigenvalue:
      return "min_eigenvalue";
  }
  return "?";
}

InformationCriterion informationCriterionFromName(const std::string& name,
                                                  const std::string& field) {
  for (InformationCriterion c : {InformationCriterion::TraceInverse, InformationCriterion::LogDet,
                                 InformationCriterion::MinEigenvalue})
    if (toString(c) == name) return c;
  throw InputError((field.empty() ? "" : field + ": ") +
                   "expected trace_inverse, log_det or min_eigenvalue, got \"" + name + "\"");
}

excite::CmaesOptions ExplorationOptions::defaultOptimizer() {
  excite::CmaesOptions o;
  o.sigma0 = 0.3;
  o.max_iterations = 20;
  o.x_tolerance = 1e-3;
  o.f_tolerance = 1e-9;
  return o;
}

void ExplorationOptions::validate() const {
  require(segments >= 1, "exploration.segments", ">= 1", std::to_string(segments));
  require(std::isfinite(segment_duration) && segment_duration > 0, "exploration.segment_duration",
          "> 0 s", num(segment_duration));
  require(degree >= 4, "exploration.degree", ">= 4 (two fixed control points at each end)",
          std::to_string(degree));
  require(bounds.allFinite() && (bounds.array() >= 0).all() && (bounds.array() > 0).any(),
          "exploration.bounds", "finite bounds >= 0, one at least > 0", "other values");
  require(std::isfinite(max_hop_flight) && max_hop_flight >= 0, "exploration.max_hop_flight",
          ">= 0 s", num(max_hop_flight));
  require(std::isfinite(clip_horizon) && clip_horizon > 0 && clip_horizon <= segment_duration,
          "exploration.clip_horizon", "in (0, segment_duration]", num(clip_horizon));
  require(std::isfinite(step) && step > 0, "exploration.step", "> 0", num(step));
  require(std::isfinite(max_base_deviation) && max_base_deviation > 0,
          "exploration.max_base_deviation", "> 0 m", num(max_base_deviation));
  require(std::isfinite(max_tilt) && max_tilt > 0, "exploration.max_tilt", "> 0 rad",
          num(max_tilt));
  require(std::isfinite(min_base_height), "exploration.min_base_height", "a finite height",
          num(min_base_height));
  require(std::isfinite(torque_fraction) && torque_fraction > 0 && torque_fraction <= 1,
          "exploration.torque_fraction", "in (0, 1]", num(torque_fraction));
  require(threads >= 0, "threads", ">= 0", std::to_string(threads));
  optimizer.validate();
}

void ExplorationOptions::requireHopFits(double hop_push) const {
  require(max_hop_flight == 0 || 2 * hop_push + max_hop_flight <= segment_duration - 1.0,
          "exploration.max_hop_flight",
          "a hop (2 hop_push + flight) that fits in a segment with 0.5 s free at each end",
          num(2 * hop_push + max_hop_flight) + " s in segments of " + num(segment_duration) + " s");
}

double feedforwardRatio(const pinocchio::Model& model, const sim::Reference& reference) {
  const int nu = static_cast<int>(reference.tau.rows());
  double ratio = 0;
  for (int j = 0; j < nu; ++j) {
    const double effort = model.upperEffortLimit[model.nv - nu + j];
    if (std::isfinite(effort) && effort > 0)
      ratio = std::max(ratio, reference.tau.row(j).cwiseAbs().maxCoeff() / effort);
  }
  return ratio;
}

CommandExperiment::CommandExperiment(const sim::SimModel& sim, const ParameterSpace& space,
                                     Eigen::VectorXd x_hat, Replay replay,
                                     Eigen::VectorXd channel_sigma, sim::StanceMotionOptions base,
                                     ExplorationOptions options)
    : sim_(sim),
      space_(space),
      x_hat_(std::move(x_hat)),
      replay_(std::move(replay)),
      channel_sigma_(std::move(channel_sigma)),
      base_(std::move(base)),
      options_(std::move(options)) {
  options_.validate();
  require(sim_.hasFreeFlyer(), "exploration robot", "a free-flyer base (the stance controller)",
          sim_.nominal().displayName() + " with a fixed base");
  require(x_hat_.size() == space_.dimension(), "stage-1 estimate",
          std::to_string(space_.dimension()) + " entries", std::to_string(x_hat_.size()));
  require(replay_.closedLoop() && replay_.kp.size() == sim_.nu(), "replay",
          std::to_string(sim_.nu()) + " PD gains (the commands drive the robot's PD)",
          std::to_string(replay_.kp.size()));
  require(channel_sigma_.size() == 6 && channel_sigma_.allFinite() &&
              (channel_sigma_.array() >= 0).all() && (channel_sigma_.array() > 0).any(),
          "channel noise",
          "6 finite values >= 0 (base position, velocity, angular velocity, "
          "joint position, velocity, torque), one at least > 0",
          std::to_string(channel_sigma_.size()) + " values");
  base_.commands = sim::BezierCommands{};
  base_.validate(sim_.nu());
  options_.requireHopFits(base_.hop_push);
}

int CommandExperiment::dimension() const {
  return (kChannels * (options_.degree - 3) + (options_.max_hop_flight > 0 ? 1 : 0)) *
         options_.segments;
}

sim::BezierCommands CommandExperiment::commands(const Eigen::VectorXd& z) const {
  require(z.size() == dimension(), "commands", std::to_string(dimension()) + " entries",
          std::to_string(z.size()));
  sim::BezierCommands c;
  c.degree = options_.degree;
  c.segment_duration = options_.segment_duration;
  const int per_segment = options_.degree + 1;
  c.points = Eigen::MatrixXd::Zero(kChannels, options_.segments * per_segment);
  const bool hops = options_.max_hop_flight > 0;
  if (hops) c.hop_flight = Eigen::VectorXd::Zero(options_.segments);
  int k = 0;
  for (int s = 0; s < options_.segments; ++s) {
    for (int i = 2; i <= options_.degree - 2; ++i)
      for (int ch = 0; ch < kChannels; ++ch)
        c.points(ch, s * per_segment + i) = options_.bounds[ch] * std::clamp(z[k++], -1.0, 1.0);
    if (hops) c.hop_flight[s] = options_.max_hop_flight * std::clamp(z[k++], 0.0, 1.0);
  }
  return c;
}

CommandDesign CommandExperiment::evaluate(const Eigen::VectorXd& z) const {
  CommandDesign d;
  d.z = z;
  d.criterion = kInfinity;
  d.motion = base_;
  d.motion.commands = commands(z);
  d.duration = d.motion.settle + d.motion.commands.duration() + 0.5;
  const double outside = (z.array().abs() - 1.0).max(0.0).matrix().squaredNorm();
  const pinocchio::Model& model = sim_.nominal().pinocchio();
  const double dt = sim_.mujoco()->opt.timestep;
  sim::Reference ref;
  try {
    ref = sim::stanceReference(sim_.nominal(), sim_.contactNames(), sim_.options().contact_radius,
                               d.motion, d.duration, dt);
  } catch (const SolveError& e) {
    d.why = std::string("the feet cannot stay planted: ") + e.what();
    return d;
  }
  // joint and torque limits of the commanded motion
  const int nu = sim_.nu();
  for (int j = 0; j < nu; ++j) {
    const int iq = model.nq - nu + j;
    const double lo = model.lowerPositionLimit[iq], hi = model.upperPositionLimit[iq];
    if (std::isfinite(lo) && std::isfinite(hi) && lo < hi &&
        (ref.q.row(iq).minCoeff() < lo || ref.q.row(iq).maxCoeff() > hi)) {
      d.why = "joint " + sim_.jointNames()[j] + " leaves its position limits";
      return d;
    }
  }
  d.max_feedforward_ratio = feedforwardRatio(model, ref);
  if (d.max_feedforward_ratio > options_.torque_fraction) {
    d.why = "the feed-forward needs " + num(100 * d.max_feedforward_ratio, 3) +
            " % of a joint's effort limit";
    return d;
  }
  // the commanded motion as a log: the PD's targets and the feed-forward
  ReplayData data;
  data.time = Eigen::VectorXd::LinSpaced(ref.samples(), 0, (ref.samples() - 1) * dt);
  data.q = ref.q;
  data.v = ref.v;
  data.tau = ref.tau;
  data.tau_cmd = ref.tau;
  // consecutive clips over the commands, each started from the commanded state
  const int first = static_cast<int>(std::lround(d.motion.settle / dt));
  const int last =
      static_cast<int>(std::lround((d.motion.settle + d.motion.commands.duration()) / dt));
  const int steps = std::max(1, static_cast<int>(std::lround(options_.clip_horizon / dt)));
  std::vector<Clip> clips;
  for (int start = first; start + steps <= last && start + steps < data.samples(); start += steps)
    clips.push_back({start, steps});
  // the stage-1 model follows the commands (no fall, no slip) before anything is differentiated:
  // the whole motion continuously, as the robot would play it, then clip by clip
  Rollout rollout(sim_, space_);
  rollout.apply(space_.candidate(x_hat_));
  const CostTerms whole = rollout.run(data, {0, data.samples() - 1}, replay_);
  d.max_tilt = whole.max_tilt;
  d.min_base_height = whole.min_base_height;
  if (!whole.finite || whole.max_tilt > options_.max_tilt ||
      whole.min_base_height < options_.min_base_height) {
    d.why = whole.finite ? "the robot would fall (tilt up to " + num(whole.max_tilt, 3) +
                               " rad, base down to " + num(whole.min_base_height, 3) + " m)"
                         : "the rollout of the whole motion diverged";
    return d;
  }
  Eigen::VectorXd residuals;
  const int per_step = rollout.residualSize();
  for (const Clip& clip : clips) {
    if (!rollout.run(data, clip, replay_, &residuals).finite) {
      d.why = "the rollout diverged";
      return d;
    }
    for (int k = 0; k < clip.steps; ++k) {
      if (residuals.segment<3>(static_cast<Eigen::Index>(k) * per_step).norm() >
          options_.max_base_deviation) {
        d.why = "the base strays more than " + num(options_.max_base_deviation) +
                " m from the commanded motion";
        return d;
      }
    }
  }
  d.information = rolloutInformation(sim_, space_, data, clips, replay_, x_hat_, options_.step,
                                     channel_sigma_, options_.torque_offsets);
  if (!d.information.ok) {
    d.why = "a perturbed rollout diverged";
    return d;
  }
  d.feasible = true;
  const double criterion = criterionValue(options_.criterion, d.information);
  d.criterion = criterion + std::abs(criterion) * outside;
  return d;
}

CommandDesign CommandExperiment::randomDesign(std::uint64_t seed, int tries, int* draws) const {
  sim::Rng rng(seed, 7);
  CommandDesign d;
  if (draws) *draws = 0;
  for (int t = 0; t < std::max(1, tries); ++t) {
    Eigen::VectorXd z(dimension());
    for (Eigen::Index i = 0; i < z.size(); ++i) z[i] = rng.uniform(-1, 1);
    d = evaluate(z);
    if (draws) ++*draws;
    if (d.feasible) break;
  }
  return d;
}

std::string toString(ExplorationSummary::Status status) {
  switch (status) {
    case ExplorationSummary::Status::NotRun:
      return "not_run";
    case ExplorationSummary::Status::Designed:
      return "designed";
    case ExplorationSummary::Status::Failed:
      return "failed";
  }
  return "?";
}

ExplorationSummary designCommands(const CommandExperiment& experiment, const Eigen::VectorXd& z0) {
  const auto start_time = std::chrono::steady_clock::now();
  const ExplorationOptions& options = experiment.options();
  ExplorationSummary summary;
  std::atomic<long> designs{0}, infeasible{0};
  Eigen::VectorXd start = z0;
  if (start.size() == 0) {
    int draws = 0;
    const CommandDesign first = experiment.randomDesign(options.optimizer.seed, 20, &draws);
    start = first.z;
    designs += draws;
    infeasible += draws - (first.feasible ? 1 : 0);
  }
  require(start.size() == experiment.dimension(), "z0",
          std::to_string(experiment.dimension()) + " entries", std::to_string(start.size()));
  const int threads = threadCount(options.threads);
  const excite::BatchObjective objective = [&](const Eigen::MatrixXd& X, Eigen::VectorXd& costs) {
    forEachItem(static_cast<int>(X.cols()), threads, [&](int, int k) {
      const CommandDesign d = experiment.evaluate(X.col(k));
      costs[k] = d.criterion;
      ++designs;
      if (!d.feasible) ++infeasible;
    });
  };
  summary.optimizer = excite::cmaesBatch(objective, start, options.optimizer);
  summary.best = experiment.evaluate(summary.optimizer.best_x);
  summary.designs = designs + 1;
  summary.infeasible = infeasible + (summary.best.feasible ? 0 : 1);
  if (summary.best.feasible) {
    summary.status = ExplorationSummary::Status::Designed;
    summary.message = summary.optimizer.message;
  } else {
    summary.status = ExplorationSummary::Status::Failed;
    summary.message = "no feasible command design: " + summary.best.why;
  }
  summary.seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start_time).count();
  return summary;
}

std::string ExplorationSummary::report() const {
  std::ostringstream s;
  s << "active exploration: " << toString(status) << (message.empty() ? "" : " (" + message + ")")
    << "\n";
  s << "  " << optimizer.iterations << " generations, " << designs << " designs (" << infeasible
    << " infeasible), " << num(seconds, 3) << " s\n";
  if (best.feasible) {
    s << "  criterion " << num(optimizer.initial_cost) << " at the start design -> "
      << num(best.criterion) << "; information rank " << best.information.rank << " of "
      << best.information.information.rows() << "; feed-forward up to "
      << num(100 * best.max_feedforward_ratio, 3) << " % of the effort limits\n";
  }
  return s.str();
}

}  // namespace heft::sampling
