#pragma once
/// \file Reading YAML configs (the `heft identify` and `heft filter` jobs) so that every mistake
/// is an InputError naming the file, the line and the field: wrong types, out-of-range values
/// reported by a library parser, and unknown keys (a typo is an error, not a silently ignored
/// option).
#include <yaml-cpp/yaml.h>

#include <cmath>
#include <filesystem>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "heft/common/error.hpp"
#include "heft/common/format.hpp"
#include "heft/io/yaml_keys.hpp"
#include "heft/model/contact_points.hpp"
#include "heft/model/model.hpp"

namespace heft::jobs::yaml {

// Reads one YAML mapping, remembering which keys were used so that a typo is an error, not a
// silently ignored option.
class YamlSection {
 public:
  /// `docs` names the page that lists the keys (for the unknown-key message).
  YamlSection(const YAML::Node& node, std::string path, const std::string& source,
              std::string docs = "docs/")
      : node_(node), path_(std::move(path)), source_(source), docs_(std::move(docs)) {
    if (node_ && !node_.IsNull() && !node_.IsMap())
      fail(node_, "expected a mapping of keys to values");
  }

  bool has(const std::string& key) const { return node_ && node_.IsMap() && node_[key]; }
  YAML::Node raw(const std::string& key) {
    used_.insert(key);
    return has(key) ? node_[key] : YAML::Node();
  }

  template <typename T>
  void read(const std::string& key, T& value) {
    if (!has(key)) return;
    used_.insert(key);
    const YAML::Node n = node_[key];
    try {
      value = n.as<T>();
    } catch (const YAML::Exception&) {
      fail(n, field(key), std::string("expected ") + expected<T>() + ", got '" + text(n) + "'");
    }
  }

  /// read() and a range check: `check(value)` throws InputError ("expected ..., got ...") for a
  /// value out of range, and the error then names the file, the line and the key (the options'
  /// own validate() can only name the option).
  template <typename T, typename Check>
  void read(const std::string& key, T& value, Check&& check) {
    if (!has(key)) return;
    read(key, value);
    try {
      check(value);
    } catch (const InputError& e) {
      fail(node_[key], field(key), e.what());
    }
  }
  /// An optional key: `value` is set only when the key is present.
  template <typename T>
  void read(const std::string& key, std::optional<T>& value) {
    if (!has(key)) return;
    T v{};
    read(key, v);
    value = v;
  }
  template <typename T, typename Check>
  void read(const std::string& key, std::optional<T>& value, Check&& check) {
    if (!has(key)) return;
    T v{};
    read(key, v, std::forward<Check>(check));
    value = v;
  }

  std::string string(const std::string& key, const std::string& fallback = "") {
    std::string value = fallback;
    read(key, value);
    return value;
  }

  /// A list of strings, or a single string, or a bool (true = empty list meaning "all").
  std::optional<std::vector<std::string>> namesOrBool(const std::string& key) {
    if (!has(key)) return std::nullopt;
    used_.insert(key);
    const YAML::Node n = node_[key];
    try {
      if (n.IsSequence()) return n.as<std::vector<std::string>>();
      if (n.IsScalar() && (n.Scalar() == "true" || n.Scalar() == "false")) {
        if (n.as<bool>()) return std::vector<std::string>{};
        return std::nullopt;
      }
      if (n.IsScalar() && n.Scalar() == "all") return std::vector<std::string>{};
    } catch (const YAML::Exception&) {
    }
    fail(n, field(key),
         "expected true, false, all or a list of joint names, got '" + text(n) + "'");
  }

  /// A mapping of names to numbers ({panda_finger_joint1: 0.04, ...}), in file order.
  std::vector<std::pair<std::string, double>> namedNumbers(const std::string& key) {
    std::vector<std::pair<std::string, double>> out;
    if (!has(key)) return out;
    used_.insert(key);
    const YAML::Node n = node_[key];
    if (!n.IsMap())
      fail(n, field(key), "expected a mapping of names to numbers, got '" + text(n) + "'");
    for (const auto& kv : n) {
      double value = 0;
      try {
        value = kv.second.as<double>();
      } catch (const YAML::Exception&) {
        fail(kv.second, field(key) + "." + kv.first.as<std::string>(),
             "expected a number, got '" + text(kv.second) + "'");
      }
      out.emplace_back(kv.first.as<std::string>(), value);
    }
    return out;
  }

  /// A list of [left, right] name pairs ([[FL_thigh, FR_thigh], ...]).
  std::vector<std::pair<std::string, std::string>> namePairs(const std::string& key) {
    std::vector<std::pair<std::string, std::string>> out;
    if (!has(key)) return out;
    used_.insert(key);
    const YAML::Node n = node_[key];
    bool ok = n.IsSequence();
    for (std::size_t i = 0; ok && i < n.size(); ++i) {
      const YAML::Node pair = n[i];
      ok = pair.IsSequence() && pair.size() == 2 && pair[0].IsScalar() && pair[1].IsScalar();
      if (ok) out.emplace_back(pair[0].as<std::string>(), pair[1].as<std::string>());
    }
    if (!ok) fail(n, field(key), "expected a list of [left, right] body pairs");
    return out;
  }

  /// A mapping of names to [lower, upper] number pairs ({payload: [0.5, 3.0]}), in file order;
  /// .inf and -.inf allowed.
  std::vector<std::tuple<std::string, double, double>> namedIntervals(const std::string& key) {
    std::vector<std::tuple<std::string, double, double>> out;
    if (!has(key)) return out;
    used_.insert(key);
    const YAML::Node n = node_[key];
    if (!n.IsMap())
      fail(n, field(key), "expected a mapping of names to [lower, upper], got '" + text(n) + "'");
    for (const auto& kv : n) {
      const std::string name = kv.first.as<std::string>();
      std::vector<double> pair;
      try {
        pair = kv.second.as<std::vector<double>>();
      } catch (const YAML::Exception&) {
      }
      if (pair.size() != 2 || std::isnan(pair[0]) || std::isnan(pair[1]) || pair[0] > pair[1])
        fail(kv.second, field(key) + "." + name,
             "expected [lower, upper] with lower <= upper, got '" + text(kv.second) + "'");
      out.emplace_back(name, pair[0], pair[1]);
    }
    return out;
  }

  /// A list of [start, end] time ranges in seconds, 0 <= start < end.
  std::vector<std::pair<double, double>> timeRanges(const std::string& key) {
    std::vector<std::pair<double, double>> ranges;
    if (!has(key)) return ranges;
    used_.insert(key);
    const YAML::Node n = node_[key];
    const std::string expected =
        "expected a list of [start, end] ranges in seconds from the "
        "log's first sample, 0 <= start < end";
    if (!n.IsSequence()) fail(n, field(key), expected + ", got '" + text(n) + "'");
    for (const auto& item : n) {
      std::vector<double> pair;
      try {
        pair = item.as<std::vector<double>>();
      } catch (const YAML::Exception&) {
      }
      if (pair.size() != 2 || !std::isfinite(pair[0]) || !std::isfinite(pair[1]) || pair[0] < 0 ||
          pair[1] <= pair[0])
        fail(item, field(key), expected + ", got '" + YAML::Dump(item) + "'");
      ranges.emplace_back(pair[0], pair[1]);
    }
    return ranges;
  }

  /// Throws on keys that were never read.
  void finish() const {
    if (!node_ || !node_.IsMap()) return;
    for (const auto& kv : node_) {
      const std::string key = kv.first.as<std::string>();
      if (!used_.count(key)) fail(kv.first, field(key), "unknown key (" + docs_ + " lists them)");
    }
  }

  const std::string& source() const { return source_; }
  std::string field(const std::string& key) const {
    return path_.empty() ? key : path_ + "." + key;
  }
  [[noreturn]] void fail(const YAML::Node& n, const std::string& what) const {
    fail(n, path_.empty() ? std::string("config") : path_, what);
  }
  [[noreturn]] void fail(const YAML::Node& n, const std::string& where,
                         const std::string& what) const {
    throw InputError(source_ + ":" + std::to_string(n.Mark().line + 1) + ": " + where + ": " +
                     what);
  }

 private:
  template <typename T>
  static const char* expected() {
    if (std::is_same<T, bool>::value) return "true or false";
    if (std::is_integral<T>::value) return "an integer";
    if (std::is_floating_point<T>::value) return "a number";
    return "a string";
  }
  static std::string text(const YAML::Node& n) {
    if (n.IsScalar()) return n.Scalar();
    if (n.IsSequence()) return "a list";
    if (n.IsMap()) return "a mapping";
    return "nothing";
  }

  YAML::Node node_;
  std::string path_;
  const std::string& source_;
  std::string docs_;
  std::set<std::string> used_;
};

// Range checks for YamlSection::read (numbers as formatNumber writes them: std::to_string would
// print a tolerance of 1e-12 as 0.000000).
inline void positive(double x) {
  if (!(std::isfinite(x) && x > 0))
    throw InputError("expected a finite value > 0, got " + formatNumber(x));
}
inline void nonNegative(double x) {
  if (!(std::isfinite(x) && x >= 0))
    throw InputError("expected a finite value >= 0, got " + formatNumber(x));
}
inline void finite(double x) {
  if (!std::isfinite(x)) throw InputError("expected a finite value, got " + formatNumber(x));
}
inline void positiveCount(int n) {
  if (n < 1) throw InputError("expected an integer >= 1, got " + std::to_string(n));
}
inline void nonNegativeCount(int n) {
  if (n < 0) throw InputError("expected an integer >= 0, got " + std::to_string(n));
}
/// lo < x < hi: "expected <what> in (lo, hi), got x".
inline auto inOpenInterval(double lo, double hi, std::string what) {
  return [lo, hi, what = std::move(what)](double x) {
    if (!(x > lo && x < hi))
      throw InputError("expected " + what + " in (" + formatNumber(lo) + ", " + formatNumber(hi) +
                       "), got " + formatNumber(x));
  };
}

// Turns the InputError of a library parser ("method: expected ...") into one naming the config's
// file and line.
template <typename F>
auto located(YamlSection& section, const std::string& key, F&& parse) {
  const YAML::Node n = section.raw(key);
  std::string text;
  try {
    text = n.as<std::string>();
  } catch (const YAML::Exception&) {
    section.fail(n, section.field(key), "expected a string");
  }
  try {
    return parse(text);
  } catch (const InputError& e) {
    section.fail(n, section.field(key), e.what());
  }
}

/// A whole config file's text as a YAML mapping. \throws InputError "<source>:<line>: not valid
/// YAML: ...", "<source>:<line>: 'key' is given twice ..." or "<source>: expected a YAML mapping
/// with <keys_hint>".
inline YAML::Node loadYamlMapping(const std::string& text, const std::string& source,
                                  const std::string& keys_hint) {
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::ParserException& e) {
    throw InputError(source + ":" + std::to_string(e.mark.line + 1) + ": not valid YAML: " + e.msg);
  }
  if (!root || !root.IsMap())
    throw InputError(source + ": expected a YAML mapping with " + keys_hint);
  io::rejectDuplicateKeys(root, source);
  return root;
}

/// The folder a config's relative paths are resolved against: the config file's folder.
inline std::string configFolder(const std::string& path) {
  const std::string folder = std::filesystem::path(path).parent_path().string();
  return folder.empty() ? std::string(".") : folder;
}

/// config.validate(), its error prefixed with the config's source unless it already names it.
template <typename Config>
void validateNamingSource(const Config& config, const std::string& source) {
  try {
    config.validate();
  } catch (const InputError& e) {
    const std::string what = e.what();
    throw InputError(what.rfind(source, 0) == 0 ? what : source + ": " + what);
  }
}

/// A path from a config: absolute or empty as is, else relative to the config's folder.
inline std::string resolveConfigPath(const std::string& base_dir, const std::string& path) {
  if (path.empty() || std::filesystem::path(path).is_absolute()) return path;
  return (std::filesystem::path(base_dir) / path).lexically_normal().string();
}

/// `locked_joints: {joint: position, ...}` (every job config has it).
inline std::vector<model::LockedJoint> readLockedJoints(YamlSection& top) {
  std::vector<model::LockedJoint> locked;
  for (const auto& [name, position] : top.namedNumbers("locked_joints"))
    locked.push_back({name, position});
  return locked;
}

/// `key: [{name, frame, offset: [x, y, z]}, ...]`: contact points away from a frame origin (sole
/// corners), the same definitions a log's contacts/frames and contacts/offsets hold.
inline std::vector<model::ContactPoint> readContactPoints(YamlSection& section,
                                                          const std::string& key) {
  std::vector<model::ContactPoint> points;
  if (!section.has(key)) return points;
  const YAML::Node list = section.raw(key);
  if (!list.IsSequence())
    section.fail(list, section.field(key), "expected a list of {name, frame, offset}");
  for (std::size_t i = 0; i < list.size(); ++i) {
    const std::string path = section.field(key) + "[" + std::to_string(i) + "]";
    YamlSection item(list[i], path, section.source());
    model::ContactPoint point;
    point.name = item.string("name");
    point.frame = item.string("frame");
    if (point.name.empty()) item.fail(list[i], path + ".name", "missing");
    if (point.frame.empty()) item.fail(list[i], path + ".frame", "missing");
    std::vector<double> offset{0, 0, 0};
    item.read("offset", offset);
    if (offset.size() != 3) item.fail(list[i], path + ".offset", "expected [x, y, z] in metres");
    point.offset = Vector3(offset[0], offset[1], offset[2]);
    item.finish();
    points.push_back(point);
  }
  return points;
}

/// The robot and the log every job config names: `robot` (a short name such as go2 stays a name;
/// anything with a '/' or a '.' is a path, resolved against base_dir) and `log` (resolved). A
/// missing key fails naming the config's line.
inline std::string readRobot(YamlSection& top, const YAML::Node& root,
                             const std::string& base_dir) {
  if (!top.has("robot")) top.fail(root, "robot", "missing (a short name such as go2, or a path)");
  std::string robot = top.string("robot");
  if (robot.find('/') != std::string::npos || robot.find('.') != std::string::npos)
    robot = resolveConfigPath(base_dir, robot);
  return robot;
}

inline std::pair<std::string, std::string> readRobotAndLog(YamlSection& top, const YAML::Node& root,
                                                           const std::string& base_dir) {
  if (!top.has("log")) top.fail(root, "log", "missing (an .h5 file or a CSV folder)");
  std::string robot = readRobot(top, root, base_dir);
  return {robot, resolveConfigPath(base_dir, top.string("log"))};
}

/// readRobotAndLog where `log` may also be a list of recordings that share the parameters: the
/// robot, the first log and the others (resolved). An empty or malformed list fails naming it.
inline std::tuple<std::string, std::string, std::vector<std::string>> readRobotAndLogs(
    YamlSection& top, const YAML::Node& root, const std::string& base_dir) {
  std::vector<std::string> logs;
  const YAML::Node list = root["log"];
  if (list && list.IsSequence()) {
    try {
      logs = list.as<std::vector<std::string>>();
    } catch (const YAML::Exception&) {
    }
    if (logs.empty()) top.fail(list, "log", "expected a path or a non-empty list of paths");
    const std::string robot = readRobot(top, root, base_dir);
    top.raw("log");
    std::vector<std::string> more;
    for (std::size_t i = 1; i < logs.size(); ++i)
      more.push_back(resolveConfigPath(base_dir, logs[i]));
    return {robot, resolveConfigPath(base_dir, logs.front()), more};
  }
  auto [robot, log] = readRobotAndLog(top, root, base_dir);
  return {robot, log, {}};
}

}  // namespace heft::jobs::yaml
