#include "heft/sampling/parameters.hpp"

#include <algorithm>
#include <cmath>
#include <set>

#include <Eigen/Eigenvalues>

#include "heft/common/error.hpp"
#include "heft/common/format.hpp"
#include "heft/inertia/inertia.hpp"

namespace heft::sampling {

namespace {

std::string num(double x) { return formatNumber(x, 4); }

const char* const kLogCholeskyNames[10] = {"alpha", "d1",  "d2", "d3", "s12",
                                           "s23",   "s13", "cx", "cy", "cz"};

void requireRange(bool ok, const std::string& what, const std::string& detail) {
  if (!ok) throw InputError(what + ": " + detail);
}

// Principal moments of the rotational inertia about the COM, ascending.
Eigen::Vector3d principalMoments(const Vector10& pi) {
  Eigen::SelfAdjointEigenSolver<Eigen::Matrix3d> eig(inertia::rotationalInertiaAtCom(pi),
                                                     Eigen::EigenvaluesOnly);
  return eig.eigenvalues();
}

// Why `pi` lies outside `range`, or "" when it is inside.
std::string outsideBody(const std::string& name, const Vector10& pi, const BodyRange& range) {
  const double m = inertia::mass(pi);
  if (!(m >= range.mass_min && m <= range.mass_max))
    return "mass of " + name + " " + num(m) + " kg outside [" + num(range.mass_min) + ", " +
           num(range.mass_max) + "]";
  const Vector3 c = inertia::centerOfMass(pi);
  for (int i = 0; i < 3; ++i) {
    if (!(c[i] >= range.com_min[i] && c[i] <= range.com_max[i]))
      return std::string("COM ") + "xyz"[i] + " of " + name + " " + num(c[i]) + " m outside [" +
             num(range.com_min[i]) + ", " + num(range.com_max[i]) + "]";
  }
  const Eigen::Vector3d moments = principalMoments(pi);
  if (!(moments[0] >= range.inertia_min && moments[2] <= range.inertia_max))
    return "principal moments of " + name + " [" + num(moments[0]) + ", " + num(moments[2]) +
           "] kg m^2 outside [" + num(range.inertia_min) + ", " + num(range.inertia_max) + "]";
  return "";
}

std::string outsideScalar(const std::string& what, double x, double lo, double hi) {
  if (x >= lo && x <= hi) return "";
  return what + " " + num(x) + " outside [" + num(lo) + ", " + num(hi) + "]";
}

}  // namespace

Vector10 logCholeskySteps() {
  Vector10 s;
  s << 0.1, 0.1, 0.1, 0.1, 0.01, 0.01, 0.01, 0.02, 0.02, 0.02;
  return s;
}

BodyRange defaultBodyRange(const Vector10& nominal_pi) {
  BodyRange r;
  const double m = inertia::mass(nominal_pi);
  r.mass_min = 0.5 * m;
  r.mass_max = 3.0 * m;
  const Vector3 c = inertia::centerOfMass(nominal_pi);
  r.com_min = c.array() - 0.1;
  r.com_max = c.array() + 0.1;
  const Eigen::Vector3d moments = principalMoments(nominal_pi);
  r.inertia_min = std::max(moments[0], 1e-9) / 5.0;
  // a mass of up to 2 m more placed 0.1 m from the COM adds at most 2 m (0.1)^2 per axis
  r.inertia_max = 5.0 * moments[2] + 2.0 * m * 0.01;
  return r;
}

ParameterSpace::ParameterSpace(std::vector<SampledBody> bodies, std::vector<ActuatorGroup> groups,
                               std::vector<SampledJoint> joints, double floor_offset_range)
    : bodies_(std::move(bodies)),
      groups_(std::move(groups)),
      joints_(std::move(joints)),
      floor_offset_range_(floor_offset_range) {
  std::set<pinocchio::JointIndex> seen_bodies;
  for (const SampledBody& b : bodies_) {
    const std::string what = "bodies: " + b.name;
    requireRange(seen_bodies.insert(b.joint).second, what, "listed twice");
    const BodyRange& r = b.range;
    requireRange(r.mass_min > 0 && r.mass_min < r.mass_max, what,
                 "expected a mass range 0 < min < max, got [" + num(r.mass_min) + ", " +
                     num(r.mass_max) + "]");
    requireRange((r.com_min.array() < r.com_max.array()).all(), what,
                 "expected a COM range with min < max in each axis");
    requireRange(r.inertia_min > 0 && r.inertia_min < r.inertia_max, what,
                 "expected an inertia range 0 < min < max, got [" + num(r.inertia_min) + ", " +
                     num(r.inertia_max) + "]");
    const inertia::ConsistencyReport report = inertia::checkConsistency(b.start_pi);
    requireRange(report.consistent, what, "the start model is not physically consistent");
    const std::string outside = outsideBody(b.name, b.start_pi, r);
    requireRange(outside.empty(), what, "the start model lies outside the range: " + outside);
    start_log_cholesky_.push_back(inertia::logCholeskyFromPi(b.start_pi));
    for (const char* n : kLogCholeskyNames) names_.push_back(std::string(n) + "[" + b.name + "]");
  }
  std::set<int> grouped;
  for (const ActuatorGroup& g : groups_) {
    const std::string what = "actuators: " + g.name;
    requireRange(!g.joints.empty(), what, "expected at least one joint");
    for (int j : g.joints) requireRange(grouped.insert(j).second, what, "a joint is in two groups");
    requireRange(g.gain_min > 0 && g.gain_min < g.gain_max, what, "expected 0 < gain min < max");
    requireRange(g.saturation_min > 0 && g.saturation_min < g.saturation_max, what,
                 "expected 0 < saturation min < max");
    requireRange(g.gain > 0, what, "expected a gain > 0, got " + num(g.gain));
    requireRange(g.saturation >= 0, what, "expected a saturation >= 0, got " + num(g.saturation));
    if (g.sample_gain) {
      const std::string o = outsideScalar("start gain", g.gain, g.gain_min, g.gain_max);
      requireRange(o.empty(), what, o);
      names_.push_back("gain[" + g.name + "]");
    }
    if (g.sample_saturation) {
      const std::string o =
          outsideScalar("start saturation", g.saturation, g.saturation_min, g.saturation_max);
      requireRange(o.empty(), what, o);
      names_.push_back("saturation[" + g.name + "]");
    }
  }
  std::set<int> seen_joints;
  for (const SampledJoint& j : joints_) {
    const std::string what = "joints: " + j.name;
    requireRange(seen_joints.insert(j.joint).second, what, "listed twice");
    const auto check = [&](const char* field, double start, double max) {
      requireRange(max >= 0, what, std::string(field) + ": expected max >= 0");
      if (max > 0) {
        const std::string o = outsideScalar(std::string("start ") + field, start, 0, max);
        requireRange(o.empty(), what, o);
        names_.push_back(std::string(field) + "[" + j.name + "]");
      }
    };
    check("damping", j.start.damping, j.damping_max);
    check("frictionloss", j.start.frictionloss, j.frictionloss_max);
    check("armature", j.start.armature, j.armature_max);
  }
  requireRange(std::isfinite(floor_offset_range_) && floor_offset_range_ >= 0, "floor offset",
               "expected a range >= 0 m, got " + num(floor_offset_range_));
  if (floor_offset_range_ > 0) names_.push_back("floor_offset");
  dimension_ = static_cast<int>(names_.size());
  if (dimension_ == 0) throw InputError("nothing to sample: no body, actuator group or joint term");
}

Eigen::VectorXd ParameterSpace::steps() const {
  Eigen::VectorXd out(dimension_);
  int i = 0;
  for (std::size_t b = 0; b < bodies_.size(); ++b, i += 10) out.segment<10>(i) = logCholeskySteps();
  for (const ActuatorGroup& g : groups_) {
    if (g.sample_gain) out[i++] = 0.05;
    if (g.sample_saturation) out[i++] = 2.0;
  }
  for (const SampledJoint& j : joints_) {
    if (j.damping_max > 0) out[i++] = 0.05;
    if (j.frictionloss_max > 0) out[i++] = 0.05;
    if (j.armature_max > 0) out[i++] = 0.005;
  }
  if (floor_offset_range_ > 0) out[i++] = 0.002;
  return out;
}

Candidate ParameterSpace::candidate(const Eigen::VectorXd& x) const {
  require(x.size() == dimension_, "x size", std::to_string(dimension_), std::to_string(x.size()));
  Candidate c;
  int i = 0;
  const Eigen::VectorXd step = steps();
  for (std::size_t b = 0; b < bodies_.size(); ++b) {
    const Vector10 theta =
        start_log_cholesky_[b] + step.segment<10>(i).cwiseProduct(x.segment<10>(i));
    c.body_pi.push_back(inertia::piFromLogCholesky(theta));
    i += 10;
  }
  for (const ActuatorGroup& g : groups_) {
    sim::ActuatorModel a;
    a.gain = g.gain;
    a.saturation = g.saturation;
    if (g.sample_gain) {
      a.gain += step[i] * x[i];
      ++i;
    }
    if (g.sample_saturation) {
      a.saturation += step[i] * x[i];
      ++i;
    }
    c.groups.push_back(a);
  }
  for (const SampledJoint& j : joints_) {
    sim::JointFriction f = j.start;
    if (j.damping_max > 0) {
      f.damping += step[i] * x[i];
      ++i;
    }
    if (j.frictionloss_max > 0) {
      f.frictionloss += step[i] * x[i];
      ++i;
    }
    if (j.armature_max > 0) {
      f.armature += step[i] * x[i];
      ++i;
    }
    c.joints.push_back(f);
  }
  if (floor_offset_range_ > 0) c.floor_offset = step[i] * x[i];
  return c;
}

bool ParameterSpace::inRange(const Candidate& c, std::string* why) const {
  std::string outside;
  for (std::size_t b = 0; b < bodies_.size() && outside.empty(); ++b)
    outside = outsideBody(bodies_[b].name, c.body_pi[b], bodies_[b].range);
  for (std::size_t k = 0; k < groups_.size() && outside.empty(); ++k) {
    const ActuatorGroup& g = groups_[k];
    if (g.sample_gain)
      outside = outsideScalar("gain of " + g.name, c.groups[k].gain, g.gain_min, g.gain_max);
    if (outside.empty() && g.sample_saturation)
      outside = outsideScalar("saturation of " + g.name, c.groups[k].saturation, g.saturation_min,
                              g.saturation_max);
  }
  for (std::size_t k = 0; k < joints_.size() && outside.empty(); ++k) {
    const SampledJoint& j = joints_[k];
    const sim::JointFriction& f = c.joints[k];
    if (j.damping_max > 0)
      outside = outsideScalar("damping of " + j.name, f.damping, 0, j.damping_max);
    if (outside.empty() && j.frictionloss_max > 0)
      outside = outsideScalar("frictionloss of " + j.name, f.frictionloss, 0, j.frictionloss_max);
    if (outside.empty() && j.armature_max > 0)
      outside = outsideScalar("armature of " + j.name, f.armature, 0, j.armature_max);
  }
  if (outside.empty() && std::abs(c.floor_offset) > floor_offset_range_)
    outside = "floor offset " + num(c.floor_offset) + " m outside [-" + num(floor_offset_range_) +
              ", " + num(floor_offset_range_) + "]";
  if (why) *why = outside;
  return outside.empty();
}

}  // namespace heft::sampling
