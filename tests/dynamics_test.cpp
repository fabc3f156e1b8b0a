// heft::dynamics: restricted torque regressor, energy regressors, friction and actuator models.
// Every analytical derivative is checked against central differences (q on the manifold through
// pinocchio::integrate) with a tolerance derived from the step, see checkJacobian.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include <pinocchio/algorithm/energy.hpp>
#include <pinocchio/algorithm/joint-configuration.hpp>
#include <pinocchio/algorithm/kinematics.hpp>
#include <pinocchio/algorithm/regressor.hpp>
#include <pinocchio/algorithm/rnea.hpp>
#include <pinocchio/parsers/urdf.hpp>

#include "heft/common/error.hpp"
#include "heft/dynamics/actuator.hpp"
#include "heft/dynamics/energy.hpp"
#include "heft/dynamics/friction.hpp"
#include "heft/dynamics/regressor.hpp"

#include "support/finite_difference.hpp"
#include "support/free_flyer_robots.hpp"
#include "support/malloc_counter.hpp"  // counts every heap allocation (see there why)

namespace {

using Eigen::MatrixXd;
using Eigen::VectorXd;
using heft::dynamics::ActuatorData;
using heft::dynamics::ActuatorModel;
using heft::dynamics::EnergyData;
using heft::dynamics::FrictionData;
using heft::dynamics::FrictionModel;
using heft::dynamics::RegressorData;
using heft::dynamics::RegressorModel;
using heft::inertia::Parametrization;

constexpr double kEps = std::numeric_limits<double>::epsilon();

double maxAbs(const Eigen::Ref<const MatrixXd>& m) {
  return m.size() ? m.cwiseAbs().maxCoeff() : 0.0;
}

using heft_test::go2;
using heft_test::talos;

struct State {
  VectorXd q, v, a;
};

VectorXd uniform(std::mt19937& rng, Eigen::Index n, double lo, double hi) {
  std::uniform_real_distribution<double> dist(lo, hi);
  VectorXd x(n);
  for (Eigen::Index i = 0; i < n; ++i) x[i] = dist(rng);
  return x;
}

// Random configuration within the joint limits; unbounded coordinates (the free-flyer translation,
// whose limits are +-DBL_MAX) in [-1, 1].
State randomState(const pinocchio::Model& model, std::mt19937& rng) {
  VectorXd lower = model.lowerPositionLimit, upper = model.upperPositionLimit;
  for (Eigen::Index i = 0; i < model.nq; ++i) {
    if (!(std::abs(lower[i]) < 1e10)) lower[i] = -1.0;
    if (!(std::abs(upper[i]) < 1e10)) upper[i] = 1.0;
  }
  std::srand(rng());  // Pinocchio draws from std::rand
  State s;
  s.q = pinocchio::randomConfiguration(model, lower, upper);
  s.v = uniform(rng, model.nv, -2.0, 2.0);
  s.a = uniform(rng, model.nv, -5.0, 5.0);
  return s;
}

// A random subset of the bodies (joint indices >= 1) in random order; each kept with probability p.
std::vector<pinocchio::JointIndex> randomSubset(const pinocchio::Model& model, double p,
                                                std::mt19937& rng) {
  std::vector<pinocchio::JointIndex> subset;
  std::bernoulli_distribution keep(p);
  for (pinocchio::JointIndex j = 1; j < static_cast<pinocchio::JointIndex>(model.njoints); ++j) {
    if (keep(rng)) subset.push_back(j);
  }
  std::shuffle(subset.begin(), subset.end(), rng);
  return subset;
}

std::vector<pinocchio::JointIndex> allBodies(const pinocchio::Model& model) {
  std::vector<pinocchio::JointIndex> all(model.njoints - 1);
  std::iota(all.begin(), all.end(), pinocchio::JointIndex(1));
  return all;
}

// Physically consistent random pi_S (Pinocchio's random inertias).
VectorXd randomConsistentPi(int num_bodies) {
  VectorXd pi(10 * num_bodies);
  for (int k = 0; k < num_bodies; ++k) {
    pi.segment<10>(10 * k) = pinocchio::Inertia::Random().toDynamicParameters();
  }
  return pi;
}

// Small positive rotor inertias on the actuated joints: they must end up in tau_nom.
pinocchio::Model withArmature(pinocchio::Model model, std::mt19937& rng) {
  const int root_nv = model.joints[1].nv();
  model.armature.tail(model.nv - root_nv) = uniform(rng, model.nv - root_nv, 0.01, 0.1);
  return model;
}

// Column-by-column central differences of eval(dx) (x retracted by dx) against J, with the
// tolerance model's defaults (tests/support/finite_difference.hpp): h = eps^(1/3), |f'''| from the
// 4-point stencil at H = 1e-3 with safety 2, 10 ulps of rounding per evaluation (RNEA sums
// intermediates larger than its outputs). Returns the worst error / tolerance ratio.
template <class Eval>
double checkJacobian(const Eval& eval, Eigen::Index n, const MatrixXd& J, const std::string& what) {
  return heft::test::expectJacobianNear(J, heft::test::centralDifferences(eval, n), what);
}

MatrixXd stackRows(std::initializer_list<const MatrixXd*> blocks) {
  Eigen::Index rows = 0;
  for (const MatrixXd* b : blocks) rows += b->rows();
  MatrixXd out(rows, (*blocks.begin())->cols());
  Eigen::Index r = 0;
  for (const MatrixXd* b : blocks) {
    out.middleRows(r, b->rows()) = *b;
    r += b->rows();
  }
  return out;
}

// ---- restricted torque regressor
// ------------------------------------------------------------------

void expectRegressorMatchesRnea(const pinocchio::Model& robot, unsigned seed) {
  std::mt19937 rng(seed);
  for (bool armature : {false, true}) {
    const pinocchio::Model model = armature ? withArmature(robot, rng) : robot;
    pinocchio::Data data(model);
    for (int trial = 0; trial < 4; ++trial) {
      const State s = randomState(model, rng);
      const VectorXd tau_ref = pinocchio::rnea(model, data, s.q, s.v, s.a);
      const MatrixXd Y_all = pinocchio::computeJointTorqueRegressor(model, data, s.q, s.v, s.a);
      // 0.1 and 0.2 draw mostly at most a quarter of the bodies: the per-body path
      const std::vector<std::vector<pinocchio::JointIndex>> subsets = {
          allBodies(model),
          randomSubset(model, 0.1, rng),
          randomSubset(model, 0.2, rng),
          randomSubset(model, 0.5, rng),
          {}};
      for (const auto& S : subsets) {
        const RegressorModel rm(model, S);
        RegressorData rd(rm);
        heft::dynamics::computeRestrictedRegressor(rm, rd, s.q, s.v, s.a);
        ASSERT_EQ(rd.Y.rows(), model.nv);
        ASSERT_EQ(rd.Y.cols(), 10 * static_cast<Eigen::Index>(S.size()));
        for (std::size_t k = 0; k < S.size(); ++k) {
          const auto columns = Y_all.middleCols<10>(10 * static_cast<Eigen::Index>(S[k] - 1));
          EXPECT_LE(maxAbs(rd.Y.middleCols<10>(10 * static_cast<Eigen::Index>(k)) - columns),
                    1e-10 * (1 + maxAbs(columns)))
              << "body " << S[k] << ", |S| = " << S.size();
        }
        const VectorXd& tau =
            heft::dynamics::computeRestrictedTorque(rm, rd, rm.nominalParameters());
        EXPECT_LE(maxAbs(tau - tau_ref), 1e-9 * maxAbs(tau_ref))
            << "|S| = " << S.size() << ", armature " << armature;
        if (S.size() == static_cast<std::size_t>(model.njoints - 1) && !armature) {
          EXPECT_EQ(maxAbs(rd.tau_nom), 0.0) << "the rest of a full set has no inertia";
        }
        if (S.empty()) EXPECT_LE(maxAbs(rd.tau_nom - tau_ref), 1e-12 * maxAbs(tau_ref));

        // any other pi_S: the RNEA of the model carrying it
        const VectorXd pi = randomConsistentPi(rm.numBodies());
        pinocchio::Model other = model;
        rm.setIdentifiedInertias(pi, other);
        pinocchio::Data other_data(other);
        const VectorXd tau_other = pinocchio::rnea(other, other_data, s.q, s.v, s.a);
        EXPECT_LE(maxAbs(heft::dynamics::computeRestrictedTorque(rm, rd, pi) - tau_other),
                  1e-9 * maxAbs(tau_other));
      }
    }
  }
}

TEST(Regressor, TimesParametersEqualsRneaGo2) { expectRegressorMatchesRnea(go2(), 1); }
TEST(Regressor, TimesParametersEqualsRneaTalos) { expectRegressorMatchesRnea(talos(), 2); }

TEST(Regressor, NominalParametersAndIndexing) {
  const pinocchio::Model& model = go2();
  const std::vector<pinocchio::JointIndex> S = {5, 2};
  const RegressorModel rm(model, S);
  EXPECT_EQ(rm.numBodies(), 2);
  EXPECT_EQ(rm.numParameters(), 20);
  EXPECT_EQ(rm.indexOf(5), 0);
  EXPECT_EQ(rm.indexOf(2), 1);
  EXPECT_EQ(rm.indexOf(3), -1);
  const VectorXd pi = rm.nominalParameters();
  EXPECT_EQ(pi.segment<10>(0), model.inertias[5].toDynamicParameters());
  EXPECT_EQ(pi.segment<10>(10), model.inertias[2].toDynamicParameters());
  EXPECT_GT(pi[0], 0.0);
  // the rest model has S removed, the S-only model everything else
  EXPECT_EQ(rm.restModel().inertias[5].mass(), 0.0);
  EXPECT_EQ(rm.restModel().inertias[3].mass(), model.inertias[3].mass());
  EXPECT_EQ(rm.identifiedModel().inertias[3].mass(), 0.0);
  EXPECT_EQ(rm.identifiedModel().inertias[2].mass(), model.inertias[2].mass());
}

TEST(Regressor, RejectsBadInputs) {
  const pinocchio::Model& model = go2();
  EXPECT_THROW(RegressorModel(model, {0}), heft::InputError);
  EXPECT_THROW(RegressorModel(model, {static_cast<pinocchio::JointIndex>(model.njoints)}),
               heft::InputError);
  EXPECT_THROW(RegressorModel(model, {3, 4, 3}), heft::InputError);

  const RegressorModel rm(model, {1, 3});
  RegressorData rd(rm);
  const VectorXd q = pinocchio::neutral(model), v = VectorXd::Zero(model.nv);
  try {
    heft::dynamics::computeRestrictedRegressor(rm, rd, q.head(model.nq - 1), v, v);
    ADD_FAILURE() << "no throw on a short q";
  } catch (const heft::InputError& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("q"), std::string::npos) << message;
    EXPECT_NE(message.find("expected size " + std::to_string(model.nq)), std::string::npos)
        << message;
    EXPECT_NE(message.find("got size " + std::to_string(model.nq - 1)), std::string::npos)
        << message;
  }
  EXPECT_THROW(heft::dynamics::computeRestrictedRegressor(rm, rd, q, v.head(3), v),
               heft::InputError);
  EXPECT_THROW(heft::dynamics::computeRestrictedTorque(rm, rd, VectorXd::Zero(10)),
               heft::InputError);
  EXPECT_THROW(heft::dynamics::computeRestrictedDerivatives(rm, rd, q, v, v, VectorXd::Zero(30)),
               heft::InputError);
  EXPECT_THROW(heft::dynamics::computeParameterJacobian(rm, rd, Parametrization::LogCholesky,
                                                        VectorXd::Zero(11)),
               heft::InputError);
  // m == 0 with a first moment cannot be a Pinocchio inertia
  VectorXd pi = rm.nominalParameters();
  pi[0] = 0.0;
  pi[1] = 0.1;
  pinocchio::Model target = model;
  EXPECT_THROW(rm.setIdentifiedInertias(pi, target), heft::InputError);
}

// d tau / d(q, v, a) of the full torque and of both parts, at a non-nominal pi_S; the full one is
// differenced through Pinocchio's RNEA of the model carrying pi_S (independent of Y_S).
void expectStateDerivativesMatchFiniteDifferences(const pinocchio::Model& robot, unsigned seed,
                                                  const std::string& name) {
  std::mt19937 rng(seed);
  const pinocchio::Model model = withArmature(robot, rng);
  std::vector<pinocchio::JointIndex> S = randomSubset(model, 0.4, rng);
  if (S.empty()) S.push_back(1);
  const RegressorModel rm(model, S);
  RegressorData rd(rm);
  const VectorXd pi = randomConsistentPi(rm.numBodies());
  pinocchio::Model carrying = model;
  rm.setIdentifiedInertias(pi, carrying);
  pinocchio::Data carrying_data(carrying);
  const State s = randomState(model, rng);

  heft::dynamics::computeRestrictedDerivatives(rm, rd, s.q, s.v, s.a, pi);
  // the decomposition adds up and the torque is the RNEA of the model carrying pi_S
  const VectorXd tau_ref = pinocchio::rnea(carrying, carrying_data, s.q, s.v, s.a);
  EXPECT_LE(maxAbs(rd.tau - tau_ref), 1e-9 * maxAbs(tau_ref));
  EXPECT_LE(maxAbs(rd.dtau_da - rd.dtau_da.transpose()), 0.0) << "M must be symmetric";

  // stacked outputs [Y_S pi_S; tau_nom; RNEA(model carrying pi_S)]
  RegressorData work(rm);
  auto evaluate = [&](const VectorXd& q, const VectorXd& v, const VectorXd& a) {
    heft::dynamics::computeRestrictedRegressor(rm, work, q, v, a);
    VectorXd out(3 * model.nv);
    out << work.Y * pi, work.tau_nom, pinocchio::rnea(carrying, carrying_data, q, v, a);
    return out;
  };
  const Eigen::Index nv = model.nv;
  checkJacobian(
      [&](const VectorXd& dq) { return evaluate(pinocchio::integrate(model, s.q, dq), s.v, s.a); },
      nv, stackRows({&rd.dYpi_dq, &rd.dtau_nom_dq, &rd.dtau_dq}), name + " d tau/dq (tangent)");
  checkJacobian([&](const VectorXd& dv) { return evaluate(s.q, s.v + dv, s.a); }, nv,
                stackRows({&rd.dYpi_dv, &rd.dtau_nom_dv, &rd.dtau_dv}), name + " d tau/dv");
  checkJacobian([&](const VectorXd& da) { return evaluate(s.q, s.v, s.a + da); }, nv,
                stackRows({&rd.dYpi_da, &rd.dtau_nom_da, &rd.dtau_da}), name + " d tau/da");
}

TEST(Regressor, StateDerivativesGo2) {
  expectStateDerivativesMatchFiniteDifferences(go2(), 3, "go2");
}
TEST(Regressor, StateDerivativesTalos) {
  expectStateDerivativesMatchFiniteDifferences(talos(), 4, "talos");
}

// d tau / d theta_S = Y_S blockdiag(d pi / d theta), differenced through the RNEA of the model
// carrying pi(theta) (independent of Y_S and of the chain rule).
void expectThetaDerivativesMatchFiniteDifferences(const pinocchio::Model& model,
                                                  Parametrization parametrization, unsigned seed,
                                                  const std::string& name) {
  std::mt19937 rng(seed);
  std::vector<pinocchio::JointIndex> S = randomSubset(model, 0.15, rng);
  if (S.empty()) S.push_back(2);
  const RegressorModel rm(model, S);
  RegressorData rd(rm);
  const State s = randomState(model, rng);
  const VectorXd theta = uniform(rng, rm.numParameters(), -0.5, 0.5);

  heft::dynamics::computeRestrictedRegressor(rm, rd, s.q, s.v, s.a);
  const MatrixXd& J = heft::dynamics::computeParameterJacobian(rm, rd, parametrization, theta);
  ASSERT_EQ(J.rows(), model.nv);
  ASSERT_EQ(J.cols(), rm.numParameters());

  pinocchio::Model carrying = model;
  pinocchio::Data carrying_data(carrying);
  auto tau_at = [&](const VectorXd& dtheta) {
    rm.setIdentifiedInertias(heft::dynamics::piFromTheta(rm, parametrization, theta + dtheta),
                             carrying);
    return VectorXd(pinocchio::rnea(carrying, carrying_data, s.q, s.v, s.a));
  };
  // and the value: Y_S pi(theta) + tau_nom
  const VectorXd pi = heft::dynamics::piFromTheta(rm, parametrization, theta);
  const VectorXd tau0 = tau_at(VectorXd::Zero(rm.numParameters()));
  EXPECT_LE(maxAbs(heft::dynamics::computeRestrictedTorque(rm, rd, pi) - tau0),
            1e-9 * maxAbs(tau0));
  checkJacobian(tau_at, rm.numParameters(), J,
                name + " d tau/d theta (" + heft::inertia::toString(parametrization) + ")");
}

TEST(Regressor, ThetaDerivativesLogCholesky) {
  expectThetaDerivativesMatchFiniteDifferences(go2(), Parametrization::LogCholesky, 5, "go2");
  expectThetaDerivativesMatchFiniteDifferences(talos(), Parametrization::LogCholesky, 6, "talos");
}

TEST(Regressor, ThetaDerivativesExponentialEigenvalue) {
  expectThetaDerivativesMatchFiniteDifferences(go2(), Parametrization::ExponentialEigenvalue, 7,
                                               "go2");
  expectThetaDerivativesMatchFiniteDifferences(talos(), Parametrization::ExponentialEigenvalue, 8,
                                               "talos");
}

#ifdef HEFT_CAN_COUNT_MALLOCS
TEST(Regressor, HotCallsDoNotAllocate) {
  std::mt19937 rng(9);
  const pinocchio::Model& model = talos();
  const RegressorModel rm(model, randomSubset(model, 0.3, rng));
  RegressorData rd(rm);
  EnergyData ed(rm);
  const State s = randomState(model, rng);
  const VectorXd pi = rm.nominalParameters();
  // two bodies of TALOS' 33: the per-body regressor
  const RegressorModel few(
      model, {model.getJointId("torso_2_joint"), model.getJointId("arm_left_4_joint")});
  RegressorData few_data(few);
  g_malloc_count = 0;
  g_count_mallocs = true;
  heft::dynamics::computeRestrictedRegressor(few, few_data, s.q, s.v, s.a);
  heft::dynamics::computeRestrictedRegressor(rm, rd, s.q, s.v, s.a);
  heft::dynamics::computeRestrictedTorque(rm, rd, pi);
  heft::dynamics::computeRestrictedDerivatives(rm, rd, s.q, s.v, s.a, pi);
  heft::dynamics::computeEnergyRegressors(rm, ed, s.q, s.v);
  g_count_mallocs = false;
  EXPECT_EQ(g_malloc_count, 0);

  const int n = 12;
  const FrictionModel fm(n);
  FrictionData fdata(fm);
  const ActuatorModel am(n);
  ActuatorData adata(am);
  const VectorXd v = uniform(rng, n, -1, 1), mu = uniform(rng, 6 * n, -1, 1);
  const VectorXd rho = uniform(rng, 2 * n, -1, 1);
  MatrixXd Jf(n, 6 * n), Ja(n, 2 * n);
  g_malloc_count = 0;
  g_count_mallocs = true;
  heft::dynamics::computeFriction(fm, fdata, v, mu);
  heft::dynamics::computeFrictionDerivatives(fm, fdata, v, mu);
  heft::dynamics::frictionParameterJacobian(fm, fdata, Jf);
  heft::dynamics::computeActuator(am, adata, v, rho);
  heft::dynamics::computeActuatorDerivatives(am, adata, v, rho);
  heft::dynamics::actuatorParameterJacobian(am, adata, Ja);
  g_count_mallocs = false;
  EXPECT_EQ(g_malloc_count, 0);
}

// Separate from the above: the chain rule goes through heft::inertia::jacobian.
TEST(Regressor, ParameterJacobianDoesNotAllocate) {
  std::mt19937 rng(10);
  const pinocchio::Model& model = talos();
  const RegressorModel rm(model, randomSubset(model, 0.3, rng));
  RegressorData rd(rm);
  const State s = randomState(model, rng);
  const VectorXd theta = uniform(rng, rm.numParameters(), -0.5, 0.5);
  heft::dynamics::computeRestrictedRegressor(rm, rd, s.q, s.v, s.a);
  for (Parametrization p : {Parametrization::LogCholesky, Parametrization::ExponentialEigenvalue}) {
    g_malloc_count = 0;
    g_count_mallocs = true;
    heft::dynamics::computeParameterJacobian(rm, rd, p, theta);
    g_count_mallocs = false;
    EXPECT_EQ(g_malloc_count, 0) << heft::inertia::toString(p);
  }
}
#endif

// ---- energy regressors
// ----------------------------------------------------------------------------

void expectEnergyRegressorsMatchPinocchio(const pinocchio::Model& robot, unsigned seed) {
  std::mt19937 rng(seed);
  const pinocchio::Model model = withArmature(robot, rng);
  for (int trial = 0; trial < 4; ++trial) {
    const State s = randomState(model, rng);
    for (const auto& S : {allBodies(model), randomSubset(model, 0.4, rng)}) {
      const RegressorModel rm(model, S);
      EnergyData ed(rm);
      heft::dynamics::computeEnergyRegressors(rm, ed, s.q, s.v);
      for (bool nominal : {true, false}) {
        const VectorXd pi = nominal ? rm.nominalParameters() : randomConsistentPi(rm.numBodies());
        pinocchio::Model carrying = model;
        rm.setIdentifiedInertias(pi, carrying);
        pinocchio::Data data(carrying);
        const double K = pinocchio::computeKineticEnergy(carrying, data, s.q, s.v);
        const double P = pinocchio::computePotentialEnergy(carrying, data, s.q);
        // relative to the sum of the magnitudes of the contributions (P changes sign)
        const double k_scale = ed.kinetic_regressor.cwiseAbs().dot(pi.cwiseAbs()) + ed.kinetic_rest;
        const double p_scale =
            ed.potential_regressor.cwiseAbs().dot(pi.cwiseAbs()) + std::abs(ed.potential_rest);
        EXPECT_GT(K, 0.0);
        EXPECT_NEAR(heft::dynamics::kineticEnergy(rm, ed, pi), K, 1e-9 * k_scale);
        EXPECT_NEAR(heft::dynamics::potentialEnergy(rm, ed, pi), P, 1e-9 * p_scale);
      }
    }
  }
}

TEST(Energy, RegressorsMatchPinocchioEnergiesGo2) {
  expectEnergyRegressorsMatchPinocchio(go2(), 11);
}
TEST(Energy, RegressorsMatchPinocchioEnergiesTalos) {
  expectEnergyRegressorsMatchPinocchio(talos(), 12);
}

TEST(Energy, KineticEnergyIsHalfVtMv) {
  // the kinetic regressor with the full set equals 0.5 v^T M v (M from the derivative call)
  std::mt19937 rng(13);
  const pinocchio::Model& model = talos();
  const RegressorModel rm(model, allBodies(model));
  EnergyData ed(rm);
  RegressorData rd(rm);
  const State s = randomState(model, rng);
  heft::dynamics::computeEnergyRegressors(rm, ed, s.q, s.v);
  heft::dynamics::computeRestrictedDerivatives(rm, rd, s.q, s.v, s.a, rm.nominalParameters());
  const double K = 0.5 * s.v.dot(rd.dtau_da * s.v);
  EXPECT_NEAR(heft::dynamics::kineticEnergy(rm, ed, rm.nominalParameters()), K, 1e-9 * K);
  EXPECT_THROW(heft::dynamics::computeEnergyRegressors(rm, ed, s.q, s.v.head(3)), heft::InputError);
  EXPECT_THROW(heft::dynamics::kineticEnergy(rm, ed, VectorXd::Zero(3)), heft::InputError);
}

// ---- friction
// ---------------------------------------------------------------------------------------

// mu with rates gamma_1, gamma_2, gamma_4 in [1, 20] and amplitudes in [e^-1, e].
VectorXd randomFrictionMu(int n, std::mt19937& rng) {
  VectorXd mu(6 * n);
  for (int j = 0; j < n; ++j) {
    mu.segment<6>(6 * j) << uniform(rng, 1, -1, 1), uniform(rng, 2, 0, 3), uniform(rng, 1, -1, 1),
        uniform(rng, 1, 0, 3), uniform(rng, 1, -1, 1);
  }
  return mu;
}

TEST(Friction, DerivativesMatchFiniteDifferences) {
  std::mt19937 rng(21);
  const int n = 7;
  const FrictionModel fm(n);
  FrictionData fd(fm), work(fm);
  const VectorXd v = uniform(rng, n, -1.0, 1.0);
  const VectorXd mu = randomFrictionMu(n, rng);
  heft::dynamics::computeFrictionDerivatives(fm, fd, v, mu);
  MatrixXd J(n, 6 * n);
  heft::dynamics::frictionParameterJacobian(fm, fd, J);
  checkJacobian(
      [&](const VectorXd& dv) { return heft::dynamics::computeFriction(fm, work, v + dv, mu); }, n,
      MatrixXd(fd.dtau_dv.asDiagonal()), "friction d tau_f/dv");
  checkJacobian(
      [&](const VectorXd& dmu) { return heft::dynamics::computeFriction(fm, work, v, mu + dmu); },
      6 * n, J, "friction d tau_f/d mu (log gamma)");
  // the value of the derivative call is the value call's
  EXPECT_EQ(maxAbs(fd.tau - heft::dynamics::computeFriction(fm, work, v, mu)), 0.0);
}

TEST(Friction, AmplitudeRegressorIsLinearInAmplitudes) {
  std::mt19937 rng(22);
  const int n = 5;
  const FrictionModel fm(n);
  FrictionData fd(fm);
  const VectorXd v = uniform(rng, n, -3.0, 3.0);
  const VectorXd mu = randomFrictionMu(n, rng);
  heft::dynamics::computeFrictionDerivatives(fm, fd, v, mu);
  for (int j = 0; j < n; ++j) {
    const heft::dynamics::Vector6 g = heft::dynamics::frictionGammaFromMu(mu.segment<6>(6 * j));
    const double from_regressor =
        fd.amplitude_regressor.row(j).dot(Eigen::Vector3d(g[0], g[3], g[5]));
    EXPECT_NEAR(from_regressor, fd.tau[j], 4 * kEps * (g[0] + g[3] + g[5] * std::abs(v[j])));
  }
}

TEST(Friction, OddInVelocity) {
  std::mt19937 rng(23);
  const int n = 6;
  const FrictionModel fm(n);
  FrictionData plus(fm), minus(fm);
  const VectorXd mu = randomFrictionMu(n, rng);
  for (int trial = 0; trial < 20; ++trial) {
    const VectorXd v = uniform(rng, n, -5.0, 5.0);
    heft::dynamics::computeFrictionDerivatives(fm, plus, v, mu);
    heft::dynamics::computeFrictionDerivatives(fm, minus, -v, mu);
    // every operation is sign-symmetric in IEEE arithmetic: exact
    EXPECT_EQ(plus.tau, -minus.tau);
    EXPECT_EQ(plus.dtau_dv, minus.dtau_dv);
  }
  FrictionData zero(fm);
  heft::dynamics::computeFriction(fm, zero, VectorXd::Zero(n), mu);
  EXPECT_EQ(maxAbs(zero.tau), 0.0);
}

TEST(Friction, LargeVelocityIsCoulombPlusViscous) {
  std::mt19937 rng(24);
  const int n = 6;
  const FrictionModel fm(n);
  FrictionData fd(fm);
  const VectorXd mu = randomFrictionMu(n, rng);
  // every rate is >= 1: |gamma v| >= 40 puts tanh at +-1 in double precision
  for (double speed : {40.0, 1e3}) {
    for (double sign : {1.0, -1.0}) {
      const VectorXd v = VectorXd::Constant(n, sign * speed);
      heft::dynamics::computeFrictionDerivatives(fm, fd, v, mu);
      for (int j = 0; j < n; ++j) {
        const heft::dynamics::Vector6 g = heft::dynamics::frictionGammaFromMu(mu.segment<6>(6 * j));
        const double limit = g[3] * sign + g[5] * v[j];
        EXPECT_NEAR(fd.tau[j], limit, 4 * kEps * (g[0] + g[3] + std::abs(g[5] * v[j])));
        EXPECT_NEAR(fd.dtau_dv[j], g[5], 4 * kEps * g[5]) << "only the viscous slope remains";
      }
    }
  }
}

TEST(Friction, PositivityAndDissipation) {
  std::mt19937 rng(25);
  // every real mu gives positive gamma, far out too
  const heft::dynamics::Vector6 mu_extreme =
      (heft::dynamics::Vector6() << -30, 30, -5, 5, 0, -30).finished();
  EXPECT_TRUE((heft::dynamics::frictionGammaFromMu(mu_extreme).array() > 0).all());
  const heft::dynamics::Vector6 gamma =
      (heft::dynamics::Vector6() << 0.3, 2, 9, 1.1, 5, 0.2).finished();
  EXPECT_LE(maxAbs(heft::dynamics::frictionGammaFromMu(heft::dynamics::frictionMuFromGamma(gamma)) -
                   gamma),
            4 * kEps * gamma.maxCoeff());
  heft::dynamics::Vector6 bad = gamma;
  bad[2] = 0.0;
  EXPECT_THROW(heft::dynamics::frictionMuFromGamma(bad), heft::InputError);
  bad[2] = -1.0;
  EXPECT_THROW(heft::dynamics::frictionMuFromGamma(bad), heft::InputError);

  // with gamma_2 >= gamma_1 (stiction bump) friction opposes motion at every speed: v tau_f >= 0
  const int n = 200;
  const FrictionModel fm(n);
  FrictionData fd(fm);
  VectorXd mu = randomFrictionMu(n, rng);
  for (int j = 0; j < n; ++j) {
    if (mu[6 * j + 2] < mu[6 * j + 1]) std::swap(mu[6 * j + 1], mu[6 * j + 2]);
  }
  const VectorXd v = uniform(rng, n, -3.0, 3.0);
  heft::dynamics::computeFriction(fm, fd, v, mu);
  EXPECT_TRUE((v.array() * fd.tau.array() >= 0).all());
  // the bump: just above zero speed the friction exceeds its Coulomb + viscous level
  const heft::dynamics::Vector6 stiction =
      (heft::dynamics::Vector6() << 0.5, 1.0, 20.0, 1.0, 50.0, 0.1).finished();
  const FrictionModel one(1);
  FrictionData d1(one);
  const double vs = 0.1;
  heft::dynamics::computeFriction(one, d1, VectorXd::Constant(1, vs),
                                  heft::dynamics::frictionMuFromGamma(stiction));
  EXPECT_GT(d1.tau[0], stiction[3] + stiction[5] * vs);
}

TEST(Friction, RejectsBadSizes) {
  const FrictionModel fm(3);
  FrictionData fd(fm);
  EXPECT_THROW(heft::dynamics::computeFriction(fm, fd, VectorXd::Zero(2), VectorXd::Zero(18)),
               heft::InputError);
  EXPECT_THROW(
      heft::dynamics::computeFrictionDerivatives(fm, fd, VectorXd::Zero(3), VectorXd::Zero(17)),
      heft::InputError);
  MatrixXd J(3, 17);
  EXPECT_THROW(heft::dynamics::frictionParameterJacobian(fm, fd, J), heft::InputError);
  EXPECT_THROW(FrictionModel(-1), heft::InputError);
}

// ---- actuator
// ---------------------------------------------------------------------------------------

TEST(Actuator, DerivativesMatchFiniteDifferences) {
  std::mt19937 rng(31);
  const int n = 8;
  const ActuatorModel am(n);
  ActuatorData ad(am), work(am);
  // gains around 1, saturation 10..40 N m (SPI-Active's Go2 range); commands up to twice it
  VectorXd rho(2 * n);
  for (int j = 0; j < n; ++j) {
    rho[2 * j] = uniform(rng, 1, -0.3, 0.3)[0];
    rho[2 * j + 1] = std::log(uniform(rng, 1, 10.0, 40.0)[0]);
  }
  const VectorXd u = uniform(rng, n, -60.0, 60.0);
  heft::dynamics::computeActuatorDerivatives(am, ad, u, rho);
  MatrixXd J(n, 2 * n);
  heft::dynamics::actuatorParameterJacobian(am, ad, J);
  checkJacobian(
      [&](const VectorXd& du) { return heft::dynamics::computeActuator(am, work, u + du, rho); }, n,
      MatrixXd(ad.dtau_du.asDiagonal()), "actuator d tau/du");
  checkJacobian(
      [&](const VectorXd& drho) {
        return heft::dynamics::computeActuator(am, work, u, rho + drho);
      },
      2 * n, J, "actuator d tau/d rho (log k, log kappa)");
  EXPECT_EQ(maxAbs(ad.tau - heft::dynamics::computeActuator(am, work, u, rho)), 0.0);
}

TEST(Actuator, SaturationBoundsAndGainAtZero) {
  std::mt19937 rng(32);
  const int n = 4;
  const ActuatorModel am(n);
  ActuatorData ad(am);
  const VectorXd k = uniform(rng, n, 0.5, 2.0), kappa = uniform(rng, n, 5.0, 50.0);
  VectorXd rho(2 * n);
  for (int j = 0; j < n; ++j) rho.segment<2>(2 * j) << std::log(k[j]), std::log(kappa[j]);
  const double kappa_tol = 4 * kEps;  // exp(log(kappa)) round trip

  // gain at zero command: d tau / d u = k, tau = 0
  heft::dynamics::computeActuatorDerivatives(am, ad, VectorXd::Zero(n), rho);
  EXPECT_EQ(maxAbs(ad.tau), 0.0);
  EXPECT_LE(maxAbs(ad.dtau_du - k), kappa_tol * k.maxCoeff());
  // small commands: tau = k u (1 - x^2 / 3 + ...), x = k u / kappa
  const VectorXd u_small = 1e-4 * kappa.cwiseQuotient(k);
  heft::dynamics::computeActuator(am, ad, u_small, rho);
  for (int j = 0; j < n; ++j) {
    const double linear = k[j] * u_small[j];
    EXPECT_NEAR(ad.tau[j], linear, linear * (1e-8 / 3 * 1.01 + 8 * kEps));
  }
  // any command, however large: |tau| <= kappa, and +-kappa far out
  for (int trial = 0; trial < 50; ++trial) {
    const VectorXd u = uniform(rng, n, -1e3, 1e3);
    heft::dynamics::computeActuatorDerivatives(am, ad, u, rho);
    EXPECT_TRUE((ad.tau.cwiseAbs().array() <= kappa.array() * (1 + kappa_tol)).all());
    EXPECT_TRUE((ad.dtau_du.array() >= 0).all()) << "monotone in the command";
  }
  heft::dynamics::computeActuatorDerivatives(am, ad, VectorXd::Constant(n, -1e6), rho);
  EXPECT_LE(maxAbs(ad.tau + kappa), kappa_tol * kappa.maxCoeff());
  EXPECT_EQ(maxAbs(ad.dtau_du), 0.0);
  // deep in saturation only kappa matters: d tau / d log kappa = tau, d tau / d log k = 0
  EXPECT_LE(maxAbs(ad.dtau_drho.col(1) - ad.tau), kappa_tol * kappa.maxCoeff());
  EXPECT_EQ(maxAbs(ad.dtau_drho.col(0)), 0.0);
}

TEST(Actuator, RejectsBadSizes) {
  const ActuatorModel am(3);
  ActuatorData ad(am);
  EXPECT_THROW(heft::dynamics::computeActuator(am, ad, VectorXd::Zero(2), VectorXd::Zero(6)),
               heft::InputError);
  EXPECT_THROW(
      heft::dynamics::computeActuatorDerivatives(am, ad, VectorXd::Zero(3), VectorXd::Zero(5)),
      heft::InputError);
  MatrixXd J(2, 6);
  EXPECT_THROW(heft::dynamics::actuatorParameterJacobian(am, ad, J), heft::InputError);
  EXPECT_THROW(ActuatorModel(-2), heft::InputError);
}

}  // namespace
