// heft::inertia: conversions between pi, pseudo-inertia, log-Cholesky and exponential-eigenvalue
// parameters, their Jacobians, and consistency checks. Derivations: docs/inertia.md.
#include "heft/inertia/inertia.hpp"

#include <cmath>
#include <cstdio>
#include <limits>

#include <Eigen/Eigenvalues>
#include <Eigen/Geometry>
#include <Eigen/SVD>
#include <pinocchio/spatial.hpp>

#include "heft/common/error.hpp"
#include "heft/common/format.hpp"

namespace heft::inertia {
namespace {

using Vector6 = Eigen::Matrix<double, 6, 1>;

// Two principal moments closer than this (relative to the largest) are treated as equal when the
// inverse exponential-eigenvalue map picks R. Changing R inside a near-degenerate eigenspace moves
// pi by at most the gap, i.e. <= 1e-12 relative.
constexpr double kDegenerateRelativeGap = 1e-12;

std::string num(double x) { return formatNumber(x, 6); }

std::string vec(const Eigen::VectorXd& v) {
  std::string s = "[";
  for (Eigen::Index i = 0; i < v.size(); ++i) s += (i ? ", " : "") + num(v[i]);
  return s + "]";
}

// Throws InputError naming the first non-finite entry of `x`.
// Ref and const char*: the checks run on every hot call and must not allocate unless they throw.
void requireFinite(const Eigen::Ref<const Eigen::MatrixXd>& x, const char* what) {
  for (Eigen::Index j = 0; j < x.cols(); ++j)
    for (Eigen::Index i = 0; i < x.rows(); ++i)
      if (!std::isfinite(x(i, j))) {
        const std::string where = x.cols() == 1
                                      ? "[" + std::to_string(i) + "]"
                                      : "(" + std::to_string(i) + ", " + std::to_string(j) + ")";
        throw InputError(std::string(what) + ": expected finite values, got " + num(x(i, j)) +
                         " at " + what + where);
      }
}

void requireSymmetric(const Eigen::MatrixXd& A, const std::string& what) {
  const double asym = (A - A.transpose()).cwiseAbs().maxCoeff();
  const double scale = A.cwiseAbs().maxCoeff();
  require(asym <= 1e-12 * scale, what, "a symmetric matrix (relative asymmetry <= 1e-12)",
          "max |A - A^T| = " + num(asym) + " with max |A| = " + num(scale));
}

// A forward map whose exponentials overflow would return Inf (and NaN downstream): reject theta.
void requireFiniteImage(const Eigen::Ref<const Eigen::MatrixXd>& image, const Vector10& theta,
                        const char* what) {
  if (!image.allFinite())
    throw InputError(
        std::string(what) +
        ": expected theta whose image is finite (exp overflows above ~709), got theta = " +
        vec(theta));
}

// [A_xx, A_xy, A_yy, A_xz, A_yz, A_zz], Pinocchio's Symmetric3 layout (symmetrized first: the
// products below are symmetric only up to rounding).
Vector6 vech(const Matrix3& A) {
  return pinocchio::Symmetric3(Matrix3(0.5 * (A + A.transpose()))).data();
}

Matrix3 skew(const Vector3& v) { return pinocchio::skew(v); }

// P maps second moments L to principal moments D = P L (bayesian-sysid paper eq. 45).
Matrix3 momentMap() { return Matrix3::Ones() - Matrix3::Identity(); }

// Quantities about the COM shared by the consistency check and the exp-eig inverse, so both see
// exactly the same numbers. `defined` is false when m <= 0 (or I_c overflows): I_c is undefined.
struct ComDecomposition {
  bool defined = false;
  double m = 0;
  Vector3 h = Vector3::Zero();
  Matrix3 Ic = Matrix3::Zero();
  Vector3 D = Vector3::Zero();      // ascending principal moments
  Matrix3 V = Matrix3::Identity();  // eigenvectors, columns in the order of D
};

ComDecomposition decompose(const Vector10& pi) {
  ComDecomposition out;
  out.m = pi[0];
  out.h = pi.segment<3>(1);
  if (!(out.m > 0)) return out;
  const Matrix3 Ic = pinocchio::Inertia::FromDynamicParameters(pi).inertia().matrix();
  if (!Ic.allFinite()) return out;
  Eigen::SelfAdjointEigenSolver<Matrix3> eig(Ic);  // ascending eigenvalues
  if (eig.info() != Eigen::Success) return out;
  out.defined = true;
  out.Ic = Ic;
  out.D = eig.eigenvalues();
  out.V = eig.eigenvectors();
  return out;
}

void requireStrictlyConsistent(const Vector10& pi, const std::string& what) {
  const ConsistencyReport report = checkConsistency(pi, 0.0);
  if (report.consistent) return;
  std::string found;
  for (const Violation& v : report.violations) found += (found.empty() ? "" : "; ") + v.detail;
  throw InputError(what + ": expected strictly physically consistent parameters (pseudo-inertia " +
                   "positive definite), got pi = " + vec(pi) + ": " + found);
}

// Among the rotations R with I_c = R diag(D) R^T (D ascending, columns of V eigenvectors), the one
// with the smallest angle. Proof sketches in docs/inertia.md.
Matrix3 smallestAngleRotation(const Vector3& D, const Matrix3& V) {
  const double tol = kDegenerateRelativeGap * D[2];
  const bool low_pair = D[1] - D[0] <= tol;
  const bool high_pair = D[2] - D[1] <= tol;
  if (low_pair && high_pair) return Matrix3::Identity();  // sphere-like: any R works
  if (low_pair || high_pair) {
    // one distinct axis a (column k): every R with R e_k = +-a works; the swing e_k -> a (sign
    // chosen so that a . e_k >= 0) has the smallest angle, since a rotation by phi moves e_k by
    // at most phi.
    const int k = low_pair ? 2 : 0;
    Vector3 a = V.col(k);
    if (a[k] < 0) a = -a;
    return Eigen::Quaterniond::FromTwoVectors(Vector3::Unit(k), a).toRotationMatrix();
  }
  // distinct moments: R = V diag(s), s in {+-1}^3 with det R = +1; four candidates. The smallest
  // angle has the largest trace (tr R = 1 + 2 cos angle). The four traces sum to zero, so the
  // largest is >= 0 and the angle <= 2 pi / 3.
  Matrix3 Vp = V;
  if (Vp.determinant() < 0) Vp.col(2) = -Vp.col(2);
  const double signs[4][3] = {{1, 1, 1}, {1, -1, -1}, {-1, 1, -1}, {-1, -1, 1}};
  int best = 0;
  double best_trace = -std::numeric_limits<double>::infinity();
  for (int c = 0; c < 4; ++c) {
    double trace = 0;
    for (int i = 0; i < 3; ++i) trace += signs[c][i] * Vp(i, i);
    if (trace > best_trace) {
      best_trace = trace;
      best = c;
    }
  }
  Matrix3 R = Vp;
  for (int i = 0; i < 3; ++i) R.col(i) *= signs[best][i];
  return R;
}

}  // namespace

// ---- names ------------------------------------------------------------------------------------

std::string toString(Parametrization p) {
  return p == Parametrization::LogCholesky ? "log-cholesky" : "exponential-eigenvalue";
}

Parametrization parseParametrization(const std::string& name) {
  if (name == "log-cholesky") return Parametrization::LogCholesky;
  if (name == "exponential-eigenvalue") return Parametrization::ExponentialEigenvalue;
  throw InputError(
      "parametrization: expected one of \"log-cholesky\", \"exponential-eigenvalue\", "
      "got \"" +
      name + "\"");
}

// ---- pseudo-inertia ---------------------------------------------------------------------------

Matrix4 pseudoInertiaFromPi(const Vector10& pi) {
  requireFinite(pi, "pi");
  return pinocchio::PseudoInertia::FromDynamicParameters(pi).toMatrix();
}

Vector10 piFromPseudoInertia(const Matrix4& J) {
  requireFinite(J, "pseudo-inertia J");
  requireSymmetric(J, "pseudo-inertia J");
  return pinocchio::PseudoInertia::FromMatrix(J).toDynamicParameters();
}

// ---- log-Cholesky -----------------------------------------------------------------------------

Vector10 piFromLogCholesky(const Vector10& theta) {
  requireFinite(theta, "theta (log-Cholesky)");
  const Vector10 pi = pinocchio::LogCholeskyParameters(theta).toDynamicParameters();
  requireFiniteImage(pi, theta, "theta (log-Cholesky)");
  return pi;
}

Vector10 logCholeskyFromPi(const Vector10& pi) {
  requireFinite(pi, "pi");
  requireStrictlyConsistent(pi, "pi (to log-Cholesky)");
  // J = U U^T with U upper triangular: reversing rows and columns (Jr = P J P) turns this into the
  // ordinary Cholesky Jr = Lo Lo^T, and U = P Lo P.
  const Matrix4 J = pseudoInertiaFromPi(pi);
  const Eigen::LLT<Matrix4> llt(Matrix4(J.reverse()));
  require(llt.info() == Eigen::Success, "pi (to log-Cholesky)",
          "a pseudo-inertia with a Cholesky factorization",
          "a failed factorization of J for pi = " + vec(pi));
  const Matrix4 U = Matrix4(llt.matrixL()).reverse();
  // U = e^alpha [[e^d1, s12, s13, t1], [0, e^d2, s23, t2], [0, 0, e^d3, t3], [0, 0, 0, 1]]
  const double e_alpha = U(3, 3);
  Vector10 theta;
  theta[0] = std::log(e_alpha);
  for (int i = 0; i < 3; ++i) theta[1 + i] = std::log(U(i, i) / e_alpha);
  theta[4] = U(0, 1) / e_alpha;  // s12
  theta[5] = U(1, 2) / e_alpha;  // s23
  theta[6] = U(0, 2) / e_alpha;  // s13
  for (int i = 0; i < 3; ++i) theta[7 + i] = U(i, 3) / e_alpha;
  require(theta.allFinite(), "pi (to log-Cholesky)", "a finite log-Cholesky factor",
          "theta = " + vec(theta) + " for pi = " + vec(pi));
  return theta;
}

Matrix10 logCholeskyJacobian(const Vector10& theta) {
  requireFinite(theta, "theta (log-Cholesky)");
  const Matrix10 jac = pinocchio::LogCholeskyParameters(theta).calculateJacobian();
  requireFiniteImage(jac, theta, "theta (log-Cholesky)");
  return jac;
}

// ---- exponential-eigenvalue -------------------------------------------------------------------

Vector10 piFromExponentialEigenvalue(const Vector10& theta) {
  requireFinite(theta, "theta (exponential-eigenvalue)");
  const double m = std::exp(theta[0]);
  const Vector3 h = theta.segment<3>(1);
  const Matrix3 R = pinocchio::exp3(Vector3(theta.segment<3>(4)));
  const Vector3 D = momentMap() * Vector3(theta.tail<3>().array().exp());
  const Matrix3 Ic = R * D.asDiagonal() * R.transpose();
  // pinocchio::Inertia applies the parallel-axis shift I = I_c + m S(c)^T S(c).
  const Vector10 pi =
      pinocchio::Inertia(m, h / m, pinocchio::Symmetric3(vech(Ic))).toDynamicParameters();
  requireFiniteImage(pi, theta, "theta (exponential-eigenvalue)");
  return pi;
}

Vector10 exponentialEigenvalueFromPi(const Vector10& pi) {
  requireFinite(pi, "pi");
  requireStrictlyConsistent(pi, "pi (to exponential-eigenvalue)");
  const ComDecomposition dec = decompose(pi);
  // L = P^{-1} D: L_i = (D_j + D_k - D_i) / 2, the same sums as the triangle margins.
  const Vector3& D = dec.D;
  const Vector3 L((D[1] + D[2] - D[0]) / 2, (D[0] + D[2] - D[1]) / 2, (D[0] + D[1] - D[2]) / 2);
  require((L.array() > 0).all(), "pi (to exponential-eigenvalue)",
          "positive second moments of mass", "L = " + vec(L) + " kg m^2");
  const Matrix3 R = smallestAngleRotation(D, dec.V);
  Vector10 theta;
  theta[0] = std::log(dec.m);
  theta.segment<3>(1) = dec.h;
  theta.segment<3>(4) = pinocchio::log3(R);
  theta.tail<3>() = L.array().log();
  require(theta.allFinite(), "pi (to exponential-eigenvalue)", "finite parameters",
          "theta = " + vec(theta) + " for pi = " + vec(pi));
  return theta;
}

Matrix10 exponentialEigenvalueJacobian(const Vector10& theta) {
  requireFinite(theta, "theta (exponential-eigenvalue)");
  const double m = std::exp(theta[0]);
  const Vector3 h = theta.segment<3>(1);
  const Vector3 omega = theta.segment<3>(4);
  const Vector3 L = theta.tail<3>().array().exp();
  const Matrix3 P = momentMap();
  const Vector3 D = P * L;
  const Matrix3 R = pinocchio::exp3(omega);
  Matrix3 Jr = Matrix3::Zero();
  pinocchio::Jexp3(omega, Jr);  // right Jacobian: Exp(omega + d) = Exp(omega) Exp(Jr d + o(d))

  Matrix10 jac = Matrix10::Zero();
  // sigma_m: dm = m; the shift (1/m) S(h)^T S(h) = (|h|^2 1 - h h^T) / m scales with -1/m (eq. 49)
  const Matrix3 shift = (h.squaredNorm() * Matrix3::Identity() - h * h.transpose()) / m;
  jac(0, 0) = m;
  jac.block<6, 1>(4, 0) = vech(-shift);
  // h_k: dh = e_k; d shift = (2 h_k 1 - e_k h^T - h e_k^T) / m (eq. 49)
  for (int k = 0; k < 3; ++k) {
    const Vector3 e = Vector3::Unit(k);
    jac(1 + k, 1 + k) = 1;
    jac.block<6, 1>(4, 1 + k) =
        vech((2 * h[k] * Matrix3::Identity() - e * h.transpose() - h * e.transpose()) / m);
  }
  // omega_i: dR = R [u]x with u = Jr e_i (eq. 50 uses J_l here, which FD rejects), so
  // dI_c = R ([u]x diag(D) - diag(D) [u]x) R^T (eq. 51)
  for (int i = 0; i < 3; ++i) {
    const Matrix3 S = skew(Jr.col(i));
    jac.block<6, 1>(4, 4 + i) =
        vech(R * (S * D.asDiagonal() + D.asDiagonal() * S.transpose()) * R.transpose());
  }
  // sigma_a: dL_a = L_a, dD = L_a P e_a, dI_c = R diag(dD) R^T (eqs. 52-54)
  for (int a = 0; a < 3; ++a) {
    const Vector3 dD = L[a] * P.col(a);
    jac.block<6, 1>(4, 7 + a) = vech(R * dD.asDiagonal() * R.transpose());
  }
  requireFiniteImage(jac, theta, "theta (exponential-eigenvalue)");
  return jac;
}

// ---- either -----------------------------------------------------------------------------------

Vector10 piFromTheta(Parametrization p, const Vector10& theta) {
  return p == Parametrization::LogCholesky ? piFromLogCholesky(theta)
                                           : piFromExponentialEigenvalue(theta);
}

Vector10 thetaFromPi(Parametrization p, const Vector10& pi) {
  return p == Parametrization::LogCholesky ? logCholeskyFromPi(pi)
                                           : exponentialEigenvalueFromPi(pi);
}

Matrix10 jacobian(Parametrization p, const Vector10& theta) {
  return p == Parametrization::LogCholesky ? logCholeskyJacobian(theta)
                                           : exponentialEigenvalueJacobian(theta);
}

Matrix10 parametrizationCurvature(Parametrization p, const Vector10& theta, const Vector10& g) {
  constexpr double h = 1e-6;
  Matrix10 C;
  for (int k = 0; k < 10; ++k) {
    Vector10 plus = theta, minus = theta;
    plus[k] += h;
    minus[k] -= h;
    C.col(k).noalias() = (jacobian(p, plus) - jacobian(p, minus)).transpose() * g / (2 * h);
  }
  return 0.5 * (C + C.transpose());  // symmetric up to the differences' error
}

Eigen::MatrixXd stackedJacobian(Parametrization p, const Eigen::VectorXd& theta) {
  const int nb = static_cast<int>(theta.size() / 10);
  Eigen::MatrixXd J = Eigen::MatrixXd::Zero(10 * nb, 10 * nb);
  for (int b = 0; b < nb; ++b)
    J.block<10, 10>(10 * b, 10 * b) = jacobian(p, theta.segment<10>(10 * b));
  return J;
}

JacobianRank jacobianRank(const Matrix10& dpi_dtheta, double relative_tolerance) {
  requireFinite(dpi_dtheta, "dpi_dtheta");
  require(relative_tolerance > 0 && relative_tolerance < 1, "relative_tolerance",
          "a value in (0, 1)", num(relative_tolerance));
  // dynamic size: GCC 12 warns (falsely) on the fixed-size 10 x 10 JacobiSVD
  const Eigen::JacobiSVD<Eigen::MatrixXd> svd(Eigen::MatrixXd(dpi_dtheta), Eigen::ComputeFullV);
  JacobianRank out;
  out.singular_values = svd.singularValues();
  const double threshold = relative_tolerance * out.singular_values[0];
  out.rank = 0;
  for (int i = 0; i < 10; ++i)
    if (out.singular_values[i] > threshold) ++out.rank;
  out.range = svd.matrixV().leftCols(out.rank);
  out.nullspace = svd.matrixV().rightCols(10 - out.rank);
  out.smallest_singular_value = out.singular_values[9];
  return out;
}

// ---- consistency ------------------------------------------------------------------------------

ConsistencyReport checkConsistency(const Vector10& pi, double tolerance) {
  requireFinite(pi, "pi");
  require(std::isfinite(tolerance), "tolerance", "a finite value", num(tolerance));
  ConsistencyReport report;
  const std::string bound = ", must exceed " + num(tolerance);

  report.mass_margin = pi[0];
  if (report.mass_margin <= tolerance)
    report.violations.push_back(
        {"mass", report.mass_margin, "m = " + num(report.mass_margin) + " kg" + bound + " kg"});

  const ComDecomposition dec = decompose(pi);
  if (dec.defined) {
    const Vector3& D = dec.D;
    report.principal_moments = D;
    report.inertia_margin = D[0];
    report.triangle_margin = D[0] + D[1] - D[2];  // binding one when D is ascending
    const double trace = D.sum();
    report.relative_margin =
        trace > 0 ? report.triangle_margin / trace : -std::numeric_limits<double>::infinity();
    const std::string moments = " (principal moments about the COM D = " + vec(D) + " kg m^2)";
    if (report.inertia_margin <= tolerance)
      report.violations.push_back({"inertia_positive_definite", report.inertia_margin,
                                   "lambda_min(I_c) = " + num(report.inertia_margin) + " kg m^2" +
                                       bound + " kg m^2" + moments});
    if (report.triangle_margin <= tolerance)
      report.violations.push_back({"triangle_inequality", report.triangle_margin,
                                   "D1 + D2 - D3 = " + num(report.triangle_margin) + " kg m^2" +
                                       bound + " kg m^2" + moments});
  } else {
    const double undefined = -std::numeric_limits<double>::infinity();
    report.inertia_margin = undefined;
    report.triangle_margin = undefined;
    report.relative_margin = undefined;
    const std::string why =
        "undefined: the inertia about the COM needs m > 0 and a finite COM h / m, got m = " +
        num(pi[0]) + " kg";
    report.violations.push_back({"inertia_positive_definite", undefined, "lambda_min(I_c) " + why});
    report.violations.push_back({"triangle_inequality", undefined, "D1 + D2 - D3 " + why});
  }

  const Eigen::SelfAdjointEigenSolver<Matrix4> eigJ(pseudoInertiaFromPi(pi),
                                                    Eigen::EigenvaluesOnly);
  report.pseudo_inertia_margin = eigJ.eigenvalues()[0];
  if (report.pseudo_inertia_margin <= tolerance)
    report.violations.push_back(
        {"pseudo_inertia", report.pseudo_inertia_margin,
         "lambda_min(J) = " + num(report.pseudo_inertia_margin) + bound +
             " (J = [[Sigma, h], [h^T, m]] in kg m^2, kg m, kg; eigenvalues " +
             vec(eigJ.eigenvalues()) + ")"});

  report.consistent = report.violations.empty();
  return report;
}

ConsistencyReport checkConsistencyMargin(const Vector10& pi) {
  ConsistencyReport report = checkConsistency(pi, 0.0);
  if (report.relative_margin < kConsistencyMargin) {
    report.violations.push_back(
        {"relative_margin", report.relative_margin,
         "(D1 + D2 - D3) / (D1 + D2 + D3) = " + num(report.relative_margin) +
             ", must be at least " + num(kConsistencyMargin) +
             " (a point or line mass: principal moments D = " + vec(report.principal_moments) +
             " kg m^2)"});
    report.consistent = false;
  }
  return report;
}

double moveInsideMargin(Vector10& pi, const Vector10& toward) {
  if (checkConsistencyMargin(pi).consistent) return 0;
  if (!checkConsistencyMargin(toward).consistent) return -1;
  for (double a = 1e-9; a < 1; a *= 10) {
    const Vector10 inside = (1 - a) * pi + a * toward;
    if (checkConsistencyMargin(inside).consistent) {
      pi = inside;
      return a;
    }
  }
  pi = toward;
  return 1;
}

// ---- accessors --------------------------------------------------------------------------------

double mass(const Vector10& pi) {
  requireFinite(pi, "pi");
  return pi[0];
}

Vector3 centerOfMass(const Vector10& pi) {
  requireFinite(pi, "pi");
  require(pi[0] > 0, "pi[0] (mass)", "m > 0 kg to define the COM", num(pi[0]) + " kg");
  const Vector3 c = pi.segment<3>(1) / pi[0];
  require(c.allFinite(), "pi (COM)", "a finite COM h / m", vec(c) + " m");
  return c;
}

Matrix3 rotationalInertiaAtOrigin(const Vector10& pi) {
  requireFinite(pi, "pi");
  return pinocchio::Symmetric3(Vector6(pi.tail<6>())).matrix();
}

Matrix3 rotationalInertiaAtCom(const Vector10& pi) {
  requireFinite(pi, "pi");
  require(pi[0] > 0, "pi[0] (mass)", "m > 0 kg to define the inertia about the COM",
          num(pi[0]) + " kg");
  const Matrix3 Ic = pinocchio::Inertia::FromDynamicParameters(pi).inertia().matrix();
  require(Ic.allFinite(), "pi (inertia about the COM)", "finite values",
          "non-finite I_c for pi = " + vec(pi));
  return Ic;
}

Vector10 piFromMassComInertia(double mass, const Vector3& com, const Matrix3& inertia_at_com) {
  require(std::isfinite(mass), "mass", "a finite value in kg", num(mass));
  requireFinite(com, "com");
  requireFinite(inertia_at_com, "inertia_at_com");
  requireSymmetric(inertia_at_com, "inertia_at_com");
  const Vector10 pi = pinocchio::Inertia(mass, com, pinocchio::Symmetric3(vech(inertia_at_com)))
                          .toDynamicParameters();
  require(pi.allFinite(), "mass, com, inertia_at_com", "finite parameters", "pi = " + vec(pi));
  return pi;
}

}  // namespace heft::inertia
