// heft import: a ROS 2 bag to a heft log (docs/guide/import.md). rosbags reads the bag in a child
// process (python/read_bag.py writes one CSV per topic); everything else happens here, so the
// errors, the interpolation and the validation are heft's own.
#include "heft/jobs/import_bag_job.hpp"

#include <Eigen/Geometry>
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "heft/common/error.hpp"
#include "heft/io/atomic_file.hpp"
#include "heft/io/log_io.hpp"
#include "heft/io/validation.hpp"
#include "heft/model/model.hpp"
#include "python_tool.hpp"
#include "yaml_section.hpp"

namespace heft::jobs {
namespace {

namespace fs = std::filesystem;
using Section = yaml::YamlSection;

constexpr const char* kJointState = "sensor_msgs/msg/JointState";
constexpr const char* kImu = "sensor_msgs/msg/Imu";
constexpr const char* kWrench = "geometry_msgs/msg/WrenchStamped";
constexpr const char* kOdometry = "nav_msgs/msg/Odometry";
constexpr const char* kPose = "geometry_msgs/msg/PoseStamped";
constexpr const char* kTf = "tf2_msgs/msg/TFMessage";

std::string joined(const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

// One topic's CSV from read_bag.py: stamps [ns] and the message fields.
struct TopicTable {
  std::vector<std::string> columns;  // after header_ns, receive_ns
  std::vector<std::int64_t> header_ns, receive_ns;
  Eigen::MatrixXd values;
  Eigen::Index column(const std::string& name) const {
    const auto it = std::find(columns.begin(), columns.end(), name);
    return it == columns.end() ? -1 : static_cast<Eigen::Index>(it - columns.begin());
  }
};

TopicTable readTable(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot read " + path);
  TopicTable table;
  std::string line;
  std::getline(in, line);
  std::stringstream header(line);
  for (std::string cell; std::getline(header, cell, ',');) table.columns.push_back(cell);
  table.columns.erase(table.columns.begin(), table.columns.begin() + 2);
  std::vector<double> values;
  while (std::getline(in, line)) {
    const char* p = line.c_str();
    char* end = nullptr;
    table.header_ns.push_back(std::strtoll(p, &end, 10));
    table.receive_ns.push_back(std::strtoll(end + 1, &end, 10));
    for (std::size_t c = 0; c < table.columns.size(); ++c)
      values.push_back(std::strtod(end + 1, &end));
  }
  const Eigen::Index rows = static_cast<Eigen::Index>(table.header_ns.size());
  const Eigen::Index cols = static_cast<Eigen::Index>(table.columns.size());
  table.values = Eigen::Map<Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>>(
      values.data(), rows, cols);
  return table;
}

// A mapped topic as read: its table, type and the frame ids of its first message.
struct ReadTopic {
  const ImportBagJob::Topic* mapping = nullptr;
  std::string group;
  std::string type;
  std::string frame_id, child_frame_id;
  TopicTable table;
  std::vector<std::int64_t> stamps;  // by config.time
};

std::string specOf(const ImportBagJob::Topic& t) {
  return t.parent.empty() ? t.topic : t.topic + "|" + t.parent + "|" + t.child;
}

std::vector<ReadTopic> readTopics(
    const ImportBagJob::Config& config,
    const std::vector<std::pair<std::string, const ImportBagJob::Topic*>>& wanted,
    const std::map<std::string, std::vector<std::string>>& types) {
  ScratchFolder scratch;
  std::vector<std::string> args{config.bag, scratch.path().string()};
  for (const auto& [group, topic] : wanted) args.push_back(specOf(*topic));
  runPythonTool({config.python, config.reader}, args, (scratch.path() / "stderr.txt").string());
  const nlohmann::json manifest =
      nlohmann::json::parse(io::readTextFile((scratch.path() / "manifest.json").string()));
  std::vector<std::string> available;
  for (const auto& t : manifest.at("topics"))
    available.push_back(t.at("name").get<std::string>() + " (" + t.at("type").get<std::string>() +
                        ", " + std::to_string(t.at("count").get<long>()) + ")");
  std::vector<ReadTopic> topics;
  for (std::size_t i = 0; i < wanted.size(); ++i) {
    const auto& [group, mapping] = wanted[i];
    const nlohmann::json& entry = manifest.at("dumped").at(i);
    const std::string where = config.source + ": " + group + ".topic " + mapping->topic;
    if (entry.at("type").is_null())
      throw InputError(config.bag + ": no topic " + mapping->topic + " (mapped as " + group +
                       " in " + config.source + "); the bag has: " + joined(available));
    ReadTopic read;
    read.mapping = mapping;
    read.group = group;
    read.type = entry.at("type").get<std::string>();
    const std::vector<std::string>& accepted = types.at(group);
    if (std::find(accepted.begin(), accepted.end(), read.type) == accepted.end())
      throw InputError(where + ": is " + read.type + ", expected " + joined(accepted));
    if (entry.at("file").is_null() || entry.at("count").get<long>() < 2)
      throw InputError(where + ": expected at least 2 messages" +
                       (mapping->parent.empty()
                            ? std::string()
                            : " with the transform " + mapping->parent + " -> " + mapping->child) +
                       ", got " + std::to_string(entry.at("count").get<long>()));
    read.frame_id = entry.at("frame_id").get<std::string>();
    read.child_frame_id = entry.at("child_frame_id").get<std::string>();
    read.table = readTable((scratch.path() / entry.at("file").get<std::string>()).string());
    read.stamps = config.time == ImportBagJob::TimeSource::Header ? read.table.header_ns
                                                                  : read.table.receive_ns;
    for (std::size_t k = 1; k < read.stamps.size(); ++k)
      if (read.stamps[k] <= read.stamps[k - 1])
        throw InputError(where + " message " + std::to_string(k) + ": stamp " +
                         std::to_string(read.stamps[k]) + " ns is not after the previous one (" +
                         std::to_string(read.stamps[k - 1]) +
                         " ns); time: receive orders by the bag's receive time");
    topics.push_back(std::move(read));
  }
  return topics;
}

Eigen::VectorXd seconds(const std::vector<std::int64_t>& stamps, std::int64_t origin) {
  Eigen::VectorXd t(static_cast<Eigen::Index>(stamps.size()));
  for (std::size_t k = 0; k < stamps.size(); ++k)
    t[static_cast<Eigen::Index>(k)] = static_cast<double>(stamps[k] - origin) / 1e9;
  return t;
}

Eigen::MatrixXd columns(const TopicTable& table, const std::vector<std::string>& names) {
  Eigen::MatrixXd out(table.values.rows(), static_cast<Eigen::Index>(names.size()));
  for (std::size_t c = 0; c < names.size(); ++c)
    out.col(static_cast<Eigen::Index>(c)) = table.values.col(table.column(names[c]));
  return out;
}

// Row index k with t_k <= t <= t_{k+1} (t inside [t_0, t_last]) and the fraction s in [0, 1].
std::pair<Eigen::Index, double> bracket(const Eigen::VectorXd& t, double x) {
  const double* begin = t.data();
  Eigen::Index k =
      static_cast<Eigen::Index>(std::upper_bound(begin, begin + t.size(), x) - begin) - 1;
  k = std::clamp<Eigen::Index>(k, 0, t.size() - 2);
  return {k, (x - t[k]) / (t[k + 1] - t[k])};
}

// Linear interpolation of `values` (rows at times t) at times x, each inside [t_0, t_last].
Eigen::MatrixXd interpolate(const Eigen::VectorXd& t, const Eigen::MatrixXd& values,
                            const Eigen::VectorXd& x) {
  Eigen::MatrixXd out(x.size(), values.cols());
  for (Eigen::Index i = 0; i < x.size(); ++i) {
    const auto [k, s] = bracket(t, x[i]);
    out.row(i) = values.row(k) + s * (values.row(k + 1) - values.row(k));
  }
  return out;
}

std::string frameOr(const std::string& mapped, const std::string& from_message) {
  return mapped.empty() ? from_message : mapped;
}

void requireFrame(const model::RobotModel& robot, const std::string& frame,
                  const std::string& where) {
  if (!robot.pinocchio().existFrame(frame))
    throw InputError(where + ": frame '" + frame + "' is not a frame of " + robot.displayName() +
                     " (name the model's frame with `frame:` in the mapping)");
}

// The rows `keep` of `m` (a loop: GCC 12 warns falsely on Eigen's indexed views of a std::vector).
Eigen::MatrixXd rowsOf(const Eigen::MatrixXd& m, const std::vector<Eigen::Index>& keep) {
  Eigen::MatrixXd out(static_cast<Eigen::Index>(keep.size()), m.cols());
  for (std::size_t i = 0; i < keep.size(); ++i)
    out.row(static_cast<Eigen::Index>(i)) = m.row(keep[i]);
  return out;
}

double medianRate(const Eigen::VectorXd& t) {
  if (t.size() < 2) return 0;
  std::vector<double> dt(static_cast<std::size_t>(t.size() - 1));
  for (Eigen::Index k = 1; k < t.size(); ++k) dt[static_cast<std::size_t>(k - 1)] = t[k] - t[k - 1];
  std::nth_element(dt.begin(), dt.begin() + static_cast<long>(dt.size() / 2), dt.end());
  return 1.0 / dt[dt.size() / 2];
}

struct Assembly {
  const ImportBagJob::Config& config;
  const model::RobotModel& robot;
  ImportBagJob::Result& result;
  std::int64_t origin = 0;
  std::vector<std::string> bag_names;  ///< the bag's name of each logged joint (joints())

  void stream(const ReadTopic& read, const std::string& group, const Eigen::VectorXd& t) {
    result.streams.push_back({group, read.mapping->topic, read.type,
                              static_cast<long>(read.stamps.size()), medianRate(t), t[0],
                              t[t.size() - 1]});
  }

  void joints(const ReadTopic& read) {
    const std::string where = config.source + ": joints.topic " + read.mapping->topic;
    std::map<std::string, std::string> rename(config.rename.begin(), config.rename.end());
    const std::set<std::string> ignore(config.ignore.begin(), config.ignore.end());
    std::vector<std::string> model_names, unknown;
    bag_names.clear();
    for (const std::string& c : read.table.columns) {
      if (c.rfind("position/", 0) != 0) continue;
      const std::string name = c.substr(9);
      if (ignore.count(name)) continue;
      const std::string model_name = rename.count(name) ? rename[name] : name;
      const pinocchio::Model& m = robot.pinocchio();
      if (!m.existJointName(model_name) || m.joints[m.getJointId(model_name)].nv() != 1) {
        unknown.push_back(name);
        continue;
      }
      bag_names.push_back(name);
      model_names.push_back(model_name);
    }
    if (!unknown.empty())
      throw InputError(where + ": joints the model " + robot.displayName() +
                       " lacks: " + joined(unknown) +
                       " (rename them with joints.rename or leave them out with joints.ignore)");
    if (bag_names.empty())
      throw InputError(where + ": expected joint states of " + robot.displayName() +
                       "'s joints, got none (messages without names, or every joint ignored)");
    for (const char* field : {"velocity/", "effort/"})
      if (read.table.column(field + bag_names.front()) < 0)
        throw InputError(where + ": the messages carry no " +
                         std::string(field).substr(0, std::strlen(field) - 1) +
                         " (heft needs position, velocity and effort)");
    io::JointSeries& j = result.log.joints;
    j.time = seconds(read.stamps, origin);
    j.names = model_names;
    std::vector<std::string> q, v, tau;
    for (const std::string& n : bag_names) {
      q.push_back("position/" + n);
      v.push_back("velocity/" + n);
      tau.push_back("effort/" + n);
    }
    j.q = columns(read.table, q);
    j.v = columns(read.table, v);
    j.tau = columns(read.table, tau);
    stream(read, "joints", j.time);
  }

  void imu(const ReadTopic& read) {
    io::ImuSeries imu;
    imu.frame = frameOr(read.mapping->frame, read.frame_id);
    requireFrame(robot, imu.frame, config.source + ": imu.topic " + read.mapping->topic);
    imu.time = seconds(read.stamps, origin);
    imu.gyro = columns(read.table, {"gyro/x", "gyro/y", "gyro/z"});
    imu.accel = columns(read.table, {"accel/x", "accel/y", "accel/z"});
    // REP 145: a driver without orientation says so in every message; keep it only if all have it.
    if ((read.table.values.col(read.table.column("orientation_valid")).array() > 0.5).all())
      imu.orientation =
          columns(read.table, {"orientation/x", "orientation/y", "orientation/z", "orientation/w"});
    else
      result.notes.push_back("imu: the messages carry no orientation (REP 145); none written");
    stream(read, "imu", imu.time);
    result.log.imu = std::move(imu);
  }

  // The sensors on the first one's clock: the others interpolated (identical stamps are copied as
  // they are), samples outside the span every sensor covers dropped.
  void forceTorque(const std::vector<const ReadTopic*>& sensors) {
    io::ForceTorqueSeries ft;
    std::vector<Eigen::VectorXd> times;
    double begin = -1e300, end = 1e300;
    for (const ReadTopic* read : sensors) {
      times.push_back(seconds(read->stamps, origin));
      begin = std::max(begin, times.back()[0]);
      end = std::min(end, times.back()[times.back().size() - 1]);
    }
    const Eigen::VectorXd& t0 = times.front();
    std::vector<Eigen::Index> keep;
    for (Eigen::Index k = 0; k < t0.size(); ++k)
      if (t0[k] >= begin && t0[k] <= end) keep.push_back(k);
    if (keep.size() < 2)
      throw InputError(config.source +
                       ": force_torque: the sensors' topics do not overlap in time");
    ft.time = rowsOf(t0, keep);
    ft.wrench.resize(ft.time.size(), 6 * static_cast<Eigen::Index>(sensors.size()));
    const std::vector<std::string> fields{"fx", "fy", "fz", "tx", "ty", "tz"};
    for (std::size_t i = 0; i < sensors.size(); ++i) {
      const ReadTopic& read = *sensors[i];
      const std::string frame = frameOr(read.mapping->frame, read.frame_id);
      requireFrame(robot, frame, config.source + ": force_torque.topic " + read.mapping->topic);
      ft.frames.push_back(frame);
      ft.names.push_back(read.mapping->name.empty() ? frame : read.mapping->name);
      const Eigen::MatrixXd w = columns(read.table, fields);
      const bool same_clock = read.stamps == sensors.front()->stamps;
      ft.wrench.middleCols(6 * static_cast<Eigen::Index>(i), 6) =
          same_clock ? rowsOf(w, keep) : interpolate(times[i], w, ft.time);
      stream(read, "force_torque/" + ft.names.back(), times[i]);
    }
    const Eigen::Index dropped = t0.size() - ft.time.size();
    if (dropped > 0)
      result.notes.push_back("force_torque: " + std::to_string(dropped) +
                             " samples of the first sensor outside the span all sensors cover");
    if (config.contact_force_threshold) {
      io::ContactSeries contacts;
      contacts.time = ft.time;
      contacts.names = ft.frames;
      contacts.flags.resize(ft.time.size(), static_cast<Eigen::Index>(sensors.size()));
      for (Eigen::Index i = 0; i < contacts.flags.cols(); ++i)
        for (Eigen::Index k = 0; k < ft.time.size(); ++k)
          contacts.flags(k, i) =
              ft.wrench.block(k, 6 * i, 1, 3).norm() > *config.contact_force_threshold ? 1 : 0;
      result.log.contacts = std::move(contacts);
    }
    result.log.force_torque = std::move(ft);
  }

  // Keeps the joint samples inside [t_0, t_last] of a stream interpolated at the joint times.
  void keepJointSamplesWithin(const Eigen::VectorXd& t, const std::string& where,
                              const std::string& what) {
    io::JointSeries& j = result.log.joints;
    std::vector<Eigen::Index> keep;
    for (Eigen::Index k = 0; k < j.time.size(); ++k)
      if (j.time[k] >= t[0] && j.time[k] <= t[t.size() - 1]) keep.push_back(k);
    if (keep.size() < 2)
      throw InputError(where + ": its messages do not overlap the joint states in time");
    const Eigen::Index dropped = j.time.size() - static_cast<Eigen::Index>(keep.size());
    if (dropped > 0)
      result.notes.push_back("joints: " + std::to_string(dropped) + " samples outside the " + what +
                             "'s time span dropped");
    j.time = rowsOf(j.time, keep);
    for (Eigen::MatrixXd* m : {&j.q, &j.v, &j.tau, &j.tau_cmd, &j.base_pose, &j.base_twist})
      if (m->size() > 0) *m = rowsOf(*m, keep);
  }

  // The commanded torque (the effort of another JointState topic) at the joint times (linear);
  // joint samples outside its span are dropped.
  void commands(const ReadTopic& read) {
    const std::string where = config.source + ": joints.commands " + read.mapping->topic;
    io::JointSeries& j = result.log.joints;
    std::vector<std::string> efforts, missing;
    for (std::size_t i = 0; i < bag_names.size(); ++i) {
      if (read.table.column("effort/" + bag_names[i]) >= 0)
        efforts.push_back("effort/" + bag_names[i]);
      else
        missing.push_back(j.names[i]);
    }
    if (!missing.empty())
      throw InputError(where +
                       ": expected a commanded effort for every logged joint, got none for " +
                       joined(missing));
    const Eigen::VectorXd t = seconds(read.stamps, origin);
    keepJointSamplesWithin(t, where, "commands");
    j.tau_cmd = interpolate(t, columns(read.table, efforts), j.time);
    stream(read, "commands", t);
  }

  // The odometry's pose and twist at the joint times (linear; quaternions by slerp); joint samples
  // outside the odometry's span are dropped.
  void base(const ReadTopic& read) {
    const Eigen::VectorXd t = seconds(read.stamps, origin);
    io::JointSeries& j = result.log.joints;
    keepJointSamplesWithin(t, config.source + ": base.topic " + read.mapping->topic, "odometry");
    const Eigen::MatrixXd position = columns(read.table, {"x", "y", "z"});
    const Eigen::MatrixXd quaternion = columns(read.table, {"qx", "qy", "qz", "qw"});
    const Eigen::MatrixXd twist = columns(read.table, {"vx", "vy", "vz", "wx", "wy", "wz"});
    j.base_pose.resize(j.time.size(), 7);
    j.base_pose.leftCols(3) = interpolate(t, position, j.time);
    j.base_twist = interpolate(t, twist, j.time);
    for (Eigen::Index i = 0; i < j.time.size(); ++i) {
      const auto [k, s] = bracket(t, j.time[i]);
      const Eigen::Quaterniond a(quaternion.row(k).transpose().eval().data());
      const Eigen::Quaterniond b(quaternion.row(k + 1).transpose().eval().data());
      j.base_pose.block<1, 4>(i, 3) = a.slerp(s, b).coeffs().transpose();
    }
    // REP 105: the pose is the child frame's in the parent's, the twist in the child frame. heft
    // takes both as the base body's; say so when the child frame is another one.
    const pinocchio::Model& m = robot.pinocchio();
    std::string base_link;
    for (const auto& frame : m.frames)
      if (frame.parentJoint == 1 && frame.type == pinocchio::BODY) {
        base_link = frame.name;
        break;
      }
    if (!read.child_frame_id.empty() && read.child_frame_id != base_link)
      result.notes.push_back("base: the odometry's child_frame_id is '" + read.child_frame_id +
                             "', not the base link '" + base_link +
                             "': its pose and twist are taken as the base's");
    stream(read, "base", t);
  }

  void mocap(const ReadTopic& read) {
    io::MocapSeries mocap;
    mocap.frame = frameOr(read.mapping->frame, read.type == kTf ? read.mapping->child : "");
    if (!mocap.frame.empty())
      requireFrame(robot, mocap.frame, config.source + ": mocap.topic " + read.mapping->topic);
    mocap.time = seconds(read.stamps, origin);
    mocap.position = columns(read.table, {"x", "y", "z"});
    mocap.orientation = columns(read.table, {"qx", "qy", "qz", "qw"});
    stream(read, "mocap", mocap.time);
    result.log.mocap = std::move(mocap);
  }
};

// What a topic entry may hold besides `topic` and `frame`.
enum class TopicEntry { Plain, Transform, Sensor };

// One topic entry of the mapping at `field`: {topic, frame}, plus {parent, child} for a tf
// transform or {name} for a force/torque sensor.
ImportBagJob::Topic readTopic(const YAML::Node& node, const std::string& field,
                              const std::string& source, TopicEntry entry) {
  Section s(node, field, source, "docs/guide/import.md");
  ImportBagJob::Topic t;
  t.topic = s.string("topic");
  if (t.topic.empty()) s.fail(node, field + ".topic", "missing");
  s.read("frame", t.frame);
  if (entry == TopicEntry::Sensor) s.read("name", t.name);
  if (entry == TopicEntry::Transform) {
    s.read("parent", t.parent);
    s.read("child", t.child);
    if (t.parent.empty() != t.child.empty())
      s.fail(node, field, "parent and child come together (a tf transform)");
  }
  s.finish();
  return t;
}

}  // namespace

void ImportBagJob::Config::validate() const {
  require(!robot.empty(), "robot", "a short name or a URDF / MJCF path", "nothing");
  require(!joints.topic.empty(), "joints.topic", "a sensor_msgs/JointState topic", "nothing");
  if (contact_force_threshold)
    requirePositive(*contact_force_threshold, "contacts.force_threshold", "N");
  require(!contact_force_threshold || !force_torque.empty(), "contacts",
          "force_torque topics to take contact flags from", "none");
  std::set<std::string> names;
  for (const Topic& t : force_torque)
    require(t.name.empty() || names.insert(t.name).second, "force_torque.name",
            "unique sensor names", t.name + " twice");
}

void ImportBagJob::parseMapping(const std::string& yaml_text, const std::string& source,
                                const std::string& base_dir, Config& config) {
  const YAML::Node root = yaml::loadYamlMapping(yaml_text, source, "robot, joints, imu, ...");
  config.source = source;
  Section top(root, "", source, "docs/guide/import.md");
  config.robot = yaml::readRobot(top, root, base_dir);
  const std::string time = top.string("time", "header");
  if (time != "header" && time != "receive")
    top.fail(root["time"], "time", "expected header or receive, got '" + time + "'");
  config.time = time == "header" ? TimeSource::Header : TimeSource::Receive;
  if (!top.has("joints")) top.fail(root, "joints", "missing (the sensor_msgs/JointState topic)");
  const model::RobotModel robot = model::loadRobot(config.robot);
  {
    const YAML::Node node = top.raw("joints");
    Section s(node, "joints", source, "docs/guide/import.md");
    config.joints.topic = s.string("topic");
    if (config.joints.topic.empty()) s.fail(node, "joints.topic", "missing");
    config.rename.clear();
    std::vector<std::string> lacking;
    if (s.has("rename")) {
      const YAML::Node rename = s.raw("rename");
      if (!rename.IsMap())
        s.fail(rename, "joints.rename", "expected a mapping {bag name: model name}");
      for (const auto& kv : rename) {
        const std::string to = kv.second.as<std::string>();
        const pinocchio::Model& m = robot.pinocchio();
        if (!m.existJointName(to) || m.joints[m.getJointId(to)].nv() != 1) lacking.push_back(to);
        config.rename.emplace_back(kv.first.as<std::string>(), to);
      }
      if (!lacking.empty())
        s.fail(rename, "joints.rename",
               "joints the model " + robot.displayName() + " lacks: " + joined(lacking));
    }
    s.read("ignore", config.ignore);
    config.commands.reset();
    if (s.has("commands")) {
      Topic commands;
      commands.topic = s.string("commands");
      config.commands = commands;
    }
    s.finish();
  }
  if (top.has("imu")) config.imu = readTopic(top.raw("imu"), "imu", source, TopicEntry::Plain);
  if (top.has("base")) config.base = readTopic(top.raw("base"), "base", source, TopicEntry::Plain);
  if (top.has("mocap"))
    config.mocap = readTopic(top.raw("mocap"), "mocap", source, TopicEntry::Transform);
  config.force_torque.clear();
  if (top.has("force_torque")) {
    const YAML::Node list = top.raw("force_torque");
    if (!list.IsSequence())
      top.fail(list, "force_torque", "expected a list of {topic, name, frame}");
    for (std::size_t i = 0; i < list.size(); ++i)
      config.force_torque.push_back(readTopic(list[i], "force_torque[" + std::to_string(i) + "]",
                                              source, TopicEntry::Sensor));
  }
  if (top.has("contacts")) {
    Section s(top.raw("contacts"), "contacts", source, "docs/guide/import.md");
    double threshold = 0;
    s.read("force_threshold", threshold, yaml::positive);
    config.contact_force_threshold = threshold;
    s.finish();
  }
  for (const auto& [where, frame] : std::vector<std::pair<std::string, std::string>>{
           {"imu.frame", config.imu ? config.imu->frame : ""},
           {"mocap.frame", config.mocap ? config.mocap->frame : ""}})
    if (!frame.empty() && !robot.pinocchio().existFrame(frame))
      throw InputError(source + ": " + where + ": '" + frame + "' is not a frame of " +
                       robot.displayName());
  for (const Topic& t : config.force_torque)
    if (!t.frame.empty() && !robot.pinocchio().existFrame(t.frame))
      throw InputError(source + ": force_torque.frame: '" + t.frame + "' is not a frame of " +
                       robot.displayName());
  top.finish();
  yaml::validateNamingSource(config, source);
}

void ImportBagJob::loadMapping(const std::string& path, Config& config) {
  parseMapping(io::readTextFile(path), path, yaml::configFolder(path), config);
}

ImportBagJob::Result ImportBagJob::run(const Config& config_in, Progress& progress) {
  progress.start();
  Config config = config_in;
  const PythonTool reader = pythonTool("read_bag.py");
  if (config.python.empty()) config.python = reader.python;
  if (config.reader.empty()) config.reader = reader.script;
  config.validate();
  require(!config.bag.empty(), "bag", "a ROS 2 bag (folder, .db3 or .mcap)", "nothing");
  if (!fs::exists(config.bag)) throw InputError(config.bag + ": no such bag (file or folder)");
  const model::RobotModel robot = model::loadRobot(config.robot);

  const std::map<std::string, std::vector<std::string>> types{
      {"joints", {kJointState}},   {"commands", {kJointState}}, {"imu", {kImu}},
      {"force_torque", {kWrench}}, {"base", {kOdometry}},       {"mocap", {kPose, kTf}}};
  std::vector<std::pair<std::string, const Topic*>> wanted{{"joints", &config.joints}};
  if (config.commands) wanted.emplace_back("commands", &*config.commands);
  if (config.imu) wanted.emplace_back("imu", &*config.imu);
  for (const Topic& t : config.force_torque) wanted.emplace_back("force_torque", &t);
  if (config.base) wanted.emplace_back("base", &*config.base);
  if (config.mocap) wanted.emplace_back("mocap", &*config.mocap);
  progress.say("reading " + config.bag);
  const std::vector<ReadTopic> topics = readTopics(config, wanted, types);

  Result result;
  result.config = config;
  Assembly assembly{config, robot, result, 0, {}};
  assembly.origin = topics.front().stamps.front();
  for (const ReadTopic& t : topics) assembly.origin = std::min(assembly.origin, t.stamps.front());
  result.origin_ns = assembly.origin;
  result.log.meta.robot = robot.shortName().empty() ? robot.displayName() : robot.shortName();
  result.log.meta.base_type = robot.hasFreeFlyer() ? io::BaseType::FreeFlyer : io::BaseType::Fixed;
  std::vector<const ReadTopic*> sensors;
  for (const ReadTopic& t : topics) {
    if (t.group == "joints") assembly.joints(t);
    if (t.group == "imu") assembly.imu(t);
    if (t.group == "force_torque") sensors.push_back(&t);
    if (t.group == "mocap") assembly.mocap(t);
  }
  if (!sensors.empty()) assembly.forceTorque(sensors);
  for (const ReadTopic& t : topics)  // both interpolate at the joint times and trim them
    if (t.group == "commands") assembly.commands(t);
  for (const ReadTopic& t : topics)
    if (t.group == "base") assembly.base(t);
  io::requireValid(io::validateLog(result.log, robot.pinocchio()),
                   config.bag + " (imported with " + config.source + ")");
  progress.say("done");
  return result;
}

std::string ImportBagJob::Result::report() const {
  std::ostringstream out;
  out << "imported  " << config.bag << " with " << config.source << " (" << log.meta.robot << ", "
      << (config.time == TimeSource::Header ? "header" : "receive")
      << " stamps; time 0 = " << origin_ns << " ns)\n";
  for (const Stream& s : streams) {
    char line[256];
    std::snprintf(line, sizeof line, "  %-22s %-28s %6ld msgs  %7.1f Hz  %.3f .. %.3f s\n",
                  s.group.c_str(), s.topic.c_str(), s.messages, s.median_rate_hz, s.first, s.last);
    out << line;
  }
  if (log.contacts)
    out << "  contacts               from the force norm > " << *config.contact_force_threshold
        << " N, one per sensor frame\n";
  for (const std::string& note : notes) out << "note      " << note << "\n";
  return out.str();
}

std::vector<std::string> ImportBagJob::write(const Result& result, const std::string& out_log,
                                             const WriteOptions& options) {
  const fs::path out(out_log);
  const std::string folder = out.has_parent_path() ? out.parent_path().string() : ".";
  const OutputFolder outputs(folder, {out.filename().string()}, {result.config.bag}, options);
  io::WriteOptions log_options;
  log_options.overwrite = true;  // checked above
  io::writeLog(result.log, outputs.path(out.filename().string()), log_options);
  return {outputs.path(out.filename().string())};
}

}  // namespace heft::jobs
