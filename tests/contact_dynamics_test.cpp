// Forward, contact and impulse dynamics parametrized by theta_S (heft::dynamics, part B):
// values against Pinocchio and against the equations of motion written independently, every
// analytical derivative against central differences (q stepped on the manifold), and no heap
// allocation in the hot calls.
//
// Eigen's malloc guard sees only allocations compiled in this TU, and only where eigen_assert is
// active (not under NDEBUG); heft's library and libpinocchio are compiled without it. So the
// allocation test also counts every malloc/calloc/realloc of the process through glibc's __libc_*
// entry points.
#define EIGEN_RUNTIME_NO_MALLOC
#define PINOCCHIO_DISABLE_UNSUPPORTED_WARNINGS  // the rigid-constraint API is marked "will change"
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <functional>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include <pinocchio/algorithm/aba.hpp>
#include <pinocchio/algorithm/constrained-dynamics-derivatives.hpp>
#include <pinocchio/algorithm/constrained-dynamics.hpp>
#include <pinocchio/algorithm/crba.hpp>
#include <pinocchio/algorithm/frames.hpp>
// Pinocchio's impulse derivatives read a fixed-size temporary GCC cannot prove initialized.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <pinocchio/algorithm/impulse-dynamics-derivatives.hpp>
#pragma GCC diagnostic pop
#include <pinocchio/algorithm/impulse-dynamics.hpp>
#include <pinocchio/algorithm/joint-configuration.hpp>
#include <pinocchio/algorithm/kinematics.hpp>
#include <pinocchio/algorithm/rnea.hpp>
#include <pinocchio/parsers/urdf.hpp>

#include "heft/common/error.hpp"
#include "heft/dynamics/contact_dynamics.hpp"
#include "heft/dynamics/forward_dynamics.hpp"
#include "heft/dynamics/impulse_dynamics.hpp"

#include "support/finite_difference.hpp"
#include "support/free_flyer_robots.hpp"
#include "support/malloc_counter.hpp"  // counts every heap allocation (see there why)

namespace {

using Eigen::MatrixXd;
using Eigen::VectorXd;
using heft::dynamics::ContactDynamicsData;
using heft::dynamics::ContactDynamicsModel;
using heft::dynamics::ContactOptions;
using heft::dynamics::ContactSpec;
using heft::dynamics::ForwardDynamicsData;
using heft::dynamics::ForwardDynamicsModel;
using heft::dynamics::ImpulseDynamicsData;
using heft::dynamics::ImpulseDynamicsModel;
using heft::inertia::Parametrization;

// Counts heap allocations between construction and stop(). With eigen_guard, also sets Eigen's
// runtime guard, which asserts on allocations compiled in this TU, and only in builds without
// NDEBUG (eigen_assert): in Release the counter is what checks.
class NoMallocScope {
 public:
  explicit NoMallocScope(bool eigen_guard) : eigen_guard_(eigen_guard) {
#ifdef HEFT_CAN_COUNT_MALLOCS
    g_malloc_count = 0;
    g_count_mallocs = true;
#endif
    if (eigen_guard_) Eigen::internal::set_is_malloc_allowed(false);
  }
  ~NoMallocScope() { stop(); }
  long stop() {
    if (eigen_guard_) Eigen::internal::set_is_malloc_allowed(true);
#ifdef HEFT_CAN_COUNT_MALLOCS
    g_count_mallocs = false;
    return g_malloc_count;
#else
    return 0;
#endif
  }

 private:
  bool eigen_guard_;
};

// ---- robots -------------------------------------------------------------------------------------

using heft_test::go2;
using heft_test::talos;

std::vector<ContactSpec> go2Feet(pinocchio::ReferenceFrame frame) {
  std::vector<ContactSpec> feet;
  for (const char* name : {"FL_foot", "FR_foot", "RL_foot", "RR_foot"})
    feet.push_back({name, ContactSpec::Type::Point3D, frame});
  return feet;
}

std::vector<ContactSpec> talosSoles(pinocchio::ReferenceFrame frame) {
  return {{"left_sole_link", ContactSpec::Type::Surface6D, frame},
          {"right_sole_link", ContactSpec::Type::Surface6D, frame}};
}

// S = every body whose URDF inertia is strictly physically consistent (a parametrization exists).
std::vector<pinocchio::JointIndex> consistentBodies(const pinocchio::Model& model) {
  std::vector<pinocchio::JointIndex> bodies;
  for (pinocchio::JointIndex j = 1; j < static_cast<pinocchio::JointIndex>(model.njoints); ++j) {
    const heft::Vector10 pi = model.inertias[j].toDynamicParameters();
    if (heft::inertia::checkConsistency(pi, 1e-12).consistent) bodies.push_back(j);
  }
  return bodies;
}

struct State {
  VectorXd q, v, tau;
};

State randomState(const pinocchio::Model& model, std::mt19937& rng) {
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  auto random = [&](int n, double scale) {
    VectorXd x(n);
    for (int i = 0; i < n; ++i) x[i] = scale * u(rng);
    return x;
  };
  State s;
  s.q = pinocchio::integrate(model, pinocchio::neutral(model), random(model.nv, 0.4));
  s.v = random(model.nv, 1.0);
  s.tau = random(model.nv, 5.0);
  return s;
}

// theta_S near the URDF's values, off any symmetric point of the exponential-eigenvalue map.
VectorXd perturbedTheta(const VectorXd& nominal, std::mt19937& rng) {
  std::uniform_real_distribution<double> u(-0.05, 0.05);
  VectorXd theta = nominal;
  for (int i = 0; i < theta.size(); ++i) theta[i] += u(rng);
  return theta;
}

// ---- central differences ------------------------------------------------------------------------
// The tolerance model of tests/support/finite_difference.hpp, |D_h f - f' e_j| <= h^2/6 |f'''| +
// delta / h, with |f'''| estimated per column (4-point stencil at H = 1e-3, safety 2) and the
// rounding delta measured at the test state, not assumed: with a tiny step t = 1e-9 (t^2 f'' far
// below one ulp of f), r = f(x + t e_j) + f(x - t e_j) - 2 f(x) is the rounding noise of three
// evaluations alone (|r| <= 4 delta; for independent errors of spread s, |r| ~ 2.4 s while the
// central difference's rounding is ~ 1.4 s / 2h). The largest |r| over every column and output of
// a compared block (n >= 18 samples) estimates the noise; noise safety 4 covers a larger draw at
// x +- h: rounding = 4 max|r| / (2h). Step h = 1e-5.
// (History: a first bound assumed |f'''| / 6 <= 100 max(1, |f|, |f'|) and a rounding factor 10 eps;
// the theta columns broke the first assumption, the columns of Pinocchio's own q and v
// derivatives the second, by up to 10x. A worst-case n eps cond(KKT) |f| rounding bound then
// passed everything but was 1e5-1e6 times the errors seen, so it could hide a wrong derivative:
// the noise is now measured.)
using heft::test::NumericalJacobian;

// f(dx) evaluates the function at the input displaced by dx (tangent vector of size n).
NumericalJacobian centralDifferences(const std::function<VectorXd(const VectorXd&)>& f, int n) {
  heft::test::FiniteDifferenceOptions options;
  options.step = 1e-5;
  options.noise_step = 1e-9;
  options.noise_safety = 4;
  return heft::test::centralDifferences(f, n, options);
}

void expectJacobian(const std::string& what, const MatrixXd& analytical,
                    const NumericalJacobian& numerical) {
  heft::test::expectJacobianNear(analytical, numerical, what);
}

VectorXd stepped(const pinocchio::Model& model, const VectorXd& q, const VectorXd& dq) {
  return pinocchio::integrate(model, q, dq);
}

// ---- forward dynamics ---------------------------------------------------------------------------

TEST(ForwardDynamics, EqualsPinocchioAbaWithInertiasFromTheta) {
  std::mt19937 rng(1);
  for (Parametrization p : {Parametrization::LogCholesky, Parametrization::ExponentialEigenvalue}) {
    const ForwardDynamicsModel model(go2(), consistentBodies(go2()), p);
    ForwardDynamicsData data(model);
    const VectorXd theta = perturbedTheta(model.nominalTheta(), rng);
    const State s = randomState(go2(), rng);

    // Reference: the inertias written by hand from piFromTheta, then Pinocchio's ABA.
    pinocchio::Model reference = go2();
    const auto& bodies = model.regressor().bodies();
    for (size_t k = 0; k < bodies.size(); ++k)
      reference.inertias[bodies[k]] = pinocchio::Inertia::FromDynamicParameters(
          heft::inertia::piFromTheta(p, heft::Vector10(theta.segment<10>(10 * k))));
    pinocchio::Data reference_data(reference);
    const VectorXd a_ref = pinocchio::aba(reference, reference_data, s.q, s.v, s.tau);

    const VectorXd a = heft::dynamics::forwardDynamics(model, data, s.q, s.v, s.tau, theta);
    // Same algorithm on the same inertias up to the order of operations.
    EXPECT_LE((a - a_ref).cwiseAbs().maxCoeff(),
              1e-10 * std::max(1.0, a_ref.cwiseAbs().maxCoeff()));
    // The derivative call returns the same a; the theta of the nominal model differs from it.
    heft::dynamics::computeForwardDynamicsDerivatives(model, data, s.q, s.v, s.tau, theta);
    EXPECT_LE((data.a - a_ref).cwiseAbs().maxCoeff(),
              1e-10 * std::max(1.0, a_ref.cwiseAbs().maxCoeff()));
    pinocchio::Data nominal_data(go2());
    const VectorXd a_nominal = pinocchio::aba(go2(), nominal_data, s.q, s.v, s.tau);
    EXPECT_GT((a - a_nominal).norm(), 1e-6);
  }
}

void checkForwardDerivatives(const pinocchio::Model& robot, Parametrization p, unsigned seed) {
  std::mt19937 rng(seed);
  const ForwardDynamicsModel model(robot, consistentBodies(robot), p);
  ForwardDynamicsData data(model), fd(model);
  const VectorXd theta = perturbedTheta(model.nominalTheta(), rng);
  const State s = randomState(robot, rng);
  heft::dynamics::computeForwardDynamicsDerivatives(model, data, s.q, s.v, s.tau, theta);

  const std::string name = robot.name + " " + heft::inertia::toString(p);
  expectJacobian(name + " da/dtheta", data.da_dtheta,
                 centralDifferences(
                     [&](const VectorXd& d) {
                       return heft::dynamics::forwardDynamics(model, fd, s.q, s.v, s.tau,
                                                              theta + d);
                     },
                     model.numParameters()));
  expectJacobian(name + " da/dq", data.da_dq,
                 centralDifferences(
                     [&](const VectorXd& d) {
                       return heft::dynamics::forwardDynamics(model, fd, stepped(robot, s.q, d),
                                                              s.v, s.tau, theta);
                     },
                     robot.nv));
  expectJacobian(name + " da/dtau", data.da_dtau,
                 centralDifferences(
                     [&](const VectorXd& d) {
                       return heft::dynamics::forwardDynamics(model, fd, s.q, s.v, s.tau + d,
                                                              theta);
                     },
                     robot.nv));
}

TEST(ForwardDynamics, ThetaDerivativeMatchesCentralDifferencesLogCholesky) {
  checkForwardDerivatives(go2(), Parametrization::LogCholesky, 2);
  checkForwardDerivatives(talos(), Parametrization::LogCholesky, 3);
}

TEST(ForwardDynamics, ThetaDerivativeMatchesCentralDifferencesExponentialEigenvalue) {
  checkForwardDerivatives(go2(), Parametrization::ExponentialEigenvalue, 4);
  checkForwardDerivatives(talos(), Parametrization::ExponentialEigenvalue, 5);
}

// ---- contact dynamics ---------------------------------------------------------------------------

VectorXd stack(const VectorXd& a, const VectorXd& b) {
  VectorXd out(a.size() + b.size());
  out << a, b;
  return out;
}

void checkContactDerivatives(const pinocchio::Model& robot,
                             const std::vector<ContactSpec>& contacts, Parametrization p,
                             const ContactOptions& options, unsigned seed,
                             bool anchors_off_state = false) {
  std::mt19937 rng(seed);
  const ContactDynamicsModel model(robot, contacts, consistentBodies(robot), p, options);
  ContactDynamicsData data(model), fd(model);
  const VectorXd theta = perturbedTheta(model.nominalTheta(), rng);
  const State s = randomState(robot, rng);
  if (anchors_off_state) {
    // Anchors from a nearby configuration: a nonzero placement error for the Kp term.
    const State other = randomState(robot, rng);
    const VectorXd q_anchor = pinocchio::interpolate(robot, s.q, other.q, 0.05);
    heft::dynamics::setContactAnchors(model, data, q_anchor);
    heft::dynamics::setContactAnchors(model, fd, q_anchor);
  }
  // A data is reused at many points (a solver's stages, its iterations): derivatives at another
  // state first, so that nothing a previous call left behind can pass for the right answer.
  const State warm_up = randomState(robot, rng);
  heft::dynamics::computeContactDynamicsDerivatives(model, data, warm_up.q, warm_up.v, warm_up.tau,
                                                    theta);
  heft::dynamics::computeContactDynamicsDerivatives(model, data, s.q, s.v, s.tau, theta);

  const int nv = robot.nv;
  const int nc = model.nc();
  auto both = [&](const VectorXd& q, const VectorXd& v, const VectorXd& tau, const VectorXd& th) {
    heft::dynamics::contactDynamics(model, fd, q, v, tau, th);
    return stack(fd.a, fd.lambda);
  };
  const NumericalJacobian dq = centralDifferences(
      [&](const VectorXd& d) { return both(stepped(robot, s.q, d), s.v, s.tau, theta); }, nv);
  const NumericalJacobian dv =
      centralDifferences([&](const VectorXd& d) { return both(s.q, s.v + d, s.tau, theta); }, nv);
  const NumericalJacobian dtau =
      centralDifferences([&](const VectorXd& d) { return both(s.q, s.v, s.tau + d, theta); }, nv);
  const NumericalJacobian dtheta = centralDifferences(
      [&](const VectorXd& d) { return both(s.q, s.v, s.tau, theta + d); }, model.numParameters());

  // a and lambda have different units: each block gets its own bound.
  auto block = [](const NumericalJacobian& n, int row, int rows) { return n.rows(row, rows); };
  const std::string name = robot.name + " " + heft::inertia::toString(p) +
                           (options.baumgarte_kp > 0 ? " baumgarte" : "");
  expectJacobian(name + " da/dq", data.da_dq, block(dq, 0, nv));
  expectJacobian(name + " dlambda/dq", data.dlambda_dq, block(dq, nv, nc));
  expectJacobian(name + " da/dv", data.da_dv, block(dv, 0, nv));
  expectJacobian(name + " dlambda/dv", data.dlambda_dv, block(dv, nv, nc));
  expectJacobian(name + " da/dtau", data.da_dtau, block(dtau, 0, nv));
  expectJacobian(name + " dlambda/dtau", data.dlambda_dtau, block(dtau, nv, nc));
  expectJacobian(name + " da/dtheta", data.da_dtheta, block(dtheta, 0, nv));
  expectJacobian(name + " dlambda/dtheta", data.dlambda_dtheta, block(dtheta, nv, nc));
}

TEST(ContactDynamics, Go2FourPointContactsDerivativesMatchCentralDifferences) {
  checkContactDerivatives(go2(), go2Feet(pinocchio::LOCAL_WORLD_ALIGNED),
                          Parametrization::LogCholesky, ContactOptions(), 11);
  checkContactDerivatives(go2(), go2Feet(pinocchio::LOCAL), Parametrization::ExponentialEigenvalue,
                          ContactOptions(), 12);
}

TEST(ContactDynamics, TalosTwoSoleContactsDerivativesMatchCentralDifferences) {
  checkContactDerivatives(talos(), talosSoles(pinocchio::LOCAL), Parametrization::LogCholesky,
                          ContactOptions(), 13);
  checkContactDerivatives(talos(), talosSoles(pinocchio::LOCAL_WORLD_ALIGNED),
                          Parametrization::ExponentialEigenvalue, ContactOptions(), 14);
}

TEST(ContactDynamics, BaumgarteDerivativesMatchCentralDifferences) {
  ContactOptions options;
  options.baumgarte_kp = 20.0;
  options.baumgarte_kd = 5.0;
  checkContactDerivatives(go2(), go2Feet(pinocchio::LOCAL), Parametrization::LogCholesky, options,
                          15, /*anchors_off_state=*/true);
}

// The solution satisfies the two KKT rows written with independent Pinocchio calls: the contact
// frames do not accelerate (J a + gamma = 0), and RNEA(q, v, a) = tau + J^T lambda.
void checkEquationsOfMotion(const pinocchio::Model& robot, const std::vector<ContactSpec>& contacts,
                            unsigned seed) {
  std::mt19937 rng(seed);
  const ContactDynamicsModel model(robot, contacts, consistentBodies(robot),
                                   Parametrization::LogCholesky);
  ContactDynamicsData data(model);
  const VectorXd theta = perturbedTheta(model.nominalTheta(), rng);
  const State s = randomState(robot, rng);
  heft::dynamics::contactDynamics(model, data, s.q, s.v, s.tau, theta);

  pinocchio::Model parametrized = robot;
  model.regressor().setIdentifiedInertias(
      heft::dynamics::piFromTheta(model.regressor(), Parametrization::LogCholesky, theta),
      parametrized);
  pinocchio::Data pd(parametrized);
  pinocchio::forwardKinematics(parametrized, pd, s.q, s.v, data.a);
  pinocchio::computeJointJacobians(parametrized, pd, s.q);
  pinocchio::updateFramePlacements(parametrized, pd);
  VectorXd generalized_contact_force = VectorXd::Zero(robot.nv);
  int row = 0;
  for (const ContactSpec& c : contacts) {
    const auto frame = robot.getFrameId(c.frame);
    MatrixXd J = MatrixXd::Zero(6, robot.nv);
    pinocchio::getFrameJacobian(parametrized, pd, frame, c.reference_frame, J);
    if (c.type == ContactSpec::Type::Point3D) {
      // Point contact: classical acceleration of the frame origin.
      const Eigen::Vector3d acc =
          pinocchio::getFrameClassicalAcceleration(parametrized, pd, frame, c.reference_frame)
              .linear();
      EXPECT_LE(acc.cwiseAbs().maxCoeff(), 1e-8 * std::max(1.0, data.a.cwiseAbs().maxCoeff()))
          << c.frame;
      generalized_contact_force += J.topRows(3).transpose() * data.lambda.segment<3>(row);
    } else {
      // Surface contact: spatial acceleration of the frame.
      const pinocchio::Motion acc =
          pinocchio::getFrameAcceleration(parametrized, pd, frame, c.reference_frame);
      EXPECT_LE(acc.toVector().cwiseAbs().maxCoeff(),
                1e-8 * std::max(1.0, data.a.cwiseAbs().maxCoeff()))
          << c.frame;
      generalized_contact_force += J.transpose() * data.lambda.segment<6>(row);
    }
    row += c.dimension();
  }
  const VectorXd residual =
      pinocchio::rnea(parametrized, pd, s.q, s.v, data.a) - s.tau - generalized_contact_force;
  EXPECT_LE(residual.cwiseAbs().maxCoeff(),
            1e-8 * std::max(1.0, data.lambda.cwiseAbs().maxCoeff()));
}

TEST(ContactDynamics, SolutionSatisfiesConstraintAndEquationsOfMotion) {
  checkEquationsOfMotion(go2(), go2Feet(pinocchio::LOCAL_WORLD_ALIGNED), 21);
  checkEquationsOfMotion(go2(), go2Feet(pinocchio::LOCAL), 22);
  checkEquationsOfMotion(talos(), talosSoles(pinocchio::LOCAL), 23);
  checkEquationsOfMotion(talos(), talosSoles(pinocchio::LOCAL_WORLD_ALIGNED), 24);
}

// ---- impulse dynamics ---------------------------------------------------------------------------

void checkImpulse(const pinocchio::Model& robot, const std::vector<ContactSpec>& contacts,
                  Parametrization p, unsigned seed) {
  std::mt19937 rng(seed);
  const ImpulseDynamicsModel model(robot, contacts, consistentBodies(robot), p);
  ImpulseDynamicsData data(model), fd(model);
  const VectorXd theta = perturbedTheta(model.nominalTheta(), rng);
  const State s = randomState(robot, rng);
  // A rotor armature on every coordinate of the working models (estimation sets it per theta):
  // every derivative below is taken with it, and d/d armature is checked too.
  std::uniform_real_distribution<double> uniform(0.01, 0.1);
  const VectorXd armature = VectorXd::NullaryExpr(robot.nv, [&] { return uniform(rng); });
  data.inertias.model.armature = armature;
  fd.inertias.model.armature = armature;
  // Derivatives at another state first, as a reused data sees them: Pinocchio 4.1 keeps part of
  // its impulse q-derivative from the previous call unless heft resets it (impulse_dynamics.cpp).
  const State warm_up = randomState(robot, rng);
  heft::dynamics::computeImpulseDynamicsDerivatives(model, data, warm_up.q, warm_up.v, theta);
  heft::dynamics::computeImpulseDynamicsDerivatives(model, data, s.q, s.v, theta);

  // The contacts stop: their frames' velocities after the impact are zero (restitution 0).
  pinocchio::Data pd(robot);
  pinocchio::forwardKinematics(robot, pd, s.q, data.v_plus);
  for (const ContactSpec& c : contacts) {
    const pinocchio::Motion vel =
        pinocchio::getFrameVelocity(robot, pd, robot.getFrameId(c.frame), pinocchio::LOCAL);
    const double speed = c.type == ContactSpec::Type::Point3D
                             ? vel.linear().cwiseAbs().maxCoeff()
                             : vel.toVector().cwiseAbs().maxCoeff();
    EXPECT_LE(speed, 1e-10 * std::max(1.0, s.v.cwiseAbs().maxCoeff())) << c.frame;
  }

  const int nv = robot.nv;
  const int nc = model.nc();
  auto both = [&](const VectorXd& q, const VectorXd& v, const VectorXd& th) {
    heft::dynamics::impulseDynamics(model, fd, q, v, th);
    return stack(fd.v_plus, fd.impulse);
  };
  const NumericalJacobian dq = centralDifferences(
      [&](const VectorXd& d) { return both(stepped(robot, s.q, d), s.v, theta); }, nv);
  const NumericalJacobian dv =
      centralDifferences([&](const VectorXd& d) { return both(s.q, s.v + d, theta); }, nv);
  const NumericalJacobian dtheta = centralDifferences(
      [&](const VectorXd& d) { return both(s.q, s.v, theta + d); }, model.numParameters());
  const NumericalJacobian darmature = centralDifferences(
      [&](const VectorXd& d) {
        fd.inertias.model.armature = armature + d;
        const VectorXd out = both(s.q, s.v, theta);
        fd.inertias.model.armature = armature;
        return out;
      },
      nv);
  auto block = [](const NumericalJacobian& n, int row, int rows) { return n.rows(row, rows); };
  const std::string name = robot.name + " " + heft::inertia::toString(p) + " impulse";
  expectJacobian(name + " dv+/darmature", data.dvplus_darmature, block(darmature, 0, nv));
  expectJacobian(name + " dLambda/darmature", data.dimpulse_darmature, block(darmature, nv, nc));
  expectJacobian(name + " dv+/dq", data.dvplus_dq, block(dq, 0, nv));
  expectJacobian(name + " dLambda/dq", data.dimpulse_dq, block(dq, nv, nc));
  expectJacobian(name + " dv+/dv-", data.dvplus_dvminus, block(dv, 0, nv));
  expectJacobian(name + " dLambda/dv-", data.dimpulse_dvminus, block(dv, nv, nc));
  expectJacobian(name + " dv+/dtheta", data.dvplus_dtheta, block(dtheta, 0, nv));
  expectJacobian(name + " dLambda/dtheta", data.dimpulse_dtheta, block(dtheta, nv, nc));
}

TEST(ImpulseDynamics, Go2TouchdownDerivativesMatchCentralDifferences) {
  checkImpulse(go2(), go2Feet(pinocchio::LOCAL_WORLD_ALIGNED), Parametrization::LogCholesky, 31);
  checkImpulse(go2(), go2Feet(pinocchio::LOCAL), Parametrization::ExponentialEigenvalue, 32);
}

TEST(ImpulseDynamics, TalosTouchdownDerivativesMatchCentralDifferences) {
  checkImpulse(talos(), talosSoles(pinocchio::LOCAL), Parametrization::ExponentialEigenvalue, 33);
  checkImpulse(talos(), talosSoles(pinocchio::LOCAL_WORLD_ALIGNED), Parametrization::LogCholesky,
               34);
}

// ---- allocation and input checks ----------------------------------------------------------------

TEST(Dynamics, HotCallsDoNotAllocate) {
  std::mt19937 rng(41);
  const State s = randomState(go2(), rng), s2 = randomState(go2(), rng);
  const State t = randomState(talos(), rng), t2 = randomState(talos(), rng);

  const ForwardDynamicsModel fwd(go2(), consistentBodies(go2()),
                                 Parametrization::ExponentialEigenvalue);
  ForwardDynamicsData fwd_data(fwd);
  const ContactDynamicsModel contact(talos(), talosSoles(pinocchio::LOCAL),
                                     consistentBodies(talos()), Parametrization::LogCholesky);
  ContactDynamicsData contact_data(contact);
  const ImpulseDynamicsModel impulse(go2(), go2Feet(pinocchio::LOCAL_WORLD_ALIGNED),
                                     consistentBodies(go2()), Parametrization::LogCholesky);
  ImpulseDynamicsData impulse_data(impulse);

  const VectorXd theta_fwd = fwd.nominalTheta(), theta_fwd2 = perturbedTheta(theta_fwd, rng);
  const VectorXd theta_contact = contact.nominalTheta();
  const VectorXd theta_contact2 = perturbedTheta(theta_contact, rng);
  const VectorXd theta_impulse = impulse.nominalTheta();
  const VectorXd theta_impulse2 = perturbedTheta(theta_impulse, rng);
  // Warm-up: first-touch work (if any) is not the hot path.
  heft::dynamics::computeForwardDynamicsDerivatives(fwd, fwd_data, s.q, s.v, s.tau, theta_fwd);
  heft::dynamics::computeContactDynamicsDerivatives(contact, contact_data, t.q, t.v, t.tau,
                                                    theta_contact);
  heft::dynamics::computeImpulseDynamicsDerivatives(impulse, impulse_data, s.q, s.v, theta_impulse);

  // Forward dynamics: nothing at all, with a new theta (the inertia update runs) and new states.
  {
    NoMallocScope scope(/*eigen_guard=*/true);
    heft::dynamics::forwardDynamics(fwd, fwd_data, s.q, s.v, s.tau, theta_fwd2);
    heft::dynamics::computeForwardDynamicsDerivatives(fwd, fwd_data, s2.q, s2.v, s2.tau, theta_fwd);
    EXPECT_EQ(scope.stop(), 0) << "heap allocations in forward dynamics";
  }
  EXPECT_TRUE(fwd_data.da_dtheta.allFinite());

  // Contact and impulse: Pinocchio 4.1's constraint Cholesky allocates inside compute() (it
  // rebuilds its damping and Delassus block storage). heft must add nothing on top of it: compare
  // with Pinocchio's own calls on the same data and state.
  long heft_contact = 0, pinocchio_contact = 0, heft_impulse = 0, pinocchio_impulse = 0;
  {
    NoMallocScope scope(/*eigen_guard=*/false);
    heft::dynamics::contactDynamics(contact, contact_data, t.q, t.v, t.tau, theta_contact2);
    heft::dynamics::computeContactDynamicsDerivatives(contact, contact_data, t2.q, t2.v, t2.tau,
                                                      theta_contact);
    heft_contact = scope.stop();
  }
  {
    const pinocchio::Model& m = contact_data.inertias.model;
    NoMallocScope scope(/*eigen_guard=*/false);
    pinocchio::constraintDynamics(m, contact_data.pin, t.q, t.v, t.tau, contact_data.constraints,
                                  contact_data.constraint_datas, contact_data.settings);
    pinocchio::constraintDynamics(m, contact_data.pin, t2.q, t2.v, t2.tau, contact_data.constraints,
                                  contact_data.constraint_datas, contact_data.settings);
    pinocchio::computeConstraintDynamicsDerivatives(m, contact_data.pin, contact_data.constraints,
                                                    contact_data.constraint_datas,
                                                    contact_data.settings);
    pinocchio_contact = scope.stop();
  }
  {
    NoMallocScope scope(/*eigen_guard=*/false);
    heft::dynamics::impulseDynamics(impulse, impulse_data, s.q, s.v, theta_impulse2);
    heft::dynamics::computeImpulseDynamicsDerivatives(impulse, impulse_data, s2.q, s2.v,
                                                      theta_impulse);
    heft_impulse = scope.stop();
  }
  {
    const pinocchio::Model& m = impulse_data.inertias.model;
    NoMallocScope scope(/*eigen_guard=*/false);
    pinocchio::impulseDynamics(m, impulse_data.pin, s.q, s.v, impulse.constraintModels(),
                               impulse_data.constraint_datas, 0.0, impulse_data.settings);
    pinocchio::impulseDynamics(m, impulse_data.pin, s2.q, s2.v, impulse.constraintModels(),
                               impulse_data.constraint_datas, 0.0, impulse_data.settings);
    pinocchio::computeImpulseDynamicsDerivatives(m, impulse_data.pin, impulse.constraintModels(),
                                                 impulse_data.constraint_datas, 0.0,
                                                 impulse_data.settings);
    pinocchio_impulse = scope.stop();
  }
  std::printf(
      "  heap allocations: contact heft %ld / Pinocchio alone %ld, impulse heft %ld / "
      "Pinocchio alone %ld\n",
      heft_contact, pinocchio_contact, heft_impulse, pinocchio_impulse);
  EXPECT_LE(heft_contact, pinocchio_contact) << "heft allocates in contact dynamics";
  EXPECT_LE(heft_impulse, pinocchio_impulse) << "heft allocates in impulse dynamics";
  EXPECT_GT(contact_data.dlambda_dtheta.cwiseAbs().maxCoeff(), 0.0);
  EXPECT_GT(impulse_data.dvplus_dtheta.cwiseAbs().maxCoeff(), 0.0);
}

TEST(Dynamics, WrongSizesAndBadSpecsThrowInputError) {
  const ForwardDynamicsModel fwd(go2(), consistentBodies(go2()), Parametrization::LogCholesky);
  ForwardDynamicsData fwd_data(fwd);
  const VectorXd q = pinocchio::neutral(go2());
  const VectorXd v = VectorXd::Zero(go2().nv);
  const VectorXd theta = fwd.nominalTheta();
  EXPECT_THROW(heft::dynamics::forwardDynamics(fwd, fwd_data, v, v, v, theta), heft::InputError);
  EXPECT_THROW(heft::dynamics::forwardDynamics(fwd, fwd_data, q, v, v, theta.head(10)),
               heft::InputError);
  EXPECT_THROW(heft::dynamics::computeForwardDynamicsDerivatives(fwd, fwd_data, q, q, v, theta),
               heft::InputError);

  EXPECT_THROW(ContactDynamicsModel(go2(), {{"no_such_frame", ContactSpec::Type::Point3D}},
                                    consistentBodies(go2()), Parametrization::LogCholesky),
               heft::InputError);
  EXPECT_THROW(
      ContactDynamicsModel(go2(), {{"FL_foot", ContactSpec::Type::Point3D, pinocchio::WORLD}},
                           consistentBodies(go2()), Parametrization::LogCholesky),
      heft::InputError);
  ContactOptions bad;
  bad.max_iter = 0;
  std::string why;
  EXPECT_FALSE(bad.validate(&why));
  EXPECT_NE(why.find("max_iter"), std::string::npos);
  EXPECT_THROW(ContactDynamicsModel(go2(), go2Feet(pinocchio::LOCAL), consistentBodies(go2()),
                                    Parametrization::LogCholesky, bad),
               heft::InputError);

  const ContactDynamicsModel contact(go2(), go2Feet(pinocchio::LOCAL), consistentBodies(go2()),
                                     Parametrization::LogCholesky);
  ContactDynamicsData contact_data(contact);
  EXPECT_THROW(heft::dynamics::contactDynamics(contact, contact_data, q, v, q, theta),
               heft::InputError);
  const ImpulseDynamicsModel impulse(go2(), go2Feet(pinocchio::LOCAL), consistentBodies(go2()),
                                     Parametrization::LogCholesky);
  ImpulseDynamicsData impulse_data(impulse);
  EXPECT_THROW(heft::dynamics::impulseDynamics(impulse, impulse_data, q, q, theta),
               heft::InputError);
  heft::dynamics::ImpulseOptions bad_impulse;
  bad_impulse.restitution = 1.5;
  EXPECT_THROW(ImpulseDynamicsModel(go2(), go2Feet(pinocchio::LOCAL), consistentBodies(go2()),
                                    Parametrization::LogCholesky, bad_impulse),
               heft::InputError);
}

}  // namespace
