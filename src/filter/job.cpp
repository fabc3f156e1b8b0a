#include "heft/filter/job.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <sstream>
#include <tuple>

#include <pinocchio/algorithm/joint-configuration.hpp>

#include "heft/common/error.hpp"
#include "heft/common/format.hpp"
#include "heft/inertia/inertia.hpp"
#include "heft/io/atomic_file.hpp"
#include "heft/io/log_io.hpp"
#include "heft/io/signal.hpp"
#include "heft/io/yaml_section.hpp"
#include "heft/model/model.hpp"

namespace heft::filter {

namespace fs = std::filesystem;

// ---- config ------------------------------------------------------------------------------------

void FilterJobConfig::validate() const {
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
  require(contact_forces == ContactForceSource::None || !contacts.empty(), source + ": contacts",
          "the contact points the forces act at (contact_forces: truth)", "none");
}

namespace {

struct Section : io::YamlSection {
  Section(const YAML::Node& node, std::string path, const std::string& source)
      : io::YamlSection(node, std::move(path), source, "docs/filter.md") {}
};

}  // namespace

FilterJobConfig parseFilterJobConfig(const std::string& yaml_text, const std::string& source,
                                     const std::string& base_dir) {
  const YAML::Node root = io::loadYamlMapping(yaml_text, source, "robot, log, bodies, filter, ...");
  FilterJobConfig config;
  config.source = source;

  Section top(root, "", source);
  std::tie(config.robot, config.log) = io::readRobotAndLog(top, root, base_dir);
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
  if (top.has("state")) config.options.state = io::located(top, "state", parseState);
  if (top.has("base_state")) {
    config.base_state = io::located(top, "base_state", [](const std::string& s) {
      if (s == "log") return BaseStateSource::Log;
      if (s == "truth") return BaseStateSource::Truth;
      throw InputError("expected log or truth, got '" + s + "'");
    });
  }
  if (top.has("contact_forces")) {
    config.contact_forces = io::located(top, "contact_forces", [](const std::string& s) {
      if (s == "none") return ContactForceSource::None;
      if (s == "truth") return ContactForceSource::Truth;
      throw InputError("expected none or truth, got '" + s + "'");
    });
  }
  if (top.has("contacts")) {
    const YAML::Node list = top.raw("contacts");
    if (!list.IsSequence()) top.fail(list, "contacts", "expected a list of {name, frame, offset}");
    for (std::size_t i = 0; i < list.size(); ++i) {
      const std::string path = "contacts[" + std::to_string(i) + "]";
      Section c(list[i], path, source);
      ContactPoint point;
      point.name = c.string("name");
      point.frame = c.string("frame");
      if (point.name.empty()) c.fail(list[i], path + ".name", "missing");
      if (point.frame.empty()) c.fail(list[i], path + ".frame", "missing");
      std::vector<double> offset{0, 0, 0};
      c.read("offset", offset);
      if (offset.size() != 3) c.fail(list[i], path + ".offset", "expected [x, y, z] in metres");
      point.offset = Vector3(offset[0], offset[1], offset[2]);
      c.finish();
      config.contacts.push_back(point);
    }
  }
  top.read("start_time", config.start_time);
  top.read("end_time", config.end_time);
  {
    Section s(top.raw("filter"), "filter", source);
    InertialEkfOptions& o = config.options;
    s.read("difference_half_width", o.difference_half_width, [](int n) {
      if (n < 1 || n > 1000)
        throw InputError("expected an integer in [1, 1000], got " + std::to_string(n));
    });
    s.read("max_sample_gap", o.max_sample_gap, io::positive);
    s.read("calibration_duration", o.calibration_duration, io::nonNegative);
    s.read("prior_std_log", o.prior_std_log, io::positive);
    s.read("prior_std_length", o.prior_std_length, io::positive);
    s.read("process_std_log", o.process_std_log, io::nonNegative);
    s.read("process_std_length", o.process_std_length, io::nonNegative);
    s.read("joint_torque_std", o.joint_torque_std, io::positive);
    s.read("base_force_std", o.base_force_std, io::positive);
    s.read("base_moment_std", o.base_moment_std, io::positive);
    s.read("gating", o.gating);
    s.read("gate_probability", o.gate_probability, io::inOpenInterval(0, 1, "a probability"));
    s.read("gate_threshold", o.gate_threshold, io::nonNegative);
    s.read("gate_max_consecutive", o.gate_max_consecutive, io::nonNegativeCount);
    s.read("max_mass_rate", o.max_mass_rate, io::nonNegative);
    s.read("rate_limit_always", o.rate_limit_always);
    s.finish();
  }
  {
    Section s(top.raw("metrics"), "metrics", source);
    s.read("settle_tolerance", config.settle_tolerance, io::inOpenInterval(0, 1, "a fraction"));
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

FilterJobConfig loadFilterJobConfig(const std::string& path) {
  return parseFilterJobConfig(io::readTextFile(path), path, fs::path(path).parent_path().string());
}

// ---- replay ------------------------------------------------------------------------------------

namespace {

double seconds(std::chrono::steady_clock::time_point since) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - since).count();
}

// The log as the control loop would have seen it: one column per joint sample, Pinocchio order.
struct Signals {
  Eigen::VectorXd time;
  Eigen::MatrixXd q, v, tau, forces;  // nq x N, nv x N, nv x N, 3 nc x N
};

Signals signalsFromLog(const pinocchio::Model& model, bool free_flyer, const io::Log& log,
                       const FilterJobConfig& config, std::vector<std::string>& warnings) {
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
    keep.push_back(static_cast<int>(k));
  }
  if (outside_truth > 0) {
    warnings.push_back(std::to_string(outside_truth) +
                       " joint samples outside the truth group's time span left out");
  }
  require(keep.size() >= 3, config.log + ": joints/time",
          "at least 3 samples in [start_time, end_time]", std::to_string(keep.size()));
  const int n = static_cast<int>(keep.size());
  Eigen::VectorXd time(n);
  for (int i = 0; i < n; ++i) time[i] = js.time[keep[i]];

  Signals s;
  s.time = time;
  s.q.resize(model.nq, n);
  s.v.setZero(model.nv, n);
  s.tau.setZero(model.nv, n);
  s.forces.setZero(3 * config.contacts.size(), n);
  const Eigen::VectorXd neutral = pinocchio::neutral(model);
  for (int i = 0; i < n; ++i) s.q.col(i) = neutral;
  for (pinocchio::JointIndex j = 1; j < static_cast<pinocchio::JointIndex>(model.njoints); ++j) {
    if (model.joints[j].nv() != 1 || model.joints[j].nq() != 1) continue;
    const auto it = std::find(js.names.begin(), js.names.end(), model.names[j]);
    require(it != js.names.end(), config.log + ": joints/names",
            "joint " + model.names[j] + " of the model", "a log without it");
    const int column = static_cast<int>(it - js.names.begin());
    for (int i = 0; i < n; ++i) {
      s.q(model.idx_qs[j], i) = js.q(keep[i], column);
      s.v(model.idx_vs[j], i) = js.v(keep[i], column);
      s.tau(model.idx_vs[j], i) = js.tau(keep[i], column);
    }
  }
  if (free_flyer) {
    Eigen::MatrixXd pose, twist;
    if (config.base_state == BaseStateSource::Log) {
      require(js.base_pose.rows() > 0 && js.base_twist.rows() > 0,
              config.log + ": joints/base_pose",
              "a base pose and twist (free-flyer robot; base_state: truth reads the truth group)",
              "none");
      pose.resize(n, 7);
      twist.resize(n, 6);
      for (int i = 0; i < n; ++i) {
        pose.row(i) = js.base_pose.row(keep[i]);
        twist.row(i) = js.base_twist.row(keep[i]);
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
      warnings.push_back("base pose and twist from the truth group (no state estimator)");
    }
    for (int i = 0; i < n; ++i) {
      s.q.col(i).head<7>() = pose.row(i).transpose();
      s.q.col(i).segment<4>(3).normalize();
      s.v.col(i).head<6>() = twist.row(i).transpose();
    }
  }
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
    warnings.push_back("contact forces from the truth group (no force sensors in the log)");
  }
  return s;
}

FilterTrace runFilter(InertialEkf& filter, const Signals& s,
                      const std::vector<std::string>& names) {
  FilterTrace trace;
  const bool log_cholesky = filter.options().state == InertialEkfOptions::State::LogCholesky;
  trace.estimator = log_cholesky ? "log-cholesky-ekf" : "linear-pi-kf";
  const int n = static_cast<int>(s.time.size()), np = filter.measurementModel().numParameters();
  std::vector<double> times, nis, update_us;
  std::vector<std::uint8_t> status;
  std::vector<Eigen::VectorXd> pi, pi_std;
  update_us.reserve(n);
  for (int i = 0; i < n; ++i) {
    const auto start = std::chrono::steady_clock::now();
    const UpdateStatus st =
        filter.update(s.time[i], s.q.col(i), s.v.col(i), s.tau.col(i), s.forces.col(i));
    update_us.push_back(1e6 * seconds(start));
    if (st == UpdateStatus::Filling || st == UpdateStatus::RejectedInput) continue;
    times.push_back(filter.estimateTime());
    trace.available_time.push_back(s.time[i]);
    if (!trace.caught_up_time && filter.outputCaughtUp())
      trace.caught_up_time = filter.estimateTime();
    status.push_back(static_cast<std::uint8_t>(st));
    nis.push_back(filter.lastNis());
    pi.push_back(filter.estimate());
    pi_std.push_back(filter.piStandardDeviation());
  }
  std::sort(update_us.begin(), update_us.end());
  trace.update_median_us = update_us[update_us.size() / 2];
  trace.update_max_us = update_us.back();
  trace.counters = filter.counters();
  io::EstimateSeries& e = trace.series;
  e.estimator = trace.estimator;
  e.body_names = names;
  const int E = static_cast<int>(times.size());
  e.time = Eigen::Map<const Eigen::VectorXd>(times.data(), E);
  e.nis = Eigen::Map<const Eigen::VectorXd>(nis.data(), E);
  e.body_pi.resize(E, np);
  e.body_pi_std.resize(E, np);
  e.status.resize(E, 1);
  trace.consistent.resize(E);
  for (int i = 0; i < E; ++i) {
    e.body_pi.row(i) = pi[i].transpose();
    e.body_pi_std.row(i) = pi_std[i].transpose();
    e.status(i, 0) = status[i];
    bool ok = true;
    for (int k = 0; k < np / 10 && ok; ++k) {
      ok = inertia::checkConsistency(pi[i].segment<10>(10 * k)).consistent;
    }
    trace.consistent[i] = ok;
  }
  return trace;
}

// ---- metrics against truth ---------------------------------------------------------------------

// truth pi of one body at the estimate times (a varying body, else its constant value)
Eigen::MatrixXd truthPi(const io::TruthSeries& truth, const std::string& body,
                        const Eigen::VectorXd& time) {
  const auto vit =
      std::find(truth.varying_body_names.begin(), truth.varying_body_names.end(), body);
  if (vit != truth.varying_body_names.end()) {
    const int b = static_cast<int>(vit - truth.varying_body_names.begin());
    // zero-order hold: a simulated step is a step, not a ramp between samples
    Eigen::MatrixXd out(time.size(), 10);
    Eigen::Index j = 0;
    for (Eigen::Index i = 0; i < time.size(); ++i) {
      while (j + 1 < truth.time.size() && truth.time[j + 1] <= time[i] + 1e-12) ++j;
      out.row(i) = truth.varying_body_pi.block(j, 10 * b, 1, 10);
    }
    return out;
  }
  const auto it = std::find(truth.body_names.begin(), truth.body_names.end(), body);
  require(it != truth.body_names.end(), "truth/body_names", "the estimated body " + body,
          "a truth group without it");
  return truth.body_pi.row(it - truth.body_names.begin()).replicate(time.size(), 1);
}

// touchdown times: a frame's points go from none in contact to some in contact
std::vector<double> touchdowns(const io::TruthSeries& truth,
                               const std::vector<ContactPoint>& points) {
  std::vector<double> out;
  if (truth.contact_flags.rows() == 0) return out;
  std::vector<std::string> frames;
  for (const auto& p : points)
    if (std::find(frames.begin(), frames.end(), p.frame) == frames.end()) frames.push_back(p.frame);
  for (const std::string& frame : frames) {
    std::vector<int> columns;
    for (const auto& p : points) {
      if (p.frame != frame) continue;
      const auto it = std::find(truth.contact_names.begin(), truth.contact_names.end(), p.name);
      if (it != truth.contact_names.end())
        columns.push_back(static_cast<int>(it - truth.contact_names.begin()));
    }
    if (columns.empty()) continue;
    // a touchdown ends a swing of at least 50 ms: a sole rocking on its corners is not one
    double last_contact = truth.time.size() > 0 ? truth.time[0] : 0;
    for (Eigen::Index k = 0; k < truth.contact_flags.rows(); ++k) {
      bool now = false;
      for (int c : columns) now = now || truth.contact_flags(k, c) != 0;
      if (!now) continue;
      if (k > 0 && truth.time[k] - last_contact > 0.05) out.push_back(truth.time[k]);
      last_contact = truth.time[k];
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

FilterRunSummary summarize(const FilterTrace& trace, const std::vector<std::string>& truth_names,
                           const std::optional<io::TruthSeries>& truth,
                           const FilterJobConfig& config) {
  FilterRunSummary out;
  out.estimator = trace.estimator;
  out.counters = trace.counters;
  out.update_median_us = trace.update_median_us;
  out.update_max_us = trace.update_max_us;
  const io::EstimateSeries& e = trace.series;
  const Eigen::Index E = e.time.size();
  for (Eigen::Index i = 0; i + 1 < E; ++i) {
    if (trace.consistent[i]) continue;
    if (!out.first_inconsistent) out.first_inconsistent = e.time[i];
    out.inconsistent_time += e.time[i + 1] - e.time[i];
  }
  out.caught_up_time = trace.caught_up_time;
  if (!truth || E == 0) return out;
  // the start-up ramp of the rate-limited output is not tracking error: metrics start after it
  const double start_time = trace.caught_up_time ? *trace.caught_up_time : e.time[E - 1];
  const std::vector<double> impacts = touchdowns(*truth, config.contacts);
  for (std::size_t b = 0; b < e.body_names.size(); ++b) {
    BodyMetrics m;
    m.name = e.body_names[b];
    const Eigen::MatrixXd true_pi = truthPi(*truth, truth_names[b], e.time);
    const Eigen::MatrixXd pi = e.body_pi.middleCols(10 * b, 10);
    m.final_mass = pi(E - 1, 0);
    m.final_truth_mass = true_pi(E - 1, 0);
    m.final_com_error = (pi.row(E - 1).segment<3>(1) / pi(E - 1, 0) -
                         true_pi.row(E - 1).segment<3>(1) / true_pi(E - 1, 0))
                            .norm();
    double sum = 0;
    int count = 0;
    for (Eigen::Index i = 0; i < E; ++i) {
      const auto st = static_cast<UpdateStatus>(e.status(i, 0));
      if (st == UpdateStatus::Calibrating || e.time[i] < start_time) continue;
      const double r = pi(i, 0) / true_pi(i, 0) - 1;
      sum += r * r;
      ++count;
    }
    m.mass_rms_relative = count > 0 ? std::sqrt(sum / count) : 0;
    // steps: a truth mass change of more than 1 % between two estimate samples
    std::vector<Eigen::Index> step_index;
    for (Eigen::Index i = 1; i < E; ++i) {
      if (std::abs(true_pi(i, 0) - true_pi(i - 1, 0)) > 0.01 * std::abs(true_pi(i - 1, 0)))
        step_index.push_back(i);
    }
    for (std::size_t s = 0; s < step_index.size(); ++s) {
      const Eigen::Index i0 = step_index[s];
      const Eigen::Index i1 = s + 1 < step_index.size() ? step_index[s + 1] : E;
      StepResponse r;
      r.time = e.time[i0];
      r.mass_before = true_pi(i0 - 1, 0);
      r.mass_after = true_pi(i0, 0);
      // the first sample after which the error stays within tolerance until the next step
      Eigen::Index settled = i1;
      for (Eigen::Index i = i1 - 1; i >= i0; --i) {
        if (std::abs(pi(i, 0) / true_pi(i, 0) - 1) > config.settle_tolerance) break;
        settled = i;
      }
      if (settled < i1) r.settle_time = trace.available_time[settled] - r.time;
      m.steps.push_back(r);
    }
    // impact transients: how far the estimate moves in the 0.3 s after a touchdown, from its value
    // just before; left out: touchdowns before the output caught up, and from 0.5 s before a
    // truth step to 1 s after it (the 0.3 s window, widened by the differentiation window the
    // estimate at time t already sees, would hold the step response)
    for (double td : impacts) {
      bool settling = false;
      for (const StepResponse& r : m.steps)
        settling = settling || (td >= r.time - 0.5 && td < r.time + 1);
      if (settling || td < start_time || td + 0.3 > e.time[E - 1]) continue;
      const Eigen::Index before =
          std::lower_bound(e.time.data(), e.time.data() + E, td) - e.time.data() - 1;
      if (before < 0) continue;
      double largest = 0;
      for (Eigen::Index i = before + 1; i < E && e.time[i] <= td + 0.3; ++i)
        largest = std::max(largest, std::abs(pi(i, 0) - pi(before, 0)));
      m.largest_impact_transient = std::max(m.largest_impact_transient, largest);
      ++m.touchdowns;
    }
    out.bodies.push_back(m);
  }
  return out;
}

std::string fixed(double x, int precision = 4) { return formatNumber(x, precision); }

}  // namespace

FilterJobResult runFilterJob(const FilterJobConfig& config, const FilterProgress& progress) {
  config.validate();
  const auto start = std::chrono::steady_clock::now();
  auto say = [&](const std::string& line) {
    if (progress) progress("[" + fixed(seconds(start), 3) + " s] " + line);
  };
  const model::RobotModel robot = model::loadRobot(config.robot);
  say("robot " + robot.displayName() + ", reading " + config.log);
  const io::Log log = io::readLog(config.log);
  FilterJobResult result;
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
  const Signals signals =
      signalsFromLog(robot.pinocchio(), robot.hasFreeFlyer(), log, config, result.warnings);
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
    InertialEkf filter(robot.pinocchio(), joints, config.contacts, prior, options);
    result.rows = filter.measurementModel().numRows();
    result.gate_threshold = filter.gateThreshold();
    say("replaying " + std::to_string(signals.time.size()) + " samples through the " +
        toString(state) + " filter (" + std::to_string(result.rows) + " rows)");
    result.traces.push_back(runFilter(filter, signals, config.bodies));
    result.summaries.push_back(summarize(result.traces.back(), truth_names, log.truth, config));
  }
  say("done");
  return result;
}

std::string FilterJobResult::report() const {
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
      << c.failures << " numerical failures\n";
    s << "  update() " << fixed(r.update_median_us, 3) << " us median, "
      << fixed(r.update_max_us, 3) << " us max (this machine, with the log replay around it)\n";
    s << "  physically inconsistent for " << fixed(r.inconsistent_time, 4) << " s";
    if (r.first_inconsistent) s << " (first at " << fixed(*r.first_inconsistent, 4) << " s)";
    s << "\n";
    s << "  output caught up with the filter at "
      << (r.caught_up_time ? fixed(*r.caught_up_time, 4) + " s" : std::string("never"))
      << " (start-up rate limit; metrics below start there)\n";
    for (const BodyMetrics& m : r.bodies) {
      s << "  " << m.name << ": final mass " << fixed(m.final_mass) << " kg (truth "
        << fixed(m.final_truth_mass) << "), mass error RMS " << fixed(100 * m.mass_rms_relative, 3)
        << " %, final COM error " << fixed(1000 * m.final_com_error, 3) << " mm\n";
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

nlohmann::json FilterJobResult::toJson() const {
  nlohmann::json j;
  j["robot"] = robot;
  j["log"] = log;
  j["scenario"] = scenario;
  j["bodies"] = bodies;
  j["rows"] = rows;
  j["gate_threshold"] = gate_threshold;
  j["warnings"] = warnings;
  j["runs"] = nlohmann::json::array();
  for (const FilterRunSummary& r : summaries) {
    nlohmann::json run;
    run["estimator"] = r.estimator;
    run["counters"] = {{"samples", r.counters.samples},   {"updated", r.counters.updated},
                       {"gated", r.counters.gated},       {"overridden", r.counters.overridden},
                       {"rejected", r.counters.rejected}, {"failures", r.counters.failures}};
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
                          {"final_mass", m.final_mass},
                          {"final_truth_mass", m.final_truth_mass},
                          {"mass_rms_relative", m.mass_rms_relative},
                          {"final_com_error_m", m.final_com_error},
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

std::vector<std::string> writeFilterJobOutputs(const FilterJobResult& result,
                                               const std::string& out_dir, bool overwrite) {
  fs::create_directories(out_dir);
  std::vector<std::string> written;
  // inputs are never overwritten: the replayed log must not be one of the outputs
  for (const char* name : {"estimates.h5", "baseline.h5", "summary.json"}) {
    const fs::path output = fs::path(out_dir) / name;
    std::error_code ec;
    require(!fs::exists(output) || !fs::equivalent(output, result.log, ec), output.string(),
            "an output path that is not the replayed log", "the input log itself");
  }
  const std::string summary = (fs::path(out_dir) / "summary.json").string();
  if (!overwrite) {
    for (std::size_t t = 0; t < result.traces.size(); ++t) {
      const std::string name = t == 0 ? "estimates.h5" : "baseline.h5";
      require(!fs::exists(fs::path(out_dir) / name), (fs::path(out_dir) / name).string(),
              "a new file (pass --overwrite to replace it)", "an existing file");
    }
    require(!fs::exists(summary), summary, "a new file (pass --overwrite to replace it)",
            "an existing file");
  }
  for (std::size_t t = 0; t < result.traces.size(); ++t) {
    io::Log out;
    out.meta.robot = result.robot;
    out.meta.scenario = result.scenario;
    out.meta.base_type = io::BaseType::Fixed;
    out.estimates = result.traces[t].series;
    const std::string path =
        (fs::path(out_dir) / (t == 0 ? "estimates.h5" : "baseline.h5")).string();
    io::WriteOptions options;
    options.overwrite = true;  // checked above, for every output before writing any
    io::writeLogHdf5(out, path, options);
    written.push_back(path);
  }
  io::writeTextFileAtomically(summary, result.toJson().dump(2) + "\n", true);
  written.push_back(summary);
  return written;
}

}  // namespace heft::filter
