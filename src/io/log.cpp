#include "heft/io/log.hpp"

#include <cmath>
#include <cstring>
#include <sstream>

#include "heft/common/error.hpp"

namespace heft::io {

std::string toString(BaseType type) { return type == BaseType::FreeFlyer ? "free-flyer" : "fixed"; }

BaseType parseBaseType(const std::string& name) {
  if (name == "fixed") return BaseType::Fixed;
  if (name == "free-flyer") return BaseType::FreeFlyer;
  throw InputError("base_type: expected \"fixed\" or \"free-flyer\", got \"" + name + "\"");
}

std::vector<model::ContactPoint> ContactSeries::definedPoints() const {
  std::vector<model::ContactPoint> points;
  if (frames.empty()) return points;
  for (std::size_t c = 0; c < names.size() && c < frames.size(); ++c) {
    const auto row = static_cast<Eigen::Index>(c);
    const Vector3 offset =
        row < offsets.rows() && offsets.cols() == 3 ? Vector3(offsets.row(row)) : Vector3::Zero();
    points.push_back({names[c], frames[c], offset});
  }
  return points;
}

namespace {

// Bitwise equality so that NaN equals NaN and -0 differs from +0: a round trip must be exact.
bool sameBits(double a, double b) { return std::memcmp(&a, &b, sizeof(double)) == 0; }

std::string formatValue(double x) {
  std::ostringstream s;
  s.precision(17);
  s << x;
  return s.str();
}

template <typename Matrix>
std::string compareMatrix(const std::string& field, const Matrix& a, const Matrix& b) {
  if (a.rows() != b.rows() || a.cols() != b.cols()) {
    return field + ": size " + std::to_string(a.rows()) + " x " + std::to_string(a.cols()) +
           " vs " + std::to_string(b.rows()) + " x " + std::to_string(b.cols());
  }
  for (Eigen::Index r = 0; r < a.rows(); ++r) {
    for (Eigen::Index c = 0; c < a.cols(); ++c) {
      const double x = static_cast<double>(a(r, c)), y = static_cast<double>(b(r, c));
      if (!sameBits(x, y)) {
        return field + " row " + std::to_string(r) + " column " + std::to_string(c) + ": " +
               formatValue(x) + " vs " + formatValue(y);
      }
    }
  }
  return "";
}

std::string compareNames(const std::string& field, const std::vector<std::string>& a,
                         const std::vector<std::string>& b) {
  if (a.size() != b.size()) {
    return field + ": " + std::to_string(a.size()) + " vs " + std::to_string(b.size()) + " names";
  }
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (a[i] != b[i])
      return field + " [" + std::to_string(i) + "]: \"" + a[i] + "\" vs \"" + b[i] + "\"";
  }
  return "";
}

std::string compareText(const std::string& field, const std::string& a, const std::string& b) {
  return a == b ? "" : field + ": \"" + a + "\" vs \"" + b + "\"";
}

// Returns the first non-empty difference.
std::string firstOf(std::initializer_list<std::string> differences) {
  for (const auto& d : differences) {
    if (!d.empty()) return d;
  }
  return "";
}

std::string presence(const std::string& group, bool a, bool b) {
  if (a == b) return "";
  return group + ": present in " + (a ? "the first" : "the second") + " log only";
}

}  // namespace

std::string firstDifference(const Log& a, const Log& b) {
  std::string seed_a = a.meta.seed ? std::to_string(*a.meta.seed) : "none";
  std::string seed_b = b.meta.seed ? std::to_string(*b.meta.seed) : "none";
  std::string d =
      firstOf({compareText("robot", a.meta.robot, b.meta.robot),
               compareText("base_type", toString(a.meta.base_type), toString(b.meta.base_type)),
               compareText("units", a.meta.units, b.meta.units),
               compareText("noise_profile", a.meta.noise_profile, b.meta.noise_profile),
               compareText("scenario", a.meta.scenario, b.meta.scenario),
               compareText("seed", seed_a, seed_b)});
  if (!d.empty()) return d;
  const JointSeries &ja = a.joints, &jb = b.joints;
  d = firstOf({compareMatrix("joints/time", ja.time, jb.time),
               compareNames("joints/names", ja.names, jb.names),
               compareMatrix("joints/q", ja.q, jb.q), compareMatrix("joints/v", ja.v, jb.v),
               compareMatrix("joints/tau", ja.tau, jb.tau),
               compareMatrix("joints/tau_cmd", ja.tau_cmd, jb.tau_cmd),
               compareMatrix("joints/base_pose", ja.base_pose, jb.base_pose),
               compareMatrix("joints/base_twist", ja.base_twist, jb.base_twist)});
  if (!d.empty()) return d;
  if (!(d = presence("imu", a.imu.has_value(), b.imu.has_value())).empty()) return d;
  if (a.imu) {
    d = firstOf({compareText("imu/frame", a.imu->frame, b.imu->frame),
                 compareMatrix("imu/time", a.imu->time, b.imu->time),
                 compareMatrix("imu/gyro", a.imu->gyro, b.imu->gyro),
                 compareMatrix("imu/accel", a.imu->accel, b.imu->accel),
                 compareMatrix("imu/orientation", a.imu->orientation, b.imu->orientation)});
    if (!d.empty()) return d;
  }
  if (!(d = presence("mocap", a.mocap.has_value(), b.mocap.has_value())).empty()) return d;
  if (a.mocap) {
    d = firstOf({compareText("mocap/frame", a.mocap->frame, b.mocap->frame),
                 compareMatrix("mocap/time", a.mocap->time, b.mocap->time),
                 compareMatrix("mocap/position", a.mocap->position, b.mocap->position),
                 compareMatrix("mocap/orientation", a.mocap->orientation, b.mocap->orientation)});
    if (!d.empty()) return d;
  }
  if (!(d = presence("contacts", a.contacts.has_value(), b.contacts.has_value())).empty()) return d;
  if (a.contacts) {
    d = firstOf({compareMatrix("contacts/time", a.contacts->time, b.contacts->time),
                 compareNames("contacts/names", a.contacts->names, b.contacts->names),
                 compareMatrix("contacts/flags", a.contacts->flags, b.contacts->flags),
                 compareNames("contacts/frames", a.contacts->frames, b.contacts->frames),
                 compareMatrix("contacts/offsets", a.contacts->offsets, b.contacts->offsets)});
    if (!d.empty()) return d;
  }
  if (!(d = presence("truth", a.truth.has_value(), b.truth.has_value())).empty()) return d;
  if (a.truth) {
    const TruthSeries &ta = *a.truth, &tb = *b.truth;
    d = firstOf(
        {compareMatrix("truth/time", ta.time, tb.time), compareMatrix("truth/q", ta.q, tb.q),
         compareMatrix("truth/v", ta.v, tb.v), compareMatrix("truth/a", ta.a, tb.a),
         compareMatrix("truth/base_pose", ta.base_pose, tb.base_pose),
         compareMatrix("truth/base_twist", ta.base_twist, tb.base_twist),
         compareMatrix("truth/base_acceleration", ta.base_acceleration, tb.base_acceleration),
         compareNames("truth/contact_names", ta.contact_names, tb.contact_names),
         compareMatrix("truth/contact_forces", ta.contact_forces, tb.contact_forces),
         compareMatrix("truth/contact_flags", ta.contact_flags, tb.contact_flags),
         compareNames("truth/bodies/names", ta.body_names, tb.body_names),
         compareMatrix("truth/bodies/pi", ta.body_pi, tb.body_pi),
         compareNames("truth/varying_body_names", ta.varying_body_names, tb.varying_body_names),
         compareMatrix("truth/varying_body_pi", ta.varying_body_pi, tb.varying_body_pi)});
    if (!d.empty()) return d;
  }
  if (!(d = presence("estimates", a.estimates.has_value(), b.estimates.has_value())).empty())
    return d;
  if (a.estimates) {
    const EstimateSeries &ea = *a.estimates, &eb = *b.estimates;
    d = firstOf({compareText("estimates/estimator", ea.estimator, eb.estimator),
                 compareMatrix("estimates/time", ea.time, eb.time),
                 compareNames("estimates/body_names", ea.body_names, eb.body_names),
                 compareMatrix("estimates/body_pi", ea.body_pi, eb.body_pi),
                 compareMatrix("estimates/body_pi_std", ea.body_pi_std, eb.body_pi_std),
                 compareMatrix("estimates/nis", ea.nis, eb.nis),
                 compareMatrix("estimates/status", ea.status, eb.status)});
    if (!d.empty()) return d;
  }
  return "";
}

}  // namespace heft::io
