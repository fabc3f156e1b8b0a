#include "heft/estimation/job.hpp"

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
#include "heft/inertia/inertia.hpp"
#include "heft/io/atomic_file.hpp"
#include "heft/io/log_io.hpp"
#include "heft/io/signal.hpp"
#include "heft/io/validation.hpp"
#include "heft/io/yaml_section.hpp"

namespace heft::estimation {

namespace fs = std::filesystem;

void EstimateJobConfig::validate() const {
  require(!robot.empty(), source + ": robot", "a robot short name or model path", "nothing");
  require(!log.empty(), source + ": log", "a log path", "nothing");
  if (start_time)
    require(std::isfinite(*start_time), source + ": window.start_time", "a finite time [s]",
            formatNumber(*start_time));
  if (knots) require(*knots >= 1, source + ": window.knots", ">= 1", std::to_string(*knots));
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

struct Section : io::YamlSection {
  Section(const YAML::Node& node, std::string path, const std::string& source)
      : io::YamlSection(node, std::move(path), source, "docs/estimation.md") {}
};
using io::located;

}  // namespace

EstimateJobConfig parseEstimateJobConfig(const std::string& yaml_text, const std::string& source,
                                         const std::string& base_dir) {
  const YAML::Node root =
      io::loadYamlMapping(yaml_text, source, "robot, log, estimate, window, noise, solver, ...");
  EstimateJobConfig config;
  config.source = source;

  Section top(root, "", source);
  std::tie(config.robot, config.log) = io::readRobotAndLog(top, root, base_dir);
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
    s.finish();
  }
  {
    Section s(top.raw("window"), "window", source);
    s.read("start_time", config.start_time, io::finite);
    s.read("knots", config.knots, io::positiveCount);
    s.read("stride", p.stride, io::positiveCount);
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
        {"mocap_orientation", &p.mocap_orientation_std}};
    for (const auto& [key, value] : stds) s.read(key, *value, io::positive);
    s.finish();
  }
  {
    Section s(top.raw("contacts"), "contacts", source);
    if (s.has("source")) p.contact_source = located(s, "source", parseContactSource);
    s.read("height", p.contact_detection.height, io::positive);
    s.read("speed", p.contact_detection.speed, io::positive);
    s.read("ground_height", p.contact_detection.ground_height, io::finite);
    s.read("impulses", p.touchdown_impulses);
    s.read("transition_window", p.transition_window, io::nonNegative);
    s.read("transition_noise_scale", p.transition_noise_scale, io::positive);
    s.read("damping", p.contact_damping, io::nonNegative);
    s.finish();
  }
  {
    Section s(top.raw("solver"), "solver", source);
    RiccatiOptions& o = config.solver;
    if (s.has("rollout")) o.rollout = located(s, "rollout", parseRollout);
    s.read("max_iterations", o.max_iterations, io::nonNegativeCount);
    s.read("tolerance", o.tolerance, io::positive);
    s.read("gap_tolerance", o.gap_tolerance, io::positive);
    s.read("regularization", o.regularization, io::nonNegative);
    s.read("theta_trust_radius", o.theta_trust_radius, io::positive);
    s.read("nonmonotone_memory", o.nonmonotone_memory, io::nonNegativeCount);
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

EstimateJobConfig loadEstimateJobConfig(const std::string& path) {
  const std::string text = io::readTextFile(path);
  const fs::path folder = fs::path(path).parent_path();
  return parseEstimateJobConfig(text, path, folder.empty() ? std::string(".") : folder.string());
}

// ---- job ----------------------------------------------------------------------------------------

namespace {

double seconds(std::chrono::steady_clock::time_point since) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - since).count();
}

std::string fixed(double x, int precision = 4) { return formatNumber(x, precision); }

// Block-diagonal d pi / d theta of the estimated bodies.
Eigen::MatrixXd piJacobian(inertia::Parametrization parametrization, const Eigen::VectorXd& theta) {
  const int nb = static_cast<int>(theta.size() / 10);
  Eigen::MatrixXd J = Eigen::MatrixXd::Zero(10 * nb, 10 * nb);
  for (int b = 0; b < nb; ++b)
    J.block<10, 10>(10 * b, 10 * b) = inertia::jacobian(parametrization, theta.segment<10>(10 * b));
  return J;
}

// The estimated trajectory as a log (see EstimateJobResult::trajectory).
io::Log trajectoryLog(const model::RobotModel& robot, const io::Log& input, const LogProblem& lp,
                      const RiccatiSolver& solver, const EstimateJobResult& result) {
  const pinocchio::Model& pin = *lp.model;
  const bool floating = robot.hasFreeFlyer();
  const int N = static_cast<int>(lp.time.size()) - 1;
  const int nq = pin.nq;
  const auto& encoders = lp.sensors->encoders;
  const int nj = static_cast<int>(encoders.size());
  io::Log out;
  out.meta = input.meta;
  out.meta.noise_profile = "estimated by heft estimate from " + input.meta.noise_profile;
  io::JointSeries& j = out.joints;
  j.time = lp.time;
  for (pinocchio::JointIndex joint : encoders) j.names.push_back(pin.names[joint]);
  j.q.resize(N + 1, nj);
  j.v.resize(N + 1, nj);
  j.tau.resize(N + 1, nj);
  if (floating) {
    j.base_pose.resize(N + 1, 7);
    j.base_twist.resize(N + 1, 6);
  }
  for (int k = 0; k <= N; ++k) {
    const Eigen::VectorXd& x = solver.xs()[k];
    // the torque over [t_k, t_k + dt): the input plus the estimated generalized-force noise; the
    // last knot has no stage after it and keeps the previous one
    const int stage = std::min(k, N - 1);
    const auto* model = dynamic_cast<const MultibodyStageModel*>(&lp.problem->running(stage));
    const Eigen::VectorXd tau = model->measurement().tau + solver.ws()[stage].tail(pin.nv);
    for (int i = 0; i < nj; ++i) {
      const auto& jm = pin.joints[encoders[i]];
      j.q(k, i) = x(jm.idx_q());
      j.v(k, i) = x(nq + jm.idx_v());
      j.tau(k, i) = tau(jm.idx_v());
    }
    if (floating) {
      j.base_pose.row(k) = x.head<7>().transpose();
      j.base_twist.row(k) = x.segment<6>(nq).transpose();
    }
  }
  // Contact flags of the knots: the contact set each stage's dynamics used.
  if (floating) {
    std::vector<std::string> names = robot.contactFrames();
    for (int k = 0; k < N; ++k) {
      const auto* model = dynamic_cast<const MultibodyStageModel*>(&lp.problem->running(k));
      if (!model->contact()) continue;
      for (const auto& spec : model->contact()->contacts())
        if (std::find(names.begin(), names.end(), spec.frame) == names.end())
          names.push_back(spec.frame);
    }
    if (!names.empty()) {
      io::ContactSeries c;
      c.time = lp.time;
      c.names = names;
      c.flags = io::FlagMatrix::Zero(N + 1, names.size());
      for (int k = 0; k <= N; ++k) {
        const auto* model =
            dynamic_cast<const MultibodyStageModel*>(&lp.problem->running(std::min(k, N - 1)));
        if (!model->contact()) continue;
        for (const auto& spec : model->contact()->contacts()) {
          const auto it = std::find(names.begin(), names.end(), spec.frame);
          c.flags(k, it - names.begin()) = 1;
        }
      }
      out.contacts = c;
    }
  }
  // The parameters: one estimate for the whole window, at its first knot.
  io::EstimateSeries e;
  e.estimator = "riccati-map";
  e.time = Eigen::VectorXd::Constant(1, lp.time(0));
  const int nb = static_cast<int>(result.bodies.size());
  e.body_pi.resize(1, 10 * nb);
  e.body_pi_std.resize(1, 10 * nb);
  for (int b = 0; b < nb; ++b) {
    e.body_names.push_back(result.bodies[b].name);
    e.body_pi.block<1, 10>(0, 10 * b) = result.bodies[b].pi.transpose();
    e.body_pi_std.block<1, 10>(0, 10 * b) = result.bodies[b].pi_std.transpose();
  }
  out.estimates = e;
  return out;
}

// Errors of the estimated trajectory and of the raw measurements against the truth, at the knots
// whose time the truth has (within a microsecond); nullopt when it has none.
std::optional<TrajectoryErrors> trajectoryErrors(const model::RobotModel& robot, const io::Log& log,
                                                 const LogProblem& lp,
                                                 const RiccatiSolver& solver) {
  if (!log.truth || log.truth->time.size() == 0 || log.truth->q.size() == 0) return std::nullopt;
  const io::TruthSeries& truth = *log.truth;
  const pinocchio::Model& pin = *lp.model;
  const bool floating = robot.hasFreeFlyer();
  if (floating && truth.base_pose.rows() != truth.time.size()) return std::nullopt;
  const auto& encoders = lp.sensors->encoders;
  std::vector<int> column;  // truth column of each encoder
  for (pinocchio::JointIndex joint : encoders) {
    const auto it = std::find(log.joints.names.begin(), log.joints.names.end(), pin.names[joint]);
    if (it == log.joints.names.end()) return std::nullopt;
    column.push_back(static_cast<int>(it - log.joints.names.begin()));
  }
  const int nq = pin.nq;
  TrajectoryErrors e;
  e.has_base = floating;
  double q_est = 0, q_raw = 0, v_est = 0, v_raw = 0, p_est = 0, p_raw = 0, r_est = 0, r_raw = 0;
  int knots = 0;
  for (int k = 0; k < lp.time.size(); ++k) {
    const int i = io::nearestSample(truth.time, lp.time(k));
    if (std::abs(truth.time(i) - lp.time(k)) > 1e-6) continue;
    ++knots;
    const Eigen::VectorXd& x = solver.xs()[k];
    const Eigen::VectorXd& x0 = lp.xs[k];  // the initial guess: raw measurements
    for (std::size_t j = 0; j < encoders.size(); ++j) {
      const auto& jm = pin.joints[encoders[j]];
      const double qt = truth.q(i, column[j]), vt = truth.v(i, column[j]);
      q_est += std::pow(x(jm.idx_q()) - qt, 2);
      q_raw += std::pow(log.joints.q(lp.samples[k], column[j]) - qt, 2);
      v_est += std::pow(x(nq + jm.idx_v()) - vt, 2);
      v_raw += std::pow(x0(nq + jm.idx_v()) - vt, 2);
    }
    if (floating) {
      const Eigen::Vector3d pt = truth.base_pose.row(i).head<3>().transpose();
      const Eigen::Quaterniond rt(truth.base_pose(i, 6), truth.base_pose(i, 3),
                                  truth.base_pose(i, 4), truth.base_pose(i, 5));
      auto angle = [&](const Eigen::VectorXd& xx) {
        const Eigen::Quaterniond r(xx(6), xx(3), xx(4), xx(5));
        return rt.normalized().angularDistance(r.normalized());
      };
      p_est += (x.head<3>() - pt).squaredNorm();
      p_raw += (x0.head<3>() - pt).squaredNorm();
      r_est += std::pow(angle(x), 2);
      r_raw += std::pow(angle(x0), 2);
    }
  }
  if (knots == 0) return std::nullopt;
  const double nj = static_cast<double>(std::max<std::size_t>(1, encoders.size()));
  e.joint_position = std::sqrt(q_est / (knots * nj));
  e.joint_position_raw = std::sqrt(q_raw / (knots * nj));
  e.joint_velocity = std::sqrt(v_est / (knots * nj));
  e.joint_velocity_raw = std::sqrt(v_raw / (knots * nj));
  e.base_position = std::sqrt(p_est / knots);
  e.base_position_raw = std::sqrt(p_raw / knots);
  e.base_rotation = std::sqrt(r_est / knots);
  e.base_rotation_raw = std::sqrt(r_raw / knots);
  return e;
}

}  // namespace

std::string TrajectoryErrors::report() const {
  std::ostringstream s;
  s << "  joint position RMSE " << fixed(joint_position, 3) << " rad (encoders "
    << fixed(joint_position_raw, 3) << ")\n"
    << "  joint velocity RMSE " << fixed(joint_velocity, 3) << " rad/s (central differences "
    << fixed(joint_velocity_raw, 3) << ")\n";
  if (has_base)
    s << "  base position RMSE  " << fixed(base_position, 3) << " m (motion capture "
      << fixed(base_position_raw, 3) << ")\n"
      << "  base rotation RMSE  " << fixed(base_rotation, 3) << " rad (motion capture "
      << fixed(base_rotation_raw, 3) << ")\n";
  return s.str();
}

bool EstimateJobResult::writable() const {
  using S = RiccatiSummary::Status;
  if (summary.status != S::Converged && summary.status != S::MaxIterations) return false;
  for (const identify::BodyEstimate& b : bodies)
    if (!b.consistent) return false;
  return !bodies.empty();
}

EstimateJobResult runEstimateJob(const EstimateJobConfig& config, std::ostream* progress) {
  config.validate();
  const auto start = std::chrono::steady_clock::now();
  auto say = [&](const std::string& line) {
    if (progress) *progress << "[" << fixed(seconds(start), 3) << " s] " << line << "\n";
  };
  model::LoadOptions load;
  load.base = config.base;
  const model::RobotModel robot = model::loadRobot(config.robot, load);
  say("robot " + robot.displayName() + ", reading " + config.log);
  const io::Log log = io::readLog(config.log);
  io::requireValid(io::validateLog(log, robot.pinocchio()), config.log);

  // The window, in joint samples.
  LogProblemOptions options = config.problem;
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

  say("building the problem: " + std::to_string(options.knots) + " knots from t = " +
      fixed(time(options.first_sample)) + " s, stride " + std::to_string(options.stride));
  const LogProblem lp = buildLogProblem(robot, log, options);
  RiccatiOptions solver_options = config.solver;
  solver_options.progress = progress;
  RiccatiSolver solver(lp.problem, solver_options);
  solver.setInitialGuess(lp.xs, lp.ws, lp.theta);
  say("solving: " + std::to_string(lp.problem->horizon()) + " stages, " +
      std::to_string(lp.problem->np()) + " parameters, " + std::to_string(lp.contact_phases) +
      " contact-set changes, rollout " + toString(solver_options.rollout));
  EstimateJobResult result;
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
  const Eigen::MatrixXd J = piJacobian(options.parametrization, result.theta);
  const Eigen::MatrixXd J0 = piJacobian(options.parametrization, lp.theta);
  const Eigen::MatrixXd prior_cov =
      std::isfinite(options.theta_prior_std)
          ? Eigen::MatrixXd(J0 * J0.transpose() * std::pow(options.theta_prior_std, 2))
          : Eigen::MatrixXd::Constant(J0.rows(), J0.cols(),
                                      std::numeric_limits<double>::infinity());  // no prior
  result.covariance = J * result.theta_covariance * J.transpose();
  const int nb = static_cast<int>(lp.identified.size());
  result.linear.resize(10 * nb);
  identify::ParameterLayout layout;
  for (int b = 0; b < nb; ++b) {
    const std::string& name = robot.body(lp.identified[b]).name;
    layout.body_names.push_back(name);
    layout.bodies.push_back(lp.identified[b]);
    const Vector10 pi =
        inertia::piFromTheta(options.parametrization, result.theta.segment<10>(10 * b));
    const Vector10 prior_pi = robot.pi(lp.identified[b]);
    result.linear.segment<10>(10 * b) = pi;
    result.bodies.push_back(identify::makeBodyEstimate(
        name, prior_pi, prior_cov.block<10, 10>(10 * b, 10 * b).diagonal().cwiseSqrt(), pi,
        result.covariance.block(10 * b, 10 * b, 10, 10)));
    if (!result.bodies.back().consistent)
      result.warnings.push_back("body " + name +
                                ": the estimate is not physically consistent (should not happen: "
                                "every iterate of theta maps to a consistent pi)");
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
      result.truth = identify::truthErrors(robot, log, layout, result.linear);
    } catch (const InputError& e) {
      result.warnings.push_back(std::string("no errors against the truth: ") + e.what());
    }
  }
  result.trajectory_errors = trajectoryErrors(robot, log, lp, solver);
  result.trajectory = trajectoryLog(robot, log, lp, solver, result);
  result.time_s = seconds(start);
  return result;
}

// ---- outputs ------------------------------------------------------------------------------------

std::string EstimateJobResult::report() const {
  std::ostringstream s;
  s << "method    riccati-map (" << parametrization << ")\n"
    << "status    " << toString(summary.status)
    << (summary.message.empty() ? "" : ": " + summary.message) << "\n"
    << "window    " << knots << " knots of " << fixed(dt, 3) << " s from t = " << fixed(start_time)
    << " s to " << fixed(end_time) << " s, " << contact_phases << " contact-set changes ("
    << touchdowns << " touchdowns with an impulse; contacts "
    << (contacts_detected ? "detected kinematically" : "from the log's flags") << ")\n"
    << "solver    " << summary.iterations << " iteration(s), cost " << fixed(summary.cost, 6)
    << ", max gap " << fixed(summary.max_gap, 2) << "; " << fixed(summary.total_seconds, 3)
    << " s (derivatives " << fixed(summary.derivative_seconds, 3) << ", backward "
    << fixed(summary.backward_seconds, 3) << ", forward " << fixed(summary.forward_seconds, 3)
    << "); job " << fixed(time_s, 3) << " s\n\n";
  s << identify::bodiesReport(bodies);
  if (truth) s << "\nerrors against the log's truth group\n" << truth->report();
  if (trajectory_errors)
    s << "\ntrajectory against the log's truth (raw measurements in brackets)\n"
      << trajectory_errors->report();
  if (!warnings.empty()) {
    s << "\nwarnings\n";
    for (const std::string& w : warnings) s << "  - " << w << "\n";
  }
  return s.str();
}

namespace {
nlohmann::json jsonArray(const Eigen::MatrixXd& m) {
  nlohmann::json j = nlohmann::json::array();
  for (Eigen::Index r = 0; r < m.rows(); ++r) {
    nlohmann::json row = nlohmann::json::array();
    for (Eigen::Index c = 0; c < m.cols(); ++c)
      row.push_back(std::isfinite(m(r, c)) ? m(r, c) : 0.0);
    j.push_back(row);
  }
  return j;
}
nlohmann::json jsonVector(const Eigen::VectorXd& v) {
  return std::vector<double>(v.data(), v.data() + v.size());
}
}  // namespace

nlohmann::json EstimateJobResult::toJson() const {
  nlohmann::json j;
  j["method"] = "riccati-map";
  j["parameters"] = identify::parametersJson(bodies);
  j["friction"] = nlohmann::json::object();
  j["armature"] = nlohmann::json::object();
  j["covariance"] = {{"names", names}, {"matrix", jsonArray(covariance)}};
  j["summary"] = {{"status", toString(summary.status)},
                  {"message", summary.message},
                  {"iterations", summary.iterations},
                  {"time_s", time_s},
                  {"samples", knots + 1}};
  j["warnings"] = warnings;
  if (truth) {
    nlohmann::json bodies_json = nlohmann::json::object();
    for (const identify::BodyError& e : truth->bodies)
      bodies_json[e.name] = {{"mass_relative", e.mass_relative},
                             {"com_error_m", std::isfinite(e.com_error) ? e.com_error : -1.0},
                             {"inertia_relative", e.inertia_relative},
                             {"mass_true", e.mass_true},
                             {"mass_estimate", e.mass_estimate}};
    j["truth_errors"] = {{"bodies", bodies_json}, {"friction", nlohmann::json::object()}};
  }
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
  est["theta"] = jsonVector(theta);
  est["theta_covariance"] = jsonArray(theta_covariance);
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
  if (trajectory_errors) {
    const TrajectoryErrors& e = *trajectory_errors;
    est["trajectory_errors"] = {{"joint_position_rad", e.joint_position},
                                {"joint_position_raw_rad", e.joint_position_raw},
                                {"joint_velocity_rad_s", e.joint_velocity},
                                {"joint_velocity_raw_rad_s", e.joint_velocity_raw}};
    if (e.has_base) {
      est["trajectory_errors"]["base_position_m"] = e.base_position;
      est["trajectory_errors"]["base_position_raw_m"] = e.base_position_raw;
      est["trajectory_errors"]["base_rotation_rad"] = e.base_rotation;
      est["trajectory_errors"]["base_rotation_raw_rad"] = e.base_rotation_raw;
    }
  }
  j["estimation"] = est;
  return j;
}

std::vector<std::string> writeEstimateJobOutputs(const EstimateJobConfig& config,
                                                 const EstimateJobResult& result,
                                                 const std::string& out_dir, bool overwrite) {
  std::error_code ec;
  fs::create_directories(out_dir, ec);
  if (ec || !fs::is_directory(out_dir))
    throw InputError("--out " + out_dir + ": cannot create the folder (" + ec.message() + ")");
  const std::string json_out = (fs::path(out_dir) / "result.json").string();
  const std::string urdf_out = (fs::path(out_dir) / "robot.urdf").string();
  const std::string log_out = (fs::path(out_dir) / "trajectory.h5").string();
  for (const std::string& p : {json_out, urdf_out, log_out}) {
    std::error_code same;
    require(!fs::exists(p) || !fs::equivalent(p, config.log, same), p,
            "an output path that is not the input log", "the input log itself");
    if (!overwrite && fs::exists(p))
      throw InputError(p + ": exists; pass --overwrite to replace the outputs of " + out_dir);
  }
  std::vector<std::string> written;
  nlohmann::json json = result.toJson();
  std::string urdf_status;
  bool urdf_written = false;
  if (!result.writable()) {
    urdf_status = "not written: " +
                  std::string(result.summary.status == RiccatiSummary::Status::Converged ||
                                      result.summary.status == RiccatiSummary::Status::MaxIterations
                                  ? "an estimate is not physically consistent"
                                  : "the solve failed");
  } else {
    model::LoadOptions load;
    load.base = config.base;
    const model::RobotModel robot = model::loadRobot(config.robot, load);
    std::vector<std::string> warnings;
    urdf_status =
        identify::writeIdentifiedUrdf(robot, result.bodies, urdf_out, overwrite, warnings);
    for (const std::string& w : warnings) json["warnings"].push_back(w);
    urdf_written = urdf_status == "written";
    if (urdf_written) written.push_back(urdf_out);
  }
  json["urdf"] = {{"path", urdf_written ? urdf_out : ""}, {"status", urdf_status}};
  io::WriteOptions log_options;
  log_options.overwrite = overwrite;
  io::writeLogHdf5(result.trajectory, log_out, log_options);
  written.push_back(log_out);
  io::writeTextFileAtomically(json_out, json.dump(2) + "\n", overwrite);
  written.push_back(json_out);
  return written;
}

}  // namespace heft::estimation
