#include "heft/model/robots.hpp"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <system_error>
#include <utility>

#include "heft/common/error.hpp"

namespace heft::model {

namespace {

constexpr BaseType kFree = BaseType::FreeFlyer;
constexpr BaseType kFixed = BaseType::Fixed;

// Foot frames of the Unitree quadrupeds (link names in their URDFs).
const std::vector<std::string> kUnitreeFeet = {"FL_foot", "FR_foot", "RL_foot", "RR_foot"};
const std::vector<std::string> kSoloFeet = {"FL_FOOT", "FR_FOOT", "HL_FOOT", "HR_FOOT"};
const std::vector<std::string> kAnymalFeet = {"LF_FOOT", "RF_FOOT", "LH_FOOT", "RH_FOOT"};
const std::vector<std::string> kTalosSoles = {"left_sole_link", "right_sole_link"};

// Legged robots.
std::vector<RobotEntry> leggedRobots() {
  return {
      {"go2", "go2_description/urdf/go2.urdf", kFree, kUnitreeFeet,
       "Unitree Go2 quadruped, 12 joints"},
      {"go1", "go1_description/urdf/go1.urdf", kFree, kUnitreeFeet,
       "Unitree Go1 quadruped, 12 joints"},
      {"a1", "a1_description/urdf/a1.urdf", kFree, kUnitreeFeet, "Unitree A1 quadruped, 12 joints"},
      {"b1", "b1_description/urdf/b1.urdf", kFree, kUnitreeFeet, "Unitree B1 quadruped, 12 joints"},
      {"b1_z1", "b1_description/urdf/b1-z1.urdf", kFree, kUnitreeFeet,
       "Unitree B1 quadruped carrying a Z1 arm, 19 joints"},
      {"laikago", "laikago_description/urdf/laikago.urdf", kFree, kUnitreeFeet,
       "Unitree Laikago quadruped, 12 joints"},
      {"solo12", "solo_description/robots/solo12.urdf", kFree, kSoloFeet,
       "ODRI Solo-12 quadruped, 12 joints"},
      {"solo", "solo_description/robots/solo.urdf", kFree, kSoloFeet,
       "ODRI Solo-8 quadruped (no hip abduction), 8 joints"},
      {"anymal", "anymal_c_simple_description/urdf/anymal.urdf", kFree, kAnymalFeet,
       "ANYbotics ANYmal C (simplified), 12 joints"},
      {"anymal_b", "anymal_b_simple_description/robots/anymal.urdf", kFree, kAnymalFeet,
       "ANYbotics ANYmal B (simplified), 12 joints"},
      {"anymal_kinova", "anymal_b_simple_description/robots/anymal-kinova.urdf", kFree, kAnymalFeet,
       "ANYmal B carrying a Kinova arm, 18 joints"},
      {"hyq",
       "hyq_description/robots/hyq_no_sensors.urdf",
       kFree,
       {"lf_foot", "rf_foot", "lh_foot", "rh_foot"},
       "IIT HyQ hydraulic quadruped, 12 joints"},
      {"quadruped",
       "quadruped_description/urdf/quadruped.urdf",
       kFree,
       {"FL_contact", "FR_contact", "BL_contact", "BR_contact"},
       "simple planar-leg quadruped, 8 joints"},
      {"centauro",
       "centauro_description/urdf/centauro.urdf",
       kFree,
       {"contact_1", "contact_2", "contact_3", "contact_4"},
       "IIT Centauro wheeled-legged robot with two arms, 39 joints"},
      {"bolt",
       "bolt_description/robots/bolt.urdf",
       kFree,
       {"FL_FOOT", "FR_FOOT"},
       "ODRI Bolt biped, 6 joints"},
  };
}

// Humanoids.
std::vector<RobotEntry> humanoids() {
  return {
      {"talos", "talos_data/robots/talos_reduced.urdf", kFree, kTalosSoles,
       "PAL TALOS humanoid, reduced (one joint per gripper), 32 joints"},
      {"talos_full", "talos_data/robots/talos_full_v2.urdf", kFree, kTalosSoles,
       "PAL TALOS humanoid, full, 44 joints"},
      {"g1",
       "g1_description/urdf/g1_29dof_rev_1_0.urdf",
       kFree,
       {"left_ankle_roll_link", "right_ankle_roll_link"},
       "Unitree G1 humanoid, 29 joints"},
      {"g1_with_hand",
       "g1_description/urdf/g1_29dof_with_hand_rev_1_0.urdf",
       kFree,
       {"left_ankle_roll_link", "right_ankle_roll_link"},
       "Unitree G1 humanoid with dexterous hands, 43 joints"},
      {"icub",
       "icub_description/robots/icub.urdf",
       kFree,
       {"l_sole", "r_sole"},
       "IIT iCub humanoid, 32 joints"},
      {"icub_reduced",
       "icub_description/robots/icub_reduced.urdf",
       kFree,
       {"l_sole", "r_sole"},
       "IIT iCub humanoid, reduced, 29 joints"},
      {"romeo",
       "romeo_description/urdf/romeo.urdf",
       kFree,
       {"l_sole", "r_sole"},
       "Aldebaran Romeo humanoid, 55 joints"},
      {"simple_humanoid",
       "simple_humanoid_description/urdf/simple_humanoid.urdf",
       kFree,
       {"l_ankle", "r_ankle"},
       "simple humanoid (HRP-2 like), 29 joints"},
      {"alexander",
       "alexander_description/urdf/alexander_v1.lowerBodyOnly.urdf",
       kFree,
       {"LEFT_FOOT", "RIGHT_FOOT"},
       "PAL Alexander humanoid, lower body, 13 joints"},
      {"human",
       "human_description/robots/human.urdf",
       kFree,
       {"left_foot", "right_foot"},
       "human body model, 36 joints"},
  };
}

// Aerial robots.
std::vector<RobotEntry> aerialRobots() {
  return {
      {"iris",
       "iris_description/robots/iris.urdf",
       kFree,
       {},
       "3DR Iris quadrotor, 4 rotor joints"},
      {"hector",
       "hector_description/robots/quadrotor_base.urdf",
       kFree,
       {},
       "Hector quadrotor, single body"},
      {"borinot",
       "borinot_description/urdf/borinot_flying_arm_2.urdf",
       kFree,
       {},
       "Borinot quadrotor with a 2-joint arm"},
      {"hextilt",
       "hextilt_description/urdf/hextilt_flying_arm_5.urdf",
       kFree,
       {},
       "tilted hexarotor with a 5-joint arm"},
  };
}

// Arms, hands, fixed-base systems.
std::vector<RobotEntry> fixedBaseRobots() {
  return {
      {"panda",
       "panda_description/urdf/panda.urdf",
       kFixed,
       {},
       "Franka Emika Panda arm with gripper, 9 joints"},
      {"ur3",
       "ur_description/urdf/ur3_robot.urdf",
       kFixed,
       {},
       "Universal Robots UR3 arm, 6 joints"},
      {"ur5",
       "ur_description/urdf/ur5_robot.urdf",
       kFixed,
       {},
       "Universal Robots UR5 arm, 6 joints"},
      {"ur10",
       "ur_description/urdf/ur10_robot.urdf",
       kFixed,
       {},
       "Universal Robots UR10 arm, 6 joints"},
      {"ur3_gripper",
       "ur_description/urdf/ur3_gripper.urdf",
       kFixed,
       {},
       "UR3 arm with a gripper link, 6 joints"},
      {"ur5_gripper",
       "ur_description/urdf/ur5_gripper.urdf",
       kFixed,
       {},
       "UR5 arm with a gripper link, 6 joints"},
      {"kinova",
       "kinova_description/robots/kinova.urdf",
       kFixed,
       {},
       "Kinova Jaco2 arm (j2s6s200), 6 joints"},
      {"z1", "z1_description/urdf/z1.urdf", kFixed, {}, "Unitree Z1 arm, 7 joints"},
      {"xarm7", "xarm_description/urdf/xarm7.urdf", kFixed, {}, "UFactory xArm7, 7 joints"},
      {"so100", "so_arm_description/urdf/so100.urdf", kFixed, {}, "SO-100 low-cost arm, 6 joints"},
      {"so101", "so_arm_description/urdf/so101.urdf", kFixed, {}, "SO-101 low-cost arm, 6 joints"},
      {"talos_arm",
       "talos_data/robots/talos_left_arm.urdf",
       kFixed,
       {},
       "TALOS left arm alone, 7 joints"},
      {"baxter",
       "baxter_description/urdf/baxter.urdf",
       kFixed,
       {},
       "Rethink Baxter two-arm robot, 19 joints"},
      {"alex",
       "alex_description/urdf/alex_nub_hands.urdf",
       kFixed,
       {},
       "Boardwalk Alex upper-body humanoid, 19 joints"},
      {"tiago",
       "tiago_description/robots/tiago.urdf",
       kFixed,
       {},
       "PAL TIAGo mobile manipulator (mobile base fixed), 48 joints"},
      {"tiago_dual",
       "tiago_description/robots/tiago_dual.urdf",
       kFixed,
       {},
       "PAL TIAGo with two arms (mobile base fixed), 101 joints"},
      {"tiago_no_hand",
       "tiago_description/robots/tiago_no_hand.urdf",
       kFixed,
       {},
       "PAL TIAGo without hand (mobile base fixed), 12 joints"},
      {"tiago_pro",
       "tiago_pro_description/robots/tiago_pro.urdf",
       kFixed,
       {},
       "PAL TIAGo Pro (mobile base fixed), 33 joints"},
      {"pr2",
       "pr2_description/urdf/pr2.urdf",
       kFixed,
       {},
       "Willow Garage PR2 (mobile base fixed), 30 joints"},
      {"allegro_right_hand",
       "allegro_hand_description/urdf/allegro_right_hand.urdf",
       kFixed,
       {},
       "Wonik Allegro right hand, 16 joints"},
      {"allegro_left_hand",
       "allegro_hand_description/urdf/allegro_left_hand.urdf",
       kFixed,
       {},
       "Wonik Allegro left hand, 16 joints"},
      {"finger_edu",
       "finger_edu_description/robots/finger_edu.urdf",
       kFixed,
       {},
       "ODRI FingerEdu, 3 joints"},
      {"double_pendulum",
       "double_pendulum_description/urdf/double_pendulum.urdf",
       kFixed,
       {},
       "double pendulum, 2 revolute joints"},
      {"double_pendulum_continuous",
       "double_pendulum_description/urdf/double_pendulum_continuous.urdf",
       kFixed,
       {},
       "double pendulum, 2 continuous joints"},
      {"double_pendulum_simple",
       "double_pendulum_description/urdf/double_pendulum_simple.urdf",
       kFixed,
       {},
       "double pendulum without geometry, 2 joints"},
      {"asr_twodof",
       "asr_twodof_description/urdf/TwoDofs.urdf",
       kFixed,
       {},
       "qbrobotics two-joint arm"},
  };
}

// heft's own mechanisms (data/robots).
std::vector<RobotEntry> heftMechanisms() {
  return {
      {"fourbar_leg",
       "fourbar_leg.xml",
       kFixed,
       {},
       "planar leg, knee driven through a four-bar linkage (one closed loop), 4 joints",
       true},
  };
}

// Every robot, in the order of docs/model.md.
std::vector<RobotEntry> makeTable() {
  std::vector<RobotEntry> table;
  for (auto group : {leggedRobots, humanoids, aerialRobots, fixedBaseRobots, heftMechanisms})
    for (RobotEntry& entry : group()) table.push_back(std::move(entry));
  return table;
}

// Canonical form of a path for comparison; the path itself when it cannot be resolved.
std::string canonical(const std::string& path) {
  std::error_code ec;
  const auto resolved = std::filesystem::weakly_canonical(path, ec);
  return ec ? path : resolved.string();
}

}  // namespace

std::string toString(BaseType base) {
  switch (base) {
    case BaseType::Default:
      return "default";
    case BaseType::FreeFlyer:
      return "free-flyer";
    case BaseType::Fixed:
      return "fixed";
  }
  return "unknown";
}

BaseType parseBaseType(const std::string& name) {
  for (BaseType b : {BaseType::Default, BaseType::FreeFlyer, BaseType::Fixed})
    if (toString(b) == name) return b;
  throw InputError("expected default, free-flyer or fixed, got '" + name + "'");
}

const std::vector<RobotEntry>& knownRobots() {
  static const std::vector<RobotEntry> table = makeTable();
  return table;
}

const RobotEntry* findRobot(const std::string& name) {
  for (const auto& entry : knownRobots())
    if (entry.name == name) return &entry;
  return nullptr;
}

const RobotEntry* findRobotByPath(const std::string& path) {
  const std::string wanted = canonical(path);
  for (const auto& entry : knownRobots())
    if (canonical(robotPath(entry)) == wanted) return &entry;
  return nullptr;
}

std::string knownRobotNames() {
  std::vector<std::string> names;
  for (const auto& entry : knownRobots()) names.push_back(entry.name);
  std::sort(names.begin(), names.end());
  std::string out;
  for (const auto& name : names) out += (out.empty() ? "" : ", ") + name;
  return out;
}

std::string robotsDirectory() {
  // An installed Python package finds example-robot-data beside itself, not where heft was built.
  const char* override_dir = std::getenv("HEFT_ROBOTS_DIR");
  return override_dir != nullptr && *override_dir != '\0' ? override_dir : HEFT_ROBOTS_DIR;
}

std::string heftRobotsDirectory() {
  const char* override_dir = std::getenv("HEFT_DATA_DIR");
  return override_dir != nullptr && *override_dir != '\0' ? std::string(override_dir) + "/robots"
                                                          : HEFT_SOURCE_DIR "/data/robots";
}

std::string robotPath(const RobotEntry& entry) {
  return (entry.heft_data ? heftRobotsDirectory() : robotsDirectory()) + "/" + entry.relative_path;
}

}  // namespace heft::model
