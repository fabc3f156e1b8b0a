#include "heft/jobs/estimate_job.hpp"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <iomanip>
#include <limits>
#include <optional>
#include <ostream>
#include <set>
#include <sstream>
#include <tuple>

#include <pinocchio/algorithm/joint-configuration.hpp>
#include <pinocchio/spatial.hpp>

#include "heft/common/error.hpp"
#include "heft/common/format.hpp"
#include "heft/estimation/log_solution.hpp"
#include "heft/estimation/segments.hpp"
#include "heft/inertia/inertia.hpp"
#include "heft/io/atomic_file.hpp"
#include "heft/io/log_io.hpp"
#include "heft/io/signal.hpp"
#include "heft/io/validation.hpp"
#include "heft/results/json.hpp"
#include "locked_joints.hpp"
#include "result_files.hpp"
#include "yaml_section.hpp"

namespace heft::jobs {

using namespace heft::estimation;

namespace fs = std::filesystem;

void EstimateJob::Config::validate() const {
  require(!robot.empty(), source + ": robot", "a robot short name or model path", "nothing");
  require(!log.empty(), source + ": log", "a log path", "nothing");
  if (start_time)
    require(std::isfinite(*start_time), source + ": window.start_time", "a finite time [s]",
            formatNumber(*start_time));
  if (knots) require(*knots >= 1, source + ": window.knots", ">= 1", std::to_string(*knots));
  if (kappa_start)
    require(problem.contact_source == ContactSource::Implicit && *kappa_start > 0,
            source + ": contacts.kappa_start", "a kappa > 0 with contacts.source implicit",
            formatNumber(*kappa_start) + " with source " + toString(problem.contact_source));
  require(std::isfinite(smoothing.torque_std) && smoothing.torque_std > 0,
          source + ": initial_guess.torque_std", "a value > 0 [N m]",
          formatNumber(smoothing.torque_std));
  require(smoothing.max_iterations >= 1, source + ": initial_guess.max_iterations", ">= 1",
          std::to_string(smoothing.max_iterations));
  LogProblemOptions p = problem;  // the window's two fields are the job's to set
  p.first_sample = 0;
  p.knots = 1;
  try {
    p.validate();
    solver.validate();
  } catch (const InputError& e) {
    throw InputError(source + ": " + e.what());
  }
}

// ---- config -------------------------------------------------------------------------------------

namespace {

struct Section : yaml::YamlSection {
  Section(const YAML::Node& node, std::string path, const std::string& source)
      : yaml::YamlSection(node, std::move(path), source, "docs/guide/estimate.md") {}
};
using yaml::located;

// The `prior:` section: the joint-side terms' priors, with identify's keys.
void readActuatorPrior(const YAML::Node& node, const std::string& source, ActuatorTermsOptions& a) {
  Section s(node, "prior", source);
  s.read("friction_coulomb", a.friction_coulomb, yaml::positive);
  s.read("friction_viscous", a.friction_viscous, yaml::positive);
  s.read("friction_log_std", a.friction_log_std, yaml::positive);
  s.read("armature_median", a.armature_median, yaml::positive);
  s.read("armature_log_std", a.armature_log_std, yaml::positive);
  s.read("torque_offset_mean", a.torque_offset_mean, yaml::finite);
  s.read("torque_offset_std", a.torque_offset_std, yaml::positive);
  s.finish();
}

}  // namespace

EstimateJob::Config EstimateJob::parse(const std::string& yaml_text, const std::string& source,
                                       const std::string& base_dir) {
  const YAML::Node root =
      yaml::loadYamlMapping(yaml_text, source, "robot, log, estimate, window, noise, solver, ...");
  Config config;
  config.source = source;

  Section top(root, "", source);
  std::tie(config.robot, config.log, config.more_logs) =
      yaml::readRobotAndLogs(top, root, base_dir);
  config.locked_joints = yaml::readLockedJoints(top);
  if (top.has("base")) {
    config.base = located(top, "base", model::parseBaseType);
  }
  LogProblemOptions& p = config.problem;
  {
    Section s(top.raw("estimate"), "estimate", source);
    if (!s.has("bodies"))
      s.fail(top.raw("estimate"), "estimate.bodies", "missing (a list of body names)");
    const YAML::Node n = s.raw("bodies");
    try {
      p.identified_bodies = n.as<std::vector<std::string>>();
    } catch (const YAML::Exception&) {
      s.fail(n, "estimate.bodies", "expected a list of body names");
    }
    if (p.identified_bodies.empty()) s.fail(n, "estimate.bodies", "expected at least one body");
    if (s.has("parametrization"))
      p.parametrization = located(s, "parametrization", inertia::parseParametrization);
    if (s.has("dynamics")) p.dynamics = located(s, "dynamics", parseDynamicsFormulation);
    s.read("prior_std", p.theta_prior_std, [](double x) {
      if (!(x > 0))
        throw InputError("expected a value > 0 (.inf: no prior), got " + formatNumber(x));
    });
    config.friction_joints = s.namesOrBool("friction");
    config.armature_joints = s.namesOrBool("armature");
    config.torque_offset_joints = s.namesOrBool("torque_offsets");
    s.read("coulomb_rate", p.actuators.coulomb_rate, yaml::positive);
    s.finish();
  }
  readActuatorPrior(top.raw("prior"), source, p.actuators);
  {
    Section s(top.raw("window"), "window", source);
    s.read("start_time", config.start_time, yaml::finite);
    s.read("knots", config.knots, yaml::positiveCount);
    s.read("stride", p.stride, yaml::positiveCount);
    config.exclude = s.timeRanges("exclude");
    s.read("min_knots", config.min_segment_knots, yaml::positiveCount);
    s.finish();
  }
  {
    Section s(top.raw("measurements"), "measurements", source);
    s.read("joint_velocities", p.use_logged_velocity);
    s.read("imu", p.use_imu);
    s.read("accelerometer", p.use_accelerometer);
    s.read("mocap", p.use_mocap);
    s.read("energy", p.use_energy);
    if (s.has("loss")) p.loss = located(s, "loss", parseRobustLoss);
    s.read("loss_scale", p.loss_scale, yaml::positive);
    s.finish();
  }
  {
    Section s(top.raw("noise"), "noise", source);
    const std::pair<const char*, double*> stds[] = {
        {"torque", &p.torque_std},
        {"base_force", &p.base_force_std},
        {"base_moment", &p.base_moment_std},
        {"configuration", &p.configuration_std},
        {"contact_configuration_rate", &p.contact_configuration_rate_std},
        {"encoder", &p.encoder_std},
        {"joint_velocity", &p.velocity_std},
        {"gyro", &p.gyro_std},
        {"imu_orientation", &p.imu_orientation_std},
        {"accelerometer", &p.accelerometer_std},
        {"mocap_position", &p.mocap_position_std},
        {"mocap_orientation", &p.mocap_orientation_std},
        {"energy", &p.energy_std},
        {"base_state_position", &p.base_state_position_std},
        {"base_state_orientation", &p.base_state_orientation_std},
        {"stiction_torque", &p.stiction_torque_std}};
    for (const auto& [key, value] : stds) s.read(key, *value, yaml::positive);
    s.read("stiction_speed", p.stiction_speed, yaml::nonNegative);
    s.read("projected", p.project_process_noise);
    s.finish();
  }
  {
    Section s(top.raw("contacts"), "contacts", source);
    if (s.has("source")) p.contact_source = located(s, "source", parseContactSource);
    s.read("height", p.contact_detection.height, yaml::positive);
    s.read("speed", p.contact_detection.speed, yaml::positive);
    s.read("ground_height", p.contact_detection.ground_height, yaml::finite);
    s.read("impulses", p.touchdown_impulses);
    s.read("transition_window", p.transition_window, yaml::nonNegative);
    s.read("transition_noise_scale", p.transition_noise_scale, yaml::positive);
    s.read("damping", p.contact_damping, yaml::nonNegative);
    p.contact_points = yaml::readContactPoints(s, "points");
    s.read("kappa", p.implicit.kappa, yaml::positive);
    s.read("friction_coefficient", p.implicit.friction_coefficient, yaml::positive);
    s.read("compliance", p.implicit.compliance, yaml::nonNegative);
    s.read("radius", config.contact_radius, yaml::nonNegative);
    s.read("force_threshold", config.contact_force_threshold, yaml::nonNegative);
    if (s.has("kappa_start")) {
      double kappa_start = 0;
      s.read("kappa_start", kappa_start, yaml::positive);
      config.kappa_start = kappa_start;
    }
    s.read("continuation_steps", config.continuation_steps, yaml::positiveCount);
    s.read("continuation_iterations", config.continuation_iterations, yaml::positiveCount);
    s.finish();
  }
  {
    Section s(top.raw("initial_guess"), "initial_guess", source);
    s.read("smoothing", config.smoothing.enabled);
    s.read("torque_std", config.smoothing.torque_std, yaml::positive);
    s.read("max_iterations", config.smoothing.max_iterations, yaml::positiveCount);
    s.finish();
  }
  {
    Section s(top.raw("constraints"), "constraints", source);
    s.read("total_mass", p.total_mass, yaml::positive);
    p.symmetric = s.namePairs("symmetric");
    for (const auto& [body, lower, upper] : s.namedIntervals("mass_bounds"))
      p.mass_bounds.push_back({body, lower, upper});
    s.finish();
  }
  {
    Section s(top.raw("solver"), "solver", source);
    RiccatiOptions& o = config.solver;
    if (s.has("rollout")) o.rollout = located(s, "rollout", parseRollout);
    s.read("max_iterations", o.max_iterations, yaml::nonNegativeCount);
    s.read("tolerance", o.tolerance, yaml::positive);
    s.read("gap_tolerance", o.gap_tolerance, yaml::positive);
    s.read("constraint_tolerance", o.constraint_tolerance, yaml::positive);
    s.read("equality_tolerance", o.equality_tolerance, yaml::positive);
    s.read("regularization", o.regularization, yaml::nonNegative);
    s.read("theta_trust_radius", o.theta_trust_radius, yaml::positive);
    if (s.has("theta_trust_update"))
      o.theta_trust_update = located(s, "theta_trust_update", parseThetaTrustUpdate);
    s.read("nonmonotone_memory", o.nonmonotone_memory, yaml::nonNegativeCount);
    s.read("parametrization_curvature", o.parametrization_curvature);
    s.read("nullspace_tolerance", o.nullspace_tolerance, [](double x) {
      if (!(x >= 0 && x < 1))
        throw InputError("expected a value in [0, 1), got " + formatNumber(x));
    });
    s.finish();
  }
  top.raw("robot");
  top.raw("log");
  top.raw("base");
  top.finish();
  config.validate();
  return config;
}

EstimateJob::Config EstimateJob::load(const std::string& path) {
  return parse(io::readTextFile(path), path, yaml::configFolder(path));
}

// ---- job ----------------------------------------------------------------------------------------

namespace {

std::string fixed(double x, int precision = 4) { return formatNumber(x, precision); }

// The parameters as the trajectory log's estimates group: one estimate for the whole window.
io::EstimateSeries estimatesGroup(const LogProblem& lp,
                                  const std::vector<results::BodyEstimate>& bodies) {
  io::EstimateSeries e;
  e.estimator = "riccati-map";
  e.time = Eigen::VectorXd::Constant(1, lp.time(0));
  const int nb = static_cast<int>(bodies.size());
  e.body_pi.resize(1, 10 * nb);
  e.body_pi_std.resize(1, 10 * nb);
  for (int b = 0; b < nb; ++b) {
    e.body_names.push_back(bodies[b].name);
    e.body_pi.block<1, 10>(0, 10 * b) = bodies[b].pi.transpose();
    e.body_pi_std.block<1, 10>(0, 10 * b) = bodies[b].pi_std.transpose();
  }
  return e;
}

// The config's joint lists resolved against the robot (`all`: every 1-dof joint; the armature's
// `all`: the friction joints when there are some) and checked: a joint the model lacks is bad
// input naming the field.
ActuatorTermsOptions resolveActuators(const EstimateJob::Config& config,
                                      const model::RobotModel& robot) {
  ActuatorTermsOptions a = config.problem.actuators;
  const pinocchio::Model& m = robot.pinocchio();
  std::vector<std::string> all;
  for (pinocchio::JointIndex j = 1; j < m.joints.size(); ++j)
    if (m.joints[j].nv() == 1) all.push_back(m.names[j]);
  auto resolve = [](const std::optional<std::vector<std::string>>& list,
                    const std::vector<std::string>& every) {
    if (!list) return std::vector<std::string>();
    return list->empty() ? every : *list;
  };
  a.friction_joints = resolve(config.friction_joints, all);
  a.armature_joints =
      resolve(config.armature_joints, a.friction_joints.empty() ? all : a.friction_joints);
  a.torque_offset_joints = resolve(config.torque_offset_joints, all);
  try {
    const ActuatorTermsModel check(m, a);
  } catch (const InputError& e) {
    throw InputError(config.source + ": estimate." + e.what());
  }
  return a;
}

// d linear / d theta: the parametrization's d pi / d theta per body, then exp(theta) for the
// log-parametrized friction and armature, 1 for the offsets.
Eigen::MatrixXd linearJacobian(inertia::Parametrization parametrization,
                               const Eigen::VectorXd& theta, const ActuatorTermsModel* actuators) {
  const int n = static_cast<int>(theta.size());
  const int na = actuators ? actuators->numParameters() : 0, ns = n - na;
  Eigen::MatrixXd J = Eigen::MatrixXd::Zero(n, n);
  J.topLeftCorner(ns, ns) = inertia::stackedJacobian(parametrization, theta.head(ns));
  for (int i = 0; i < na; ++i)
    J(ns + i, ns + i) = i < actuators->offsetStart() ? std::exp(theta(ns + i)) : 1.0;
  return J;
}

// The joint-side terms of `linear` (layout order) with their standard deviations and priors.
void actuatorEstimates(const ActuatorTermsModel& act, int ns, EstimateJob::Result& result) {
  const ActuatorTermsOptions& o = act.options();
  auto sd = [&](int i) { return std::sqrt(std::max(result.covariance(ns + i, ns + i), 0.0)); };
  for (int f = 0; f < act.numFriction(); ++f) {
    results::JointFrictionEstimate e;
    e.joint = o.friction_joints[f];
    e.coulomb = result.linear(ns + 2 * f);
    e.viscous = result.linear(ns + 2 * f + 1);
    e.coulomb_std = sd(2 * f);
    e.viscous_std = sd(2 * f + 1);
    e.coulomb_prior = o.friction_coulomb;
    e.viscous_prior = o.friction_viscous;
    result.friction.push_back(e);
  }
  for (int k = 0; k < act.numArmature(); ++k) {
    const int i = act.armatureStart() + k;
    result.armature.push_back(
        {o.armature_joints[k], result.linear(ns + i), sd(i), o.armature_median});
  }
  for (int k = 0; k < act.numTorqueOffsets(); ++k) {
    const int i = act.offsetStart() + k;
    result.torque_offsets.push_back(
        {o.torque_offset_joints[k], result.linear(ns + i), sd(i), o.torque_offset_mean});
  }
}

// One stretch of one log: the window of LogProblemOptions (first_sample, knots) on `log`.
struct Segment {
  const io::Log* log = nullptr;
  std::string path;
  LogProblemOptions options;
};

// The segments' problems at one kappa (contact-implicit; otherwise as configured), joined into one
// with a shared theta, and the joined initial guess.
struct SegmentProblems {
  std::vector<LogProblem> parts;
  JoinedProblem joined;
  std::vector<Eigen::VectorXd> xs, ws;
};

// `trajectories`: null, or each segment's initial trajectory (from the smoothing pass).
SegmentProblems buildSegments(
    const model::RobotModel& robot, const std::vector<Segment>& segments,
    std::optional<double> kappa = std::nullopt,
    const std::vector<std::vector<Eigen::VectorXd>>* trajectories = nullptr) {
  SegmentProblems built;
  std::vector<std::shared_ptr<const Problem>> problems;
  std::vector<std::vector<Eigen::VectorXd>> xs, ws;
  for (std::size_t j = 0; j < segments.size(); ++j) {
    const Segment& segment = segments[j];
    LogProblemOptions options = segment.options;
    if (kappa) options.implicit.kappa = *kappa;
    try {
      built.parts.push_back(trajectories
                                ? buildLogProblem(robot, *segment.log, options, (*trajectories)[j])
                                : buildLogProblem(robot, *segment.log, options));
    } catch (const InputError& e) {
      if (segments.size() == 1) throw;
      throw InputError(segment.path + " (the segment from t = " +
                       formatNumber(segment.log->joints.time(options.first_sample), 4) +
                       " s): " + e.what());
    }
    problems.push_back(built.parts.back().problem);
    xs.push_back(built.parts.back().xs);
    ws.push_back(built.parts.back().ws);
  }
  built.joined = joinProblems(problems);
  joinGuesses(built.joined, xs, ws, built.xs, built.ws);
  return built;
}

// The smoothing pass (EstimateJob::Config::Smoothing): the trajectory alone, theta held at the
// prior; each segment's solution.
template <class Say>
std::vector<std::vector<Eigen::VectorXd>> smoothTrajectories(
    const EstimateJob::Config& config, const model::RobotModel& robot,
    const std::vector<Segment>& segments, const RiccatiOptions& solver_options,
    std::optional<RiccatiSummary>& summary_out, std::vector<std::string>& warnings, Say say) {
  std::vector<Segment> held = segments;
  for (Segment& segment : held)
    segment.options = smoothingPassOptions(segment.options, config.smoothing.torque_std);
  const SegmentProblems built = buildSegments(robot, held);
  RiccatiOptions o = solver_options;
  o.max_iterations = config.smoothing.max_iterations;
  o.posterior_covariance = false;
  RiccatiSolver smoother(built.joined.problem, o);
  smoother.setInitialGuess(jointsAtRest(built.xs, robot.pinocchio()), built.ws,
                           built.parts.front().theta);
  const RiccatiSummary& summary = smoother.solve();
  summary_out = summary;
  say("smoothing pass: " + toString(summary.status) + " after " +
      std::to_string(summary.iterations) + " iteration(s), cost " + formatNumber(summary.cost));
  std::vector<std::vector<Eigen::VectorXd>> out;
  for (int j = 0; j < built.joined.layout.size(); ++j)
    out.push_back(segmentStates(built.joined.layout, j, smoother.xs()));
  const bool finite = std::all_of(smoother.xs().begin(), smoother.xs().end(),
                                  [](const Eigen::VectorXd& x) { return x.allFinite(); });
  if (summary.status != RiccatiSummary::Status::NumericalFailure && finite) return out;
  // a failed pass must not fail the estimate (nor read as bad input): start from the encoders
  warnings.push_back("the smoothing pass failed (" + toString(summary.status) +
                     "): the solve started from the encoders' differences instead");
  return {};
}

// Contact-implicit kappa continuation: solves at kappa_start and kappa raised geometrically
// towards the target, each from the last one's solution, which then starts `solver` (the target's).
template <class Say>
void continueKappa(const EstimateJob::Config& config, const model::RobotModel& robot,
                   const std::vector<Segment>& segments, const SegmentProblems& target,
                   const RiccatiOptions& solver_options, RiccatiSolver& solver, Say say) {
  std::vector<Eigen::VectorXd> xs = target.xs, ws = target.ws;
  Eigen::VectorXd theta = target.parts.front().theta;
  const double kappa = config.problem.implicit.kappa;
  const double ratio = kappa / *config.kappa_start;
  for (int i = 0; i < config.continuation_steps; ++i) {
    const double step_kappa =
        *config.kappa_start * std::pow(ratio, static_cast<double>(i) / config.continuation_steps);
    const SegmentProblems step = buildSegments(robot, segments, step_kappa);
    RiccatiOptions o = solver_options;
    o.max_iterations = config.continuation_iterations;
    o.posterior_covariance = false;
    RiccatiSolver continuation(step.joined.problem, o);
    continuation.setInitialGuess(xs, ws, theta);
    const RiccatiSummary& summary = continuation.solve();
    say("kappa " + formatNumber(step_kappa) + ": " + toString(summary.status) + " after " +
        std::to_string(summary.iterations) + " iteration(s), cost " + formatNumber(summary.cost));
    xs = continuation.xs();
    ws = continuation.ws();
    theta = continuation.theta();
  }
  solver.setInitialGuess(xs, ws, theta);
}

// The contact forces the solution's stages applied (floating base): into the window's trajectory
// log, and against the truth per point and, where frames hold several points, per frame.
void contactForceResults(const LogProblem& lp, const std::vector<Eigen::VectorXd>& xs,
                         const std::vector<Eigen::VectorXd>& ws, const Eigen::VectorXd& theta,
                         const io::Log& log, double threshold, EstimateJob::Window& window,
                         std::vector<std::string>& warnings) {
  const ContactForces forces = reconstructContactForces(lp, xs, ws, theta);
  if (forces.names.empty()) return;  // no contact anywhere (a fixed base)
  addContactForces(window.trajectory, lp, xs, forces, threshold);
  window.contact_force_errors =
      results::contactForceErrors(log, lp.time, forces.names, forces.force, threshold);
  window.unconverged_contact_steps = forces.unconverged;
  const ContactForces per_frame = forcesPerFrame(lp, xs, forces);
  if (per_frame.names.size() < forces.names.size())
    window.contact_force_errors_per_frame =
        results::contactForceErrors(log, lp.time, per_frame.names, per_frame.force, threshold);
  if (forces.unconverged > 0)
    warnings.push_back(std::to_string(forces.unconverged) +
                       " contact step(s) at the solution did not converge: their forces are the "
                       "Newton solve's last iterate");
}

// The window of every log (start_time, knots) cut at the excluded ranges into runs of steps none
// of whose samples is excluded; runs shorter than min_segment_knots are dropped with a warning.
std::vector<Segment> planSegments(const EstimateJob::Config& config,
                                  const std::vector<const io::Log*>& logs,
                                  const std::vector<std::string>& paths,
                                  const LogProblemOptions& options,
                                  std::vector<std::string>& warnings) {
  std::vector<Segment> segments;
  const int stride = options.stride;
  for (std::size_t i = 0; i < logs.size(); ++i) {
    const Eigen::VectorXd& time = logs[i]->joints.time;
    const std::string& path = paths[i];
    require(time.size() >= 2, path + ": joints/time", "at least 2 samples",
            std::to_string(time.size()));
    int first = 0;
    if (config.start_time) {
      require(*config.start_time >= time(0) && *config.start_time <= time(time.size() - 1),
              config.source + ": window.start_time",
              "a time within the log's joints/time [" + fixed(time(0)) + ", " +
                  fixed(time(time.size() - 1)) + "] s" +
                  (logs.size() > 1 ? " (of every log; " + path + "'s)" : ""),
              fixed(*config.start_time));
      first = io::nearestSample(time, *config.start_time);
    }
    const int available = (static_cast<int>(time.size()) - 1 - first) / stride;
    const int knots = config.knots.value_or(available);
    require(knots >= 1 && knots <= available, config.source + ": window.knots",
            "between 1 and " + std::to_string(available) +
                " (the log's samples after start_time, divided by the stride" +
                (logs.size() > 1 ? ", in " + path : "") + ")",
            std::to_string(knots));
    auto excluded = [&](int sample) {
      const double t = time(sample) - time(0);
      for (const auto& [a, b] : config.exclude)
        if (t >= a && t <= b) return true;
      return false;
    };
    // step k uses samples first + k stride .. first + (k + 1) stride
    int run_start = -1;
    auto close = [&](int end_step) {  // steps run_start .. end_step - 1
      if (run_start < 0) return;
      const int n = end_step - run_start;
      const int sample = first + run_start * stride;
      // a window shorter than min_knots is the user's choice; a stretch between ranges is not
      if (n >= config.min_segment_knots || config.exclude.empty()) {
        Segment segment{logs[i], path, options};
        segment.options.first_sample = sample;
        segment.options.knots = n;
        segments.push_back(segment);
      } else {
        warnings.push_back(path + ": " + std::to_string(n) +
                           " step(s) from t = " + fixed(time(sample)) +
                           " s between excluded ranges dropped (fewer than "
                           "window.min_knots = " +
                           std::to_string(config.min_segment_knots) + ")");
      }
      run_start = -1;
    };
    // each sample once (a step shares its last sample with the next step's first)
    std::vector<char> sample_excluded(static_cast<std::size_t>(knots * stride + 1));
    for (int s = 0; s <= knots * stride; ++s) sample_excluded[s] = excluded(first + s);
    for (int k = 0; k < knots; ++k) {
      const auto begin = sample_excluded.begin() + k * stride;
      const bool usable = std::none_of(begin, begin + stride + 1, [](char e) { return e != 0; });
      if (usable && run_start < 0) run_start = k;
      if (!usable) close(k);
    }
    close(knots);
  }
  require(!segments.empty(), config.source + ": window.exclude",
          "ranges that leave at least one stretch of window.min_knots steps",
          "every stretch excluded or too short");
  return segments;
}

// pi and its covariance by the delta method through d pi / d theta (the nullspace directions,
// if any, are excluded from Sigma_theta and named in a warning), the joint-side terms, and the
// solver's warnings: from result.theta and result.theta_covariance.
void estimateParameters(const model::RobotModel& robot, const LogProblem& lp,
                        const LogProblemOptions& options, EstimateJob::Result& result) {
  const int nb = static_cast<int>(lp.identified.size()), ns = 10 * nb;
  const Eigen::MatrixXd J =
      linearJacobian(options.parametrization, result.theta, lp.actuators.get());
  const Eigen::MatrixXd J0 = inertia::stackedJacobian(options.parametrization, lp.theta.head(ns));
  const Eigen::MatrixXd prior_cov =
      std::isfinite(options.theta_prior_std)
          ? Eigen::MatrixXd(J0 * J0.transpose() * std::pow(options.theta_prior_std, 2))
          : Eigen::MatrixXd::Constant(J0.rows(), J0.cols(),
                                      std::numeric_limits<double>::infinity());  // no prior
  result.covariance = J * result.theta_covariance * J.transpose();
  result.linear.resize(result.theta.size());
  results::ParameterLayout layout;
  for (int b = 0; b < nb; ++b) {
    const std::string& name = robot.body(lp.identified[b]).name;
    layout.body_names.push_back(name);
    layout.bodies.push_back(lp.identified[b]);
    Vector10 pi = inertia::piFromTheta(options.parametrization, result.theta.segment<10>(10 * b));
    const Vector10 prior_pi = robot.pi(lp.identified[b]);
    // consistent by construction, but theta can run towards the boundary (an exponent to -inf)
    results::moveInsideMargin(name, pi, prior_pi, result.warnings);
    result.linear.segment<10>(10 * b) = pi;
    result.bodies.push_back(results::makeBodyEstimate(
        name, prior_pi, prior_cov.block<10, 10>(10 * b, 10 * b).diagonal().cwiseSqrt(), pi,
        result.covariance.block(10 * b, 10 * b, 10, 10)));
    if (!result.bodies.back().consistent)
      result.warnings.push_back("body " + name +
                                ": the estimate is not physically consistent (should not happen: "
                                "every iterate of theta maps to a consistent pi)");
  }
  results::appendNearBoundaryWarnings(result.bodies, result.warnings);
  if (lp.actuators) {
    const ActuatorTermsOptions& a = lp.actuators->options();
    // friction and armature are exp(theta), the offsets theta itself
    for (int i = 0; i < lp.actuators->numParameters(); ++i)
      result.linear(ns + i) =
          i < lp.actuators->offsetStart() ? std::exp(result.theta(ns + i)) : result.theta(ns + i);
    layout.friction_joints = a.friction_joints;
    layout.armature_joints = a.armature_joints;
    layout.torque_offset_joints = a.torque_offset_joints;
    actuatorEstimates(*lp.actuators, ns, result);
  }
  result.names = layout.linearNames();
  if (result.summary.nullspace_dimension > 0)
    result.warnings.push_back(std::to_string(result.summary.nullspace_dimension) +
                              " direction(s) of theta the data and the prior do not determine: "
                              "left at their initial values, excluded from the covariance");
  if (result.summary.status == RiccatiSummary::Status::MaxIterations) {
    std::string warning =
        "the solver stopped at the iteration limit: the estimate is the last accepted iterate, "
        "not a converged one (max gap " +
        fixed(result.summary.max_gap, 2) + ")";
    // The trust radius shortening every late theta step is Gauss-Newton's model of theta failing
    // (docs/estimation.md, "Curvature of the parametrization").
    const std::vector<int>& limited = result.summary.theta_limited_history;
    if (limited.size() >= 10 && !result.config.solver.parametrization_curvature &&
        std::all_of(limited.end() - 10, limited.end(), [](int cut) { return cut == 1; }))
      warning +=
          "; the theta trust region shortened each of the last 10 steps: "
          "`solver.parametrization_curvature: true` adds the curvature Gauss-Newton drops";
    result.warnings.push_back(warning);
  }
  if (options.hasParameterConstraints() &&
      result.summary.max_constraint_violation > result.config.solver.constraint_tolerance)
    result.warnings.push_back("the estimate violates the parameter constraints by up to " +
                              fixed(result.summary.max_constraint_violation, 2) +
                              " (kg, kg m, kg m^2; solver.constraint_tolerance " +
                              fixed(result.config.solver.constraint_tolerance, 2) +
                              "): the solver stopped before they held");
  if (result.summary.constraint_qp_failures > 0)
    result.warnings.push_back("the constraints' linearization had no common point at " +
                              std::to_string(result.summary.constraint_qp_failures) +
                              " iteration(s), whose steps ignored them");
}

}  // namespace

bool EstimateJob::Result::writable() const {
  using S = RiccatiSummary::Status;
  if (summary.status != S::Converged && summary.status != S::MaxIterations) return false;
  for (const results::BodyEstimate& b : bodies)
    if (!b.consistent) return false;
  return !bodies.empty();
}

int EstimateJob::Result::totalKnots() const {
  int n = 0;
  for (const Window& w : windows) n += w.knots;
  return n;
}

EstimateJob::Result EstimateJob::run(const Config& config, Progress& progress) {
  config.validate();
  progress.start();
  auto say = [&](const std::string& line) { progress.say(line); };
  Result result;
  result.config = config;

  // The logs: the first, then the others that share the parameters.
  std::vector<std::string> paths{config.log};
  paths.insert(paths.end(), config.more_logs.begin(), config.more_logs.end());
  const JobLogs read =
      readJobLogs(config.robot, config.base, config.locked_joints, paths, config.source, say);
  const model::RobotModel& robot = read.robot;
  const std::vector<io::Log>& logs = read.logs;
  std::vector<io::DataQualityReport> quality;
  for (std::size_t i = 0; i < paths.size(); ++i) {
    io::ValidationOptions validation;
    validation.unlogged_joints = model::loopJointNames(robot);
    io::requireValid(io::validateLog(logs[i], robot.pinocchio(), validation), paths[i]);
    quality.push_back(io::assessDataQuality(logs[i], robot.pinocchio()));
  }
  const std::vector<const io::Log*> log_pointers = read.pointers();

  LogProblemOptions options = config.problem;
  // the implicit step's floor: the ground plane, raised by the radius of sphere-shaped points
  options.implicit.ground_height = options.contact_detection.ground_height + config.contact_radius;
  for (const std::string& body : options.identified_bodies) {
    try {
      robot.bodyIndex(body);
    } catch (const InputError& e) {
      throw InputError(config.source + ": estimate.bodies: " + e.what());
    }
  }
  options.actuators = resolveActuators(config, robot);
  try {  // before any solve: contradictory constraints are bad input
    makeParameterConstraints(robot, options);
  } catch (const InputError& e) {
    throw InputError(config.source + ": constraints: " + e.what());
  }
  const std::vector<Segment> segments =
      planSegments(config, log_pointers, paths, options, result.warnings);
  int total_knots = 0;
  for (const Segment& segment : segments) total_knots += segment.options.knots;
  say("building the problem: " + std::to_string(segments.size()) + " segment(s), " +
      std::to_string(total_knots) + " knots from t = " +
      fixed(segments.front().log->joints.time(segments.front().options.first_sample)) +
      " s, stride " + std::to_string(options.stride));
  RiccatiOptions solver_options = config.solver;
  solver_options.progress = progress.stream();
  std::vector<std::vector<Eigen::VectorXd>> smoothed;
  if (config.smoothing.enabled)
    smoothed = smoothTrajectories(config, robot, segments, solver_options, result.smoothing,
                                  result.warnings, say);
  const SegmentProblems built =
      buildSegments(robot, segments, std::nullopt, smoothed.empty() ? nullptr : &smoothed);
  const LogProblem& lp = built.parts.front();  // what every segment shares: theta's layout
  RiccatiSolver solver(built.joined.problem, solver_options);
  solver.setInitialGuess(built.xs, built.ws, lp.theta);
  if (config.kappa_start)
    continueKappa(config, robot, segments, built, solver_options, solver, say);
  int contact_phases = 0;
  for (const LogProblem& part : built.parts) contact_phases += part.contact_phases;
  say("solving: " + std::to_string(built.joined.problem->horizon()) + " stages, " +
      std::to_string(built.joined.problem->np()) + " parameters, " +
      std::to_string(contact_phases) + " contact-set changes, rollout " +
      toString(solver_options.rollout));
  result.summary = solver.solve();
  say("done: " + toString(result.summary.status) +
      (result.summary.message.empty() ? "" : " (" + result.summary.message + ")"));

  result.robot = robot.displayName();
  result.log = config.log;
  result.scenario = logs.front().meta.scenario;
  result.parametrization = inertia::toString(options.parametrization);
  result.stride = options.stride;
  result.dt = lp.dt;
  result.contacts_implicit = lp.smoothed != nullptr;
  result.theta = solver.theta();
  result.theta_covariance = solver.thetaCovariance();
  estimateParameters(robot, lp, options, result);

  if (logs.front().truth && logs.front().truth->body_pi.rows() > 0) {
    results::ParameterLayout body_layout;  // truth errors: the bodies only
    for (std::size_t b = 0; b < lp.identified.size(); ++b) {
      body_layout.body_names.push_back(robot.body(lp.identified[b]).name);
      body_layout.bodies.push_back(lp.identified[b]);
    }
    try {
      result.truth = results::truthErrors(robot, logs.front(), body_layout,
                                          result.linear.head(10 * lp.identified.size()));
    } catch (const InputError& e) {
      result.warnings.push_back(std::string("no errors against the truth: ") + e.what());
    }
  }
  for (int j = 0; j < built.joined.layout.size(); ++j) {
    const LogProblem& part = built.parts[j];
    const io::Log& log = *segments[j].log;
    const std::vector<Eigen::VectorXd> xs = segmentStates(built.joined.layout, j, solver.xs());
    const std::vector<Eigen::VectorXd> ws = segmentDecisions(built.joined.layout, j, solver.ws());
    Window window;
    window.log = segments[j].path;
    window.knots = part.problem->horizon();
    window.contact_phases = part.contact_phases;
    window.touchdowns = part.touchdowns;
    window.contacts_detected = part.contacts_detected;
    window.start_time = part.time(0);
    window.end_time = part.time(part.time.size() - 1);
    window.trajectory_errors = trajectoryErrors(robot, log, part, xs);
    window.trajectory = trajectoryLog(robot, log, part, xs, ws);
    window.trajectory.estimates = estimatesGroup(part, result.bodies);
    try {  // the estimate stands without them: a failure here is a warning, never a lost result
      contactForceResults(part, xs, ws, result.theta, log, config.contact_force_threshold, window,
                          result.warnings);
    } catch (const std::exception& e) {
      result.warnings.push_back(std::string("contact forces not reconstructed: ") + e.what());
    }
    result.windows.push_back(std::move(window));
  }
  for (std::size_t i = 0; i < quality.size(); ++i) {
    std::vector<std::string> lines;
    appendDataQualityWarnings(quality[i], lines);
    for (const std::string& line : lines)
      result.warnings.push_back(i == 0 ? line : paths[i] + ": " + line);
  }
  result.data_quality = quality.front();
  result.time_s = progress.seconds();
  return result;
}

// ---- outputs ------------------------------------------------------------------------------------

std::string EstimateJob::Result::refusal() const {
  if (writable()) return "";
  return "the solve " + toString(summary.status) +
         (summary.message.empty() ? "" : " (" + summary.message + ")") +
         "; result.json and trajectory.h5 hold the last accepted iterate";
}

namespace {

std::string windowsReport(const EstimateJob::Result& r) {
  std::ostringstream s;
  for (std::size_t i = 0; i < r.windows.size(); ++i) {
    const EstimateJob::Window& w = r.windows[i];
    s << (i == 0 ? "window    " : "          ") << w.knots << " knots of " << fixed(r.dt, 3)
      << " s from t = " << fixed(w.start_time) << " s to " << fixed(w.end_time) << " s";
    if (r.windows.size() > 1) s << " of " << w.log;
    s << ", " << w.contact_phases << " contact-set changes (" << w.touchdowns
      << " touchdowns with an impulse; contacts "
      << (r.contacts_implicit   ? "implicit: smoothed contact dynamics, no schedule"
          : w.contacts_detected ? "detected kinematically"
                                : "from the log's flags")
      << ")\n";
  }
  return s.str();
}

// with_errors: the window's reconstruction errors too (the `windows` list; `window` has them at
// the estimation object's top)
nlohmann::json windowJson(const EstimateJob::Window& w, int stride, double dt, bool with_errors) {
  nlohmann::json j = {{"log", w.log},
                      {"start_time", w.start_time},
                      {"end_time", w.end_time},
                      {"knots", w.knots},
                      {"stride", stride},
                      {"dt", dt},
                      {"contact_phases", w.contact_phases},
                      {"touchdowns", w.touchdowns},
                      {"contacts_detected", w.contacts_detected}};
  if (!with_errors) return j;
  if (w.trajectory_errors)
    j["trajectory_errors"] = results::trajectoryErrorsJson(*w.trajectory_errors);
  if (w.contact_force_errors)
    j["contact_force_errors"] = results::contactForceErrorsJson(*w.contact_force_errors);
  if (w.contact_force_errors_per_frame)
    j["contact_force_errors_per_frame"] =
        results::contactForceErrorsJson(*w.contact_force_errors_per_frame);
  return j;
}

}  // namespace

namespace {

std::string constraintsText(const LogProblemOptions& p) {
  std::string text;
  auto add = [&](const std::string& part) { text += (text.empty() ? "" : ", ") + part; };
  if (p.total_mass > 0) add("total mass " + fixed(p.total_mass, 6) + " kg");
  for (const auto& [left, right] : p.symmetric) add(left + " = mirror(" + right + ")");
  for (const auto& b : p.mass_bounds)
    add("mass of " + b.body + " in [" + fixed(b.lower) + ", " + fixed(b.upper) + "] kg");
  return text;
}

}  // namespace

std::string EstimateJob::Result::report() const {
  std::ostringstream s;
  s << "method    riccati-map (" << parametrization << ", " << toString(config.problem.dynamics)
    << " dynamics)\n"
    << "status    " << toString(summary.status)
    << (summary.message.empty() ? "" : ": " + summary.message) << "\n"
    << windowsReport(*this);
  if (smoothing)
    s << "smoothing " << toString(smoothing->status) << " after " << smoothing->iterations
      << " iteration(s), cost " << fixed(smoothing->cost, 6) << " (trajectory alone, theta held)\n";
  if (config.problem.hasParameterConstraints())
    s << "constraints " << constraintsText(config.problem) << ": largest violation "
      << fixed(summary.max_constraint_violation, 2)
      << (summary.constraint_qp_failures > 0
              ? ", QP failed at " + std::to_string(summary.constraint_qp_failures) + " iteration(s)"
              : std::string())
      << "\n";
  s << "solver    " << summary.iterations << " iteration(s), cost " << fixed(summary.cost, 6)
    << ", max gap " << fixed(summary.max_gap, 2) << "; " << fixed(summary.total_seconds, 3)
    << " s (derivatives " << fixed(summary.derivative_seconds, 3) << ", backward "
    << fixed(summary.backward_seconds, 3) << ", forward " << fixed(summary.forward_seconds, 3)
    << "); job " << fixed(time_s, 3) << " s\n\n";
  s << results::bodiesReport(bodies);
  s << results::actuatorTermsReport(friction, armature, torque_offsets);
  if (truth) s << "\nerrors against the log's truth group\n" << truth->report();
  for (std::size_t i = 0; i < windows.size(); ++i) {
    const Window& w = windows[i];
    const std::string which =
        windows.size() > 1 ? " (window " + std::to_string(i + 1) + ")" : std::string();
    if (w.trajectory_errors)
      s << "\ntrajectory against the log's truth" << which << " (raw measurements in brackets)\n"
        << w.trajectory_errors->report();
    if (w.contact_force_errors)
      s << "\nreconstructed contact forces against the log's truth" << which << "\n"
        << w.contact_force_errors->report();
    if (w.contact_force_errors_per_frame)
      s << "per contact frame (each frame's points summed)\n"
        << w.contact_force_errors_per_frame->report();
  }
  if (!warnings.empty()) {
    s << "\nwarnings\n";
    for (const std::string& w : warnings) s << "  - " << w << "\n";
  }
  return s.str();
}

nlohmann::json EstimateJob::Result::toJson() const {
  nlohmann::json j;
  j["schema_version"] = results::kResultSchemaVersion;
  j["method"] = "riccati-map";
  j["robot"] = {{"name", config.robot}, {"base", model::toString(config.base)}};
  j["parameters"] = results::parametersJson(bodies);
  j["friction"] = results::frictionJson(friction);
  j["armature"] = results::armatureJson(armature);
  j["armature_std"] = results::armatureStdJson(armature);
  j["torque_offsets"] = results::torqueOffsetsJson(torque_offsets);
  j["covariance"] = {{"names", names}, {"matrix", results::jsonArray(covariance)}};
  j["summary"] = {{"status", toString(summary.status)},
                  {"message", summary.message},
                  {"iterations", summary.iterations},
                  {"time_s", time_s},
                  {"samples", totalKnots() + static_cast<int>(windows.size())}};
  j["warnings"] = warnings;
  if (truth) j["truth_errors"] = results::truthErrorsJson(*truth);
  if (data_quality) j["data_quality"] = results::dataQualityJson(*data_quality);
  nlohmann::json est;
  est["parametrization"] = parametrization;
  est["dynamics"] = toString(config.problem.dynamics);
  est["projected_noise"] = config.problem.project_process_noise;
  est["window"] = windowJson(windows.front(), stride, dt, false);
  est["windows"] = nlohmann::json::array();
  for (const Window& w : windows) est["windows"].push_back(windowJson(w, stride, dt, true));
  est["theta"] = results::jsonArray(theta);
  est["theta_covariance"] = results::jsonArray(theta_covariance);
  est["solver"] = {{"cost", summary.cost},
                   {"max_gap", summary.max_gap},
                   {"nullspace_dimension", summary.nullspace_dimension},
                   {"max_equality_violation", summary.max_equality_violation},
                   {"cost_history", summary.cost_history},
                   {"gap_history", summary.gap_history},
                   {"step_history", summary.step_history},
                   {"theta_radius_history", summary.theta_radius_history},
                   {"seconds",
                    {{"derivatives", summary.derivative_seconds},
                     {"backward", summary.backward_seconds},
                     {"forward", summary.forward_seconds},
                     {"total", summary.total_seconds}}}};
  if (config.problem.hasParameterConstraints()) {
    nlohmann::json bounds = nlohmann::json::object();
    for (const auto& b : config.problem.mass_bounds)
      bounds[b.body] = {results::finiteOrNull(b.lower), results::finiteOrNull(b.upper)};
    est["parameter_constraints"] = {
        {"total_mass", config.problem.total_mass > 0 ? nlohmann::json(config.problem.total_mass)
                                                     : nlohmann::json()},
        {"symmetric", config.problem.symmetric},
        {"mass_bounds", bounds},
        {"max_violation", summary.max_constraint_violation},
        {"qp_failures", summary.constraint_qp_failures}};
  }
  if (smoothing)
    est["smoothing"] = {{"status", toString(smoothing->status)},
                        {"iterations", smoothing->iterations},
                        {"cost", smoothing->cost},
                        {"torque_std", config.smoothing.torque_std}};
  // the first window's reconstruction at the top (each window's in `windows`)
  const Window& first = windows.front();
  if (first.trajectory_errors)
    est["trajectory_errors"] = results::trajectoryErrorsJson(*first.trajectory_errors);
  est["contacts_implicit"] = contacts_implicit;
  if (contacts_implicit) est["unconverged_contact_steps"] = first.unconverged_contact_steps;
  if (first.contact_force_errors)
    est["contact_force_errors"] = results::contactForceErrorsJson(*first.contact_force_errors);
  if (first.contact_force_errors_per_frame)
    est["contact_force_errors_per_frame"] =
        results::contactForceErrorsJson(*first.contact_force_errors_per_frame);
  j["estimation"] = est;
  return j;
}

std::string EstimateJob::trajectoryFileName(int i) {
  return i == 0 ? "trajectory.h5" : "trajectory_" + std::to_string(i + 1) + ".h5";
}

std::vector<std::string> EstimateJob::write(const Result& result, const std::string& out_dir,
                                            const WriteOptions& options) {
  std::vector<std::string> names{"result.json", "robot.urdf"};
  for (std::size_t i = 0; i < result.windows.size(); ++i)
    names.push_back(trajectoryFileName(static_cast<int>(i)));
  std::vector<std::string> inputs{result.config.log};
  inputs.insert(inputs.end(), result.config.more_logs.begin(), result.config.more_logs.end());
  const OutputFolder folder(out_dir, names, inputs, options);
  const std::string json_out = folder.path("result.json");
  const std::string urdf_out = folder.path("robot.urdf");
  std::vector<std::string> written;
  nlohmann::json json = result.toJson();
  const bool usable = result.summary.status == RiccatiSummary::Status::Converged ||
                      result.summary.status == RiccatiSummary::Status::MaxIterations;
  writeUrdf(json, result.config.robot, result.config.base, result.config.locked_joints,
            result.bodies, urdfRefusal(result.writable(), usable), urdf_out, options.overwrite,
            written);
  // A failed HDF5 write must not lose the estimate: its outcome is recorded in result.json, which
  // is written anyway, and the job then ends with exit 1.
  std::string trajectory_error;
  io::WriteOptions log_options;
  log_options.overwrite = options.overwrite;
  for (std::size_t i = 0; i < result.windows.size(); ++i) {
    const std::string log_out = folder.path(trajectoryFileName(static_cast<int>(i)));
    std::string why;
    const nlohmann::json status =
        writeLogRecorded(result.windows[i].trajectory, log_out, log_options, written, why);
    if (trajectory_error.empty()) trajectory_error = why;
    if (i == 0) json["trajectory"] = status;
    json["estimation"]["windows"][i]["trajectory"] = status;
  }
  io::writeTextFileAtomically(json_out, json.dump(2) + "\n", options.overwrite);
  written.push_back(json_out);
  throwIfUrdfRefused(json, json_out);
  if (!trajectory_error.empty())
    throw SolveError("no trajectory written: " + trajectory_error + " (" + json_out +
                     " holds the estimate)");
  return written;
}

}  // namespace heft::jobs
