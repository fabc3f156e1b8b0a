#pragma once
/// \file The dense Gauss-Newton KKT system of an estimation problem, the reference every Riccati
/// step test compares with.
#include <algorithm>
#include <vector>

#include <Eigen/Dense>

#include "heft/estimation/problem.hpp"

namespace heft::test {

struct Direction {
  std::vector<Eigen::VectorXd> dx, dw;
  Eigen::VectorXd dtheta;
  /// The dense solve's own accuracy: the largest difference between the full-pivoting LU
  /// solution (the one returned) and a Householder QR one of the same system. A comparison with
  /// the dense step cannot be sharper than this.
  double solve_spread = 0;
};

/// The Gauss-Newton system of `problem` at (xs, ws, theta): min 0.5 z^T H z + g^T z s.t. C z = b
/// over z = (dx_0..dx_N, dw_0..dw_{N-1}, dtheta), from the whitened residuals' Jacobian, the gaps
/// linearized on the manifold and the stages' equality rows (StageModel::nh). constraint_J,
/// constraint_r: linearized parameter equalities constraint_J dtheta + constraint_r = 0 appended
/// (none by default).
struct DenseKkt {
  Eigen::MatrixXd H, C;
  Eigen::VectorXd g, b;
  int N = 0, ndx = 0, theta_col = 0;
  std::vector<int> w_col, nw;

  Eigen::VectorXd stack(const Direction& d) const {
    Eigen::VectorXd z(H.rows());
    for (int k = 0; k <= N; ++k) z.segment(k * ndx, ndx) = d.dx[k];
    for (int k = 0; k < N; ++k) z.segment(w_col[k], nw[k]) = d.dw[k];
    z.tail(z.size() - theta_col) = d.dtheta;
    return z;
  }
  /// The normwise backward error of a primal step: its constraint residual and the part of its
  /// gradient H z + g outside the constraints' row space, each relative to the sizes of the terms
  /// (a backward-stable solve makes both O(eps), whatever the system's conditioning).
  double backwardError(const Direction& d) const {
    const Eigen::VectorXd z = stack(d);
    const double zn = z.cwiseAbs().maxCoeff();
    const double feasibility =
        (C * z - b).cwiseAbs().maxCoeff() /
        (C.cwiseAbs().rowwise().sum().maxCoeff() * zn + b.cwiseAbs().maxCoeff());
    const Eigen::MatrixXd Z = C.fullPivLu().kernel();  // the constraints' nullspace
    const double stationarity =
        (Z.transpose() * (H * z + g)).cwiseAbs().maxCoeff() /
        (H.cwiseAbs().rowwise().sum().maxCoeff() * zn + g.cwiseAbs().maxCoeff());
    return std::max(feasibility, stationarity);
  }
};

inline DenseKkt denseKktSystem(const estimation::Problem& problem,
                               const std::vector<Eigen::VectorXd>& xs,
                               const std::vector<Eigen::VectorXd>& ws, const Eigen::VectorXd& theta,
                               const Eigen::MatrixXd& constraint_J = Eigen::MatrixXd(),
                               const Eigen::VectorXd& constraint_r = Eigen::VectorXd()) {
  const int N = problem.horizon(), ndx = problem.ndx(), np = problem.np();
  int nw_total = 0, nr_total = ndx + np;
  for (int k = 0; k < N; ++k) {
    nw_total += problem.running(k).nw();
    nr_total += problem.running(k).nr();
  }
  nr_total += problem.terminal().nr();
  const int nz = (N + 1) * ndx + nw_total + np;
  const int theta_col = (N + 1) * ndx + nw_total;
  Eigen::MatrixXd J = Eigen::MatrixXd::Zero(nr_total, nz);
  Eigen::VectorXd r = Eigen::VectorXd::Zero(nr_total);
  Eigen::MatrixXd C = Eigen::MatrixXd::Zero(N * ndx, nz);
  Eigen::VectorXd b = Eigen::VectorXd::Zero(N * ndx);
  const estimation::StateManifold& state = problem.state();
  // Arrival and parameter priors.
  const auto& arrival = problem.arrival();
  Eigen::VectorXd t(ndx);
  Eigen::MatrixXd J0(ndx, ndx), J1(ndx, ndx);
  state.difference(arrival.x_mean, xs[0], t);
  state.differenceJacobians(arrival.x_mean, xs[0], J0, J1);
  r.head(ndx) = arrival.x_sqrt_info * t;
  J.block(0, 0, ndx, ndx) = arrival.x_sqrt_info * J1;
  r.segment(ndx, np) = arrival.theta_sqrt_info * (theta - arrival.theta_mean);
  J.block(ndx, theta_col, np, np) = arrival.theta_sqrt_info;
  int row = ndx + np, wcol = (N + 1) * ndx;
  for (int k = 0; k <= N; ++k) {
    const estimation::StageModel& stage = k < N ? problem.running(k) : problem.terminal();
    auto data = stage.createData();
    const Eigen::VectorXd w = k < N ? ws[k] : Eigen::VectorXd();
    stage.calc(*data, xs[k], w, theta);
    stage.calcDiff(*data, xs[k], w, theta);
    const int nr = stage.nr(), nw = stage.nw();
    r.segment(row, nr) = data->r;
    J.block(row, k * ndx, nr, ndx) = data->R_x;
    if (nw > 0) J.block(row, wcol, nr, nw) = data->R_w;
    J.block(row, theta_col, nr, np) = data->R_theta;
    row += nr;
    if (k < N) {
      // The gap difference(x_{k+1}, f_k) linearized on the manifold:
      // D0 dx_{k+1} + D1 (F_x dx_k + F_w dw_k + F_theta dtheta) = -gap.
      Eigen::VectorXd gap(ndx);
      Eigen::MatrixXd D0(ndx, ndx), D1(ndx, ndx);
      state.difference(xs[k + 1], data->xnext, gap);
      state.differenceJacobians(xs[k + 1], data->xnext, D0, D1);
      C.block(k * ndx, (k + 1) * ndx, ndx, ndx) = D0;
      C.block(k * ndx, k * ndx, ndx, ndx) = D1 * data->F_x;
      C.block(k * ndx, wcol, ndx, nw) = D1 * data->F_w;
      C.block(k * ndx, theta_col, ndx, np) = D1 * data->F_theta;
      b.segment(k * ndx, ndx) = -gap;
      if (stage.nh() > 0) {  // H_x dx_k + H_w dw_k + H_theta dtheta = -h
        const int nh = stage.nh(), first = static_cast<int>(C.rows());
        C.conservativeResize(first + nh, nz);
        b.conservativeResize(first + nh);
        C.bottomRows(nh).setZero();
        C.block(first, k * ndx, nh, ndx) = data->H_x;
        C.block(first, wcol, nh, nw) = data->H_w;
        C.block(first, theta_col, nh, np) = data->H_theta;
        b.tail(nh) = -data->h;
      }
      wcol += nw;
    }
  }
  if (constraint_r.size() > 0) {
    const int nk = static_cast<int>(constraint_r.size()), first = static_cast<int>(C.rows());
    C.conservativeResize(first + nk, nz);
    b.conservativeResize(first + nk);
    C.bottomRows(nk).setZero();
    C.bottomRows(nk).rightCols(np) = constraint_J;
    b.tail(nk) = -constraint_r;
  }
  DenseKkt kkt;
  kkt.H = J.transpose() * J;
  kkt.g = J.transpose() * r;
  kkt.C = C;
  kkt.b = b;
  kkt.N = N;
  kkt.ndx = ndx;
  kkt.theta_col = theta_col;
  wcol = (N + 1) * ndx;
  for (int k = 0; k < N; ++k) {
    kkt.w_col.push_back(wcol);
    kkt.nw.push_back(problem.running(k).nw());
    wcol += problem.running(k).nw();
  }
  return kkt;
}

/// The Gauss-Newton step of `problem` at (xs, ws, theta) from the dense KKT system of
/// denseKktSystem (arguments as there), solved by a full-pivoting LU.
inline Direction denseKktDirection(const estimation::Problem& problem,
                                   const std::vector<Eigen::VectorXd>& xs,
                                   const std::vector<Eigen::VectorXd>& ws,
                                   const Eigen::VectorXd& theta,
                                   const Eigen::MatrixXd& constraint_J = Eigen::MatrixXd(),
                                   const Eigen::VectorXd& constraint_r = Eigen::VectorXd()) {
  const DenseKkt kkt = denseKktSystem(problem, xs, ws, theta, constraint_J, constraint_r);
  const int nz = static_cast<int>(kkt.H.rows()), nc = static_cast<int>(kkt.C.rows());
  Eigen::MatrixXd K = Eigen::MatrixXd::Zero(nz + nc, nz + nc);
  K.topLeftCorner(nz, nz) = kkt.H;
  K.topRightCorner(nz, nc) = kkt.C.transpose();
  K.bottomLeftCorner(nc, nz) = kkt.C;
  Eigen::VectorXd rhs(nz + nc);
  rhs.head(nz) = -kkt.g;
  rhs.tail(nc) = kkt.b;
  const Eigen::VectorXd z = K.fullPivLu().solve(rhs);
  Direction d;
  d.solve_spread = (K.colPivHouseholderQr().solve(rhs) - z).cwiseAbs().maxCoeff();
  for (int k = 0; k <= kkt.N; ++k) d.dx.push_back(z.segment(k * kkt.ndx, kkt.ndx));
  for (int k = 0; k < kkt.N; ++k) d.dw.push_back(z.segment(kkt.w_col[k], kkt.nw[k]));
  d.dtheta = z.segment(kkt.theta_col, nz - kkt.theta_col);
  return d;
}

}  // namespace heft::test
