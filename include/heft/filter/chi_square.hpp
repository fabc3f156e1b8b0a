#pragma once
/// \file The chi-square distribution, for innovation gating: under a correct filter the normalized
/// innovation squared y^T S^{-1} y of an m-dimensional measurement is chi-square with m degrees of
/// freedom (online EKF paper eq. 22; Bar-Shalom et al. 2004, ch. 5.4).

namespace heft::filter {

/// P(X <= x) for X ~ chi-square(dof): the regularized lower incomplete gamma P(dof / 2, x / 2),
/// by its power series below x / 2 < dof / 2 + 1 and its continued fraction above (both converge
/// to 1e-15 relative there). \throws InputError for dof < 1 or a non-finite or negative x.
double chiSquareCdf(double x, int dof);

/// The x with chiSquareCdf(x, dof) = probability, by bisection to 1e-12 relative.
/// \throws InputError for dof < 1 or probability outside (0, 1).
double chiSquareQuantile(double probability, int dof);

}  // namespace heft::filter
