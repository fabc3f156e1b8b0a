#include "heft/jobs/identify_job.hpp"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <iomanip>
#include <set>
#include <sstream>
#include <tuple>

#include "heft/common/error.hpp"
#include "heft/common/format.hpp"
#include "heft/identify/prediction.hpp"
#include "heft/inertia/inertia.hpp"
#include "heft/io/atomic_file.hpp"
#include "heft/io/log_io.hpp"
#include "heft/model/model.hpp"
#include "heft/results/json.hpp"
#include "identify_sections.hpp"
#include "information_file.hpp"
#include "locked_joints.hpp"
#include "result_files.hpp"
#include "time_ranges.hpp"
#include "yaml_section.hpp"

#include <pinocchio/multibody/model.hpp>

namespace heft::jobs {

using namespace heft::identify;

namespace fs = std::filesystem;

void IdentifyJob::Config::validate() const {
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
struct Section : yaml::YamlSection {
  Section(const YAML::Node& node, std::string path, const std::string& source)
      : yaml::YamlSection(node, std::move(path), source, "docs/guide/identify.md") {}
};
using yaml::located;

// The `identify:` section.
void readIdentify(const YAML::Node& node, const std::string& source, IdentifyJob::Config& config) {
  Section s(node, "identify", source);
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
  if (s.has("payload")) {
    const YAML::Node n = s.raw("payload");
    try {
      config.set.payload_bodies = n.as<std::vector<std::string>>();
    } catch (const YAML::Exception&) {
      s.fail(n, "identify.payload", "expected a list of body names");
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
  if (auto joints = s.namesOrBool("torque_offsets")) {
    config.options.problem.identify_torque_offsets = true;
    config.options.problem.torque_offset_joints = *joints;
  }
  s.finish();
}

// The `prior:` section.
void readPrior(const YAML::Node& node, const std::string& source, IdentifyJob::Config& config) {
  Section s(node, "prior", source);
  s.read("mass_relative_std", config.set.body_prior.mass_relative_std, yaml::positive);
  s.read("first_moment_relative_std", config.set.body_prior.first_moment_relative_std,
         yaml::positive);
  s.read("inertia_relative_std", config.set.body_prior.inertia_relative_std, yaml::positive);
  s.read("length_scale", config.set.body_prior.length_scale, yaml::positive);
  s.read("payload_mass_relative_std", config.set.payload_prior.mass_relative_std, yaml::positive);
  s.read("payload_first_moment_relative_std", config.set.payload_prior.first_moment_relative_std,
         yaml::positive);
  s.read("payload_inertia_relative_std", config.set.payload_prior.inertia_relative_std,
         yaml::positive);
  s.read("payload_length_scale", config.set.payload_prior.length_scale, yaml::positive);
  s.read("friction_coulomb", config.set.friction_prior.gamma[3]);
  s.read("friction_viscous", config.set.friction_prior.gamma[5]);
  double log_std = -1;
  s.read("friction_log_std", log_std);
  if (log_std != -1) config.set.friction_prior.log_std.setConstant(log_std);
  s.read("armature_median", config.options.problem.armature_prior_median, yaml::positive);
  s.read("armature_log_std", config.options.problem.armature_prior_log_std, yaml::positive);
  s.read("torque_offset_std", config.options.problem.torque_offset_prior_std, yaml::positive);
  s.finish();
}

// The `least_squares:` section.
void readLeastSquares(const YAML::Node& node, const std::string& source,
                      IdentifyJob::Config& config) {
  Section s(node, "least_squares", source);
  s.read("rank_tolerance", config.options.least_squares.rank_tolerance,
         yaml::inOpenInterval(0, 1, "a value"));
  if (s.has("loss")) config.options.least_squares.loss = located(s, "loss", parseRobustLoss);
  s.read("loss_scale", config.options.least_squares.loss_scale, yaml::positive);
  s.read("robust_iterations", config.options.least_squares.robust_iterations, yaml::positiveCount);
  s.finish();
}

// The `energy:` section.
void readEnergy(const YAML::Node& node, const std::string& source, IdentifyJob::Config& config) {
  Section s(node, "energy", source);
  s.read("interval", config.options.energy.interval, yaml::positiveCount);
  s.finish();
}

// The `map:` section.
void readMap(const YAML::Node& node, const std::string& source, IdentifyJob::Config& config) {
  Section s(node, "map", source);
  s.read("max_iterations", config.options.map.max_iterations, yaml::positiveCount);
  s.read("function_tolerance", config.options.map.function_tolerance, yaml::positive);
  s.read("step_tolerance", config.options.map.step_tolerance, yaml::positive);
  s.read("gradient_tolerance", config.options.map.gradient_tolerance, yaml::positive);
  s.read("min_channel_std", config.options.map.min_channel_std, yaml::positive);
  s.read("boundary_restart", config.options.map.boundary_restart);
  s.read("total_mass", config.total_mass, yaml::positive);
  if (s.has("loss")) config.options.map.loss = located(s, "loss", parseRobustLoss);
  s.read("loss_scale", config.options.map.loss_scale, yaml::positive);
  config.symmetric = s.namePairs("symmetric");
  s.finish();
}

// The `truth:` section.
void readTruth(const YAML::Node& node, const std::string& source, IdentifyJob::Config& config) {
  Section s(node, "truth", source);
  if (s.has("friction")) {
    const YAML::Node n = s.raw("friction");
    if (!n.IsSequence()) s.fail(n, "truth.friction", "expected a list of {joint, coulomb, ...}");
    for (const auto& item : n) {
      Section f(item, "truth.friction[]", source);
      results::JointFrictionTruth t;
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

}  // namespace

// The `preparation:` section (shared with heft predict).
void readPreparationSection(const YAML::Node& node, const std::string& source,
                            PreparationOptions& p) {
  Section s(node, "preparation", source);
  if (s.has("acceleration")) p.acceleration = located(s, "acceleration", parseAccelerationMethod);
  s.read("window", p.filter.window);
  s.read("order", p.filter.order);
  s.read("smooth_velocity", p.smooth_velocity);
  s.read("commanded_torque", p.use_commanded_torque);
  s.read("decimation", p.decimation, yaml::positiveCount);
  s.read("start_time", p.start_time);
  s.read("end_time", p.end_time);
  for (const auto& [start, end] : s.timeRanges("exclude")) p.exclude.push_back({start, end});
  if (s.has("base_state")) {
    p.base_state = located(s, "base_state", [](const std::string& v) {
      if (v == "auto") return BaseStateSource::Auto;
      if (v == "log") return BaseStateSource::Log;
      if (v == "estimate") return BaseStateSource::Estimate;
      if (v == "truth") return BaseStateSource::Truth;
      throw InputError("expected auto, log, estimate or truth, got '" + v + "'");
    });
  }
  s.read("level_ground", p.level_ground);
  s.read("detect_contacts", p.detect_contacts);
  s.read("widen_contacts", p.widen_contacts);
  s.read("contact_height", p.contact.height, yaml::positive);
  s.read("contact_speed", p.contact.speed, yaml::positive);
  s.read("ground_height", p.contact.ground_height, yaml::finite);
  s.read("contact_guard", p.contact_guard, yaml::nonNegative);
  p.contact_points = yaml::readContactPoints(s, "contact_points");
  s.finish();
}

// The `problem:` section (shared with heft predict).
void readProblemSection(const YAML::Node& node, const std::string& source, ProblemOptions& p) {
  Section s(node, "problem", source);
  if (s.has("friction_form")) p.friction_form = located(s, "friction_form", parseFrictionForm);
  s.read("coulomb_rate", p.coulomb_rate, yaml::positive);
  if (s.has("projection")) p.projection = located(s, "projection", parseProjection);
  s.read("contact_offset", p.contact_offset, yaml::finite);
  s.read("min_speed", p.min_speed, yaml::nonNegative);
  s.read("base_tilt", p.estimate_base_tilt);
  s.finish();
}

IdentifyJob::Config IdentifyJob::parse(const std::string& yaml_text, const std::string& source,
                                       const std::string& base_dir) {
  YAML::Node root = yaml::loadYamlMapping(yaml_text, source, "robot, log, method, identify, ...");

  Config config;
  config.source = source;

  Section top(root, "", source);
  // `log` may list several recordings that share the parameters
  std::tie(config.robot, config.log, config.more_logs) =
      yaml::readRobotAndLogs(top, root, base_dir);
  config.locked_joints = yaml::readLockedJoints(top);
  if (top.has("base")) {
    config.base = located(top, "base", model::parseBaseType);
  }
  if (top.has("method")) config.options.method = located(top, "method", parseMethod);

  readIdentify(top.raw("identify"), source, config);
  readPrior(top.raw("prior"), source, config);
  readPreparationSection(top.raw("preparation"), source, config.options.preparation);
  readProblemSection(top.raw("problem"), source, config.options.problem);
  readLeastSquares(top.raw("least_squares"), source, config);
  readEnergy(top.raw("energy"), source, config);
  readMap(top.raw("map"), source, config);
  readTruth(top.raw("truth"), source, config);
  for (const auto& [start, end] : top.timeRanges("validation"))
    config.validation.push_back({start, end});
  top.raw("robot");
  top.raw("log");
  top.raw("base");
  top.raw("method");
  top.finish();
  yaml::validateNamingSource(config, source);
  return config;
}

IdentifyJob::Config IdentifyJob::load(const std::string& path) {
  return parse(io::readTextFile(path), path, yaml::configFolder(path));
}

// ---- job ----------------------------------------------------------------------------------------

namespace {

std::string fixed(double x, int precision = 4) { return formatNumber(x, precision); }

// A MAP estimate on (or near) the consistency boundary whose prior pulls hard: the prior cannot
// reach the data's answer. Names the prior to widen and by about how much.
void warnAboutTightPriors(const results::BodyEstimate& b, bool moved_inside,
                          const IdentifyJob::Config& config, std::vector<std::string>& warnings) {
  if (!moved_inside && b.relative_margin >= results::kNearBoundaryRelativeMargin) return;
  const Vector10 z = (b.pi - b.prior_pi).cwiseQuotient(b.prior_std.cwiseMax(1e-300));
  const double mass = std::abs(z[0]), first = z.segment<3>(1).cwiseAbs().maxCoeff(),
               inertia = z.tail<6>().cwiseAbs().maxCoeff();
  const double worst = std::max({mass, first, inertia});
  if (worst < 2) return;
  const bool payload = std::find(config.set.payload_bodies.begin(), config.set.payload_bodies.end(),
                                 b.name) != config.set.payload_bodies.end();
  const model::BodyPriorOptions& prior = payload ? config.set.payload_prior : config.set.body_prior;
  const std::string prefix = payload ? "prior.payload_" : "prior.";
  std::string key;
  double value = 0;
  if (worst == mass) {
    key = "mass_relative_std";
    value = prior.mass_relative_std;
  } else if (worst == first) {
    key = "first_moment_relative_std";
    value = prior.first_moment_relative_std;
  } else {
    key = "inertia_relative_std";
    value = prior.inertia_relative_std;
  }
  const double factor = std::ceil(worst / 2);
  warnings.push_back(
      "body " + b.name + ": the estimate sits on the consistency boundary with its " +
      (worst == mass    ? "mass"
       : worst == first ? "first moment"
                        : "inertia") +
      " " + fixed(worst, 2) +
      " prior standard deviations from the prior. Either the prior is too tight (widen " + prefix +
      key + " from " + fixed(value, 2) + " to about " + fixed(value * factor, 2) +
      (payload ? "" : ", or declare the body in identify.payload") +
      ") or the data carry an error the model lacks (torque offsets, contact changes, a wrong "
      "clock): compare held-out predictions (validation:) before trusting either");
}

// Appends to `rows` the measured torque and both models' predictions for every problem row of the
// samples `preparation` takes from each recording (the fitted ones, or the held-out ranges).
void appendTorqueRows(const model::RobotModel& robot, const std::vector<const io::Log*>& logs,
                      const model::IdentifiedSet& set, const IdentifyJob::Config& config,
                      const PreparationOptions& preparation, bool held_out,
                      const Eigen::VectorXd& nominal, const Eigen::VectorXd& estimate,
                      IdentifyJob::Result::TorqueRows& rows) {
  for (std::size_t l = 0; l < logs.size(); ++l) {
    Samples samples;
    try {
      samples = prepareSamples(robot, *logs[l], preparation);
    } catch (const InputError&) {
      continue;  // a recording with no samples in these ranges
    }
    const StackedProblem problem = buildProblem(robot, samples, set, config.options.problem);
    const LinearSystem system = torqueSystem(problem);
    const Eigen::VectorXd nominal_error = system.y - system.Phi * nominal;
    const Eigen::VectorXd identified_error = system.y - system.Phi * estimate;
    for (int r = 0; r < problem.rows(); ++r) {
      const double measured = problem.G.row(r).dot(samples.tau.col(problem.sample[r]));
      rows.recording.push_back(static_cast<int>(l));
      rows.time.push_back(samples.time[problem.sample[r]]);
      rows.channel.push_back(problem.channel[r]);
      rows.held_out.push_back(held_out);
      rows.measured.push_back(measured);
      rows.nominal.push_back(measured - nominal_error[r]);
      rows.identified.push_back(measured - identified_error[r]);
    }
  }
}

// The held-out prediction of the priors' model and of the estimate, on the validation ranges only.
std::vector<results::TorquePrediction> predictHeldOut(const model::RobotModel& robot,
                                                      const std::vector<const io::Log*>& logs,
                                                      const model::IdentifiedSet& set,
                                                      const IdentifyJob::Config& config,
                                                      const Eigen::VectorXd& nominal,
                                                      const Eigen::VectorXd& estimate) {
  PreparationOptions preparation = config.options.preparation;
  preparation.only = config.validation;
  std::vector<Samples> parts;
  for (const io::Log* log : logs) {
    try {
      parts.push_back(prepareSamples(robot, *log, preparation));
    } catch (const InputError&) {
      if (logs.size() == 1) throw;  // a recording without held-out samples adds none
    }
  }
  const Samples samples = concatenate(parts);
  const StackedProblem problem = buildProblem(robot, samples, set, config.options.problem);
  return {predictTorques("nominal", problem, samples, nominal),
          predictTorques("identified", problem, samples, estimate)};
}

}  // namespace

bool IdentifyJob::Result::writable() const {
  if (status != Status::Converged && status != Status::MaxIterations) return false;
  for (const results::BodyEstimate& b : bodies)
    if (!b.consistent) return false;
  return true;
}

std::vector<model::LinearConstraint> IdentifyJob::mapConstraints(const model::RobotModel& robot,
                                                                 const model::IdentifiedSet& set,
                                                                 const Config& config) {
  // the layout of the constraints is the problem's: bodies in the set's order
  ParameterLayout layout;
  for (const model::BodyBlock& b : set.bodies) {
    layout.body_names.push_back(b.name);
    layout.bodies.push_back(b.joint);
  }
  std::vector<model::LinearConstraint> constraints;
  if (config.total_mass)
    constraints.push_back(totalMassConstraint(robot, layout, *config.total_mass));
  for (const auto& [left, right] : config.symmetric)
    constraints.push_back(symmetryConstraint(layout, left, right));
  return constraints;
}

IdentifyJob::Result IdentifyJob::fromIdentification(const Config& config,
                                                    const model::IdentifiedSet& set,
                                                    const IdentifyResult& run) {
  Result result;
  result.config = config;
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
  result.base_tilt_estimated = run.base_tilt_estimated;
  result.base_tilt = run.base_tilt;
  result.base_tilt_separation = run.base_tilt_separation;

  const ParameterLayout& layout = run.layout;
  for (int k = 0; k < layout.numBodies(); ++k) {
    const Vector10 prior_std = set.bodies[k].prior_covariance.diagonal().cwiseSqrt();
    const Vector10 prior_pi = run.nominal.segment<10>(10 * k);
    Vector10 pi = run.estimate.segment<10>(10 * k);
    // MAP iterates are consistent by construction, but when the data pull a body against the
    // boundary the converged theta sits there up to rounding: moved inside, and reported.
    const bool moved =
        run.method == Method::Map &&
        results::moveInsideMargin(layout.body_names[k], pi, prior_pi, result.warnings);
    if (moved) result.linear.segment<10>(10 * k) = pi;
    result.bodies.push_back(
        results::makeBodyEstimate(layout.body_names[k], prior_pi, prior_std, pi,
                                  run.covariance.block(10 * k, 10 * k, 10, 10)));
    if (run.method == Method::Map)
      warnAboutTightPriors(result.bodies.back(), moved, config, result.warnings);
    if (!result.bodies.back().consistent)
      result.warnings.push_back("body " + layout.body_names[k] +
                                ": the estimate is not physically consistent (method " +
                                toString(run.method) + "; map keeps every iterate consistent)");
  }
  results::appendNearBoundaryWarnings(result.bodies, result.warnings);
  for (int f = 0; f < layout.numFriction(); ++f) {
    results::JointFrictionEstimate e;
    e.joint = layout.friction_joints[f];
    const int o = layout.frictionOffset() + 2 * f;
    e.coulomb = run.estimate[o];
    e.viscous = run.estimate[o + 1];
    e.coulomb_std = run.stddev[o];
    e.viscous_std = run.stddev[o + 1];
    e.coulomb_prior = run.nominal[o];
    e.viscous_prior = run.nominal[o + 1];
    if (run.map && config.options.problem.friction_form == FrictionForm::Full &&
        f < static_cast<int>(run.map->friction.size())) {
      const dynamics::Vector6& g = run.map->friction[f].gamma;
      e.gamma.assign(g.data(), g.data() + 6);
    }
    result.friction.push_back(e);
  }
  for (int a = 0; a < layout.numArmature(); ++a)
    result.armature.emplace_back(layout.armature_joints[a],
                                 run.estimate[layout.armatureOffset() + a]);
  for (int o = 0; o < layout.numTorqueOffsets(); ++o)
    result.torque_offsets.emplace_back(layout.torque_offset_joints[o],
                                       run.estimate[layout.torqueOffsetStart() + o],
                                       run.stddev[layout.torqueOffsetStart() + o]);
  if (run.map) result.information = run.map->information;
  return result;
}

IdentifyJob::Result IdentifyJob::run(const Config& config, Progress& progress) {
  config.validate();
  progress.start();
  auto say = [&](const std::string& line) { progress.say(line); };

  std::vector<std::string> paths{config.log};  // and further recordings sharing the parameters
  paths.insert(paths.end(), config.more_logs.begin(), config.more_logs.end());
  const JobLogs read =
      readJobLogs(config.robot, config.base, config.locked_joints, paths, config.source, say);
  const model::RobotModel& robot = read.robot;
  const io::Log& log = read.logs.front();
  const std::vector<const io::Log*> logs = read.pointers();
  const io::DataQualityReport data_quality = io::assessDataQuality(log, robot.pinocchio());
  const model::IdentifiedSet set = model::IdentifiedSet::build(robot, config.set);
  IdentifyOptions options = config.options;
  if (!config.validation.empty()) {
    // held-out ranges (applied to every recording) hold samples and leave some to fit on
    requireRangesHoldSamples(config.validation, logs, config.source + ": validation", true);
    for (const TimeRange& r : config.validation) options.preparation.exclude.push_back(r);
  }
  if (options.method == Method::Map) options.map.constraints = mapConstraints(robot, set, config);
  say("identifying " + set.summary() + " with method " + toString(options.method));
  const IdentifyResult run = heft::identify::identify(robot, logs, set, options);
  say("done: " + toString(run.status) + (run.message.empty() ? "" : " (" + run.message + ")") +
      ", " + std::to_string(run.samples) + " samples, " + std::to_string(run.rows) + " rows");

  Result result = fromIdentification(config, set, run);
  const ParameterLayout& layout = run.layout;
  // samples prepared again (fitted rows, held-out ranges) get the tilt the fit found
  Config corrected = config;
  corrected.options.preparation.base_tilt = run.base_tilt;
  corrected.options.problem.estimate_base_tilt = false;
  options.preparation.base_tilt = run.base_tilt;
  appendDataQualityWarnings(data_quality, result.warnings);
  result.data_quality = data_quality;
  if (!config.validation.empty()) {
    if (run.status == Status::Converged || run.status == Status::MaxIterations) {
      say("predicting the held-out ranges");
      result.heldout = predictHeldOut(robot, logs, set, corrected, run.nominal, result.linear);
      if (config.options.problem.friction_form == FrictionForm::Full && layout.numFriction() > 0)
        result.warnings.push_back(
            "held-out prediction: friction as Coulomb + viscous (the full form's Stribeck terms "
            "are not in it)");
    } else {
      result.warnings.push_back("held-out prediction skipped: the solve failed");
    }
  }
  if (run.status == Status::Converged || run.status == Status::MaxIterations) {
    appendTorqueRows(robot, logs, set, corrected, options.preparation, false, run.nominal,
                     result.linear, result.torques);
    if (!config.validation.empty()) {
      PreparationOptions heldout = corrected.options.preparation;
      heldout.only = config.validation;
      appendTorqueRows(robot, logs, set, corrected, heldout, true, run.nominal, result.linear,
                       result.torques);
    }
  }
  result.time_s = progress.seconds();
  return result;
}

// ---- outputs ------------------------------------------------------------------------------------

std::string IdentifyJob::Result::refusal() const {
  if (writable()) return "";
  return status == Status::Failed ? "the solve failed (" + message + ")"
                                  : std::string("an estimate is not physically consistent");
}

std::string IdentifyJob::Result::report() const {
  std::ostringstream s;
  s << "method    " << toString(method) << "\n"
    << "status    " << toString(status) << (message.empty() ? "" : ": " + message) << "\n"
    << "data      " << samples << " samples, " << rows << " rows; " << iterations
    << " iteration(s), " << fixed(time_s, 3) << " s\n"
    << "regressor rank " << rank << " of " << dimension << ", condition number "
    << fixed(condition_number, 4) << "\n";
  s << "\n" << results::bodiesReport(bodies);
  if (!friction.empty()) {
    s << "\nfriction (prior -> estimate +- std)\n";
    for (const results::JointFrictionEstimate& f : friction)
      s << "  " << f.joint << "  coulomb " << fixed(f.coulomb_prior) << " -> " << fixed(f.coulomb)
        << " +- " << fixed(f.coulomb_std, 2) << " N m, viscous " << fixed(f.viscous_prior) << " -> "
        << fixed(f.viscous) << " +- " << fixed(f.viscous_std, 2) << " N m s/rad\n";
  }
  if (!armature.empty()) {
    s << "\narmature\n";
    for (const auto& [joint, value] : armature)
      s << "  " << joint << "  " << fixed(value) << " kg m^2\n";
  }
  if (!torque_offsets.empty()) {
    s << "\ntorque offsets (measured = true + offset)\n";
    for (const auto& [joint, value, std] : torque_offsets)
      s << "  " << joint << "  " << fixed(value) << " +- " << fixed(std, 2) << " N m\n";
  }
  if (!heldout.empty()) {
    s << "\nheld-out prediction (validation ranges, " << heldout.front().samples
      << " samples the fit did not see)\n"
      << results::predictionReport(heldout);
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
  if (base_tilt_estimated) {
    const double deg = 180.0 / M_PI;
    s << "\nbase tilt (problem.base_tilt): " << fixed(base_tilt[0] * deg, 3) << " deg about x, "
      << fixed(base_tilt[1] * deg, 3) << " deg about y of the base, separation "
      << fixed(base_tilt_separation, 3) << "\n";
  }
  if (truth) s << "\nerrors against the log's truth group\n" << truth->report();
  if (!warnings.empty()) {
    s << "\nwarnings\n";
    for (const std::string& w : warnings) s << "  - " << w << "\n";
  }
  return s.str();
}

nlohmann::json IdentifyJob::Result::toJson() const {
  nlohmann::json j;
  j["schema_version"] = results::kResultSchemaVersion;
  j["method"] = toString(method);
  j["parameters"] = results::parametersJson(bodies);
  j["friction"] = results::frictionJson(friction);
  // the same writers as estimate's: one shape for heft predict to read
  std::vector<results::JointScalarEstimate> armature_estimates, offset_estimates;
  for (const auto& [joint, value] : armature) armature_estimates.push_back({joint, value, 0, 0});
  for (const auto& [joint, value, std] : torque_offsets)
    offset_estimates.push_back({joint, value, std, 0});
  j["armature"] = results::armatureJson(armature_estimates);
  j["torque_offsets"] = results::torqueOffsetsJson(offset_estimates);
  if (!config.validation.empty()) {
    nlohmann::json ranges = nlohmann::json::array();
    for (const TimeRange& r : config.validation) ranges.push_back({r.start, r.end});
    nlohmann::json predictions = nlohmann::json::array();
    for (const results::TorquePrediction& p : heldout)
      predictions.push_back(results::predictionJson(p));
    j["validation"] = {{"ranges_s", ranges}, {"predictions", predictions}};
  }
  j["robot"] = {{"name", config.robot}, {"base", model::toString(config.base)}};
  j["covariance"] = {{"names", names}, {"matrix", results::jsonArray(covariance)}};
  j["residuals"] = {{"channels", channel_names},
                    {"rms_before", results::jsonArray(rms_before)},
                    {"rms_after", results::jsonArray(rms_after)}};
  j["identifiability"] = {{"rank", rank},
                          {"dimension", dimension},
                          {"condition_number", condition_number},
                          {"base_parameters", base_parameters}};
  j["summary"] = {{"status", toString(status)}, {"message", message}, {"iterations", iterations},
                  {"time_s", time_s},           {"samples", samples}, {"rows", rows}};
  if (base_tilt_estimated) {
    j["base_tilt"] = {{"about_base_x_rad", base_tilt[0]},
                      {"about_base_y_rad", base_tilt[1]},
                      {"separation", base_tilt_separation}};
  }
  j["warnings"] = warnings;
  if (truth) j["truth_errors"] = results::truthErrorsJson(*truth);
  if (data_quality) j["data_quality"] = results::dataQualityJson(*data_quality);
  return j;
}

std::vector<std::string> IdentifyJob::write(const Result& result, const std::string& out_dir,
                                            const WriteOptions& options) {
  std::vector<std::string> inputs{result.config.log};
  inputs.insert(inputs.end(), result.config.more_logs.begin(), result.config.more_logs.end());
  const OutputFolder folder(
      out_dir, {"result.json", "robot.urdf", "torques.csv", "information.json"}, inputs, options);
  const std::string urdf_out = folder.path("robot.urdf");
  const std::string json_out = folder.path("result.json");
  std::vector<std::string> written;
  // The URDF first: if it is not written, result.json says why.
  nlohmann::json json = result.toJson();
  const bool usable = result.status == Status::Converged || result.status == Status::MaxIterations;
  writeUrdf(json, result.config.robot, result.config.base, result.config.locked_joints,
            result.bodies, urdfRefusal(result.writable(), usable), urdf_out, options.overwrite,
            written);
  io::writeTextFileAtomically(json_out, json.dump(2) + "\n", options.overwrite);
  written.push_back(json_out);
  // After result.json: a failure to write the rows never loses the estimate.
  if (!result.torques.time.empty()) {
    const IdentifyJob::Result::TorqueRows& t = result.torques;
    std::ostringstream csv;
    csv << "recording,time,channel,held_out,measured,nominal,identified\n";
    for (std::size_t r = 0; r < t.time.size(); ++r)
      csv << t.recording[r] << ',' << formatNumber(t.time[r], 17) << ','
          << result.channel_names[static_cast<std::size_t>(t.channel[r])] << ','
          << (t.held_out[r] ? 1 : 0) << ',' << formatNumber(t.measured[r], 17) << ','
          << formatNumber(t.nominal[r], 17) << ',' << formatNumber(t.identified[r], 17) << '\n';
    io::writeTextFileAtomically(folder.path("torques.csv"), csv.str(), options.overwrite);
    written.push_back(folder.path("torques.csv"));
  }
  if (result.information)
    writeInformationFile(folder.path("information.json"), *result.information, result.config.robot,
                         result.config.options.problem.torque_offset_prior_std, options.overwrite,
                         written);
  throwIfUrdfRefused(json, json_out);
  return written;
}

}  // namespace heft::jobs
