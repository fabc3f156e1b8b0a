// RiccatiSolver's arrival node: the priors added to the value function at knot 0, dx_0 eliminated,
// the theta step on the Schur complement's range within the trust radius, and the covariance.
#include <algorithm>
#include <cmath>
#include <limits>

#include <Eigen/Eigenvalues>
#include <Eigen/QR>

#include "heft/inertia/inertia.hpp"

#include "estimation/riccati_impl.hpp"

namespace heft::estimation {

// Eigenvalues of S (or of S on the constraints' nullspace) at or below this are its nullspace: a
// fraction of the largest, but never above the prior's own information (S cannot fall below it
// unless rounding, of order eps times the largest, took it away).
double RiccatiSolver::Impl::nullspaceThreshold(double largest_eigenvalue) const {
  double threshold = options_.nullspace_tolerance * largest_eigenvalue;
  if (prior_information_floor_ > 0 && threshold > prior_information_floor_)
    threshold = std::max(prior_information_floor_,
                         64 * std::numeric_limits<double>::epsilon() * largest_eigenvalue);
  return std::max(threshold, std::numeric_limits<double>::min());
}

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
    if (options_.parametrization_curvature && problem_->inertiaLayout())
      addParametrizationCurvature();
    S_tri_.compute(S_);
    S_diag_ = S_tri_.diagonal();
    S_subdiag_ = S_tri_.subDiagonal();
    S_tri_.matrixQ().evalTo(S_Q_, S_workspace_);
    S_eig_.computeFromTridiagonal(S_diag_, S_subdiag_, Eigen::ComputeEigenvectors);
    if (S_eig_.info() != Eigen::Success) return false;
    S_vectors_.noalias() = S_Q_ * S_eig_.eigenvectors();
    const Eigen::VectorXd& lambda = S_eig_.eigenvalues();
    const Eigen::MatrixXd& V = S_vectors_;
    const double threshold = nullspaceThreshold(lambda.maxCoeff());
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
    constrained_covariance_ = qp_ && constrainedThetaStep(threshold);
    // eq. 83: dx_0 from the theta step
    dxs_[0] = -HxxInvGx_;
    dxs_[0].noalias() -= HxxInvHxt_ * dtheta_;
  } else {
    dxs_[0] = -HxxInvGx_;
  }
  return true;
}

// The data's gradient in pi per body, g_pi from J^T g_pi = g_theta (least squares where J loses
// rank: equal principal moments), contracted with pi's second derivatives. The prior is quadratic
// in theta: no term of its own. Far from the optimum gs_ carries the gaps' and the trajectory's
// response too; at it, gs_ is the data's partial gradient. Only the term's positive part is added:
// it shortens steps where the cost curves up faster than Gauss-Newton's model (what cycled at the
// trust boundary), and never makes a direction look flatter than Gauss-Newton does. The whole term
// (negative part too) turned directions non-positive, which the step then skipped as nullspace:
// the pendulum of the study took 53 +- 41 iterations instead of 28, one draw not converging.
void RiccatiSolver::Impl::addParametrizationCurvature() {
  const Problem::InertiaLayout& layout = *problem_->inertiaLayout();
  data_gradient_ = gs_;
  data_gradient_.noalias() -= problem_->arrival().theta_sqrt_info.transpose() * prior_r_;
  for (int b = 0; b < layout.bodies; ++b) {
    const Vector10 theta = cur_.theta.segment<10>(10 * b);
    const Matrix10 J = inertia::jacobian(layout.parametrization, theta);
    const Eigen::CompleteOrthogonalDecomposition<Matrix10> Jt(J.transpose());
    const Vector10 g_pi = Jt.solve(Vector10(data_gradient_.segment<10>(10 * b)));
    const Eigen::SelfAdjointEigenSolver<Matrix10> C(
        inertia::parametrizationCurvature(layout.parametrization, theta, g_pi));
    S_.block<10, 10>(10 * b, 10 * b).noalias() += C.eigenvectors() *
                                                  C.eigenvalues().cwiseMax(0.0).asDiagonal() *
                                                  C.eigenvectors().transpose();
  }
}

bool RiccatiSolver::Impl::solveThetaQp(double nu, double floor) {
  const Eigen::VectorXd& lambda = S_eig_.eigenvalues();
  const Eigen::MatrixXd& V = S_vectors_;
  qp_H_.noalias() = V * (lambda.array().max(floor) + nu).matrix().asDiagonal() * V.transpose();
  return qp_->solve(qp_H_, qp_g_, con_H_, con_h_, con_G_, con_g_) == DenseQp::Status::Solved;
}

bool RiccatiSolver::Impl::constrainedThetaStep(double floor) {
  constraints_->linearize(cur_.theta, con_h_, con_H_, con_g_, con_G_);
  const Eigen::VectorXd& lambda = S_eig_.eigenvalues();
  const Eigen::MatrixXd& V = S_vectors_;
  // The QP's Hessian is S with its eigenvalues floored (a constraint may need to move theta along
  // a direction no data sees: the least such move) plus the trust region's nu; its gradient has
  // no part along S's nullspace, as the unconstrained step.
  qp_g_ = gs_;
  for (int i = 0; i < np_ && lambda(i) <= floor; ++i) qp_g_ -= V.col(i).dot(gs_) * V.col(i);
  // The trust region on the constrained step: the smallest nu >= 0 with |dtheta(nu)| <= radius.
  // As nu grows the step tends to the least move that satisfies the linearized constraints; when
  // even that is longer than the radius it is taken (feasibility first).
  if (!solveThetaQp(0, floor)) {
    ++qp_failures_;
    return false;
  }
  theta_at_boundary_ = false;
  if (qp_->x().norm() > theta_radius_) {
    theta_at_boundary_ = true;
    double lo = 0, hi = std::max(1.0, gs_.norm() / theta_radius_);
    for (int it = 0; it < 60; ++it) {
      if (!solveThetaQp(hi, floor) || qp_->x().norm() <= theta_radius_) break;
      hi *= 4;
    }
    for (int it = 0; it < 40 && hi - lo > 1e-3 * hi; ++it) {
      const double mid = 0.5 * (lo + hi);
      if (solveThetaQp(mid, floor) && qp_->x().norm() > theta_radius_)
        lo = mid;
      else
        hi = mid;
    }
    if (!solveThetaQp(hi, floor)) {
      ++qp_failures_;
      return false;
    }
  }
  dtheta_ = qp_->x();
  // Covariance: S's inverse on the nullspace of the constraints active at the step (a known total
  // mass leaves no variance to the sum of the masses).
  const int ne = constraints_->numEqualities();
  const std::vector<int>& active = qp_->activeInequalities();
  const int m = ne + static_cast<int>(active.size());
  if (m == 0) return false;  // the unconstrained covariance holds
  Eigen::MatrixXd W(np_, m);
  W.leftCols(ne) = con_H_.transpose();
  for (std::size_t j = 0; j < active.size(); ++j) W.col(ne + j) = con_G_.row(active[j]).transpose();
  Eigen::ColPivHouseholderQR<Eigen::MatrixXd> qr(W);
  const int rank = static_cast<int>(qr.rank());
  const Eigen::MatrixXd Q = qr.householderQ();
  const Eigen::MatrixXd Z = Q.rightCols(np_ - rank);
  theta_covariance_.setZero();
  nullity_ = 0;
  constrained_nullspace_.resize(np_, 0);
  if (Z.cols() == 0) return true;
  const Eigen::MatrixXd reduced = Z.transpose() * S_ * Z;
  Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> eig(reduced);
  const double threshold = nullspaceThreshold(eig.eigenvalues().maxCoeff());
  for (int i = 0; i < Z.cols(); ++i) {
    if (eig.eigenvalues()(i) <= threshold) {
      ++nullity_;
      constrained_nullspace_.conservativeResize(np_, nullity_);
      constrained_nullspace_.col(nullity_ - 1) = Z * eig.eigenvectors().col(i);
      continue;
    }
    const Eigen::VectorXd u = Z * eig.eigenvectors().col(i);
    theta_covariance_.noalias() += (1.0 / eig.eigenvalues()(i)) * u * u.transpose();
  }
  return true;
}

Eigen::MatrixXd RiccatiSolver::Impl::thetaNullspace() const {
  if (np_ == 0 || nullity_ == 0) return Eigen::MatrixXd(np_, 0);
  if (constrained_covariance_) return constrained_nullspace_;
  // Eigenvalues are ascending: the nullspace is the first nullity_ eigenvectors.
  return S_vectors_.leftCols(nullity_);
}

}  // namespace heft::estimation
