// heft::estimation's inverse-dynamics formulation (bayesian-sysid secs. V, VIII): the stage's
// Jacobians (residual, step and equality rows) against central differences on the manifold, the
// Riccati step with the equality rows eliminated against the dense KKT system, iterations without
// allocation, the MuJoCo pendulum estimated through both formulations, and bad input.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <limits>
#include <memory>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include <Eigen/Dense>
#include <pinocchio/algorithm/frames.hpp>
#include <pinocchio/algorithm/joint-configuration.hpp>
#include <pinocchio/algorithm/kinematics.hpp>

#include "heft/common/error.hpp"
#include "heft/dynamics/contact_dynamics.hpp"
#include "heft/dynamics/impulse_dynamics.hpp"
#include "heft/estimation/actuator_terms.hpp"
#include "heft/estimation/inverse_dynamics_stage.hpp"
#include "heft/estimation/log_problem.hpp"
#include "heft/estimation/multibody_stage.hpp"
#include "heft/estimation/riccati_solver.hpp"
#include "heft/inertia/inertia.hpp"
#include "heft/io/log_io.hpp"
#include "heft/model/model.hpp"
#include "heft/results/truth.hpp"
#include "heft/sim/scenario.hpp"
#include "support/dense_kkt.hpp"
#include "support/finite_difference.hpp"
#include "support/malloc_counter.hpp"
#include "support/random_problem.hpp"
#include "support/simulated_log.hpp"

namespace heft {
namespace {

using Eigen::MatrixXd;
using Eigen::VectorXd;
using estimation::InverseDynamicsStageModel;
using estimation::MultibodyMeasurement;
using estimation::MultibodyNoise;
using estimation::MultibodyStageModel;
using estimation::MultibodyState;
using estimation::Problem;
using estimation::RiccatiOptions;
using estimation::RiccatiSolver;
using estimation::StageModel;
using test::randomState;

// The four-bar knee leg (data/robots/fourbar_leg.xml): one closed loop, two passive joints.
const std::string kFourBar = std::string(HEFT_SOURCE_DIR) + "/data/robots/fourbar_leg.xml";

// A spatial loop (three rows): two chains under one fixed root body, hinges about x, y, z and a
// tilted axis, joined by a connect; written once to the temporary folder. (With the two chains
// as two bodies of the world, Pinocchio's MJCF parser reported the second chain's bodies
// missing.)
const std::string& spatialLoop() {
  static const std::string path = [] {
    const std::string p = (std::filesystem::temp_directory_path() /
                           ("heft_spatial_loop_" + std::to_string(::getpid()) + ".xml"))
                              .string();
    std::ofstream(p) << R"(<mujoco model="spatial_loop">
  <compiler angle="radian"/>
  <worldbody>
    <body name="frame" pos="0 0 0">
    <body name="a" pos="0 0 0">
      <joint name="ja" type="hinge" axis="1 0 0"/>
      <inertial pos="0 0 -0.1" mass="1" diaginertia="0.01 0.01 0.002"/>
      <body name="b" pos="0 0 -0.2">
        <joint name="jb" type="hinge" axis="0 1 0"/>
        <inertial pos="0.05 0 -0.05" mass="0.5" diaginertia="0.003 0.003 0.001"/>
      </body>
    </body>
    <body name="c" pos="0.1 0.05 0">
      <joint name="jc" type="hinge" axis="0 0 1"/>
      <inertial pos="0 0 -0.1" mass="0.8" diaginertia="0.008 0.008 0.001"/>
      <body name="d" pos="0 0 -0.15">
        <joint name="jd" type="hinge" axis="1 1 0"/>
        <inertial pos="0 0 -0.05" mass="0.3" diaginertia="0.002 0.002 0.0005"/>
      </body>
    </body>
    </body>
  </worldbody>
  <equality>
    <connect body1="b" body2="d" anchor="0.1 0.05 -0.1"/>
  </equality>
</mujoco>
)";
    return p;
  }();
  return path;
}

// A horizon of inverse-dynamics stages with random readings (the derivative and KKT tests need
// states, not physics): encoders with velocities, and on a floating base an IMU (gyro and
// orientation) and motion capture on rotated, offset frames of the base; actuator terms on the
// first two 1-dof joints when asked.
struct InverseProblem {
  std::shared_ptr<const pinocchio::Model> model;
  std::shared_ptr<const dynamics::ForwardDynamicsModel> dynamics;
  std::shared_ptr<const MultibodyState> state;
  std::shared_ptr<const estimation::ActuatorTermsModel> actuators;
  std::shared_ptr<const Problem> problem;
};

// contact_dimension: 0 none; 3 or 6: every foot of the robot in contact at every stage, as point
// or flat contacts, with Baumgarte damping (its K_d term in the rows). touchdown: the even stages
// start with the feet's impulse (v+ and Lambda decisions, the impulse rows).
InverseProblem makeInverseProblem(const std::string& robot,
                                  const std::vector<pinocchio::JointIndex>& S, int horizon,
                                  double dt, std::mt19937& rng, bool with_actuators,
                                  int contact_dimension = 0, bool project_noise = false,
                                  bool touchdown = false, bool energy = false,
                                  std::vector<std::string> feet = {}) {
  InverseProblem p;
  const model::RobotModel loaded = model::loadRobot(robot);
  auto model = std::make_shared<pinocchio::Model>(loaded.pinocchio());
  std::normal_distribution<double> n(0, 1);
  const bool floating = loaded.hasFreeFlyer();
  if (floating) {
    for (const char* name : {"test_imu", "test_marker"}) {
      const Eigen::Vector3d w(0.5 * n(rng), 0.5 * n(rng), 0.5 * n(rng));
      const pinocchio::SE3 placement(Eigen::AngleAxisd(w.norm(), w.normalized()).toRotationMatrix(),
                                     Eigen::Vector3d(0.1, -0.05, 0.08));
      model->addFrame(pinocchio::Frame(name, 1, placement, pinocchio::OP_FRAME));
    }
  }
  p.model = model;
  p.dynamics = std::make_shared<dynamics::ForwardDynamicsModel>(
      *model, S, inertia::Parametrization::ExponentialEigenvalue);
  p.state = std::make_shared<MultibodyState>(p.model);
  auto sensors = std::make_shared<estimation::MultibodySensors>();
  std::vector<std::string> one_dof;
  for (pinocchio::JointIndex j = 1; j < model->joints.size(); ++j)
    if (model->joints[j].nq() == 1) {
      sensors->encoders.push_back(j);
      one_dof.push_back(model->names[j]);
    }
  sensors->joint_velocities = true;
  sensors->encoder_std = 0.01;
  sensors->joint_velocity_std = 0.1;
  sensors->energy = energy;
  sensors->energy_std = 0.05;
  if (floating) {
    sensors->imu_frame = model->getFrameId("test_imu");
    sensors->mocap_frame = model->getFrameId("test_marker");
    sensors->accelerometer = true;
    sensors->accelerometer_std = 0.5;
  }
  if (with_actuators) {
    estimation::ActuatorTermsOptions terms;
    terms.friction_joints = terms.armature_joints =
        terms.torque_offset_joints = {one_dof[0], one_dof[1]};
    p.actuators = std::make_shared<estimation::ActuatorTermsModel>(*model, terms);
  }
  std::shared_ptr<const dynamics::ContactDynamicsModel> contact;
  std::shared_ptr<const dynamics::ImpulseDynamicsModel> projection, impulse;
  if (contact_dimension > 0) {
    if (feet.empty()) feet = loaded.contactFrames();
    std::vector<dynamics::ContactSpec> specs;
    for (const auto& frame : feet)
      specs.push_back({frame,
                       contact_dimension == 3 ? dynamics::ContactSpec::Type::Point3D
                                              : dynamics::ContactSpec::Type::Surface6D,
                       pinocchio::LOCAL_WORLD_ALIGNED});
    dynamics::ContactOptions contact_options;
    contact_options.baumgarte_kd = 7;
    contact = std::make_shared<dynamics::ContactDynamicsModel>(
        *model, specs, S, inertia::Parametrization::ExponentialEigenvalue, contact_options);
    if (project_noise || touchdown) {
      auto feet_impulse = std::make_shared<dynamics::ImpulseDynamicsModel>(
          *model, specs, S, inertia::Parametrization::ExponentialEigenvalue);
      // with loops the stage projects on the feet and the loops itself (project_on_loops)
      if (project_noise && loaded.loops().empty()) projection = feet_impulse;
      if (touchdown) impulse = feet_impulse;
    }
  }
  const int nv = model->nv, nj = static_cast<int>(sensors->encoders.size());
  MultibodyNoise noise;
  noise.configuration = VectorXd::Constant(nv, 0.01);
  noise.generalized_force = VectorXd::Constant(nv, 0.5);
  std::vector<std::shared_ptr<const StageModel>> running;
  std::shared_ptr<const StageModel> terminal;
  for (int k = 0; k <= horizon; ++k) {
    MultibodyMeasurement z;
    z.tau = VectorXd::NullaryExpr(nv, [&] { return 0.5 * n(rng); });
    z.joint_q = VectorXd::NullaryExpr(nj, [&] { return 0.3 * n(rng); });
    z.joint_v = VectorXd::NullaryExpr(nj, [&] { return 0.3 * n(rng); });
    if (floating) {
      z.has_gyro = z.has_imu_orientation = true;
      z.gyro = Eigen::Vector3d(n(rng), n(rng), n(rng)) * 0.3;
      z.has_accel = k % 3 != 1;  // absent samples keep zero-weight rows
      z.accel = Eigen::Vector3d(n(rng), n(rng), 9.81 + n(rng));
      z.has_mocap = k % 2 == 0;
      z.mocap_position = Eigen::Vector3d(n(rng), n(rng), n(rng)) * 0.1;
    }
    if (k < horizon)
      running.push_back(std::make_shared<InverseDynamicsStageModel>(
          p.dynamics, p.state, sensors, noise, z, dt, p.actuators, contact, loaded.loops(),
          estimation::LoopGains{}, projection, k % 2 == 0 ? impulse : nullptr,
          project_noise && !loaded.loops().empty()));
    else
      terminal = std::make_shared<MultibodyStageModel>(p.dynamics, nullptr, p.state, sensors, noise,
                                                       z, dt, true, nullptr, p.actuators);
  }
  p.problem = std::make_shared<Problem>(
      p.state, running, terminal,
      test::randomArrivalPrior(*p.state, *p.dynamics, p.actuators.get(), rng));
  return p;
}

// A random point of a stage: w = (w_q, a, e, lambda[, v+, Lambda]).
void randomPoint(const InverseProblem& p, std::mt19937& rng, VectorXd& x, VectorXd& w,
                 VectorXd& theta, int knot = 0) {
  std::normal_distribution<double> n(0, 1);
  const auto& stage = dynamic_cast<const InverseDynamicsStageModel&>(
      p.problem->running(std::min(knot, p.problem->horizon() - 1)));
  const int nv = p.model->nv, nw = stage.nw();
  x = randomState(*p.state, rng, 0.4);
  w.resize(nw);
  w.head(nv) = VectorXd::NullaryExpr(nv, [&] { return 0.02 * n(rng); });
  w.segment(nv, nv) = VectorXd::NullaryExpr(nv, [&] { return 2.0 * n(rng); });
  w.segment(2 * nv, nv) = VectorXd::NullaryExpr(nv, [&] { return 0.5 * n(rng); });
  const int nf = stage.numForces();
  w.segment(3 * nv, nf) = VectorXd::NullaryExpr(nf, [&] { return 30.0 * n(rng); });
  if (stage.hasImpulse()) {  // v+ near v, impulses of a few N s
    const int start = stage.impulseStart();
    w.segment(start, nv) = x.tail(nv) + VectorXd::NullaryExpr(nv, [&] { return 0.3 * n(rng); });
    w.tail(nw - start - nv) = VectorXd::NullaryExpr(nw - start - nv, [&] { return 3.0 * n(rng); });
  }
  theta = p.problem->arrival().theta_mean;
  theta += VectorXd::NullaryExpr(theta.size(), [&] { return 0.05 * n(rng); });
}

// Every Jacobian of the stage (R, F, H w.r.t. x on the manifold, w and theta) against central
// differences, each output block with its own tolerance (tests/support/finite_difference.hpp).
void checkStageJacobians(const InverseProblem& p, const std::string& name, unsigned seed) {
  std::mt19937 rng(seed);
  VectorXd x, w, theta;
  randomPoint(p, rng, x, w, theta);
  const StageModel& stage = p.problem->running(0);
  const MultibodyState& state = *p.state;
  const int ndx = stage.ndx(), nr = stage.nr(), nh = stage.nh();
  auto data = stage.createData();
  stage.calc(*data, x, w, theta);
  const VectorXd f0 = data->xnext;
  stage.calcDiff(*data, x, w, theta);
  // [r; h; f ⊖ f0]
  auto outputs = [&](const VectorXd& xx, const VectorXd& ww, const VectorXd& tt) {
    auto d = stage.createData();
    stage.calc(*d, xx, ww, tt);
    VectorXd diff(ndx);
    state.difference(f0, d->xnext, diff);
    VectorXd out(nr + nh + ndx);
    out << d->r, d->h, diff;
    return out;
  };
  const auto dx = test::centralDifferences(
      x, ndx,
      [&](const VectorXd& at, const VectorXd& step) {
        VectorXd out(at.size());
        state.integrate(at, step, out);
        return out;
      },
      [&](const VectorXd& xx) { return outputs(xx, w, theta); });
  const auto dw = test::centralDifferencesInVectorSpace(
      w, [&](const VectorXd& ww) { return outputs(x, ww, theta); });
  const auto dt = test::centralDifferencesInVectorSpace(
      theta, [&](const VectorXd& tt) { return outputs(x, w, tt); });
  const struct {
    const char* what;
    const test::NumericalJacobian& numeric;
    const MatrixXd &R, &H, &F;
  } blocks[] = {{"x", dx, data->R_x, data->H_x, data->F_x},
                {"w", dw, data->R_w, data->H_w, data->F_w},
                {"theta", dt, data->R_theta, data->H_theta, data->F_theta}};
  for (const auto& b : blocks) {
    test::expectJacobianNear(b.R, b.numeric.rows(0, nr), name + " R_" + b.what);
    test::expectJacobianNear(b.H, b.numeric.rows(nr, nh), name + " H_" + b.what);
    // f ⊖ f0 is O(h) while its rounding is that of the states it is computed from
    test::NumericalJacobian F = b.numeric.rows(nr + nh, ndx);
    F.options.rounding_scale = f0.cwiseAbs().maxCoeff();
    test::expectJacobianNear(b.F, F, name + " F_" + b.what);
  }
}

TEST(InverseDynamicsStage, JacobiansMatchCentralDifferences) {
  std::mt19937 rng(3);
  checkStageJacobians(makeInverseProblem("double_pendulum", {1, 2}, 1, 0.01, rng, false),
                      "double pendulum", 31);
  checkStageJacobians(makeInverseProblem("double_pendulum", {2}, 1, 0.01, rng, true),
                      "double pendulum, actuator terms", 32);
  checkStageJacobians(makeInverseProblem("panda", {4, 7}, 1, 0.002, rng, true),
                      "panda, actuator terms", 33);
  // a floating base in flight: the free flyer's curved block in q, F and the RNEA's base rows
  checkStageJacobians(makeInverseProblem("go2", {1, 3}, 1, 0.005, rng, true), "go2 in flight", 34);
  // four feet in contact: the forces' generalized force J^T lambda and the contact rows a_c + K_d
  // v_c, as points and as flat contacts
  checkStageJacobians(makeInverseProblem("go2", {1, 3}, 1, 0.005, rng, true, 3),
                      "go2, four point contacts", 35);
  checkStageJacobians(makeInverseProblem("go2", {1}, 1, 0.005, rng, false, 6),
                      "go2, four flat contacts", 36);
  // the configuration noise projected on the feet's nullspace (eq. 36): N(q; theta) w_q in F,
  // with d / dq, d / d theta (inertias and armature) through the impulse derivatives
  checkStageJacobians(makeInverseProblem("go2", {1, 3}, 1, 0.005, rng, true, 3, true),
                      "go2, four point contacts, projected noise", 40);
  checkStageJacobians(makeInverseProblem("talos", {2}, 1, 0.005, rng, true, 6, true),
                      "TALOS, two flat feet, projected noise", 41);
  // a touchdown: v+ and the impulses as decisions, the impulse rows M (v+ - v) - J^T Lambda and
  // v_c(q, v+), the step, the contact rows and the accelerometer at v+
  checkStageJacobians(makeInverseProblem("go2", {1, 3}, 1, 0.005, rng, true, 3, false, true),
                      "go2, touchdown on four point contacts", 44);
  checkStageJacobians(makeInverseProblem("talos", {1, 2}, 1, 0.005, rng, true, 6, true, true),
                      "TALOS, touchdown on two flat feet, projected noise", 45);
  // energy observations: the last row through q, v (or v+), a and theta (inertias, friction,
  // armature)
  checkStageJacobians(
      makeInverseProblem("double_pendulum", {1, 2}, 1, 0.01, rng, true, 0, false, false, true),
      "double pendulum, actuator terms, energy", 46);
  checkStageJacobians(makeInverseProblem("go2", {1, 3}, 1, 0.005, rng, true, 3, false, false, true),
                      "go2, four point contacts, energy", 47);
  checkStageJacobians(makeInverseProblem("go2", {1, 3}, 1, 0.005, rng, true, 3, false, true, true),
                      "go2, touchdown, energy", 48);
  // a closed loop: its rows (relative acceleration, Baumgarte velocity and position terms), the
  // force's generalized force and the second body's geometric stiffness
  for (unsigned seed : {37u, 38u, 39u})
    checkStageJacobians(makeInverseProblem(kFourBar, {2, 3, 4}, 1, 0.002, rng, true),
                        "four-bar leg", seed);
  // a spatial loop: all three rows, the first anchor's frame turned to no particular axes
  ASSERT_EQ(model::loadRobot(spatialLoop()).loops().at(0).dimension, 3);
  for (unsigned seed : {42u, 43u})
    checkStageJacobians(makeInverseProblem(spatialLoop(), {2, 4}, 1, 0.002, rng, true),
                        "spatial loop", seed);
}

// The four-bar leg (data/robots/fourbar_leg.urdf and its loop file) on a free-flyer, with a foot
// frame at the shank's tip: a closed loop and a point contact in one stage. Written once to the
// temporary folder, the loop file beside it under the same stem.
const std::string& floatingFourBar() {
  static const std::string path = [] {
    const std::filesystem::path dir = std::filesystem::temp_directory_path() /
                                      ("heft_floating_fourbar_" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir);
    const std::string source = std::string(HEFT_SOURCE_DIR) + "/data/robots/fourbar_leg";
    std::ifstream in(source + ".urdf");
    std::string urdf((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const std::string foot = R"(  <link name="foot"/>
  <joint name="foot_fixed" type="fixed">
    <parent link="shank"/>
    <child link="foot"/>
    <origin xyz="0 0 -0.3"/>
  </joint>
</robot>)";
    urdf.replace(urdf.rfind("</robot>"), std::string("</robot>").size(), foot);
    std::ofstream((dir / "floating_fourbar.urdf").string()) << urdf;
    std::filesystem::copy_file(source + ".loops.xml", dir / "floating_fourbar.loops.xml",
                               std::filesystem::copy_options::overwrite_existing);
    return (dir / "floating_fourbar.urdf").string();
  }();
  return path;
}

TEST(InverseDynamicsStage, TouchdownWithAClosedLoopJacobiansMatchCentralDifferences) {
  // the reset map gains the loop's impulse (a decision) in the impulse balance with its geometric
  // stiffness, and the loop's relative velocity at v+ as rows
  std::mt19937 rng(5);
  const model::RobotModel leg = model::loadRobot(floatingFourBar());
  ASSERT_TRUE(leg.hasFreeFlyer());
  ASSERT_EQ(leg.loops().size(), 1u);
  const pinocchio::JointIndex shank = leg.pinocchio().getJointId("knee");
  const pinocchio::JointIndex coupler = leg.pinocchio().getJointId("coupler_hinge");
  {  // rows: torque balance, foot, loop; impulse balance, foot's and loop's velocities at v+
    const InverseProblem p = makeInverseProblem(floatingFourBar(), {shank}, 1, 0.002, rng, true, 3,
                                                false, true, false, {"foot"});
    const int nv = p.model->nv;
    EXPECT_EQ(p.problem->running(0).nh(), 2 * (nv + 3 + 2));
  }
  for (unsigned seed : {51u, 52u, 53u})
    checkStageJacobians(makeInverseProblem(floatingFourBar(), {shank, coupler}, 1, 0.002, rng, true,
                                           3, false, true, false, {"foot"}),
                        "floating four-bar, touchdown", seed);
  checkStageJacobians(makeInverseProblem(floatingFourBar(), {shank}, 1, 0.002, rng, true, 3, false,
                                         true, true, {"foot"}),
                      "floating four-bar, touchdown, energy", 54);
}

// The configuration noise projected on the loops' rows (and the feet's) together, N(q; theta)
// w_q from heft's own KKT solve: d / dq through the RNEA's derivatives with the multipliers as
// forces (the loop's geometric stiffness included) and the rows' velocity derivatives at N w_q,
// N itself, and d / dtheta (inertias and armature).
TEST(InverseDynamicsStage, NoiseProjectedOnALoopJacobiansMatchCentralDifferences) {
  std::mt19937 rng(7);
  for (unsigned seed : {61u, 62u})
    checkStageJacobians(makeInverseProblem(kFourBar, {2, 3, 4}, 1, 0.002, rng, true, 0, true),
                        "four-bar leg, projected noise", seed);
  checkStageJacobians(makeInverseProblem(spatialLoop(), {2, 4}, 1, 0.002, rng, true, 0, true),
                      "spatial loop, projected noise", 63);
  const pinocchio::JointIndex shank =
      model::loadRobot(floatingFourBar()).pinocchio().getJointId("knee");
  checkStageJacobians(makeInverseProblem(floatingFourBar(), {shank}, 1, 0.002, rng, true, 3, true,
                                         false, false, {"foot"}),
                      "floating four-bar on its foot, projected noise", 64);
  checkStageJacobians(makeInverseProblem(floatingFourBar(), {shank}, 1, 0.002, rng, true, 3, true,
                                         true, false, {"foot"}),
                      "floating four-bar, touchdown, projected noise", 65);
}

// N w_q from the loop projection is in the rows' nullspace (the loop's relative velocity at
// N w_q is zero) and N is a projector (N N = N).
TEST(InverseDynamicsStage, NoiseProjectedOnALoopMovesAlongTheLoop) {
  std::mt19937 rng(8);
  const InverseProblem p = makeInverseProblem(kFourBar, {2, 3, 4}, 1, 0.002, rng, true, 0, true);
  VectorXd x, w, theta;
  randomPoint(p, rng, x, w, theta);
  const StageModel& stage = p.problem->running(0);
  auto data = stage.createData();
  stage.calc(*data, x, w, theta);
  stage.calcDiff(*data, x, w, theta);
  const int nv = p.model->nv;
  const MatrixXd N = data->F_w.topLeftCorner(nv, nv);  // B2 N, and B2 = I on revolute joints
  const VectorXd u = N * w.head(nv);
  EXPECT_LE((N * u - u).norm(), 1e-9 * (1 + u.norm()));
  EXPECT_GT((u - w.head(nv)).norm(), 1e-3 * w.head(nv).norm());  // it did project
  const model::RobotModel leg = model::loadRobot(kFourBar);
  pinocchio::Data pin(leg.pinocchio());
  pinocchio::forwardKinematics(leg.pinocchio(), pin, VectorXd(x.head(p.model->nq)), u);
  const model::LoopClosure& loop = leg.loops()[0];
  const auto world = pinocchio::LOCAL_WORLD_ALIGNED;
  const Eigen::Vector3d relative =
      pinocchio::getFrameVelocity(leg.pinocchio(), pin, loop.frame1, world).linear() -
      pinocchio::getFrameVelocity(leg.pinocchio(), pin, loop.frame2, world).linear();
  EXPECT_LE(relative.norm(), 1e-9 * (1 + u.norm()));
}

// The stage's Gauss-Newton terms and linear residual are its rows' dense products.
TEST(InverseDynamicsStage, GaussNewtonTermsEqualDenseProducts) {
  std::mt19937 rng(4);
  // a touchdown with energy observations: the rank-one energy row and the v+ columns
  const InverseProblem p =
      makeInverseProblem("go2", {1}, 1, 0.005, rng, true, 3, false, true, true);
  VectorXd x, w, theta;
  randomPoint(p, rng, x, w, theta);
  const StageModel& stage = p.problem->running(0);
  auto d = stage.createData();
  stage.calc(*d, x, w, theta);
  stage.calcDiff(*d, x, w, theta);
  const int ndx = stage.ndx(), nw = stage.nw(), np = stage.np();
  MatrixXd xx(ndx, ndx), xw(ndx, nw), ww(nw, nw), xt(ndx, np), wt(nw, np), tt(np, np);
  VectorXd gx(ndx), gw(nw), gt(np);
  estimation::GaussNewtonTerms terms{xx, xw, ww, xt, wt, tt, gx, gw, gt};
  stage.gaussNewton(*d, terms);
  const double tol = 1e-10 * (1 + d->R_x.cwiseAbs().maxCoeff() + d->R_w.cwiseAbs().maxCoeff());
  auto near = [&](const MatrixXd& a, const MatrixXd& b, const char* what) {
    EXPECT_LE((a - b).cwiseAbs().maxCoeff(), tol * (1 + b.cwiseAbs().maxCoeff())) << what;
  };
  near(xx.selfadjointView<Eigen::Lower>(), d->R_x.transpose() * d->R_x, "xx");
  near(xw, d->R_x.transpose() * d->R_w, "xw");
  near(ww, d->R_w.transpose() * d->R_w, "ww");
  near(xt, d->R_x.transpose() * d->R_theta, "xt");
  near(wt, d->R_w.transpose() * d->R_theta, "wt");
  near(tt, d->R_theta.transpose() * d->R_theta, "tt");
  near(gx, d->R_x.transpose() * d->r, "x");
  near(gw, d->R_w.transpose() * d->r, "w");
  near(gt, d->R_theta.transpose() * d->r, "t");
  std::normal_distribution<double> n(0, 1);
  const VectorXd ex = VectorXd::NullaryExpr(ndx, [&] { return n(rng); });
  const VectorXd ew = VectorXd::NullaryExpr(nw, [&] { return n(rng); });
  const VectorXd et = VectorXd::NullaryExpr(np, [&] { return n(rng); });
  VectorXd e(stage.nr());
  stage.linearResidual(*d, ex, ew, et, e);
  near(e, d->R_x * ex + d->R_w * ew + d->R_theta * et, "linear residual");
}

// The Riccati step with the equality rows eliminated on H_w's nullspace (eqs. 76-79) is the dense
// KKT solution of the same linearization with the rows as constraints, at a guess with gaps and
// violated rows; the rows hold along the linear rollout.
TEST(RiccatiSolver, EqualityRowsStepEqualsDenseKkt) {
  std::mt19937 rng(5);
  // the double pendulum; go2 in flight; go2 on four feet; the four-bar leg (a loop's rows)
  // 4: go2 on four point feet with the configuration noise projected (eq. 36); 5: go2's touchdowns
  // (every other stage, v+ and the impulses decisions), 6: TALOS', flat feet; -3: the four-bar
  // leg on a floating base, its foot's touchdowns (the loop's impulse and velocity rows); -4: the
  // four-bar leg with the configuration noise projected on its loop
  for (int contact : {-1, 0, 3, -2, 4, 5, 6, -3, -4}) {
    SCOPED_TRACE(contact);
    const InverseProblem p =
        contact == -1   ? makeInverseProblem("double_pendulum", {1, 2}, 5, 0.01, rng, true)
        : contact == -2 ? makeInverseProblem(kFourBar, {2, 4}, 5, 0.002, rng, true)
        : contact == -3 ? makeInverseProblem(floatingFourBar(), {3, 5}, 5, 0.002, rng, true, 3,
                                             false, true, false, {"foot"})
        : contact == -4 ? makeInverseProblem(kFourBar, {2, 4}, 5, 0.002, rng, true, 0, true)
        : contact == 4  ? makeInverseProblem("go2", {1, 2}, 5, 0.005, rng, true, 3, true)
        : contact == 5  ? makeInverseProblem("go2", {1, 2}, 5, 0.005, rng, true, 3, false, true)
        : contact == 6  ? makeInverseProblem("talos", {1, 2}, 4, 0.005, rng, true, 6, false, true)
                        : makeInverseProblem("go2", {1, 2}, 5, 0.005, rng, true, contact);
    const int N = p.problem->horizon();
    std::vector<VectorXd> xs, ws;
    VectorXd theta;
    for (int k = 0; k <= N; ++k) {
      VectorXd x, w;
      randomPoint(p, rng, x, w, theta, k);
      xs.push_back(x);
      if (k < N) ws.push_back(w);
    }
    const test::Direction dense = test::denseKktDirection(*p.problem, xs, ws, theta);
    const test::DenseKkt kkt = test::denseKktSystem(*p.problem, xs, ws, theta);
    double scale = 1 + dense.dtheta.cwiseAbs().maxCoeff();
    for (const auto& v : dense.dx) scale = std::max(scale, v.cwiseAbs().maxCoeff());
    for (const auto& v : dense.dw) scale = std::max(scale, v.cwiseAbs().maxCoeff());
    const double tol = 1e-8 * scale;
    RiccatiOptions options;
    options.regularization = 0;
    options.min_regularization = 0;
    options.theta_trust_radius = options.max_theta_trust_radius;
    RiccatiSolver solver(p.problem, options);
    solver.setInitialGuess(xs, ws, theta);
    ASSERT_TRUE(solver.computeDirection());
    const test::Direction riccati{solver.directionX(), solver.directionW(),
                                  solver.directionTheta()};
    // Both solves are backward stable: the Riccati step solves a system within a few eps of this
    // one (measured 5e-17 to 1.4e-16, the LU's 4e-19 to 2e-18; 1e-15 and 1.3e-15 with the
    // projected noise).
    const double backward_error = kkt.backwardError(riccati);
    std::cout << "backward error: riccati " << backward_error << ", dense LU "
              << kkt.backwardError(dense) << "\n";
    EXPECT_LE(backward_error, 100 * std::numeric_limits<double>::epsilon());
    // Their forward difference is that times the system's condition: within 1e-8 of the step's
    // size without contacts. With four feet the rows mix N, m/s^2 and rad and the two solutions
    // differ by up to 2.4e-8 of a 778 step (contact forces) at that backward error, so there the
    // backward error is the comparison; so with the noise projected on the four-bar's loop, where
    // N w_q drops w_q's directions across the loop from the dynamics and leaves them to their
    // prior (3.6e-6 of a 270 step at a backward error of 1.3e-15).
    const bool backward_only = contact > 0 || contact == -3 || contact == -4;
    for (int k = 0; !backward_only && k <= N; ++k)
      EXPECT_LE((solver.directionX()[k] - dense.dx[k]).cwiseAbs().maxCoeff(), tol) << "dx " << k;
    if (!backward_only)
      EXPECT_LE((solver.directionTheta() - dense.dtheta).cwiseAbs().maxCoeff(), tol);
    for (int k = 0; k < N; ++k) {
      if (!backward_only)
        EXPECT_LE((solver.directionW()[k] - dense.dw[k]).cwiseAbs().maxCoeff(), tol) << "dw " << k;
      auto d = p.problem->running(k).createData();
      p.problem->running(k).calc(*d, xs[k], ws[k], theta);
      p.problem->running(k).calcDiff(*d, xs[k], ws[k], theta);
      const VectorXd linearized = d->h + d->H_x * solver.directionX()[k] +
                                  d->H_w * solver.directionW()[k] +
                                  d->H_theta * solver.directionTheta();
      EXPECT_LE(linearized.cwiseAbs().maxCoeff(), 1e-8 * (1 + d->h.cwiseAbs().maxCoeff()))
          << "linearized equality rows at knot " << k;
    }
  }
}

// Heap allocations of solve() with 1 and with 4 iterations.
std::pair<long, long> solveAllocations(const InverseProblem& p) {
  auto count = [&](int iterations) {
    RiccatiOptions options;
    options.tolerance = options.gap_tolerance = options.equality_tolerance = 1e-300;
    options.max_iterations = iterations;
    RiccatiSolver solver(p.problem, options);
    solver.setInitialGuessFromRollout(p.problem->arrival().theta_mean);
    const long allocations = test::countMallocs([&] { solver.solve(); });
    EXPECT_EQ(solver.summary().iterations, iterations) << solver.summary().report();
    return allocations;
  };
  return {count(1), count(4)};
}

// The pendulum with actuator terms, and go2 on four feet with the IMU (accelerometer included)
// and motion capture: the QR of H_w, its reflectors, the contact rows' kinematics derivatives
// and the RNEA with external forces run on buffers sized once. With one Eigen thread: go2's
// eliminations multiply 66 x 66 blocks, above the size at which Eigen runs a product in an
// OpenMP parallel region (50k multiply-adds), and libgomp allocates there (measured: 128
// allocations in one iteration, 305 in four, with 2 threads; the stage's calc and calcDiff
// allocate nothing).
TEST(RiccatiSolver, IterationsWithEqualityRowsDoNotAllocate) {
#if defined(HEFT_CAN_COUNT_MALLOCS)
  const int threads = Eigen::nbThreads();
  Eigen::setNbThreads(1);
  std::mt19937 rng(6);
  // -2: the four-bar leg's loop rows. Not the projected configuration noise: Pinocchio's
  // impulseDynamics, which computes N w_q, allocates (measured: 6 times in a go2 knot's calc and
  // 6 in its calcDiff), as it does at a forward stage's touchdown.
  // 5: go2's touchdowns (every other stage; their impulse rows on data of their own). -3: the
  // floating four-bar leg's touchdowns (the loop's impulse rows). -4: the four-bar leg's noise
  // projected on its loop (heft's own KKT solve, unlike the contacts' projection).
  for (int contact : {-1, 3, -2, 5, -3, -4}) {
    SCOPED_TRACE(contact);
    const InverseProblem p =
        contact == -1   ? makeInverseProblem("double_pendulum", {2}, 40, 0.01, rng, true)
        : contact == -2 ? makeInverseProblem(kFourBar, {2, 4}, 40, 0.002, rng, true)
        : contact == -3 ? makeInverseProblem(floatingFourBar(), {3}, 20, 0.002, rng, true, 3, false,
                                             true, false, {"foot"})
        : contact == -4 ? makeInverseProblem(kFourBar, {2, 4}, 40, 0.002, rng, true, 0, true)
        : contact == 5  ? makeInverseProblem("go2", {1}, 20, 0.005, rng, true, 3, false, true)
                        : makeInverseProblem("go2", {1}, 20, 0.005, rng, true, contact);
    const auto [one, four] = solveAllocations(p);
    EXPECT_EQ(one, four) << "allocations grow with the number of iterations";
  }
  Eigen::setNbThreads(threads);
#else
  GTEST_SKIP() << "malloc counting needs glibc";
#endif
}

// The MuJoCo double pendulum (link 2 +45 % mass) through both formulations: the same MAP problem,
// so the same estimate, within what each solver's stopping rule leaves (|d1| <= tol (1 + cost):
// a cost within that of the optimum, theta within sqrt(2 tol (1 + cost)) posterior stds).
// With energy observations at 1e-3 J (the default std) the two formulations' rows are the same
// function of the trajectory, so they keep one optimum.
void expectSameEstimateOnMujocoPendulum(bool energy) {
  const auto sim = test::simulateNominalWithoutTorqueBias("double-pendulum-payload", 3.2, 1);
  ASSERT_TRUE(sim.summary.ok()) << sim.summary.report();
  const model::RobotModel robot = model::loadRobot("double_pendulum");
  estimation::LogProblemOptions options;
  options.identified_bodies = {robot.body(2).name};
  options.first_sample = 1000;  // after the excitation's 1 s ramp
  options.knots = 2000;         // 2 s at 1 kHz (tests/estimation_test.cpp's window)
  options.use_energy = energy;
  RiccatiOptions solver_options;
  solver_options.max_iterations = 60;
  struct Run {
    VectorXd theta;
    MatrixXd covariance;
    estimation::RiccatiSummary summary;
  };
  auto run = [&](estimation::DynamicsFormulation formulation) {
    estimation::LogProblemOptions o = options;
    o.dynamics = formulation;
    const estimation::LogProblem lp = estimation::buildLogProblem(robot, sim.log, o);
    RiccatiSolver solver(lp.problem, solver_options);
    solver.setInitialGuess(lp.xs, lp.ws, lp.theta);
    Run r{VectorXd(), MatrixXd(), solver.solve()};
    r.theta = solver.theta();
    r.covariance = solver.thetaCovariance();
    std::cout << estimation::toString(formulation) << ": " << r.summary.report();
    return r;
  };
  const Run forward = run(estimation::DynamicsFormulation::Forward);
  const Run inverse = run(estimation::DynamicsFormulation::Inverse);
  ASSERT_TRUE(forward.summary.ok());
  ASSERT_TRUE(inverse.summary.ok());
  EXPECT_LE(inverse.summary.max_equality_violation, solver_options.equality_tolerance);
  EXPECT_NEAR(inverse.summary.cost, forward.summary.cost, 1e-6 * (1 + forward.summary.cost));
  const double cost = std::max(forward.summary.cost, inverse.summary.cost);
  const double sigmas = 2 * std::sqrt(2 * solver_options.tolerance * (1 + cost));
  const VectorXd difference = inverse.theta - forward.theta;
  const VectorXd stds = forward.covariance.diagonal().cwiseSqrt();
  for (int i = 0; i < difference.size(); ++i)
    EXPECT_LE(std::abs(difference(i)), sigmas * stds(i))
        << "theta " << i << ": forward " << forward.theta(i) << ", inverse " << inverse.theta(i);
  const Vector10 pi_true = results::truthPi(robot, sim.log, 2);
  const Vector10 pi = inertia::piFromTheta(options.parametrization, inverse.theta.head<10>());
  std::cout << "mass " << pi(0) << " (truth " << pi_true(0) << "), iterations forward "
            << forward.summary.iterations << ", inverse " << inverse.summary.iterations << "\n";
}

TEST(InverseDynamics, SameEstimateAsForwardDynamicsOnMujocoPendulum) {
  expectSameEstimateOnMujocoPendulum(false);
}

TEST(InverseDynamics, SameEstimateAsForwardDynamicsWithEnergyObservations) {
  expectSameEstimateOnMujocoPendulum(true);
}

// go2 trotting in place (the log's contact flags, rigid point feet, the IMU with its
// accelerometer, motion capture; the problem of the reference comparison): every knot is an
// inverse-dynamics stage, the touchdowns' with v+ and the impulses as decisions, and the two
// formulations (the forward stage solves the same reset map inside its step) reach the same
// optimum.
TEST(InverseDynamics, TrotTouchdownsAreImpulseDecisionsAndTheOptimumIsTheSame) {
  sim::SimulationOptions sim_options;
  sim_options.duration = 2.6;
  sim_options.seed = 1;
  const sim::SimulationResult sim = sim::simulate(sim::findScenario("go2-trot"), sim_options);
  ASSERT_TRUE(sim.summary.ok()) << sim.summary.report();
  const model::RobotModel robot = model::loadRobot("go2");
  estimation::LogProblemOptions options;
  options.identified_bodies = {robot.body(1).name};
  options.first_sample = 2000;
  options.knots = 300;
  options.theta_prior_std = 0.1;
  RiccatiOptions solver_options;
  solver_options.max_iterations = 200;
  std::vector<estimation::RiccatiSummary> summaries;
  for (auto formulation :
       {estimation::DynamicsFormulation::Forward, estimation::DynamicsFormulation::Inverse}) {
    options.dynamics = formulation;
    const estimation::LogProblem lp = estimation::buildLogProblem(robot, sim.log, options);
    ASSERT_GT(lp.touchdowns, 0);
    if (formulation == estimation::DynamicsFormulation::Inverse) {
      int touchdowns = 0, with_contacts = 0;
      for (int k = 0; k < lp.problem->horizon(); ++k) {
        const auto* stage = dynamic_cast<const InverseDynamicsStageModel*>(&lp.problem->running(k));
        ASSERT_NE(stage, nullptr) << "knot " << k;
        with_contacts += stage->nc() > 0;
        touchdowns += stage->hasImpulse();
        if (!stage->hasImpulse()) continue;
        // the initial guess satisfies the reset map's rows
        auto d = stage->createData();
        stage->calc(*d, lp.xs[k], lp.ws[k], lp.theta);
        const int impulse_rows = robot.pinocchio().nv + stage->nc();  // the last rows
        EXPECT_LE(d->h.tail(impulse_rows).cwiseAbs().maxCoeff(), 1e-8) << "knot " << k;
      }
      EXPECT_EQ(touchdowns, lp.touchdowns);
      EXPECT_GT(with_contacts, 0);
      std::cout << lp.problem->horizon() << " inverse-dynamics stages (" << with_contacts
                << " with contacts), " << touchdowns << " touchdowns\n";
    }
    RiccatiSolver solver(lp.problem, solver_options);
    solver.setInitialGuess(lp.xs, lp.ws, lp.theta);
    summaries.push_back(solver.solve());
    std::cout << estimation::toString(formulation) << ": " << summaries.back().report();
  }
  ASSERT_TRUE(summaries[0].ok());
  ASSERT_TRUE(summaries[1].ok());
  EXPECT_NEAR(summaries[1].cost, summaries[0].cost, 1e-6 * (1 + summaries[0].cost));
}

TEST(InverseDynamicsStage, RejectsBadInput) {
  std::mt19937 rng(7);
  const InverseProblem p = makeInverseProblem("go2", {1}, 1, 0.005, rng, false);
  const int nv = p.model->nv;
  MultibodyNoise noise;
  noise.configuration = VectorXd::Constant(nv, 0.01);
  noise.generalized_force = VectorXd::Constant(nv, 0.5);
  MultibodyMeasurement z;
  z.tau = VectorXd::Zero(nv);
  z.joint_q = z.joint_v = VectorXd::Zero(12);
  auto sensors = std::make_shared<estimation::MultibodySensors>();
  for (pinocchio::JointIndex j = 2; j < p.model->joints.size(); ++j) sensors->encoders.push_back(j);
  sensors->joint_velocities = true;
  auto make = [&](const std::shared_ptr<estimation::MultibodySensors>& s, double dt) {
    return InverseDynamicsStageModel(p.dynamics, p.state, s, noise, z, dt);
  };
  EXPECT_NO_THROW(make(sensors, 0.005));
  EXPECT_THROW(make(sensors, 0), InputError);
  auto with_accelerometer = std::make_shared<estimation::MultibodySensors>(*sensors);
  with_accelerometer->imu_frame = p.model->getFrameId("test_imu");
  with_accelerometer->accelerometer = true;
  EXPECT_NO_THROW(make(with_accelerometer, 0.005));
  // an accelerometer on a leg: its specific force would need the leg's acceleration
  with_accelerometer->imu_frame = p.model->getFrameId("FL_thigh");
  EXPECT_THROW(make(with_accelerometer, 0.005), InputError);
  auto with_energy = std::make_shared<estimation::MultibodySensors>(*sensors);
  with_energy->energy = true;
  EXPECT_EQ(make(with_energy, 0.005).nr(), make(sensors, 0.005).nr() + 1);  // the last row
  // the loops' noise projection on a robot without loops
  EXPECT_THROW(InverseDynamicsStageModel(p.dynamics, p.state, sensors, noise, z, 0.005, nullptr,
                                         nullptr, {}, {}, nullptr, nullptr, true),
               InputError);
  z.tau = VectorXd::Zero(nv - 1);
  EXPECT_THROW(make(sensors, 0.005), InputError);
  EXPECT_THROW(estimation::parseDynamicsFormulation("implicit"), InputError);
}

// More equality rows than decisions cannot be satisfied: refused when the stage is made.
TEST(StageModel, RefusesMoreEqualityRowsThanDecisions) {
  struct Rows final : StageModel {
    explicit Rows(int nh) : StageModel(2, 2, 2, 2, 0, true, nh) {}
    std::unique_ptr<estimation::StageData> createData() const override { return nullptr; }
    void calc(estimation::StageData&, const Eigen::Ref<const VectorXd>&,
              const Eigen::Ref<const VectorXd>&, const Eigen::Ref<const VectorXd>&) const override {
    }
    void calcDiff(estimation::StageData&, const Eigen::Ref<const VectorXd>&,
                  const Eigen::Ref<const VectorXd>&,
                  const Eigen::Ref<const VectorXd>&) const override {}
  };
  EXPECT_NO_THROW(Rows(2));
  EXPECT_THROW(Rows(3), InputError);
  EXPECT_THROW(Rows(-1), InputError);
}

}  // namespace
}  // namespace heft
