// RiccatiSolver's arrival node: the priors added to the value function at knot 0, dx_0 eliminated,
// the theta step on the Schur complement's range within the trust radius, and the covariance.
#include <algorithm>
#include <cmath>
#include <limits>

#include "estimation/riccati_impl.hpp"

namespace heft::estimation {

bool RiccatiSolver::Impl::solveArrival() {
  const ArrivalPrior& arrival = problem_->arrival();
  Hxx_ = Vxx_next_;
  Hxx_.noalias() += arrival_J_.transpose() * arrival_J_;
  Hxx_.diagonal().array() += mu_;
  Hxt_ = Vxt_next_;
  Htt_ = Vtt_next_;
  Htt_.noalias() += arrival.theta_sqrt_info.transpose() * arrival.theta_sqrt_info;
  Htt_.diagonal().array() += mu_;
  gx_ = Vx_next_;
  gx_.noalias() += arrival_J_.transpose() * arrival_r_;
  gt_ = Vt_next_;
  gt_.noalias() += arrival.theta_sqrt_info.transpose() * prior_r_;

  Hxx_llt_.compute(Hxx_);
  if (Hxx_llt_.info() != Eigen::Success) return false;
  HxxInvGx_ = gx_;
  Hxx_llt_.solveInPlace(HxxInvGx_);
  dtheta_.setZero();
  theta_covariance_.setZero();
  nullity_ = 0;
  if (np_ > 0) {
    HxxInvHxt_ = Hxt_;
    Hxx_llt_.solveInPlace(HxxInvHxt_);
    // Schur complement in theta after eliminating dx_0: the information of theta.
    S_ = Htt_;
    S_.noalias() -= Hxt_.transpose() * HxxInvHxt_;
    gs_ = gt_;
    gs_.noalias() -= Hxt_.transpose() * HxxInvGx_;
    S_tri_.compute(S_);
    S_diag_ = S_tri_.diagonal();
    S_subdiag_ = S_tri_.subDiagonal();
    S_tri_.matrixQ().evalTo(S_Q_, S_workspace_);
    S_eig_.computeFromTridiagonal(S_diag_, S_subdiag_, Eigen::ComputeEigenvectors);
    if (S_eig_.info() != Eigen::Success) return false;
    S_vectors_.noalias() = S_Q_ * S_eig_.eigenvectors();
    const Eigen::VectorXd& lambda = S_eig_.eigenvalues();
    const Eigen::MatrixXd& V = S_vectors_;
    const double threshold = std::max(options_.nullspace_tolerance * lambda.maxCoeff(),
                                      std::numeric_limits<double>::min());
    // Step on the range of S (eq. 31: none along an unobservable direction), within the trust
    // radius: dtheta(nu) = -sum_i v_i (v_i . g) / (lambda_i + nu), the smallest nu >= 0 with
    // |dtheta(nu)| <= radius (the norm decreases with nu: bisection).
    auto stepNorm2 = [&](double nu) {
      double sum = 0;
      for (int i = 0; i < np_; ++i) {
        if (lambda(i) <= threshold) continue;
        const double c = V.col(i).dot(gs_) / (lambda(i) + nu);
        sum += c * c;
      }
      return sum;
    };
    double nu = 0;
    theta_at_boundary_ = false;
    const double radius2 = theta_radius_ * theta_radius_;
    if (stepNorm2(0) > radius2) {
      theta_at_boundary_ = true;
      double lo = 0, hi = std::max(1.0, gs_.norm() / theta_radius_);
      while (stepNorm2(hi) > radius2) hi *= 2;
      for (int it = 0; it < 100 && hi - lo > 1e-12 * hi; ++it) {
        const double mid = 0.5 * (lo + hi);
        (stepNorm2(mid) > radius2 ? lo : hi) = mid;
      }
      nu = hi;
    }
    for (int i = 0; i < np_; ++i) {
      if (lambda(i) <= threshold) {
        ++nullity_;
        continue;
      }
      dtheta_.noalias() -= (V.col(i).dot(gs_) / (lambda(i) + nu)) * V.col(i);
      theta_covariance_.noalias() += (1.0 / lambda(i)) * V.col(i) * V.col(i).transpose();
    }
    dxs_[0] = -HxxInvGx_;
    dxs_[0].noalias() -= HxxInvHxt_ * dtheta_;
  } else {
    dxs_[0] = -HxxInvGx_;
  }
  return true;
}

Eigen::MatrixXd RiccatiSolver::Impl::thetaNullspace() const {
  if (np_ == 0 || nullity_ == 0) return Eigen::MatrixXd(np_, 0);
  // Eigenvalues are ascending: the nullspace is the first nullity_ eigenvectors.
  return S_vectors_.leftCols(nullity_);
}

}  // namespace heft::estimation
