// The smoothed contact step (heft::dynamics, smoothed_contact.hpp): its solution against the
// discrete dynamics written with independent Pinocchio calls, standing robots whose floor forces
// carry their weight, the feasibility initializer, the non-convergence report, every derivative
// of the implicit function theorem against central differences (q stepped on the manifold) at a
// standing pose, in swing and near a contact switch, and no heap allocation in the hot calls.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <map>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include <pinocchio/algorithm/center-of-mass.hpp>
#include <pinocchio/algorithm/frames.hpp>
#include <pinocchio/algorithm/jacobian.hpp>
#include <pinocchio/algorithm/joint-configuration.hpp>
#include <pinocchio/algorithm/kinematics.hpp>
#include <pinocchio/algorithm/model.hpp>
#include <pinocchio/algorithm/rnea.hpp>
#include <pinocchio/parsers/urdf.hpp>

#include "heft/common/error.hpp"
#include "heft/dynamics/smoothed_contact.hpp"

#include "support/finite_difference.hpp"
#include "support/free_flyer_robots.hpp"
#include "support/malloc_counter.hpp"  // counts every heap allocation of the process

namespace {

using Eigen::MatrixXd;
using Eigen::VectorXd;
using heft::dynamics::SmoothedContactData;
using heft::dynamics::SmoothedContactModel;
using heft::dynamics::SmoothedContactOptions;
using heft::dynamics::SmoothedContactStart;
using heft::dynamics::SmoothedContactStatus;
using heft::inertia::Parametrization;
using heft::model::ContactPoint;

// ---- robots and poses ---------------------------------------------------------------------------

using heft_test::go2;
using heft_test::talos;

std::vector<ContactPoint> go2Feet() {
  std::vector<ContactPoint> feet;
  for (const char* name : {"FL_foot", "FR_foot", "RL_foot", "RR_foot"})
    feet.push_back({name, name, heft::Vector3::Zero()});
  return feet;
}

// Four corners per sole on the sole plane (heft::sim's TALOS corners, without their spheres).
std::vector<ContactPoint> talosSoleCorners() {
  std::vector<ContactPoint> corners;
  for (const std::string side : {"left", "right"})
    for (const double x : {0.1, -0.1})
      for (const double y : {0.065, -0.065})
        corners.push_back({side + "_corner", side + "_sole_link", heft::Vector3(x, y, 0)});
  return corners;
}

std::vector<pinocchio::JointIndex> consistentBodies(const pinocchio::Model& model) {
  std::vector<pinocchio::JointIndex> bodies;
  for (pinocchio::JointIndex j = 1; j < static_cast<pinocchio::JointIndex>(model.njoints); ++j)
    if (heft::inertia::checkConsistency(model.inertias[j].toDynamicParameters(), 1e-12).consistent)
      bodies.push_back(j);
  return bodies;
}

// q with its base height changed so that the lowest contact point is `lowest` above the floor.
VectorXd placeLowest(const pinocchio::Model& model, VectorXd q,
                     const std::vector<ContactPoint>& points, double lowest) {
  pinocchio::Data data(model);
  pinocchio::framesForwardKinematics(model, data, q);
  double min_z = HUGE_VAL;
  for (const ContactPoint& p : points)
    min_z = std::min(min_z, data.oMf[model.getFrameId(p.frame)].act(p.offset).z());
  q[2] += lowest - min_z;
  return q;
}

// q with the base upright, joints at `posture` (names not listed: 0), and the lowest contact point
// `lowest` above the floor z = 0.
VectorXd pose(const pinocchio::Model& model, const std::map<std::string, double>& posture,
              const std::vector<ContactPoint>& points, double lowest) {
  VectorXd q = pinocchio::neutral(model);
  for (const auto& [joint, angle] : posture) q[model.idx_qs[model.getJointId(joint)]] = angle;
  return placeLowest(model, q, points, lowest);
}

std::map<std::string, double> go2Standing() {
  std::map<std::string, double> posture;
  for (const char* leg : {"FL", "FR", "RL", "RR"}) {
    posture[std::string(leg) + "_thigh_joint"] = 0.8;
    posture[std::string(leg) + "_calf_joint"] = -1.6;
  }
  return posture;
}

// Trot swing: FR and RL folded up (their feet some 5 cm above the stance feet).
std::map<std::string, double> go2Swing() {
  std::map<std::string, double> posture = go2Standing();
  for (const char* leg : {"FR", "RL"}) {
    posture[std::string(leg) + "_thigh_joint"] = 1.0;
    posture[std::string(leg) + "_calf_joint"] = -2.2;
  }
  return posture;
}

// TALOS half-sitting (talos.srdf).
std::map<std::string, double> talosHalfSitting() {
  std::map<std::string, double> posture;
  for (const std::string side : {"left", "right"}) {
    posture["leg_" + side + "_3_joint"] = -0.411354;
    posture["leg_" + side + "_4_joint"] = 0.859395;
    posture["leg_" + side + "_5_joint"] = -0.448041;
  }
  return posture;
}

VectorXd uniform(int n, double scale, std::mt19937& rng) {
  std::uniform_real_distribution<double> u(-scale, scale);
  VectorXd x(n);
  for (int i = 0; i < n; ++i) x[i] = u(rng);
  return x;
}

// theta_S near the URDF's values.
VectorXd perturbedTheta(const VectorXd& nominal, std::mt19937& rng) {
  return nominal + uniform(static_cast<int>(nominal.size()), 0.05, rng);
}

// ---- central differences ------------------------------------------------------------------------
// The tolerance model of tests/support/finite_difference.hpp as in contact_dynamics_test.cpp:
// |D_h f - f'| <= h^2/6 |f'''| + delta / h with h = 1e-5, |f'''| from the 4-point stencil (safety
// 2) and the rounding delta measured at the test point (t = 1e-9, safety 4). The stencil's H is
// 1e-4, not 1e-3: the barrier's length scale is the gap of a loaded point, 2 / (kappa f) ~ 1e-4 m,
// and a stencil much wider than it misjudges f''' at the test point (its own rounding,
// eps |f| / H^3 ~ 2e-4 |f|, adds h^2/6 of that, 3e-15 |f|, to the bound). The step's own
// iteration adds nothing the measurement does not see: it stops only after the full Newton step
// from a decrement <= 1e-14, which leaves an error at the rounding level.
using heft::test::NumericalJacobian;

NumericalJacobian centralDifferences(const std::function<VectorXd(const VectorXd&)>& f, int n) {
  heft::test::FiniteDifferenceOptions options;
  options.step = 1e-5;
  options.noise_step = 1e-9;
  options.noise_safety = 4;
  options.third_step = 1e-4;
  return heft::test::centralDifferences(f, n, options);
}

struct Case {
  std::string name;
  VectorXd q, v, tau, theta;
  double dt = 0.01;
};

// Every derivative of v+ and of the forces against central differences at `c`.
void checkDerivatives(const SmoothedContactModel& model, const Case& c) {
  SmoothedContactData data(model), fd(model);
  const pinocchio::Model& robot = model.model();
  // A data is reused at many knots: a call at another state first, so that nothing left behind
  // can pass for the right answer.
  heft::dynamics::computeSmoothedContactDerivatives(model, data, c.q, 0.5 * c.v, 2 * c.tau, c.theta,
                                                    c.dt);
  heft::dynamics::computeSmoothedContactDerivatives(model, data, c.q, c.v, c.tau, c.theta, c.dt);
  ASSERT_TRUE(data.summary.converged()) << data.summary.report();
  heft::dynamics::computeSmoothedContactForceDerivatives(data);

  // Started at the step's own solution (an estimator's calcDiff after its calc), Newton confirms it
  // in one step and the derivatives are the same to rounding.
  SmoothedContactData warm(model);
  const VectorXd solution =
      heft::dynamics::smoothedContactStep(model, warm, c.q, c.v, c.tau, c.theta, c.dt);
  heft::dynamics::computeSmoothedContactDerivatives(model, warm, c.q, c.v, c.tau, c.theta, c.dt,
                                                    &solution);
  ASSERT_TRUE(warm.summary.converged()) << warm.summary.report();
  EXPECT_EQ(warm.summary.iterations, 1) << c.name;
  EXPECT_EQ(warm.summary.initial_lift, 0.0) << c.name;
  EXPECT_LE((warm.v_next - data.v_next).norm(), 1e-10 * (1 + data.v_next.norm())) << c.name;
  for (const auto& [name, cold_value, warm_value] :
       {std::tuple<const char*, const MatrixXd&, const MatrixXd&>{"dv+/dq", data.dvnext_dq,
                                                                  warm.dvnext_dq},
        {"dv+/dv", data.dvnext_dv, warm.dvnext_dv},
        {"dv+/dtau", data.dvnext_dtau, warm.dvnext_dtau},
        {"dv+/dtheta", data.dvnext_dtheta, warm.dvnext_dtheta}})
    EXPECT_LE((warm_value - cold_value).norm(), 1e-8 * (1 + cold_value.norm()))
        << c.name << " " << name;

  const int nv = robot.nv, nf = 3 * model.numPoints();
  auto both = [&](const VectorXd& q, const VectorXd& v, const VectorXd& tau, const VectorXd& th) {
    heft::dynamics::smoothedContactStep(model, fd, q, v, tau, th, c.dt);
    EXPECT_TRUE(fd.summary.converged()) << fd.summary.report();
    VectorXd out(nv + nf);
    out << fd.v_next, fd.force;
    return out;
  };
  const NumericalJacobian dq = centralDifferences(
      [&](const VectorXd& d) {
        return both(pinocchio::integrate(robot, c.q, d), c.v, c.tau, c.theta);
      },
      nv);
  const NumericalJacobian dv =
      centralDifferences([&](const VectorXd& d) { return both(c.q, c.v + d, c.tau, c.theta); }, nv);
  const NumericalJacobian dtau =
      centralDifferences([&](const VectorXd& d) { return both(c.q, c.v, c.tau + d, c.theta); }, nv);
  const NumericalJacobian dtheta = centralDifferences(
      [&](const VectorXd& d) { return both(c.q, c.v, c.tau, c.theta + d); }, model.numParameters());

  // v+ and the forces have different units: each block gets its own bound.
  auto expect = [&](const std::string& what, const MatrixXd& analytic, const NumericalJacobian& n,
                    int row, int rows) {
    heft::test::expectJacobianNear(analytic, n.rows(row, rows), c.name + " " + what);
  };
  expect("dv+/dq", data.dvnext_dq, dq, 0, nv);
  expect("df/dq", data.dforce_dq, dq, nv, nf);
  expect("dv+/dv", data.dvnext_dv, dv, 0, nv);
  expect("df/dv", data.dforce_dv, dv, nv, nf);
  expect("dv+/dtau", data.dvnext_dtau, dtau, 0, nv);
  expect("df/dtau", data.dforce_dtau, dtau, nv, nf);
  expect("dv+/dtheta", data.dvnext_dtheta, dtheta, 0, nv);
  expect("df/dtheta", data.dforce_dtheta, dtheta, nv, nf);
}

Case go2Case(const std::string& name, const std::map<std::string, double>& posture, double lowest,
             const SmoothedContactModel& model, unsigned seed) {
  std::mt19937 rng(seed);
  Case c;
  c.name = "go2 " + name;
  // A small tilt and joint offsets, off any symmetric configuration; then the lowest foot at
  // `lowest` again.
  c.q = pinocchio::integrate(go2(), pose(go2(), posture, go2Feet(), 0.0),
                             uniform(go2().nv, 0.02, rng));
  c.q = placeLowest(go2(), c.q, go2Feet(), lowest);
  c.v = uniform(go2().nv, 0.3, rng);
  c.tau = uniform(go2().nv, 5.0, rng);
  c.tau.head<6>().setZero();  // no actuator on the base
  c.theta = perturbedTheta(model.nominalTheta(), rng);
  return c;
}

TEST(SmoothedContact, Go2StandingDerivativesMatchCentralDifferences) {
  const SmoothedContactModel model(go2(), go2Feet(), consistentBodies(go2()),
                                   Parametrization::LogCholesky);
  // The feet near the gap at which they carry the weight (2 / (kappa f) ~ 0.1 mm).
  checkDerivatives(model, go2Case("standing", go2Standing(), 1e-4, model, 1));
}

TEST(SmoothedContact, Go2SwingDerivativesMatchCentralDifferences) {
  const SmoothedContactModel model(go2(), go2Feet(), consistentBodies(go2()),
                                   Parametrization::ExponentialEigenvalue);
  checkDerivatives(model, go2Case("swing", go2Swing(), 1e-4, model, 2));
}

TEST(SmoothedContact, Go2NearContactSwitchDerivativesMatchCentralDifferences) {
  const SmoothedContactModel model(go2(), go2Feet(), consistentBodies(go2()),
                                   Parametrization::LogCholesky);
  // Two feet in the air, the lower of the two stance feet a hair above the floor, then a hair below
  // it (the initializer lifts that start), at rest: phi / dt = +-1 mm/s, inside the barrier's
  // transition between no force and the stance load.
  Case above = go2Case("hair above", go2Swing(), 1e-5, model, 3);
  Case below = go2Case("hair below", go2Swing(), -1e-5, model, 4);
  above.v.setZero();
  below.v.setZero();
  checkDerivatives(model, above);
  checkDerivatives(model, below);
}

// A compliant floor (go2's simulated feet sink about 37 um per newton): the deflections are
// eliminated from Newton's system, so the same derivative code must see the reduced K_i. Standing
// with the lowest foot sunk 1 mm (where a rigid floor would need the lift), at dt = 10 ms and
// 1 ms, and near a contact switch from rest.
TEST(SmoothedContact, CompliantFloorDerivativesMatchCentralDifferences) {
  SmoothedContactOptions options;
  options.compliance = 3.7e-5;
  const SmoothedContactModel model(go2(), go2Feet(), consistentBodies(go2()),
                                   Parametrization::LogCholesky, options);
  Case sunk = go2Case("compliant, sunk", go2Standing(), -1e-3, model, 9);
  checkDerivatives(model, sunk);
  sunk.name = "compliant, sunk, 1 ms";
  sunk.dt = 1e-3;
  checkDerivatives(model, sunk);
  Case above = go2Case("compliant, hair above", go2Swing(), 1e-5, model, 10);
  above.v.setZero();
  checkDerivatives(model, above);
}

TEST(SmoothedContact, TalosFourCornersPerSoleDerivativesMatchCentralDifferences) {
  // S: pelvis (the root) and the two feet, to keep the theta columns few.
  const pinocchio::Model& robot = talos();
  const std::vector<pinocchio::JointIndex> bodies = {1, robot.getJointId("leg_left_6_joint"),
                                                     robot.getJointId("leg_right_6_joint")};
  const SmoothedContactModel model(robot, talosSoleCorners(), bodies, Parametrization::LogCholesky);
  std::mt19937 rng(5);
  Case c;
  c.name = "talos";
  c.q = pose(robot, talosHalfSitting(), talosSoleCorners(), 2e-5);
  c.v = uniform(robot.nv, 0.1, rng);
  c.tau = uniform(robot.nv, 5.0, rng);
  c.tau.head<6>().setZero();
  c.theta = perturbedTheta(model.nominalTheta(), rng);
  checkDerivatives(model, c);
}

// ---- the solution -------------------------------------------------------------------------------

// The optimality condition of eq. 17 is the discrete dynamics of eq. 1: with RNEA from Pinocchio
// on the model carrying pi(theta) and the point Jacobians from getFrameJacobian,
// RNEA(q, v, (v+ - v)/dt) - tau = sum_i J_i^T f_i, and every force is inside its friction cone.
// eq. 1's two sides from independent Pinocchio calls on the model carrying pi(theta): RNEA(q, v,
// (v+ - v)/dt) and each go2 foot's world-axes linear Jacobian (3 x nv).
struct DiscreteDynamics {
  VectorXd rnea;
  std::vector<MatrixXd> jacobians;
};

DiscreteDynamics discreteDynamics(const SmoothedContactModel& model, const VectorXd& theta,
                                  const VectorXd& q, const VectorXd& v, const VectorXd& v_next,
                                  double dt) {
  pinocchio::Model parametrized = go2();
  model.regressor().setIdentifiedInertias(
      heft::dynamics::piFromTheta(model.regressor(), Parametrization::LogCholesky, theta),
      parametrized);
  pinocchio::Data pd(parametrized);
  DiscreteDynamics d;
  d.rnea = pinocchio::rnea(parametrized, pd, q, v, VectorXd((v_next - v) / dt));
  pinocchio::computeJointJacobians(parametrized, pd, q);
  pinocchio::updateFramePlacements(parametrized, pd);
  for (int i = 0; i < model.numPoints(); ++i) {
    MatrixXd J = MatrixXd::Zero(6, go2().nv);
    pinocchio::getFrameJacobian(parametrized, pd, go2().getFrameId(go2Feet()[i].frame),
                                pinocchio::LOCAL_WORLD_ALIGNED, J);
    d.jacobians.push_back(J.topRows<3>());
  }
  return d;
}

TEST(SmoothedContact, SolutionSatisfiesTheDiscreteDynamics) {
  const SmoothedContactModel model(go2(), go2Feet(), consistentBodies(go2()),
                                   Parametrization::LogCholesky);
  SmoothedContactData data(model);
  const Case c = go2Case("dynamics", go2Swing(), 1e-4, model, 6);
  heft::dynamics::smoothedContactStep(model, data, c.q, c.v, c.tau, c.theta, c.dt);
  ASSERT_TRUE(data.summary.converged()) << data.summary.report();

  const DiscreteDynamics d = discreteDynamics(model, c.theta, c.q, c.v, data.v_next, c.dt);
  const VectorXd& rnea = d.rnea;
  VectorXd generalized = VectorXd::Zero(go2().nv);
  double largest = 0;
  const double mu = model.options().friction_coefficient;
  for (int i = 0; i < model.numPoints(); ++i) {
    const Eigen::Vector3d f = data.force.segment<3>(3 * i);
    generalized += d.jacobians[i].transpose() * f;
    largest = std::max(largest, f.norm());
    EXPECT_GT(f.z(), 0);
    EXPECT_LT(f.head<2>().norm(), mu * f.z());
  }
  // Both sides are sums of terms up to |RNEA| and |J^T f|; the Newton residual after the final
  // step is far below their rounding.
  const double scale = std::max(rnea.cwiseAbs().maxCoeff(), largest);
  EXPECT_LE((rnea - c.tau - generalized).cwiseAbs().maxCoeff(), 1e-9 * scale);
}

// With compliance the step's optimality conditions are eq. 1 and, per point, delta_i =
// compliance f^n_i: each point sinks by its spring's deflection and no deeper (its next gap phi_i +
// dt J^n_i v+ = dt w_i - delta_i, with w_i > 0 the barrier's small stand-off). A foot sunk 2 mm
// below the plane at the start needs no lift: a deep enough deflection puts any point in its cone.
TEST(SmoothedContact, CompliantFloorSinksEachPointByItsSpring) {
  SmoothedContactOptions options;
  options.compliance = 3.7e-5;
  const SmoothedContactModel model(go2(), go2Feet(), consistentBodies(go2()),
                                   Parametrization::LogCholesky, options);
  SmoothedContactData data(model);
  Case c = go2Case("compliant", go2Standing(), -2e-3, model, 11);
  for (const double dt : {1e-2, 1e-3}) {
    SCOPED_TRACE(dt);
    heft::dynamics::smoothedContactStep(model, data, c.q, c.v, c.tau, c.theta, dt);
    ASSERT_TRUE(data.summary.converged()) << data.summary.report();
    EXPECT_EQ(data.summary.initial_lift, 0.0);
    double largest = 0;
    for (int i = 0; i < model.numPoints(); ++i) largest = std::max(largest, data.force[3 * i + 2]);
    ASSERT_GT(largest, 1.0);  // the step is loaded
    for (int i = 0; i < model.numPoints(); ++i) {
      // the deflection's own optimality condition, solved to Newton's tolerance
      EXPECT_NEAR(data.deflection[i], options.compliance * data.force[3 * i + 2],
                  1e-9 * options.compliance * largest)
          << "point " << i;
      EXPECT_GE(data.deflection[i], 0);
    }
    // eq. 1 with independent Pinocchio calls
    const DiscreteDynamics d = discreteDynamics(model, c.theta, c.q, c.v, data.v_next, dt);
    VectorXd generalized = VectorXd::Zero(go2().nv);
    for (int i = 0; i < model.numPoints(); ++i) {
      generalized += d.jacobians[i].transpose() * data.force.segment<3>(3 * i);
      // the point ends at most its deflection below the plane (the stand-off dt w_i > 0)
      EXPECT_GT(data.gap[i] + dt * d.jacobians[i].row(2).dot(data.v_next), -data.deflection[i]);
    }
    const double scale = std::max(d.rnea.cwiseAbs().maxCoeff(), largest);
    EXPECT_LE((d.rnea - c.tau - generalized).cwiseAbs().maxCoeff(), 1e-9 * scale);
  }
}

// A rigid robot (every joint locked) dropped onto its contact points at the floor settles: the
// forces carry the weight, friction vanishes, and each point rests at the gap where eq. 18 gives
// its force in sticking contact, phi_i = 2 / (kappa f_i) (w_i = phi_i / dt, s_i = w_i^2 / mu^2).
//
// Tolerance from kappa and dt. Near rest a point carrying f has stiffness k = |df/dphi| =
// kappa f^2 / 2, taken at the equal share f = m g / n. The slow modes are the vertical one,
// omega^2 = n k / m, and the tilts about the horizontal axes through the COM's foot print,
// omega^2 = (k sum_i d_i^2 - m g h) / (I + m h^2) (d_i the point's lever arm, h the COM height,
// I the inertia about the parallel COM axis; gravity softens a tall robot). The velocity-level
// step is implicit Euler for these springs, which scales a mode by rho = 1 / sqrt(1 + (omega
// dt)^2) per step; omega is halved for the uneven shares. The drop from gap 0 starts a transient
// of force amplitude m g, so after N steps |sum f - m g| <= m g rho^N, and the floor of the Newton
// solution is its rounding, 1e-9 m g.
double slowestContactFrequency(const pinocchio::Model& rigid, const SmoothedContactModel& model,
                               const VectorXd& q) {
  pinocchio::Data data(rigid);
  const Eigen::Vector3d com = pinocchio::centerOfMass(rigid, data, q);
  pinocchio::framesForwardKinematics(rigid, data, q);
  const double mass = pinocchio::computeTotalMass(rigid), g = 9.81, n = model.numPoints();
  const double kappa = model.options().kappa, share = mass * g / n;
  const double k = kappa * share * share / 2;
  const Eigen::Matrix3d R = data.oMi[1].rotation();
  const Eigen::Matrix3d inertia = R * rigid.inertias[1].inertia().matrix() * R.transpose();
  double slowest = std::sqrt(n * k / mass);
  const double h = com.z() - model.options().ground_height;
  for (int axis = 0; axis < 2; ++axis) {
    double lever2 = 0;
    for (const ContactPoint& p : model.points())
      lever2 +=
          std::pow(data.oMf[rigid.getFrameId(p.frame)].act(p.offset)[1 - axis] - com[1 - axis], 2);
    const double omega2 = (k * lever2 - mass * g * h) / (inertia(axis, axis) + mass * h * h);
    slowest = std::min(slowest, std::sqrt(omega2));
  }
  return slowest;
}

void checkSettles(const pinocchio::Model& robot, const std::map<std::string, double>& posture,
                  const std::vector<ContactPoint>& points) {
  const VectorXd q_posture = pose(robot, posture, points, 0.0);
  std::vector<pinocchio::JointIndex> locked;
  for (pinocchio::JointIndex j = 2; j < static_cast<pinocchio::JointIndex>(robot.njoints); ++j)
    locked.push_back(j);
  const pinocchio::Model rigid = pinocchio::buildReducedModel(robot, locked, q_posture);
  const SmoothedContactModel model(rigid, points, {1}, Parametrization::LogCholesky);
  SmoothedContactData data(model);
  const VectorXd theta = model.nominalTheta();

  const double dt = 0.01, kappa = model.options().kappa, g = 9.81;
  const double mass = pinocchio::computeTotalMass(rigid), n = model.numPoints();
  const double omega = slowestContactFrequency(rigid, model, q_posture.head(7)) / 2;
  const double rho = 1 / std::sqrt(1 + omega * dt * omega * dt);
  const int steps = 400;
  const double tolerance = mass * g * (std::pow(rho, steps) + 1e-9);

  VectorXd q = q_posture.head(7), v = VectorXd::Zero(6);
  const VectorXd tau = VectorXd::Zero(6);
  for (int k = 0; k < steps; ++k) {
    heft::dynamics::smoothedContactStep(model, data, q, v, tau, theta, dt);
    ASSERT_TRUE(data.summary.converged()) << "step " << k << ": " << data.summary.report();
    v = data.v_next;
    q = pinocchio::integrate(rigid, q, VectorXd(dt * v));
  }
  Eigen::Vector3d total = Eigen::Vector3d::Zero();
  for (int i = 0; i < model.numPoints(); ++i) total += data.force.segment<3>(3 * i);
  EXPECT_NEAR(total.z(), mass * g, tolerance) << robot.name;
  EXPECT_NEAR(total.x(), 0, tolerance) << robot.name;
  EXPECT_NEAR(total.y(), 0, tolerance) << robot.name;
  // The gaps of the last step's solution (q is already the next configuration).
  heft::dynamics::smoothedContactStep(model, data, q, v, tau, theta, dt);
  for (int i = 0; i < model.numPoints(); ++i) {
    const double f = data.force[3 * i + 2];
    EXPECT_GT(f, 0);
    EXPECT_NEAR(data.gap[i] * kappa * f / 2, 1.0, tolerance / (mass * g) * n) << robot.name;
    EXPECT_LE(data.force.segment<2>(3 * i).norm(), tolerance) << robot.name;
  }
}

TEST(SmoothedContact, StandingRobotsForcesCarryTheirWeight) {
  checkSettles(go2(), go2Standing(), go2Feet());
  checkSettles(talos(), talosHalfSitting(), talosSoleCorners());
}

// ---- feasibility initializer and reports --------------------------------------------------------

TEST(SmoothedContact, PointBelowFloorIsHandledByEitherStart) {
  const double depth = 0.01, dt = 0.01;
  const VectorXd q = pose(go2(), go2Standing(), go2Feet(), -depth);
  const VectorXd v = VectorXd::Zero(go2().nv), tau = VectorXd::Zero(go2().nv);
  VectorXd solution[2];
  for (const SmoothedContactStart start :
       {SmoothedContactStart::Lift, SmoothedContactStart::Sticking}) {
    SCOPED_TRACE(start == SmoothedContactStart::Lift ? "lift" : "sticking");
    SmoothedContactOptions options;
    options.start = start;
    const SmoothedContactModel model(go2(), go2Feet(), consistentBodies(go2()),
                                     Parametrization::LogCholesky, options);
    SmoothedContactData data(model);
    heft::dynamics::smoothedContactStep(model, data, q, v, tau, model.nominalTheta(), dt);
    EXPECT_TRUE(data.summary.converged()) << data.summary.report();
    if (start == SmoothedContactStart::Lift) {
      // At rest the deepest point has w = -depth / dt: the lift brings it to the margin.
      EXPECT_NEAR(data.summary.initial_lift, depth / dt + options.feasibility_margin, 1e-12);
      EXPECT_EQ(data.summary.sticking_points, 0);
    } else {
      // Every foot is below the floor, so every foot is held at w = margin; the held points
      // alone are then inside their cones (a lift of at most the regularization's residue).
      EXPECT_EQ(data.summary.sticking_points, model.numPoints());
      EXPECT_LT(data.summary.initial_lift, 1e-9);
    }
    EXPECT_TRUE(data.v_next.allFinite());
    EXPECT_TRUE(data.force.allFinite());
    // The solution leaves the floor's interior: every point's next gap phi + dt J_n v+ is > 0,
    // and the floor pushes up.
    pinocchio::Data pd(go2());
    pinocchio::computeJointJacobians(go2(), pd, q);
    pinocchio::updateFramePlacements(go2(), pd);
    for (int i = 0; i < model.numPoints(); ++i) {
      MatrixXd J = MatrixXd::Zero(6, go2().nv);
      pinocchio::getFrameJacobian(go2(), pd, go2().getFrameId(go2Feet()[i].frame),
                                  pinocchio::LOCAL_WORLD_ALIGNED, J);
      EXPECT_LT(data.gap[i], 0);
      EXPECT_GT(data.gap[i] + dt * J.row(2).dot(data.v_next), 0);
      EXPECT_GT(data.force[3 * i + 2], 0);
    }
    solution[start == SmoothedContactStart::Lift ? 0 : 1] = data.v_next;
  }
  // eq. 17 is strictly convex: both starts reach the same minimizer (to the decrement tolerance,
  // far below 1e-9 m/s).
  EXPECT_LT((solution[0] - solution[1]).lpNorm<Eigen::Infinity>(), 1e-9);
}

TEST(SmoothedContact, NonConvergenceIsReportedWithFiniteOutputs) {
  SmoothedContactOptions options;
  options.max_iterations = 1;
  const SmoothedContactModel model(go2(), go2Feet(), consistentBodies(go2()),
                                   Parametrization::LogCholesky, options);
  SmoothedContactData data(model);
  // A deep start far from the solution: one Newton step cannot finish.
  const VectorXd q = pose(go2(), go2Standing(), go2Feet(), -0.02);
  std::mt19937 rng(8);
  const VectorXd v = uniform(go2().nv, 2.0, rng);
  const VectorXd tau = uniform(go2().nv, 50.0, rng);
  heft::dynamics::computeSmoothedContactDerivatives(model, data, q, v, tau, model.nominalTheta(),
                                                    0.01);
  EXPECT_EQ(data.summary.status, SmoothedContactStatus::MaxIterations) << data.summary.report();
  EXPECT_FALSE(data.summary.converged());
  EXPECT_EQ(data.summary.iterations, 1);
  EXPECT_GT(data.summary.decrement, options.tolerance);
  heft::dynamics::computeSmoothedContactForceDerivatives(data);
  for (const MatrixXd* m : {&data.dvnext_dq, &data.dvnext_dv, &data.dvnext_dtau,
                            &data.dvnext_dtheta, &data.dforce_dq, &data.dforce_dtheta})
    EXPECT_TRUE(m->allFinite());
  EXPECT_TRUE(data.v_next.allFinite());
  EXPECT_TRUE(data.force.allFinite());
  EXPECT_NE(data.summary.report().find("max iterations"), std::string::npos);

  // The same start with the default cap converges.
  const SmoothedContactModel patient(go2(), go2Feet(), consistentBodies(go2()),
                                     Parametrization::LogCholesky);
  SmoothedContactData patient_data(patient);
  heft::dynamics::smoothedContactStep(patient, patient_data, q, v, tau, patient.nominalTheta(),
                                      0.01);
  EXPECT_TRUE(patient_data.summary.converged()) << patient_data.summary.report();
  EXPECT_GT(patient_data.summary.iterations, 1);
}

TEST(SmoothedContact, InvalidInputsThrow) {
  SmoothedContactOptions bad;
  bad.kappa = 0;
  EXPECT_THROW(SmoothedContactModel(go2(), go2Feet(), {}, Parametrization::LogCholesky, bad),
               heft::InputError);
  bad.kappa = 500;
  bad.compliance = -1e-5;
  EXPECT_THROW(SmoothedContactModel(go2(), go2Feet(), {}, Parametrization::LogCholesky, bad),
               heft::InputError);
  EXPECT_THROW(SmoothedContactModel(go2(), {}, {}, Parametrization::LogCholesky), heft::InputError);
  EXPECT_THROW(SmoothedContactModel(go2(), {{"x", "no_such_frame", heft::Vector3::Zero()}}, {},
                                    Parametrization::LogCholesky),
               heft::InputError);
  pinocchio::Model fixed;
  pinocchio::urdf::buildModel(
      std::string(HEFT_ROBOTS_DIR_FOR_TESTS) + "/go2_description/urdf/go2.urdf", fixed);
  EXPECT_THROW(SmoothedContactModel(fixed, go2Feet(), {}, Parametrization::LogCholesky),
               heft::InputError);

  const SmoothedContactModel model(go2(), go2Feet(), {}, Parametrization::LogCholesky);
  SmoothedContactData data(model);
  const VectorXd q = pose(go2(), go2Standing(), go2Feet(), 0.0);
  const VectorXd v = VectorXd::Zero(go2().nv), theta = model.nominalTheta();
  EXPECT_THROW(heft::dynamics::smoothedContactStep(model, data, q, v, v, theta, 0.0),
               heft::InputError);
  EXPECT_THROW(
      heft::dynamics::smoothedContactStep(model, data, q, VectorXd::Zero(3), v, theta, 0.01),
      heft::InputError);
  VectorXd nan_v = v;
  nan_v[3] = std::nan("");
  EXPECT_THROW(heft::dynamics::smoothedContactStep(model, data, q, nan_v, v, theta, 0.01),
               heft::InputError);
  // Force derivatives need the derivatives of v+ first; a caller's solution must fit.
  EXPECT_THROW(heft::dynamics::computeSmoothedContactForceDerivatives(data), heft::InputError);
  const VectorXd short_solution = VectorXd::Zero(3);
  EXPECT_THROW(heft::dynamics::computeSmoothedContactDerivatives(model, data, q, v, v, theta, 0.01,
                                                                 &short_solution),
               heft::InputError);
  EXPECT_THROW(
      heft::dynamics::computeSmoothedContactDerivatives(model, data, q, v, v, theta, 0.01, &nan_v),
      heft::InputError);
  // A step taken after the derivatives makes them another step's: the force derivatives refuse.
  heft::dynamics::computeSmoothedContactDerivatives(model, data, q, v, v, theta, 0.01);
  EXPECT_NO_THROW(heft::dynamics::computeSmoothedContactForceDerivatives(data));
  heft::dynamics::smoothedContactStep(model, data, q, v, v, theta, 0.01);
  EXPECT_THROW(heft::dynamics::computeSmoothedContactForceDerivatives(data), heft::InputError);
}

TEST(SmoothedContact, InfeasibleSolutionFallsBackToTheConfiguredStart) {
  const SmoothedContactModel model(go2(), go2Feet(), consistentBodies(go2()),
                                   Parametrization::LogCholesky);
  const Case c = go2Case("standing", go2Standing(), 1e-4, model, 12);
  SmoothedContactData cold(model), warm(model);
  heft::dynamics::computeSmoothedContactDerivatives(model, cold, c.q, c.v, c.tau, c.theta, c.dt);
  ASSERT_TRUE(cold.summary.converged()) << cold.summary.report();
  // The base sinking at 1 m/s (its z axis is within 0.02 rad of the vertical): every foot leaves
  // its cone, so the start is lifted.
  VectorXd sinking = c.v;
  sinking[2] -= 1.0;
  heft::dynamics::computeSmoothedContactDerivatives(model, warm, c.q, c.v, c.tau, c.theta, c.dt,
                                                    &sinking);
  ASSERT_TRUE(warm.summary.converged()) << warm.summary.report();
  EXPECT_GT(warm.summary.initial_lift, 0.0);
  EXPECT_LE((warm.v_next - cold.v_next).norm(), 1e-10 * (1 + cold.v_next.norm()));
  EXPECT_LE((warm.dvnext_dtheta - cold.dvnext_dtheta).norm(),
            1e-8 * (1 + cold.dvnext_dtheta.norm()));
}

TEST(SmoothedContact, StepAndDerivativesAllocateNothing) {
#if !defined(HEFT_CAN_COUNT_MALLOCS)
  GTEST_SKIP() << "allocations cannot be counted on this platform";
#endif
  for (const double compliance : {0.0, 3.7e-5}) {
    SCOPED_TRACE(compliance);
    SmoothedContactOptions options;
    options.compliance = compliance;
    const SmoothedContactModel model(go2(), go2Feet(), consistentBodies(go2()),
                                     Parametrization::LogCholesky, options);
    SmoothedContactData data(model);
    const Case a = go2Case("a", go2Standing(), 1e-4, model, 9);
    const Case b = go2Case("b", go2Swing(), 1e-4, model, 10);
    heft::dynamics::computeSmoothedContactDerivatives(model, data, a.q, a.v, a.tau, a.theta, a.dt);
    const VectorXd solution = data.v_next;
    const long count = heft::test::countMallocs([&] {
      heft::dynamics::smoothedContactStep(model, data, b.q, b.v, b.tau, b.theta, b.dt);
      heft::dynamics::computeSmoothedContactDerivatives(model, data, a.q, a.v, a.tau, a.theta,
                                                        a.dt);
      heft::dynamics::computeSmoothedContactForceDerivatives(data);
      heft::dynamics::computeSmoothedContactDerivatives(model, data, a.q, a.v, a.tau, a.theta, a.dt,
                                                        &solution);
    });
    EXPECT_EQ(count, 0);
  }
}

}  // namespace
