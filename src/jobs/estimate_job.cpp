#include "heft/jobs/estimate_job.hpp"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <iomanip>
#include <limits>
#include <ostream>
#include <set>
#include <sstream>
#include <tuple>

#include <pinocchio/algorithm/joint-configuration.hpp>
#include <pinocchio/spatial.hpp>

#include "heft/common/error.hpp"
#include "heft/common/format.hpp"
#include "heft/estimation/log_solution.hpp"
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
  std::tie(config.robot, config.log) = yaml::readRobotAndLog(top, root, base_dir);
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
    s.finish();
  }
  {
    Section s(top.raw("measurements"), "measurements", source);
    s.read("joint_velocities", p.use_logged_velocity);
    s.read("imu", p.use_imu);
    s.read("accelerometer", p.use_accelerometer);
    s.read("mocap", p.use_mocap);
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
        {"base_state_position", &p.base_state_position_std},
        {"base_state_orientation", &p.base_state_orientation_std}};
    for (const auto& [key, value] : stds) s.read(key, *value, yaml::positive);
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
    Section s(top.raw("solver"), "solver", source);
    RiccatiOptions& o = config.solver;
    if (s.has("rollout")) o.rollout = located(s, "rollout", parseRollout);
    s.read("max_iterations", o.max_iterations, yaml::nonNegativeCount);
    s.read("tolerance", o.tolerance, yaml::positive);
    s.read("gap_tolerance", o.gap_tolerance, yaml::positive);
    s.read("regularization", o.regularization, yaml::nonNegative);
    s.read("theta_trust_radius", o.theta_trust_radius, yaml::positive);
    s.read("nonmonotone_memory", o.nonmonotone_memory, yaml::nonNegativeCount);
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

// Contact-implicit kappa continuation: solves at kappa_start and kappa raised geometrically
// towards the target, each from the last one's solution, which then starts `solver` (the target's).
template <class Say>
void continueKappa(const EstimateJob::Config& config, const model::RobotModel& robot,
                   const io::Log& log, const LogProblemOptions& options, const LogProblem& lp,
                   const RiccatiOptions& solver_options, RiccatiSolver& solver, Say say) {
  std::vector<Eigen::VectorXd> xs = lp.xs, ws = lp.ws;
  Eigen::VectorXd theta = lp.theta;
  const double ratio = options.implicit.kappa / *config.kappa_start;
  for (int i = 0; i < config.continuation_steps; ++i) {
    LogProblemOptions stage_options = options;
    stage_options.implicit.kappa =
        *config.kappa_start * std::pow(ratio, static_cast<double>(i) / config.continuation_steps);
    const LogProblem step = buildLogProblem(robot, log, stage_options);
    RiccatiOptions o = solver_options;
    o.max_iterations = config.continuation_iterations;
    o.posterior_covariance = false;
    RiccatiSolver continuation(step.problem, o);
    continuation.setInitialGuess(xs, ws, theta);
    const RiccatiSummary& summary = continuation.solve();
    say("kappa " + formatNumber(stage_options.implicit.kappa) + ": " + toString(summary.status) +
        " after " + std::to_string(summary.iterations) + " iteration(s), cost " +
        formatNumber(summary.cost));
    xs = continuation.xs();
    ws = continuation.ws();
    theta = continuation.theta();
  }
  solver.setInitialGuess(xs, ws, theta);
}

// The contact forces the solution's stages applied (floating base): into the trajectory log, and
// against the truth per point and, where frames hold several points, per frame.
void contactForceResults(const LogProblem& lp, const RiccatiSolver& solver, const io::Log& log,
                         double threshold, EstimateJob::Result& result) {
  result.contacts_implicit = lp.smoothed != nullptr;
  const ContactForces forces = reconstructContactForces(lp, solver.xs(), solver.ws(), result.theta);
  if (forces.names.empty()) return;  // no contact anywhere (a fixed base)
  addContactForces(result.trajectory, lp, solver.xs(), forces, threshold);
  result.contact_force_errors =
      results::contactForceErrors(log, lp.time, forces.names, forces.force, threshold);
  result.unconverged_contact_steps = forces.unconverged;
  const ContactForces per_frame = forcesPerFrame(lp, solver.xs(), forces);
  if (per_frame.names.size() < forces.names.size())
    result.contact_force_errors_per_frame =
        results::contactForceErrors(log, lp.time, per_frame.names, per_frame.force, threshold);
  if (forces.unconverged > 0)
    result.warnings.push_back(std::to_string(forces.unconverged) +
                              " contact step(s) at the solution did not converge: their forces "
                              "are the Newton solve's last iterate");
}

}  // namespace

bool EstimateJob::Result::writable() const {
  using S = RiccatiSummary::Status;
  if (summary.status != S::Converged && summary.status != S::MaxIterations) return false;
  for (const results::BodyEstimate& b : bodies)
    if (!b.consistent) return false;
  return !bodies.empty();
}

EstimateJob::Result EstimateJob::run(const Config& config, Progress& progress) {
  config.validate();
  progress.start();
  auto say = [&](const std::string& line) { progress.say(line); };
  model::LoadOptions load;
  load.base = config.base;
  say("reading " + config.log);
  io::Log log = io::readLog(config.log);
  const model::RobotModel robot =
      robotForLog(model::loadRobot(config.robot, load), config.locked_joints, log, config.source);
  say("robot " + robot.displayName());
  io::requireValid(io::validateLog(log, robot.pinocchio()), config.log);
  const io::DataQualityReport data_quality = io::assessDataQuality(log, robot.pinocchio());

  // The window, in joint samples.
  LogProblemOptions options = config.problem;
  // the implicit step's floor: the ground plane, raised by the radius of sphere-shaped points
  options.implicit.ground_height = options.contact_detection.ground_height + config.contact_radius;
  const Eigen::VectorXd& time = log.joints.time;
  require(time.size() >= 2, config.log + ": joints/time", "at least 2 samples",
          std::to_string(time.size()));
  if (config.start_time) {
    require(*config.start_time >= time(0) && *config.start_time <= time(time.size() - 1),
            config.source + ": window.start_time",
            "a time within the log's joints/time [" + fixed(time(0)) + ", " +
                fixed(time(time.size() - 1)) + "] s",
            fixed(*config.start_time));
    options.first_sample = io::nearestSample(time, *config.start_time);
  }
  const int available = (static_cast<int>(time.size()) - 1 - options.first_sample) / options.stride;
  options.knots = config.knots.value_or(available);
  require(options.knots >= 1 && options.knots <= available, config.source + ": window.knots",
          "between 1 and " + std::to_string(available) +
              " (the log's samples after start_time, divided by the stride)",
          std::to_string(options.knots));
  for (const std::string& body : options.identified_bodies) {
    try {
      robot.bodyIndex(body);
    } catch (const InputError& e) {
      throw InputError(config.source + ": estimate.bodies: " + e.what());
    }
  }
  options.actuators = resolveActuators(config, robot);

  say("building the problem: " + std::to_string(options.knots) + " knots from t = " +
      fixed(time(options.first_sample)) + " s, stride " + std::to_string(options.stride));
  const LogProblem lp = buildLogProblem(robot, log, options);
  RiccatiOptions solver_options = config.solver;
  solver_options.progress = progress.stream();
  RiccatiSolver solver(lp.problem, solver_options);
  solver.setInitialGuess(lp.xs, lp.ws, lp.theta);
  if (config.kappa_start)
    continueKappa(config, robot, log, options, lp, solver_options, solver, say);
  say("solving: " + std::to_string(lp.problem->horizon()) + " stages, " +
      std::to_string(lp.problem->np()) + " parameters, " + std::to_string(lp.contact_phases) +
      " contact-set changes, rollout " + toString(solver_options.rollout));
  Result result;
  result.config = config;
  result.summary = solver.solve();
  say("done: " + toString(result.summary.status) +
      (result.summary.message.empty() ? "" : " (" + result.summary.message + ")"));

  result.robot = robot.displayName();
  result.log = config.log;
  result.scenario = log.meta.scenario;
  result.parametrization = inertia::toString(options.parametrization);
  result.knots = options.knots;
  result.stride = options.stride;
  result.contact_phases = lp.contact_phases;
  result.touchdowns = lp.touchdowns;
  result.contacts_detected = lp.contacts_detected;
  result.dt = lp.dt;
  result.start_time = lp.time(0);
  result.end_time = lp.time(lp.time.size() - 1);
  result.theta = solver.theta();
  result.theta_covariance = solver.thetaCovariance();

  // pi and its covariance by the delta method through d pi / d theta (the nullspace directions,
  // if any, are excluded from Sigma_theta and named in a warning).
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
  results::ParameterLayout body_layout = layout;  // truth errors: the bodies only
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
  if (result.summary.status == RiccatiSummary::Status::MaxIterations)
    result.warnings.push_back(
        "the solver stopped at the iteration limit: the estimate is the last accepted iterate, "
        "not a converged one (max gap " +
        fixed(result.summary.max_gap, 2) + ")");

  if (log.truth && log.truth->body_pi.rows() > 0) {
    try {
      result.truth = results::truthErrors(robot, log, body_layout, result.linear.head(ns));
    } catch (const InputError& e) {
      result.warnings.push_back(std::string("no errors against the truth: ") + e.what());
    }
  }
  result.trajectory_errors = trajectoryErrors(robot, log, lp, solver.xs());
  result.trajectory = trajectoryLog(robot, log, lp, solver.xs(), solver.ws());
  result.trajectory.estimates = estimatesGroup(lp, result.bodies);
  try {  // the estimate stands without them: a failure here is a warning, never a lost result
    contactForceResults(lp, solver, log, config.contact_force_threshold, result);
  } catch (const std::exception& e) {
    result.warnings.push_back(std::string("contact forces not reconstructed: ") + e.what());
  }
  appendDataQualityWarnings(data_quality, result.warnings);
  result.data_quality = data_quality;
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

std::string EstimateJob::Result::report() const {
  std::ostringstream s;
  s << "method    riccati-map (" << parametrization << ")\n"
    << "status    " << toString(summary.status)
    << (summary.message.empty() ? "" : ": " + summary.message) << "\n"
    << "window    " << knots << " knots of " << fixed(dt, 3) << " s from t = " << fixed(start_time)
    << " s to " << fixed(end_time) << " s, " << contact_phases << " contact-set changes ("
    << touchdowns << " touchdowns with an impulse; contacts "
    << (contacts_implicit   ? "implicit: smoothed contact dynamics, no schedule"
        : contacts_detected ? "detected kinematically"
                            : "from the log's flags")
    << ")\n"
    << "solver    " << summary.iterations << " iteration(s), cost " << fixed(summary.cost, 6)
    << ", max gap " << fixed(summary.max_gap, 2) << "; " << fixed(summary.total_seconds, 3)
    << " s (derivatives " << fixed(summary.derivative_seconds, 3) << ", backward "
    << fixed(summary.backward_seconds, 3) << ", forward " << fixed(summary.forward_seconds, 3)
    << "); job " << fixed(time_s, 3) << " s\n\n";
  s << results::bodiesReport(bodies);
  s << results::actuatorTermsReport(friction, armature, torque_offsets);
  if (truth) s << "\nerrors against the log's truth group\n" << truth->report();
  if (trajectory_errors)
    s << "\ntrajectory against the log's truth (raw measurements in brackets)\n"
      << trajectory_errors->report();
  if (contact_force_errors)
    s << "\nreconstructed contact forces against the log's truth\n"
      << contact_force_errors->report();
  if (contact_force_errors_per_frame)
    s << "per contact frame (each frame's points summed)\n"
      << contact_force_errors_per_frame->report();
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
                  {"samples", knots + 1}};
  j["warnings"] = warnings;
  if (truth) j["truth_errors"] = results::truthErrorsJson(*truth);
  if (data_quality) j["data_quality"] = results::dataQualityJson(*data_quality);
  nlohmann::json est;
  est["parametrization"] = parametrization;
  est["window"] = {{"start_time", start_time},
                   {"end_time", end_time},
                   {"knots", knots},
                   {"stride", stride},
                   {"dt", dt},
                   {"contact_phases", contact_phases},
                   {"touchdowns", touchdowns},
                   {"contacts_detected", contacts_detected}};
  est["theta"] = results::jsonArray(theta);
  est["theta_covariance"] = results::jsonArray(theta_covariance);
  est["solver"] = {{"cost", summary.cost},
                   {"max_gap", summary.max_gap},
                   {"nullspace_dimension", summary.nullspace_dimension},
                   {"cost_history", summary.cost_history},
                   {"gap_history", summary.gap_history},
                   {"step_history", summary.step_history},
                   {"seconds",
                    {{"derivatives", summary.derivative_seconds},
                     {"backward", summary.backward_seconds},
                     {"forward", summary.forward_seconds},
                     {"total", summary.total_seconds}}}};
  if (trajectory_errors)
    est["trajectory_errors"] = results::trajectoryErrorsJson(*trajectory_errors);
  est["contacts_implicit"] = contacts_implicit;
  if (contacts_implicit) est["unconverged_contact_steps"] = unconverged_contact_steps;
  if (contact_force_errors)
    est["contact_force_errors"] = results::contactForceErrorsJson(*contact_force_errors);
  if (contact_force_errors_per_frame)
    est["contact_force_errors_per_frame"] =
        results::contactForceErrorsJson(*contact_force_errors_per_frame);
  j["estimation"] = est;
  return j;
}

std::vector<std::string> EstimateJob::write(const Result& result, const std::string& out_dir,
                                            const WriteOptions& options) {
  const OutputFolder folder(out_dir, {"result.json", "robot.urdf", "trajectory.h5"},
                            result.config.log, options);
  const std::string json_out = folder.path("result.json");
  const std::string urdf_out = folder.path("robot.urdf");
  const std::string log_out = folder.path("trajectory.h5");
  std::vector<std::string> written;
  nlohmann::json json = result.toJson();
  const bool usable = result.summary.status == RiccatiSummary::Status::Converged ||
                      result.summary.status == RiccatiSummary::Status::MaxIterations;
  writeUrdf(json, result.config.robot, result.config.base, result.config.locked_joints,
            result.bodies,
            result.writable() ? ""
            : usable          ? "an estimate is not physically consistent"
                              : "the solve failed",
            urdf_out, options.overwrite, written);
  // A failed HDF5 write must not lose the estimate: its outcome is recorded in result.json, which
  // is written anyway, and the job then ends with exit 1.
  json["trajectory"] = {{"path", log_out}, {"status", "written"}};
  std::string trajectory_error;
  io::WriteOptions log_options;
  log_options.overwrite = options.overwrite;
  try {
    io::writeLogHdf5(result.trajectory, log_out, log_options);
    written.push_back(log_out);
  } catch (const std::exception& e) {
    trajectory_error = e.what();
    json["trajectory"] = {{"path", ""}, {"status", "not written: " + trajectory_error}};
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
