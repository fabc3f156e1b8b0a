// CSV reader and writer of heft logs: a directory with one CSV per group plus metadata.yaml
// (docs/log-format.md). A column is named "<dataset>/<channel>", e.g. "q/FL_hip_joint".
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <new>
#include <set>

#include "heft/common/error.hpp"
#include "heft/io/atomic_file.hpp"
#include "heft/io/log_io.hpp"
#include "heft/io/yaml_keys.hpp"

namespace fs = std::filesystem;

namespace heft::io {

namespace {

constexpr int kFormatVersion = 1;
const std::vector<std::string> kPose = {"x", "y", "z", "qx", "qy", "qz", "qw"};
const std::vector<std::string> kTwist = {"vx", "vy", "vz", "wx", "wy", "wz"};
const std::vector<std::string> kAcceleration = {"ax", "ay", "az", "alphax", "alphay", "alphaz"};
const std::vector<std::string> kXyz = {"x", "y", "z"};
const std::vector<std::string> kQuaternion = {"qx", "qy", "qz", "qw"};
const std::vector<std::string> kForce = {"fx", "fy", "fz"};
const std::vector<std::string> kWrench = {"fx", "fy", "fz", "tx", "ty", "tz"};
const std::vector<std::string> kPi = {"m",   "mcx", "mcy", "mcz", "Ixx",
                                      "Ixy", "Iyy", "Ixz", "Iyz", "Izz"};

std::string trim(const std::string& s) {
  const auto begin = s.find_first_not_of(" \t");
  if (begin == std::string::npos) return "";
  const auto end = s.find_last_not_of(" \t");
  return s.substr(begin, end - begin + 1);
}

std::vector<std::string> splitFields(const std::string& line) {
  std::vector<std::string> fields;
  std::size_t start = 0;
  while (true) {
    const std::size_t comma = line.find(',', start);
    fields.push_back(trim(line.substr(start, comma - start)));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return fields;
}

/// One CSV file: a header and numeric rows (optionally a first column of names). Every line after
/// the header is a sample, so row r is on line r + 2.
/// The lines of a text (a final newline ends the last line; "\r\n" endings are read as "\n").
std::vector<std::string> splitLines(const std::string& text) {
  std::vector<std::string> lines;
  std::size_t start = 0;
  while (start < text.size()) {
    std::size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    lines.push_back(text.substr(start, end - start));
    if (!lines.back().empty() && lines.back().back() == '\r') lines.back().pop_back();
    start = end + 1;
  }
  return lines;
}

class CsvTable {
 public:
  CsvTable(const std::string& path, bool first_column_is_name) : path_(path) {
    const std::string text = readTextFile(path);
    std::vector<std::vector<double>> rows;
    const std::vector<std::string> lines = splitLines(text);
    for (std::size_t line_number = 1; line_number <= lines.size(); ++line_number) {
      const std::string& line = lines[line_number - 1];
      if (line_number == 1) {
        header_ = splitFields(line);
        std::set<std::string> seen;
        for (const auto& name : header_) {
          if (name.empty())
            fail(1, "expected a column name in every header field, got an empty one");
          if (!seen.insert(name).second) fail(1, "duplicated column \"" + name + "\"");
        }
        used_.assign(header_.size(), false);
        continue;
      }
      if (line.empty()) fail(line_number, "empty line (every line after the header is a sample)");
      const std::vector<std::string> fields = splitFields(line);
      if (fields.size() != header_.size()) {
        fail(line_number, "expected " + std::to_string(header_.size()) +
                              " fields (as the header), got " + std::to_string(fields.size()));
      }
      std::vector<double> row(fields.size(), 0.0);
      for (std::size_t c = 0; c < fields.size(); ++c) {
        if (c == 0 && first_column_is_name) {
          if (fields[c].empty())
            fail(line_number, "column " + header_[c] + ": expected a name, got \"\"");
          names_.push_back(fields[c]);
          continue;
        }
        row[c] = parseNumber(fields[c], line_number, header_[c]);
      }
      rows.push_back(std::move(row));
    }
    if (header_.empty()) fail(1, "expected a header line, the file is empty");
    values_.resize(static_cast<Eigen::Index>(rows.size()),
                   static_cast<Eigen::Index>(header_.size()));
    for (std::size_t r = 0; r < rows.size(); ++r) {
      for (std::size_t c = 0; c < header_.size(); ++c) values_(r, c) = rows[r][c];
    }
    if (first_column_is_name) used_[0] = true;
  }

  [[noreturn]] void fail(std::size_t line, const std::string& what) const {
    throw InputError(path_ + ":" + std::to_string(line) + ": " + what);
  }
  [[noreturn]] void fail(const std::string& what) const { throw InputError(path_ + ": " + what); }

  const std::vector<std::string>& rowNames() const { return names_; }
  Eigen::Index rows() const { return values_.rows(); }

  bool has(const std::string& column) const { return index(column) >= 0; }

  /// Column suffixes after `prefix` ("q/" -> joint names) in header order.
  std::vector<std::string> suffixes(const std::string& prefix,
                                    const std::string& ending = "") const {
    std::vector<std::string> found;
    for (const auto& name : header_) {
      if (name.size() > prefix.size() + ending.size() &&
          name.compare(0, prefix.size(), prefix) == 0 &&
          name.compare(name.size() - ending.size(), ending.size(), ending) == 0) {
        found.push_back(name.substr(prefix.size(), name.size() - prefix.size() - ending.size()));
      }
    }
    return found;
  }

  bool anyWithPrefix(const std::string& prefix) const { return !suffixes(prefix).empty(); }

  Eigen::VectorXd column(const std::string& name) {
    const int c = index(name);
    if (c < 0) fail("column \"" + name + "\" missing");
    used_[c] = true;
    return values_.col(c);
  }

  /// Columns prefix + each of `channels`, all required.
  Eigen::MatrixXd columns(const std::string& prefix, const std::vector<std::string>& channels) {
    Eigen::MatrixXd m(values_.rows(), static_cast<Eigen::Index>(channels.size()));
    for (std::size_t i = 0; i < channels.size(); ++i) m.col(i) = column(prefix + channels[i]);
    return m;
  }

  /// Blocks of columns prefix + name + "/" + channel, one block per name: rows x (names x
  /// channels), name-major ("contact_forces/FL_foot/fx").
  Eigen::MatrixXd perNameColumns(const std::string& prefix, const std::vector<std::string>& names,
                                 const std::vector<std::string>& channels) {
    const auto width = static_cast<Eigen::Index>(channels.size());
    Eigen::MatrixXd m(values_.rows(), width * static_cast<Eigen::Index>(names.size()));
    for (std::size_t i = 0; i < names.size(); ++i) {
      m.middleCols(width * static_cast<Eigen::Index>(i), width) =
          columns(prefix + names[i] + "/", channels);
    }
    return m;
  }

  /// Like columns, but every value must be 0 or 1.
  FlagMatrix flagColumns(const std::string& prefix, const std::vector<std::string>& channels) {
    return smallIntegerColumns(prefix, channels, 1, "a flag 0 or 1");
  }

  /// Like columns, but every value must be an integer 0 .. max (flags, status codes).
  FlagMatrix smallIntegerColumns(const std::string& prefix,
                                 const std::vector<std::string>& channels, int max,
                                 const std::string& expected) {
    const Eigen::MatrixXd m = columns(prefix, channels);
    FlagMatrix integers(m.rows(), m.cols());
    for (Eigen::Index r = 0; r < m.rows(); ++r) {
      for (Eigen::Index c = 0; c < m.cols(); ++c) {
        const double x = m(r, c);
        if (!(x >= 0 && x <= max && x == std::floor(x))) {
          fail(static_cast<std::size_t>(r) + 2, "column " + prefix + channels[c] + ": expected " +
                                                    expected + ", got " + trimNumber(x));
        }
        integers(r, c) = static_cast<std::uint8_t>(x);
      }
    }
    return integers;
  }

  /// Every column must have been consumed: a stray one is a typo or a channel without its partner.
  void requireAllUsed(const std::string& expected) const {
    for (std::size_t c = 0; c < header_.size(); ++c) {
      if (!used_[c]) fail("unexpected column \"" + header_[c] + "\" (expected " + expected + ")");
    }
  }

 private:
  int index(const std::string& name) const {
    for (std::size_t c = 0; c < header_.size(); ++c) {
      if (header_[c] == name) return static_cast<int>(c);
    }
    return -1;
  }

  static std::string trimNumber(double x) {
    char buffer[64];
    auto result = std::to_chars(buffer, buffer + sizeof(buffer), x);
    return std::string(buffer, result.ptr);
  }

  double parseNumber(const std::string& field, std::size_t line, const std::string& column) const {
    if (field.empty()) fail(line, "column " + column + ": expected a number, got an empty field");
    // strtod accepts "nan" and "inf": they are read, and validation names them
    char* end = nullptr;
    const double value = std::strtod(field.c_str(), &end);
    if (end != field.c_str() + field.size()) {
      const std::string shown = field.size() > 40 ? field.substr(0, 40) + "..." : field;
      fail(line, "column " + column + ": expected a number, got \"" + shown + "\"");
    }
    return value;
  }

  std::string path_;
  std::vector<std::string> header_;
  std::vector<bool> used_;
  std::vector<std::string> names_;
  Eigen::MatrixXd values_;
};

std::string at(const fs::path& directory, const std::string& file) {
  return (directory / file).string();
}

/// force_torque_sensors.csv: a header "sensor,frame" and one line per sensor of force_torque.csv
/// (any order), giving the frame its wrench is expressed in. Returns the frames in `sensors` order.
std::vector<std::string> readSensorFrames(const std::string& path,
                                          const std::vector<std::string>& sensors) {
  const std::string text = readTextFile(path);
  std::map<std::string, std::string> frames;
  const std::vector<std::string> lines = splitLines(text);
  for (std::size_t line_number = 1; line_number <= lines.size(); ++line_number) {
    const std::string& line = lines[line_number - 1];
    const std::vector<std::string> fields = splitFields(line);
    const std::string where = path + ":" + std::to_string(line_number) + ": ";
    if (line_number == 1) {
      if (fields != std::vector<std::string>{"sensor", "frame"})
        throw InputError(where + "expected the header \"sensor,frame\"");
      continue;
    }
    if (fields.size() != 2 || fields[0].empty() || fields[1].empty())
      throw InputError(where + "expected \"<sensor>,<frame>\", got \"" + line + "\"");
    if (std::find(sensors.begin(), sensors.end(), fields[0]) == sensors.end())
      throw InputError(where + "sensor \"" + fields[0] +
                       "\" has no wrench/<sensor>/ columns in force_torque.csv");
    if (!frames.emplace(fields[0], fields[1]).second)
      throw InputError(where + "sensor \"" + fields[0] + "\" listed twice");
  }
  std::vector<std::string> out;
  for (const auto& sensor : sensors) {
    const auto it = frames.find(sensor);
    if (it == frames.end())
      throw InputError(path + ": sensor \"" + sensor + "\" of force_torque.csv has no frame");
    out.push_back(it->second);
  }
  return out;
}

/// metadata.yaml keys that belong to an optional group, kept until the group is read.
struct GroupAttributes {
  std::string imu_frame, mocap_frame, estimator;
  std::vector<model::ContactPoint> contact_points;  ///< contacts' frames and offsets, by name
  std::string contact_points_at;                    ///< "metadata.yaml:line" for errors
};

// contact_points: [{name: n, frame: f, offset: [x, y, z]}, ...]
std::vector<model::ContactPoint> readContactPoints(const YAML::Node& value,
                                                   const std::string& where) {
  if (!value.IsSequence()) throw InputError(where + ": expected a list of {name, frame, offset}");
  std::vector<model::ContactPoint> points;
  for (std::size_t i = 0; i < value.size(); ++i) {
    const YAML::Node& p = value[i];
    const std::string at = where + "[" + std::to_string(i) + "]";
    if (!p.IsMap() || !p["name"] || !p["frame"] || !p["offset"] || p.size() != 3 ||
        !p["offset"].IsSequence() || p["offset"].size() != 3) {
      throw InputError(at +
                       ": expected {name: <contact>, frame: <model frame>, offset: [x, y, z]}");
    }
    model::ContactPoint point;
    point.name = p["name"].as<std::string>();
    point.frame = p["frame"].as<std::string>();
    for (int k = 0; k < 3; ++k) point.offset[k] = p["offset"][k].as<double>();
    points.push_back(point);
  }
  return points;
}

void readMetadata(const std::string& path, Log& log, GroupAttributes& groups) {
  const std::string text = readTextFile(path);
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::Exception& e) {
    throw InputError(path + ":" + std::to_string(e.mark.line + 1) + ": invalid YAML: " + e.msg);
  }
  if (root.IsNull()) return;
  if (!root.IsMap())
    throw InputError(path + ": expected a map of key: value, got another YAML node");
  rejectDuplicateKeys(root, path);
  const std::set<std::string> known = {
      "heft_log_version", "robot",     "base_type",     "units",
      "noise_profile",    "scenario",  "seed",          "imu_frame",
      "mocap_frame",      "estimator", "contact_points"};
  for (const auto& entry : root) {
    std::string key;
    try {
      key = entry.first.as<std::string>();
      if (!known.count(key)) {
        throw InputError(path + ": unknown key \"" + key +
                         "\" (expected heft_log_version, robot, base_type, units, noise_profile, "
                         "scenario, seed, imu_frame, mocap_frame, estimator, contact_points)");
      }
      const YAML::Node& value = entry.second;
      if (key == "contact_points") {
        groups.contact_points_at =
            path + ":" + std::to_string(value.Mark().line + 1) + ": contact_points";
        groups.contact_points = readContactPoints(value, groups.contact_points_at);
        continue;
      }
      if (!value.IsScalar()) throw InputError(path + ": key " + key + ": expected a scalar value");
      if (key == "heft_log_version") {
        const int version = value.as<int>();
        if (version != kFormatVersion) {
          throw InputError(path + ": heft_log_version: expected " + std::to_string(kFormatVersion) +
                           ", got " + std::to_string(version));
        }
      } else if (key == "robot") {
        log.meta.robot = value.as<std::string>();
      } else if (key == "base_type") {
        log.meta.base_type = parseBaseType(value.as<std::string>());
      } else if (key == "units") {
        log.meta.units = value.as<std::string>();
      } else if (key == "noise_profile") {
        log.meta.noise_profile = value.as<std::string>();
      } else if (key == "scenario") {
        log.meta.scenario = value.as<std::string>();
      } else if (key == "seed") {
        log.meta.seed = value.as<std::int64_t>();
      } else if (key == "imu_frame") {
        groups.imu_frame = value.as<std::string>();
      } else if (key == "mocap_frame") {
        groups.mocap_frame = value.as<std::string>();
      } else if (key == "estimator") {
        groups.estimator = value.as<std::string>();
      }
    } catch (const YAML::Exception& e) {
      throw InputError(path + ":" + std::to_string(e.mark.line + 1) + ": key " + key +
                       ": unexpected value (" + e.msg + ")");
    }
  }
}

// contacts.csv, with the contact points of metadata.yaml (contact_points) when it has them.
ContactSeries readContacts(const fs::path& directory, const GroupAttributes& groups) {
  CsvTable table(at(directory, "contacts.csv"), false);
  ContactSeries contacts;
  contacts.time = table.column("time");
  contacts.names = table.suffixes("flags/");
  if (contacts.names.empty()) table.fail("expected flags/<contact> columns, found none");
  contacts.flags = table.flagColumns("flags/", contacts.names);
  table.requireAllUsed("time, flags/<contact>");
  if (!groups.contact_points.empty()) {
    contacts.offsets.resize(static_cast<Eigen::Index>(contacts.names.size()), 3);
    for (std::size_t c = 0; c < contacts.names.size(); ++c) {
      const auto it =
          std::find_if(groups.contact_points.begin(), groups.contact_points.end(),
                       [&](const model::ContactPoint& p) { return p.name == contacts.names[c]; });
      if (it == groups.contact_points.end()) {
        throw InputError(groups.contact_points_at +
                         ": expected an entry for every contact of "
                         "contacts.csv, none for \"" +
                         contacts.names[c] + "\"");
      }
      contacts.frames.push_back(it->frame);
      contacts.offsets.row(static_cast<Eigen::Index>(c)) = it->offset.transpose();
    }
  }
  return contacts;
}

// truth.csv and truth_bodies.csv (either may be absent); joint columns follow `joint_names`.
TruthSeries readTruth(const fs::path& directory, bool states, bool bodies,
                      const std::vector<std::string>& joint_names) {
  TruthSeries t;
  if (states) {
    CsvTable table(at(directory, "truth.csv"), false);
    const auto& names = joint_names;
    t.time = table.column("time");
    t.q = table.columns("q/", names);
    t.v = table.columns("v/", names);
    t.a = table.columns("a/", names);
    if (table.anyWithPrefix("base_pose/")) t.base_pose = table.columns("base_pose/", kPose);
    if (table.anyWithPrefix("base_twist/")) t.base_twist = table.columns("base_twist/", kTwist);
    if (table.anyWithPrefix("base_acceleration/")) {
      t.base_acceleration = table.columns("base_acceleration/", kAcceleration);
    }
    t.contact_names = table.suffixes("contact_forces/", "/fx");
    if (!t.contact_names.empty()) {
      t.contact_forces = table.perNameColumns("contact_forces/", t.contact_names, kForce);
      if (table.anyWithPrefix("contact_flags/")) {
        t.contact_flags = table.flagColumns("contact_flags/", t.contact_names);
      }
    }
    t.varying_body_names = table.suffixes("varying_body_pi/", "/m");
    if (!t.varying_body_names.empty()) {
      t.varying_body_pi = table.perNameColumns("varying_body_pi/", t.varying_body_names, kPi);
    }
    table.requireAllUsed(
        "time, q/ v/ a/<joint> for the joints of joints.csv, base_pose/*, base_twist/*, "
        "base_acceleration/*, contact_forces/<contact>/{fx,fy,fz}, contact_flags/<contact>, "
        "varying_body_pi/<body>/{m,mcx,mcy,mcz,Ixx,Ixy,Iyy,Ixz,Iyz,Izz}");
  }
  if (bodies) {
    CsvTable table(at(directory, "truth_bodies.csv"), true);
    t.body_names = table.rowNames();
    t.body_pi = table.columns("", kPi);
    if (!table.has("body")) table.fail("expected the first column to be \"body\"");
    table.requireAllUsed("body, m, mcx, mcy, mcz, Ixx, Ixy, Iyy, Ixz, Iyz, Izz");
  }
  return t;
}

Log readCsv(const fs::path& directory) {
  std::error_code ec;
  if (!fs::is_directory(directory, ec)) {
    throw InputError(directory.string() +
                     ": expected a directory of CSV files (docs/log-format.md)");
  }
  Log log;
  GroupAttributes groups;
  if (fs::exists(directory / "metadata.yaml", ec)) {
    readMetadata(at(directory, "metadata.yaml"), log, groups);
  }
  const bool floating = log.meta.base_type == BaseType::FreeFlyer;

  // joints.csv is required, except in a log holding only metadata.yaml and estimates.csv
  const bool estimates = fs::exists(directory / "estimates.csv", ec);
  if (estimates && !fs::exists(directory / "joints.csv", ec)) {
    for (const char* other : {"imu.csv", "mocap.csv", "contacts.csv", "force_torque.csv",
                              "force_torque_sensors.csv", "truth.csv", "truth_bodies.csv"}) {
      if (!fs::exists(directory / other, ec)) continue;
      throw InputError(at(directory, "joints.csv") +
                       ": not found (required unless the log holds only metadata.yaml and "
                       "estimates.csv; this one also holds " +
                       other + ")");
    }
  } else {
    // joints.csv: the joint names are the q/ columns, in order; v/ tau/ (tau_cmd/) follow them
    CsvTable table(at(directory, "joints.csv"), false);
    JointSeries& j = log.joints;
    j.time = table.column("time");
    j.names = table.suffixes("q/");
    if (j.names.empty()) table.fail("expected q/<joint> columns, found none");
    j.q = table.columns("q/", j.names);
    j.v = table.columns("v/", j.names);
    j.tau = table.columns("tau/", j.names);
    if (table.anyWithPrefix("tau_cmd/")) j.tau_cmd = table.columns("tau_cmd/", j.names);
    if (table.anyWithPrefix("base_pose/")) j.base_pose = table.columns("base_pose/", kPose);
    if (table.anyWithPrefix("base_twist/")) j.base_twist = table.columns("base_twist/", kTwist);
    table.requireAllUsed(
        std::string("time, q/ v/ tau/ tau_cmd/<joint> for the joints of the q/ columns") +
        (floating ? ", base_pose/*, base_twist/*" : ""));
  }
  if (fs::exists(directory / "imu.csv", ec)) {
    CsvTable table(at(directory, "imu.csv"), false);
    ImuSeries imu;
    imu.frame = groups.imu_frame;
    imu.time = table.column("time");
    imu.gyro = table.columns("gyro/", kXyz);
    imu.accel = table.columns("accel/", kXyz);
    if (table.anyWithPrefix("orientation/"))
      imu.orientation = table.columns("orientation/", kQuaternion);
    table.requireAllUsed("time, gyro/{x,y,z}, accel/{x,y,z}, orientation/{qx,qy,qz,qw}");
    log.imu = std::move(imu);
  }
  if (fs::exists(directory / "mocap.csv", ec)) {
    CsvTable table(at(directory, "mocap.csv"), false);
    MocapSeries mocap;
    mocap.frame = groups.mocap_frame;
    mocap.time = table.column("time");
    mocap.position = table.columns("position/", kXyz);
    mocap.orientation = table.columns("orientation/", kQuaternion);
    table.requireAllUsed("time, position/{x,y,z}, orientation/{qx,qy,qz,qw}");
    log.mocap = std::move(mocap);
  }
  if (fs::exists(directory / "contacts.csv", ec)) log.contacts = readContacts(directory, groups);
  const bool force_torque = fs::exists(directory / "force_torque.csv", ec);
  if (force_torque != fs::exists(directory / "force_torque_sensors.csv", ec)) {
    throw InputError(at(directory, force_torque ? "force_torque_sensors.csv" : "force_torque.csv") +
                     ": not found (force_torque.csv and force_torque_sensors.csv come together)");
  }
  if (force_torque) {
    // the sensors are the wrench/<sensor>/fx columns, in order
    CsvTable table(at(directory, "force_torque.csv"), false);
    ForceTorqueSeries ft;
    ft.time = table.column("time");
    ft.names = table.suffixes("wrench/", "/fx");
    if (ft.names.empty()) table.fail("expected wrench/<sensor>/fx columns, found none");
    ft.wrench = table.perNameColumns("wrench/", ft.names, kWrench);
    table.requireAllUsed("time, wrench/<sensor>/{fx,fy,fz,tx,ty,tz}");
    ft.frames = readSensorFrames(at(directory, "force_torque_sensors.csv"), ft.names);
    log.force_torque = std::move(ft);
  }
  const bool truth_states = fs::exists(directory / "truth.csv", ec);
  const bool truth_bodies = fs::exists(directory / "truth_bodies.csv", ec);
  if (truth_states || truth_bodies) {
    log.truth = readTruth(directory, truth_states, truth_bodies, log.joints.names);
  }
  if (estimates) {
    // estimates.csv: the body names are the body_pi/<body>/m columns, in order
    CsvTable table(at(directory, "estimates.csv"), false);
    EstimateSeries e;
    e.estimator = groups.estimator;
    e.time = table.column("time");
    e.body_names = table.suffixes("body_pi/", "/m");
    if (e.body_names.empty()) table.fail("expected body_pi/<body>/m columns, found none");
    e.body_pi = table.perNameColumns("body_pi/", e.body_names, kPi);
    if (table.anyWithPrefix("body_pi_std/"))
      e.body_pi_std = table.perNameColumns("body_pi_std/", e.body_names, kPi);
    if (table.has("nis")) e.nis = table.column("nis");
    if (table.has("status"))
      e.status = table.smallIntegerColumns("", {"status"}, 255, "an integer 0 to 255");
    table.requireAllUsed(
        "time, body_pi/<body>/{m,mcx,mcy,mcz,Ixx,Ixy,Iyy,Ixz,Iyz,Izz}, body_pi_std/<body>/* for "
        "the bodies of the body_pi/ columns, nis, status");
    log.estimates = std::move(e);
  }
  return log;
}

// ---- writing ------------------------------------------------------------------------------------

/// Shortest text that reads back to the same double.
void appendNumber(std::string& out, double x) {
  char buffer[64];
  const auto result = std::to_chars(buffer, buffer + sizeof(buffer), x);
  out.append(buffer, result.ptr);
}

/// Builds one CSV: a time column and blocks of columns, row by row.
class CsvBuilder {
 public:
  void add(const std::string& prefix, const std::vector<std::string>& channels,
           const Eigen::MatrixXd& m) {
    // an unvalidated log may be ragged: refuse rather than read past a matrix
    if (m.cols() != static_cast<Eigen::Index>(channels.size())) {
      throw InputError("cannot write " + prefix + "*: " + std::to_string(m.cols()) +
                       " columns for " + std::to_string(channels.size()) + " names");
    }
    for (const auto& c : channels) header_.push_back(prefix + c);
    blocks_.push_back(m);
  }
  void addFlags(const std::string& prefix, const std::vector<std::string>& channels,
                const FlagMatrix& m) {
    add(prefix, channels, Eigen::MatrixXd(m.cast<double>()));
  }
  /// Columns prefix + name + "/" + channel, one block of channels per name (the layout
  /// CsvTable::perNameColumns reads); `field` names the matrix in the error.
  void addPerName(const std::string& prefix, const std::vector<std::string>& names,
                  const std::vector<std::string>& channels, const Eigen::MatrixXd& m,
                  const std::string& field) {
    const auto width = static_cast<Eigen::Index>(channels.size());
    if (m.cols() != width * static_cast<Eigen::Index>(names.size())) {
      throw InputError("cannot write " + field + ": " + std::to_string(m.cols()) + " columns for " +
                       std::to_string(names.size()) + " names x " + std::to_string(width));
    }
    for (std::size_t i = 0; i < names.size(); ++i) {
      add(prefix + names[i] + "/", channels,
          Eigen::MatrixXd(m.middleCols(width * static_cast<Eigen::Index>(i), width)));
    }
  }
  std::string text(const std::string& first_header,
                   const std::vector<std::string>& first_column) const {
    std::string out = first_header;
    for (const auto& h : header_) out += "," + h;
    out += "\n";
    const Eigen::Index rows = first_column.size();
    for (const auto& block : blocks_) {
      if (block.rows() != rows) {
        throw InputError("cannot write a CSV with " + std::to_string(rows) +
                         " time stamps and a block of " + std::to_string(block.rows()) + " rows");
      }
    }
    for (Eigen::Index r = 0; r < rows; ++r) {
      out += first_column[r];
      for (const auto& block : blocks_) {
        for (Eigen::Index c = 0; c < block.cols(); ++c) {
          out += ",";
          appendNumber(out, block(r, c));
        }
      }
      out += "\n";
    }
    return out;
  }
  std::string text(const Eigen::VectorXd& time) const {
    std::vector<std::string> column(time.size());
    for (Eigen::Index r = 0; r < time.size(); ++r) {
      std::string s;
      appendNumber(s, time(r));
      column[r] = s;
    }
    return text("time", column);
  }

 private:
  std::vector<std::string> header_;
  std::vector<Eigen::MatrixXd> blocks_;
};

void writeFile(const fs::path& path, const std::string& content) {
  std::ofstream file(path, std::ios::binary | std::ios::trunc);
  file.write(content.data(), static_cast<std::streamsize>(content.size()));
  file.close();
  if (!file) throw InputError(path.string() + ": cannot write");
}

std::string yamlQuoted(const std::string& s) {
  YAML::Emitter e;
  e << YAML::DoubleQuoted << s;
  return e.c_str();
}

void writeCsv(const Log& log, const fs::path& directory) {
  std::error_code ec;
  if (!fs::create_directory(directory, ec)) {
    throw InputError(directory.string() + ": cannot create directory: " + ec.message());
  }
  std::string meta = "heft_log_version: " + std::to_string(kFormatVersion) + "\n";
  meta += "robot: " + yamlQuoted(log.meta.robot) + "\n";
  meta += "base_type: " + toString(log.meta.base_type) + "\n";
  meta += "units: " + yamlQuoted(log.meta.units) + "\n";
  meta += "noise_profile: " + yamlQuoted(log.meta.noise_profile) + "\n";
  meta += "scenario: " + yamlQuoted(log.meta.scenario) + "\n";
  if (log.meta.seed) meta += "seed: " + std::to_string(*log.meta.seed) + "\n";
  if (log.imu) meta += "imu_frame: " + yamlQuoted(log.imu->frame) + "\n";
  if (log.mocap) meta += "mocap_frame: " + yamlQuoted(log.mocap->frame) + "\n";
  if (log.estimates) meta += "estimator: " + yamlQuoted(log.estimates->estimator) + "\n";
  if (log.contacts && !log.contacts->frames.empty()) {
    meta += "contact_points:\n";
    const std::vector<model::ContactPoint> points = log.contacts->definedPoints();
    for (const auto& p : points) {
      meta +=
          "  - {name: " + yamlQuoted(p.name) + ", frame: " + yamlQuoted(p.frame) + ", offset: [";
      for (int k = 0; k < 3; ++k) {
        if (k > 0) meta += ", ";
        appendNumber(meta, p.offset[k]);
      }
      meta += "]}\n";
    }
  }
  writeFile(directory / "metadata.yaml", meta);

  const JointSeries& j = log.joints;
  if (!j.empty()) {  // empty only in an estimates-only log
    CsvBuilder joints;
    joints.add("q/", j.names, j.q);
    joints.add("v/", j.names, j.v);
    joints.add("tau/", j.names, j.tau);
    if (j.tau_cmd.size() > 0) joints.add("tau_cmd/", j.names, j.tau_cmd);
    if (j.base_pose.size() > 0) joints.add("base_pose/", kPose, j.base_pose);
    if (j.base_twist.size() > 0) joints.add("base_twist/", kTwist, j.base_twist);
    writeFile(directory / "joints.csv", joints.text(j.time));
  }
  if (log.imu) {
    CsvBuilder imu;
    imu.add("gyro/", kXyz, log.imu->gyro);
    imu.add("accel/", kXyz, log.imu->accel);
    if (log.imu->orientation.size() > 0) imu.add("orientation/", kQuaternion, log.imu->orientation);
    writeFile(directory / "imu.csv", imu.text(log.imu->time));
  }
  if (log.mocap) {
    CsvBuilder mocap;
    mocap.add("position/", kXyz, log.mocap->position);
    mocap.add("orientation/", kQuaternion, log.mocap->orientation);
    writeFile(directory / "mocap.csv", mocap.text(log.mocap->time));
  }
  if (log.contacts) {
    CsvBuilder contacts;
    contacts.addFlags("flags/", log.contacts->names, log.contacts->flags);
    writeFile(directory / "contacts.csv", contacts.text(log.contacts->time));
  }
  if (log.force_torque) {
    const ForceTorqueSeries& ft = *log.force_torque;
    if (ft.frames.size() != ft.names.size()) {
      throw InputError("cannot write force_torque: " + std::to_string(ft.frames.size()) +
                       " frames for " + std::to_string(ft.names.size()) + " sensors");
    }
    CsvBuilder wrenches;
    wrenches.addPerName("wrench/", ft.names, kWrench, ft.wrench, "force_torque/wrench");
    writeFile(directory / "force_torque.csv", wrenches.text(ft.time));
    std::string sensors = "sensor,frame\n";
    for (std::size_t i = 0; i < ft.names.size(); ++i)
      sensors += ft.names[i] + "," + ft.frames[i] + "\n";
    writeFile(directory / "force_torque_sensors.csv", sensors);
  }
  if (log.truth) {
    const TruthSeries& t = *log.truth;
    if (t.time.size() > 0) {
      CsvBuilder truth;
      truth.add("q/", j.names, t.q);
      truth.add("v/", j.names, t.v);
      truth.add("a/", j.names, t.a);
      if (t.base_pose.size() > 0) truth.add("base_pose/", kPose, t.base_pose);
      if (t.base_twist.size() > 0) truth.add("base_twist/", kTwist, t.base_twist);
      if (t.base_acceleration.size() > 0)
        truth.add("base_acceleration/", kAcceleration, t.base_acceleration);
      truth.addPerName("contact_forces/", t.contact_names, kForce, t.contact_forces,
                       "truth/contact_forces");
      if (t.contact_flags.size() > 0)
        truth.addFlags("contact_flags/", t.contact_names, t.contact_flags);
      truth.addPerName("varying_body_pi/", t.varying_body_names, kPi, t.varying_body_pi,
                       "truth/varying_body_pi");
      writeFile(directory / "truth.csv", truth.text(t.time));
    }
    if (!t.body_names.empty()) {
      CsvBuilder bodies;
      bodies.add("", kPi, t.body_pi);
      writeFile(directory / "truth_bodies.csv", bodies.text("body", t.body_names));
    }
  }
  if (log.estimates) {
    const EstimateSeries& e = *log.estimates;
    CsvBuilder estimates;
    estimates.addPerName("body_pi/", e.body_names, kPi, e.body_pi, "estimates/body_pi");
    if (e.body_pi_std.size() > 0) {
      estimates.addPerName("body_pi_std/", e.body_names, kPi, e.body_pi_std,
                           "estimates/body_pi_std");
    }
    if (e.nis.size() > 0) estimates.add("", {"nis"}, Eigen::MatrixXd(e.nis));
    if (e.status.size() > 0) estimates.addFlags("", {"status"}, e.status);
    writeFile(directory / "estimates.csv", estimates.text(e.time));
  }
}

}  // namespace

Log readLogCsv(const std::string& directory, const ReadOptions& options) {
  options.validate();
  Log log;
  try {
    log = readCsv(fs::path(directory));
  } catch (const InputError&) {
    throw;
  } catch (const std::bad_alloc&) {
    throw InputError(directory + ": out of memory while reading");
  } catch (const std::exception& e) {
    throw InputError(directory + ": " + e.what());
  }
  if (options.check_log) requireValid(validateLog(log, options.validation), directory);
  return log;
}

void writeLogCsv(const Log& log, const std::string& directory, const WriteOptions& options) {
  options.validate();
  if (options.check_log)
    requireValid(validateLog(log, options.validation), directory + " (log to write)");
  writeAtomically(directory, options.overwrite,
                  [&](const std::string& temporary) { writeCsv(log, fs::path(temporary)); });
}

}  // namespace heft::io
