#pragma once
/// \file The tests' one finite-difference checker: central differences on a manifold, Jacobians
/// column by column, and one tolerance model derived from the step.
///
/// Perturbation: the caller says how to move from x along the tangent direction dx (x ⊕ dx:
/// pinocchio::integrate for a configuration, a group product for a rotation, + for a vector
/// space); an output on a manifold is returned as its difference to the output at x, in the
/// tangent space there (O(h) itself, while its rounding is that of the values it is computed from:
/// pass their size as rounding_scale, or measure the noise). Column j of the Jacobian is
/// D_h f = (f(x ⊕ h e_j) - f(x ⊕ -h e_j)) / 2h.
///
/// Tolerance model. D_h f = f' e_j + h^2/6 f'''(xi) e_j (|xi| <= h) plus the rounding errors of the
/// two evaluations over 2h, so with delta a bound on one evaluation's absolute rounding error
///   |D_h f - f' e_j| <= h^2/6 |f'''| + delta / h          (centralDifferenceBound)
/// h = cbrt(eps) balances the two terms. By default both are estimated at the test point:
///  - |f'''|: the 4-point stencil (f(2H) - 2 f(H) + 2 f(-H) - f(-2H)) / (2 H^3) at H = 1e-3 (its
///    own rounding, ~eps |f| / H^3, stays far below the bound), its column maximum times
///    truncation_safety = 2 (the stencil's O(H^2) error and the variation of f''' over [-h, h]);
///  - delta = rounding_ulps eps max |f| over x ⊕ ±h e_j (the column's outputs), 10 ulps per
///    evaluation (a dynamics algorithm sums intermediates larger than its outputs);
///  - or, where rounding is larger than the outputs suggest (KKT solves, outputs that are small
///    differences of large terms), measured: with a tiny step t (t^2 f'' below one ulp of f),
///    r = f(x ⊕ t e_j) + f(x ⊕ -t e_j) - 2 f(x) is three evaluations' rounding noise alone, and
///    delta = noise_safety / 2 max |r| over the compared block.
/// A caller that knows bounds of its function instead (per output row: the magnitude of the terms
/// summed into it) passes them through `magnitude` and `third_per_magnitude`: per entry,
/// |f'''| <= third_per_magnitude G and delta = rounding_ulps eps G. A test that compares a
/// Jacobian computed elsewhere (a library's finite differences) calls centralDifferenceBound
/// with its own bounds. A wrong analytical derivative (a missing term, a sign) is O(|f'|), far
/// above either term.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <limits>
#include <string>

#include <Eigen/Core>

namespace heft::test {

/// The bound on |D_h f - f'| of one central difference with step h, |f'''| <= third and one
/// evaluation's absolute rounding error <= delta.
inline double centralDifferenceBound(double h, double third, double delta) {
  return h * h / 6 * third + delta / h;
}

struct FiniteDifferenceOptions {
  /// h; cbrt(eps) balances truncation and rounding.
  double step = std::cbrt(std::numeric_limits<double>::epsilon());
  /// Vector spaces only (centralDifferencesInVectorSpace): column j is stepped by h max(1, |x_j|),
  /// rounded so that x_j ± h_j are exact.
  bool relative_step = false;
  /// H of the stencil that estimates f''' (unused with third_per_magnitude > 0).
  double third_step = 1e-3;
  /// Factor on the estimated |f'''|.
  double truncation_safety = 2;
  /// Ulps of one evaluation's rounding error, relative to the magnitude of the outputs.
  double rounding_ulps = 10;
  /// Floor on the magnitude behind the rounding: the size of the terms f is computed from when
  /// f is a small difference of large ones (a constraint E pi - e); 0: none.
  double rounding_scale = 0;
  /// > 0: delta measured with this tiny step instead (noise_safety / 2 max |r|).
  double noise_step = 0;
  double noise_safety = 4;
  /// Per output row, a bound G on the terms summed into that row, from the output (default
  /// |f_i|); the maximum over f(x) and f(x ⊕ ±h e_j) is used.
  std::function<Eigen::VectorXd(const Eigen::VectorXd&)> magnitude;
  /// > 0: a-priori bounds per entry, |f'''| <= third_per_magnitude G and
  /// delta = rounding_ulps eps G (no stencil).
  double third_per_magnitude = 0;
};

/// Central differences of f (rows x n) with what the tolerance model needs.
struct NumericalJacobian {
  Eigen::MatrixXd J;          ///< column j: (f(h_j e_j) - f(-h_j e_j)) / (2 h_j)
  Eigen::VectorXd step;       ///< h_j
  Eigen::MatrixXd third;      ///< |f'''| estimates (stencil), when estimated
  Eigen::MatrixXd magnitude;  ///< max magnitude of the evaluations per entry
  Eigen::MatrixXd noise;      ///< |r| per entry, when measured
  FiniteDifferenceOptions options;

  /// The same for output rows [start, start + count) (outputs of different units get their own
  /// bounds).
  NumericalJacobian rows(Eigen::Index start, Eigen::Index count) const {
    NumericalJacobian out = *this;
    out.J = J.middleRows(start, count);
    out.magnitude = magnitude.middleRows(start, count);
    if (third.size()) out.third = third.middleRows(start, count);
    if (noise.size()) out.noise = noise.middleRows(start, count);
    return out;
  }

  /// The tolerance model's bound on |J - f'| per entry.
  Eigen::MatrixXd bound() const {
    const FiniteDifferenceOptions& o = options;
    const double eps = std::numeric_limits<double>::epsilon();
    Eigen::MatrixXd B(J.rows(), J.cols());
    if (J.size() == 0) return B;
    const double measured = noise.size() ? o.noise_safety / 2 * noise.maxCoeff() : 0;
    for (Eigen::Index j = 0; j < J.cols(); ++j) {
      const double h = step[j];
      if (o.third_per_magnitude > 0) {
        for (Eigen::Index i = 0; i < J.rows(); ++i) {
          const double G = std::max(magnitude(i, j), o.rounding_scale);
          B(i, j) = centralDifferenceBound(h, o.third_per_magnitude * G, o.rounding_ulps * eps * G);
        }
        continue;
      }
      const double third_j = o.truncation_safety * third.col(j).maxCoeff();
      const double delta =
          noise.size()
              ? measured
              : o.rounding_ulps * eps * std::max(magnitude.col(j).maxCoeff(), o.rounding_scale);
      B.col(j).setConstant(centralDifferenceBound(h, third_j, delta));
    }
    return B;
  }
};

/// Central differences of f(j, s) = f(x ⊕ s e_j) (the caller perturbs) with steps h_j.
inline NumericalJacobian columnDifferences(
    const std::function<Eigen::VectorXd(Eigen::Index j, double s)>& f, const Eigen::VectorXd& steps,
    const FiniteDifferenceOptions& options = {}) {
  NumericalJacobian out;
  out.options = options;
  out.step = steps;
  const Eigen::Index n = steps.size();
  const bool stencil = options.third_per_magnitude <= 0, measure = options.noise_step > 0;
  auto magnitude = [&](const Eigen::VectorXd& y) -> Eigen::VectorXd {
    return options.magnitude ? options.magnitude(y) : Eigen::VectorXd(y.cwiseAbs());
  };
  const Eigen::VectorXd center =
      stencil && !measure ? Eigen::VectorXd() : Eigen::VectorXd(f(0, 0.0));
  for (Eigen::Index j = 0; j < n; ++j) {
    const double h = steps[j];
    const Eigen::VectorXd plus = f(j, h), minus = f(j, -h);
    if (j == 0) {
      out.J.resize(plus.size(), n);
      out.magnitude.resize(plus.size(), n);
      if (stencil) out.third.resize(plus.size(), n);
      if (measure) out.noise.resize(plus.size(), n);
    }
    out.J.col(j) = (plus - minus) / (2 * h);
    out.magnitude.col(j) = magnitude(plus).cwiseMax(magnitude(minus));
    if (!stencil) out.magnitude.col(j) = out.magnitude.col(j).cwiseMax(magnitude(center));
    if (stencil) {
      const double H = options.third_step;
      out.third.col(j) =
          ((f(j, 2 * H) - 2 * f(j, H) + 2 * f(j, -H) - f(j, -2 * H)) / (2 * H * H * H)).cwiseAbs();
    }
    if (measure) {
      const double t = options.noise_step;
      out.noise.col(j) = (f(j, t) + f(j, -t) - 2 * center).cwiseAbs();
    }
  }
  return out;
}

/// Central differences of f(dx) = the output at x ⊕ dx, dx of size n (f retracts).
inline NumericalJacobian centralDifferences(
    const std::function<Eigen::VectorXd(const Eigen::VectorXd& dx)>& f, Eigen::Index n,
    const FiniteDifferenceOptions& options = {}) {
  Eigen::VectorXd dx = Eigen::VectorXd::Zero(n);
  return columnDifferences(
      [&](Eigen::Index j, double s) {
        dx.setZero();
        dx[j] = s;
        return f(dx);
      },
      Eigen::VectorXd::Constant(n, options.step), options);
}

/// Central differences on a manifold: retract(x, dx) = x ⊕ dx (dx of size n), f(y) the output at
/// y (an output on a manifold as its difference to the output at x).
template <class Retract, class F>
NumericalJacobian centralDifferences(const Eigen::VectorXd& x, Eigen::Index n, Retract retract, F f,
                                     const FiniteDifferenceOptions& options = {}) {
  return centralDifferences(
      [&](const Eigen::VectorXd& dx) { return Eigen::VectorXd(f(retract(x, dx))); }, n, options);
}

/// h rounded to a multiple of twice the spacing of doubles at x: x ± h are exact, so the
/// difference quotient divides by the true distance 2 h.
inline double representableStep(double x, double h) {
  if (x == 0) return h;
  const double spacing = 2 * (std::nextafter(std::abs(x), HUGE_VAL) - std::abs(x));
  return std::max(1.0, std::round(h / spacing)) * spacing;
}

/// Central differences in a vector space, x + dx (steps relative to |x_j| with relative_step).
template <class F>
NumericalJacobian centralDifferencesInVectorSpace(const Eigen::VectorXd& x, F f,
                                                  const FiniteDifferenceOptions& options = {}) {
  Eigen::VectorXd steps(x.size());
  for (Eigen::Index j = 0; j < x.size(); ++j)
    steps[j] = options.relative_step
                   ? representableStep(x[j], options.step * std::max(1.0, std::abs(x[j])))
                   : options.step;
  Eigen::VectorXd y = x;
  return columnDifferences(
      [&](Eigen::Index j, double s) {
        y = x;
        y[j] += s;
        return Eigen::VectorXd(f(y));
      },
      steps, options);
}

/// Largest |analytic - numeric| / bound over the entries (<= 1 passes; 0 / 0 counts as 0).
inline double worstRatio(const Eigen::MatrixXd& analytic, const Eigen::MatrixXd& numeric,
                         const Eigen::MatrixXd& bound) {
  double worst = 0;
  for (Eigen::Index j = 0; j < analytic.cols(); ++j)
    for (Eigen::Index i = 0; i < analytic.rows(); ++i) {
      const double error = std::abs(analytic(i, j) - numeric(i, j));
      if (error > 0) worst = std::max(worst, error / bound(i, j));
    }
  return worst;
}

inline double worstRatio(const Eigen::MatrixXd& analytic, const NumericalJacobian& numeric) {
  return worstRatio(analytic, numeric.J, numeric.bound());
}

/// Expects |analytic - numeric| <= bound in every column (failures name `what` and the column),
/// prints the worst error and error / bound, returns the worst error / bound.
inline double expectJacobianNear(const Eigen::MatrixXd& analytic, const Eigen::MatrixXd& numeric,
                                 const Eigen::MatrixXd& bound, const std::string& what) {
  EXPECT_EQ(analytic.rows(), numeric.rows()) << what;
  EXPECT_EQ(analytic.cols(), numeric.cols()) << what;
  if (analytic.rows() != numeric.rows() || analytic.cols() != numeric.cols())
    return std::numeric_limits<double>::infinity();
  double worst_ratio = 0, worst_error = 0;
  for (Eigen::Index j = 0; j < analytic.cols(); ++j) {
    double ratio = 0, error = 0, tol = 0;
    for (Eigen::Index i = 0; i < analytic.rows(); ++i) {
      const double e = std::abs(analytic(i, j) - numeric(i, j));
      const double r = e > 0 ? e / bound(i, j) : 0.0;
      if (r >= ratio) {
        ratio = r;
        error = e;
        tol = bound(i, j);
      }
    }
    EXPECT_LE(error, tol) << what << ", column " << j << ": |analytic - central difference| "
                          << error << " > bound " << tol << "\n analytic  "
                          << analytic.col(j).transpose() << "\n numerical "
                          << numeric.col(j).transpose();
    worst_ratio = std::max(worst_ratio, ratio);
    worst_error = std::max(worst_error, error);
  }
  std::printf("[fd] %-48s worst error %.2e, worst error/bound %.3f\n", what.c_str(), worst_error,
              worst_ratio);
  return worst_ratio;
}

inline double expectJacobianNear(const Eigen::MatrixXd& analytic, const NumericalJacobian& numeric,
                                 const std::string& what) {
  return expectJacobianNear(analytic, numeric.J, numeric.bound(), what);
}

}  // namespace heft::test
