#include "heft/io/validation.hpp"

#include <algorithm>
#include <cmath>
#include <set>
#include <sstream>

#include "heft/common/error.hpp"
#include "heft/common/format.hpp"
#include "heft/inertia/inertia.hpp"
#include "heft/model/model.hpp"

namespace heft::io {

void ValidationOptions::validate() const {
  require(max_errors >= 1, "ValidationOptions.max_errors", ">= 1", std::to_string(max_errors));
  require(
      std::isfinite(quaternion_tolerance) && quaternion_tolerance > 0 && quaternion_tolerance < 1,
      "ValidationOptions.quaternion_tolerance", "in (0, 1)", std::to_string(quaternion_tolerance));
}

std::string ValidationReport::report() const {
  if (ok()) return "log is valid";
  std::string text;
  for (const auto& e : errors) text += e.message + "\n";
  if (total_errors > errors.size()) {
    text += "... and " + std::to_string(total_errors - errors.size()) + " more errors\n";
  }
  return text;
}

TimeOrder timeOrderAt(const Eigen::VectorXd& time, Eigen::Index i) {
  if (!std::isfinite(time(i)) || !std::isfinite(time(i - 1))) return TimeOrder::NotFinite;
  if (time(i) == time(i - 1)) return TimeOrder::Duplicated;
  return time(i) < time(i - 1) ? TimeOrder::Backwards : TimeOrder::Increasing;
}

void requireValid(const ValidationReport& report, const std::string& source) {
  if (report.ok()) return;
  std::string message = source.empty() ? "" : source + ": ";
  message += report.errors.front().message;
  if (report.total_errors > 1) {
    message += " (and " + std::to_string(report.total_errors - 1) + " more errors)";
  }
  throw InputError(message);
}

namespace {

std::string num(double x) { return formatNumber(x, 10); }

std::string joinNames(const std::vector<std::string>& names, std::size_t limit = 20) {
  std::string text;
  for (std::size_t i = 0; i < names.size() && i < limit; ++i) text += (i ? ", " : "") + names[i];
  if (names.size() > limit) text += ", ... (" + std::to_string(names.size()) + " in all)";
  return text;
}

/// Records errors up to the limit, counts all of them.
class Collector {
 public:
  Collector(ValidationReport& report, const ValidationOptions& options)
      : report_(report), options_(options) {}

  void add(const std::string& field, std::ptrdiff_t row, const std::string& what) {
    ++report_.total_errors;
    if (static_cast<int>(report_.errors.size()) >= options_.max_errors) return;
    std::string message = field + (row >= 0 ? " row " + std::to_string(row) : "") + ": " + what;
    report_.errors.push_back({field, row, message});
  }
  const ValidationOptions& options() const { return options_; }

 private:
  ValidationReport& report_;
  const ValidationOptions& options_;
};

/// Time vector: at least `min_rows`, finite, strictly increasing.
void checkTime(Collector& out, const std::string& field, const Eigen::VectorXd& time,
               long min_rows) {
  if (time.size() < min_rows) {
    out.add(field, -1,
            "expected at least " + std::to_string(min_rows) + " samples, got " +
                std::to_string(time.size()) + (time.size() == 0 ? " (empty log)" : ""));
    return;
  }
  for (Eigen::Index i = 0; i < time.size(); ++i) {
    if (!std::isfinite(time(i))) {
      out.add(field, i, "expected a finite time [s], got " + num(time(i)));
      continue;
    }
    if (i == 0) continue;
    const TimeOrder order = timeOrderAt(time, i);
    if (order == TimeOrder::Duplicated) {
      out.add(field, i,
              "duplicated time stamp " + num(time(i)) + " s (same as row " + std::to_string(i - 1) +
                  ")");
    } else if (order == TimeOrder::Backwards) {
      out.add(field, i,
              "expected strictly increasing time, got " + num(time(i)) + " s after " +
                  num(time(i - 1)) + " s (row " + std::to_string(i - 1) + ")");
    }
  }
}

/// Shape check; returns false (after recording) when the matrix cannot be checked further.
template <typename Matrix>
bool checkShape(Collector& out, const std::string& field, const Matrix& m, Eigen::Index rows,
                Eigen::Index cols, const std::string& why) {
  if (m.rows() == rows && m.cols() == cols) return true;
  out.add(field, -1,
          "expected " + std::to_string(rows) + " x " + std::to_string(cols) + " (" + why +
              "), got " + std::to_string(m.rows()) + " x " + std::to_string(m.cols()));
  return false;
}

/// One error per row holding a value that `accept` refuses, naming the first such column.
template <typename Accept>
void checkValues(Collector& out, const std::string& field, const Eigen::MatrixXd& m,
                 const std::vector<std::string>& column_names, Accept accept,
                 const std::string& expected) {
  for (Eigen::Index r = 0; r < m.rows(); ++r) {
    for (Eigen::Index c = 0; c < m.cols(); ++c) {
      if (accept(m(r, c))) continue;
      const std::string column =
          c < static_cast<Eigen::Index>(column_names.size()) ? column_names[c] : std::to_string(c);
      out.add(field, r, "column " + column + ": expected " + expected + ", got " + num(m(r, c)));
      break;
    }
  }
}

/// One error per row holding a non-finite value, naming the first such column.
void checkFinite(Collector& out, const std::string& field, const Eigen::MatrixXd& m,
                 const std::vector<std::string>& column_names) {
  checkValues(
      out, field, m, column_names, [](double x) { return std::isfinite(x); }, "a finite value");
}

/// One error per row holding a negative value (NaN is left to checkFinite).
void checkNonNegative(Collector& out, const std::string& field, const Eigen::MatrixXd& m,
                      const std::vector<std::string>& column_names, const std::string& what) {
  checkValues(
      out, field, m, column_names, [](double x) { return !(x < 0); }, "a non-negative " + what);
}

void checkQuaternions(Collector& out, const std::string& field, const Eigen::MatrixXd& m,
                      Eigen::Index first_column) {
  for (Eigen::Index r = 0; r < m.rows(); ++r) {
    const auto quaternion = m.row(r).segment(first_column, 4);
    if (!quaternion.allFinite()) continue;  // reported by checkFinite
    const double norm = quaternion.norm();
    if (std::abs(norm - 1) > out.options().quaternion_tolerance) {
      out.add(field, r,
              "expected a unit quaternion [qx qy qz qw] (| |q| - 1 | <= " +
                  num(out.options().quaternion_tolerance) + "), got norm " + num(norm));
    }
  }
}

void checkFlags(Collector& out, const std::string& field, const FlagMatrix& m,
                const std::vector<std::string>& names) {
  for (Eigen::Index r = 0; r < m.rows(); ++r) {
    for (Eigen::Index c = 0; c < m.cols(); ++c) {
      if (m(r, c) <= 1) continue;
      out.add(field, r,
              "column " + (c < static_cast<Eigen::Index>(names.size()) ? names[c] : "?") +
                  ": expected a flag 0 or 1, got " + std::to_string(m(r, c)));
      break;
    }
  }
}

/// Names: non-empty strings, unique, and free of characters a CSV header cannot hold.
void checkNames(Collector& out, const std::string& field, const std::vector<std::string>& names,
                bool allow_empty_list) {
  if (names.empty() && !allow_empty_list)
    out.add(field, -1, "expected at least one name, got none");
  std::set<std::string> seen;
  for (std::size_t i = 0; i < names.size(); ++i) {
    const std::string& name = names[i];
    const auto row = static_cast<std::ptrdiff_t>(i);
    if (name.empty()) {
      out.add(field, row, "expected a non-empty name");
      continue;
    }
    bool printable = true;
    for (unsigned char ch : name) printable &= ch >= 0x20 && ch != ',' && ch != '"' && ch != 0x7f;
    if (!printable) {
      out.add(field, row, "name \"" + name + "\" holds a comma, a quote or a control character");
    }
    if (!seen.insert(name).second) out.add(field, row, "duplicated name \"" + name + "\"");
  }
}

const std::vector<std::string> kPose = {"x", "y", "z", "qx", "qy", "qz", "qw"};
const std::vector<std::string> kTwist = {"vx", "vy", "vz", "wx", "wy", "wz"};
const std::vector<std::string> kAcceleration = {"ax", "ay", "az", "alphax", "alphay", "alphaz"};
const std::vector<std::string> kXyz = {"x", "y", "z"};
const std::vector<std::string> kQuaternion = {"qx", "qy", "qz", "qw"};
const std::vector<std::string> kPi = {"m",   "mcx", "mcy", "mcz", "Ixx",
                                      "Ixy", "Iyy", "Ixz", "Iyz", "Izz"};

/// Column names of a samples x 10 nb matrix of pi: "<body>/m", "<body>/mcx", ...
std::vector<std::string> piColumns(const std::vector<std::string>& bodies) {
  std::vector<std::string> columns;
  for (const auto& body : bodies) {
    for (const auto& channel : kPi) columns.push_back(body + "/" + channel);
  }
  return columns;
}

/// Optional matrix: empty, or rows x cols and finite; `pose` adds a unit-quaternion check on 3..6.
void checkOptional(Collector& out, const std::string& field, const Eigen::MatrixXd& m,
                   Eigen::Index rows, Eigen::Index cols, const std::string& why,
                   const std::vector<std::string>& column_names, bool pose) {
  if (m.size() == 0) return;
  if (!checkShape(out, field, m, rows, cols, why)) return;
  checkFinite(out, field, m, column_names);
  if (pose) checkQuaternions(out, field, m, 3);
}

void checkJoints(Collector& out, const Log& log) {
  const JointSeries& j = log.joints;
  checkTime(out, "joints/time", j.time, 2);
  checkNames(out, "joints/names", j.names, false);
  const Eigen::Index n = j.time.size(), nj = static_cast<Eigen::Index>(j.names.size());
  const std::string why = "samples of joints/time x names in joints/names";
  for (const auto& [field, m] : {std::pair<std::string, const Eigen::MatrixXd*>{"joints/q", &j.q},
                                 {"joints/v", &j.v},
                                 {"joints/tau", &j.tau}}) {
    if (checkShape(out, field, *m, n, nj, why)) checkFinite(out, field, *m, j.names);
  }
  checkOptional(out, "joints/tau_cmd", j.tau_cmd, n, nj, why, j.names, false);
  const bool floating = log.meta.base_type == BaseType::FreeFlyer;
  if (!floating && j.base_pose.size() > 0) {
    out.add("joints/base_pose", -1, "present but base_type is \"fixed\" (expected free-flyer)");
  }
  if (!floating && j.base_twist.size() > 0) {
    out.add("joints/base_twist", -1, "present but base_type is \"fixed\" (expected free-flyer)");
  }
  checkOptional(out, "joints/base_pose", j.base_pose, n, 7, "samples x [x y z qx qy qz qw]", kPose,
                true);
  checkOptional(out, "joints/base_twist", j.base_twist, n, 6, "samples x [vx vy vz wx wy wz]",
                kTwist, false);
}

void checkImu(Collector& out, const ImuSeries& imu) {
  checkTime(out, "imu/time", imu.time, 1);
  const Eigen::Index m = imu.time.size();
  if (checkShape(out, "imu/gyro", imu.gyro, m, 3, "samples of imu/time x 3")) {
    checkFinite(out, "imu/gyro", imu.gyro, kXyz);
  }
  if (checkShape(out, "imu/accel", imu.accel, m, 3, "samples of imu/time x 3")) {
    checkFinite(out, "imu/accel", imu.accel, kXyz);
  }
  if (imu.orientation.size() > 0 && checkShape(out, "imu/orientation", imu.orientation, m, 4,
                                               "samples of imu/time x [qx qy qz qw]")) {
    checkFinite(out, "imu/orientation", imu.orientation, kQuaternion);
    checkQuaternions(out, "imu/orientation", imu.orientation, 0);
  }
}

void checkMocap(Collector& out, const MocapSeries& mocap) {
  checkTime(out, "mocap/time", mocap.time, 1);
  const Eigen::Index k = mocap.time.size();
  if (checkShape(out, "mocap/position", mocap.position, k, 3, "samples of mocap/time x 3")) {
    checkFinite(out, "mocap/position", mocap.position, kXyz);
  }
  if (checkShape(out, "mocap/orientation", mocap.orientation, k, 4,
                 "samples of mocap/time x [qx qy qz qw]")) {
    checkFinite(out, "mocap/orientation", mocap.orientation, kQuaternion);
    checkQuaternions(out, "mocap/orientation", mocap.orientation, 0);
  }
}

void checkContacts(Collector& out, const ContactSeries& contacts) {
  checkTime(out, "contacts/time", contacts.time, 1);
  checkNames(out, "contacts/names", contacts.names, false);
  if (checkShape(out, "contacts/flags", contacts.flags, contacts.time.size(),
                 static_cast<Eigen::Index>(contacts.names.size()),
                 "samples of contacts/time x names in contacts/names")) {
    checkFlags(out, "contacts/flags", contacts.flags, contacts.names);
  }
  const auto nc = static_cast<Eigen::Index>(contacts.names.size());
  if (!contacts.frames.empty() || contacts.offsets.size() > 0) {
    if (static_cast<Eigen::Index>(contacts.frames.size()) != nc) {
      out.add("contacts/frames", -1,
              "expected one frame per name in contacts/names (" + std::to_string(nc) + "), got " +
                  std::to_string(contacts.frames.size()));
    }
    if (checkShape(out, "contacts/offsets", contacts.offsets, nc, 3,
                   "one [x y z] row per name in contacts/names")) {
      checkFinite(out, "contacts/offsets", contacts.offsets, {"x", "y", "z"});
    }
  }
}

const std::vector<std::string> kWrench = {"fx", "fy", "fz", "tx", "ty", "tz"};

void checkForceTorque(Collector& out, const ForceTorqueSeries& ft) {
  checkTime(out, "force_torque/time", ft.time, 1);
  checkNames(out, "force_torque/names", ft.names, false);
  if (ft.frames.size() != ft.names.size()) {
    out.add("force_torque/frames", -1,
            "expected one frame per name in force_torque/names (" +
                std::to_string(ft.names.size()) + "), got " + std::to_string(ft.frames.size()));
  } else {
    for (std::size_t i = 0; i < ft.frames.size(); ++i) {
      bool printable = !ft.frames[i].empty();
      for (unsigned char ch : ft.frames[i])
        printable &= ch >= 0x20 && ch != ',' && ch != '"' && ch != 0x7f;
      if (!printable) {
        out.add("force_torque/frames[" + std::to_string(i) + "]", -1,
                "expected a frame name without a comma, a quote or a control character, got \"" +
                    ft.frames[i] + "\"");
      }
    }
  }
  std::vector<std::string> columns;
  for (const auto& name : ft.names) {
    for (const auto& axis : kWrench) columns.push_back(name + "/" + axis);
  }
  if (checkShape(out, "force_torque/wrench", ft.wrench, ft.time.size(),
                 6 * static_cast<Eigen::Index>(ft.names.size()),
                 "samples of force_torque/time x 6 per name in force_torque/names")) {
    checkFinite(out, "force_torque/wrench", ft.wrench, columns);
  }
}

// The truth's joint and base series: shapes, finite values, a base only on a floating base.
void checkTruthMotion(Collector& out, const Log& log) {
  const TruthSeries& t = *log.truth;
  const bool floating = log.meta.base_type == BaseType::FreeFlyer;
  const Eigen::Index n = t.time.size(), nj = static_cast<Eigen::Index>(log.joints.names.size());
  const std::string why = "samples of truth/time x names in joints/names";
  for (const auto& [field, m] : {std::pair<std::string, const Eigen::MatrixXd*>{"truth/q", &t.q},
                                 {"truth/v", &t.v},
                                 {"truth/a", &t.a}}) {
    if (checkShape(out, field, *m, n, nj, why)) checkFinite(out, field, *m, log.joints.names);
  }
  for (const auto& [field, m] :
       {std::pair<std::string, const Eigen::MatrixXd*>{"truth/base_pose", &t.base_pose},
        {"truth/base_twist", &t.base_twist},
        {"truth/base_acceleration", &t.base_acceleration}}) {
    if (!floating && m->size() > 0) {
      out.add(field, -1, "present but base_type is \"fixed\" (expected free-flyer)");
    }
  }
  checkOptional(out, "truth/base_pose", t.base_pose, n, 7, "samples x [x y z qx qy qz qw]", kPose,
                true);
  checkOptional(out, "truth/base_twist", t.base_twist, n, 6, "samples x [vx vy vz wx wy wz]",
                kTwist, false);
  checkOptional(out, "truth/base_acceleration", t.base_acceleration, n, 6,
                "samples x [ax ay az alphax alphay alphaz]", kAcceleration, false);
}

// The truth's contact forces and flags, against truth/contact_names.
void checkTruthContacts(Collector& out, const TruthSeries& t) {
  const Eigen::Index n = t.time.size();
  checkNames(out, "truth/contact_names", t.contact_names, true);
  const auto nc = static_cast<Eigen::Index>(t.contact_names.size());
  if (nc > 0 || t.contact_forces.size() > 0) {
    std::vector<std::string> columns;
    for (const auto& name : t.contact_names) {
      for (const char* axis : {"/fx", "/fy", "/fz"}) columns.push_back(name + axis);
    }
    if (checkShape(out, "truth/contact_forces", t.contact_forces, n, 3 * nc,
                   "samples of truth/time x 3 per name in truth/contact_names")) {
      checkFinite(out, "truth/contact_forces", t.contact_forces, columns);
    }
  }
  if (t.contact_flags.size() > 0 &&
      checkShape(out, "truth/contact_flags", t.contact_flags, n, nc,
                 "samples of truth/time x names in truth/contact_names")) {
    checkFlags(out, "truth/contact_flags", t.contact_flags, t.contact_names);
  }
}

// The truth's time-varying bodies: names among truth/bodies/names, consistent parameters.
void checkTruthVaryingBodies(Collector& out, const TruthSeries& t) {
  const Eigen::Index n = t.time.size();
  checkNames(out, "truth/varying_body_names", t.varying_body_names, true);
  const auto nvb = static_cast<Eigen::Index>(t.varying_body_names.size());
  for (const auto& name : t.varying_body_names) {
    if (std::find(t.body_names.begin(), t.body_names.end(), name) == t.body_names.end()) {
      out.add("truth/varying_body_names", -1,
              "expected names from truth/bodies/names, got \"" + name + "\"");
    }
  }
  if ((nvb > 0 || t.varying_body_pi.size() > 0) &&
      checkShape(out, "truth/varying_body_pi", t.varying_body_pi, n, 10 * nvb,
                 "samples of truth/time x 10 per name in truth/varying_body_names")) {
    checkFinite(out, "truth/varying_body_pi", t.varying_body_pi, piColumns(t.varying_body_names));
    for (Eigen::Index k = 0; k < n; ++k) {
      for (Eigen::Index b = 0; b < nvb; ++b) {
        const Vector10 pi = t.varying_body_pi.block<1, 10>(k, 10 * b).transpose();
        if (!pi.allFinite() || inertia::checkConsistency(pi).consistent) continue;
        out.add("truth/varying_body_pi", k,
                "body " + t.varying_body_names[b] + ": expected physically consistent parameters");
      }
    }
  }
}

// The truth's constant body parameters: names, shape, physical consistency.
void checkTruthBodies(Collector& out, const TruthSeries& t) {
  checkNames(out, "truth/bodies/names", t.body_names, false);
  if (checkShape(out, "truth/bodies/pi", t.body_pi, static_cast<Eigen::Index>(t.body_names.size()),
                 10, "bodies x [m mcx mcy mcz Ixx Ixy Iyy Ixz Iyz Izz]")) {
    checkFinite(out, "truth/bodies/pi", t.body_pi, kPi);
    for (Eigen::Index b = 0; b < t.body_pi.rows(); ++b) {
      const Vector10 pi = t.body_pi.row(b).transpose();
      if (!pi.allFinite()) continue;
      const auto consistency = inertia::checkConsistency(pi);
      if (consistency.consistent) continue;
      const auto& v = consistency.violations.front();
      out.add("truth/bodies/pi", b,
              "body " + t.body_names[b] + ": expected physically consistent " +
                  "parameters, violates " + v.condition + " (" + v.detail + ")");
    }
  }
}

void checkTruth(Collector& out, const Log& log) {
  const TruthSeries& t = *log.truth;
  const bool has_states = t.time.size() > 0;
  const bool has_bodies = !t.body_names.empty() || t.body_pi.size() > 0;
  if (!has_states && !has_bodies) {
    out.add("truth", -1, "present but holds neither a time series (truth/time) nor bodies");
    return;
  }
  if (has_states) {
    checkTime(out, "truth/time", t.time, 1);
    checkTruthMotion(out, log);
    checkTruthContacts(out, t);
    checkTruthVaryingBodies(out, t);
  } else {
    const bool stray =
        t.q.size() || t.v.size() || t.a.size() || t.base_pose.size() || t.varying_body_pi.size() ||
        !t.varying_body_names.empty() || t.base_twist.size() || t.base_acceleration.size() ||
        t.contact_forces.size() || t.contact_flags.size() || !t.contact_names.empty();
    if (stray)
      out.add("truth/time", -1, "expected a time vector for the truth time series, got none");
  }
  if (has_bodies) checkTruthBodies(out, t);
}

void checkEstimates(Collector& out, const EstimateSeries& e) {
  checkTime(out, "estimates/time", e.time, 1);
  checkNames(out, "estimates/body_names", e.body_names, false);
  const Eigen::Index n = e.time.size(), nb = static_cast<Eigen::Index>(e.body_names.size());
  const std::string why = "samples of estimates/time x 10 per name in estimates/body_names";
  const std::vector<std::string> columns = piColumns(e.body_names);
  if (checkShape(out, "estimates/body_pi", e.body_pi, n, 10 * nb, why)) {
    checkFinite(out, "estimates/body_pi", e.body_pi, columns);
  }
  if (e.body_pi_std.size() > 0 &&
      checkShape(out, "estimates/body_pi_std", e.body_pi_std, n, 10 * nb, why)) {
    checkFinite(out, "estimates/body_pi_std", e.body_pi_std, columns);
    checkNonNegative(out, "estimates/body_pi_std", e.body_pi_std, columns, "standard deviation");
  }
  if (e.nis.size() > 0 &&
      checkShape(out, "estimates/nis", e.nis, n, 1, "one per sample of estimates/time")) {
    checkFinite(out, "estimates/nis", e.nis, {"nis"});
    checkNonNegative(out, "estimates/nis", e.nis, {"nis"},
                     "normalized innovation squared (0 where there was no update)");
  }
  if (e.status.size() > 0) {
    checkShape(out, "estimates/status", e.status, n, 1, "one per sample of estimates/time");
  }
}

/// A body is named by its joint or by the link whose frame is that joint's frame (heft::model).
bool isBodyName(const pinocchio::Model& model, const std::string& name) {
  if (model.existJointName(name)) return model.getJointId(name) > 0;
  if (!model.existFrame(name, pinocchio::BODY)) return false;
  const auto& frame = model.frames[model.getFrameId(name, pinocchio::BODY)];
  return frame.parentJoint > 0 && frame.placement.isIdentity(1e-12);
}

/// Every contact is a frame of the model, or a point on one (contacts/frames).
void checkContactsAgainstModel(Collector& out, const ContactSeries& contacts,
                               const pinocchio::Model& model) {
  const bool defined = contacts.frames.size() == contacts.names.size();
  for (std::size_t c = 0; c < contacts.names.size(); ++c) {
    const auto index = static_cast<std::ptrdiff_t>(c);
    if (defined) {
      if (!model.existFrame(contacts.frames[c])) {
        out.add("contacts/frames", index,
                "frame \"" + contacts.frames[c] + "\" of contact \"" + contacts.names[c] +
                    "\" is not a frame of model \"" + model.name + "\"");
      }
    } else if (!model.existFrame(contacts.names[c])) {
      out.add("contacts/names", index,
              "contact \"" + contacts.names[c] + "\" is not a frame of model \"" + model.name +
                  "\" (a point away from a frame needs contacts/frames and contacts/offsets)");
    }
  }
}

void checkLog(Collector& out, const Log& log) {
  if (log.meta.units != "SI")
    out.add("units", -1, "expected \"SI\", got \"" + log.meta.units + "\"");
  if (log.joints.empty() && log.estimates) {
    // no joint group: allowed for a log holding nothing but metadata and estimates
    std::vector<std::string> others;
    if (log.imu) others.push_back("imu");
    if (log.mocap) others.push_back("mocap");
    if (log.contacts) others.push_back("contacts");
    if (log.force_torque) others.push_back("force_torque");
    if (log.truth) others.push_back("truth");
    if (!others.empty()) {
      out.add("joints", -1,
              "group missing: only a log holding nothing but metadata and estimates may omit it, "
              "this one also holds " +
                  joinNames(others));
    }
  } else {
    checkJoints(out, log);
  }
  if (log.imu) checkImu(out, *log.imu);
  if (log.mocap) checkMocap(out, *log.mocap);
  if (log.contacts) checkContacts(out, *log.contacts);
  if (log.force_torque) checkForceTorque(out, *log.force_torque);
  if (log.truth) checkTruth(out, log);
  if (log.estimates) checkEstimates(out, *log.estimates);
}

/// Base type and joint names against the model.
void checkJointsAgainstModel(Collector& out, const Log& log, const pinocchio::Model& model,
                             const std::vector<std::string>& unlogged) {
  // the model's root: free-flyer or a fixed base; other multi-DoF joints cannot be logged
  const bool model_floating = model::isFreeFlyer(model, 1);
  const BaseType model_base = model_floating ? BaseType::FreeFlyer : BaseType::Fixed;
  if (model_base != log.meta.base_type) {
    out.add("base_type", -1,
            "model \"" + model.name + "\" has a " + toString(model_base) +
                " base, the log says \"" + toString(log.meta.base_type) + "\"");
  }
  std::set<std::string> logged(log.joints.names.begin(), log.joints.names.end());
  std::vector<std::string> unknown, missing;
  for (std::size_t i = 0; i < log.joints.names.size(); ++i) {
    const std::string& name = log.joints.names[i];
    if (!model.existJointName(name)) {
      unknown.push_back(name);
      continue;
    }
    const auto& joint = model.joints[model.getJointId(name)];
    if (joint.nv() != 1) {
      out.add("joints/names", static_cast<std::ptrdiff_t>(i),
              "joint " + name + " is a " + joint.shortname() +
                  " with nv = " + std::to_string(joint.nv()) + "; the log holds 1-DoF joints only");
    }
  }
  if (!unknown.empty()) {
    out.add("joints/names", -1,
            "joints the model \"" + model.name + "\" lacks: " + joinNames(unknown));
  }
  for (pinocchio::JointIndex j = 1; j < static_cast<pinocchio::JointIndex>(model.njoints); ++j) {
    const auto& joint = model.joints[j];
    if (j == 1 && model_floating) continue;
    if (joint.nv() == 1) {
      if (!logged.count(model.names[j]) &&
          std::find(unlogged.begin(), unlogged.end(), model.names[j]) == unlogged.end())
        missing.push_back(model.names[j]);
    } else {
      out.add("joints/names", -1,
              "model joint " + model.names[j] + " (" + joint.shortname() +
                  ", nv = " + std::to_string(joint.nv()) +
                  ") cannot be logged: the format holds 1-DoF joints and a "
                  "free-flyer base");
    }
  }
  if (!missing.empty()) {
    out.add("joints/names", -1, "model joints missing from the log: " + joinNames(missing));
  }
}

/// Names of `bodies` that are not bodies of the model, one error each.
void checkBodyNames(Collector& out, const std::string& field,
                    const std::vector<std::string>& bodies, const pinocchio::Model& model) {
  for (std::size_t b = 0; b < bodies.size(); ++b) {
    if (isBodyName(model, bodies[b])) continue;
    out.add(field, static_cast<std::ptrdiff_t>(b),
            "body \"" + bodies[b] + "\" is not a body of model \"" + model.name +
                "\" (expected a movable joint's name or the link at that joint's frame)");
  }
}

}  // namespace

ValidationReport validateLog(const Log& log, const ValidationOptions& options) {
  options.validate();
  ValidationReport report;
  Collector out(report, options);
  checkLog(out, log);
  return report;
}

ValidationReport validateLog(const Log& log, const pinocchio::Model& model,
                             const ValidationOptions& options) {
  options.validate();
  ValidationReport report;
  Collector out(report, options);
  checkLog(out, log);
  if (log.joints.empty() && log.estimates) {
    out.add("joints", -1,
            "group missing: checking a log against model \"" + model.name +
                "\" needs the joint measurements, this log holds only estimates (an "
                "estimates-only log is valid without a model)");
  } else {
    checkJointsAgainstModel(out, log, model, options.unlogged_joints);
  }
  if (log.contacts) checkContactsAgainstModel(out, *log.contacts, model);
  if (log.force_torque) {
    const auto& frames = log.force_torque->frames;
    for (std::size_t i = 0; i < frames.size(); ++i) {
      if (frames[i].empty() || model.existFrame(frames[i])) continue;
      out.add("force_torque/frames[" + std::to_string(i) + "]", -1,
              "sensor " + (i < log.force_torque->names.size() ? log.force_torque->names[i] : "?") +
                  ": \"" + frames[i] + "\" is not a frame of model \"" + model.name + "\"");
    }
  }
  if (log.truth) checkBodyNames(out, "truth/bodies/names", log.truth->body_names, model);
  if (log.estimates) checkBodyNames(out, "estimates/body_names", log.estimates->body_names, model);
  return report;
}

}  // namespace heft::io
