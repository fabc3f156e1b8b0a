#include "heft/inertia/margin_guard.hpp"

#include <cmath>

#include <Eigen/Cholesky>
#include <Eigen/Eigenvalues>

namespace heft::inertia {
namespace {

// V V^T (the second moments about the COM over the mass) of a log-Cholesky theta.
Matrix3 secondMomentsOverMass(const Vector10& theta) {
  Matrix3 V;
  V << std::exp(theta[1]), theta[4], theta[6],  //
      0, std::exp(theta[2]), theta[5],          //
      0, 0, std::exp(theta[3]);
  return V * V.transpose();
}

}  // namespace

double logCholeskyRelativeMargin(const Vector10& theta) {
  const Matrix3 S = secondMomentsOverMass(theta);
  const Eigen::SelfAdjointEigenSolver<Matrix3> eigen(S, Eigen::EigenvaluesOnly);
  return eigen.eigenvalues()[0] / S.trace();
}

bool liftLogCholeskyToMargin(Vector10& theta, double target) {
  Matrix3 S = secondMomentsOverMass(theta);
  const Eigen::SelfAdjointEigenSolver<Matrix3> eigen(S, Eigen::EigenvaluesOnly);
  const double smallest = eigen.eigenvalues()[0], trace = S.trace();
  if (smallest >= target * trace) return false;
  // (smallest + delta) / (trace + 3 delta) = target
  const double delta = (target * trace - smallest) / (1 - 3 * target);
  S.diagonal().array() += delta;
  // V upper triangular with V V^T = S: the ordinary Cholesky factor of S with rows and columns
  // reversed, reversed back (as logCholeskyFromPi does for J)
  const Eigen::LLT<Matrix3> llt(Matrix3(S.reverse()));
  if (llt.info() != Eigen::Success) return false;
  const Matrix3 V = Matrix3(llt.matrixL()).reverse();
  for (int i = 0; i < 3; ++i) theta[1 + i] = std::log(V(i, i));
  theta[4] = V(0, 1);  // s12
  theta[5] = V(1, 2);  // s23
  theta[6] = V(0, 2);  // s13
  return true;
}

}  // namespace heft::inertia
