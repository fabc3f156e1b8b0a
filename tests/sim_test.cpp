// heft::sim: the MuJoCo model equals the Pinocchio model body for body, payload lumping matches
// MuJoCo's subtree mass and COM, the truth is consistent with the equations of motion, every
// scenario runs (short versions here, full durations in sim_long_test.cpp), one seed gives one
// file.
#include <gtest/gtest.h>
#include <mujoco/mujoco.h>

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <string>
#include <thread>
#include <vector>

#include <pinocchio/algorithm/center-of-mass.hpp>
#include <pinocchio/algorithm/crba.hpp>
#include <pinocchio/algorithm/frames.hpp>
#include <pinocchio/algorithm/jacobian.hpp>
#include <pinocchio/algorithm/joint-configuration.hpp>
#include <pinocchio/algorithm/kinematics.hpp>
#include <pinocchio/algorithm/rnea.hpp>

#include "heft/common/error.hpp"
#include "heft/inertia/inertia.hpp"
#include "heft/io/log_io.hpp"
#include "heft/io/validation.hpp"
#include "heft/model/payload.hpp"
#include "heft/sim/mujoco_errors.hpp"
#include "heft/sim/random.hpp"
#include "heft/sim/scenario.hpp"

namespace fs = std::filesystem;
using heft::Matrix3;
using heft::Vector10;
using heft::Vector3;
namespace sim = heft::sim;
namespace model = heft::model;

namespace {

fs::path scratch(const std::string& name) {
  const fs::path dir = fs::temp_directory_path() / ("heft_sim_test_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const fs::path p = dir / name;
  fs::remove_all(p);
  return p;
}

std::string bytes(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// Every file of a CSV folder (name -> content), or the one file.
std::vector<std::pair<std::string, std::string>> contents(const fs::path& path) {
  std::vector<std::pair<std::string, std::string>> out;
  if (fs::is_directory(path)) {
    for (const auto& e : fs::recursive_directory_iterator(path)) {
      if (e.is_regular_file())
        out.emplace_back(fs::relative(e.path(), path).string(), bytes(e.path()));
    }
    std::sort(out.begin(), out.end());
  } else {
    out.emplace_back("", bytes(path));  // the content only: the twins have different names
  }
  return out;
}

model::Payload boxPayload(double m, const Vector3& com, double a, double b, double c) {
  model::Payload p;
  p.mass = m;
  p.com = com;
  p.inertia = Matrix3::Zero();
  p.inertia(0, 0) = m * (b * b + c * c) / 12;
  p.inertia(1, 1) = m * (a * a + c * c) / 12;
  p.inertia(2, 2) = m * (a * a + b * b) / 12;
  return p;
}

// Compares mass, COM and rotational inertia about the COM of two pi.
void expectSameBody(const Vector10& expected, const Vector10& actual, const std::string& what) {
  const double m = heft::inertia::mass(expected);
  EXPECT_NEAR(heft::inertia::mass(actual), m, 1e-12 * std::max(1.0, m)) << what;
  if (m <= 0) return;
  EXPECT_LT((heft::inertia::centerOfMass(actual) - heft::inertia::centerOfMass(expected)).norm(),
            1e-12)
      << what;
  const Matrix3 Ie = heft::inertia::rotationalInertiaAtCom(expected);
  const Matrix3 Ia = heft::inertia::rotationalInertiaAtCom(actual);
  EXPECT_LT((Ia - Ie).norm(), 1e-12 + 1e-9 * Ie.norm()) << what << "\n" << Ie << "\nvs\n" << Ia;
}

Eigen::VectorXd randomConfiguration(const pinocchio::Model& m, unsigned seed) {
  sim::Rng rng(seed, 99);
  Eigen::VectorXd q = pinocchio::neutral(m);
  for (pinocchio::JointIndex j = 1; j < static_cast<pinocchio::JointIndex>(m.njoints); ++j) {
    const auto& jm = m.joints[j];
    if (jm.nv() == 6) {
      const Eigen::Vector4d c(rng.normal(), rng.normal(), rng.normal(), rng.normal());
      q.segment<3>(jm.idx_q()) << rng.normal(), rng.normal(), 0.5 + rng.uniform();
      q.segment<4>(jm.idx_q() + 3) = c.normalized();
    } else {
      double lo = m.lowerPositionLimit[jm.idx_q()], hi = m.upperPositionLimit[jm.idx_q()];
      if (!(std::isfinite(lo) && std::isfinite(hi) && lo < hi)) lo = -M_PI, hi = M_PI;
      q[jm.idx_q()] = rng.uniform(lo, hi);
    }
  }
  return q;
}

sim::SimulationResult run(const std::string& name, double duration,
                          const std::string& noise = "none", std::uint64_t seed = 0) {
  sim::SimulationOptions options;
  options.duration = duration;
  options.noise = noise;
  options.seed = seed;
  return sim::simulate(sim::findScenario(name), options);
}

// Angle between the base z axis and the world z axis at truth sample k [rad].
double tiltAt(const heft::io::TruthSeries& truth, int k) {
  const Eigen::Vector4d c = truth.base_pose.row(k).tail<4>().transpose();
  const double zz =
      Eigen::Quaterniond(c[3], c[0], c[1], c[2]).normalized().toRotationMatrix()(2, 2);
  return std::acos(std::min(1.0, zz));
}

// RNEA(q, v, a) - sum J^T f at truth sample k with the robot's current pi (contact wrench at the
// sphere bottom), all nv rows: the base rows are zero when the model's inertias are what MuJoCo
// simulated; the joint rows are the applied torques.
Eigen::VectorXd residualWithContacts(const heft::io::Log& log, const sim::Scenario& scenario,
                                     const model::RobotModel& robot, int k) {
  const auto& truth = *log.truth;
  const pinocchio::Model& pm = robot.pinocchio();
  pinocchio::Data pd(pm);
  Eigen::VectorXd q(pm.nq), v(pm.nv), a(pm.nv);
  q << truth.base_pose.row(k).transpose(), truth.q.row(k).transpose();
  v << truth.base_twist.row(k).transpose(), truth.v.row(k).transpose();
  a << truth.base_acceleration.row(k).transpose(), truth.a.row(k).transpose();
  Eigen::VectorXd r = pinocchio::rnea(pm, pd, q, v, a);
  pinocchio::computeJointJacobians(pm, pd, q);
  pinocchio::updateFramePlacements(pm, pd);
  for (std::size_t c = 0; c < truth.contact_names.size(); ++c) {
    const auto& point = scenario.model.contact_points[c];
    const auto frame = pm.getFrameId(point.frame);
    Eigen::Matrix<double, 6, Eigen::Dynamic> J(6, pm.nv);
    J.setZero();
    pinocchio::getFrameJacobian(pm, pd, frame, pinocchio::LOCAL_WORLD_ALIGNED, J);
    const Eigen::Vector3d f = truth.contact_forces.row(k).segment<3>(3 * c).transpose();
    // the force acts at the sphere bottom: center (frame offset) minus the radius in z
    const Eigen::Vector3d r_c = pd.oMf[frame].rotation() * point.offset -
                                Eigen::Vector3d(0, 0, scenario.model.contact_radius);
    Eigen::Matrix<double, 6, 1> wrench;
    wrench << f, r_c.cross(f);
    r -= J.transpose() * wrench;
  }
  return r;
}

// Base rows of residualWithContacts: zero when the model's inertias are what MuJoCo simulated.
Eigen::Matrix<double, 6, 1> baseResidual(const heft::io::Log& log, const sim::Scenario& scenario,
                                         const model::RobotModel& robot, int k) {
  return residualWithContacts(log, scenario, robot, k).head<6>();
}

// The scenario's reference (what the controller tracked), recomputed on the nominal model.
sim::Reference referenceOf(const sim::Scenario& scenario, double duration) {
  std::vector<std::string> frames;
  std::vector<Eigen::Vector3d> offsets;
  for (const auto& p : scenario.model.contact_points) {
    frames.push_back(p.frame);
    offsets.push_back(p.offset);
  }
  return sim::humanoidReference(model::loadRobot(scenario.robot), scenario.humanoid, frames,
                                offsets, duration, scenario.model.timestep);
}

}  // namespace

// ---- MuJoCo errors never exit
// --------------------------------------------------------------------

TEST(MujocoErrors, ErrorInsideGuardedCallReturnsInsteadOfExiting) {
  std::string message;
  const bool ok = sim::guardedMujocoCall([] { mju_error("heft test error %d", 42); }, message);
  EXPECT_FALSE(ok);
  EXPECT_NE(message.find("heft test error 42"), std::string::npos) << message;
  EXPECT_THROW(sim::guardedMujocoCallOrThrow("test", [] { mju_error("again"); }), heft::SolveError);
  // the guard is reusable after a jump
  EXPECT_TRUE(sim::guardedMujocoCall([] {}, message));
}

TEST(MujocoErrors, WarningsAreCountedNotPrinted) {
  sim::installMujocoHandlers();
  const long before = sim::mujocoWarningCount();
  mju_warning("heft test warning");
  EXPECT_EQ(sim::mujocoWarningCount(), before + 1);
  EXPECT_EQ(sim::lastMujocoWarning(), "heft test warning");
}

// ---- the MuJoCo model is the Pinocchio model --------------------------------------------------

class SameModel : public ::testing::TestWithParam<std::string> {};

TEST_P(SameModel, BodiesHaveTheNominalMassComAndInertia) {
  const model::RobotModel robot = model::loadRobot(GetParam());
  const sim::SimModel simulated(robot);
  const Eigen::MatrixXd pi = simulated.truthPi();
  ASSERT_EQ(pi.rows(), robot.pinocchio().njoints - 1);
  for (const auto& body : robot.bodies()) {
    expectSameBody(robot.pi(body.joint), pi.row(body.joint - 1).transpose(), body.name);
  }
  // MuJoCo's own numbers (not heft's lumping) for every body with a joint
  const mjModel* m = simulated.mujoco();
  for (const auto& body : robot.bodies()) {
    const int b = simulated.mujocoBody(body.joint);
    EXPECT_NEAR(m->body_mass[b], robot.pi(body.joint)[0], 1e-12) << body.name;
  }
  EXPECT_NEAR(m->body_subtreemass[0], robot.totalMass(), 1e-9);
}

TEST_P(SameModel, MassMatrixAndGravityMatchPinocchio) {
  const model::RobotModel robot = model::loadRobot(GetParam());
  const sim::SimModel simulated(robot);
  const pinocchio::Model& pm = robot.pinocchio();
  pinocchio::Data pd(pm);
  auto data = simulated.makeData();
  const mjModel* m = simulated.mujoco();
  for (unsigned trial = 0; trial < 5; ++trial) {
    const Eigen::VectorXd q = randomConfiguration(pm, trial);
    const Eigen::VectorXd v = Eigen::VectorXd::Zero(pm.nv);
    simulated.setState(data.get(), q, v);
    simulated.forward(data.get());
    Eigen::MatrixXd M_mj(m->nv, m->nv);
    mj_fullM(m, M_mj.data(), data->qM);  // symmetric: row or column major alike
    Eigen::VectorXd g_mj = Eigen::Map<const Eigen::VectorXd>(data->qfrc_bias, m->nv);
    // MuJoCo's free joint has a world-frame linear velocity: v_mj = T v_pin, T = diag(R, 1, ..)
    Eigen::MatrixXd T = Eigen::MatrixXd::Identity(pm.nv, pm.nv);
    if (robot.hasFreeFlyer()) {
      T.topLeftCorner<3, 3>() =
          Eigen::Quaterniond(q[6], q[3], q[4], q[5]).normalized().toRotationMatrix();
    }
    pinocchio::crba(pm, pd, q);
    pd.M.triangularView<Eigen::StrictlyLower>() =
        pd.M.transpose().triangularView<Eigen::StrictlyLower>();
    const Eigen::VectorXd g = pinocchio::computeGeneralizedGravity(pm, pd, q);
    const Eigen::MatrixXd M_from_mj = T.transpose() * M_mj * T;
    EXPECT_LT((M_from_mj - pd.M).norm(), 1e-9 * pd.M.norm()) << "trial " << trial;
    EXPECT_LT((T.transpose() * g_mj - g).norm(), 1e-9 * std::max(1.0, g.norm()))
        << "trial " << trial;
  }
}

INSTANTIATE_TEST_SUITE_P(Robots, SameModel, ::testing::Values("go2", "panda", "double_pendulum"));

// ---- payloads and link edits
// ---------------------------------------------------------------------

TEST(Payload, LumpingReproducesMujocoSubtreeMassAndCom) {
  const model::RobotModel robot = model::loadRobot("go2");
  sim::SimModelOptions options;
  const model::Payload on_base = boxPayload(3.0, Vector3(0.05, 0.01, 0.09), 0.2, 0.1, 0.06);
  const model::Payload on_calf = boxPayload(0.4, Vector3(0.01, 0.0, -0.12), 0.03, 0.03, 0.05);
  options.payloads.push_back({"payload", "base", on_base});
  options.payloads.push_back({"calf_weight", "FL_calf", on_calf});
  options.link_edits.push_back({"RR_thigh", 1.3, Vector3(0.01, -0.02, 0.005)});
  const sim::SimModel simulated(robot, options);

  // heft's lumping: the same edits on the Pinocchio model, payloads by model::attachPayload
  model::RobotModel lumped = robot;
  {
    const auto j = robot.bodyIndex("RR_thigh");
    const Vector10 pi = robot.pi(j);
    lumped.setPi(j, heft::inertia::piFromMassComInertia(
                        1.3 * pi[0], heft::inertia::centerOfMass(pi) + Vector3(0.01, -0.02, 0.005),
                        1.3 * heft::inertia::rotationalInertiaAtCom(pi)));
  }
  lumped = model::attachPayload(lumped, "base", on_base);
  lumped = model::attachPayload(lumped, "FL_calf", on_calf);

  // the truth pi (MuJoCo bodies lumped by the simulator) equals heft's lumping
  const Eigen::MatrixXd truth = simulated.truthPi();
  for (const auto& body : robot.bodies()) {
    expectSameBody(lumped.pi(body.joint), truth.row(body.joint - 1).transpose(), body.name);
  }

  // and MuJoCo's subtree mass / COM at a random configuration equal the lumped model's
  const pinocchio::Model& pm = lumped.pinocchio();
  pinocchio::Data pd(pm);
  auto data = simulated.makeData();
  const mjModel* m = simulated.mujoco();
  const Eigen::VectorXd q = randomConfiguration(pm, 11);
  simulated.setState(data.get(), q, Eigen::VectorXd::Zero(pm.nv));
  simulated.forward(data.get());
  pinocchio::forwardKinematics(pm, pd, q);
  for (const auto& name : {"base", "FL_calf", "RR_thigh"}) {
    const auto j = lumped.bodyIndex(name);
    const int b = simulated.mujocoBody(j);
    // the body's own part of MuJoCo's subtree: minus the subtrees of its moving children
    double mass = m->body_subtreemass[b];
    Eigen::Vector3d moment = mass * Eigen::Vector3d(data->subtree_com + 3 * b);
    for (int c = b + 1; c < m->nbody; ++c) {
      if (m->body_parentid[c] == b && m->body_jntnum[c] > 0) {
        mass -= m->body_subtreemass[c];
        moment -= m->body_subtreemass[c] * Eigen::Vector3d(data->subtree_com + 3 * c);
      }
    }
    const Vector10 pi = lumped.pi(j);
    EXPECT_NEAR(mass, pi[0], 1e-12) << name;
    const Eigen::Vector3d com_world =
        pd.oMi[j].act(Eigen::Vector3d(heft::inertia::centerOfMass(pi)));
    EXPECT_LT((moment / mass - com_world).norm(), 1e-9) << name;
  }
  const int root = simulated.mujocoBody(1);
  EXPECT_NEAR(m->body_subtreemass[root], lumped.totalMass(), 1e-9);
  const Eigen::Vector3d com = pinocchio::centerOfMass(pm, pd, q);
  EXPECT_LT((Eigen::Vector3d(data->subtree_com + 3 * root) - com).norm(), 1e-9);
  EXPECT_NEAR(lumped.totalMass(), robot.totalMass() + 3.0 + 0.4 + 0.3 * robot.pi("RR_thigh")[0],
              1e-9);
}

TEST(Payload, BadOptionsAreInputErrors) {
  const model::RobotModel robot = model::loadRobot("go2");
  sim::SimModelOptions unknown_body;
  unknown_body.payloads.push_back(
      {"payload", "no_such_link", boxPayload(1, Vector3::Zero(), 0.1, 0.1, 0.1)});
  EXPECT_THROW(sim::SimModel(robot, unknown_body), heft::InputError);
  sim::SimModelOptions clash;
  clash.payloads.push_back({"FL_calf", "base", boxPayload(1, Vector3::Zero(), 0.1, 0.1, 0.1)});
  EXPECT_THROW(sim::SimModel(robot, clash), heft::InputError);
  sim::SimModelOptions negative;
  negative.link_edits.push_back({"base", -1.0, Vector3::Zero()});
  EXPECT_THROW(sim::SimModel(robot, negative), heft::InputError);
  sim::SimModelOptions friction;
  friction.joint_friction["no_such_joint"] = sim::JointFriction{0.1, 0.1, 0.0};
  EXPECT_THROW(sim::SimModel(robot, friction), heft::InputError);
  sim::SimModelOptions frame;
  frame.contact_frames = {"no_such_frame"};
  EXPECT_THROW(sim::SimModel(robot, frame), heft::InputError);
  sim::SimModelOptions wave_body;
  wave_body.mass_variations.push_back(
      {"no_such_body", sim::MassVariation::Waveform::Sine, 2, 1, 1});
  EXPECT_THROW(sim::SimModel(robot, wave_body), heft::InputError);
  sim::SimModelOptions wave_negative;
  wave_negative.mass_variations.push_back({"base", sim::MassVariation::Waveform::Square, 2, 3, 1});
  EXPECT_THROW(sim::SimModel(robot, wave_negative), heft::InputError);
  sim::SimModelOptions points;
  points.contact_points = {{"p", "FL_foot", Vector3::Zero()}, {"p", "FR_foot", Vector3::Zero()}};
  EXPECT_THROW(sim::SimModel(robot, points), heft::InputError);
}

// ---- truth --------------------------------------------------------------------------------------

TEST(Truth, StaticStanceContactForcesCarryTheWeight) {
  for (const std::string name : {"go2-stand", "go2-payload-3kg"}) {
    sim::Scenario scenario = sim::findScenario(name);
    scenario.stance.roll_amplitude = scenario.stance.pitch_amplitude = 0;
    scenario.stance.yaw_amplitude = scenario.stance.squat_depth = 0;
    sim::SimulationOptions options;
    options.duration = 1.5;
    options.noise = "none";
    const auto result = sim::simulate(scenario, options);
    ASSERT_TRUE(result.summary.ok()) << result.summary.report();
    const auto& truth = *result.log.truth;
    const double weight = result.summary.total_mass * 9.81;
    ASSERT_EQ(truth.contact_names.size(), 4u);
    int checked = 0;
    for (int k = 0; k < truth.time.size(); ++k) {
      if (truth.time[k] < 1.0) continue;  // settled
      Eigen::Vector3d total = Eigen::Vector3d::Zero();
      for (int c = 0; c < 4; ++c)
        total += truth.contact_forces.row(k).segment<3>(3 * c).transpose();
      EXPECT_NEAR(total.z(), weight, 0.01 * weight) << name << " t = " << truth.time[k];
      EXPECT_LT(total.head<2>().norm(), 0.01 * weight) << name;
      for (int c = 0; c < 4; ++c) EXPECT_EQ(truth.contact_flags(k, c), 1);
      ++checked;
    }
    EXPECT_GT(checked, 400);
  }
}

// Humanoid: eight corner spheres under the soles carry the weight of the standing TALOS.
TEST(Truth, HumanoidStaticStanceContactForcesCarryTheWeight) {
  sim::SimulationOptions options;
  options.duration = 1.5;
  options.noise = "none";
  const auto result = sim::simulate(sim::findScenario("talos-stand"), options);
  ASSERT_TRUE(result.summary.ok()) << result.summary.report();
  const auto& truth = *result.log.truth;
  const double weight = result.summary.total_mass * 9.81;
  ASSERT_EQ(truth.contact_names.size(), 8u);
  int checked = 0;
  for (int k = 0; k < truth.time.size(); ++k) {
    if (truth.time[k] < 1.0) continue;  // settled
    Eigen::Vector3d total = Eigen::Vector3d::Zero();
    for (int c = 0; c < 8; ++c) total += truth.contact_forces.row(k).segment<3>(3 * c).transpose();
    EXPECT_NEAR(total.z(), weight, 0.01 * weight) << "t = " << truth.time[k];
    EXPECT_LT(total.head<2>().norm(), 0.01 * weight) << "t = " << truth.time[k];
    ++checked;
  }
  EXPECT_GT(checked, 400);
  // both feet carry weight (every corner touches)
  const int last = static_cast<int>(truth.time.size()) - 1;
  for (int c = 0; c < 8; ++c) EXPECT_EQ(truth.contact_flags(last, c), 1) << truth.contact_names[c];
}

// F/T sensors at the contact frames, noise off: each logged wrench, applied at its frame
// (+ J_LOCAL^T w), gives the same generalized force as the truth contact forces (+ J_point^T f,
// world axes) at the sphere bottoms under a sole and at the sphere centre of a point foot (whose
// sensor measures only the force): the sign, axes and point conventions of docs/log-format.md.
TEST(Sensors, ForceTorqueWrenchesAreTheTruthForcesAtTheSensorFrames) {
  for (const std::string name : {"talos-stand", "go2-trot"}) {
    sim::SimulationOptions options;
    options.duration = 0.4;
    options.noise = "none";
    EXPECT_FALSE(sim::simulate(sim::findScenario(name), options).log.force_torque) << name;
    options.force_torque = true;
    const auto result = sim::simulate(sim::findScenario(name), options);
    ASSERT_TRUE(result.summary.ok()) << result.summary.report();
    const heft::io::Log& log = result.log;
    ASSERT_TRUE(log.force_torque) << name;
    const auto& ft = *log.force_torque;
    const auto& truth = *log.truth;
    const model::RobotModel robot = model::loadRobot(name == "go2-trot" ? "go2" : "talos");
    const pinocchio::Model& m = robot.pinocchio();
    EXPECT_TRUE(heft::io::validateLog(log, m).ok()) << heft::io::validateLog(log, m).report();
    EXPECT_EQ(ft.names.size(), name == "go2-trot" ? 4u : 2u) << name;  // one per foot
    const sim::SimModel sim_model(robot, sim::findScenario(name).model);
    const auto& points = sim_model.contactPoints();
    pinocchio::Data d(m);
    Eigen::MatrixXd J(6, m.nv);
    double largest = 0, scale = 0;
    for (int k = 0; k < truth.time.size(); k += 20) {
      Eigen::VectorXd q(m.nq);
      q << truth.base_pose.row(k).transpose(), truth.q.row(k).transpose();
      pinocchio::computeJointJacobians(m, d, q);
      pinocchio::updateFramePlacements(m, d);
      Eigen::VectorXd from_truth = Eigen::VectorXd::Zero(m.nv), from_sensors = from_truth;
      for (std::size_t c = 0; c < points.size(); ++c) {
        J.setZero();
        const auto f = m.getFrameId(points[c].frame);
        const double radius = name == "go2-trot" ? 0 : sim_model.options().contact_radius;
        // the Jacobian of the point, world-aligned axes
        pinocchio::getFrameJacobian(m, d, f, pinocchio::LOCAL_WORLD_ALIGNED, J);
        Eigen::MatrixXd Jp = J.topRows(3);
        const Vector3 r = d.oMf[f].rotation() * points[c].offset - radius * Vector3::UnitZ();
        for (int col = 0; col < m.nv; ++col) Jp.col(col) += Vector3(J.col(col).tail<3>()).cross(r);
        from_truth += Jp.transpose() * truth.contact_forces.row(k).segment<3>(3 * c).transpose();
      }
      for (std::size_t i = 0; i < ft.names.size(); ++i) {
        J.setZero();
        pinocchio::getFrameJacobian(m, d, m.getFrameId(ft.frames[i]), pinocchio::LOCAL, J);
        from_sensors += J.transpose() * ft.wrench.row(k).segment<6>(6 * i).transpose();
      }
      largest = std::max(largest, (from_truth - from_sensors).cwiseAbs().maxCoeff());
      scale = std::max(scale, from_truth.cwiseAbs().maxCoeff());
    }
    EXPECT_GT(scale, 50) << name;  // the robot stands on its feet
    EXPECT_LT(largest, 1e-9 * scale) << name;
  }
}

// The varying torso mass in the truth is what MuJoCo simulated: the square wave itself, and the
// equations of motion close with the varying pi (not with the constant table after a switch).
TEST(Truth, TimeVaryingMassIsWhatMujocoHad) {
  const sim::Scenario& scenario = sim::findScenario("talos-torso-mass-wave");
  ASSERT_EQ(scenario.model.mass_variations.size(), 1u);
  const sim::MassVariation& wave = scenario.model.mass_variations[0];
  const auto result = run("talos-torso-mass-wave", 3.0);
  ASSERT_TRUE(result.summary.ok()) << result.summary.report();
  const heft::io::Log& log = result.log;
  const auto& truth = *log.truth;
  ASSERT_EQ(truth.varying_body_names, std::vector<std::string>{"torso_2_joint"});
  ASSERT_EQ(truth.varying_body_pi.rows(), truth.time.size());
  ASSERT_EQ(truth.varying_body_pi.cols(), 10);
  model::RobotModel robot = model::loadRobot("talos");
  const auto torso = robot.pinocchio().getJointId("torso_2_joint");
  // the MuJoCo torso body is the nominal lumped torso with its mass (and inertia) set to the wave
  const Vector10 nominal = robot.pi(torso);
  int high = 0, low = 0;
  for (int k = 0; k < truth.time.size(); ++k) {
    const double m = wave.massAt(truth.time[k]);
    const Vector10 pi = truth.varying_body_pi.row(k).transpose();
    EXPECT_NEAR(pi[0], m, 1e-9) << "t = " << truth.time[k];
    const double scale = m / nominal[0];
    expectSameBody(
        heft::inertia::piFromMassComInertia(m, heft::inertia::centerOfMass(nominal),
                                            scale * heft::inertia::rotationalInertiaAtCom(nominal)),
        pi, "torso at t = " + std::to_string(truth.time[k]));
    (m > 30 ? high : low) += 1;
  }
  EXPECT_EQ(high, 2500);  // 35 kg for t in [0, 2.5), 25 kg after
  EXPECT_EQ(low, static_cast<int>(truth.time.size()) - 2500);
  EXPECT_EQ(truth.body_pi.row(torso - 1), truth.varying_body_pi.row(0));
  // equations of motion with the true pi of the step: residual small; with the first sample's pi
  // (35 kg) it is large after the switch to 25 kg
  for (int b = 0; b < truth.body_pi.rows(); ++b) {
    robot.setPi(robot.pinocchio().getJointId(truth.body_names[b]),
                truth.body_pi.row(b).transpose());
  }
  const int nj = static_cast<int>(log.joints.names.size());
  auto residual = [&](int k) {
    Eigen::VectorXd r = residualWithContacts(log, scenario, robot, k);
    r.tail(nj) -= log.joints.tau_cmd.row(k).transpose();
    return r;
  };
  double worst_true = 0, worst_constant = 0;
  for (int k = 2600; k < truth.time.size(); k += 50) {
    robot.setPi(torso, truth.varying_body_pi.row(k).transpose());
    worst_true = std::max(worst_true, residual(k).head<6>().cwiseAbs().maxCoeff());
    robot.setPi(torso, truth.varying_body_pi.row(0).transpose());
    worst_constant = std::max(worst_constant, residual(k).head<6>().cwiseAbs().maxCoeff());
  }
  EXPECT_LT(worst_true, 0.05) << "N or N m";
  EXPECT_GT(worst_constant, 90.0);  // 10 kg * 9.81
  // the log keeps it through a file, and validates
  const fs::path file = scratch("wave.h5");
  heft::io::writeLog(log, file.string());
  const heft::io::Log back = heft::io::readLog(file.string());
  EXPECT_EQ(heft::io::firstDifference(log, back), "");
  const auto report = heft::io::validateLog(back, model::loadRobot("talos").pinocchio());
  EXPECT_TRUE(report.ok()) << report.report();
  const fs::path folder = scratch("wave_csv");
  heft::io::writeLog(log, folder.string());
  EXPECT_EQ(heft::io::firstDifference(log, heft::io::readLog(folder.string())), "");
}

// A payload picked up: the welded 5.4 kg box has 0 kg before t = 6 s (MuJoCo composes it into the
// forearm without complaint) and 5.4 kg from the sample at 6 s on, in the truth and in the
// physics; the elbow still tracks its curl and the robot stays up.
TEST(Truth, PickedUpPayloadStepsTheForearmMassAtSixSeconds) {
  const sim::Scenario& scenario = sim::findScenario("talos-forearm-step");
  ASSERT_EQ(scenario.model.mass_variations.size(), 1u);
  ASSERT_EQ(scenario.model.payloads.size(), 1u);
  const sim::MassVariation& step = scenario.model.mass_variations[0];
  EXPECT_EQ(step.waveform, sim::MassVariation::Waveform::Step);
  const auto result = run("talos-forearm-step", 0, "nominal", 0);
  const auto& s = result.summary;
  ASSERT_TRUE(s.ok()) << s.report();
  EXPECT_EQ(s.mujoco_warnings, 0);
  EXPECT_EQ(s.steps, 14001);
  const heft::io::Log& log = result.log;
  const auto& truth = *log.truth;
  ASSERT_EQ(truth.varying_body_names, std::vector<std::string>{"arm_left_4_joint"});
  ASSERT_EQ(truth.varying_body_pi.rows(), truth.time.size());
  model::RobotModel robot = model::loadRobot("talos");
  const auto forearm = robot.pinocchio().getJointId("arm_left_4_joint");
  const Vector10 bare = robot.pi(forearm);
  const Vector10 loaded = bare + scenario.model.payloads[0].payload.pi();
  int before = 0, after = 0;
  for (int k = 0; k < truth.time.size(); ++k) {
    const bool picked = k >= 6000;  // t = 6 s
    EXPECT_NEAR(truth.varying_body_pi(k, 0), picked ? bare[0] + 5.4 : bare[0], 1e-9) << k;
    (picked ? after : before) += 1;
  }
  EXPECT_EQ(before, 6000);
  expectSameBody(bare, truth.varying_body_pi.row(5999).transpose(), "forearm at 5.999 s");
  expectSameBody(loaded, truth.varying_body_pi.row(6000).transpose(), "forearm at 6 s");
  EXPECT_EQ(truth.body_pi.row(forearm - 1), truth.varying_body_pi.row(0));
  // the physics had the payload only from 6 s on: base rows close with the pi of the sample
  for (int b = 0; b < truth.body_pi.rows(); ++b) {
    robot.setPi(robot.pinocchio().getJointId(truth.body_names[b]),
                truth.body_pi.row(b).transpose());
  }
  double worst_true = 0, worst_without = 0;
  for (int k = 6100; k < truth.time.size(); k += 100) {
    robot.setPi(forearm, truth.varying_body_pi.row(k).transpose());
    worst_true = std::max(worst_true, baseResidual(log, scenario, robot, k).cwiseAbs().maxCoeff());
    robot.setPi(forearm, truth.varying_body_pi.row(0).transpose());
    worst_without =
        std::max(worst_without, baseResidual(log, scenario, robot, k).cwiseAbs().maxCoeff());
  }
  EXPECT_LT(worst_true, 0.05) << "N";
  EXPECT_GT(worst_without, 45.0) << "N";  // 5.4 kg * 9.81 = 53 N
  // upright, and the elbow follows its curl after the pick-up (the feed-forward knows no payload)
  for (int k = 0; k < truth.time.size(); ++k) {
    ASSERT_GT(truth.base_pose(k, 2), scenario.bounds.min_base_height) << k;
    ASSERT_LT(tiltAt(truth, k), scenario.bounds.max_tilt) << k;
  }
  const sim::Reference ref = referenceOf(scenario, scenario.duration);
  const int elbow = static_cast<int>(
      std::find(log.joints.names.begin(), log.joints.names.end(), "arm_left_4_joint") -
      log.joints.names.begin());
  const int elbow_q = robot.pinocchio().joints[forearm].idx_q();
  double worst_before = 0, worst_after = 0, swing = 0;
  for (int k = 0; k < truth.time.size(); ++k) {
    const double error = std::abs(truth.q(k, elbow) - ref.q(elbow_q, k));
    if (k < 6000) {
      worst_before = std::max(worst_before, error);
    } else {
      worst_after = std::max(worst_after, error);
      swing = std::max(swing, std::abs(truth.q(k, elbow) + 1.0));  // curls about -1 rad
    }
  }
  EXPECT_LT(worst_before, 0.03) << "rad";
  EXPECT_LT(worst_after, 0.1) << "rad";
  EXPECT_GT(worst_after, 2 * worst_before) << "the unknown payload shows in the tracking";
  EXPECT_GT(swing, 0.6) << "the loaded forearm still curls (0.7 rad)";
  EXPECT_LT(s.max_tracking_error, 0.1);
  std::printf("elbow error before %.4f after %.4f rad; %s", worst_before, worst_after,
              s.report().c_str());
}

// A step waveform is checked field by field; only a welded body may step to 0 kg.
TEST(Truth, StepMassBadOptionsAreInputErrors) {
  auto fails = [](const sim::MassVariation& v, const std::string& field) {
    sim::SimModelOptions o;
    o.payloads.push_back(
        {"payload", "arm_left_4_link", boxPayload(1.0, Vector3::Zero(), 0.1, 0.1, 0.1)});
    o.mass_variations.push_back(v);
    try {
      sim::SimModel(model::loadRobot("talos"), o);
    } catch (const heft::InputError& e) {
      EXPECT_NE(std::string(e.what()).find(field), std::string::npos) << e.what();
      return;
    }
    ADD_FAILURE() << "no InputError for " << field;
  };
  using W = sim::MassVariation::Waveform;
  fails({"payload", W::Step, 0.0, 5.4, 0.0, -1.0}, "step_time");
  fails({"payload", W::Step, 0.0, 5.4, 0.0, std::nan("")}, "step_time");
  fails({"payload", W::Step, -1.0, 5.4, 0.0, 6.0}, "offset");
  fails({"payload", W::Step, 2.0, -3.0, 0.0, 6.0}, "amplitude");
  fails({"torso_2_link", W::Step, 0.0, 30.0, 0.0, 6.0}, "mass_variations[torso_2_link]");
  fails({"payload", W::Square, 1.0, 0.5, 0.0, 0.0}, "frequency");
  // a step to zero of the payload, and a positive step of a robot body, are fine
  sim::MassVariation down{"payload", W::Step, 1.0, -1.0, 0.0, 2.0};
  EXPECT_DOUBLE_EQ(down.massAt(1.999), 1.0);
  EXPECT_DOUBLE_EQ(down.massAt(2.0), 0.0);
  sim::SimModelOptions o;
  o.mass_variations.push_back({"torso_2_link", W::Step, 20.0, 10.0, 0.0, 1.0});
  EXPECT_NO_THROW(sim::SimModel(model::loadRobot("talos"), o));
}

// The torque path: tau = gain kappa tanh(tau_cmd / kappa) per joint (SPI-Active eq. 3).
TEST(Truth, ActuatorGainAndSaturationShapeTheAppliedTorque) {
  const sim::Scenario& scenario = sim::findScenario("go2-actuator");
  ASSERT_FALSE(scenario.model.actuators.empty());
  const auto result = run("go2-actuator", 1.0);
  ASSERT_TRUE(result.summary.ok()) << result.summary.report();
  const auto& joints = result.log.joints;
  double worst = 0, largest_change = 0;
  for (int j = 0; j < static_cast<int>(joints.names.size()); ++j) {
    const auto it = scenario.model.actuators.find(joints.names[j]);
    const sim::ActuatorModel actuator =
        it == scenario.model.actuators.end() ? sim::ActuatorModel{} : it->second;
    for (int k = 0; k < joints.time.size(); ++k) {
      const double cmd = joints.tau_cmd(k, j);
      const double expected = actuator.saturation > 0 ? actuator.gain * actuator.saturation *
                                                            std::tanh(cmd / actuator.saturation)
                                                      : actuator.gain * cmd;
      worst = std::max(worst, std::abs(joints.tau(k, j) - expected));  // noise "none"
      largest_change = std::max(largest_change, std::abs(joints.tau(k, j) - cmd));
    }
  }
  EXPECT_LT(worst, 1e-12);
  EXPECT_GT(largest_change, 0.1);  // the path changes the torque visibly
  sim::SimModelOptions bad;
  bad.actuators["FL_calf_joint"] = sim::ActuatorModel{-1, 0};
  EXPECT_THROW(sim::SimModel(model::loadRobot("go2"), bad), heft::InputError);
  sim::SimModelOptions unknown;
  unknown.actuators["no_such_joint"] = sim::ActuatorModel{};
  EXPECT_THROW(sim::SimModel(model::loadRobot("go2"), unknown), heft::InputError);
}

// A torque-sensor offset is added to the logged joint torque and nowhere else: the physics, the
// commanded torque and the truth are those of the same run without it.
TEST(Sensors, TorqueOffsetIsInTheLoggedTorqueOnly) {
  sim::Scenario scenario = sim::findScenario("panda-friction");
  sim::SimulationOptions options;
  options.duration = 0.3;
  options.noise = "nominal";
  options.seed = 1;
  const auto without = sim::simulate(scenario, options);
  const std::vector<double> offsets = {0.3, -0.4, 0.25, 0.5, -0.2, 0.15, -0.1};
  for (int j = 0; j < 7; ++j)
    scenario.model.torque_offsets["panda_joint" + std::to_string(j + 1)] = offsets[j];
  const auto with = sim::simulate(scenario, options);
  ASSERT_TRUE(without.summary.ok() && with.summary.ok()) << with.summary.report();
  const auto &a = without.log.joints, &b = with.log.joints;
  ASSERT_EQ(a.tau.rows(), b.tau.rows());
  ASSERT_EQ(b.names.size(), 9u);  // seven arm joints and two fingers
  for (int j = 0; j < static_cast<int>(b.names.size()); ++j) {
    const double offset = j < 7 ? offsets[j] : 0.0;
    for (int k = 0; k < b.tau.rows(); ++k) {
      // to rounding of the sum tau + bias + noise + offset
      ASSERT_NEAR(b.tau(k, j) - a.tau(k, j), offset, 1e-14 * (1 + std::abs(a.tau(k, j))))
          << b.names[j] << " sample " << k;
    }
  }
  EXPECT_TRUE(a.q == b.q);
  EXPECT_TRUE(a.tau_cmd == b.tau_cmd);
  EXPECT_TRUE(without.log.truth->a == with.log.truth->a);
  EXPECT_TRUE(without.log.truth->q == with.log.truth->q);

  sim::SimModelOptions unknown;
  unknown.torque_offsets["no_such_joint"] = 0.1;
  EXPECT_THROW(sim::SimModel(model::loadRobot("panda"), unknown), heft::InputError);
  sim::SimModelOptions infinite;
  infinite.torque_offsets["panda_joint1"] = std::numeric_limits<double>::infinity();
  EXPECT_THROW(infinite.validate(), heft::InputError);
}

// The truth satisfies the equations of motion of the TRUE model (payload lumped in by the
// simulator): RNEA(q, v, a) with truth pi = tau + J^T f, contact wrench at the sphere bottom.
TEST(Truth, SatisfiesTheEquationsOfMotionOfTheTrueModel) {
  const auto result = run("go2-payload-3kg", 2.0);
  ASSERT_TRUE(result.summary.ok()) << result.summary.report();
  const heft::io::Log& log = result.log;
  const auto& truth = *log.truth;
  model::RobotModel robot = model::loadRobot("go2");
  for (int b = 0; b < truth.body_pi.rows(); ++b) {
    robot.setPi(robot.pinocchio().getJointId(truth.body_names[b]),
                truth.body_pi.row(b).transpose());
  }
  const pinocchio::Model& pm = robot.pinocchio();
  pinocchio::Data pd(pm);
  const double radius = sim::findScenario("go2-payload-3kg").model.contact_radius;
  double worst_base = 0, worst_joint = 0;
  for (int k = 0; k < truth.time.size(); k += 7) {
    Eigen::VectorXd q(pm.nq), v(pm.nv), a(pm.nv);
    q << truth.base_pose.row(k).transpose(), truth.q.row(k).transpose();
    v << truth.base_twist.row(k).transpose(), truth.v.row(k).transpose();
    a << truth.base_acceleration.row(k).transpose(), truth.a.row(k).transpose();
    Eigen::VectorXd residual = pinocchio::rnea(pm, pd, q, v, a);
    residual.tail(12) -= log.joints.tau_cmd.row(k).transpose();  // noise "none": applied torque
    pinocchio::computeJointJacobians(pm, pd, q);
    for (int c = 0; c < 4; ++c) {
      Eigen::Matrix<double, 6, Eigen::Dynamic> J(6, pm.nv);
      J.setZero();
      pinocchio::getFrameJacobian(pm, pd, pm.getFrameId(truth.contact_names[c]),
                                  pinocchio::LOCAL_WORLD_ALIGNED, J);
      const Eigen::Vector3d f = truth.contact_forces.row(k).segment<3>(3 * c).transpose();
      Eigen::Matrix<double, 6, 1> wrench;
      wrench << f, Eigen::Vector3d(0, 0, -radius).cross(f);
      residual -= J.transpose() * wrench;
    }
    worst_base = std::max(worst_base, residual.head<6>().cwiseAbs().maxCoeff());
    worst_joint = std::max(worst_joint, residual.tail(12).cwiseAbs().maxCoeff());
  }
  // the contact point sits at the middle of the (sub-millimetre) penetration, not at -radius
  EXPECT_LT(worst_base, 0.02) << "N or N m, weight " << result.summary.total_mass * 9.81 << " N";
  EXPECT_LT(worst_joint, 0.02) << "N m";
  // and the same residual with the NOMINAL model is large: the payload is visible in the data
  const model::RobotModel nominal = model::loadRobot("go2");
  pinocchio::Data nd(nominal.pinocchio());
  Eigen::VectorXd q(pm.nq), v = Eigen::VectorXd::Zero(pm.nv), a = Eigen::VectorXd::Zero(pm.nv);
  q << truth.base_pose.row(0).transpose(), truth.q.row(0).transpose();
  const double gravity_difference =
      (pinocchio::rnea(nominal.pinocchio(), nd, q, v, a) - pinocchio::rnea(pm, pd, q, v, a))
          .head<6>()
          .norm();
  EXPECT_GT(gravity_difference, 25.0);  // 3 kg * 9.81
}

TEST(Truth, AccelerationsIntegrateToTheNextVelocity) {
  const auto result = run("panda-friction", 1.0);
  ASSERT_TRUE(result.summary.ok()) << result.summary.report();
  const auto& truth = *result.log.truth;
  const double dt = 1e-3;
  double worst = 0;
  for (int k = 0; k + 1 < truth.time.size(); ++k) {
    worst = std::max(
        worst, (truth.v.row(k + 1) - truth.v.row(k) - dt * truth.a.row(k)).cwiseAbs().maxCoeff());
  }
  EXPECT_LT(worst, 1e-12);  // explicit Euler (implicit joint damping disabled)
}

TEST(Truth, TruthPiOfTheLogIsTheSimulatedModel) {
  const auto result = run("go2-rear-4.7kg", 0.2);
  const auto& truth = *result.log.truth;
  const model::RobotModel robot = model::loadRobot("go2");
  ASSERT_EQ(truth.body_names.size(), robot.bodies().size());
  EXPECT_EQ(truth.body_names[0], "root_joint");
  const double base_mass = truth.body_pi(0, 0);
  EXPECT_NEAR(base_mass, robot.pi("base")[0] + 4.7, 1e-9);
  for (int b = 1; b < truth.body_pi.rows(); ++b) {
    expectSameBody(robot.pi(b + 1), truth.body_pi.row(b).transpose(), truth.body_names[b]);
  }
}

// ---- scenarios ----------------------------------------------------------------------------------

TEST(Scenarios, ListHasTheRequiredOnes) {
  std::vector<std::string> names;
  for (const auto& s : sim::scenarios()) {
    names.push_back(s.name);
    EXPECT_FALSE(s.description.empty());
    EXPECT_GE(s.duration, 10);
    EXPECT_LE(s.duration, 20);
  }
  for (const auto& required :
       {"go2-payload-3kg", "go2-com-shift", "go2-rear-4.7kg", "go2-belly-4.6kg", "panda-friction",
        "panda", "double-pendulum", "talos-torso-2.9kg", "talos-forearm-5.4kg",
        "talos-torso-mass-wave", "talos-forearm-step", "talos-step-mass-wave"}) {
    EXPECT_NE(std::find(names.begin(), names.end(), required), names.end()) << required;
  }
  EXPECT_THROW(sim::findScenario("nope"), heft::InputError);
}

class EveryScenario : public ::testing::TestWithParam<std::string> {};

// Short version: the first 2.5 s (settling and the first motion phase); full runs: sim_long_test.
TEST_P(EveryScenario, RunsWithoutFallOrWarning) {
  const sim::Scenario& scenario = sim::findScenario(GetParam());
  const auto result = run(GetParam(), 2.5, "nominal", 3);
  const auto& s = result.summary;
  ASSERT_TRUE(s.ok()) << s.report();
  EXPECT_EQ(s.mujoco_warnings, 0);
  EXPECT_EQ(s.steps, 2501);
  const auto& truth = *result.log.truth;
  if (truth.base_pose.rows() > 0) {
    for (int k = 0; k < truth.base_pose.rows(); ++k) {
      const Eigen::Vector4d c = truth.base_pose.row(k).tail<4>().transpose();
      const double tilt = std::acos(std::min(
          1.0, Eigen::Quaterniond(c[3], c[0], c[1], c[2]).normalized().toRotationMatrix()(2, 2)));
      ASSERT_GT(truth.base_pose(k, 2), scenario.bounds.min_base_height) << "t = " << truth.time[k];
      ASSERT_LT(tilt, scenario.bounds.max_tilt) << "t = " << truth.time[k];
    }
  }
  EXPECT_LT(s.max_tracking_error, scenario.max_tracking_error);
  const model::RobotModel robot = model::loadRobot(scenario.robot);
  heft::io::ValidationOptions validation;  // a loop's passive joints have no column
  validation.unlogged_joints = model::loopJointNames(robot);
  const auto report = heft::io::validateLog(result.log, robot.pinocchio(), validation);
  EXPECT_TRUE(report.ok()) << report.report();
}

INSTANTIATE_TEST_SUITE_P(All, EveryScenario, ::testing::ValuesIn([] {
                           std::vector<std::string> names;
                           for (const auto& s : sim::scenarios()) names.push_back(s.name);
                           return names;
                         }()),
                         [](const auto& info) {
                           std::string n = info.param;
                           for (auto& ch : n) {
                             if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
                           }
                           return n;
                         });

// The gaits do what they say: pronking hops have a flight phase (every foot off the floor), the
// trot lifts every foot in turn. Short runs of the gait phase alone (the full scenarios run in
// sim_long_test.cpp).
TEST(Scenarios, PronkingHopsFlyAndTrotLiftsEveryFoot) {
  sim::Scenario hops = sim::findScenario("go2-belly-4.6kg");
  hops.stance.roll_amplitude = hops.stance.pitch_amplitude = hops.stance.yaw_amplitude = 0;
  hops.stance.squat_depth = 0;  // the hop phase right after settling
  sim::SimulationOptions options;
  options.duration = 1.0 + hops.stance.phase_duration;
  options.noise = "none";
  const auto hopped = sim::simulate(hops, options);
  ASSERT_TRUE(hopped.summary.ok()) << hopped.summary.report();
  const auto& ht = *hopped.log.truth;
  int flight = 0;
  for (int k = 0; k < ht.contact_flags.rows(); ++k)
    flight += ht.contact_flags.row(k).sum() == 0 ? 1 : 0;
  EXPECT_GT(flight, 60) << "samples with every foot in the air";

  sim::SimulationOptions trot_options;
  trot_options.duration = 4.0;
  trot_options.noise = "none";
  const auto trotted = sim::simulate(sim::findScenario("go2-trot"), trot_options);
  ASSERT_TRUE(trotted.summary.ok()) << trotted.summary.report();
  const auto& tt = *trotted.log.truth;
  for (int c = 0; c < 4; ++c) {
    int off = 0;
    for (int k = 2000; k < tt.contact_flags.rows(); ++k) off += tt.contact_flags(k, c) == 0 ? 1 : 0;
    EXPECT_GT(off, 500) << tt.contact_names[c] << " off the floor in t = 2 .. 4 s";
  }
}

// Stepping in place (talos-step-mass-wave, the whole run): ten steps alternating the feet, each
// swing a single-support interval in the truth and in the measured contact flags, each touchdown
// an impact on the landing sole, the robot upright and tracking, under the square-wave torso mass.
TEST(Scenarios, TalosStepsInPlaceUnderTheTorsoMassWave) {
  const sim::Scenario& scenario = sim::findScenario("talos-step-mass-wave");
  ASSERT_EQ(scenario.humanoid.phases.size(), 1u);
  const sim::HumanoidPhase& phase = scenario.humanoid.phases[0];
  ASSERT_GT(phase.step_height, 0);
  const auto result = run("talos-step-mass-wave", 0, "nominal", 0);
  const auto& s = result.summary;
  ASSERT_TRUE(s.ok()) << s.report();
  EXPECT_EQ(s.mujoco_warnings, 0);
  const heft::io::Log& log = result.log;
  const auto& truth = *log.truth;
  const int n = static_cast<int>(truth.time.size());
  ASSERT_EQ(n, 15001);
  ASSERT_EQ(truth.contact_names.size(), 8u);  // four corners per sole, left first
  for (int k = 0; k < n; ++k) {
    ASSERT_GT(truth.base_pose(k, 2), scenario.bounds.min_base_height) << k;
    ASSERT_LT(tiltAt(truth, k), scenario.bounds.max_tilt) << k;
  }
  EXPECT_LT(s.max_tracking_error, 0.06);
  EXPECT_LT(s.max_tilt, 0.06);
  // the mass wave is in the truth
  const sim::MassVariation& wave = scenario.model.mass_variations.at(0);
  ASSERT_EQ(truth.varying_body_names, std::vector<std::string>{"torso_2_joint"});
  for (int k = 0; k < n; k += 10) {
    EXPECT_NEAR(truth.varying_body_pi(k, 0), wave.massAt(truth.time[k]), 1e-9) << k;
  }
  // a sole is in the air when none of its corners touches; swings are air intervals > 150 ms
  // (shorter ones are a corner lifting as the load leaves it, or a bounce after a touchdown)
  auto soleForce = [&](int sole, int k) {
    double fz = 0;
    for (int c = 4 * sole; c < 4 * sole + 4; ++c) fz += truth.contact_forces(k, 3 * c + 2);
    return fz;
  };
  auto touches = [&](const heft::io::FlagMatrix& flags, int sole, int k) {
    for (int c = 4 * sole; c < 4 * sole + 4; ++c) {
      if (flags(k, c)) return true;
    }
    return false;
  };
  double largest_impact = 0;
  for (int sole = 0; sole < 2; ++sole) {
    const std::string name = truth.contact_names[4 * sole];
    int swings = 0, lifted_at = -1;
    for (int k = 1; k < n; ++k) {
      const bool on = touches(truth.contact_flags, sole, k);
      const bool was_on = touches(truth.contact_flags, sole, k - 1);
      if (was_on && !on) lifted_at = k;
      if (was_on || !on || lifted_at < 0) continue;
      const double air = (k - lifted_at) * 1e-3;
      lifted_at = -1;
      if (air < 0.15) continue;  // a corner, or a bounce after an impact (up to 62 ms)
      ++swings;
      // single support: the swing lasts about step_swing, the other sole stands throughout
      EXPECT_GT(air, 0.25) << name << " landing at t = " << truth.time[k];
      EXPECT_LT(air, 0.45) << name << " landing at t = " << truth.time[k];
      for (int j = k - static_cast<int>(air * 1000); j < k; ++j) {
        ASSERT_TRUE(touches(truth.contact_flags, 1 - sole, j)) << "both feet up at " << j;
      }
      // the touchdown is an impact: the landing sole's force jumps within 15 ms (a sole put
      // down at rest gains about 10 N in that time)
      double peak = 0;
      for (int j = k; j < std::min(n, k + 15); ++j) peak = std::max(peak, soleForce(sole, j));
      EXPECT_GT(peak, 30.0) << name << " landing at t = " << truth.time[k];
      largest_impact = std::max(largest_impact, peak);
    }
    EXPECT_EQ(swings, 5) << name;
    // the measured flags (noise, 15 N threshold) show the same single supports
    const auto& measured = *log.contacts;
    int air_samples = 0;
    for (int k = 0; k < measured.flags.rows(); ++k)
      air_samples += touches(measured.flags, sole, k) ? 0 : 1;
    EXPECT_GT(air_samples, 5 * 250) << name;
    EXPECT_LT(air_samples, 5 * 450) << name;
  }
  EXPECT_GT(largest_impact, 200.0) << "N";
  const auto report = heft::io::validateLog(log, model::loadRobot("talos").pinocchio());
  EXPECT_TRUE(report.ok()) << report.report();
  std::printf("largest touchdown force in 15 ms %.0f N; %s", largest_impact, s.report().c_str());

  // stepping options are checked
  sim::HumanoidMotionOptions bad = scenario.humanoid;
  bad.phases[0].step_transfer = 7.0;  // a step no longer fits in the phase
  EXPECT_THROW(bad.validate(), heft::InputError);
  bad = scenario.humanoid;
  bad.phases[0].step_landing_speed = -0.1;
  EXPECT_THROW(bad.validate(), heft::InputError);
  bad = scenario.humanoid;
  bad.soles.pop_back();
  EXPECT_THROW(bad.validate(), heft::InputError);
}

TEST(Scenarios, FourierReferenceStaysWithinLimits) {
  const model::RobotModel robot = model::loadRobot("panda");
  const sim::Scenario& scenario = sim::findScenario("panda");
  const sim::Reference ref = sim::fourierReference(robot, scenario.fourier, 12.0, 1e-3);
  const auto& pm = robot.pinocchio();
  for (int i = 0; i < pm.nv; ++i) {
    const double lo = pm.lowerPositionLimit[i], hi = pm.upperPositionLimit[i];
    const double margin = scenario.fourier.limit_margin * 0.5 * (hi - lo);
    EXPECT_GE(ref.q.row(i).minCoeff(), lo + margin - 1e-9) << i;
    EXPECT_LE(ref.q.row(i).maxCoeff(), hi - margin + 1e-9) << i;
    EXPECT_LE(ref.v.row(i).cwiseAbs().maxCoeff(),
              scenario.fourier.velocity_fraction * pm.velocityLimit[i] + 1e-9)
        << i;
    EXPECT_LE(ref.a.row(i).cwiseAbs().maxCoeff(), scenario.fourier.max_acceleration + 1e-9) << i;
    // it moves: at least a quarter of the allowed range is used
    EXPECT_GT(ref.q.row(i).maxCoeff() - ref.q.row(i).minCoeff(), 0.25 * (hi - lo - 2 * margin))
        << i;
  }
  // starts at rest
  EXPECT_LT(ref.v.col(0).norm(), 1e-12);
}

TEST(Scenarios, BadOptionsAreInputErrors) {
  sim::SimulationOptions options;
  options.noise = "loud";
  EXPECT_THROW(sim::simulate(sim::findScenario("panda"), options), heft::InputError);
  options.noise = "none";
  options.duration = -1;
  EXPECT_THROW(sim::simulate(sim::findScenario("panda"), options), heft::InputError);
  sim::Scenario broken = sim::findScenario("go2-stand");
  broken.stance.posture.resize(3);
  options.duration = 0.1;
  EXPECT_THROW(sim::simulate(broken, options), heft::InputError);
}

// ---- sensors ------------------------------------------------------------------------------------

TEST(Sensors, NominalProfileHasTheDocumentedStatistics) {
  const auto result = run("go2-payload-3kg", 2.0, "nominal", 5);
  ASSERT_TRUE(result.summary.ok()) << result.summary.report();
  const heft::io::Log& log = result.log;
  const auto& truth = *log.truth;
  const sim::NoiseProfile p = sim::NoiseProfile::fromName("nominal");
  const int n = static_cast<int>(log.joints.time.size());
  ASSERT_EQ(n, truth.time.size());
  // encoders: multiples of the resolution, error within noise + half a step
  const Eigen::ArrayXXd counts = log.joints.q.array() / p.encoder_resolution;
  EXPECT_LT((counts - counts.round()).abs().maxCoeff(), 1e-6);
  EXPECT_LT((log.joints.q - truth.q).cwiseAbs().maxCoeff(),
            6 * p.encoder_noise + p.encoder_resolution);
  // velocities: backward differences of the measured positions
  EXPECT_LT((log.joints.v.row(10) - (log.joints.q.row(10) - log.joints.q.row(9)) / 1e-3).norm(),
            1e-9);
  // torque: per-joint constant bias plus white noise of the documented size
  const Eigen::MatrixXd e = log.joints.tau - log.joints.tau_cmd;
  for (int j = 0; j < e.cols(); ++j) {
    const double mean = e.col(j).mean();
    const double std = std::sqrt((e.col(j).array() - mean).square().sum() / (n - 1));
    EXPECT_NEAR(std, p.torque_noise, 0.1 * p.torque_noise) << j;
    EXPECT_LT(std::abs(mean), 5 * p.torque_bias) << j;
  }
  // IMU at its rate, mocap at its rate with about 1 % dropouts and the calibration offset
  ASSERT_TRUE(log.imu && log.mocap && log.contacts);
  EXPECT_EQ(log.imu->time.size(), 1001);
  const double expected_mocap = 2.0 * p.mocap_rate + 1;
  EXPECT_LE(log.mocap->time.size(), expected_mocap);
  EXPECT_GE(log.mocap->time.size(), expected_mocap * (1 - 5 * p.mocap_dropout));
  EXPECT_LT((log.imu->time - truth.time(Eigen::seqN(0, 1001, 2))).cwiseAbs().maxCoeff(),
            p.imu_time_jitter + 1e-12);
  for (int s = 0; s < log.mocap->time.size(); s += 20) {
    const long k = std::lround(log.mocap->time[s] / 1e-3);
    const Eigen::Vector4d c = truth.base_pose.row(k).tail<4>().transpose();
    const Eigen::Matrix3d R = Eigen::Quaterniond(c[3], c[0], c[1], c[2]).toRotationMatrix();
    const Eigen::Vector3d offset =
        R.transpose() * (log.mocap->position.row(s) - truth.base_pose.row(k).head<3>()).transpose();
    EXPECT_LT((offset - p.mocap_position_offset).norm(), 6 * p.mocap_position_noise) << s;
  }
  // accelerometer: specific force near +g while standing
  EXPECT_NEAR(log.imu->accel(500, 2), 9.81, 0.5);  // t = 1 s, settled
  // contact flags all set while standing
  EXPECT_EQ(log.contacts->flags.row(500).sum(), 4);
}

TEST(Sensors, ProfilesAreKnownByName) {
  for (const auto& name : sim::NoiseProfile::names()) {
    const sim::NoiseProfile p = sim::NoiseProfile::fromName(name);
    EXPECT_EQ(p.name, name);
    EXPECT_NO_THROW(p.validate());
  }
  EXPECT_THROW(sim::NoiseProfile::fromName("medium"), heft::InputError);
  sim::NoiseProfile bad;
  bad.mocap_dropout = 1.5;
  EXPECT_THROW(bad.validate(), heft::InputError);
}

TEST(Sensors, RateThatDoesNotDivideThePhysicsRateIsAnInputError) {
  const model::RobotModel robot = model::loadRobot("go2");
  const sim::SimModel simulated(robot);
  sim::TruthRecord truth;
  truth.resize(10, simulated.nu(), 4, true);
  truth.time = Eigen::VectorXd::LinSpaced(10, 0, 9e-3);
  sim::NoiseProfile p;
  p.imu_rate = 300;
  EXPECT_THROW(sim::makeLog(simulated, truth, p, 0, "x"), heft::InputError);
}

// ---- one seed, one file -------------------------------------------------------------------------

TEST(Determinism, SameSeedGivesIdenticalFiles) {
  for (const std::string extension : {".h5", ""}) {
    const fs::path a = scratch("a" + extension), b = scratch("b" + extension),
                   c = scratch("c" + extension);
    heft::io::writeLog(run("go2-payload-3kg", 0.5, "harsh", 7).log, a.string());
    // HDF5 object headers can carry modification times (seconds): write the twin a second later
    std::this_thread::sleep_for(std::chrono::milliseconds(1100));
    heft::io::writeLog(run("go2-payload-3kg", 0.5, "harsh", 7).log, b.string());
    heft::io::writeLog(run("go2-payload-3kg", 0.5, "harsh", 8).log, c.string());
    const auto ca = contents(a), cb = contents(b), cc = contents(c);
    ASSERT_FALSE(ca.empty());
    EXPECT_TRUE(ca == cb) << "seed 7 twice gave different bytes ("
                          << (extension.empty() ? "CSV" : "HDF5") << ")";
    EXPECT_FALSE(ca == cc) << "seeds 7 and 8 gave the same bytes";
  }
}

TEST(Determinism, WrittenLogReadsBackAndValidates) {
  const auto result = run("panda-friction", 0.5, "nominal", 1);
  const fs::path file = scratch("panda.h5");
  heft::io::writeLog(result.log, file.string());
  const heft::io::Log back = heft::io::readLog(file.string());
  EXPECT_EQ(heft::io::firstDifference(result.log, back), "");
  const model::RobotModel robot = model::loadRobot("panda");
  const auto report = heft::io::validateLog(back, robot.pinocchio());
  EXPECT_TRUE(report.ok()) << report.report();
}

// ---- fixtures in data/fixtures are what `heft simulate` makes (docs/sim.md)
// -----------------------

// The committed fixtures are what the simulator makes today, value for value: the sensor models
// (torque offsets included, zero by default) left every existing log as it was.
TEST(Fixtures, ARunOfTheFixtureCommandGivesTheFixtureBitForBit) {
  const fs::path dir = fs::path(HEFT_SOURCE_DIR) / "data" / "fixtures";
  for (const auto& [file, scenario] : std::vector<std::pair<std::string, std::string>>{
           {"sim_go2_payload_3kg_2s.h5", "go2-payload-3kg"},
           {"sim_panda_friction_2s.h5", "panda-friction"}}) {
    const heft::io::Log fixture = heft::io::readLog((dir / file).string());
    const auto result = run(scenario, 2, "nominal", 1);
    ASSERT_TRUE(result.summary.ok()) << result.summary.report();
    EXPECT_EQ(heft::io::firstDifference(result.log, fixture), "") << file;
  }
}

TEST(Fixtures, ReadAndValidate) {
  const fs::path dir = fs::path(HEFT_SOURCE_DIR) / "data" / "fixtures";
  std::uintmax_t total = 0;
  int found = 0;
  for (const auto& [name, robot_name] : std::vector<std::pair<std::string, std::string>>{
           {"sim_go2_payload_3kg_2s.h5", "go2"}, {"sim_panda_friction_2s.h5", "panda"}}) {
    const fs::path file = dir / name;
    ASSERT_TRUE(fs::exists(file)) << file << " (regenerate: docs/sim.md, Fixtures)";
    total += fs::file_size(file);
    const heft::io::Log log = heft::io::readLog(file.string());
    const auto report = heft::io::validateLog(log, model::loadRobot(robot_name).pinocchio());
    EXPECT_TRUE(report.ok()) << report.report();
    ASSERT_TRUE(log.truth.has_value());
    EXPECT_NEAR(log.joints.time[log.joints.time.size() - 1], 2.0, 1e-3);
    ++found;
  }
  EXPECT_EQ(found, 2);
  EXPECT_LT(total, 5u * 1024 * 1024);
}

// ---- closed loops ---------------------------------------------------------------------------

namespace {

// The four-bar leg in MuJoCo: the loop's connect equality keeps the anchors together while the
// motors drive it (stiffened solref: within 0.1 mm under these torques), the passive joints get
// no torque, and the knee follows the motor through the linkage.
TEST(SimModel, FourBarLoopStaysClosedAndItsPassiveJointsGetNoTorque) {
  const heft::model::RobotModel leg = heft::model::loadRobot("fourbar_leg");
  ASSERT_EQ(leg.loops().size(), 1u);
  heft::sim::SimModelOptions options;
  options.passive_joints = {"knee", "coupler_hinge"};
  const heft::sim::SimModel sim(leg, options);
  const pinocchio::Model& pm = leg.pinocchio();
  auto data = sim.makeData();
  mjData* d = data.get();
  Eigen::VectorXd q = pinocchio::neutral(pm), v = Eigen::VectorXd::Zero(pm.nv);
  sim.setState(d, q, v);
  Eigen::VectorXd tau_cmd = Eigen::VectorXd::Constant(sim.nu(), 0.8), tau;
  sim.applyActuators(tau_cmd, tau);
  for (int k = 0; k < sim.nu(); ++k)
    EXPECT_EQ(tau[k], sim.isPassive(k) ? 0.0 : 0.8) << sim.jointNames()[k];
  const mjModel* m = sim.mujoco();
  const std::string loop = leg.loops()[0].name;
  const int s1 = mj_name2id(m, mjOBJ_SITE, ("heft_" + loop + "_anchor1").c_str());
  const int s2 = mj_name2id(m, mjOBJ_SITE, ("heft_" + loop + "_anchor2").c_str());
  ASSERT_GE(s1, 0);
  ASSERT_GE(s2, 0);
  double gap = 0;
  const int hip = pm.joints[pm.getJointId("hip")].idx_v();
  const int motor_v = pm.joints[pm.getJointId("knee_motor")].idx_v();
  for (int k = 0; k < 1500; ++k) {
    sim.step1(d);
    sim.getState(d, q, v);
    // PD towards a swing of the hip and a half-radian sweep of the motor
    const double t = k * 1e-3;
    tau_cmd[hip] = 60 * (0.5 * std::sin(4 * t) - q[hip]) - 6 * v[hip];
    tau_cmd[motor_v] = 20 * (0.5 * std::sin(7 * t) - q[motor_v]) - 0.9 * v[motor_v];
    sim.applyActuators(tau_cmd, tau);
    sim.setJointTorques(d, tau);
    sim.step2(d);
    const Eigen::Map<const Eigen::Vector3d> p1(d->site_xpos + 3 * s1), p2(d->site_xpos + 3 * s2);
    gap = std::max(gap, (p1 - p2).norm());
  }
  sim.getState(d, q, v);
  EXPECT_LT(gap, 1e-4) << "largest anchor distance [m]";
  const double motor = q[pm.joints[pm.getJointId("knee_motor")].idx_q()];
  const double knee = q[pm.joints[pm.getJointId("knee")].idx_q()];
  EXPECT_GT(std::abs(motor), 0.05);
  EXPECT_NEAR(knee / motor, 0.8, 0.15) << "the knee follows the motor at about crank / lever";
}

}  // namespace
