#include "heft/common/dense_qp.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "heft/common/error.hpp"

namespace heft {

std::string toString(DenseQp::Status status) {
  switch (status) {
    case DenseQp::Status::Solved:
      return "solved";
    case DenseQp::Status::Infeasible:
      return "infeasible";
    case DenseQp::Status::NotPositiveDefinite:
      return "Hessian not positive definite";
    case DenseQp::Status::MaxIterations:
      return "max iterations";
  }
  return "unknown";
}

DenseQp::DenseQp(int n, int ne, int ni) : n_(n), ne_(ne), ni_(ni) {
  require(n >= 1 && ne >= 0 && ni >= 0, "DenseQp sizes", "n >= 1, ne >= 0, ni >= 0",
          std::to_string(n) + ", " + std::to_string(ne) + ", " + std::to_string(ni));
  H_llt_ = Eigen::LLT<Eigen::MatrixXd>(n);
  x_.setZero(n);
  y_.setZero(ne);
  z_.setZero(ni);
  const int m = ne + ni;
  active_.reserve(m);
  sign_.assign(ne, 1.0);
  active_inequalities_.reserve(ni);
  u_.setZero(m);
  N_.setZero(n, m);
  HinvN_.setZero(n, m);
  M_.setZero(m, m);
  for (Eigen::VectorXd* v : {&np_, &Hinv_np_, &z_step_}) v->setZero(n);
  r_.setZero(m);
  rhs_.setZero(m);
}

void DenseQp::normal(int id, Eigen::Ref<Eigen::VectorXd> out) const {
  if (id < ne_)
    out = sign_[id] * A_->row(id).transpose();
  else
    out = C_->row(id - ne_).transpose();
}

double DenseQp::slack(int id) const {
  if (id < ne_) return sign_[id] * (A_->row(id).dot(x_) + (*a_)[id]);
  return C_->row(id - ne_).dot(x_) + (*c_)[id - ne_];
}

void DenseQp::computeStep(int id) {
  normal(id, np_);
  Hinv_np_ = np_;
  H_llt_.solveInPlace(Hinv_np_);
  const int q = static_cast<int>(active_.size());
  z_step_ = Hinv_np_;
  if (q > 0) {
    // r: the change of the active multipliers per unit multiplier of `id`; z: the primal step
    // within the active constraints' nullspace (in H's metric).
    rhs_.head(q).noalias() = N_.leftCols(q).transpose() * Hinv_np_;
    r_.head(q) = M_ldlt_.solve(rhs_.head(q));
    z_step_.noalias() -= HinvN_.leftCols(q) * r_.head(q);
  }
}

void DenseQp::dropActive(int position) {
  const int q = static_cast<int>(active_.size());
  for (int j = position; j + 1 < q; ++j) {
    N_.col(j) = N_.col(j + 1);
    HinvN_.col(j) = HinvN_.col(j + 1);
    u_[j] = u_[j + 1];
  }
  active_.erase(active_.begin() + position);
  const int p = q - 1;
  if (p > 0) {
    M_.topLeftCorner(p, p).noalias() = N_.leftCols(p).transpose() * HinvN_.leftCols(p);
    M_ldlt_.compute(M_.topLeftCorner(p, p));
  }
}

bool DenseQp::addConstraint(int id) {
  const double row_norm = id < ne_ ? A_->row(id).norm() : C_->row(id - ne_).norm();
  const double tolerance = feasibility_tolerance * std::max(1.0, row_norm);
  if (id < ne_) sign_[id] = A_->row(id).dot(x_) + (*a_)[id] > 0 ? -1.0 : 1.0;
  double u_new = 0;
  const int max_steps = 50 + 10 * (ne_ + ni_);
  for (int step = 0; step < max_steps; ++step, ++iterations_) {
    const double s = slack(id);
    computeStep(id);
    const int q = static_cast<int>(active_.size());
    const double curvature = z_step_.dot(np_);
    // Largest dual step before an active inequality's multiplier reaches zero.
    double t1 = std::numeric_limits<double>::infinity();
    int blocking = -1;
    for (int j = 0; j < q; ++j) {
      if (active_[j] < ne_ || r_[j] <= 0) continue;
      const double t = u_[j] / r_[j];
      if (t < t1) {
        t1 = t;
        blocking = j;
      }
    }
    const bool dependent = curvature <= 1e-12 * std::max(np_.dot(Hinv_np_), 1e-300);
    if (dependent) {
      if (std::abs(s) <= tolerance && id < ne_) {
        ++redundant_;  // a combination of the active equalities, and consistent with them
        return true;
      }
      if (blocking < 0) return false;
      u_.head(q) -= t1 * r_.head(q);
      u_new += t1;
      dropActive(blocking);
      continue;
    }
    const double t2 = std::max(0.0, -s / curvature);
    const double t = std::min(t1, t2);
    x_.noalias() += t * z_step_;
    u_.head(q) -= t * r_.head(q);
    u_new += t;
    if (t2 <= t1) {
      active_.push_back(id);
      N_.col(q) = np_;
      HinvN_.col(q) = Hinv_np_;
      u_[q] = u_new;
      M_.topLeftCorner(q + 1, q + 1).noalias() =
          N_.leftCols(q + 1).transpose() * HinvN_.leftCols(q + 1);
      M_ldlt_.compute(M_.topLeftCorner(q + 1, q + 1));
      return true;
    }
    dropActive(blocking);
  }
  return false;
}

DenseQp::Status DenseQp::solve(const Eigen::MatrixXd& H, const Eigen::VectorXd& g,
                               const Eigen::MatrixXd& A, const Eigen::VectorXd& a,
                               const Eigen::MatrixXd& C, const Eigen::VectorXd& c) {
  require(H.rows() == n_ && H.cols() == n_ && g.size() == n_, "DenseQp H, g",
          std::to_string(n_) + " variables",
          std::to_string(H.rows()) + " x " + std::to_string(H.cols()) + ", " +
              std::to_string(g.size()));
  require(A.rows() == ne_ && A.cols() == n_ && a.size() == ne_, "DenseQp equalities",
          std::to_string(ne_) + " x " + std::to_string(n_),
          std::to_string(A.rows()) + " x " + std::to_string(A.cols()));
  require(C.rows() == ni_ && C.cols() == n_ && c.size() == ni_, "DenseQp inequalities",
          std::to_string(ni_) + " x " + std::to_string(n_),
          std::to_string(C.rows()) + " x " + std::to_string(C.cols()));
  A_ = &A;
  a_ = &a;
  C_ = &C;
  c_ = &c;
  iterations_ = 0;
  redundant_ = 0;
  active_.clear();
  active_inequalities_.clear();
  y_.setZero();
  z_.setZero();
  H_llt_.compute(H);
  if (H_llt_.info() != Eigen::Success) return Status::NotPositiveDefinite;
  x_ = -g;
  H_llt_.solveInPlace(x_);
  if (!x_.allFinite()) return Status::NotPositiveDefinite;

  for (int i = 0; i < ne_; ++i) {
    if (!addConstraint(i)) return Status::Infeasible;
  }
  Status status = Status::MaxIterations;
  for (int round = 0; round <= 2 * ni_ + 10; ++round) {
    int worst = -1;
    double worst_value = 0;
    for (int i = 0; i < ni_; ++i) {
      const double scale = std::max(1.0, C.row(i).norm());
      const double value = (C.row(i).dot(x_) + c[i]) / scale;
      if (value < -feasibility_tolerance && value < worst_value) {
        worst_value = value;
        worst = i;
      }
    }
    if (worst < 0) {
      status = Status::Solved;
      break;
    }
    if (!addConstraint(ne_ + worst)) return Status::Infeasible;
  }
  for (std::size_t j = 0; j < active_.size(); ++j) {
    const int id = active_[j];
    if (id < ne_) {
      y_[id] = sign_[id] * u_[j];
    } else {
      z_[id - ne_] = u_[j];
      active_inequalities_.push_back(id - ne_);
    }
  }
  std::sort(active_inequalities_.begin(), active_inequalities_.end());
  return status;
}

}  // namespace heft
