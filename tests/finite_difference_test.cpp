// The tests' finite-difference checker (tests/support/finite_difference.hpp) on functions whose
// derivatives are known: it passes exact Jacobians, on a vector space and on a manifold (SO(3),
// inputs and outputs), and it catches wrong ones.
#include <gtest/gtest-spi.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include <Eigen/Geometry>

#include "heft/common/types.hpp"
#include "support/finite_difference.hpp"

namespace heft {
namespace {

using Eigen::MatrixXd;
using Eigen::VectorXd;
using test::centralDifferences;
using test::expectJacobianNear;
using test::FiniteDifferenceOptions;
using test::NumericalJacobian;

const double kEps = std::numeric_limits<double>::epsilon();

// f(x) = (sin(x0) x1, exp(x1)) at (0.3, -0.7).
VectorXd smoothPoint() { return (VectorXd(2) << 0.3, -0.7).finished(); }
VectorXd smooth(const VectorXd& y) {
  return (VectorXd(2) << std::sin(y[0]) * y[1], std::exp(y[1])).finished();
}
MatrixXd smoothJacobian(const VectorXd& x) {
  MatrixXd J(2, 2);
  J << std::cos(x[0]) * x[1], std::sin(x[0]), 0.0, std::exp(x[1]);
  return J;
}

// The check passes on a correct Jacobian and catches a 1e-6 relative error.
TEST(FiniteDifferences, CheckCatchesSmallErrors) {
  const VectorXd x = smoothPoint();
  auto f = [&](const VectorXd& dx) { return smooth(x + dx); };
  const MatrixXd J = smoothJacobian(x);
  EXPECT_LT(expectJacobianNear(J, centralDifferences(f, 2), "check: exact Jacobian"), 1.0);
  MatrixXd wrong = J;
  wrong(0, 0) *= 1 + 1e-6;
  double ratio = 0;
  EXPECT_NONFATAL_FAILURE(
      ratio = expectJacobianNear(wrong, centralDifferences(f, 2), "check: 1e-6 error"), "column 0");
  EXPECT_GT(ratio, 1.0);
  // the vector-space overload (and relative steps) agree
  FiniteDifferenceOptions relative;
  relative.relative_step = true;
  const NumericalJacobian at = test::centralDifferencesInVectorSpace(x, smooth, relative);
  EXPECT_LT(test::worstRatio(J, at), 1.0);
  EXPECT_GT(test::worstRatio(wrong, at), 1.0);
}

// A cubic: the central difference is off by exactly h^2 f'''/6, the stencil recovers f''' = 6 and
// the bound (twice that, plus rounding) covers the error; a bound without the safety factor does
// not leave room for a much larger error.
TEST(FiniteDifferences, TruncationOfACubicIsBoundedFromTheStep) {
  const double x0 = 0.8;
  FiniteDifferenceOptions options;
  options.step = 1e-3;  // truncation 1e-6 dominates rounding
  const NumericalJacobian n = centralDifferences(
      [&](const VectorXd& dx) { return VectorXd::Constant(1, std::pow(x0 + dx[0], 3)); }, 1,
      options);
  EXPECT_NEAR(n.third(0, 0), 6.0, 1e-6);
  const double analytic = 3 * x0 * x0;
  EXPECT_NEAR(n.J(0, 0) - analytic, options.step * options.step, 1e-12);
  EXPECT_GE(n.bound()(0, 0), options.step * options.step);
  EXPECT_LE(n.bound()(0, 0), 3 * options.step * options.step);
  EXPECT_LT(test::worstRatio(MatrixXd::Constant(1, 1, analytic), n), 1.0);
  EXPECT_GT(test::worstRatio(MatrixXd::Constant(1, 1, analytic * (1 + 1e-4)), n), 1.0);
}

// SO(3) with the right retraction q ⊕ dx = q Exp(dx): f(q) = R(q) v (vector output) has
// d f / d dx = -R [v]x, and g(q) = q q0 (rotation output, compared by log(g(q)^-1 g(q ⊕ dx)) in
// the tangent space at g(q)) has d g / d dx = R0^T. The left-perturbation forms are rejected.
TEST(FiniteDifferences, ManifoldInputsAndOutputs) {
  const Eigen::Quaterniond q(Eigen::AngleAxisd(0.9, Eigen::Vector3d(1, -2, 0.5).normalized()));
  const Eigen::Quaterniond q0(Eigen::AngleAxisd(-0.7, Eigen::Vector3d(0.3, 1, 1).normalized()));
  const Eigen::Vector3d v(0.4, -1.2, 2.0);
  VectorXd x(4);
  x << q.coeffs();  // x, y, z, w
  auto retract = [](const VectorXd& y, const VectorXd& dx) {
    const Eigen::Quaterniond r(y[3], y[0], y[1], y[2]);
    const Eigen::Quaterniond step(dx.norm() > 0 ? Eigen::AngleAxisd(dx.norm(), dx.normalized())
                                                : Eigen::AngleAxisd::Identity());
    return VectorXd((r * step).coeffs());
  };
  auto rotation = [](const VectorXd& y) { return Eigen::Quaterniond(y[3], y[0], y[1], y[2]); };
  auto skew = [](const Eigen::Vector3d& a) {
    Eigen::Matrix3d S;
    S << 0, -a.z(), a.y(), a.z(), 0, -a.x(), -a.y(), a.x(), 0;
    return S;
  };
  const Eigen::Matrix3d R = q.toRotationMatrix(), R0 = q0.toRotationMatrix();

  const NumericalJacobian rotated = centralDifferences(
      x, 3, retract, [&](const VectorXd& y) { return VectorXd(rotation(y) * v); });
  expectJacobianNear(-R * skew(v), rotated, "R v on SO(3)");
  EXPECT_GT(test::worstRatio(-skew(R * v), rotated), 1e3) << "left perturbation";

  // The output is a difference in the tangent space at g(q): O(h) itself, while its rounding comes
  // from the O(1) rotations it is computed from, hence a rounding scale of 1.
  const Eigen::Quaterniond g = q * q0;
  FiniteDifferenceOptions tangent_output;
  tangent_output.rounding_scale = 1;
  auto composed_output = [&](const VectorXd& y) {
    const Eigen::AngleAxisd d(g.inverse() * rotation(y) * q0);
    return VectorXd(d.angle() * d.axis());
  };
  const NumericalJacobian composed =
      centralDifferences(x, 3, retract, composed_output, tangent_output);
  expectJacobianNear(R0.transpose(), composed, "q q0 on SO(3)");
  EXPECT_GT(test::worstRatio(MatrixXd::Identity(3, 3), composed), 1e3) << "identity";
}

// An output that is a small difference of large terms, (1e6 + x) - 1e6: its rounding (ulp(1e6) ~
// 1e-10) is far above 10 eps |f|. The default bound rejects the exact derivative; a rounding
// scale of the terms' size or the measured noise accepts it.
TEST(FiniteDifferences, RoundingFromTheTermsOrMeasured) {
  const int m = 8;
  const VectorXd x = VectorXd::LinSpaced(m, -0.4, 0.9);
  auto f = [&](const VectorXd& dx) {
    VectorXd out(m);
    for (int i = 0; i < m; ++i) out[i] = (1e6 + (x[i] + dx[i])) - 1e6;
    return out;
  };
  const MatrixXd J = MatrixXd::Identity(m, m);
  EXPECT_GT(test::worstRatio(J, centralDifferences(f, m)), 1.0);
  FiniteDifferenceOptions scaled;
  scaled.rounding_scale = 1e6;
  expectJacobianNear(J, centralDifferences(f, m, scaled), "rounding scale 1e6");
  FiniteDifferenceOptions measured;
  measured.noise_step = 1e-9;
  const NumericalJacobian n = centralDifferences(f, m, measured);
  EXPECT_GT(n.noise.maxCoeff(), 0.0);
  expectJacobianNear(J, n, "measured rounding");
  // a 1 % error is still caught
  EXPECT_GT(test::worstRatio(1.01 * J, n), 1.0);
}

// A-priori bounds: exp has |f'''| = |f|; with G = |f| the bound is h^2/6 G + c eps G / h.
TEST(FiniteDifferences, APrioriBoundsFromMagnitudes) {
  const VectorXd x = (VectorXd(3) << -1.0, 0.5, 2.0).finished();
  FiniteDifferenceOptions options;
  options.step = 1e-6;
  options.third_per_magnitude = 1;
  const NumericalJacobian n = test::centralDifferencesInVectorSpace(
      x, [](const VectorXd& y) { return VectorXd(y.array().exp()); }, options);
  const MatrixXd J = MatrixXd(x.array().exp().matrix().asDiagonal());
  expectJacobianNear(J, n, "exp, a-priori bounds");
  for (int i = 0; i < 3; ++i) {
    const double G = std::exp(x[i] + options.step);  // the largest of f(x), f(x +- h)
    EXPECT_NEAR(n.bound()(i, i),
                test::centralDifferenceBound(options.step, G, options.rounding_ulps * kEps * G),
                1e-12 * n.bound()(i, i));
  }
}

// Relative steps are exact: x +- h are representable, so the quotient divides by 2 h.
TEST(FiniteDifferences, RepresentableSteps) {
  for (double x : {0.0, 1e-3, -0.37, 3.7, -1234.5678, 1e8}) {
    const double h = test::representableStep(x, 1e-6 * std::max(1.0, std::abs(x)));
    EXPECT_EQ((x + h) - x, h) << x;
    EXPECT_EQ(x - (x - h), h) << x;
    EXPECT_NEAR(h, 1e-6 * std::max(1.0, std::abs(x)), 1e-15 * std::max(1.0, std::abs(x))) << x;
  }
}

}  // namespace
}  // namespace heft
