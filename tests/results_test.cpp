// heft::results: the URDF an estimate is written into. Links nobody identified are copied as they
// were, identified bodies keep the project's consistency margin, and the lumped-body split never
// makes a point or line mass.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "heft/common/error.hpp"
#include "heft/inertia/inertia.hpp"
#include "heft/io/urdf_writer.hpp"
#include "heft/model/model.hpp"
#include "heft/results/body_estimate.hpp"
#include "heft/results/truth.hpp"
#include "heft/results/urdf.hpp"
#include "support/scratch.hpp"

namespace heft::results {
namespace {

namespace fs = std::filesystem;

std::string readAll(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

model::RobotModel go2() {
  model::LoadOptions load;
  load.base = model::BaseType::FreeFlyer;
  return model::loadRobot("go2", load);
}

// A base estimate on the boundary of physical consistency: principal moments about the COM with
// D1 + D2 = D3 (a flat plate), heavier than the nominal base, its COM moved.
Vector10 flatBase(const model::RobotModel& robot) {
  const Vector10 nominal = robot.pi(robot.bodyIndex("base"));
  const Vector3 com = inertia::centerOfMass(nominal) + Vector3(0.04, 0.02, 0.0);
  return inertia::piFromMassComInertia(inertia::mass(nominal) + 4.6, com,
                                       Vector3(0.02, 0.09, 0.11).asDiagonal().toDenseMatrix());
}

std::vector<std::string> baseLinks(const model::RobotModel& robot) {
  std::vector<std::string> links{"base"};
  for (const std::string& l : robot.body(robot.bodyIndex("base")).lumped_links) links.push_back(l);
  return links;
}

TEST(IdentifiedUrdf, AnEstimateWithoutTheMarginIsRefusedNamingTheBody) {
  const model::RobotModel robot = go2();
  const Vector10 pi = flatBase(robot);
  EXPECT_FALSE(inertia::checkConsistencyMargin(pi).consistent);
  const std::vector<BodyEstimate> bodies{makeBodyEstimate("base", robot.pi(robot.bodyIndex("base")),
                                                          Vector10::Ones(), pi,
                                                          Eigen::MatrixXd::Zero(10, 10))};
  std::vector<std::string> warnings;
  const fs::path out = test::scratchPath("results", "refused") / "robot.urdf";
  fs::create_directories(out.parent_path());
  try {
    writeIdentifiedUrdf(robot, bodies, out.string(), false, warnings);
    FAIL() << "expected an InputError";
  } catch (const InputError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("body base"), std::string::npos) << what;
    EXPECT_NE(what.find("margin"), std::string::npos) << what;
  }
  EXPECT_FALSE(fs::exists(out));
}

// A body the data drove onto the boundary (go2 with a payload on its belly: the base's own link
// cannot carry the change, so the base's links share it). Moved inside the margin, it is written;
// every link written keeps the margin (none a point or line mass, the rotors included), the base's
// links sum to the estimate, and every other link is the input's.
TEST(IdentifiedUrdf, ABodyOnTheBoundaryMovedInsideIsWrittenWithoutDegenerateLinks) {
  const model::RobotModel robot = go2();
  const Vector10 nominal = robot.pi(robot.bodyIndex("base"));
  Vector10 pi = flatBase(robot);
  std::vector<std::string> warnings;
  ASSERT_TRUE(moveInsideMargin("base", pi, nominal, warnings));
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("moved inside the consistency margin"), std::string::npos);
  EXPECT_TRUE(inertia::checkConsistencyMargin(pi).consistent);
  // a small step: a ~ 1e-4 of the way to the prior
  EXPECT_LT((pi - flatBase(robot)).cwiseAbs().maxCoeff(),
            1e-3 * flatBase(robot).cwiseAbs().maxCoeff());

  const std::vector<BodyEstimate> bodies{
      makeBodyEstimate("base", nominal, Vector10::Ones(), pi, Eigen::MatrixXd::Zero(10, 10))};
  ASSERT_TRUE(bodies[0].consistent);
  const fs::path out = test::scratchPath("results", "boundary") / "robot.urdf";
  fs::create_directories(out.parent_path());
  warnings.clear();
  EXPECT_EQ(writeIdentifiedUrdf(robot, bodies, out.string(), false, warnings), "written");
  ASSERT_FALSE(warnings.empty());
  EXPECT_NE(warnings[0].find("share it"), std::string::npos) << warnings[0];

  const auto before = io::readUrdfInertials(robot.source());
  const auto after = io::readUrdfInertials(out.string());
  const std::vector<std::string> changed = baseLinks(robot);
  for (const auto& [link, inertial] : after) {
    const bool lumped = std::find(changed.begin(), changed.end(), link) != changed.end();
    if (lumped && before.at(link).mass > 0) {  // massless frames (imu, radar) stay as they were
      const inertia::ConsistencyReport report = inertia::checkConsistencyMargin(inertial.pi());
      EXPECT_TRUE(report.consistent) << link << ": " << report.violations.front().condition << " "
                                     << report.violations.front().detail;
    } else {
      const io::UrdfInertial& input = before.at(link);
      EXPECT_EQ(inertial.mass, input.mass) << link;
      EXPECT_EQ(inertial.xyz, input.xyz) << link;
      EXPECT_EQ(inertial.rpy, input.rpy) << link;
      EXPECT_EQ(inertial.inertia, input.inertia) << link;
    }
  }
  model::LoadOptions load;
  load.base = model::BaseType::FreeFlyer;
  const model::RobotModel written = model::loadRobot(out.string(), load);
  const Vector10 lumped = written.pi(written.bodyIndex("base"));
  EXPECT_LT((lumped - pi).cwiseAbs().maxCoeff(), 1e-9 * pi.cwiseAbs().maxCoeff())
      << "written " << lumped.transpose() << "\nestimate " << pi.transpose();
}

// A link nobody identified whose URDF inertial sits at a rounding-level violation (a flat disc:
// ixx - iyy - izz = 1e-18 kg m^2) is the input's business: copied byte for byte, with a warning.
TEST(IdentifiedUrdf, ANominalLinkAtARoundingMarginIsCopiedUnchangedWithAWarning) {
  const model::RobotModel robot = go2();
  std::string text = readAll(robot.source());
  const std::string disc =
      "ixx=\"0.000200000000000001\" ixy=\"0.0\" ixz=\"0.0\" iyy=\"0.0001\" iyz=\"0.0\" "
      "izz=\"0.0001\"";
  const std::size_t link = text.find("<link name=\"FL_calf_rotor\">");
  ASSERT_NE(link, std::string::npos);
  const std::size_t begin = text.find("ixx=", link), end = text.find("/>", begin);
  text.replace(begin, end - begin, disc);
  const fs::path dir = test::scratchPath("results", "nominal");
  fs::create_directories(dir);
  const fs::path input = dir / "go2.urdf";
  std::ofstream(input) << text;
  model::LoadOptions load;
  load.base = model::BaseType::FreeFlyer;
  const model::RobotModel edited = model::loadRobot(input.string(), load);
  ASSERT_FALSE(
      inertia::checkConsistency(io::readUrdfInertials(input.string()).at("FL_calf_rotor").pi(), 0.0)
          .consistent);

  const Vector10 nominal = edited.pi(edited.bodyIndex("base"));
  Vector10 pi = nominal;
  pi.head<4>() *= 1.2;  // a heavier base, its own link can carry it
  const std::vector<BodyEstimate> bodies{
      makeBodyEstimate("base", nominal, Vector10::Ones(), pi, Eigen::MatrixXd::Zero(10, 10))};
  std::vector<std::string> warnings;
  const fs::path out = dir / "robot.urdf";
  EXPECT_EQ(writeIdentifiedUrdf(edited, bodies, out.string(), false, warnings), "written");
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("link FL_calf_rotor (not identified, copied unchanged)"),
            std::string::npos)
      << warnings[0];
  const std::string written = readAll(out);
  const std::size_t at = written.find("<link name=\"FL_calf_rotor\">");
  ASSERT_NE(at, std::string::npos);
  EXPECT_EQ(written.substr(at, 300), text.substr(link, 300));
}

TEST(BodyEstimate, NearTheBoundaryIsAWarningAndWithoutTheMarginIsNotConsistent) {
  const Vector10 solid = inertia::piFromMassComInertia(
      1.0, Vector3::Zero(), Vector3(1e-3, 1e-3, 1.5e-3).asDiagonal().toDenseMatrix());
  const Vector10 plate = inertia::piFromMassComInertia(
      1.0, Vector3::Zero(), Vector3(1e-3, 1e-3, 2e-3 * (1 - 1e-4)).asDiagonal().toDenseMatrix());
  const Vector10 point = inertia::piFromMassComInertia(
      1.0, Vector3::Zero(), Vector3(1e-3, 1e-3, 2e-3 * (1 - 1e-8)).asDiagonal().toDenseMatrix());
  const Eigen::MatrixXd zero = Eigen::MatrixXd::Zero(10, 10);
  const std::vector<BodyEstimate> bodies{
      makeBodyEstimate("solid", solid, Vector10::Ones(), solid, zero),
      makeBodyEstimate("plate", plate, Vector10::Ones(), plate, zero),
      makeBodyEstimate("flat", point, Vector10::Ones(), point, zero)};
  EXPECT_TRUE(bodies[0].consistent);
  EXPECT_TRUE(bodies[1].consistent);
  // (D1 + D2 - D3) / (D1 + D2 + D3) with D = (1, 1, 2 (1 - 1e-4)) 1e-3
  EXPECT_NEAR(bodies[1].relative_margin, 2e-4 / (4 - 2e-4), 1e-12);
  // strictly consistent (checkConsistency at 0), but below the project's margin
  EXPECT_TRUE(inertia::checkConsistency(point, 0.0).consistent);
  EXPECT_FALSE(bodies[2].consistent);
  std::vector<std::string> warnings;
  appendNearBoundaryWarnings(bodies, warnings);
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("body plate: near the boundary"), std::string::npos) << warnings[0];
}

}  // namespace
}  // namespace heft::results

namespace heft::results {
namespace {

// Reconstructed contact forces against a truth group: a point by its name, a flat foot (a frame)
// against the sum of the truth's corners on it (the log's contacts group puts them there), each
// step's force against the mean of the truth's samples in the step, the last knot (no step) not
// scored; errors, relative error and contact-state agreement by hand.
TEST(ContactForceErrors, PointsByNameFlatFeetAgainstTheSumOfTheirCornersOverEachStep) {
  io::Log log;
  io::TruthSeries truth;
  truth.time = Eigen::Vector4d(0.0, 0.005, 0.01, 0.015);
  truth.contact_names = {"foot", "sole_a", "sole_b"};
  truth.contact_forces.resize(4, 9);
  truth.contact_forces << 0, 0, 10, 1, 0, 20, -1, 0, 30,  //
      0, 0, 12, 1, 0, 20, -1, 0, 30,                      //
      0, 0, 12, 0, 0, 25, 0, 0, 25,                       //
      0, 0, 12, 0, 0, 25, 0, 0, 25;
  log.truth = truth;
  io::ContactSeries contacts;
  contacts.time = truth.time;
  contacts.names = {"foot", "sole_a", "sole_b"};
  contacts.flags = io::FlagMatrix::Zero(4, 3);
  contacts.frames = {"foot", "sole", "sole"};
  contacts.offsets = Eigen::MatrixXd::Zero(3, 3);
  log.contacts = contacts;
  // steps of 10 ms: the truth's means over them are foot (0, 0, 11), (0, 0, 12) and sole
  // (0, 0, 50), (0, 0, 50); the knot at 0.02 s has no step
  const Eigen::Vector3d time(0.0, 0.01, 0.02);
  Eigen::MatrixXd force(3, 6);
  force << 0, 0, 11, 0, 0, 50,  //
      0, 0, 13, 0, 3, 46,       //
      9, 9, 9, 9, 9, 9;
  const auto e = contactForceErrors(log, time, {"foot", "sole"}, force, 1.0);
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(e->knots, 2);
  EXPECT_EQ(e->points, 2);
  // differences: foot (0,0,0), (0,0,1); sole (0,0,0), (0,3,-4): squared 1 + 25 over 4 pairs
  EXPECT_NEAR(e->rmse, std::sqrt(26.0 / 4), 1e-12);
  const double reference = 121 + 2500 + 144 + 2500;
  EXPECT_NEAR(e->relative, std::sqrt(26.0 / reference), 1e-12);
  EXPECT_EQ(e->state_agreement, 1.0);
  EXPECT_FALSE(contactForceErrors(log, time, {"hand"}, force.leftCols(3), 1.0).has_value());
  log.truth->contact_forces.setZero();  // the truth pushes nowhere while the estimate does
  const auto idle = contactForceErrors(log, time, {"foot"}, force.leftCols(3), 1.0);
  ASSERT_TRUE(idle.has_value());
  EXPECT_EQ(idle->state_agreement, 0.0);
}

}  // namespace
}  // namespace heft::results
