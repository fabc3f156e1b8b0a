// Data preparation (samples.hpp) and the stacked problems (problem.hpp): the only identify
// translation unit that calls Pinocchio algorithms.
#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <type_traits>

#include <Eigen/Geometry>
#include <Eigen/QR>
#include <Eigen/SVD>
#include <pinocchio/algorithm/crba.hpp>
#include <pinocchio/algorithm/frames.hpp>
#include <pinocchio/algorithm/jacobian.hpp>
#include <pinocchio/algorithm/joint-configuration.hpp>
#include <pinocchio/algorithm/kinematics.hpp>

#include "heft/basestate/base_state.hpp"
#include "heft/common/error.hpp"
#include "heft/common/format.hpp"
#include "heft/dynamics/energy.hpp"
#include "heft/dynamics/regressor.hpp"
#include "heft/identify/problem.hpp"
#include "heft/identify/samples.hpp"
#include "heft/io/joint_binding.hpp"
#include "heft/io/signal.hpp"
#include "heft/io/validation.hpp"
#include "heft/state/contacts.hpp"

namespace heft::identify {
namespace {

std::string num(double x) { return formatNumber(x, 6); }

// Columns of `x` (N x m, rows = time) smoothed or differentiated; window 1 = unchanged.
Eigen::MatrixXd filterRows(const Eigen::MatrixXd& x, const io::SavitzkyGolayOptions& sg,
                           int derivative, double dt) {
  if (sg.window == 1 && derivative == 0) return x;
  return io::SavitzkyGolayFilter(sg, derivative, dt).apply(x);
}

// Acceleration (N x m) from velocity (N x m) by the chosen method; the last sample of a forward
// difference repeats the previous one (it is an edge sample, dropped later).
Eigen::MatrixXd accelerationFrom(const Eigen::MatrixXd& v, AccelerationMethod method,
                                 const io::SavitzkyGolayOptions& sg, double dt) {
  if (method == AccelerationMethod::SavitzkyGolayDerivative) {
    return io::SavitzkyGolayFilter(sg, 1, dt).apply(v);
  }
  const Eigen::Index n = v.rows();
  Eigen::MatrixXd d(n, v.cols());
  d.topRows(n - 1) = (v.bottomRows(n - 1) - v.topRows(n - 1)) / dt;
  d.row(n - 1) = d.row(n - 2);
  return filterRows(d, sg, 0, dt);
}

}  // namespace

// ---- names -------------------------------------------------------------------------------------

std::string toString(AccelerationMethod method) {
  switch (method) {
    case AccelerationMethod::SavitzkyGolayDerivative:
      return "sg-derivative";
    case AccelerationMethod::ForwardDifference:
      return "forward-difference";
    case AccelerationMethod::Truth:
      return "truth";
  }
  return "?";
}

AccelerationMethod parseAccelerationMethod(const std::string& name) {
  for (auto m : {AccelerationMethod::SavitzkyGolayDerivative, AccelerationMethod::ForwardDifference,
                 AccelerationMethod::Truth}) {
    if (toString(m) == name) return m;
  }
  throw InputError("acceleration: expected sg-derivative, forward-difference or truth, got \"" +
                   name + "\"");
}

std::string toString(FrictionForm form) {
  return form == FrictionForm::CoulombViscous ? "coulomb-viscous" : "full";
}

FrictionForm parseFrictionForm(const std::string& name) {
  if (name == "coulomb-viscous") return FrictionForm::CoulombViscous;
  if (name == "full") return FrictionForm::Full;
  throw InputError("friction_form: expected coulomb-viscous or full, got \"" + name + "\"");
}

std::string toString(Projection projection) {
  switch (projection) {
    case Projection::Auto:
      return "auto";
    case Projection::None:
      return "none";
    case Projection::ContactNullSpace:
      return "contact";
    case Projection::BaseContactNullSpace:
      return "base";
  }
  return "?";
}

Projection parseProjection(const std::string& name) {
  for (auto p : {Projection::Auto, Projection::None, Projection::ContactNullSpace,
                 Projection::BaseContactNullSpace}) {
    if (toString(p) == name) return p;
  }
  throw InputError("projection: expected auto, none, contact or base, got \"" + name + "\"");
}

// ---- options -----------------------------------------------------------------------------------

void PreparationOptions::validate() const {
  if (!(filter.window == 1 && acceleration != AccelerationMethod::SavitzkyGolayDerivative)) {
    filter.validate();
    require(acceleration != AccelerationMethod::SavitzkyGolayDerivative || filter.order >= 1,
            "filter.order", ">= 1 for sg-derivative", std::to_string(filter.order));
  }
  require(!(smooth_velocity && filter.window == 1), "smooth_velocity", "a filter window >= 3",
          "window 1");
  require(decimation >= 1, "decimation", ">= 1", std::to_string(decimation));
  require(std::isfinite(start_time) && start_time >= 0, "start_time", "a finite value >= 0",
          num(start_time));
  require(std::isfinite(end_time), "end_time", "a finite value", num(end_time));
  require(std::isfinite(contact_guard) && contact_guard >= 0, "contact_guard",
          "a finite value >= 0 [s]", num(contact_guard));
  require(base_tilt.allFinite(), "base_tilt", "finite angles [rad]",
          num(base_tilt[0]) + ", " + num(base_tilt[1]));
  for (const auto* ranges : {&exclude, &only}) {
    const char* name = ranges == &exclude ? "exclude" : "only";
    for (const TimeRange& r : *ranges)
      require(std::isfinite(r.start) && std::isfinite(r.end) && r.start >= 0 && r.end > r.start,
              name, "time ranges [start, end] with 0 <= start < end [s]",
              "[" + num(r.start) + ", " + num(r.end) + "]");
  }
  contact.validate();
}

void ProblemOptions::validate() const {
  requirePositive(coulomb_rate, "coulomb_rate");
  requirePositive(armature_prior_median, "armature_prior_median");
  requirePositive(armature_prior_log_std, "armature_prior_log_std");
  requirePositive(torque_offset_prior_std, "torque_offset_prior_std");
  require(std::isfinite(contact_offset), "contact_offset", "a finite value", num(contact_offset));
  require(std::isfinite(min_speed) && min_speed >= 0, "min_speed", "a finite value >= 0",
          num(min_speed));
}

void EnergyOptions::validate() const {
  require(interval >= 1, "energy.interval", ">= 1 sample", std::to_string(interval));
}

// ---- samples -----------------------------------------------------------------------------------

namespace {

// The contact frames and flags of the kept samples: the log's (interpolated at the sample times;
// a frame touches when any of its points does) or, without them or when asked, detected from the
// samples' kinematics at the robot's contact frames.
void setContacts(const model::RobotModel& robot, const io::Log& log,
                 const PreparationOptions& options, Samples& out) {
  const pinocchio::Model& model = robot.pinocchio();
  const int N = static_cast<int>(out.time.size());
  std::vector<model::ContactPoint> points;
  const bool from_log = log.contacts && !options.detect_contacts;
  if (from_log) {
    points = model::resolveContactPoints(
        model, log.contacts->names,
        model::configOverLogPoints(options.contact_points, log.contacts->definedPoints()),
        "contacts/names");
  } else {
    for (const auto& frame : robot.contactFrames()) {
      bool on_frame = false;
      for (const auto& p : options.contact_points) {
        if (p.frame != frame) continue;
        points.push_back(p);
        on_frame = true;
      }
      if (!on_frame) points.push_back({frame, frame, Vector3::Zero()});
    }
  }
  const std::vector<model::ContactFrame> frames = model::groupContactFrames(points);
  const int nc = static_cast<int>(frames.size());
  out.contact_names.clear();
  out.contact_flat.clear();
  out.contact_point.clear();
  for (const auto& f : frames) {
    out.contact_names.push_back(f.frame);
    out.contact_flat.push_back(f.flat);
    out.contact_point.push_back(f.offset);
  }
  out.contact.setZero(nc, N);
  if (from_log) {
    const io::ContactSeries& cs = *log.contacts;
    const io::FlagMatrix flags =
        io::interpolateFlags(cs.time, cs.flags, out.time, "contacts/flags");
    for (int c = 0; c < nc; ++c)
      for (const int point : frames[c].points)
        for (int i = 0; i < N; ++i) out.contact(c, i) |= flags(i, point);
  }
  if (from_log && options.widen_contacts) {
    pinocchio::Data data(model);
    std::vector<pinocchio::FrameIndex> ids;
    for (const auto& name : out.contact_names) ids.push_back(model.getFrameId(name));
    int widened = 0;
    for (int i = 0; i < N; ++i) {
      const std::vector<std::uint8_t> detected =
          state::detectContacts(model, data, ids, out.q.col(i), out.v.col(i), options.contact);
      for (int c = 0; c < nc; ++c) {
        if (detected[c] && !out.contact(c, i)) ++widened;
        out.contact(c, i) |= detected[c];
      }
    }
    if (widened > 0) {
      out.warnings.push_back(std::to_string(widened) + " of " + std::to_string(N * nc) +
                             " contact flags widened by kinematic detection (widen_contacts)");
    }
  } else if (!from_log) {
    out.contacts_detected = true;
    pinocchio::Data data(model);
    std::vector<pinocchio::FrameIndex> ids;
    for (const auto& name : out.contact_names) ids.push_back(model.getFrameId(name));
    for (int i = 0; i < N; ++i) {
      const std::vector<std::uint8_t> flags =
          state::detectContacts(model, data, ids, out.q.col(i), out.v.col(i), options.contact);
      for (int c = 0; c < nc; ++c) out.contact(c, i) = flags[c];
    }
  }
}

}  // namespace

namespace {

// Removes the samples within `guard` seconds of a change of any contact flag.
void dropNearContactChanges(double guard, Samples& s) {
  std::vector<double> changes;
  for (int k = 1; k < s.size(); ++k)
    if ((s.contact.col(k).array() != s.contact.col(k - 1).array()).any())
      changes.push_back(0.5 * (s.time[k] + s.time[k - 1]));
  if (changes.empty()) return;
  std::vector<int> keep;
  for (int k = 0; k < s.size(); ++k) {
    const auto near = std::lower_bound(changes.begin(), changes.end(), s.time[k] - guard);
    if (near == changes.end() || *near > s.time[k] + guard) keep.push_back(k);
  }
  require(keep.size() >= 2, "contact_guard",
          "a guard band that leaves at least 2 samples between contact changes",
          std::to_string(keep.size()) + " samples (" + std::to_string(changes.size()) +
              " contact changes)");
  const int dropped = s.size() - static_cast<int>(keep.size());
  auto subset = [&keep](const auto& m) {
    std::decay_t<decltype(m)> out(m.rows(), static_cast<Eigen::Index>(keep.size()));
    for (size_t i = 0; i < keep.size(); ++i) out.col(static_cast<Eigen::Index>(i)) = m.col(keep[i]);
    return out;
  };
  Eigen::VectorXd time(static_cast<Eigen::Index>(keep.size()));
  for (size_t i = 0; i < keep.size(); ++i) time[static_cast<Eigen::Index>(i)] = s.time[keep[i]];
  s.time = time;
  s.q = subset(s.q);
  s.v = subset(s.v);
  s.a = subset(s.a);
  s.tau = subset(s.tau);
  s.contact = subset(s.contact);
  s.warnings.push_back(std::to_string(dropped) + " samples within " + num(guard) + " s of " +
                       std::to_string(changes.size()) + " contact changes dropped (contact_guard)");
}

}  // namespace

namespace {

// The base pose and twist at every joint sample: the log's, heft's own estimate, or the truth
// group's (studies), as options.base_state says.
void baseStateOf(const pinocchio::Model& model, const io::Log& log,
                 const PreparationOptions& options, Eigen::MatrixXd& base_pose,
                 Eigen::MatrixXd& base_twist, std::vector<std::string>& warnings) {
  const io::JointSeries& js = log.joints;
  const int n = static_cast<int>(js.time.size());
  const bool in_log = js.base_pose.rows() == n && js.base_twist.rows() == n;
  if (options.base_state == BaseStateSource::Estimate ||
      (options.base_state == BaseStateSource::Auto && !in_log)) {
    basestate::BaseStateOptions base_options;
    base_options.filter.level_ground = options.level_ground;
    const basestate::BaseStateTrajectory estimate = basestate::estimateBaseState(
        model, log, basestate::logContactPoints(model, log, options.contact_points), base_options);
    base_pose = estimate.base_pose;
    base_twist = estimate.base_twist;
    warnings.push_back(
        "base pose and twist estimated from the IMU, the legs and the contacts (basestate)");
  } else if (options.base_state != BaseStateSource::Truth) {
    require(in_log, "joints/base_pose",
            "a base pose and twist in the log (free-flyer robot; base_state: estimate runs "
            "the base-state estimator)",
            "none");
    base_pose = js.base_pose;
    base_twist = js.base_twist;
  } else {
    require(log.truth && log.truth->base_pose.rows() > 0 && log.truth->base_twist.rows() > 0,
            "truth/base_pose", "a truth base pose and twist (BaseStateSource::Truth)", "none");
    base_pose = io::interpolateQuaternions(log.truth->time, log.truth->base_pose.rightCols(4),
                                           js.time, "truth/base_pose");
    base_pose = (Eigen::MatrixXd(n, 7) << io::interpolateLinear(
                     log.truth->time, log.truth->base_pose.leftCols(3), js.time, "truth/base_pose"),
                 base_pose)
                    .finished();
    base_twist =
        io::interpolateLinear(log.truth->time, log.truth->base_twist, js.time, "truth/base_twist");
    warnings.push_back(
        "base pose and twist taken from the truth group (base_state: truth, for studies only)");
  }
}

}  // namespace

Samples prepareSamples(const model::RobotModel& robot, const io::Log& input,
                       const PreparationOptions& options) {
  options.validate();
  const pinocchio::Model& model = robot.pinocchio();
  io::requireValid(io::validateLog(input, model), "log");
  Samples out;
  out.free_flyer = robot.hasFreeFlyer();

  // one uniform clock
  const io::Log* log = &input;
  io::Log resampled;
  const Eigen::VectorXd& t0 = input.joints.time;
  double dt = 0;
  try {
    dt = io::uniformPeriod(t0, "joints/time", 1e-3);
  } catch (const InputError&) {
    const double mean = (t0[t0.size() - 1] - t0[0]) / static_cast<double>(t0.size() - 1);
    io::ResampleOptions ro;
    ro.rate = std::round(1.0 / mean);
    resampled = io::resample(input, ro);
    log = &resampled;
    dt = 1.0 / ro.rate;
    out.warnings.push_back("joints/time is not uniform: resampled at " + num(ro.rate) + " Hz");
  }
  const io::JointSeries& js = log->joints;
  const int n = static_cast<int>(js.time.size());
  const int window = options.filter.window;
  require(n >= std::max(window, 3) + 2, "joints/time",
          "at least " + std::to_string(std::max(window, 3) + 2) + " samples (filter window)",
          std::to_string(n) + " samples");

  const io::JointBinding map = io::bindJoints(model, js.names);
  const int nj = static_cast<int>(map.names.size());
  out.joint_names = map.names;
  out.joint_idx_v = map.idx_v;
  out.joint_index = map.joints;

  // joint signals in model order (rows = time)
  const Eigen::MatrixXd& tau_src =
      options.use_commanded_torque && js.tau_cmd.size() > 0 ? js.tau_cmd : js.tau;
  if (options.use_commanded_torque && js.tau_cmd.size() == 0) {
    out.warnings.push_back("the log has no joints/tau_cmd: using joints/tau");
  }
  Eigen::MatrixXd q(n, nj), v(n, nj), tau(n, nj);
  for (int j = 0; j < nj; ++j) {
    q.col(j) = js.q.col(map.log_column[j]);
    v.col(j) = js.v.col(map.log_column[j]);
    tau.col(j) = tau_src.col(map.log_column[j]);
  }

  // free-flyer state
  Eigen::MatrixXd base_pose, base_twist;
  if (out.free_flyer) baseStateOf(model, *log, options, base_pose, base_twist, out.warnings);

  // accelerations
  Eigen::MatrixXd a, base_acc;
  if (options.acceleration == AccelerationMethod::Truth) {
    require(log->truth && log->truth->time.size() > 0, "truth/a",
            "a truth group with accelerations (AccelerationMethod::Truth)", "none");
    Eigen::MatrixXd ta(log->truth->a.rows(), nj);
    for (int j = 0; j < nj; ++j) ta.col(j) = log->truth->a.col(map.log_column[j]);
    a = io::interpolateLinear(log->truth->time, ta, js.time, "truth/a");
    if (out.free_flyer) {
      base_acc = io::interpolateLinear(log->truth->time, log->truth->base_acceleration, js.time,
                                       "truth/base_acceleration");
    }
  } else {
    a = accelerationFrom(v, options.acceleration, options.filter, dt);
    if (out.free_flyer)
      base_acc = accelerationFrom(base_twist, options.acceleration, options.filter, dt);
  }
  if (options.smooth_velocity) {
    v = filterRows(v, options.filter, 0, dt);
    if (out.free_flyer) base_twist = filterRows(base_twist, options.filter, 0, dt);
  }

  // kept samples: inside the filter's centred region and the time range, decimated
  const int edge = std::max(window / 2, 1);
  std::vector<int> keep;
  const double t_first = js.time[0];
  for (int k = edge; k < n - edge; k += options.decimation) {
    const double t = js.time[k] - t_first;
    if (t < options.start_time) continue;
    if (options.end_time > 0 && t > options.end_time) continue;
    auto inside = [t](const TimeRange& r) { return r.contains(t); };
    if (std::any_of(options.exclude.begin(), options.exclude.end(), inside)) continue;
    if (!options.only.empty() && std::none_of(options.only.begin(), options.only.end(), inside))
      continue;
    keep.push_back(k);
  }
  require(keep.size() >= 2, "start_time / end_time / exclude / only",
          "time ranges that keep at least 2 samples of the log's " + num(js.time[n - 1] - t_first) +
              " s (times from its first sample)",
          std::to_string(keep.size()) + " samples");
  const int N = static_cast<int>(keep.size());
  out.dt = dt * options.decimation;
  out.time.resize(N);
  out.q.resize(model.nq, N);
  out.v.setZero(model.nv, N);
  out.a.setZero(model.nv, N);
  out.tau.resize(nj, N);
  for (int i = 0; i < N; ++i) {
    const int k = keep[i];
    out.time[i] = js.time[k];
    Eigen::VectorXd qk = pinocchio::neutral(model);
    if (out.free_flyer) {
      qk.head<7>() = base_pose.row(k).transpose();
      qk.segment<4>(3).normalize();
      out.v.col(i).head<6>() = base_twist.row(k).transpose();
      out.a.col(i).head<6>() = base_acc.row(k).transpose();
    }
    for (int j = 0; j < nj; ++j) {
      qk[map.idx_q[j]] = q(k, j);
      out.v(map.idx_v[j], i) = v(k, j);
      out.a(map.idx_v[j], i) = a(k, j);
      out.tau(j, i) = tau(k, j);
    }
    out.q.col(i) = qk;
  }

  if (out.free_flyer && !options.base_tilt.isZero()) tiltBase(options.base_tilt, out);
  if (out.free_flyer) setContacts(robot, *log, options, out);
  if (out.free_flyer && options.contact_guard > 0)
    dropNearContactChanges(options.contact_guard, out);
  return out;
}

Samples concatenate(const std::vector<Samples>& parts) {
  require(!parts.empty(), "recordings", "at least one", "none");
  if (parts.size() == 1) return parts.front();
  Samples out = parts.front();
  out.warnings.clear();
  Eigen::Index n = 0;
  for (size_t i = 0; i < parts.size(); ++i) {
    const Samples& p = parts[i];
    require(p.joint_names == out.joint_names && p.free_flyer == out.free_flyer &&
                p.contact_names == out.contact_names,
            "recording " + std::to_string(i + 1), "the joints, base and contacts of the first",
            "others");
    n += p.size();
    for (const std::string& w : p.warnings)
      out.warnings.push_back("recording " + std::to_string(i + 1) + ": " + w);
  }
  out.time.resize(n);
  out.q.resize(out.q.rows(), n);
  out.v.resize(out.v.rows(), n);
  out.a.resize(out.a.rows(), n);
  out.tau.resize(out.tau.rows(), n);
  out.contact.resize(out.contact.rows(), n);
  Eigen::Index at = 0;
  for (const Samples& p : parts) {
    const Eigen::Index k = p.size();
    out.time.segment(at, k) = p.time;
    out.q.middleCols(at, k) = p.q;
    out.v.middleCols(at, k) = p.v;
    out.a.middleCols(at, k) = p.a;
    out.tau.middleCols(at, k) = p.tau;
    if (out.contact.rows() > 0) out.contact.middleCols(at, k) = p.contact;
    out.contacts_detected = out.contacts_detected || p.contacts_detected;
    at += k;
  }
  return out;
}

AccelerationError accelerationError(const model::RobotModel& robot, const io::Log& log,
                                    const PreparationOptions& options) {
  require(log.truth && log.truth->time.size() > 0, "truth/a", "a truth group", "none");
  const Samples s = prepareSamples(robot, log, options);
  PreparationOptions truth_options = options;
  truth_options.acceleration = AccelerationMethod::Truth;
  truth_options.smooth_velocity = false;
  const Samples t = prepareSamples(robot, log, truth_options);
  AccelerationError e;
  const int nj = s.numJoints();
  e.rms_per_joint.resize(nj);
  double total = 0, scale = 0;
  for (int j = 0; j < nj; ++j) {
    const int iv = s.joint_idx_v[j];
    const double sq = (s.a.row(iv) - t.a.row(iv)).squaredNorm();
    e.rms_per_joint[j] = std::sqrt(sq / s.size());
    total += sq;
    scale += t.a.row(iv).squaredNorm();
  }
  e.rms = std::sqrt(total / (static_cast<double>(nj) * s.size()));
  e.truth_rms = std::sqrt(scale / (static_cast<double>(nj) * s.size()));
  return e;
}

namespace {

ParameterLayout makeLayout(const model::RobotModel& robot, const Samples& samples,
                           const model::IdentifiedSet& set, const ProblemOptions& options) {
  // an empty set is a prediction: the rows then hold the model's own inverse dynamics
  if (!set.bodies.empty() || !set.friction.empty() || !set.actuators.empty()) set.validate(robot);
  ParameterLayout layout;
  for (const auto& b : set.bodies) {
    require(model::countFree(b.free) == 10, "identified body " + b.name,
            "all ten parameters free (partial masks are not supported by heft::identify yet)",
            model::toString(b.free));
    layout.body_names.push_back(b.name);
    layout.bodies.push_back(b.joint);
  }
  for (const auto& a : set.actuators) {
    require(!a.identified, "actuator " + a.joint_name,
            "not identified (actuator gains are not supported by heft::identify yet)",
            "identified");
  }
  auto jointIndex = [&](const std::string& name, const std::string& what) {
    const auto it = std::find(samples.joint_names.begin(), samples.joint_names.end(), name);
    if (it == samples.joint_names.end()) {
      std::string valid;
      for (const auto& s : samples.joint_names) valid += (valid.empty() ? "" : ", ") + s;
      require(false, what, "a joint of the log (" + valid + ")", "\"" + name + "\"");
    }
    return static_cast<int>(it - samples.joint_names.begin());
  };
  for (const auto& f : set.friction) {
    if (!f.identified) continue;
    layout.friction_joints.push_back(f.joint_name);
    layout.friction_joint.push_back(jointIndex(f.joint_name, "friction joint"));
  }
  if (options.identify_armature) {
    std::vector<std::string> names = options.armature_joints;
    if (names.empty())
      names = layout.friction_joints.empty() ? samples.joint_names : layout.friction_joints;
    for (const auto& name : names) {
      layout.armature_joints.push_back(name);
      layout.armature_joint.push_back(jointIndex(name, "armature_joints"));
    }
  }
  if (options.identify_torque_offsets) {
    const std::vector<std::string>& names =
        options.torque_offset_joints.empty() ? samples.joint_names : options.torque_offset_joints;
    for (const auto& name : names) {
      layout.torque_offset_joints.push_back(name);
      layout.torque_offset_joint.push_back(jointIndex(name, "torque_offset_joints"));
    }
  }
  return layout;
}

Projection resolveProjection(Projection p, bool free_flyer) {
  if (p == Projection::Auto) return free_flyer ? Projection::ContactNullSpace : Projection::None;
  require(free_flyer || p == Projection::None, "projection",
          "none for a fixed-base robot (no contacts to project out)", toString(p));
  return p;
}

// Orthonormal basis (columns) of the null space of M (r x c), by a full-pivoting QR of M^T.
Eigen::MatrixXd nullSpace(const Eigen::MatrixXd& M) {
  const int c = static_cast<int>(M.cols());
  if (M.rows() == 0) return Eigen::MatrixXd::Identity(c, c);
  Eigen::FullPivHouseholderQR<Eigen::MatrixXd> qr(M.transpose());
  qr.setThreshold(1e-10);
  const int rank = static_cast<int>(qr.rank());
  Eigen::MatrixXd Q = qr.matrixQ();
  return Q.rightCols(c - rank);
}

}  // namespace

void tiltBase(const Eigen::Vector2d& tilt, Samples& samples) {
  if (!samples.free_flyer || tilt.isZero()) return;
  const Eigen::Vector3d w(tilt[0], tilt[1], 0);
  const Eigen::Quaterniond rotation(Eigen::AngleAxisd(w.norm(), w.normalized()));
  for (int k = 0; k < samples.size(); ++k) {
    auto xyzw = samples.q.col(k).segment<4>(3);
    Eigen::Quaterniond r(xyzw[3], xyzw[0], xyzw[1], xyzw[2]);
    r = (r * rotation).normalized();
    xyzw << r.x(), r.y(), r.z(), r.w();
  }
}

// ---- torque problem ----------------------------------------------------------------------------

StackedProblem buildProblem(const model::RobotModel& robot, const Samples& samples,
                            const model::IdentifiedSet& set, const ProblemOptions& options) {
  options.validate();
  StackedProblem p;
  p.layout = makeLayout(robot, samples, set, options);
  p.coulomb_rate = options.coulomb_rate;
  p.projection = resolveProjection(options.projection, samples.free_flyer);
  const pinocchio::Model& model = robot.pinocchio();
  const int nv = model.nv, nj = samples.numJoints(), N = samples.size();
  require(samples.q.rows() == model.nq && samples.v.rows() == nv, "samples",
          "samples prepared for " + robot.displayName(), "other sizes");
  dynamics::RegressorModel rm(model, p.layout.bodies);
  dynamics::RegressorData rd(rm);
  p.nominal_pi = rm.nominalParameters();
  const int np = rm.numParameters();

  p.v_joint.resize(nj, N);
  p.a_joint.resize(nj, N);
  for (int j = 0; j < nj; ++j) {
    p.v_joint.row(j) = samples.v.row(samples.joint_idx_v[j]);
    p.a_joint.row(j) = samples.a.row(samples.joint_idx_v[j]);
  }
  Eigen::MatrixXd St = Eigen::MatrixXd::Zero(nv, nj);  // S^T
  for (int j = 0; j < nj; ++j) St(samples.joint_idx_v[j], j) = 1;

  // rows per sample, at most nv
  const int max_rows = N * nv;
  p.A.resize(max_rows, np);
  p.G.resize(max_rows, nj);
  p.b.resize(max_rows);
  p.sample.resize(max_rows);
  p.channel.resize(max_rows);
  // tilt columns: the torques' change under R <- R Exp(w) is the gravity's in the base frame,
  // d g_b = g_b x w, felt like a base acceleration -d g_b: M[:, 0:3] (w x g_b)
  const bool tilt = options.estimate_base_tilt && samples.free_flyer;
  if (tilt) p.base_tilt.resize(max_rows, 2);
  Eigen::MatrixXd tilt_columns(nv, 2);
  std::optional<pinocchio::Data> tilt_data;
  if (tilt) tilt_data.emplace(model);
  int row = 0;
  if (p.projection == Projection::None) {
    for (int i = 0; i < nv; ++i) {
      const auto it = std::find(samples.joint_idx_v.begin(), samples.joint_idx_v.end(), i);
      p.channel_names.push_back(it == samples.joint_idx_v.end()
                                    ? "base[" + std::to_string(i) + "]"
                                    : samples.joint_names[it - samples.joint_idx_v.begin()]);
    }
  } else {
    const int m = p.projection == Projection::ContactNullSpace ? nv : 6;
    for (int i = 0; i < m; ++i) p.channel_names.push_back("projected[" + std::to_string(i) + "]");
  }

  pinocchio::Data data(model);
  std::vector<pinocchio::FrameIndex> frames;
  for (const auto& name : samples.contact_names) frames.push_back(model.getFrameId(name));
  Eigen::MatrixXd frame_jacobian(6, nv);
  int empty_projection = 0;
  for (int k = 0; k < N; ++k) {
    dynamics::computeRestrictedRegressor(rm, rd, samples.q.col(k), samples.v.col(k),
                                         samples.a.col(k));
    const Eigen::VectorXd rhs = St * samples.tau.col(k) - rd.tau_nom;
    if (tilt) {
      // crba fills the upper triangle: rows 0-2 hold M[0:3, :] = M[:, 0:3]^T
      pinocchio::crba(model, *tilt_data, samples.q.col(k));
      const Eigen::Vector4d xyzw = samples.q.col(k).segment<4>(3);
      const Eigen::Quaterniond r(xyzw[3], xyzw[0], xyzw[1], xyzw[2]);
      const Eigen::Vector3d g_base = r.conjugate() * model.gravity.linear();
      Eigen::MatrixXd M_lin = tilt_data->M.topRows(3).transpose();
      M_lin.topRows(3) = tilt_data->M.topLeftCorner(3, 3).selfadjointView<Eigen::Upper>();
      for (int i = 0; i < 2; ++i)
        tilt_columns.col(i) = M_lin * Eigen::Vector3d::Unit(i).cross(g_base);
    }
    if (p.projection == Projection::None) {
      for (int i = 0; i < nv; ++i) {
        // fixed base: drop slow rows of joints (min_speed)
        const auto it = std::find(samples.joint_idx_v.begin(), samples.joint_idx_v.end(), i);
        if (options.min_speed > 0 && it != samples.joint_idx_v.end() &&
            std::abs(samples.v(i, k)) < options.min_speed) {
          continue;
        }
        p.A.row(row) = rd.Y.row(i);
        p.G.row(row) = St.row(i);
        if (tilt) p.base_tilt.row(row) = tilt_columns.row(i);
        p.b[row] = rhs[i];
        p.sample[row] = k;
        p.channel[row] = i;
        ++row;
      }
      continue;
    }
    // constraint Jacobians of the frames in contact (LOCAL_WORLD_ALIGNED): a flat foot's six rows
    // (force and moment), a point contact's three at its point
    pinocchio::computeJointJacobians(model, data, samples.q.col(k));
    pinocchio::updateFramePlacements(model, data);
    int constraint_rows = 0;
    for (int c = 0; c < static_cast<int>(frames.size()); ++c) {
      if (samples.contact(c, k)) constraint_rows += samples.contact_flat[c] ? 6 : 3;
    }
    Eigen::MatrixXd Jc(constraint_rows, nv);
    int at = 0;
    for (int c = 0; c < static_cast<int>(frames.size()); ++c) {
      if (!samples.contact(c, k)) continue;
      frame_jacobian.setZero();
      pinocchio::getFrameJacobian(model, data, frames[c], pinocchio::LOCAL_WORLD_ALIGNED,
                                  frame_jacobian);
      if (samples.contact_flat[c]) {
        Jc.middleRows<6>(at) = frame_jacobian;
        at += 6;
        continue;
      }
      // v_point = v_frame + omega x r = v_frame - [r]x omega, r from the frame origin (world axes)
      const Eigen::Vector3d r = data.oMf[frames[c]].rotation() * samples.contact_point[c] +
                                Eigen::Vector3d(0, 0, -options.contact_offset);
      Eigen::Matrix3d rx;
      rx << 0, -r.z(), r.y(), r.z(), 0, -r.x(), -r.y(), r.x(), 0;
      Jc.middleRows<3>(at) = frame_jacobian.topRows<3>() - rx * frame_jacobian.bottomRows<3>();
      at += 3;
    }
    Eigen::MatrixXd N_basis;  // nv x m, N^T J_c^T = 0
    if (p.projection == Projection::ContactNullSpace) {
      N_basis = nullSpace(Jc);
    } else {
      const Eigen::MatrixXd nb = nullSpace(Jc.leftCols(6));
      N_basis = Eigen::MatrixXd::Zero(nv, nb.cols());
      N_basis.topRows(6) = nb;
    }
    if (N_basis.cols() == 0) {
      ++empty_projection;
      continue;
    }
    const Eigen::MatrixXd NY = N_basis.transpose() * rd.Y;
    const Eigen::MatrixXd NS = N_basis.transpose() * St;
    const Eigen::VectorXd Nb = N_basis.transpose() * rhs;
    Eigen::MatrixXd NT;
    if (tilt) NT = N_basis.transpose() * tilt_columns;
    for (int i = 0; i < N_basis.cols(); ++i) {
      if (tilt) p.base_tilt.row(row) = NT.row(i);
      p.A.row(row) = NY.row(i);
      p.G.row(row) = NS.row(i);
      p.b[row] = Nb[i];
      p.sample[row] = k;
      p.channel[row] = i;
      ++row;
    }
  }
  p.A.conservativeResize(row, np);
  p.G.conservativeResize(row, nj);
  p.b.conservativeResize(row);
  if (tilt) p.base_tilt.conservativeResize(row, 2);
  p.sample.conservativeResize(row);
  p.channel.conservativeResize(row);
  if (empty_projection > 0) {
    p.warnings.push_back(std::to_string(empty_projection) + " of " + std::to_string(N) +
                         " samples have no row left after projecting the contact forces out (" +
                         toString(p.projection) + ")");
  }
  if (options.min_speed > 0) {
    p.warnings.push_back("rows with |v| < " + num(options.min_speed) + " rad/s dropped: " +
                         std::to_string(N * nv - row) + " of " + std::to_string(N * nv));
  }
  require(row > 0, "problem", "at least one row", "none (every sample projected away or dropped)");
  return p;
}

// ---- linear systems ------------------------------------------------------------------------

LinearSystem torqueSystem(const StackedProblem& p) {
  LinearSystem s;
  s.layout = p.layout;
  s.names = p.layout.linearNames();
  const int rows = p.rows(), np = 10 * p.layout.numBodies();
  s.Phi.setZero(rows, p.layout.linearDimension());
  s.Phi.leftCols(np) = p.A;
  for (int f = 0; f < p.layout.numFriction(); ++f) {
    const int j = p.layout.friction_joint[f];
    for (int r = 0; r < rows; ++r) {
      const double g = p.G(r, j);
      if (g == 0) continue;
      const double v = p.v_joint(j, p.sample[r]);
      s.Phi(r, np + 2 * f) = g * std::tanh(p.coulomb_rate * v);
      s.Phi(r, np + 2 * f + 1) = g * v;
    }
  }
  for (int i = 0; i < p.layout.numArmature(); ++i) {
    const int j = p.layout.armature_joint[i];
    for (int r = 0; r < rows; ++r) {
      s.Phi(r, p.layout.armatureOffset() + i) = p.G(r, j) * p.a_joint(j, p.sample[r]);
    }
  }
  for (int i = 0; i < p.layout.numTorqueOffsets(); ++i)
    s.Phi.col(p.layout.torqueOffsetStart() + i) = p.G.col(p.layout.torque_offset_joint[i]);
  s.y = p.b;
  s.channel = p.channel;
  s.channel_names = p.channel_names;
  return s;
}

BaseTiltFit fitBaseTilt(const StackedProblem& problem, double min_separation) {
  require(problem.base_tilt.rows() == problem.rows() && problem.base_tilt.cols() == 2,
          "problem.base_tilt",
          "the rows' tilt columns (ProblemOptions::estimate_base_tilt on a free-flyer)", "none");
  const LinearSystem system = torqueSystem(problem);
  const int rows = system.rows();
  BaseTiltFit fit;
  // the part of [T y] outside the range of Phi: what no linear parameter can explain
  Eigen::MatrixXd Ty(rows, 3);
  Ty << problem.base_tilt, system.y;
  int rank = 0;
  if (system.Phi.cols() > 0) {
    Eigen::ColPivHouseholderQR<Eigen::MatrixXd> qr(system.Phi);
    rank = static_cast<int>(qr.rank());
    Ty.applyOnTheLeft(qr.householderQ().transpose());
  }
  if (rows - rank < 2) return fit;  // the parameters fit every row: nothing left to see a tilt in
  const Eigen::MatrixXd outside = Ty.bottomRows(rows - rank);
  const Eigen::MatrixXd T_out = outside.leftCols(2);
  const Eigen::VectorXd y_out = outside.col(2);
  const double largest = Eigen::JacobiSVD<Eigen::MatrixXd>(problem.base_tilt).singularValues()[0];
  const Eigen::JacobiSVD<Eigen::MatrixXd> svd(T_out, Eigen::ComputeThinU | Eigen::ComputeThinV);
  fit.separation = largest > 0 ? svd.singularValues()[1] / largest : 0;
  if (!(fit.separation >= min_separation)) return fit;
  fit.tilt = svd.solve(y_out);
  fit.identified = fit.tilt.allFinite();
  if (!fit.identified) fit.tilt.setZero();
  return fit;
}

LinearSystem energySystem(const model::RobotModel& robot, const Samples& samples,
                          const model::IdentifiedSet& set, const ProblemOptions& problem_options,
                          const EnergyOptions& options) {
  problem_options.validate();
  options.validate();
  require(!samples.free_flyer, "energy method", "a fixed-base robot (contact work is not measured)",
          "a free-flyer");
  LinearSystem s;
  s.layout = makeLayout(robot, samples, set, problem_options);
  s.names = s.layout.linearNames();
  const int N = samples.size(), L = options.interval;
  const int intervals = (N - 1) / L;
  require(intervals >= 2, "energy.interval",
          "at least 2 intervals in " + std::to_string(N) + " samples", std::to_string(intervals));
  const pinocchio::Model& model = robot.pinocchio();
  dynamics::RegressorModel rm(model, s.layout.bodies);
  dynamics::EnergyData ed(rm);
  const int np = rm.numParameters();
  const int n = s.layout.linearDimension();
  const double rate = problem_options.coulomb_rate;

  // per sample: energy regressor row (K + P) and rest energy; power terms
  Eigen::MatrixXd E(N, np);
  Eigen::VectorXd E_rest(N), power(N);
  Eigen::MatrixXd fric(N, 2 * s.layout.numFriction());
  Eigen::MatrixXd arm(N, s.layout.numArmature());
  Eigen::MatrixXd off(N, s.layout.numTorqueOffsets());  // v_j: an offset's power per unit
  for (int k = 0; k < N; ++k) {
    dynamics::computeEnergyRegressors(rm, ed, samples.q.col(k), samples.v.col(k));
    E.row(k) = ed.kinetic_regressor + ed.potential_regressor;
    E_rest[k] = ed.kinetic_rest + ed.potential_rest;
    double pw = 0;
    for (int j = 0; j < samples.numJoints(); ++j) {
      pw += samples.v(samples.joint_idx_v[j], k) * samples.tau(j, k);
    }
    power[k] = pw;
    for (int f = 0; f < s.layout.numFriction(); ++f) {
      const double v = samples.v(samples.joint_idx_v[s.layout.friction_joint[f]], k);
      fric(k, 2 * f) = v * std::tanh(rate * v);
      fric(k, 2 * f + 1) = v * v;
    }
    for (int i = 0; i < s.layout.numArmature(); ++i) {
      const double v = samples.v(samples.joint_idx_v[s.layout.armature_joint[i]], k);
      arm(k, i) = 0.5 * v * v;
    }
    for (int i = 0; i < s.layout.numTorqueOffsets(); ++i)
      off(k, i) = samples.v(samples.joint_idx_v[s.layout.torque_offset_joint[i]], k);
  }
  s.Phi.setZero(intervals, n);
  s.y.resize(intervals);
  s.channel.setZero(intervals);
  s.channel_names = {"energy"};
  for (int i = 0; i < intervals; ++i) {
    const int a = i * L, b = a + L;
    double work = 0;
    Eigen::RowVectorXd fw = Eigen::RowVectorXd::Zero(fric.cols());
    Eigen::RowVectorXd ow = Eigen::RowVectorXd::Zero(off.cols());
    for (int k = a; k < b; ++k) {
      const double h = samples.time[k + 1] - samples.time[k];
      work += 0.5 * h * (power[k] + power[k + 1]);
      fw += 0.5 * h * (fric.row(k) + fric.row(k + 1));
      ow += 0.5 * h * (off.row(k) + off.row(k + 1));
    }
    s.Phi.block(i, 0, 1, np) = E.row(b) - E.row(a);
    if (fric.cols() > 0) s.Phi.block(i, np, 1, fric.cols()) = fw;
    if (arm.cols() > 0)
      s.Phi.block(i, s.layout.armatureOffset(), 1, arm.cols()) = arm.row(b) - arm.row(a);
    if (off.cols() > 0) s.Phi.block(i, s.layout.torqueOffsetStart(), 1, off.cols()) = ow;
    s.y[i] = work - (E_rest[b] - E_rest[a]);
  }
  return s;
}

Eigen::VectorXd nominalLinearVector(const ParameterLayout& layout, const model::IdentifiedSet& set,
                                    const ProblemOptions& options) {
  Eigen::VectorXd x(layout.linearDimension());
  for (int b = 0; b < layout.numBodies(); ++b) {
    for (const auto& block : set.bodies) {
      if (block.joint == layout.bodies[b]) x.segment<10>(10 * b) = block.prior_mean;
    }
  }
  for (int f = 0; f < layout.numFriction(); ++f) {
    for (const auto& block : set.friction) {
      if (block.joint_name == layout.friction_joints[f]) {
        x[layout.frictionOffset() + 2 * f] = block.prior_gamma[3];
        x[layout.frictionOffset() + 2 * f + 1] = block.prior_gamma[5];
      }
    }
  }
  for (int i = 0; i < layout.numArmature(); ++i) {
    x[layout.armatureOffset() + i] = options.armature_prior_median;
  }
  x.tail(layout.numTorqueOffsets()).setZero();
  return x;
}

}  // namespace heft::identify
