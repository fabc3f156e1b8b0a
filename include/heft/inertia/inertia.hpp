#pragma once
/// \file Physically consistent parametrizations of one rigid body's inertial parameters.
///
/// pi (Vector10) is Pinocchio's order [m, m c_x, m c_y, m c_z, I_xx, I_xy, I_yy, I_xz, I_yz, I_zz],
/// inertia about the body frame origin, expressed in the body frame (docs/conventions.md).
/// Two smooth maps theta -> pi cover exactly the physically consistent set (pseudo-inertia J > 0):
///  - log-Cholesky (Rucker & Wensing 2022, Pinocchio's LogCholeskyParameters order):
///    theta = [alpha, d1, d2, d3, s12, s23, s13, t1, t2, t3], J = U U^T with U upper triangular,
///  - exponential-eigenvalue (multi-contact paper, sec. III):
///    theta = [sigma_m, h_x, h_y, h_z, omega_x, omega_y, omega_z, sigma_x, sigma_y, sigma_z],
///    m = exp(sigma_m), first mass moment h = m c, second moments L = exp(sigma),
///    principal moments D = P L (P = ones - identity),
///    rotation R = Exp(omega), I_c = R diag(D) R^T.
#include <string>
#include <vector>

#include "heft/common/types.hpp"

namespace heft::inertia {

enum class Parametrization { LogCholesky, ExponentialEigenvalue };

/// "log-cholesky" / "exponential-eigenvalue"; parse throws InputError naming the accepted values.
std::string toString(Parametrization p);
Parametrization parseParametrization(const std::string& name);

// ---- pseudo-inertia ------------------------------------------------------------------------
/// J = [[Sigma, h], [h^T, m]] with Sigma = 0.5 tr(I) 1 - I (second moment of mass), h = m c.
Matrix4 pseudoInertiaFromPi(const Vector10& pi);
Vector10 piFromPseudoInertia(const Matrix4& J);

// ---- log-Cholesky ---------------------------------------------------------------------------
Vector10 piFromLogCholesky(const Vector10& theta);
/// Inverse map; throws InputError if pi is not strictly consistent (J not positive definite).
Vector10 logCholeskyFromPi(const Vector10& pi);
/// d pi / d theta (10 x 10), always full rank.
Matrix10 logCholeskyJacobian(const Vector10& theta);

// ---- exponential-eigenvalue -----------------------------------------------------------------
Vector10 piFromExponentialEigenvalue(const Vector10& theta);
/// Inverse map; throws InputError if pi is not strictly consistent. When principal moments
/// coincide, R is not unique: see docs/inertia.md for the choice made (the one with the smallest
/// rotation angle among eigen-decompositions sorted by ascending principal moment, det R = +1).
Vector10 exponentialEigenvalueFromPi(const Vector10& pi);
/// d pi / d theta (10 x 10). Rank-deficient where principal moments coincide (rotations about a
/// symmetry axis do not change pi).
Matrix10 exponentialEigenvalueJacobian(const Vector10& theta);

// ---- either ---------------------------------------------------------------------------------
Vector10 piFromTheta(Parametrization p, const Vector10& theta);
Vector10 thetaFromPi(Parametrization p, const Vector10& pi);
Matrix10 jacobian(Parametrization p, const Vector10& theta);

/// Numerical rank of a Jacobian d pi / d theta and an orthonormal basis of its nullspace
/// (columns, 10 x (10 - rank)), from an SVD with relative threshold `relative_tolerance`.
struct JacobianRank {
  int rank = 10;
  Eigen::MatrixXd nullspace;   ///< 10 x (10 - rank)
  Eigen::MatrixXd range;       ///< 10 x rank, orthonormal basis of the identifiable directions
  double smallest_singular_value = 0;
};
JacobianRank jacobianRank(const Matrix10& dpi_dtheta, double relative_tolerance = 1e-9);

// ---- consistency ------------------------------------------------------------------------------
/// One failed condition with its margin (negative: violated by that much).
struct Violation {
  std::string condition;  ///< "mass", "inertia_positive_definite", "triangle_inequality", "pseudo_inertia"
  double margin = 0;      ///< value that must be > 0: m, lambda_min(I_c), min(D_i+D_j-D_k), lambda_min(J)
  std::string detail;     ///< human-readable, e.g. "Ixx+Iyy-Izz = -1.2e-4 kg m^2"
};

/// Full consistency report of one body. Margins are in SI units (kg, kg m^2).
struct ConsistencyReport {
  bool consistent = true;
  double mass_margin = 0;            ///< m
  double inertia_margin = 0;         ///< smallest eigenvalue of the rotational inertia about the COM
  double triangle_margin = 0;        ///< min over permutations of D_i + D_j - D_k (principal moments)
  double pseudo_inertia_margin = 0;  ///< smallest eigenvalue of the pseudo-inertia J
  Vector3 principal_moments = Vector3::Zero();  ///< ascending
  std::vector<Violation> violations;
};

/// Checks mass > tol, I_c > tol, triangle inequalities > -tol... every margin compared against
/// `tolerance` (strict: margin must exceed tolerance). Used by every writer of parameters.
ConsistencyReport checkConsistency(const Vector10& pi, double tolerance = 0.0);

/// Convenience accessors.
double mass(const Vector10& pi);
Vector3 centerOfMass(const Vector10& pi);             ///< c = h / m
Matrix3 rotationalInertiaAtOrigin(const Vector10& pi); ///< I about the body frame origin
Matrix3 rotationalInertiaAtCom(const Vector10& pi);    ///< I_c = I - m S(c)^T S(c)
/// pi from mass, COM (body frame) and rotational inertia about the COM (body-frame axes).
Vector10 piFromMassComInertia(double mass, const Vector3& com, const Matrix3& inertia_at_com);

}  // namespace heft::inertia
