#include "heft/jobs/filter_job.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <sstream>
#include <tuple>

#include <pinocchio/algorithm/joint-configuration.hpp>

#include "heft/basestate/base_state.hpp"
#include "heft/common/error.hpp"
#include "heft/common/format.hpp"
#include "heft/filter/replay.hpp"
#include "heft/inertia/inertia.hpp"
#include "heft/io/atomic_file.hpp"
#include "heft/io/joint_binding.hpp"
#include "heft/io/log_io.hpp"
#include "heft/io/signal.hpp"
#include "heft/model/contact_points.hpp"
#include "heft/model/model.hpp"
#include "heft/results/json.hpp"
#include "locked_joints.hpp"
#include "result_files.hpp"
#include "yaml_section.hpp"

namespace heft::jobs {

using namespace heft::filter;
using BaseStateSource = FilterJob::BaseStateSource;
using ContactForceSource = FilterJob::ContactForceSource;

namespace fs = std::filesystem;

// ---- config ------------------------------------------------------------------------------------

void FilterJob::Config::validate() const {
  require(!robot.empty(), source + ": robot", "a robot short name or model path", "nothing");
  require(!log.empty(), source + ": log", "a log path", "nothing");
  require(!bodies.empty(), source + ": bodies", "at least one body name", "none");
  options.validate();
  require(settle_tolerance > 0 && settle_tolerance < 1, source + ": metrics.settle_tolerance",
          "a fraction in (0, 1)", formatNumber(settle_tolerance));
  if (start_time && end_time) {
    require(*end_time > *start_time, source + ": end_time", "after start_time",
            formatNumber(*end_time));
  }
  const bool needs_points = contact_forces == ContactForceSource::Truth ||
                            contact_forces == ContactForceSource::Projected;
  require(!needs_points || !contacts.empty(), source + ": contacts",
          "the contact points (contact_forces: truth or projected)", "none");
}

namespace {

struct Section : yaml::YamlSection {
  Section(const YAML::Node& node, std::string path, const std::string& source)
      : yaml::YamlSection(node, std::move(path), source, "docs/guide/filter.md") {}
};

}  // namespace

FilterJob::Config FilterJob::parse(const std::string& yaml_text, const std::string& source,
                                   const std::string& base_dir) {
  const YAML::Node root =
      yaml::loadYamlMapping(yaml_text, source, "robot, log, bodies, filter, ...");
  Config config;
  config.source = source;

  Section top(root, "", source);
  std::tie(config.robot, config.log) = yaml::readRobotAndLog(top, root, base_dir);
  config.locked_joints = yaml::readLockedJoints(top);
  if (!top.has("bodies")) top.fail(root, "bodies", "missing (a list of body names to estimate)");
  {
    const YAML::Node n = top.raw("bodies");
    try {
      config.bodies = n.IsSequence() ? n.as<std::vector<std::string>>()
                                     : std::vector<std::string>{n.as<std::string>()};
    } catch (const YAML::Exception&) {
      top.fail(n, "bodies", "expected a body name or a list of them");
    }
  }
  top.read("baseline", config.baseline);
  if (top.has("state")) config.options.state = yaml::located(top, "state", parseState);
  if (top.has("base_state")) {
    config.base_state = yaml::located(top, "base_state", [](const std::string& s) {
      if (s == "auto") return BaseStateSource::Auto;
      if (s == "log") return BaseStateSource::Log;
      if (s == "estimate") return BaseStateSource::Estimate;
      if (s == "truth") return BaseStateSource::Truth;
      throw InputError("expected auto, log, estimate or truth, got '" + s + "'");
    });
  }
  top.read("level_ground", config.level_ground);
  top.read("smooth_base_state", config.smooth_base_state);
  if (top.has("contact_forces")) {
    config.contact_forces = yaml::located(top, "contact_forces", [](const std::string& s) {
      if (s == "none") return ContactForceSource::None;
      if (s == "truth") return ContactForceSource::Truth;
      if (s == "sensors") return ContactForceSource::Sensors;
      if (s == "projected") return ContactForceSource::Projected;
      throw InputError("expected none, truth, sensors or projected, got '" + s + "'");
    });
  }
  config.contacts = yaml::readContactPoints(top, "contacts");
  top.read("start_time", config.start_time);
  top.read("end_time", config.end_time);
  {
    Section s(top.raw("filter"), "filter", source);
    InertialEkfOptions& o = config.options;
    s.read("difference_half_width", o.difference_half_width, [](int n) {
      if (n < 1 || n > 1000)
        throw InputError("expected an integer in [1, 1000], got " + std::to_string(n));
    });
    s.read("max_sample_gap", o.max_sample_gap, yaml::positive);
    s.read("calibration_duration", o.calibration_duration, yaml::nonNegative);
    s.read("prior_std_log", o.prior_std_log, yaml::positive);
    s.read("prior_std_length", o.prior_std_length, yaml::positive);
    s.read("process_std_log", o.process_std_log, yaml::nonNegative);
    s.read("process_std_length", o.process_std_length, yaml::nonNegative);
    s.read("joint_torque_std", o.joint_torque_std, yaml::positive);
    s.read("base_force_std", o.base_force_std, yaml::positive);
    s.read("base_moment_std", o.base_moment_std, yaml::positive);
    s.read("gating", o.gating);
    s.read("gate_probability", o.gate_probability, yaml::inOpenInterval(0, 1, "a probability"));
    s.read("gate_threshold", o.gate_threshold, yaml::nonNegative);
    s.read("gate_max_consecutive", o.gate_max_consecutive, yaml::nonNegativeCount);
    s.read("max_mass_rate", o.max_mass_rate, yaml::nonNegative);
    s.read("rate_limit_always", o.rate_limit_always);
    s.finish();
  }
  {
    Section s(top.raw("metrics"), "metrics", source);
    s.read("settle_tolerance", config.settle_tolerance, yaml::inOpenInterval(0, 1, "a fraction"));
    s.finish();
  }
  top.finish();
  try {
    config.validate();
  } catch (const InputError& e) {
    throw InputError(std::string(e.what()));
  }
  return config;
}

FilterJob::Config FilterJob::load(const std::string& path) {
  return parse(io::readTextFile(path), path, yaml::configFolder(path));
}

// ---- replay ------------------------------------------------------------------------------------

namespace {

// What the filter's force input holds beyond point forces: the sensors' frames, or the stance
// frames whose forces are projected out. Checks the log holds what the source reads.
ExternalInputs externalInputs(const pinocchio::Model& model, bool free_flyer, const io::Log& log,
                              const FilterJob::Config& config) {
  ExternalInputs inputs;
  if (config.contact_forces == ContactForceSource::Sensors) {
    require(log.force_torque.has_value(), config.log + ": force_torque",
            "a force/torque group (contact_forces: sensors reads its wrenches)", "none");
    const auto& frames = log.force_torque->frames;
    for (std::size_t i = 0; i < frames.size(); ++i) {
      const std::string field = config.log + ": force_torque/frames[" + std::to_string(i) + "]";
      require(model.existFrame(frames[i]), field, "a frame of the robot", "\"" + frames[i] + "\"");
      require(model.frames[model.getFrameId(frames[i])].parentJoint > 0, field,
              "a frame on a moving body", "\"" + frames[i] + "\" is fixed to the world");
    }
    inputs.wrench_frames = frames;
  }
  if (config.contact_forces == ContactForceSource::Projected) {
    require(log.contacts.has_value(), config.log + ": contacts",
            "contact flags (contact_forces: projected; kinematic detection is not implemented)",
            "no contacts group");
    const auto& names = log.contacts->names;
    for (std::size_t c = 0; c < config.contacts.size(); ++c) {
      require(std::find(names.begin(), names.end(), config.contacts[c].name) != names.end(),
              config.source + ": contacts[" + std::to_string(c) + "]", "a name in contacts/names",
              "\"" + config.contacts[c].name + "\"");
    }
    inputs.stance_frames = model::groupContactFrames(config.contacts);
    if (free_flyer) {
      // a floating base that never stands is a flying robot: nothing keeps the base rows
      bool touches = false;
      for (std::size_t c = 0; c < config.contacts.size() && !touches; ++c) {
        const auto column =
            std::find(names.begin(), names.end(), config.contacts[c].name) - names.begin();
        touches = (log.contacts->flags.col(column).array() != 0).any();
      }
      require(touches, config.log + ": contacts/flags",
              "some contact of contacts: touching down (contact_forces: projected, floating base)",
              "no flag ever 1");
    }
  }
  return inputs;
}

// The base pose and twist of the kept joint samples `keep` (times `time`) into s.q and s.v: the
// log's, heft's own estimate, or the truth group's (studies), as config.base_state says.
void setBaseState(const pinocchio::Model& model, const io::Log& log,
                  const FilterJob::Config& config, const std::vector<int>& keep,
                  const Eigen::VectorXd& time, ReplaySamples& s,
                  std::vector<std::string>& warnings) {
  const io::JointSeries& js = log.joints;
  const int n = static_cast<int>(keep.size());
  Eigen::MatrixXd pose, twist;
  const bool in_log = js.base_pose.rows() > 0 && js.base_twist.rows() > 0;
  if (config.base_state != BaseStateSource::Truth) {
    Eigen::MatrixXd estimated_pose, estimated_twist;
    const bool estimate = config.base_state == BaseStateSource::Estimate ||
                          (config.base_state == BaseStateSource::Auto && !in_log);
    if (estimate) {
      basestate::BaseStateOptions base_options;
      base_options.filter.level_ground = config.level_ground;
      // causal by default: a control loop has no later samples to smooth with
      base_options.smooth = config.smooth_base_state;
      const basestate::BaseStateTrajectory e = basestate::estimateBaseState(
          model, log, basestate::logContactPoints(model, log, config.contacts), base_options);
      estimated_pose = e.base_pose;
      estimated_twist = e.base_twist;
      warnings.push_back(std::string("base pose and twist estimated from the IMU, the legs and the "
                                     "contacts") +
                         (config.smooth_base_state ? " (smoothed: an offline replay)" : ""));
    } else {
      require(in_log, config.log + ": joints/base_pose",
              "a base pose and twist (free-flyer robot; base_state: estimate runs the "
              "base-state estimator)",
              "none");
    }
    const Eigen::MatrixXd& all_pose = estimate ? estimated_pose : js.base_pose;
    const Eigen::MatrixXd& all_twist = estimate ? estimated_twist : js.base_twist;
    pose.resize(n, 7);
    twist.resize(n, 6);
    for (int i = 0; i < n; ++i) {
      pose.row(i) = all_pose.row(keep[i]);
      twist.row(i) = all_twist.row(keep[i]);
    }
  } else {
    require(log.truth && log.truth->base_pose.rows() > 0 && log.truth->base_twist.rows() > 0,
            config.log + ": truth/base_pose", "a truth base pose and twist (base_state: truth)",
            "none");
    const io::TruthSeries& t = *log.truth;
    pose.resize(n, 7);
    pose.leftCols(3) =
        io::interpolateLinear(t.time, t.base_pose.leftCols(3), time, "truth/base_pose");
    pose.rightCols(4) =
        io::interpolateQuaternions(t.time, t.base_pose.rightCols(4), time, "truth/base_pose");
    twist = io::interpolateLinear(t.time, t.base_twist, time, "truth/base_twist");
    warnings.push_back(
        "base pose and twist from the truth group (base_state: truth, for studies only)");
  }
  for (int i = 0; i < n; ++i) {
    s.q.col(i).head<7>() = pose.row(i).transpose();
    s.q.col(i).segment<4>(3).normalize();
    s.v.col(i).head<6>() = twist.row(i).transpose();
  }
}

ReplaySamples samplesFromLog(const pinocchio::Model& model, bool free_flyer, const io::Log& log,
                             const FilterJob::Config& config, const ExternalInputs& inputs,
                             std::vector<std::string>& warnings) {
  const io::JointSeries& js = log.joints;
  // signals read from the truth group are interpolated, never extrapolated: joint samples whose
  // (jittered) time falls outside the truth span are left out
  const bool uses_truth = (free_flyer && config.base_state == BaseStateSource::Truth) ||
                          config.contact_forces == ContactForceSource::Truth;
  const bool truth_span = uses_truth && log.truth && log.truth->time.size() > 0;
  std::vector<int> keep;
  int outside_truth = 0;
  for (Eigen::Index k = 0; k < js.time.size(); ++k) {
    if (config.start_time && js.time[k] < *config.start_time) continue;
    if (config.end_time && js.time[k] > *config.end_time) continue;
    if (truth_span && (js.time[k] < log.truth->time[0] ||
                       js.time[k] > log.truth->time[log.truth->time.size() - 1])) {
      ++outside_truth;
      continue;
    }
    // likewise the sensors' span and the contact flags' (held from their first sample on)
    if (!inputs.wrench_frames.empty() &&
        (js.time[k] < log.force_torque->time[0] ||
         js.time[k] > log.force_torque->time[log.force_torque->time.size() - 1])) {
      ++outside_truth;
      continue;
    }
    if (!inputs.stance_frames.empty() && js.time[k] < log.contacts->time[0]) {
      ++outside_truth;
      continue;
    }
    keep.push_back(static_cast<int>(k));
  }
  if (outside_truth > 0) {
    warnings.push_back(std::to_string(outside_truth) +
                       " joint samples outside the time span of the truth, force_torque or "
                       "contacts group they read left out");
  }
  require(keep.size() >= 3, config.log + ": joints/time",
          "at least 3 samples in [start_time, end_time]", std::to_string(keep.size()));
  const int n = static_cast<int>(keep.size());
  Eigen::VectorXd time(n);
  for (int i = 0; i < n; ++i) time[i] = js.time[keep[i]];

  ReplaySamples s;
  s.time = time;
  s.q.resize(model.nq, n);
  s.v.setZero(model.nv, n);
  s.tau.setZero(model.nv, n);
  const int points = config.contact_forces == ContactForceSource::Truth
                         ? static_cast<int>(config.contacts.size())
                         : 0;
  const int wrenches = static_cast<int>(inputs.wrench_frames.size());
  const int stances = static_cast<int>(inputs.stance_frames.size());
  s.forces.setZero(3 * points + 6 * wrenches + stances, n);
  const Eigen::VectorXd neutral = pinocchio::neutral(model);
  for (int i = 0; i < n; ++i) s.q.col(i) = neutral;
  const io::JointBinding binding = io::bindJoints(model, js.names, config.log + ": joints/names");
  for (int j = 0; j < binding.size(); ++j) {
    const int column = binding.log_column[j];
    for (int i = 0; i < n; ++i) {
      s.q(binding.idx_q[j], i) = js.q(keep[i], column);
      s.v(binding.idx_v[j], i) = js.v(keep[i], column);
      s.tau(binding.idx_v[j], i) = js.tau(keep[i], column);
    }
  }
  if (free_flyer) setBaseState(model, log, config, keep, time, s, warnings);
  if (config.contact_forces == ContactForceSource::Truth) {
    require(log.truth && log.truth->contact_forces.rows() > 0,
            config.log + ": truth/contact_forces", "contact forces (contact_forces: truth)",
            "none");
    const io::TruthSeries& t = *log.truth;
    const Eigen::MatrixXd forces =
        io::interpolateLinear(t.time, t.contact_forces, time, "truth/contact_forces");
    for (std::size_t c = 0; c < config.contacts.size(); ++c) {
      const auto it =
          std::find(t.contact_names.begin(), t.contact_names.end(), config.contacts[c].name);
      require(it != t.contact_names.end(), config.source + ": contacts[" + std::to_string(c) + "]",
              "a name in truth/contact_names", "\"" + config.contacts[c].name + "\"");
      const int column = static_cast<int>(it - t.contact_names.begin());
      s.forces.middleRows(3 * c, 3) = forces.middleCols(3 * column, 3).transpose();
    }
    warnings.push_back(
        "contact forces from the truth group (contact_forces: truth, for studies only)");
  }
  if (wrenches > 0) {
    const io::ForceTorqueSeries& ft = *log.force_torque;
    const Eigen::MatrixXd w =
        io::interpolateLinear(ft.time, ft.wrench, time, "force_torque/wrench");
    s.forces.middleRows(3 * points, 6 * wrenches) = w.transpose();
  }
  if (stances > 0) {
    // a frame is in stance while any of its points' flags is 1 (zero-order hold)
    const io::ContactSeries& c = *log.contacts;
    const io::FlagMatrix flags = io::interpolateFlags(
        c.time, c.flags, time.cwiseMin(c.time[c.time.size() - 1]), "contacts/flags");
    for (int f = 0; f < stances; ++f) {
      for (int p : inputs.stance_frames[f].points) {
        const auto column =
            std::find(c.names.begin(), c.names.end(), config.contacts[p].name) - c.names.begin();
        for (int i = 0; i < n; ++i) {
          if (flags(i, column) != 0) s.forces(3 * points + 6 * wrenches + f, i) = 1;
        }
      }
    }
  }
  return s;
}

std::string fixed(double x, int precision = 4) { return formatNumber(x, precision); }

}  // namespace

FilterJob::Result FilterJob::run(const Config& config, Progress& progress) {
  config.validate();
  progress.start();
  auto say = [&](const std::string& line) { progress.say(line); };
  say("reading " + config.log);
  io::Log log = io::readLog(config.log);
  const model::RobotModel robot =
      robotForLog(model::loadRobot(config.robot), config.locked_joints, log, config.source);
  say("robot " + robot.displayName());
  Result result;
  result.config = config;
  result.robot = robot.displayName();
  result.log = config.log;
  result.scenario = log.meta.scenario;
  result.bodies = config.bodies;
  result.has_truth = log.truth.has_value();
  std::vector<pinocchio::JointIndex> joints;
  std::vector<std::string> truth_names;  // the truth group names bodies by joint (log-format.md)
  for (const std::string& name : config.bodies) {
    joints.push_back(robot.bodyIndex(name));
    truth_names.push_back(robot.pinocchio().names[joints.back()]);
  }
  result.data_quality = io::assessDataQuality(log, robot.pinocchio());
  appendDataQualityWarnings(*result.data_quality, result.warnings);
  const ExternalInputs inputs =
      externalInputs(robot.pinocchio(), robot.hasFreeFlyer(), log, config);
  const ReplaySamples signals =
      samplesFromLog(robot.pinocchio(), robot.hasFreeFlyer(), log, config, inputs, result.warnings);
  if (config.contact_forces == ContactForceSource::Sensors) {
    result.warnings.push_back("contact forces from the force_torque group (" +
                              std::to_string(inputs.wrench_frames.size()) + " sensors)");
  }
  const std::vector<ContactPoint> point_forces = config.contact_forces == ContactForceSource::Truth
                                                     ? config.contacts
                                                     : std::vector<ContactPoint>{};
  if (robot.hasFreeFlyer() && config.contact_forces == ContactForceSource::None) {
    result.warnings.push_back(
        "free-flyer robot without contact forces: the base rows assume no contact");
  }
  Eigen::VectorXd prior(10 * joints.size());
  for (std::size_t k = 0; k < joints.size(); ++k) prior.segment<10>(10 * k) = robot.pi(joints[k]);

  std::vector<InertialEkfOptions::State> states{config.options.state};
  if (config.baseline) {
    states.push_back(config.options.state == InertialEkfOptions::State::LogCholesky
                         ? InertialEkfOptions::State::LinearPi
                         : InertialEkfOptions::State::LogCholesky);
  }
  for (const auto state : states) {
    InertialEkfOptions options = config.options;
    options.state = state;
    InertialEkf filter(robot.pinocchio(), joints, point_forces, inputs, prior, options);
    result.rows = filter.measurementModel().numRows();
    result.gate_threshold = filter.gateThreshold();
    say("replaying " + std::to_string(signals.time.size()) + " samples through the " +
        toString(state) + " filter (" + std::to_string(result.rows) + " rows)");
    result.traces.push_back(replay(filter, signals, config.bodies));
    result.summaries.push_back(summarize(result.traces.back(), truth_names, log.truth,
                                         config.contacts, config.settle_tolerance));
  }
  say("done");
  return result;
}

std::string FilterJob::Result::report() const {
  std::ostringstream s;
  s << "heft filter: " << robot << ", log " << log;
  if (!scenario.empty()) s << " (scenario " << scenario << ")";
  s << "\nestimated bodies:";
  for (const auto& b : bodies) s << " " << b;
  s << "; measurement rows " << rows << ", gate threshold " << fixed(gate_threshold) << "\n";
  for (const FilterRunSummary& r : summaries) {
    const auto& c = r.counters;
    s << "\n"
      << r.estimator << ": " << c.samples << " samples, " << c.updated << " updates, " << c.gated
      << " gated, " << c.overridden << " gate overrides, " << c.rejected << " rejected inputs, "
      << c.failures << " numerical failures, " << c.guarded << " margin guards\n";
    s << "  update() " << fixed(r.update_median_us, 3) << " us median, "
      << fixed(r.update_max_us, 3) << " us max (this machine, with the log replay around it)\n";
    s << "  physically inconsistent for " << fixed(r.inconsistent_time, 4) << " s";
    if (r.first_inconsistent) s << " (first at " << fixed(*r.first_inconsistent, 4) << " s)";
    s << "\n";
    s << "  output caught up with the filter at "
      << (r.caught_up_time ? fixed(*r.caught_up_time, 4) + " s" : std::string("never"))
      << " (start-up rate limit; metrics below start there)\n";
    for (const BodyMetrics& m : r.bodies) {
      s << "  " << m.name << ": final mass " << fixed(m.final.mass_estimate) << " kg (truth "
        << fixed(m.final.mass_true) << "), mass error RMS " << fixed(100 * m.mass_rms_relative, 3)
        << " %, final COM error " << fixed(1000 * m.final.com_error, 3) << " mm\n";
      for (const StepResponse& st : m.steps) {
        s << "    truth step at " << fixed(st.time) << " s: " << fixed(st.mass_before) << " -> "
          << fixed(st.mass_after) << " kg, within tolerance after "
          << (st.settle_time ? fixed(*st.settle_time, 3) + " s" : std::string("never")) << "\n";
      }
      if (m.touchdowns > 0) {
        s << "    largest mass transient after a touchdown: "
          << fixed(m.largest_impact_transient, 3) << " kg (" << m.touchdowns << " touchdowns)\n";
      }
    }
  }
  for (const auto& w : warnings) s << "warning: " << w << "\n";
  return s.str();
}

nlohmann::json FilterJob::Result::toJson() const {
  nlohmann::json j;
  j["schema_version"] = results::kResultSchemaVersion;
  j["robot"] = robot;
  j["log"] = log;
  j["scenario"] = scenario;
  j["bodies"] = bodies;
  j["rows"] = rows;
  j["gate_threshold"] = gate_threshold;
  j["warnings"] = warnings;
  if (data_quality) j["data_quality"] = results::dataQualityJson(*data_quality);
  j["runs"] = nlohmann::json::array();
  for (const FilterRunSummary& r : summaries) {
    nlohmann::json run;
    run["estimator"] = r.estimator;
    run["counters"] = {{"samples", r.counters.samples},      {"updated", r.counters.updated},
                       {"gated", r.counters.gated},          {"overridden", r.counters.overridden},
                       {"rejected", r.counters.rejected},    {"failures", r.counters.failures},
                       {"margin_guards", r.counters.guarded}};
    run["update_median_us"] = r.update_median_us;
    run["update_max_us"] = r.update_max_us;
    run["inconsistent_time_s"] = r.inconsistent_time;
    run["output_caught_up_s"] =
        r.caught_up_time ? nlohmann::json(*r.caught_up_time) : nlohmann::json();
    run["first_inconsistent_s"] =
        r.first_inconsistent ? nlohmann::json(*r.first_inconsistent) : nlohmann::json();
    run["bodies"] = nlohmann::json::array();
    for (const BodyMetrics& m : r.bodies) {
      nlohmann::json b = {{"name", m.name},
                          {"final_mass", m.final.mass_estimate},
                          {"final_truth_mass", m.final.mass_true},
                          {"mass_rms_relative", m.mass_rms_relative},
                          {"final_com_error_m", m.final.com_error},
                          {"final_inertia_relative", m.final.inertia_relative},
                          {"touchdowns", m.touchdowns},
                          {"largest_impact_transient_kg", m.largest_impact_transient}};
      b["steps"] = nlohmann::json::array();
      for (const StepResponse& st : m.steps) {
        b["steps"].push_back({{"time", st.time},
                              {"mass_before", st.mass_before},
                              {"mass_after", st.mass_after},
                              {"settle_time_s", st.settle_time ? nlohmann::json(*st.settle_time)
                                                               : nlohmann::json()}});
      }
      run["bodies"].push_back(b);
    }
    j["runs"].push_back(run);
  }
  return j;
}

std::vector<std::string> FilterJob::write(const Result& result, const std::string& out_dir,
                                          const WriteOptions& options) {
  std::vector<std::string> files{"summary.json"};
  for (std::size_t t = 0; t < result.traces.size(); ++t)
    files.push_back(t == 0 ? "estimates.h5" : "baseline.h5");
  // every output is checked before any is written; the replayed log is never one of them
  const OutputFolder folder(out_dir, files, {result.log}, options);
  const std::string summary = folder.path("summary.json");
  std::vector<std::string> written;
  // A failed HDF5 write must not lose the run: its outcome goes into summary.json, which is
  // written anyway, and the job then ends with exit 1 (a failed computation, not bad input).
  nlohmann::json json = result.toJson();
  std::string estimates_error;
  for (std::size_t t = 0; t < result.traces.size(); ++t) {
    io::Log out;
    out.meta.robot = result.robot;
    out.meta.scenario = result.scenario;
    out.meta.base_type = io::BaseType::Fixed;
    out.estimates = result.traces[t].series;
    const std::string& name = files[t + 1];
    const std::string path = folder.path(name);
    io::WriteOptions log_options;
    log_options.overwrite = true;  // checked above, for every output before writing any
    std::string why;
    json["outputs"][name] = writeLogRecorded(out, path, log_options, written, why);
    if (estimates_error.empty() && !why.empty()) estimates_error = name + ": " + why;
  }
  io::writeTextFileAtomically(summary, json.dump(2) + "\n", true);
  written.push_back(summary);
  if (!estimates_error.empty())
    throw SolveError("estimates not written: " + estimates_error + " (" + summary +
                     " holds the run's summary)");
  return written;
}

}  // namespace heft::jobs
