#pragma once
/// \file Physically consistent parametrizations of one rigid body's inertial parameters.
///
/// pi (Vector10) is Pinocchio's order [m, m c_x, m c_y, m c_z, I_xx, I_xy, I_yy, I_xz, I_yz, I_zz],
/// inertia about the body frame origin, expressed in the body frame (docs/conventions.md).
/// Units: kg, kg m, kg m^2.
/// Two smooth maps theta -> pi cover exactly the physically consistent set (pseudo-inertia J > 0):
///  - log-Cholesky (Rucker & Wensing 2022, Pinocchio's LogCholeskyParameters order):
///    theta = [alpha, d1, d2, d3, s12, s23, s13, t1, t2, t3], J = U U^T with U upper triangular,
///  - exponential-eigenvalue (multi-contact paper, sec. III):
///    theta = [sigma_m, h_x, h_y, h_z, omega_x, omega_y, omega_z, sigma_x, sigma_y, sigma_z],
///    m = exp(sigma_m), first mass moment h = m c, second moments L = exp(sigma),
///    principal moments D = P L (P = ones - identity),
///    rotation R = Exp(omega), I_c = R diag(D) R^T.
/// Every function rejects NaN/Inf input and inconsistent input to an inverse map with
/// heft::InputError; none returns a non-finite number (an overflowing theta throws too).
/// Conventions, derivations and the choices made at singular points: docs/inertia.md.
#include <string>
#include <vector>

#include <Eigen/Core>

#include "heft/common/types.hpp"

namespace heft::inertia {

enum class Parametrization { LogCholesky, ExponentialEigenvalue };

/// "log-cholesky" / "exponential-eigenvalue"; parse throws InputError naming the accepted values.
std::string toString(Parametrization p);
Parametrization parseParametrization(const std::string& name);

// ---- pseudo-inertia ------------------------------------------------------------------------
/// Pseudo-inertia (4 x 4, Wensing et al. 2017; multi-contact paper eq. 8):
/// \f$ J = \begin{bmatrix} \Sigma & h \\ h^T & m \end{bmatrix} \f$ with
/// \f$ \Sigma = \tfrac12 \mathrm{tr}(I) 1_3 - I \f$ (second moment of mass about the origin,
/// kg m^2), h = m c (kg m), m (kg). Linear in pi; computed by pinocchio::PseudoInertia.
Matrix4 pseudoInertiaFromPi(const Vector10& pi);
/// Inverse of pseudoInertiaFromPi (linear). Throws InputError if J is not finite or not symmetric
/// (relative asymmetry above 1e-12).
Vector10 piFromPseudoInertia(const Matrix4& J);

// ---- log-Cholesky ---------------------------------------------------------------------------
/// pi = psi(theta) with J = U U^T, U = e^alpha [[e^d1, s12, s13, t1], [0, e^d2, s23, t2],
/// [0, 0, e^d3, t3], [0, 0, 0, 1]] (Rucker & Wensing 2022; multi-contact paper eqs. 9-10).
/// Computed by pinocchio::LogCholeskyParameters::toDynamicParameters.
Vector10 piFromLogCholesky(const Vector10& theta);
/// Inverse map: the unique upper-triangular factor with positive diagonal of J = U U^T (a Cholesky
/// factorization of the order-reversed J), read back into theta. Throws InputError if pi is not
/// strictly consistent (J not positive definite).
Vector10 logCholeskyFromPi(const Vector10& pi);
/// d pi / d theta (10 x 10, row i = pi_i, column j = theta_j), always full rank. Computed by
/// pinocchio::LogCholeskyParameters::calculateJacobian.
Matrix10 logCholeskyJacobian(const Vector10& theta);

// ---- exponential-eigenvalue -----------------------------------------------------------------
/// pi = psi(theta) (bayesian-sysid paper eqs. 44-47; multi-contact paper eqs. 11-15):
/// m = e^{sigma_m}, h = theta[1:4], R = Exp(omega), D = P e^{sigma},
/// \f$ I = R\,\mathrm{diag}(D) R^T + \tfrac1m [h]_\times^T [h]_\times \f$ (about the origin).
Vector10 piFromExponentialEigenvalue(const Vector10& theta);
/// Inverse map; throws InputError if pi is not strictly consistent. R is not unique: this returns
/// principal moments sorted ascending and, among all R in SO(3) with I_c = R diag(D) R^T, the
/// one with the smallest rotation angle (so |omega| <= 2 pi / 3, and <= pi / 2 when two principal
/// moments coincide; omega = 0 for a sphere). See docs/inertia.md.
Vector10 exponentialEigenvalueFromPi(const Vector10& pi);
/// d pi / d theta (10 x 10), bayesian-sysid paper eqs. 48-54 with eq. 50 corrected to the right
/// Jacobian: dR/d omega_i = R [J_r(omega) e_i]_x (J_r = pinocchio::Jexp3). Rank-deficient where
/// principal moments coincide (rotations about a symmetry axis do not change pi): rank 9 for two
/// equal moments, 7 for three; also where |omega| is a nonzero multiple of 2 pi (J_r singular).
Matrix10 exponentialEigenvalueJacobian(const Vector10& theta);

// ---- either ---------------------------------------------------------------------------------
Vector10 piFromTheta(Parametrization p, const Vector10& theta);
Vector10 thetaFromPi(Parametrization p, const Vector10& pi);
Matrix10 jacobian(Parametrization p, const Vector10& theta);
/// The curvature of theta -> pi weighted by a covector g of pi: C = sum_j g_j d^2 pi_j / d theta^2
/// (10 x 10, symmetric), the term a Gauss-Newton Hessian in theta drops when the cost's gradient
/// in pi is g (exact for costs linear in pi, such as inverse dynamics; docs/estimation.md,
/// "Curvature of the parametrization"). Column k is d/d theta_k of J(theta)^T g by central
/// differences of the analytic `jacobian` (step 1e-6: truncation and rounding both near 1e-10 of
/// the entries for theta of order one). Allocation-free.
Matrix10 parametrizationCurvature(Parametrization p, const Vector10& theta, const Vector10& g);
/// Block-diagonal d pi / d theta of several bodies: theta stacks 10 per body.
Eigen::MatrixXd stackedJacobian(Parametrization p, const Eigen::VectorXd& theta);

/// Numerical rank of a Jacobian d pi / d theta and orthonormal bases of the theta directions it
/// loses and keeps, from an SVD: singular values s_i <= relative_tolerance * s_max count as zero.
/// `relative_tolerance` must lie in (0, 1). A solver steps in theta = theta0 + range * z.
struct JacobianRank {
  int rank = 10;
  Eigen::MatrixXd nullspace;  ///< 10 x (10 - rank), theta directions that do not change pi
  Eigen::MatrixXd range;      ///< 10 x rank, theta directions that do (the row space of dpi/dtheta)
  Vector10 singular_values = Vector10::Zero();  ///< descending
  double smallest_singular_value = 0;
};
JacobianRank jacobianRank(const Matrix10& dpi_dtheta, double relative_tolerance = 1e-9);

// ---- consistency ------------------------------------------------------------------------------
/// One failed condition with its margin (negative: violated by that much).
struct Violation {
  std::string
      condition;  ///< "mass", "inertia_positive_definite", "triangle_inequality", "pseudo_inertia"
  double margin =
      0;  ///< value that must be > 0: m, lambda_min(I_c), min(D_i+D_j-D_k), lambda_min(J)
  std::string detail;  ///< human-readable, e.g. "D1 + D2 - D3 = -1.2e-04 kg m^2 ..."
};

/// Full consistency report of one body. Margins are in SI units (kg, kg m^2; lambda_min(J) mixes
/// kg, kg m and kg m^2 as J does). When m <= 0, I_c is undefined: inertia_margin and
/// triangle_margin are then -infinity and reported as violations saying so.
struct ConsistencyReport {
  bool consistent = true;
  double mass_margin = 0;      ///< m
  double inertia_margin = 0;   ///< smallest eigenvalue of the rotational inertia about the COM
  double triangle_margin = 0;  ///< min over permutations of D_i + D_j - D_k (principal moments)
  double pseudo_inertia_margin = 0;  ///< smallest eigenvalue of the pseudo-inertia J
  /// (D1 + D2 - D3) / (D1 + D2 + D3): the smallest principal second moment about the COM over the
  /// sum of the three, dimensionless; -infinity when m <= 0 or I_c = 0 (see kConsistencyMargin).
  double relative_margin = 0;
  Vector3 principal_moments = Vector3::Zero();  ///< ascending (zero when m <= 0)
  std::vector<Violation> violations;
};

/// Checks (bayesian-sysid paper eq. 44; Wensing et al. 2017): m > tol, lambda_min(I_c) > tol,
/// D1 + D2 - D3 > tol (D ascending: the binding triangle inequality, = 2 min L), lambda_min(J) >
/// tol. Every margin is compared against `tolerance` (strict: a margin <= tolerance is a
/// violation). Throws InputError for NaN/Inf in pi or tolerance. Used by every writer of
/// parameters.
ConsistencyReport checkConsistency(const Vector10& pi, double tolerance = 0.0);

/// The one consistency margin of the project. Every body an estimator hands over and every link a
/// writer writes has m > 0 and a relative margin (ConsistencyReport::relative_margin: the smallest
/// principal second moment about the COM over the sum of the three) of at least this. Relative, so
/// it does not depend on units or size and a positively scaled or re-expressed body keeps it;
/// second moments grow with m r^2, so 1e-6 admits any body thicker than about 1/1000 of its extent
/// and rejects point and line masses, which no link is.
inline constexpr double kConsistencyMargin = 1e-6;

/// The project's check: checkConsistency(pi, 0) plus a "relative_margin" violation when the
/// relative margin is below kConsistencyMargin. What every writer of parameters applies.
ConsistencyReport checkConsistencyMargin(const Vector10& pi);

/// Moves pi (an estimate) inside the margin: the smallest a in {0, 1e-9, 1e-8, ..., 0.1, 1} such
/// that (1 - a) pi + a toward passes checkConsistencyMargin (the consistent set is convex, so a =
/// 1, `toward` itself, does when `toward` does). Returns a, or -1 (pi unchanged) when `toward`
/// lacks the margin too.
double moveInsideMargin(Vector10& pi, const Vector10& toward);

/// Convenience accessors. centerOfMass and rotationalInertiaAtCom throw InputError when m <= 0.
double mass(const Vector10& pi);
Vector3 centerOfMass(const Vector10& pi);               ///< c = h / m [m]
Matrix3 rotationalInertiaAtOrigin(const Vector10& pi);  ///< I about the body frame origin
Matrix3 rotationalInertiaAtCom(const Vector10& pi);     ///< I_c = I - m S(c)^T S(c)
/// pi from mass (kg), COM (body frame, m) and rotational inertia about the COM (body-frame axes,
/// kg m^2), via pinocchio::Inertia(m, c, I_c).toDynamicParameters(). I_c must be symmetric.
Vector10 piFromMassComInertia(double mass, const Vector3& com, const Matrix3& inertia_at_com);

}  // namespace heft::inertia
