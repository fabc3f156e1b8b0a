#pragma once
/// \file The robots example-robot-data ships, by short name (docs/model.md has the table).
///
/// A short name resolves to a description file under robotsDirectory(), a default base (free-flyer
/// for legged robots, humanoids and aerial robots, fixed for arms and hands) and the contact frames
/// (foot or sole link names) that contact models and estimators use by default.
#include <string>
#include <vector>

namespace heft::model {

/// How the robot is attached to the world: the root joint of the Pinocchio model.
enum class BaseType {
  Default,    ///< the short-name table's base; for other files, see LoadOptions::base
  FreeFlyer,  ///< pinocchio::JointModelFreeFlyer root ("root_joint"): q has 7 more, v 6 more
              ///< entries
  Fixed,      ///< the root link is welded to the world
};

/// "default" / "free-flyer" / "fixed".
std::string toString(BaseType base);
/// The inverse of toString. \throws InputError naming the accepted values.
BaseType parseBaseType(const std::string& name);

/// One robot of the short-name table.
struct RobotEntry {
  std::string name;           ///< short name, e.g. "go2"
  std::string relative_path;  ///< below robotsDirectory(), e.g. "go2_description/urdf/go2.urdf"
  BaseType base = BaseType::FreeFlyer;      ///< FreeFlyer or Fixed (never Default)
  std::vector<std::string> contact_frames;  ///< foot / sole frames (link names); empty for arms
  std::string description;                  ///< one line
  /// The file is one of heft's own (under heftRobotsDirectory()), not example-robot-data's.
  bool heft_data = false;
};

/// Every short name, in the order of docs/model.md (legged, humanoids, aerial, arms, others).
const std::vector<RobotEntry>& knownRobots();

/// The entry called `name`, or nullptr. Exact, case-sensitive match.
const RobotEntry* findRobot(const std::string& name);

/// The entry whose file is `path` (compared after resolving symlinks and "..") or nullptr.
const RobotEntry* findRobotByPath(const std::string& path);

/// "a1, alex, ...": the short names sorted, comma-separated (for error messages).
std::string knownRobotNames();

/// example-robot-data's robots/ folder: the environment variable HEFT_ROBOTS_DIR when set and
/// non-empty, else the folder compiled into heft (the HEFT_ROBOTS_DIR macro).
std::string robotsDirectory();

/// heft's own robot files (data/robots of the source tree): the environment variable
/// HEFT_DATA_DIR + "/robots" when HEFT_DATA_DIR is set and non-empty, else the source tree's.
std::string heftRobotsDirectory();
/// Absolute path of an entry's description file.
std::string robotPath(const RobotEntry& entry);

}  // namespace heft::model
