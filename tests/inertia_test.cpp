// Tests of heft::inertia: round trips, Jacobians against central differences, Pinocchio
// cross-checks, consistency margins, rank at symmetric bodies, and input rejection.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <iostream>
#include <limits>
#include <random>

#include <Eigen/Eigenvalues>
#include <pinocchio/spatial.hpp>

#include "heft/common/error.hpp"
#include "heft/inertia/inertia.hpp"
#include "support/finite_difference.hpp"

namespace {

using heft::Matrix10;
using heft::Matrix3;
using heft::Matrix4;
using heft::Vector10;
using heft::Vector3;
using heft::inertia::Parametrization;
namespace hi = heft::inertia;

constexpr double kEps = std::numeric_limits<double>::epsilon();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kPi = 3.14159265358979323846;

double uniform(std::mt19937& rng, double lo, double hi) {
  return std::uniform_real_distribution<double>(lo, hi)(rng);
}

Vector3 randomInBall(std::mt19937& rng, double radius) {
  std::normal_distribution<double> n;
  const Vector3 dir = Vector3(n(rng), n(rng), n(rng)).normalized();
  return radius * std::cbrt(uniform(rng, 0, 1)) * dir;
}

Matrix3 randomRotation(std::mt19937& rng) { return pinocchio::exp3(randomInBall(rng, kPi)); }

// A consistent body: mass 0.1-20 kg, COM within 0.3 m, second moments L_i = m r_i^2 with
// r_i in [0.02, 0.3] m (so D = P L satisfies the triangle inequalities strictly), random rotation.
struct Body {
  double m;
  Vector3 c;
  Matrix3 Ic;
  Vector10 pi;
};

Body randomBody(std::mt19937& rng) {
  Body b;
  b.m = uniform(rng, 0.1, 20);
  b.c = randomInBall(rng, 0.3);
  Vector3 L;
  for (int i = 0; i < 3; ++i) L[i] = b.m * std::pow(uniform(rng, 0.02, 0.3), 2);
  const Vector3 D = (Matrix3::Ones() - Matrix3::Identity()) * L;
  const Matrix3 R = randomRotation(rng);
  b.Ic = R * D.asDiagonal() * R.transpose();
  b.Ic = 0.5 * (b.Ic + b.Ic.transpose());
  b.pi = hi::piFromMassComInertia(b.m, b.c, b.Ic);
  return b;
}

// theta of the same population of bodies, drawn directly in each parametrization's coordinates.
Vector10 randomExpEigTheta(std::mt19937& rng, double omega_radius = 3.0) {
  const double m = uniform(rng, 0.1, 20);
  Vector10 theta;
  theta[0] = std::log(m);
  theta.segment<3>(1) = m * randomInBall(rng, 0.3);
  theta.segment<3>(4) = randomInBall(rng, omega_radius);
  for (int i = 0; i < 3; ++i) theta[7 + i] = std::log(m * std::pow(uniform(rng, 0.02, 0.3), 2));
  return theta;
}

Vector10 randomLogCholeskyTheta(std::mt19937& rng) {
  Vector10 theta;
  theta[0] = 0.5 * std::log(uniform(rng, 0.1, 20));                          // m = e^{2 alpha}
  for (int i = 1; i < 4; ++i) theta[i] = std::log(uniform(rng, 0.02, 0.3));  // scaled lengths
  for (int i = 4; i < 10; ++i) theta[i] = uniform(rng, -0.3, 0.3);           // s_ij [m], t_i [m]
  return theta;
}

double relativeError(const Vector10& a, const Vector10& b) { return (a - b).norm() / b.norm(); }

// ---- finite differences ------------------------------------------------------------------------
//
// theta lives in R^10 for both parametrizations (omega is a coordinate vector of the Lie algebra
// so(3) ~ R^3 and Exp is applied inside the map), so plain differences on theta are the manifold
// differences here: no retraction is needed.
//
// The tolerance model of tests/support/finite_difference.hpp, |fd - J| <= s^2/6 |f'''| + delta / s,
// with a-priori bounds from G, a bound on the magnitudes summed when evaluating that row of pi:
//  - rounding: each pi entry is a sum of <= 8 products of factors accurate to a few ulps
//    (exp, exp3, parallel-axis shift), so delta = c eps G with c = 16. Row scales G: m for the
//    mass row, max |h_i| for the first-moment rows, tr(I) for the inertia rows (I is positive
//    semidefinite for any theta, so |I_ij| and every term summed into it are <= tr(I)). G is the
//    max over theta and theta +- s e_j.
//  - truncation: entries are sums of <= 8 terms e^{2x}, e^{x}, quadratics or R D R^T products,
//    each bounded by G, with third derivatives <= 8 x term (8 = 2^3 from e^{2x}): |f'''| <= 64 G.
// Step s = 1e-6 max(1, |theta_j|), rounded so that theta_j +- s are exact (the quotient divides
// by the true distance). With s = 1e-6: rounding 3.6e-9 G, truncation 1.1e-11 G; rounding
// dominates as expected.
constexpr double kStep = 1e-6;
constexpr double kRoundingUlps = 16;
constexpr double kThirdDerivativeFactor = 64;

Vector3 rowScales(const Vector10& pi) {
  return Vector3(std::abs(pi[0]), pi.segment<3>(1).cwiseAbs().maxCoeff(), pi[4] + pi[6] + pi[9]);
}

heft::test::NumericalJacobian centralDifference(Parametrization p, const Vector10& theta) {
  heft::test::FiniteDifferenceOptions options;
  options.step = kStep;
  options.relative_step = true;
  options.rounding_ulps = kRoundingUlps;
  options.third_per_magnitude = kThirdDerivativeFactor;
  options.magnitude = [](const Eigen::VectorXd& pi) {
    const Vector3 G = rowScales(Vector10(pi));
    Eigen::VectorXd rows(10);
    rows << G[0], Vector3::Constant(G[1]), Eigen::Matrix<double, 6, 1>::Constant(G[2]);
    return rows;
  };
  return heft::test::centralDifferencesInVectorSpace(
      theta,
      [&](const Eigen::VectorXd& t) { return Eigen::VectorXd(hi::piFromTheta(p, Vector10(t))); },
      options);
}

// Largest |analytic - fd| / bound over all entries (<= 1 passes).
double worstRatio(const Matrix10& analytic, const heft::test::NumericalJacobian& fd) {
  return heft::test::worstRatio(analytic, fd);
}

// pi of a cloud of point masses, from the definitions (independent of Pinocchio and heft).
struct Cloud {
  Vector10 pi;
  Matrix4 J = Matrix4::Zero();
};

Cloud randomCloud(std::mt19937& rng, int n) {
  Cloud cloud;
  double m = 0;
  Vector3 h = Vector3::Zero();
  Matrix3 I = Matrix3::Zero();
  for (int k = 0; k < n; ++k) {
    const double mk = uniform(rng, 0.01, 2);
    const Vector3 x = randomInBall(rng, 0.4);
    m += mk;
    h += mk * x;
    I += mk * (x.squaredNorm() * Matrix3::Identity() - x * x.transpose());
    Eigen::Vector4d xh;
    xh << x, 1;
    cloud.J += mk * xh * xh.transpose();
  }
  cloud.pi << m, h, I(0, 0), I(0, 1), I(1, 1), I(0, 2), I(1, 2), I(2, 2);
  return cloud;
}

// Eigenvectors of I_c recovered from pi are accurate to about |E| / gap (Davis-Kahan), where the
// perturbation E is a few ulps of the magnitudes summed into I_c, all <= tr(I) about the origin;
// we allow 10 ulps. Returns that angle bound [rad] for the smallest gap between moments.
double eigenvectorTolerance(const Vector10& pi) {
  const Vector3 D =
      Eigen::SelfAdjointEigenSolver<Matrix3>(hi::rotationalInertiaAtCom(pi)).eigenvalues();
  const double gap = std::min(D[1] - D[0], D[2] - D[1]);
  return 10 * kEps * (pi[4] + pi[6] + pi[9]) / gap;
}

// The same for the distinct axis of a body with two equal moments: its gap is the larger one.
double distinctAxisTolerance(const Vector10& pi) {
  const Vector3 D =
      Eigen::SelfAdjointEigenSolver<Matrix3>(hi::rotationalInertiaAtCom(pi)).eigenvalues();
  return 10 * kEps * (pi[4] + pi[6] + pi[9]) / std::max(D[1] - D[0], D[2] - D[1]);
}

bool hasViolation(const hi::ConsistencyReport& r, const std::string& condition) {
  return std::any_of(r.violations.begin(), r.violations.end(),
                     [&](const hi::Violation& v) { return v.condition == condition; });
}

const hi::Violation& violation(const hi::ConsistencyReport& r, const std::string& condition) {
  for (const hi::Violation& v : r.violations)
    if (v.condition == condition) return v;
  throw std::runtime_error("no violation " + condition);
}

// Expects InputError whose message contains `needle`.
template <typename F>
void expectInputError(F&& f, const std::string& needle) {
  try {
    f();
    ADD_FAILURE() << "expected heft::InputError mentioning \"" << needle << "\"";
  } catch (const heft::InputError& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  }
}

}  // namespace

// ---- names -------------------------------------------------------------------------------------

TEST(Inertia, ParametrizationNamesRoundTrip) {
  for (Parametrization p : {Parametrization::LogCholesky, Parametrization::ExponentialEigenvalue})
    EXPECT_EQ(hi::parseParametrization(hi::toString(p)), p);
  EXPECT_EQ(hi::toString(Parametrization::LogCholesky), "log-cholesky");
  expectInputError([] { hi::parseParametrization("cholesky"); }, "exponential-eigenvalue");
}

// ---- Pinocchio cross-checks ------------------------------------------------------------------

TEST(Inertia, PseudoInertiaAgreesWithPinocchioAndPointMasses) {
  std::mt19937 rng(1);
  for (int trial = 0; trial < 50; ++trial) {
    const Cloud cloud = randomCloud(rng, 6);
    const Matrix4 J = hi::pseudoInertiaFromPi(cloud.pi);
    const Matrix4 J_pin = pinocchio::PseudoInertia::FromDynamicParameters(cloud.pi).toMatrix();
    EXPECT_LE((J - J_pin).norm(), 1e-14 * J_pin.norm());
    // J = sum_k m_k [x_k; 1][x_k; 1]^T, summed directly
    EXPECT_LE((J - cloud.J).norm(), 1e-13 * cloud.J.norm());
    EXPECT_LE(relativeError(hi::piFromPseudoInertia(J), cloud.pi), 1e-14);
  }
}

TEST(Inertia, PiFromMassComInertiaAgreesWithPinocchio) {
  std::mt19937 rng(2);
  for (int trial = 0; trial < 50; ++trial) {
    const Body b = randomBody(rng);
    const Vector10 pi_pin =
        pinocchio::Inertia(b.m, b.c, pinocchio::Symmetric3(b.Ic)).toDynamicParameters();
    EXPECT_LE(relativeError(b.pi, pi_pin), 1e-15);
    EXPECT_DOUBLE_EQ(hi::mass(b.pi), b.m);
    EXPECT_LE((hi::centerOfMass(b.pi) - b.c).norm(), 1e-14 * b.c.norm());
    // the shift m S(c)^T S(c) is added then removed: 10 ulps of |I_c| + |shift|
    EXPECT_LE((hi::rotationalInertiaAtCom(b.pi) - b.Ic).norm(),
              10 * kEps * (b.Ic.norm() + 2 * b.m * b.c.squaredNorm()));
  }
  // point masses: pi from the definitions equals pi from (m, c, I_c) with the parallel-axis shift
  for (int trial = 0; trial < 20; ++trial) {
    const Cloud cloud = randomCloud(rng, 5);
    const double m = cloud.pi[0];
    const Vector3 c = cloud.pi.segment<3>(1) / m;
    const Matrix3 I = hi::rotationalInertiaAtOrigin(cloud.pi);
    const Matrix3 Ic = I - m * (c.squaredNorm() * Matrix3::Identity() - c * c.transpose());
    EXPECT_LE(relativeError(hi::piFromMassComInertia(m, c, Ic), cloud.pi), 1e-13);
  }
}

// ---- round trips -------------------------------------------------------------------------------

TEST(Inertia, RoundTripPiThetaPiBothParametrizations) {
  std::mt19937 rng(3);
  for (Parametrization p : {Parametrization::LogCholesky, Parametrization::ExponentialEigenvalue}) {
    double worst = 0;
    for (int trial = 0; trial < 200; ++trial) {
      const Body b = randomBody(rng);
      const Vector10 back = hi::piFromTheta(p, hi::thetaFromPi(p, b.pi));
      worst = std::max(worst, relativeError(back, b.pi));
    }
    std::cout << hi::toString(p) << ": worst relative pi -> theta -> pi error " << worst << "\n";
    EXPECT_LE(worst, 1e-10) << hi::toString(p);
  }
}

TEST(Inertia, RoundTripThetaPiThetaLogCholeskyIsUnique) {
  std::mt19937 rng(4);
  double worst = 0;
  for (int trial = 0; trial < 200; ++trial) {
    const Vector10 theta = randomLogCholeskyTheta(rng);
    const Vector10 back = hi::logCholeskyFromPi(hi::piFromLogCholesky(theta));
    worst = std::max(worst, relativeError(back, theta));
  }
  std::cout << "log-cholesky: worst relative theta -> pi -> theta error " << worst << "\n";
  EXPECT_LE(worst, 1e-10);
}

// The inverse returns ascending principal moments and the smallest-angle R: from an arbitrary
// theta it returns the same body with L permuted and R's columns permuted / sign-flipped.
TEST(Inertia, RoundTripThetaPiThetaExponentialEigenvalueUpToOrdering) {
  std::mt19937 rng(5);
  for (int trial = 0; trial < 200; ++trial) {
    const Vector10 theta = randomExpEigTheta(rng);
    const Vector10 pi = hi::piFromExponentialEigenvalue(theta);
    const Vector10 back = hi::exponentialEigenvalueFromPi(pi);
    EXPECT_LE(std::abs(back[0] - theta[0]), 10 * kEps);
    EXPECT_LE((back.segment<3>(1) - theta.segment<3>(1)).norm(),
              10 * kEps * theta.segment<3>(1).norm());
    // same second moments, sorted: D ascending means L descending
    Eigen::Vector3d L = theta.tail<3>().array().exp(), L_back = back.tail<3>().array().exp();
    std::sort(L.data(), L.data() + 3, std::greater<double>());
    // eigenvalues are accurate to |E| <= 10 ulps of tr(I), and L is a sum of them
    EXPECT_LE((L_back - L).cwiseAbs().maxCoeff(), 2 * 10 * kEps * (pi[4] + pi[6] + pi[9]));
    // R_back^T R is a signed permutation: every column of R_back is +- a column of R, up to the
    // eigenvector accuracy
    const double eig_tol = eigenvectorTolerance(pi);
    const Matrix3 Q = pinocchio::exp3(Vector3(back.segment<3>(4))).transpose() *
                      pinocchio::exp3(Vector3(theta.segment<3>(4)));
    const Matrix3 signed_permutation = Q.array().round().matrix();
    EXPECT_LE((Q - signed_permutation).cwiseAbs().maxCoeff(), 3 * eig_tol) << Q;
    EXPECT_EQ(signed_permutation.cwiseAbs().colwise().sum(), Eigen::RowVector3d::Ones());
    EXPECT_EQ(signed_permutation.cwiseAbs().rowwise().sum(), Vector3::Ones());
    // the documented bound on the chosen angle, and the same pi
    EXPECT_LE(back.segment<3>(4).norm(), 2 * kPi / 3 + 1e-12);
    EXPECT_LE(relativeError(hi::piFromExponentialEigenvalue(back), pi), 1e-10);
    // a canonical theta round-trips to itself: omega within the eigenvector accuracy (log3 gains
    // at most (t/2)/sin(t/2) <= 1.21 for t <= 2 pi/3, hence 2x), the rest within rounding
    const Vector10 again = hi::exponentialEigenvalueFromPi(hi::piFromExponentialEigenvalue(back));
    EXPECT_LE((again.segment<3>(4) - back.segment<3>(4)).norm(), 2 * eig_tol);
    EXPECT_LE(std::abs(again[0] - back[0]), 10 * kEps);
    EXPECT_LE((again.segment<3>(1) - back.segment<3>(1)).norm(),
              10 * kEps * back.segment<3>(1).norm());
    // sigma = log L: its absolute error is the relative error of L, 10 ulps of tr(I) / L_min
    const double L_min = std::exp(back.tail<3>().minCoeff());
    EXPECT_LE((again.tail<3>() - back.tail<3>()).cwiseAbs().maxCoeff(),
              10 * kEps * (pi[4] + pi[6] + pi[9]) / L_min);
  }
}

TEST(Inertia, ExponentialEigenvalueInverseChoosesSmallestAngle) {
  // principal axes along the body axes, moments ascending: R = identity
  const Vector10 ascending =
      hi::piFromMassComInertia(2.0, Vector3(0.1, 0, 0), Vector3(0.01, 0.02, 0.025).asDiagonal());
  EXPECT_EQ(hi::exponentialEigenvalueFromPi(ascending).segment<3>(4).norm(), 0.0);
  // descending along the body axes: the sort forces R e_x = +-e_z, R e_z = +-e_x; the smallest
  // such rotation is a quarter turn about y
  const Vector10 descending =
      hi::piFromMassComInertia(2.0, Vector3::Zero(), Vector3(0.025, 0.02, 0.01).asDiagonal());
  const Vector3 omega = hi::exponentialEigenvalueFromPi(descending).segment<3>(4);
  EXPECT_NEAR(omega.norm(), kPi / 2, 1e-12);
  EXPECT_NEAR(std::abs(omega[1]), kPi / 2, 1e-12);
  // a sphere-like body: any R works; the inverse returns omega = 0
  const Vector10 sphere =
      hi::piFromMassComInertia(3.0, Vector3(0, 0.2, 0), 0.04 * Matrix3::Identity());
  const Vector10 theta_sphere = hi::exponentialEigenvalueFromPi(sphere);
  EXPECT_EQ(theta_sphere.segment<3>(4).norm(), 0.0);
  EXPECT_LE(relativeError(hi::piFromExponentialEigenvalue(theta_sphere), sphere), 1e-14);
  // a cylinder (two equal moments) whose axis is tilted by 0.3 rad: the swing rotation, 0.3 rad
  std::mt19937 rng(6);
  for (int trial = 0; trial < 20; ++trial) {
    const Vector3 axis = Vector3::UnitZ().cross(randomInBall(rng, 1)).normalized();
    const Matrix3 R = pinocchio::exp3(Vector3(0.3 * axis));
    const Vector3 D(0.02, 0.02, 0.01);  // ascending after sort: the distinct axis is column 0
    const Matrix3 Ic = R * D.asDiagonal() * R.transpose();
    const Vector10 pi =
        hi::piFromMassComInertia(1.5, Vector3(0, 0, 0.1), 0.5 * (Ic + Ic.transpose()));
    const Vector10 theta = hi::exponentialEigenvalueFromPi(pi);
    const Matrix3 R_back = pinocchio::exp3(Vector3(theta.segment<3>(4)));
    const Vector3 symmetry_axis = R.col(2);
    // the distinct (smallest) moment is first after sorting, its axis maps e_x -> +-symmetry axis
    const double axis_tol = distinctAxisTolerance(pi);
    EXPECT_NEAR(std::abs(R_back.col(0).dot(symmetry_axis)), 1.0, axis_tol);
    // the smallest angle taking e_x to the (sign-chosen) axis; acos gains 1 / sqrt(1 - x^2)
    const double x = std::abs(symmetry_axis.x());
    EXPECT_NEAR(theta.segment<3>(4).norm(), std::acos(x), 2 * axis_tol / std::sqrt(1 - x * x));
    EXPECT_LE(relativeError(hi::piFromExponentialEigenvalue(theta), pi), 1e-12);
  }
}

// ---- Jacobians -------------------------------------------------------------------------------

TEST(Inertia, LogCholeskyJacobianMatchesFiniteDifferences) {
  std::mt19937 rng(7);
  double worst = 0;
  for (int trial = 0; trial < 50; ++trial) {
    const Vector10 theta = randomLogCholeskyTheta(rng);
    const double ratio = worstRatio(hi::logCholeskyJacobian(theta),
                                    centralDifference(Parametrization::LogCholesky, theta));
    worst = std::max(worst, ratio);
    EXPECT_LE(ratio, 1.0) << "theta = " << theta.transpose();
  }
  std::cout << "log-cholesky: worst |J - fd| / bound = " << worst << "\n";
}

TEST(Inertia, ExponentialEigenvalueJacobianMatchesFiniteDifferences) {
  std::mt19937 rng(8);
  double worst = 0;
  for (int trial = 0; trial < 50; ++trial) {
    const Vector10 theta = randomExpEigTheta(rng);
    const double ratio =
        worstRatio(hi::exponentialEigenvalueJacobian(theta),
                   centralDifference(Parametrization::ExponentialEigenvalue, theta));
    worst = std::max(worst, ratio);
    EXPECT_LE(ratio, 1.0) << "theta = " << theta.transpose();
  }
  std::cout << "exponential-eigenvalue: worst |J - fd| / bound = " << worst << "\n";
}

// sum_j g_j d^2 pi_j / d theta^2 against the second central difference of the scalar g . pi(theta)
// (step h: truncation h^2, and rounding eps / h^2 in each of the four evaluations, times the size
// of g . pi, the bound's scale).
TEST(Inertia, ParametrizationCurvatureMatchesSecondDifferences) {
  std::mt19937 rng(9);
  std::normal_distribution<double> normal(0.0, 1.0);
  const double h = 1e-4;
  for (Parametrization p : {Parametrization::LogCholesky, Parametrization::ExponentialEigenvalue}) {
    double worst = 0;
    for (int trial = 0; trial < 20; ++trial) {
      const Vector10 theta =
          p == Parametrization::LogCholesky ? randomLogCholeskyTheta(rng) : randomExpEigTheta(rng);
      Vector10 g;
      for (int j = 0; j < 10; ++j) g[j] = normal(rng);
      auto phi = [&](const Vector10& t) { return g.dot(hi::piFromTheta(p, t)); };
      const Matrix10 C = hi::parametrizationCurvature(p, theta, g);
      const double scale = g.norm() * (1 + hi::piFromTheta(p, theta).norm());
      const double bound = (h * h + 4 * std::numeric_limits<double>::epsilon() / (h * h)) * scale;
      for (int k = 0; k < 10; ++k) {
        for (int l = 0; l < 10; ++l) {
          Vector10 pp = theta, pm = theta, mp = theta, mm = theta;
          pp[k] += h, pp[l] += h;
          pm[k] += h, pm[l] -= h;
          mp[k] -= h, mp[l] += h;
          mm[k] -= h, mm[l] -= h;
          const double fd = (phi(pp) - phi(pm) - phi(mp) + phi(mm)) / (4 * h * h);
          worst = std::max(worst, std::abs(C(k, l) - fd) / bound);
          EXPECT_LE(std::abs(C(k, l) - fd), bound)
              << hi::toString(p) << " entry " << k << ", " << l;
        }
      }
      EXPECT_LE((C - C.transpose()).cwiseAbs().maxCoeff(), 0.0);  // symmetric by construction
    }
    std::cout << hi::toString(p) << ": worst |C - fd| / bound = " << worst << "\n";
  }
}

// The bayesian-sysid paper's eq. 50 writes dR/domega_i = R [J_l e_i]x. The correct form is
// R [J_r e_i]x (= [J_l e_i]x R). Finite differences reject the paper's form away from omega = 0.
TEST(Inertia, PaperEquation50WithLeftJacobianFailsFiniteDifferences) {
  std::mt19937 rng(9);
  Vector10 theta = randomExpEigTheta(rng);
  theta.segment<3>(4) = Vector3(0.9, -0.6, 0.7);
  const heft::test::NumericalJacobian fd =
      centralDifference(Parametrization::ExponentialEigenvalue, theta);
  const Matrix10 ours = hi::exponentialEigenvalueJacobian(theta);

  const Vector3 omega = theta.segment<3>(4);
  const Matrix3 R = pinocchio::exp3(omega);
  Matrix3 Jr;
  pinocchio::Jexp3(omega, Jr);
  const Matrix3 Jl = Jr.transpose();  // J_l(omega) = J_r(-omega) = J_r(omega)^T
  const Vector3 D =
      (Matrix3::Ones() - Matrix3::Identity()) * Vector3(theta.tail<3>().array().exp());
  Matrix10 paper = ours;
  for (int i = 0; i < 3; ++i) {
    const Matrix3 S = pinocchio::skew(Vector3(Jl.col(i)));
    const Matrix3 dI = R * (S * D.asDiagonal() + D.asDiagonal() * S.transpose()) * R.transpose();
    paper.block<6, 1>(4, 4 + i) =
        pinocchio::Symmetric3(Matrix3(0.5 * (dI + dI.transpose()))).data();
  }
  const double ours_ratio = worstRatio(ours, fd), paper_ratio = worstRatio(paper, fd);
  std::cout << "eq. 50: right Jacobian |J - fd| / bound = " << ours_ratio
            << ", paper's left Jacobian = " << paper_ratio << "\n";
  EXPECT_LE(ours_ratio, 1.0);
  EXPECT_GT(paper_ratio, 1e3);
}

// ---- rank --------------------------------------------------------------------------------------

TEST(Inertia, JacobianRankFullForGenericBodies) {
  std::mt19937 rng(10);
  for (int trial = 0; trial < 20; ++trial) {
    const Vector10 theta = randomExpEigTheta(rng);
    const hi::JacobianRank ee = hi::jacobianRank(hi::exponentialEigenvalueJacobian(theta));
    EXPECT_EQ(ee.rank, 10);
    EXPECT_EQ(ee.nullspace.cols(), 0);
    EXPECT_EQ(ee.range.cols(), 10);
    const Vector10 lc = hi::logCholeskyFromPi(hi::piFromExponentialEigenvalue(theta));
    EXPECT_EQ(hi::jacobianRank(hi::logCholeskyJacobian(lc)).rank, 10);
  }
}

// Two equal principal moments (L_x = L_y gives D_x = D_y): rank 9, and the lost direction is a
// rotation about the symmetry axis. SVD singular vectors are accurate to ~eps s_max / gap, where
// the gap is the smallest kept singular value; we allow 10x that.
TEST(Inertia, JacobianRankNineForTwoEqualMoments) {
  std::mt19937 rng(11);
  for (int trial = 0; trial < 20; ++trial) {
    Vector10 theta = randomExpEigTheta(rng);
    theta[8] = theta[7];  // L_y = L_x
    const Matrix10 jac = hi::exponentialEigenvalueJacobian(theta);
    const hi::JacobianRank r = hi::jacobianRank(jac);
    ASSERT_EQ(r.rank, 9) << r.singular_values.transpose();
    ASSERT_EQ(r.nullspace.cols(), 1);
    const double tol = 10 * kEps * r.singular_values[0] / r.singular_values[8];
    const Vector10 n = r.nullspace.col(0);
    EXPECT_LE((jac * n).norm(), tol * r.singular_values[0]);
    EXPECT_LE(n.head<4>().norm() + n.tail<3>().norm(), tol);
    // omega direction n_w moves R by R [J_r n_w]x: a rotation about the principal z axis ...
    // (normalizing J_r n_w gains at most 1 / s_min(J_r) = t / (2 sin(t/2)) <= 1.5 for t <= 3)
    Matrix3 Jr;
    pinocchio::Jexp3(Vector3(theta.segment<3>(4)), Jr);
    const Vector3 local = (Jr * n.segment<3>(4)).normalized();
    EXPECT_LE(local.cross(Vector3::UnitZ()).norm(), 2 * tol);
    // ... which is the body's symmetry axis, found independently from the eigenvectors of I_c
    const Vector10 pi = hi::piFromExponentialEigenvalue(theta);
    Eigen::SelfAdjointEigenSolver<Matrix3> eig(hi::rotationalInertiaAtCom(pi));
    const Vector3 Dsorted = eig.eigenvalues();
    const int distinct = (Dsorted[1] - Dsorted[0] < Dsorted[2] - Dsorted[1]) ? 2 : 0;
    const Vector3 axis = eig.eigenvectors().col(distinct);
    const Matrix3 R = pinocchio::exp3(Vector3(theta.segment<3>(4)));
    EXPECT_LE((R * local).cross(axis).norm(), 2 * tol + distinctAxisTolerance(pi));
  }
}

TEST(Inertia, JacobianRankSevenForSphereLikeBodies) {
  std::mt19937 rng(12);
  for (int trial = 0; trial < 20; ++trial) {
    Vector10 theta = randomExpEigTheta(rng);
    theta[8] = theta[9] = theta[7];
    const Matrix10 jac = hi::exponentialEigenvalueJacobian(theta);
    const hi::JacobianRank r = hi::jacobianRank(jac);
    ASSERT_EQ(r.rank, 7) << r.singular_values.transpose();
    const double tol = 10 * kEps * r.singular_values[0] / r.singular_values[6];
    // the nullspace is the omega block
    Matrix10 omega_block = Matrix10::Zero();
    omega_block.block<3, 3>(4, 4).setIdentity();
    EXPECT_LE((r.nullspace * r.nullspace.transpose() - omega_block).norm(), tol);
    EXPECT_LE((r.range.transpose() * r.nullspace).norm(), 10 * kEps);
    // log-Cholesky has no such singularity
    const Vector10 lc = hi::logCholeskyFromPi(hi::piFromExponentialEigenvalue(theta));
    EXPECT_EQ(hi::jacobianRank(hi::logCholeskyJacobian(lc)).rank, 10);
  }
}

// ---- consistency -------------------------------------------------------------------------------

TEST(Inertia, ConsistentBodiesPassWithExpectedMargins) {
  // solid box a x b x c: D = m/12 (b^2+c^2, a^2+c^2, a^2+b^2), L = m/12 (a^2, b^2, c^2)
  const double m = 4, a = 0.3, b = 0.2, c = 0.1;
  const Vector3 D = m / 12 * Vector3(b * b + c * c, a * a + c * c, a * a + b * b);
  const Vector10 box = hi::piFromMassComInertia(m, Vector3(0.05, -0.02, 0.1), D.asDiagonal());
  const hi::ConsistencyReport r = hi::checkConsistency(box);
  EXPECT_TRUE(r.consistent);
  EXPECT_TRUE(r.violations.empty());
  EXPECT_DOUBLE_EQ(r.mass_margin, m);
  EXPECT_NEAR(r.inertia_margin, m / 12 * (b * b + c * c), 1e-15);
  EXPECT_NEAR(r.triangle_margin, 2 * m / 12 * c * c, 1e-15);
  EXPECT_GT(r.pseudo_inertia_margin, 0);
  // random bodies and point clouds are consistent
  std::mt19937 rng(13);
  for (int trial = 0; trial < 50; ++trial) {
    EXPECT_TRUE(hi::checkConsistency(randomBody(rng).pi).consistent);
    EXPECT_TRUE(hi::checkConsistency(randomCloud(rng, 5).pi).consistent);
  }
  // a tolerance above a margin flags it
  const hi::ConsistencyReport strict = hi::checkConsistency(box, 0.01);
  EXPECT_FALSE(strict.consistent);
  EXPECT_TRUE(hasViolation(strict, "triangle_inequality"));
  EXPECT_FALSE(hasViolation(strict, "mass"));
}

TEST(Inertia, RodLikeBodyViolatingTriangleInequalityIsFlagged) {
  // D = (0.01, 0.01, 0.05): I_c > 0 but D1 + D2 - D3 = -0.03 kg m^2; rotated and offset
  const Matrix3 R = pinocchio::exp3(Vector3(0.4, -0.2, 0.9));
  const Matrix3 Ic = R * Vector3(0.01, 0.05, 0.01).asDiagonal() * R.transpose();
  const Vector10 pi =
      hi::piFromMassComInertia(1.0, Vector3(0.1, 0.2, -0.1), 0.5 * (Ic + Ic.transpose()));
  const hi::ConsistencyReport r = hi::checkConsistency(pi);
  EXPECT_FALSE(r.consistent);
  EXPECT_NEAR(r.triangle_margin, -0.03, 1e-15);
  EXPECT_NEAR(r.inertia_margin, 0.01, 1e-15);
  EXPECT_FALSE(hasViolation(r, "mass"));
  EXPECT_FALSE(hasViolation(r, "inertia_positive_definite"));
  const hi::Violation& v = violation(r, "triangle_inequality");
  EXPECT_NEAR(v.margin, -0.03, 1e-15);
  EXPECT_NE(v.detail.find("-0.03 kg m^2"), std::string::npos) << v.detail;
  EXPECT_TRUE(hasViolation(r, "pseudo_inertia"));
  EXPECT_LT(r.pseudo_inertia_margin, 0);
  // inverse maps refuse it, naming the violation
  expectInputError([&] { hi::logCholeskyFromPi(pi); }, "D1 + D2 - D3 = -0.03");
  expectInputError([&] { hi::exponentialEigenvalueFromPi(pi); }, "strictly physically consistent");
}

TEST(Inertia, ZeroAndNegativeMassAreFlagged) {
  Vector10 pi = hi::piFromMassComInertia(1.0, Vector3(0.1, 0, 0), 0.01 * Matrix3::Identity());
  for (double m : {0.0, -1.0}) {
    pi[0] = m;
    const hi::ConsistencyReport r = hi::checkConsistency(pi);
    EXPECT_FALSE(r.consistent);
    EXPECT_EQ(violation(r, "mass").margin, m);
    EXPECT_NE(violation(r, "mass").detail.find(" kg"), std::string::npos);
    // I_c is undefined without a positive mass: reported, never NaN
    EXPECT_EQ(r.inertia_margin, -std::numeric_limits<double>::infinity());
    EXPECT_TRUE(hasViolation(r, "inertia_positive_definite"));
    EXPECT_TRUE(hasViolation(r, "pseudo_inertia"));
    EXPECT_FALSE(std::isnan(r.pseudo_inertia_margin));
    expectInputError([&] { hi::exponentialEigenvalueFromPi(pi); }, "m = ");
    expectInputError([&] { hi::centerOfMass(pi); }, "mass");
  }
}

// ---- bad input ---------------------------------------------------------------------------------

TEST(Inertia, NonFiniteInputIsRejected) {
  std::mt19937 rng(14);
  const Body b = randomBody(rng);
  const Vector10 theta_ee = hi::exponentialEigenvalueFromPi(b.pi);
  const Vector10 theta_lc = hi::logCholeskyFromPi(b.pi);
  for (double bad : {kNaN, std::numeric_limits<double>::infinity()}) {
    Vector10 pi = b.pi, tee = theta_ee, tlc = theta_lc;
    pi[6] = bad;
    tee[5] = bad;
    tlc[2] = bad;
    expectInputError([&] { hi::checkConsistency(pi); }, "pi[6]");
    expectInputError([&] { hi::logCholeskyFromPi(pi); }, "expected finite");
    expectInputError([&] { hi::exponentialEigenvalueFromPi(pi); }, "expected finite");
    expectInputError([&] { hi::pseudoInertiaFromPi(pi); }, "expected finite");
    expectInputError([&] { hi::rotationalInertiaAtCom(pi); }, "expected finite");
    expectInputError([&] { hi::piFromExponentialEigenvalue(tee); },
                     "theta (exponential-eigenvalue)[5]");
    expectInputError([&] { hi::exponentialEigenvalueJacobian(tee); }, "expected finite");
    expectInputError([&] { hi::piFromLogCholesky(tlc); }, "theta (log-Cholesky)[2]");
    expectInputError([&] { hi::logCholeskyJacobian(tlc); }, "expected finite");
    Matrix10 jac = Matrix10::Identity();
    jac(3, 4) = bad;
    expectInputError([&] { hi::jacobianRank(jac); }, "dpi_dtheta(3, 4)");
  }
  // overflow: finite theta whose image is not
  Vector10 huge = theta_ee;
  huge[0] = 800;
  expectInputError([&] { hi::piFromExponentialEigenvalue(huge); }, "image is finite");
  huge = theta_lc;
  huge[0] = 400;
  expectInputError([&] { hi::piFromLogCholesky(huge); }, "image is finite");
  // other malformed input
  Matrix4 J = hi::pseudoInertiaFromPi(b.pi);
  J(0, 1) += 1e-3;
  expectInputError([&] { hi::piFromPseudoInertia(J); }, "symmetric");
  expectInputError([&] { hi::jacobianRank(Matrix10::Identity(), 0.0); }, "(0, 1)");
  expectInputError([&] { hi::checkConsistency(b.pi, kNaN); }, "tolerance");
}
