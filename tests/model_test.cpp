// heft::model: loading robots, body naming, identified sets, payloads, bad files, `heft info`.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <pinocchio/algorithm/center-of-mass.hpp>
#include <regex>
#include <set>
#include <sstream>

#include "heft/common/error.hpp"
#include "heft/inertia/inertia.hpp"
#include "heft/model/contact_points.hpp"
#include "heft/model/identified_set.hpp"
#include "heft/model/model.hpp"
#include "heft/model/payload.hpp"
#include "heft/model/plane.hpp"
#include "heft/model/robots.hpp"
#include "support/fourbar_mjcf.hpp"

namespace fs = std::filesystem;
using heft::InputError;
using heft::Matrix3;
using heft::Vector10;
using heft::Vector3;
using namespace heft::model;

namespace {

// Message of the InputError `f` throws; fails the test if it throws nothing or something else.
template <typename F>
std::string inputErrorOf(F&& f) {
  try {
    f();
  } catch (const InputError& e) {
    return e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << "expected heft::InputError, got another exception: " << e.what();
    return "";
  }
  ADD_FAILURE() << "expected heft::InputError, nothing thrown";
  return "";
}

std::string readFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// A scratch folder for generated robot files, removed at the end of the test.
class TempDir {
 public:
  TempDir() {
    path_ = fs::temp_directory_path() /
            ("heft_model_test_" + std::to_string(::getpid()) + "_" + std::to_string(counter_++));
    fs::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  std::string write(const std::string& name, const std::string& text) const {
    const std::string p = (path_ / name).string();
    std::ofstream(p) << text;
    return p;
  }
  std::string path(const std::string& name) const { return (path_ / name).string(); }

 private:
  fs::path path_;
  static inline int counter_ = 0;
};

std::string go2Path() { return robotPath(*findRobot("go2")); }

// A one-joint robot built by hand: a revolute joint about z carrying the inertia (m, c, I_c).
RobotModel oneBodyRobot(double m, const Vector3& c, const Matrix3& Ic) {
  pinocchio::Model model;
  const auto j = model.addJoint(0, pinocchio::JointModelRZ(), pinocchio::SE3::Identity(), "hinge");
  model.appendBodyToJoint(j, pinocchio::Inertia(m, c, pinocchio::Symmetric3(Ic)));
  model.addBodyFrame("arm", j, pinocchio::SE3::Identity(),
                     static_cast<int>(model.addJointFrame(j)));
  return RobotModel(model, "hand-made");
}

const char* kMjcf = R"(<mujoco model="two_link">
  <worldbody>
    <body name="torso" pos="0 0 1">
      <freejoint name="root"/>
      <inertial pos="0 0 0" mass="2" diaginertia="0.1 0.2 0.3"/>
      <body name="upper" pos="0.1 0 0">
        <joint name="hip" type="hinge" axis="0 1 0" pos="0 0 0.05"/>
        <inertial pos="0 0 -0.1" mass="0.5" diaginertia="0.01 0.01 0.002"/>
        <body name="lower" pos="0 0 -0.2">
          <joint name="knee" type="hinge" axis="0 1 0"/>
          <inertial pos="0 0 -0.1" mass="0.3" diaginertia="0.004 0.004 0.001"/>
        </body>
      </body>
    </body>
  </worldbody>
</mujoco>
)";

}  // namespace

// ---- the short-name table ---------------------------------------------------------------------

TEST(Robots, EveryShortNameLoadsWithItsBaseAndContactFrames) {
  EXPECT_EQ(robotsDirectory(), std::string(HEFT_ROBOTS_DIR_FOR_TESTS));
  std::set<std::string> names;
  for (const RobotEntry& entry : knownRobots()) {
    SCOPED_TRACE(entry.name);
    EXPECT_TRUE(names.insert(entry.name).second) << "duplicate short name";
    ASSERT_NE(entry.base, BaseType::Default);
    const RobotModel robot = loadRobot(entry.name);
    EXPECT_EQ(robot.shortName(), entry.name);
    EXPECT_EQ(robot.hasFreeFlyer(), entry.base == BaseType::FreeFlyer);
    EXPECT_EQ(robot.contactFrames(), entry.contact_frames);
    for (const auto& frame : entry.contact_frames) {
      ASSERT_TRUE(robot.pinocchio().existFrame(frame)) << frame;
      EXPECT_EQ(robot.pinocchio().frames[robot.pinocchio().getFrameId(frame)].type, pinocchio::BODY)
          << frame;
    }
    EXPECT_EQ(robot.bodies().size(), static_cast<size_t>(robot.pinocchio().njoints - 1));
    EXPECT_GT(robot.totalMass(), 0);
    EXPECT_DOUBLE_EQ(robot.totalMass(), pinocchio::computeTotalMass(robot.pinocchio()));
  }
  // legged robots and humanoids have feet; the brief's minimum list is present
  for (const char* name : {"go2",    "go1",      "b1",   "a1",    "solo12",          "solo",
                           "anymal", "anymal_b", "hyq",  "talos", "talos_full",      "g1",
                           "panda",  "ur3",      "ur5",  "ur10",  "double_pendulum", "kinova",
                           "bolt",   "icub",     "romeo"})
    EXPECT_NE(findRobot(name), nullptr) << name;
  EXPECT_EQ(findRobot("anymal")->relative_path, "anymal_c_simple_description/urdf/anymal.urdf");
  EXPECT_EQ(findRobot("talos")->relative_path, "talos_data/robots/talos_reduced.urdf");
  EXPECT_EQ(findRobot("go2")->contact_frames,
            (std::vector<std::string>{"FL_foot", "FR_foot", "RL_foot", "RR_foot"}));
}

TEST(Robots, PathOfATableRobotInheritsItsBase) {
  const RobotModel panda = loadRobot(robotPath(*findRobot("panda")));
  EXPECT_EQ(panda.shortName(), "panda");
  EXPECT_FALSE(panda.hasFreeFlyer());
  // a URDF outside the table defaults to a free-flyer base
  TempDir dir;
  const std::string copy = dir.write("my_go2.urdf", readFile(go2Path()));
  const RobotModel mine = loadRobot(copy);
  EXPECT_EQ(mine.shortName(), "");
  EXPECT_TRUE(mine.hasFreeFlyer());
  EXPECT_EQ(mine.displayName(), "my_go2.urdf");
}

TEST(Robots, UnknownNameListsKnownNames) {
  const std::string what = inputErrorOf([] { loadRobot("go3"); });
  EXPECT_NE(what.find("unknown robot 'go3'"), std::string::npos) << what;
  EXPECT_NE(what.find("go2"), std::string::npos) << what;
  EXPECT_NE(what.find("talos_full"), std::string::npos) << what;
}

// ---- base type, mass ------------------------------------------------------------------------

TEST(Model, FreeFlyerAndFixedBaseDimensions) {
  LoadOptions ff, fixed;
  ff.base = BaseType::FreeFlyer;
  fixed.base = BaseType::Fixed;
  const RobotModel a = loadRobot("go2", ff);
  const RobotModel b = loadRobot("go2", fixed);
  EXPECT_TRUE(a.hasFreeFlyer());
  EXPECT_FALSE(b.hasFreeFlyer());
  EXPECT_EQ(a.pinocchio().nq, 19);  // 3 + 4 (quaternion) + 12
  EXPECT_EQ(a.pinocchio().nv, 18);
  EXPECT_EQ(b.pinocchio().nq, 12);
  EXPECT_EQ(b.pinocchio().nv, 12);
  EXPECT_EQ(a.bodies().size(), 13u);
  EXPECT_EQ(b.bodies().size(), 12u);
  EXPECT_EQ(a.bodies()[0].name, "base");
  EXPECT_EQ(a.bodies()[0].joint_name, "root_joint");
  // fixed base: the base link (and what is bolted to it) is welded to the world, not counted
  EXPECT_EQ(a.worldMass(), 0.0);
  EXPECT_GT(b.worldMass(), 0.0);
  EXPECT_NEAR(a.totalMass(), b.totalMass() + b.worldMass(), 1e-12);
  EXPECT_EQ(b.worldLinks().front(), "base");
  // the arm default is fixed, the same file loads as a free-flyer on demand
  EXPECT_EQ(loadRobot("panda").pinocchio().nq, 9);
  EXPECT_EQ(loadRobot("panda", ff).pinocchio().nq, 16);
}

TEST(Model, TotalMassIsTheSumOfTheUrdfLinkMasses) {
  // Independent of Pinocchio: add up every <mass value="..."> of the file.
  const std::string text = readFile(go2Path());
  const std::regex mass_re(R"re(<mass\s+value\s*=\s*"([^"]+)")re");
  double sum = 0;
  int count = 0;
  for (std::sregex_iterator it(text.begin(), text.end(), mass_re), end; it != end; ++it) {
    sum += std::stod((*it)[1]);
    ++count;
  }
  ASSERT_GT(count, 13);  // the rotors and feet are separate links lumped into bodies
  LoadOptions ff;
  ff.base = BaseType::FreeFlyer;
  const RobotModel go2 = loadRobot("go2", ff);
  EXPECT_NEAR(go2.totalMass(), sum, 1e-9 * sum);
  EXPECT_DOUBLE_EQ(go2.totalMass(), pinocchio::computeTotalMass(go2.pinocchio()));
}

// ---- bodies -----------------------------------------------------------------------------------

TEST(Model, BodyLookupByLinkAndJointName) {
  const RobotModel go2 = loadRobot("go2");
  const auto& model = go2.pinocchio();
  const auto calf = go2.bodyIndex("FL_calf");
  EXPECT_EQ(calf, go2.bodyIndex("FL_calf_joint"));
  EXPECT_EQ(model.names[calf], "FL_calf_joint");
  EXPECT_EQ(go2.bodyIndex("base"), 1u);
  EXPECT_EQ(go2.bodyIndex("root_joint"), 1u);
  // every body's link frame is its joint frame
  for (const Body& b : go2.bodies()) {
    SCOPED_TRACE(b.name);
    ASSERT_GE(b.frame, 0);
    const auto& frame = model.frames[b.frame];
    EXPECT_EQ(frame.name, b.name);
    EXPECT_EQ(frame.parentJoint, b.joint);
    EXPECT_TRUE(frame.placement.isIdentity());
  }
  // the foot and the calf rotor are lumped into the calf (the thigh rotor into the thigh)
  const auto& lumped = go2.body(calf).lumped_links;
  EXPECT_NE(std::find(lumped.begin(), lumped.end(), "FL_foot"), lumped.end());
  EXPECT_EQ(go2.pi("FL_calf"), go2.pi(calf));
  EXPECT_DOUBLE_EQ(go2.pi(calf)[0], model.inertias[calf].mass());
}

TEST(Model, UnknownBodyErrorNamesItAndListsValidBodies) {
  const RobotModel go2 = loadRobot("go2");
  std::string what = inputErrorOf([&] { go2.bodyIndex("FL_shin"); });
  EXPECT_NE(what.find("unknown body 'FL_shin'"), std::string::npos) << what;
  EXPECT_NE(what.find("FL_calf"), std::string::npos) << what;
  EXPECT_NE(what.find("RR_thigh"), std::string::npos) << what;
  what = inputErrorOf([&] { go2.bodyIndex("FL_foot"); });
  EXPECT_NE(what.find("lumped into that body: use 'FL_calf'"), std::string::npos) << what;
  LoadOptions fixed;
  fixed.base = BaseType::Fixed;
  const RobotModel welded = loadRobot("go2", fixed);
  what = inputErrorOf([&] { welded.bodyIndex("base"); });
  EXPECT_NE(what.find("welded to the world"), std::string::npos) << what;
  what = inputErrorOf([&] { go2.body(99); });
  EXPECT_NE(what.find("1..13"), std::string::npos) << what;
}

TEST(Model, SetPiRoundTripsAndRejectsBadValues) {
  RobotModel go2 = loadRobot("go2");
  const auto j = go2.bodyIndex("FR_thigh");
  Vector10 pi = go2.pi(j);
  pi[0] += 0.25;
  pi[5] = 1e-4;  // a product of inertia
  go2.setPi(j, pi);
  EXPECT_TRUE(go2.pi(j).isApprox(pi, 1e-12));
  EXPECT_NEAR(go2.totalMass(), loadRobot("go2").totalMass() + 0.25, 1e-12);

  Vector10 massless = Vector10::Zero();
  massless[4] = massless[6] = massless[9] = 1e-3;
  go2.setPi(j, massless);
  EXPECT_TRUE(go2.pi(j).isApprox(massless, 1e-15));

  Vector10 bad = pi;
  bad[7] = std::nan("");
  EXPECT_NE(inputErrorOf([&] { go2.setPi(j, bad); }).find("FR_thigh"), std::string::npos);
  Vector10 lever_without_mass = Vector10::Zero();
  lever_without_mass[1] = 0.1;
  EXPECT_NE(inputErrorOf([&] { go2.setPi(j, lever_without_mass); }).find("m c = 0 when m = 0"),
            std::string::npos);
}

TEST(Model, WrappedModelsAreChecked) {
  const RobotModel robot = oneBodyRobot(1.0, Vector3(0, 0, 0.1), 1e-3 * Matrix3::Identity());
  EXPECT_EQ(robot.bodies()[0].name, "arm");
  EXPECT_EQ(robot.bodyIndex("hinge"), 1u);
  pinocchio::Model bad = robot.pinocchio();
  bad.inertias[1] =
      pinocchio::Inertia(std::nan(""), Vector3::Zero(), pinocchio::Symmetric3::Zero());
  std::string what = inputErrorOf([&] { RobotModel(bad, "bad.urdf"); });
  EXPECT_NE(what.find("joint 'hinge': expected finite inertial parameters"), std::string::npos)
      << what;
  what = inputErrorOf([&] { RobotModel(pinocchio::Model(), "empty.urdf"); });
  EXPECT_NE(what.find("expected at least one body"), std::string::npos) << what;
  what = inputErrorOf([&] { RobotModel(robot.pinocchio(), "arm.urdf", "", {"toe"}); });
  EXPECT_NE(what.find("contact frame 'toe'"), std::string::npos) << what;
}

TEST(Model, LoadsMjcfWithItsFreeJointAndNamesBodies) {
  TempDir dir;
  const std::string path = dir.write("two_link.xml", kMjcf);
  const RobotModel robot = loadRobot(path);
  EXPECT_TRUE(robot.hasFreeFlyer());
  EXPECT_EQ(robot.pinocchio().nq, 9);
  EXPECT_NEAR(robot.totalMass(), 2.8, 1e-12);
  EXPECT_EQ(robot.bodies().size(), 3u);
  EXPECT_EQ(robot.bodies()[0].name, "torso");
  // the hip has a pos offset: its body frame is not the joint frame, yet the link name is used
  EXPECT_EQ(robot.bodyIndex("upper"), robot.bodyIndex("hip"));
  EXPECT_EQ(robot.bodyIndex("lower"), robot.bodyIndex("knee"));
  // pi is in the joint frame: the COM 0.1 below the body frame is 0.15 below the hip axis
  EXPECT_NEAR(heft::inertia::centerOfMass(robot.pi("upper"))[2], -0.15, 1e-12);

  LoadOptions fixed;
  fixed.base = BaseType::Fixed;
  const std::string what = inputErrorOf([&] { loadRobot(path, fixed); });
  EXPECT_NE(what.find("free joint"), std::string::npos) << what;

  const std::string no_free =
      dir.write("anchored.xml", std::regex_replace(kMjcf, std::regex("<freejoint[^>]*>"), ""));
  EXPECT_FALSE(loadRobot(no_free).hasFreeFlyer());
  LoadOptions ff;
  ff.base = BaseType::FreeFlyer;
  EXPECT_TRUE(loadRobot(no_free, ff).hasFreeFlyer());
}

// ---- bad files ----------------------------------------------------------------------------------

TEST(Model, BadFilesThrowInputErrorNamingTheFile) {
  TempDir dir;
  const std::string go2 = readFile(go2Path());
  struct Case {
    std::string label, path, expected;
  };
  // urdfdom prints an error for this link's <inertial> and drops it; loading must still fail
  const std::string nan_mass =
      std::regex_replace(go2, std::regex(R"(<mass value="[^"]*")"), "<mass value=\"nan\"",
                         std::regex_constants::format_first_only);
  ASSERT_NE(nan_mass.find("<mass value=\"nan\""), std::string::npos);
  const std::vector<Case> cases = {
      {"missing", dir.path("missing.urdf"), "not found"},
      {"empty", dir.write("empty.urdf", ""), "is empty"},
      {"truncated", dir.write("truncated.urdf", go2.substr(0, go2.size() / 3)), "not a valid URDF"},
      {"nan mass", dir.write("nan_mass.urdf", nan_mass), "mass"},
      {"no links", dir.write("no_links.urdf", "<?xml version=\"1.0\"?><robot name=\"r\"></robot>"),
       "not a valid URDF"},
      {"neither", dir.write("notes.txt", "hello"), "found neither"},
      {"truncated mjcf", dir.write("truncated.xml", std::string(kMjcf).substr(0, 200)),
       "not a valid MJCF"},
      {"directory", dir.path(""), "directory"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.label);
    testing::internal::CaptureStderr();
    const std::string what = inputErrorOf([&] { loadRobot(c.path); });
    const std::string printed = testing::internal::GetCapturedStderr();
    EXPECT_NE(what.find(c.path), std::string::npos) << what;
    EXPECT_NE(what.find(c.expected), std::string::npos) << what;
    EXPECT_EQ(what.find('\n'), std::string::npos) << "one line: " << what;
    EXPECT_EQ(printed, "") << "the parser's own output is captured, not printed";
  }
}

TEST(Model, EveryShippedUrdfLoadsOrGivesInputError) {
  // Every URDF example-robot-data ships, as a free-flyer (so the root link is a body too).
  LoadOptions ff;
  ff.base = BaseType::FreeFlyer;
  std::set<std::string> failed;
  int loaded = 0;
  for (const auto& entry : fs::recursive_directory_iterator(robotsDirectory())) {
    if (entry.path().extension() != ".urdf") continue;
    const std::string rel = fs::relative(entry.path(), robotsDirectory()).string();
    try {
      const RobotModel robot = loadRobot(entry.path().string(), ff);
      EXPECT_DOUBLE_EQ(robot.totalMass(), pinocchio::computeTotalMass(robot.pinocchio())) << rel;
      ++loaded;
    } catch (const InputError& e) {
      failed.insert(rel);
      EXPECT_NE(std::string(e.what()).find(rel), std::string::npos) << e.what();
    }
  }
  EXPECT_GE(loaded, 60);
  // ur3.urdf is an empty <robot> (the xacro output without its macro call)
  EXPECT_EQ(failed, (std::set<std::string>{"ur_description/urdf/ur3.urdf"}));
}

// ---- identified set ---------------------------------------------------------------------------

TEST(IdentifiedSet, DefaultLayoutCoversEveryBody) {
  const RobotModel go2 = loadRobot("go2");
  const IdentifiedSet set = IdentifiedSet::build(go2);
  EXPECT_EQ(set.bodies.size(), 13u);
  EXPECT_EQ(set.friction.size(), 12u);  // the 1-dof joints
  EXPECT_EQ(set.actuators.size(), 12u);
  const Layout l = set.layout();
  EXPECT_EQ(l.dimension, 130);
  for (size_t i = 0; i < set.bodies.size(); ++i) EXPECT_EQ(l.body_offset[i], 10 * int(i));
  for (int o : l.friction_offset) EXPECT_EQ(o, -1);
  EXPECT_TRUE(set.priorMean().isApprox(set.stack(set.valuesFrom(go2))));
  EXPECT_EQ(set.bodies[0].prior_mean, go2.pi(1));
  // actuator prior saturation: the URDF effort limit of the joint (go2 calf: 45.43 N m)
  const auto& calf = set.actuators[2];
  EXPECT_EQ(calf.joint_name, "FL_calf_joint");
  EXPECT_DOUBLE_EQ(calf.prior_value[1], go2.pinocchio().upperEffortLimit[calf.idx_v]);
  EXPECT_EQ(calf.idx_v, 6 + 2);
}

TEST(IdentifiedSet, MasksFrictionAndActuatorBlocksStackAndUnstack) {
  const RobotModel go2 = loadRobot("go2");
  IdentifiedSetOptions options;
  options.bodies = {"FL_calf", "root_joint"};
  options.free = parseMask("mass,h");
  options.identify_friction = true;
  options.friction_joints = {"FL_calf_joint"};
  options.identify_actuators = true;
  const IdentifiedSet set = IdentifiedSet::build(go2, options);
  ASSERT_EQ(set.bodies.size(), 2u);
  EXPECT_EQ(set.bodies[1].name, "base");
  const Layout l = set.layout();
  EXPECT_EQ(l.body_size, (std::vector<int>{4, 4}));
  EXPECT_EQ(l.body_offset, (std::vector<int>{0, 4}));
  EXPECT_EQ(l.friction_offset[2], 8);  // FL_calf_joint is the third 1-dof joint
  EXPECT_EQ(l.friction_offset[0], -1);
  EXPECT_EQ(l.actuator_offset[0], 14);
  EXPECT_EQ(l.actuator_offset[11], 14 + 22);
  EXPECT_EQ(l.dimension, 8 + 6 + 24);
  EXPECT_EQ(set.summary(),
            "38 parameters: 2 bodies (log-cholesky), 1 friction and 12 actuator blocks");

  // stack -> unstack gives the values back; held entries come from `fixed`
  ParameterValues values = set.priorValues();
  values.pi[0][0] = 1.5;
  values.pi[0][3] = -0.02;
  values.friction_gamma[2][3] = 0.7;
  values.actuator[5] = heft::model::Vector2(0.9, 30.0);
  const Eigen::VectorXd x = set.stack(values);
  EXPECT_DOUBLE_EQ(x[0], 1.5);
  EXPECT_DOUBLE_EQ(x[3], -0.02);
  EXPECT_NEAR(x[8 + 3], std::log(0.7), 1e-15);
  EXPECT_NEAR(x[14 + 10 + 1], std::log(30.0), 1e-15);
  const ParameterValues back = set.unstack(x, set.priorValues());
  EXPECT_TRUE(back.pi[0].isApprox(values.pi[0], 1e-15));
  EXPECT_TRUE(back.friction_gamma[2].isApprox(values.friction_gamma[2], 1e-14));
  EXPECT_TRUE(back.actuator[5].isApprox(values.actuator[5], 1e-14));
  // a held inertia entry does not travel through x
  values.pi[0][9] = 123.0;
  const ParameterValues held = set.unstack(set.stack(values), set.priorValues());
  EXPECT_EQ(held.pi[0][9], set.bodies[0].prior_mean[9]);

  const std::string what = inputErrorOf([&] { set.unstack(Eigen::VectorXd::Zero(3), values); });
  EXPECT_NE(what.find("expected 38, got 3"), std::string::npos) << what;
}

TEST(IdentifiedSet, ThetaCoordinatesRoundTripFullyFreeBodies) {
  const RobotModel go2 = loadRobot("go2");
  for (auto p : {heft::inertia::Parametrization::LogCholesky,
                 heft::inertia::Parametrization::ExponentialEigenvalue}) {
    IdentifiedSetOptions options;
    options.bodies = {"FL_thigh", "RR_hip"};
    options.parametrization = p;
    IdentifiedSet set = IdentifiedSet::build(go2, options);
    set.bodies[1].free = parseMask("m,hx,hy,hz");  // partial: stays linear in pi
    const ParameterValues values = set.valuesFrom(go2);
    const Eigen::VectorXd theta = set.stack(values, BodyCoordinates::Theta);
    ASSERT_EQ(theta.size(), 14);
    EXPECT_TRUE(theta.head<10>().isApprox(heft::inertia::thetaFromPi(p, values.pi[0]), 1e-14));
    EXPECT_TRUE(theta.tail<4>().isApprox(values.pi[1].head<4>(), 1e-15));
    const ParameterValues back = set.unstack(theta, values, BodyCoordinates::Theta);
    EXPECT_TRUE(back.pi[0].isApprox(values.pi[0], 1e-9));
    EXPECT_TRUE(back.pi[1].isApprox(values.pi[1], 1e-15));
  }
}

TEST(IdentifiedSet, PriorCovarianceIsConditionalOnHeldEntries) {
  const RobotModel go2 = loadRobot("go2");
  IdentifiedSetOptions options;
  options.bodies = {"FL_hip"};
  IdentifiedSet set = IdentifiedSet::build(go2, options);
  // default: diagonal, mass std = 10 % of the mass
  const double m = go2.pi("FL_hip")[0];
  EXPECT_NEAR(set.priorCovariance()(0, 0), std::pow(0.1 * m, 2), 1e-15);
  EXPECT_TRUE(set.bodies[0].prior_covariance.isDiagonal());
  // a correlated prior with m and hx free: Sigma_ff - Sigma_fc Sigma_cc^-1 Sigma_cf, by hand for
  // a covariance that couples only m and Ixx (held): var(m | Ixx) = s_mm - s_mI^2 / s_II
  heft::Matrix10 S = heft::Matrix10::Identity();
  S(0, 0) = 4.0;
  S(4, 4) = 2.0;
  S(0, 4) = S(4, 0) = 1.0;
  set.bodies[0].prior_covariance = S;
  set.bodies[0].free = parseMask("m,hx");
  const Eigen::MatrixXd C = set.priorCovariance();
  ASSERT_EQ(C.rows(), 2);
  EXPECT_NEAR(C(0, 0), 4.0 - 1.0 / 2.0, 1e-15);
  EXPECT_NEAR(C(1, 1), 1.0, 1e-15);
  EXPECT_NEAR(C(0, 1), 0.0, 1e-15);
}

TEST(IdentifiedSet, ValidateRejectsBadSets) {
  const RobotModel go2 = loadRobot("go2");
  const IdentifiedSet good = IdentifiedSet::build(go2);
  EXPECT_NO_THROW(good.validate(go2));

  IdentifiedSet s = good;
  s.bodies[3].free.fill(false);
  EXPECT_NE(inputErrorOf([&] { s.validate(); }).find("at least one free entry"), std::string::npos);
  s = good;
  s.bodies[1] = s.bodies[0];
  EXPECT_NE(inputErrorOf([&] { s.validate(); }).find("listed once"), std::string::npos);
  s = good;
  s.bodies[0].prior_covariance(0, 0) = -1.0;
  EXPECT_NE(inputErrorOf([&] { s.validate(); }).find("positive definite"), std::string::npos);
  s = good;
  s.bodies[0].prior_covariance(0, 1) = 1e-3;
  EXPECT_NE(inputErrorOf([&] { s.validate(); }).find("symmetric"), std::string::npos);
  s = good;
  s.friction[0].prior_gamma[2] = 0.0;
  EXPECT_NE(inputErrorOf([&] { s.validate(); }).find("prior gamma[2]"), std::string::npos);
  s = good;
  s.actuators[0].prior_value[1] = -5;
  EXPECT_NE(inputErrorOf([&] { s.validate(); }).find("saturation"), std::string::npos);
  s = good;
  s.bodies.clear();
  EXPECT_NE(inputErrorOf([&] { s.validate(); }).find("at least one identified parameter"),
            std::string::npos);
  s = good;
  s.bodies[0].name = "FL_hip";
  EXPECT_NE(inputErrorOf([&] { s.validate(go2); }).find("body 'base'"), std::string::npos);

  IdentifiedSetOptions o;
  o.free.fill(false);
  EXPECT_NE(inputErrorOf([&] { o.validate(); }).find("IdentifiedSetOptions::free"),
            std::string::npos);
  o = IdentifiedSetOptions{};
  o.body_prior.mass_relative_std = 0;
  EXPECT_NE(inputErrorOf([&] { o.validate(); }).find("mass_relative_std"), std::string::npos);
  o = IdentifiedSetOptions{};
  o.friction_prior.gamma[0] = -1;
  EXPECT_NE(inputErrorOf([&] { o.validate(); }).find("gamma[0]"), std::string::npos);
  o = IdentifiedSetOptions{};
  o.bodies = {"base", "base"};
  EXPECT_NE(inputErrorOf([&] { o.validate(); }).find("'base' twice"), std::string::npos);
  o = IdentifiedSetOptions{};
  o.friction_joints = {"FL_calf_joint"};  // without identify_friction
  EXPECT_NE(inputErrorOf([&] { o.validate(); }).find("empty unless identify_friction"),
            std::string::npos);
  o = IdentifiedSetOptions{};
  o.bodies = {"FL_shin"};
  EXPECT_NE(inputErrorOf([&] { IdentifiedSet::build(go2, o); }).find("unknown body 'FL_shin'"),
            std::string::npos);
  o = IdentifiedSetOptions{};
  o.identify_friction = true;
  o.friction_joints = {"root_joint"};
  EXPECT_NE(inputErrorOf([&] { IdentifiedSet::build(go2, o); }).find("expected a 1-dof joint"),
            std::string::npos);
  EXPECT_NE(inputErrorOf([] { parseMask("m,mass,cx"); }).find("'cx'"), std::string::npos);
  EXPECT_EQ(toString(parseMask("inertia")), "Ixx,Ixy,Iyy,Ixz,Iyz,Izz");
  EXPECT_EQ(toString(parseMask("mass, h, inertia")), "all");
}

// ---- payload ------------------------------------------------------------------------------------

TEST(Payload, LumpedBodyMatchesHandComputation) {
  // body: 2 kg at (0, 0, 0.1), I_c = diag(0.01, 0.02, 0.03); payload: 1 kg at (0.3, 0, 0.1),
  // I_c = 0.001 * identity. By hand: m = 3, c = (0.1, 0, 0.1); offsets from c: d1 = (-0.1, 0, 0),
  // d2 = (0.2, 0, 0); parallel axis: I_c = diag(0.011, 0.021 + 2 * 0.01 + 1 * 0.04,
  // 0.031 + 0.02 + 0.04) = diag(0.011, 0.081, 0.091). About the origin, with |c|^2 = 0.02:
  // Ixx = 0.011 + 3 * 0.01, Iyy = 0.081 + 3 * 0.02, Izz = 0.091 + 3 * 0.01, Ixz = -3 * 0.01.
  const RobotModel robot =
      oneBodyRobot(2.0, Vector3(0, 0, 0.1), Eigen::Vector3d(0.01, 0.02, 0.03).asDiagonal());
  Payload payload;
  payload.mass = 1.0;
  payload.com = Vector3(0.3, 0, 0.1);
  payload.inertia = 0.001 * Matrix3::Identity();
  const RobotModel loaded = attachPayload(robot, "arm", payload);
  Vector10 expected;
  expected << 3.0, 0.3, 0.0, 0.3, 0.041, 0.0, 0.141, -0.03, 0.0, 0.121;
  const Vector10 pi = loaded.pi("arm");
  for (int i = 0; i < 10; ++i) EXPECT_NEAR(pi[i], expected[i], 1e-14) << i;
  EXPECT_NEAR(loaded.totalMass(), robot.totalMass() + 1.0, 1e-14);
  EXPECT_EQ(robot.pi("arm")[0], 2.0);  // the original is untouched
}

TEST(Payload, PlacementRotatesIntoTheBodyFrame) {
  // a payload frame turned 90 degrees about z and moved by p: c = R c_P + p, I = R I_P R^T
  pinocchio::SE3 placement(Eigen::AngleAxisd(M_PI / 2, Vector3::UnitZ()).toRotationMatrix(),
                           Vector3(0.1, 0.2, 0.3));
  const Payload p = Payload::fromPlacement(placement, 0.5, Vector3(0.1, 0, 0),
                                           Eigen::Vector3d(1e-3, 2e-3, 3e-3).asDiagonal());
  EXPECT_TRUE(p.com.isApprox(Vector3(0.1, 0.3, 0.3), 1e-14));
  EXPECT_TRUE(p.inertia.isApprox(Matrix3(Eigen::Vector3d(2e-3, 1e-3, 3e-3).asDiagonal()), 1e-14));

  const RobotModel go2 = loadRobot("go2");
  const RobotModel heavy = attachPayload(go2, "base", p);
  EXPECT_NEAR(heavy.totalMass(), go2.totalMass() + 0.5, 1e-12);
  // Pinocchio's own lumped sum agrees
  const pinocchio::Inertia sum =
      go2.pinocchio().inertias[1] +
      pinocchio::Inertia(p.mass, p.com, pinocchio::Symmetric3(Matrix3(p.inertia)));
  EXPECT_TRUE(heavy.pi(1).isApprox(sum.toDynamicParameters(), 1e-12));
}

TEST(Payload, RejectsUnphysicalPayloadsAndAcceptsPointMasses) {
  const RobotModel go2 = loadRobot("go2");
  Payload point;
  point.mass = 2.0;
  point.com = Vector3(0.05, 0, 0.02);
  EXPECT_NO_THROW(attachPayload(go2, "base", point));  // I_c = 0: a point mass
  Payload p = point;
  p.mass = -1;
  EXPECT_NE(inputErrorOf([&] { attachPayload(go2, "base", p); }).find("payload mass"),
            std::string::npos);
  p = point;
  p.inertia = Eigen::Vector3d(0.01, 0.01, 0.05).asDiagonal();  // 0.01 + 0.01 < 0.05
  EXPECT_NE(inputErrorOf([&] { attachPayload(go2, "base", p); }).find("triangle"),
            std::string::npos);
  EXPECT_NE(inputErrorOf([&] { attachPayload(go2, "FL_toe", point); }).find("unknown body"),
            std::string::npos);
}

// ---- the CLI ----------------------------------------------------------------------------------

namespace {

std::string heftBinary() {
  const char* env = std::getenv("HEFT_BINARY_DIR");
  return std::string(env != nullptr ? env : HEFT_BINARY_DIR) + "/bin/heft";
}

struct HeftRun {
  int code;
  std::string out, err;
};

HeftRun runHeft(const std::string& args) {
  TempDir dir;
  const std::string out = dir.path("out"), err = dir.path("err");
  const int status = std::system((heftBinary() + " " + args + " >" + out + " 2>" + err).c_str());
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, readFile(out), readFile(err)};
}

}  // namespace

TEST(InfoCommand, JsonTotalMassMatchesPinocchio) {
  ASSERT_TRUE(fs::exists(heftBinary())) << heftBinary() << " not built";
  const HeftRun run = runHeft("info go2 --json");
  ASSERT_EQ(run.code, 0) << run.err;
  EXPECT_EQ(run.err, "");
  const nlohmann::json j = nlohmann::json::parse(run.out);
  const RobotModel go2 = loadRobot("go2");
  EXPECT_DOUBLE_EQ(j.at("total_mass").get<double>(), pinocchio::computeTotalMass(go2.pinocchio()));
  ASSERT_EQ(j.at("bodies").size(), 13u);
  double sum = 0;
  for (const auto& b : j.at("bodies")) {
    for (const char* key : {"name", "mass", "com", "inertia", "consistent", "violations"})
      EXPECT_TRUE(b.contains(key)) << key;
    sum += b.at("mass").get<double>();
    EXPECT_EQ(b.at("consistent").get<bool>(), b.at("violations").empty());
  }
  EXPECT_NEAR(sum, j.at("total_mass").get<double>(), 1e-12);
  EXPECT_EQ(j.at("bodies")[0].at("name"), "base");
  EXPECT_EQ(j.at("bodies")[0].at("inertia").size(), 3u);
}

TEST(InfoCommand, ListsTheLoopsOfAUrdfLoopFileAndOfAnMjcf) {
  ASSERT_TRUE(fs::exists(heftBinary())) << heftBinary() << " not built";
  const HeftRun urdf = runHeft("info " + std::string(HEFT_SOURCE_DIR) +
                               "/data/robots/fourbar_leg.urdf --fixed-base --json");
  ASSERT_EQ(urdf.code, 0) << urdf.err;
  const nlohmann::json loops = nlohmann::json::parse(urdf.out).at("loops");
  ASSERT_EQ(loops.size(), 1u);
  EXPECT_EQ(loops[0].at("name"), "knee_linkage");
  EXPECT_EQ(loops[0].at("dimension"), 2);
  EXPECT_EQ(loops[0].at("cycle"), nlohmann::json::array({"knee", "knee_motor", "coupler_hinge"}));
  const HeftRun mjcf = runHeft("info fourbar_leg");
  ASSERT_EQ(mjcf.code, 0) << mjcf.err;
  EXPECT_NE(mjcf.out.find("loop      coupler_shank: coupler_hinge to knee, 2 constrained "
                          "directions, joints knee knee_motor coupler_hinge\n"),
            std::string::npos)
      << mjcf.out;
  EXPECT_EQ(nlohmann::json::parse(runHeft("info go2 --json").out).at("loops").size(), 0u);
}

TEST(InfoCommand, BadFileGivesExitCodeTwoAndOneLine) {
  ASSERT_TRUE(fs::exists(heftBinary())) << heftBinary() << " not built";
  TempDir dir;
  const std::string truncated = dir.write("truncated.urdf", readFile(go2Path()).substr(0, 2000));
  for (const std::string& path : {dir.path("missing.urdf"), truncated}) {
    SCOPED_TRACE(path);
    const HeftRun run = runHeft("info " + path);
    EXPECT_EQ(run.code, 2);
    EXPECT_EQ(run.out, "");
    ASSERT_FALSE(run.err.empty());
    EXPECT_EQ(std::count(run.err.begin(), run.err.end(), '\n'), 1) << run.err;
    EXPECT_NE(run.err.find(path), std::string::npos) << run.err;
    EXPECT_EQ(run.err.rfind("heft info: error: ", 0), 0u) << run.err;
  }
  const HeftRun unknown = runHeft("info go3");
  EXPECT_EQ(unknown.code, 2);
  EXPECT_NE(unknown.err.find("go2"), std::string::npos);
}

namespace {

// A log without the gripper: the fingers are locked, their links lumped into the hand's body.
TEST(LockJoints, LockedJointsAreRemovedAndTheirLinksLumpedIntoTheParentBody) {
  const RobotModel panda = loadRobot("panda");
  const RobotModel arm =
      lockJoints(panda, {{"panda_finger_joint1", 0.02}, {"panda_finger_joint2", 0.02}});
  EXPECT_EQ(arm.pinocchio().nv, panda.pinocchio().nv - 2);
  EXPECT_NEAR(arm.totalMass(), panda.totalMass(), 1e-12 * panda.totalMass());
  EXPECT_EQ(arm.source(), panda.source());
  const Body& hand = arm.body(arm.bodyIndex("panda_link7"));
  int fingers = 0;
  for (const std::string& l : hand.lumped_links)
    fingers += l == "panda_leftfinger" || l == "panda_rightfinger" ? 1 : 0;
  EXPECT_EQ(fingers, 2);
  EXPECT_EQ(lockJoints(panda, {}).pinocchio().nv, panda.pinocchio().nv);

  try {
    lockJoints(panda, {{"panda_joint9", 0.0}});
    FAIL() << "expected an InputError";
  } catch (const heft::InputError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("locked_joints: \"panda_joint9\" is not a 1-DoF joint of panda"),
              std::string::npos)
        << what;
    EXPECT_NE(what.find("panda_finger_joint1"), std::string::npos) << what;
  }
  EXPECT_THROW(lockJoints(panda, {{"panda_finger_joint1", 0.0}, {"panda_finger_joint1", 0.0}}),
               heft::InputError);
}

}  // namespace

// A log names the sole corners of TALOS: points defined as a frame plus an offset resolve to that
// frame; a bare frame name resolves to its origin; anything else is one error naming the entry.
TEST(ContactPoints, ResolveDefinedPointsAndFrames) {
  const RobotModel talos = loadRobot("talos");
  const pinocchio::Model& model = talos.pinocchio();
  std::vector<ContactPoint> defined;
  for (const char* side : {"left", "right"}) {
    for (const double x : {0.1, -0.1})
      for (const double y : {0.065, -0.065})
        defined.push_back({std::string(side) + "_corner_" + std::to_string(defined.size()),
                           std::string(side) + "_sole_link", Vector3(x, y, 0.01)});
  }
  std::vector<std::string> names;
  for (const auto& p : defined) names.push_back(p.name);
  names.push_back("left_sole_link");
  const auto points = resolveContactPoints(model, names, defined, "contacts/names");
  ASSERT_EQ(points.size(), 9u);
  EXPECT_EQ(points[3].frame, "left_sole_link");
  EXPECT_EQ(points[3].offset, Vector3(-0.1, -0.065, 0.01));
  EXPECT_EQ(points[8].frame, "left_sole_link");
  EXPECT_EQ(points[8].offset, Vector3::Zero());

  const std::string unknown = inputErrorOf(
      [&] { resolveContactPoints(model, {"left_sole_front_left"}, {}, "contacts/names"); });
  EXPECT_NE(unknown.find("contacts/names[0]"), std::string::npos) << unknown;
  EXPECT_NE(unknown.find("left_sole_front_left"), std::string::npos) << unknown;
  const std::string bad_frame = inputErrorOf([&] {
    resolveContactPoints(model, {"p"}, {{"p", "no_such_link", Vector3::Zero()}}, "contact_points");
  });
  EXPECT_NE(bad_frame.find("no_such_link"), std::string::npos) << bad_frame;
  const std::string twice = inputErrorOf([&] {
    resolveContactPoints(model, {"left_sole_link", "left_sole_link"}, {}, "c");
  });
  EXPECT_NE(twice.find("c[1]"), std::string::npos) << twice;
}

// Four sole corners make a flat foot; one point, or points on a line, make a point contact.
TEST(ContactPoints, CornersOfASoleMakeAFlatFoot) {
  std::vector<ContactPoint> points = {
      {"a", "sole", Vector3(0.1, 0.06, 0)},      {"b", "sole", Vector3(0.1, -0.06, 0)},
      {"foot", "FL_foot", Vector3(0, 0, -0.02)}, {"c", "sole", Vector3(-0.1, 0.06, 0)},
      {"d", "sole", Vector3(-0.1, -0.06, 0)},    {"e", "edge", Vector3(0.1, 0, 0)},
      {"f", "edge", Vector3(-0.1, 0, 0)},        {"g", "edge", Vector3(0.0, 0, 0)}};
  const auto frames = groupContactFrames(points);
  ASSERT_EQ(frames.size(), 3u);
  EXPECT_EQ(frames[0].frame, "sole");
  EXPECT_TRUE(frames[0].flat);
  EXPECT_EQ(frames[0].points, (std::vector<int>{0, 1, 3, 4}));
  EXPECT_EQ(frames[1].frame, "FL_foot");
  EXPECT_FALSE(frames[1].flat);
  EXPECT_EQ(frames[1].offset, Vector3(0, 0, -0.02));
  EXPECT_FALSE(frames[2].flat);  // collinear: a line contact is not a flat foot
  EXPECT_NEAR(frames[2].offset.norm(), 0.0, 1e-15);

  // the plane of the sole's corners: half the 0.2 x 0.12 rectangle; (b - a) x (c - a) points down
  const LargestTriangle sole = largestTriangle({Vector3(0.1, 0.06, 0), Vector3(0.1, -0.06, 0),
                                                Vector3(-0.1, 0.06, 0), Vector3(-0.1, -0.06, 0)});
  EXPECT_NEAR(sole.area, 0.012, 1e-15);
  EXPECT_NEAR((sole.normal - Vector3(0, 0, -1)).norm(), 0.0, 1e-15);
  const LargestTriangle edge =
      largestTriangle({Vector3(0.1, 0, 0), Vector3(-0.1, 0, 0), Vector3(0, 0, 0)});
  EXPECT_EQ(edge.area, 0.0);
  EXPECT_EQ(edge.normal, Vector3::UnitZ());
}

// ---- closed loops ---------------------------------------------------------------------------

namespace heft::model {
namespace {

const std::string kFourBarPath = std::string(HEFT_SOURCE_DIR) + "/data/robots/fourbar_leg.xml";

// The four-bar knee leg: MuJoCo's connect equality becomes a planar loop (2 rows) over the knee,
// the knee motor and the coupler's hinge; closing it for a motor angle keeps the coupler's
// length, checked with the linkage's plane geometry (hinges about y: (x, z) turns to
// (x cos t + z sin t, -x sin t + z cos t)).
TEST(Loops, FourBarLegLoadsItsLoopFromTheMjcf) {
  const RobotModel leg = loadRobot(kFourBarPath);
  ASSERT_EQ(leg.loops().size(), 1u);
  const LoopClosure& loop = leg.loops()[0];
  EXPECT_EQ(loop.dimension, 2);
  const pinocchio::Model& m = leg.pinocchio();
  std::set<std::string> cycle;
  for (pinocchio::JointIndex j : loop.cycle) cycle.insert(m.names[j]);
  EXPECT_EQ(cycle, (std::set<std::string>{"knee", "knee_motor", "coupler_hinge"}));
  EXPECT_LE(loopResidual(leg, pinocchio::neutral(m)).cwiseAbs().maxCoeff(), 1e-12);
  const double crank = 0.04, lever = 0.05, thigh = 0.3;
  const double coupler = std::hypot(crank - lever, thigh);
  for (double motor : {-0.6, -0.2, 0.3, 0.6}) {
    Eigen::VectorXd q = pinocchio::neutral(m);
    q[m.joints[m.getJointId("hip")].idx_q()] = 0.4;
    q[m.joints[m.getJointId("knee_motor")].idx_q()] = motor;
    std::vector<bool> fixed(m.nv, false);
    fixed[m.joints[m.getJointId("hip")].idx_v()] = true;
    fixed[m.joints[m.getJointId("knee_motor")].idx_v()] = true;
    EXPECT_LE(closeLoops(leg, q, fixed), RobotModel::closureTolerance());
    EXPECT_DOUBLE_EQ(q[m.joints[m.getJointId("knee_motor")].idx_q()], motor);  // held
    const double knee = q[m.joints[m.getJointId("knee")].idx_q()];
    const Eigen::Vector2d crank_tip(crank * std::cos(motor), -crank * std::sin(motor));
    const Eigen::Vector2d lever_tip(lever * std::cos(knee), -thigh - lever * std::sin(knee));
    EXPECT_NEAR((crank_tip - lever_tip).norm(), coupler, 1e-9) << "motor " << motor;
    // the knee follows the motor at about crank / lever
    EXPECT_NEAR(knee / motor, crank / lever, 0.1) << "motor " << motor;
  }
}

// On a floating base the planar loop keeps its two rows: the base's rotation turns the open
// offset with the anchors, which is no direction the loop constrains (its columns are not in the
// directions' Gram matrix; with them the loop had three rows, one of them identically zero when
// closed).
TEST(Loops, APlanarLoopOnAFloatingBaseKeepsTwoRows) {
  LoadOptions floating;
  floating.base = BaseType::FreeFlyer;
  const RobotModel leg =
      loadRobot(std::string(HEFT_SOURCE_DIR) + "/data/robots/fourbar_leg.urdf", floating);
  ASSERT_TRUE(leg.hasFreeFlyer());
  ASSERT_EQ(leg.loops().size(), 1u);
  EXPECT_EQ(leg.loops()[0].dimension, 2);
}

// Explicit anchors (sites) that no configuration brings together: the loader names the loop, the
// distance it stays at and the joints it tried.
TEST(Loops, ALoopThatCannotCloseIsRefusedBeforeAnythingRuns) {
  TempDir dir;
  const std::string path = dir.write("long_rod.xml", test::fourBarWithLongRod());
  const std::string what = inputErrorOf([&] { loadRobot(path); });
  EXPECT_NE(what.find("long_rod.xml"), std::string::npos) << what;
  EXPECT_NE(what.find("cannot close"), std::string::npos) << what;
  EXPECT_NE(what.find("m apart"), std::string::npos) << what;
  EXPECT_NE(what.find("coupler_hinge"), std::string::npos) << what;
}

TEST(Loops, LockingJointsOfAClosedLoopRobotIsRefused) {
  const RobotModel leg = loadRobot(kFourBarPath);
  const std::string what = inputErrorOf([&] { lockJoints(leg, {{"hip", 0.0}}); });
  EXPECT_NE(what.find("closed loops"), std::string::npos) << what;
}

// The URDF of the same leg with its loop in the loop file beside it: the same bodies and the same
// closure as the MJCF (the loop's name is the file's; MJCF's is the two bodies').
TEST(Loops, AUrdfLoopFileGivesTheMjcfLoop) {
  const RobotModel mjcf = loadRobot(kFourBarPath);
  LoadOptions fixed_base;
  fixed_base.base = BaseType::Fixed;
  const RobotModel urdf =
      loadRobot(std::string(HEFT_SOURCE_DIR) + "/data/robots/fourbar_leg.urdf", fixed_base);
  ASSERT_EQ(urdf.loops().size(), 1u);
  const LoopClosure& loop = urdf.loops()[0];
  EXPECT_EQ(loop.name, "knee_linkage");
  EXPECT_EQ(loop.dimension, mjcf.loops()[0].dimension);
  EXPECT_EQ(loopJointNames(urdf), loopJointNames(mjcf));
  const pinocchio::Model &mu = urdf.pinocchio(), &mm = mjcf.pinocchio();
  ASSERT_EQ(mu.nq, mm.nq);
  for (const std::string body : {"thigh", "shank", "crank", "coupler"})
    EXPECT_LE((urdf.pi(body) - mjcf.pi(body)).norm(), 1e-12) << body;
  // the anchors in their joints' frames
  const LoopClosure& other = mjcf.loops()[0];
  EXPECT_EQ(mu.names[loop.joint1], mm.names[other.joint1]);
  EXPECT_EQ(mu.names[loop.joint2], mm.names[other.joint2]);
  EXPECT_LE((mu.frames[loop.frame1].placement.translation() -
             mm.frames[other.frame1].placement.translation())
                .norm(),
            1e-12);
  EXPECT_LE((mu.frames[loop.frame2].placement.translation() -
             mm.frames[other.frame2].placement.translation())
                .norm(),
            1e-12);
  // the knee each closes the loop at
  for (double motor : {-0.6, 0.3}) {
    auto knee = [&](const RobotModel& robot) {
      const pinocchio::Model& m = robot.pinocchio();
      Eigen::VectorXd q = pinocchio::neutral(m);
      q[m.joints[m.getJointId("knee_motor")].idx_q()] = motor;
      std::vector<bool> held(m.nv, false);
      held[m.joints[m.getJointId("hip")].idx_v()] = true;
      held[m.joints[m.getJointId("knee_motor")].idx_v()] = true;
      EXPECT_LE(closeLoops(robot, q, held), RobotModel::closureTolerance());
      return q[m.joints[m.getJointId("knee")].idx_q()];
    };
    EXPECT_NEAR(knee(urdf), knee(mjcf), 1e-8) << "motor " << motor;
  }
}

// Every way a loop file can be wrong is an InputError naming the loop file and what was expected.
TEST(Loops, ABadLoopFileNamesTheFileAndTheField) {
  std::ifstream in(std::string(HEFT_SOURCE_DIR) + "/data/robots/fourbar_leg.urdf");
  const std::string urdf((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  LoadOptions fixed_base;
  fixed_base.base = BaseType::Fixed;
  auto loop = [](const std::string& anchors) {
    return "<loops><loop name=\"l\">" + anchors + "</loop></loops>";
  };
  const std::vector<std::pair<std::string, std::string>> cases = {
      {loop(R"(<anchor link="rod" xyz="0 0 0"/><anchor link="shank"/>)"),
       "anchor 1: link 'rod' is not a link of the robot"},
      {loop(R"(<anchor link="coupler" xyz="0 0"/><anchor link="shank"/>)"),
       "expected three finite numbers"},
      {loop(R"(<anchor link="coupler" xyz="0.01 0 -0.3"/>)"), "expected two <anchor> elements"},
      {loop(R"(<anchor link="coupler"/><anchor link="shank" xyz="0 0 0"/>)"),
       "anchor 1: expected xyz"},
      {loop(R"(<anchor xyz="0 0 0"/><anchor link="shank"/>)"), "expected a link attribute"},
      {loop(R"(<anchor link="coupler" xyz="0.01 0 -0.3"/><anchr link="shank"/>)"),
       "unexpected element <anchr>"},
      {"<loops><loop><anchor link=\"coupler\"", "not well-formed XML"},
      {"<loop/>", "expected one root element <loops>"},
      {"<loops/>", "expected at least one <loop>"},
      // a rod 0.5 m long where 0.3 m fits: the loader's closure check, blamed on the loop file
      {loop(R"(<anchor link="coupler" xyz="0.01 0 -0.5"/><anchor link="shank" xyz="0.05 0 0"/>)"),
       "cannot close"},
  };
  for (const auto& [text, expected] : cases) {
    TempDir dir;
    const std::string path = dir.write("leg.urdf", urdf);
    const std::string loops = dir.write("leg.loops.xml", text);
    const std::string what = inputErrorOf([&] { loadRobot(path, fixed_base); });
    EXPECT_NE(what.find("loop file '" + loops + "'"), std::string::npos) << what;
    EXPECT_NE(what.find(expected), std::string::npos) << text << "\n" << what;
  }
}

}  // namespace
}  // namespace heft::model
