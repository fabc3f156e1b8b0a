#include "heft/identify/job.hpp"

#include <yaml-cpp/yaml.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <iomanip>
#include <set>
#include <sstream>
#include <tuple>

#include "heft/common/error.hpp"
#include "heft/common/format.hpp"
#include "heft/inertia/inertia.hpp"
#include "heft/io/atomic_file.hpp"
#include "heft/io/log_io.hpp"
#include "heft/io/urdf_writer.hpp"
#include "heft/io/yaml_section.hpp"
#include "heft/model/model.hpp"

#include <pinocchio/multibody/model.hpp>

namespace heft::identify {

namespace fs = std::filesystem;

void JobConfig::validate() const {
  require(!robot.empty(), source + ": robot", "a robot short name or model path", "nothing");
  require(!log.empty(), source + ": log", "a log path", "nothing");
  set.validate();
  options.validate();
  if (total_mass) {
    require(std::isfinite(*total_mass) && *total_mass > 0, source + ": map.total_mass",
            "a finite mass > 0 kg", std::to_string(*total_mass));
  }
  if ((total_mass || !symmetric.empty()) && options.method != Method::Map) {
    throw InputError(source +
                     ": map.total_mass / map.symmetric: constraints need method map, got " +
                     toString(options.method));
  }
}

// ---- config -------------------------------------------------------------------------------------

namespace {

// every section of this config points to the page that lists its keys
struct Section : io::YamlSection {
  Section(const YAML::Node& node, std::string path, const std::string& source)
      : io::YamlSection(node, std::move(path), source, "docs/identify.md") {}
};
using io::located;

}  // namespace

JobConfig parseJobConfig(const std::string& yaml_text, const std::string& source,
                         const std::string& base_dir) {
  const YAML::Node root =
      io::loadYamlMapping(yaml_text, source, "robot, log, method, identify, ...");

  JobConfig config;
  config.source = source;

  Section top(root, "", source);
  std::tie(config.robot, config.log) = io::readRobotAndLog(top, root, base_dir);
  if (top.has("base")) {
    config.base = located(top, "base", model::parseBaseType);
  }
  if (top.has("method")) config.options.method = located(top, "method", parseMethod);

  {
    Section s(top.raw("identify"), "identify", source);
    if (s.has("bodies")) {
      const YAML::Node n = s.raw("bodies");
      if (n.IsScalar() && n.Scalar() == "all") {
        config.set.bodies.clear();
      } else {
        try {
          config.set.bodies = n.as<std::vector<std::string>>();
        } catch (const YAML::Exception&) {
          s.fail(n, "identify.bodies", "expected all or a list of body names");
        }
      }
    }
    if (s.has("parameters")) config.set.free = located(s, "parameters", model::parseMask);
    if (s.has("parametrization"))
      config.set.parametrization = located(s, "parametrization", inertia::parseParametrization);
    if (auto joints = s.namesOrBool("friction")) {
      config.set.identify_friction = true;
      config.set.friction_joints = *joints;
    }
    if (auto joints = s.namesOrBool("armature")) {
      config.options.problem.identify_armature = true;
      config.options.problem.armature_joints = *joints;
    }
    s.finish();
  }
  {
    Section s(top.raw("prior"), "prior", source);
    s.read("mass_relative_std", config.set.body_prior.mass_relative_std, io::positive);
    s.read("first_moment_relative_std", config.set.body_prior.first_moment_relative_std,
           io::positive);
    s.read("inertia_relative_std", config.set.body_prior.inertia_relative_std, io::positive);
    s.read("length_scale", config.set.body_prior.length_scale, io::positive);
    s.read("friction_coulomb", config.set.friction_prior.gamma[3]);
    s.read("friction_viscous", config.set.friction_prior.gamma[5]);
    double log_std = -1;
    s.read("friction_log_std", log_std);
    if (log_std != -1) config.set.friction_prior.log_std.setConstant(log_std);
    s.read("armature_median", config.options.problem.armature_prior_median, io::positive);
    s.read("armature_log_std", config.options.problem.armature_prior_log_std, io::positive);
    s.finish();
  }
  {
    Section s(top.raw("preparation"), "preparation", source);
    PreparationOptions& p = config.options.preparation;
    if (s.has("acceleration")) p.acceleration = located(s, "acceleration", parseAccelerationMethod);
    s.read("window", p.filter.window);
    s.read("order", p.filter.order);
    s.read("smooth_velocity", p.smooth_velocity);
    s.read("commanded_torque", p.use_commanded_torque);
    s.read("decimation", p.decimation, io::positiveCount);
    s.read("start_time", p.start_time);
    s.read("end_time", p.end_time);
    if (s.has("base_state")) {
      p.base_state = located(s, "base_state", [](const std::string& v) {
        if (v == "log") return BaseStateSource::Log;
        if (v == "truth") return BaseStateSource::Truth;
        throw InputError("expected log or truth, got '" + v + "'");
      });
    }
    s.read("detect_contacts", p.detect_contacts);
    s.read("contact_height", p.contact.height, io::positive);
    s.read("contact_speed", p.contact.speed, io::positive);
    s.read("ground_height", p.contact.ground_height, io::finite);
    s.finish();
  }
  {
    Section s(top.raw("problem"), "problem", source);
    if (s.has("friction_form"))
      config.options.problem.friction_form = located(s, "friction_form", parseFrictionForm);
    s.read("coulomb_rate", config.options.problem.coulomb_rate, io::positive);
    if (s.has("projection"))
      config.options.problem.projection = located(s, "projection", parseProjection);
    s.read("contact_offset", config.options.problem.contact_offset, io::finite);
    s.read("min_speed", config.options.problem.min_speed, io::nonNegative);
    s.finish();
  }
  {
    Section s(top.raw("least_squares"), "least_squares", source);
    s.read("rank_tolerance", config.options.least_squares.rank_tolerance,
           io::inOpenInterval(0, 1, "a value"));
    s.finish();
  }
  {
    Section s(top.raw("energy"), "energy", source);
    s.read("interval", config.options.energy.interval, io::positiveCount);
    s.finish();
  }
  {
    Section s(top.raw("map"), "map", source);
    s.read("max_iterations", config.options.map.max_iterations, io::positiveCount);
    s.read("function_tolerance", config.options.map.function_tolerance, io::positive);
    s.read("step_tolerance", config.options.map.step_tolerance, io::positive);
    s.read("gradient_tolerance", config.options.map.gradient_tolerance, io::positive);
    s.read("min_channel_std", config.options.map.min_channel_std, io::positive);
    s.read("total_mass", config.total_mass, io::positive);
    if (s.has("symmetric")) {
      const YAML::Node n = s.raw("symmetric");
      bool ok = n.IsSequence();
      if (ok) {
        for (const auto& pair : n) {
          if (!pair.IsSequence() || pair.size() != 2) {
            ok = false;
            break;
          }
          config.symmetric.emplace_back(pair[0].as<std::string>(), pair[1].as<std::string>());
        }
      }
      if (!ok) s.fail(n, "map.symmetric", "expected a list of [left, right] body pairs");
    }
    s.finish();
  }
  {
    Section s(top.raw("truth"), "truth", source);
    if (s.has("friction")) {
      const YAML::Node n = s.raw("friction");
      if (!n.IsSequence()) s.fail(n, "truth.friction", "expected a list of {joint, coulomb, ...}");
      for (const auto& item : n) {
        Section f(item, "truth.friction[]", source);
        JointFrictionTruth t;
        t.joint = f.string("joint");
        if (t.joint.empty()) f.fail(item, "truth.friction[].joint", "missing");
        f.read("coulomb", t.coulomb);
        f.read("viscous", t.viscous);
        f.read("armature", t.armature);
        f.finish();
        config.options.friction_truth.push_back(t);
      }
    }
    s.finish();
  }
  top.raw("robot");
  top.raw("log");
  top.raw("base");
  top.raw("method");
  top.finish();
  try {
    config.validate();
  } catch (const InputError& e) {
    const std::string what = e.what();
    throw InputError(what.rfind(source, 0) == 0 ? what : source + ": " + what);
  }
  return config;
}

JobConfig loadJobConfig(const std::string& path) {
  const std::string text = io::readTextFile(path);
  const fs::path folder = fs::path(path).parent_path();
  return parseJobConfig(text, path, folder.empty() ? std::string(".") : folder.string());
}

// ---- job ----------------------------------------------------------------------------------------

namespace {

double seconds(std::chrono::steady_clock::time_point since) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - since).count();
}

// [m, c (3), I_c (xx, xy, yy, xz, yz, zz)] of a pi: what a URDF writes.
Vector10 urdfQuantities(const Vector10& pi) {
  Vector10 out;
  const double m = pi[0];
  const Eigen::Vector3d h = pi.segment<3>(1);
  Eigen::Matrix3d S;  // [h]x
  S << 0, -h.z(), h.y(), h.z(), 0, -h.x(), -h.y(), h.x(), 0;
  Eigen::Matrix3d Io;
  Io << pi[4], pi[5], pi[7], pi[5], pi[6], pi[8], pi[7], pi[8], pi[9];
  // I_o = I_c - m [c]x [c]x, so I_c = I_o + [h]x [h]x / m
  const Eigen::Matrix3d Ic = Io + S * S / m;
  out << m, h / m, Ic(0, 0), Ic(0, 1), Ic(1, 1), Ic(0, 2), Ic(1, 2), Ic(2, 2);
  return out;
}

// Standard deviations of urdfQuantities by the delta method. The Jacobian is taken by central
// differences: this is first-order uncertainty propagation, not a derivative a solver relies on.
Vector10 urdfQuantitiesStd(const Vector10& pi, const Eigen::MatrixXd& covariance) {
  Eigen::Matrix<double, 10, 10> J;
  for (int i = 0; i < 10; ++i) {
    const double h = 1e-6 * std::max(std::abs(pi[i]), 1e-3 * std::abs(pi[0]) + 1e-9);
    Vector10 plus = pi, minus = pi;
    plus[i] += h;
    minus[i] -= h;
    J.col(i) = (urdfQuantities(plus) - urdfQuantities(minus)) / (2 * h);
  }
  const Eigen::MatrixXd C = J * covariance * J.transpose();
  return C.diagonal().cwiseMax(0).cwiseSqrt();
}

Eigen::Matrix3d symmetric3(double xx, double xy, double yy, double xz, double yz, double zz) {
  Eigen::Matrix3d I;
  I << xx, xy, xz, xy, yy, yz, xz, yz, zz;
  return I;
}

nlohmann::json jsonArray(const Eigen::VectorXd& v) {
  nlohmann::json j = nlohmann::json::array();
  for (Eigen::Index i = 0; i < v.size(); ++i) j.push_back(std::isfinite(v[i]) ? v[i] : 0.0);
  return j;
}
nlohmann::json jsonArray(const Eigen::MatrixXd& m) {
  nlohmann::json j = nlohmann::json::array();
  for (Eigen::Index r = 0; r < m.rows(); ++r) j.push_back(jsonArray(Eigen::VectorXd(m.row(r))));
  return j;
}

std::string fixed(double x, int precision = 4) { return formatNumber(x, precision); }

}  // namespace

BodyEstimate makeBodyEstimate(const std::string& name, const Vector10& prior_pi,
                              const Vector10& prior_std, const Vector10& pi,
                              const Eigen::MatrixXd& covariance) {
  BodyEstimate b;
  b.name = name;
  b.prior_pi = prior_pi;
  b.prior_std = prior_std;
  b.pi = pi;
  b.pi_std = covariance.diagonal().cwiseMax(0).cwiseSqrt();
  b.consistent = inertia::checkConsistency(pi, 0.0).consistent;
  if (pi[0] > 0) {
    const Vector10 u = urdfQuantities(pi);
    const Vector10 s = urdfQuantitiesStd(pi, covariance);
    b.mass = u[0];
    b.mass_std = s[0];
    b.com = u.segment<3>(1);
    b.com_std = s.segment<3>(1);
    b.inertia = symmetric3(u[4], u[5], u[6], u[7], u[8], u[9]);
    b.inertia_std = symmetric3(s[4], s[5], s[6], s[7], s[8], s[9]);
  } else {
    b.mass = pi[0];
  }
  return b;
}

bool JobResult::writable() const {
  if (status != Status::Converged && status != Status::MaxIterations) return false;
  for (const BodyEstimate& b : bodies)
    if (!b.consistent) return false;
  return true;
}

JobResult runJob(const JobConfig& config, const ProgressCallback& progress) {
  config.validate();
  const auto start = std::chrono::steady_clock::now();
  auto say = [&](const std::string& line) {
    if (progress) progress("[" + fixed(seconds(start), 3) + " s] " + line);
  };

  model::LoadOptions load;
  load.base = config.base;
  const model::RobotModel robot = model::loadRobot(config.robot, load);
  say("robot " + robot.displayName() + ", reading " + config.log);
  const io::Log log = io::readLog(config.log);
  const model::IdentifiedSet set = model::IdentifiedSet::build(robot, config.set);
  IdentifyOptions options = config.options;
  if (options.method == Method::Map) {
    // the layout of the constraints is the problem's: bodies in the set's order
    ParameterLayout layout;
    for (const model::BodyBlock& b : set.bodies) {
      layout.body_names.push_back(b.name);
      layout.bodies.push_back(b.joint);
    }
    if (config.total_mass)
      options.map.constraints.push_back(totalMassConstraint(robot, layout, *config.total_mass));
    for (const auto& [left, right] : config.symmetric)
      options.map.constraints.push_back(symmetryConstraint(layout, left, right));
  }
  say("identifying " + set.summary() + " with method " + toString(options.method));
  const IdentifyResult run = identify(robot, log, set, options);
  say("done: " + toString(run.status) + (run.message.empty() ? "" : " (" + run.message + ")") +
      ", " + std::to_string(run.samples) + " samples, " + std::to_string(run.rows) + " rows");

  JobResult result;
  result.method = run.method;
  result.status = run.status;
  result.message = run.message;
  result.iterations = run.iterations;
  result.samples = run.samples;
  result.rows = run.rows;
  result.names = run.names;
  result.linear = run.estimate;
  result.covariance = run.covariance;
  result.channel_names = run.channel_names;
  result.rms_before = run.channel_rms_before;
  result.rms_after = run.channel_rms_after;
  result.rank = run.base.rank;
  result.dimension = static_cast<int>(run.estimate.size());
  result.condition_number = run.condition_number;
  result.base_parameters = run.base.expressions;
  result.warnings = run.warnings;
  result.truth = run.truth;

  const ParameterLayout& layout = run.layout;
  for (int k = 0; k < layout.numBodies(); ++k) {
    const Vector10 prior_std = set.bodies[k].prior_covariance.diagonal().cwiseSqrt();
    const Vector10 prior_pi = run.nominal.segment<10>(10 * k);
    Vector10 pi = run.estimate.segment<10>(10 * k);
    if (run.method == Method::Map && !inertia::checkConsistency(pi, 0.0).consistent &&
        inertia::checkConsistency(prior_pi, 0.0).consistent) {
      // MAP iterates are consistent by construction, but when the data pull a body against the
      // boundary (singular pseudo-inertia) the converged theta sits there up to rounding. The
      // consistent set is convex (pseudo-inertia >= 0), so the smallest step toward the strictly
      // consistent prior that gives positive margins moves it inside; the step is reported.
      for (double alpha = 1e-9; alpha <= 0.1; alpha *= 10) {
        const Vector10 inside = (1 - alpha) * pi + alpha * prior_pi;
        if (inertia::checkConsistency(inside, 0.0).consistent) {
          result.warnings.push_back(
              "body " + layout.body_names[k] +
              ": the MAP estimate lies on the boundary of physical consistency (the data pull "
              "it outside); moved inside by the convex combination (1 - a) pi + a pi_prior, a = " +
              fixed(alpha, 1) + ", max |change| " + fixed((inside - pi).cwiseAbs().maxCoeff(), 2));
          pi = inside;
          result.linear.segment<10>(10 * k) = pi;
          break;
        }
      }
    }
    result.bodies.push_back(makeBodyEstimate(layout.body_names[k], prior_pi, prior_std, pi,
                                             run.covariance.block(10 * k, 10 * k, 10, 10)));
    if (!result.bodies.back().consistent)
      result.warnings.push_back("body " + layout.body_names[k] +
                                ": the estimate is not physically consistent (method " +
                                toString(run.method) + "; map keeps every iterate consistent)");
  }
  for (int f = 0; f < layout.numFriction(); ++f) {
    JointFrictionEstimate e;
    e.joint = layout.friction_joints[f];
    const int o = layout.frictionOffset() + 2 * f;
    e.coulomb = run.estimate[o];
    e.viscous = run.estimate[o + 1];
    e.coulomb_std = run.stddev[o];
    e.viscous_std = run.stddev[o + 1];
    e.coulomb_prior = run.nominal[o];
    e.viscous_prior = run.nominal[o + 1];
    result.friction.push_back(e);
  }
  for (int a = 0; a < layout.numArmature(); ++a)
    result.armature.emplace_back(layout.armature_joints[a],
                                 run.estimate[layout.armatureOffset() + a]);
  result.time_s = seconds(start);
  return result;
}

// ---- outputs ------------------------------------------------------------------------------------

std::string bodiesReport(const std::vector<BodyEstimate>& bodies) {
  std::ostringstream s;
  s << "bodies (prior -> estimate +- std; COM [m] and inertia about the COM [kg m^2], body "
       "frame)\n";
  for (const BodyEstimate& b : bodies) {
    const Vector10 prior = urdfQuantities(b.prior_pi);
    s << "  " << b.name << (b.consistent ? "" : "   ** NOT physically consistent **") << "\n";
    s << "    mass  " << std::setw(10) << fixed(prior[0]) << " -> " << std::setw(10)
      << fixed(b.mass) << " +- " << fixed(b.mass_std, 2) << " kg\n";
    const char* axes[3] = {"x", "y", "z"};
    for (int i = 0; i < 3; ++i)
      s << "    com " << axes[i] << " " << std::setw(10) << fixed(prior[1 + i]) << " -> "
        << std::setw(10) << fixed(b.com[i]) << " +- " << fixed(b.com_std[i], 2) << "\n";
    const char* names[6] = {"Ixx", "Ixy", "Iyy", "Ixz", "Iyz", "Izz"};
    const int rr[6] = {0, 0, 1, 0, 1, 2}, cc[6] = {0, 1, 1, 2, 2, 2};
    for (int i = 0; i < 6; ++i)
      s << "    " << names[i] << "  " << std::setw(10) << fixed(prior[4 + i]) << " -> "
        << std::setw(10) << fixed(b.inertia(rr[i], cc[i])) << " +- "
        << fixed(b.inertia_std(rr[i], cc[i]), 2) << "\n";
  }
  return s.str();
}

std::string JobResult::report() const {
  std::ostringstream s;
  s << "method    " << toString(method) << "\n"
    << "status    " << toString(status) << (message.empty() ? "" : ": " + message) << "\n"
    << "data      " << samples << " samples, " << rows << " rows; " << iterations
    << " iteration(s), " << fixed(time_s, 3) << " s\n"
    << "regressor rank " << rank << " of " << dimension << ", condition number "
    << fixed(condition_number, 4) << "\n";
  s << "\n" << bodiesReport(bodies);
  if (!friction.empty()) {
    s << "\nfriction (prior -> estimate +- std)\n";
    for (const JointFrictionEstimate& f : friction)
      s << "  " << f.joint << "  coulomb " << fixed(f.coulomb_prior) << " -> " << fixed(f.coulomb)
        << " +- " << fixed(f.coulomb_std, 2) << " N m, viscous " << fixed(f.viscous_prior) << " -> "
        << fixed(f.viscous) << " +- " << fixed(f.viscous_std, 2) << " N m s/rad\n";
  }
  if (!armature.empty()) {
    s << "\narmature\n";
    for (const auto& [joint, value] : armature)
      s << "  " << joint << "  " << fixed(value) << " kg m^2\n";
  }
  s << "\nresidual RMS per channel [N m]: before -> after\n";
  const size_t channels = std::min<size_t>(
      channel_names.size(), static_cast<size_t>(std::min(rms_before.size(), rms_after.size())));
  for (size_t c = 0; c < channels; ++c)
    s << "  " << std::setw(24) << std::left << channel_names[c] << std::right << " "
      << std::setw(10) << fixed(rms_before[c]) << " -> " << std::setw(10) << fixed(rms_after[c])
      << "\n";
  s << "\nidentifiable combinations (base parameters, " << rank << "):\n";
  const size_t shown = std::min<size_t>(base_parameters.size(), 40);
  for (size_t i = 0; i < shown; ++i) s << "  " << base_parameters[i] << "\n";
  if (shown < base_parameters.size())
    s << "  ... " << base_parameters.size() - shown << " more in result.json\n";
  if (rank < dimension)
    s << "  " << dimension - rank
      << " direction(s) the data cannot see stay at the prior (nominal) values\n";
  if (truth) s << "\nerrors against the log's truth group\n" << truth->report();
  if (!warnings.empty()) {
    s << "\nwarnings\n";
    for (const std::string& w : warnings) s << "  - " << w << "\n";
  }
  return s.str();
}

nlohmann::json parametersJson(const std::vector<BodyEstimate>& bodies) {
  nlohmann::json parameters = nlohmann::json::object();
  for (const BodyEstimate& b : bodies) {
    nlohmann::json body;
    body["mass"] = b.mass;
    body["com"] = jsonArray(Eigen::VectorXd(b.com));
    body["inertia"] = jsonArray(Eigen::MatrixXd(b.inertia));
    body["pi"] = jsonArray(Eigen::VectorXd(b.pi));
    body["prior_pi"] = jsonArray(Eigen::VectorXd(b.prior_pi));
    body["consistent"] = b.consistent;
    body["std"] = {{"mass", b.mass_std},
                   {"com", jsonArray(Eigen::VectorXd(b.com_std))},
                   {"inertia", jsonArray(Eigen::MatrixXd(b.inertia_std))},
                   {"pi", jsonArray(Eigen::VectorXd(b.pi_std))}};
    parameters[b.name] = body;
  }
  return parameters;
}

nlohmann::json JobResult::toJson() const {
  nlohmann::json j;
  j["method"] = toString(method);
  j["parameters"] = parametersJson(bodies);
  nlohmann::json friction_json = nlohmann::json::object();
  for (const JointFrictionEstimate& f : friction)
    friction_json[f.joint] = {
        {"coulomb", f.coulomb},
        {"viscous", f.viscous},
        {"std", {{"coulomb", f.coulomb_std}, {"viscous", f.viscous_std}}},
        {"prior", {{"coulomb", f.coulomb_prior}, {"viscous", f.viscous_prior}}}};
  j["friction"] = friction_json;
  nlohmann::json armature_json = nlohmann::json::object();
  for (const auto& [joint, value] : armature) armature_json[joint] = value;
  j["armature"] = armature_json;
  j["covariance"] = {{"names", names}, {"matrix", jsonArray(covariance)}};
  j["residuals"] = {{"channels", channel_names},
                    {"rms_before", jsonArray(rms_before)},
                    {"rms_after", jsonArray(rms_after)}};
  j["identifiability"] = {{"rank", rank},
                          {"dimension", dimension},
                          {"condition_number", condition_number},
                          {"base_parameters", base_parameters}};
  j["summary"] = {{"status", toString(status)}, {"message", message}, {"iterations", iterations},
                  {"time_s", time_s},           {"samples", samples}, {"rows", rows}};
  j["warnings"] = warnings;
  if (truth) {
    nlohmann::json bodies_json = nlohmann::json::object();
    for (const BodyError& e : truth->bodies)
      bodies_json[e.name] = {{"mass_relative", e.mass_relative},
                             {"com_error_m", std::isfinite(e.com_error) ? e.com_error : -1.0},
                             {"inertia_relative", e.inertia_relative},
                             {"mass_true", e.mass_true},
                             {"mass_estimate", e.mass_estimate}};
    nlohmann::json joints_json = nlohmann::json::object();
    for (const JointError& e : truth->joints)
      joints_json[e.joint] = {{"coulomb_relative", e.coulomb_relative},
                              {"viscous_relative", e.viscous_relative},
                              {"armature_relative", e.armature_relative}};
    j["truth_errors"] = {{"bodies", bodies_json}, {"friction", joints_json}};
  }
  return j;
}

std::string writeIdentifiedUrdf(const model::RobotModel& robot,
                                const std::vector<BodyEstimate>& bodies,
                                const std::string& urdf_out, bool overwrite,
                                std::vector<std::string>& warnings) {
  const std::string source = robot.source();
  if (fs::path(source).extension() != ".urdf")
    return "not written: the robot does not come from a URDF (" + source + ")";
  const auto inertials = io::readUrdfInertials(source);
  auto nominalOf = [&](const std::string& link) {
    const auto it = inertials.find(link);
    return it == inertials.end() ? Vector10::Zero() : it->second.pi();
  };
  std::map<std::string, Vector10> link_pi;
  for (const BodyEstimate& b : bodies) {
    // First choice: the links rigidly attached to the body keep their URDF values and the body's
    // own link takes the whole change.
    const Vector10 own = io::linkPiFromLumpedPi(robot.pinocchio(), b.name, b.pi, nominalOf(b.name));
    const model::Body& body = robot.body(robot.bodyIndex(b.name));
    if (inertia::checkConsistency(own, 0.0).consistent || body.lumped_links.empty()) {
      link_pi[b.name] = own;
      continue;
    }
    // That link alone cannot carry the change consistently. The data see only the lumped body,
    // so split it instead: each link gets w_i * pi_body (w_i its nominal mass fraction), a
    // positive multiple of a consistent pi, consistent by construction, summing to pi_body.
    std::vector<std::pair<std::string, double>> links{{b.name, nominalOf(b.name)[0]}};
    for (const std::string& l : body.lumped_links) links.emplace_back(l, nominalOf(l)[0]);
    double total = 0;
    for (const auto& [l, m] : links) total += std::max(m, 0.0);
    const pinocchio::Model& pin = robot.pinocchio();
    const Vector10 lumped_nominal = pin.inertias[body.joint].toDynamicParameters();
    for (const auto& [l, m] : links) {
      const double w = total > 0 ? std::max(m, 0.0) / total : (l == b.name ? 1.0 : 0.0);
      if (w == 0) continue;
      link_pi[l] = io::linkPiFromLumpedPi(pin, l, w * b.pi + lumped_nominal, Vector10::Zero());
    }
    warnings.push_back("body " + b.name + ": link " + b.name +
                       " alone cannot carry the identified change consistently; the body's "
                       "links share it in proportion to their nominal masses");
  }
  io::UrdfWriteOptions options;
  options.overwrite = overwrite;
  io::writeUrdfInertials(source, link_pi, urdf_out, options);
  return "written";
}

std::vector<std::string> writeJobOutputs(const JobConfig& config, const JobResult& result,
                                         const std::string& out_dir, bool overwrite) {
  std::error_code ec;
  fs::create_directories(out_dir, ec);
  if (ec || !fs::is_directory(out_dir))
    throw InputError("--out " + out_dir + ": cannot create the folder (" + ec.message() + ")");
  std::vector<std::string> written;
  const std::string urdf_out = (fs::path(out_dir) / "robot.urdf").string();
  const std::string json_out = (fs::path(out_dir) / "result.json").string();
  if (!overwrite) {
    for (const std::string& p : {json_out, urdf_out})
      if (fs::exists(p))
        throw InputError(p + ": exists; pass --overwrite to replace the outputs of " + out_dir);
  }

  // The URDF first: if it is refused, result.json says why.
  nlohmann::json json = result.toJson();
  model::LoadOptions load;
  load.base = config.base;
  const model::RobotModel robot = model::loadRobot(config.robot, load);
  std::string urdf_status;
  bool urdf_written = false;
  if (!result.writable()) {
    urdf_status = "not written: " + std::string(result.status == Status::Converged ||
                                                        result.status == Status::MaxIterations
                                                    ? "an estimate is not physically consistent"
                                                    : "the solve failed");
  } else {
    std::vector<std::string> warnings;
    urdf_status = writeIdentifiedUrdf(robot, result.bodies, urdf_out, overwrite, warnings);
    for (const std::string& w : warnings) json["warnings"].push_back(w);
    urdf_written = urdf_status == "written";
    if (urdf_written) written.push_back(urdf_out);
  }
  json["urdf"] = {{"path", urdf_written ? urdf_out : ""}, {"status", urdf_status}};
  io::writeTextFileAtomically(json_out, json.dump(2) + "\n", overwrite);
  written.push_back(json_out);
  return written;
}

}  // namespace heft::identify
