#include "heft/identify/least_squares.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <iomanip>
#include <limits>
#include <sstream>
#include <vector>

#include <Eigen/QR>
#include <Eigen/SVD>

#include "heft/common/error.hpp"
#include "heft/common/format.hpp"

namespace heft::identify {
namespace {

std::string num(double x, int precision = 4) { return formatNumber(x, precision); }

Eigen::VectorXd channelRms(const Eigen::VectorXd& r, const Eigen::VectorXi& channel, int nc) {
  Eigen::VectorXd sum = Eigen::VectorXd::Zero(nc);
  Eigen::VectorXd count = Eigen::VectorXd::Zero(nc);
  for (Eigen::Index i = 0; i < r.size(); ++i) {
    sum[channel[i]] += r[i] * r[i];
    count[channel[i]] += 1;
  }
  for (int c = 0; c < nc; ++c) sum[c] = count[c] > 0 ? std::sqrt(sum[c] / count[c]) : 0.0;
  return sum;
}

struct Factorization {
  Eigen::VectorXd scale;     // D
  Eigen::VectorXd singular;  // of the equilibrated system
  Eigen::MatrixXd U, V;      // of R P^T (n x n)
  Eigen::VectorXd qty;       // first n entries of Q^T rhs
  int rank = 0;
  BaseParameters base;
};

// Equilibrated QR + SVD of R P^T; qty = head(Q^T rhs).
Factorization factorize(const Eigen::MatrixXd& Phi, const Eigen::VectorXd& rhs, double tol,
                        const std::vector<std::string>& names) {
  Factorization f;
  const int n = static_cast<int>(Phi.cols());
  // column norms, floored: a column that is zero up to rounding (e.g. a first moment along the
  // joint axis, computed as a difference of products) must not be blown up to norm 1
  f.scale = Phi.colwise().norm().transpose();
  const double largest = f.scale.size() > 0 ? f.scale.maxCoeff() : 0.0;
  const double floor = largest > 0 ? 1e-9 * largest : 1.0;
  for (int j = 0; j < n; ++j) f.scale[j] = std::max(f.scale[j], floor);
  const Eigen::MatrixXd Phis = Phi * f.scale.cwiseInverse().asDiagonal();
  Eigen::ColPivHouseholderQR<Eigen::MatrixXd> qr(Phis);
  const int m = static_cast<int>(Phi.rows());
  const int k = std::min(m, n);
  Eigen::MatrixXd R = Eigen::MatrixXd::Zero(n, n);
  R.topRows(k) = qr.matrixR().topRows(k);
  R = R.triangularView<Eigen::Upper>().toDenseMatrix();
  const Eigen::MatrixXd RPt = R * qr.colsPermutation().transpose();
  Eigen::JacobiSVD<Eigen::MatrixXd> svd(RPt, Eigen::ComputeFullU | Eigen::ComputeFullV);
  f.singular = svd.singularValues();
  f.U = svd.matrixU();
  f.V = svd.matrixV();
  const double s1 = f.singular.size() > 0 ? f.singular[0] : 0.0;
  f.rank = 0;
  for (int i = 0; i < f.singular.size(); ++i) {
    if (s1 > 0 && f.singular[i] > tol * s1) ++f.rank;
  }
  Eigen::VectorXd qtb = rhs;
  qtb.applyOnTheLeft(qr.householderQ().adjoint());
  f.qty = Eigen::VectorXd::Zero(n);
  f.qty.head(k) = qtb.head(k);

  // base parameters from the pivoted QR: independent = first r pivots
  BaseParameters& b = f.base;
  const int r = f.rank;
  b.rank = r;
  b.scale = f.scale;
  b.range = f.V.leftCols(r);
  b.nullspace = f.V.rightCols(n - r);
  const auto& perm = qr.colsPermutation().indices();
  for (int i = 0; i < r; ++i) b.independent.push_back(perm[i]);
  b.K = Eigen::MatrixXd::Zero(r, n);
  if (r > 0) {
    const Eigen::MatrixXd R11 = R.topLeftCorner(r, r);
    const Eigen::MatrixXd R12 = R.block(0, r, r, n - r);
    const Eigen::MatrixXd C = R11.triangularView<Eigen::Upper>().solve(R12);  // scaled
    for (int i = 0; i < r; ++i) {
      const int pi = perm[i];
      b.K(i, pi) = 1.0;
      for (int j = 0; j < n - r; ++j) {
        const int pj = perm[r + j];
        // beta_s,i = xs_pi + C_ij xs_pj  ->  beta_i = x_pi + C_ij D_pj / D_pi x_pj
        b.K(i, pj) = C(i, j) * f.scale[pj] / f.scale[pi];
      }
    }
    for (int i = 0; i < r; ++i) {
      std::ostringstream e;
      e << names[perm[i]];
      for (int j = 0; j < n; ++j) {
        if (j == perm[i] || std::abs(b.K(i, j)) < 1e-6) continue;
        e << (b.K(i, j) < 0 ? " - " : " + ") << num(std::abs(b.K(i, j))) << " " << names[j];
      }
      b.expressions.push_back(e.str());
    }
  }
  return f;
}

}  // namespace

std::string toString(Status status) {
  switch (status) {
    case Status::NotRun:
      return "not run";
    case Status::Converged:
      return "converged";
    case Status::MaxIterations:
      return "max iterations";
    case Status::Failed:
      return "failed";
  }
  return "?";
}

void LeastSquaresOptions::validate() const {
  require(std::isfinite(rank_tolerance) && rank_tolerance > 0 && rank_tolerance < 1,
          "rank_tolerance", "a value in (0, 1)", num(rank_tolerance));
  require(std::isfinite(loss_scale) && loss_scale >= 0, "loss_scale",
          "a finite value >= 0 (0: the loss's default)", num(loss_scale));
  require(robust_iterations >= 1, "robust_iterations", ">= 1", std::to_string(robust_iterations));
}

namespace {

// Iteratively reweighted least squares for options.loss: from the fit in `res`, rows weighted by
// base_weight times sqrt(rho'(e) / e) (the solve squares the row weights), e the residual over
// its channel's robust scale, until the estimate settles.
template <class Solve>
void reweightRobustly(const LinearSystem& system, const LeastSquaresOptions& options,
                      const Eigen::VectorXd& base_weight, Solve& solveWeighted,
                      LeastSquaresResult& res) {
  const int m = system.rows(), nc = static_cast<int>(system.channel_names.size());
  const double k = options.loss_scale > 0 ? options.loss_scale : defaultLossScale(options.loss);
  Eigen::VectorXd w = base_weight;
  for (int pass = 0; pass < options.robust_iterations; ++pass) {
    const Eigen::VectorXd r = system.y - system.Phi * res.x;
    // each channel's robust scale: 1.4826 median |r| (floored: an exact fit has no spread)
    Eigen::VectorXd scale(nc);
    for (int c = 0; c < nc; ++c) {
      std::vector<double> a;
      for (int i = 0; i < m; ++i)
        if (system.channel[i] == c) a.push_back(std::abs(r[i]));
      if (a.empty()) {
        scale[c] = 1;
        continue;
      }
      std::nth_element(a.begin(), a.begin() + a.size() / 2, a.end());
      scale[c] = std::max(1.4826 * a[a.size() / 2], 1e-12);
    }
    res.downweighted_rows = 0;
    for (int i = 0; i < m; ++i) {
      const double e = r[i] / scale[system.channel[i]];
      double slope = 1;
      const double robust = robustResidual(options.loss, k, e, &slope);
      // rho'(e) / e = robust * slope / e (the map's chain rule); 1 at e = 0
      const double weight = e != 0 ? robust * slope / e : 1.0;
      res.downweighted_rows += weight < 0.5;
      w[i] = base_weight[i] * std::sqrt(weight);
    }
    const Eigen::VectorXd before = res.x;
    solveWeighted(w);
    res.robust_passes = pass + 1;
    if ((res.x - before).norm() <= 1e-9 * std::max(1.0, res.x.norm())) break;
  }
  if (res.downweighted_rows > 0)
    res.warnings.push_back("robust loss (" + toString(options.loss) +
                           "): " + std::to_string(res.downweighted_rows) + " of " +
                           std::to_string(m) + " rows weighted below one half after " +
                           std::to_string(res.robust_passes) + " reweighting pass(es)");
}

}  // namespace

LeastSquaresResult solveLeastSquares(const LinearSystem& system, const Eigen::VectorXd& x0,
                                     const LeastSquaresOptions& options) {
  options.validate();
  const auto start = std::chrono::steady_clock::now();
  const int n = static_cast<int>(system.Phi.cols());
  const int m = static_cast<int>(system.Phi.rows());
  const int nc = static_cast<int>(system.channel_names.size());
  require(system.y.size() == m && system.channel.size() == m, "linear system", "rows of Phi",
          "inconsistent sizes");
  require(x0.size() == n, "x0", "size " + std::to_string(n), "size " + std::to_string(x0.size()));
  require(system.Phi.allFinite() && system.y.allFinite(), "linear system", "finite values",
          "NaN or Inf");
  LeastSquaresResult res;
  res.names = system.names;
  res.x0 = x0;
  res.x = x0;
  res.rows = m;
  res.channel_names = system.channel_names;
  res.channel_sigma = Eigen::VectorXd::Ones(nc);
  const Eigen::VectorXd r0 = system.y - system.Phi * x0;
  res.channel_rms_before = channelRms(r0, system.channel, nc);

  auto solveWeighted = [&](const Eigen::VectorXd& w) {
    const Eigen::MatrixXd Phiw = w.asDiagonal() * system.Phi;
    const Eigen::VectorXd rw = w.asDiagonal() * r0;
    Factorization f = factorize(Phiw, rw, options.rank_tolerance, system.names);
    const int r = f.rank;
    Eigen::VectorXd dxs = Eigen::VectorXd::Zero(n);
    Eigen::MatrixXd covs = Eigen::MatrixXd::Zero(n, n);
    if (r > 0) {
      const Eigen::VectorXd sinv = f.singular.head(r).cwiseInverse();
      dxs = f.V.leftCols(r) * (sinv.asDiagonal() * (f.U.leftCols(r).transpose() * f.qty));
      covs = f.V.leftCols(r) * sinv.cwiseAbs2().asDiagonal() * f.V.leftCols(r).transpose();
    }
    const Eigen::VectorXd dinv = f.scale.cwiseInverse();
    res.x = x0 + dinv.asDiagonal() * dxs;
    const Eigen::VectorXd rw_after = rw - Phiw * (res.x - x0);
    res.sigma2 = m > r ? rw_after.squaredNorm() / (m - r) : 0.0;
    res.covariance = res.sigma2 * dinv.asDiagonal() * covs * dinv.asDiagonal();
    res.base = f.base;
    res.condition_number = r > 0 ? f.singular[0] / f.singular[r - 1] : 0.0;
    res.full_condition_number = (r == n && r > 0) ? f.singular[0] / f.singular[n - 1]
                                                  : std::numeric_limits<double>::infinity();
  };

  solveWeighted(Eigen::VectorXd::Ones(m));
  if (options.weighted && res.base.rank > 0) {
    const Eigen::VectorXd rms = channelRms(system.y - system.Phi * res.x, system.channel, nc);
    const double floor = std::max(1e-12, 1e-3 * rms.maxCoeff());
    Eigen::VectorXd w(m);
    for (int i = 0; i < m; ++i) w[i] = 1.0 / std::max(rms[system.channel[i]], floor);
    for (int c = 0; c < nc; ++c) res.channel_sigma[c] = std::max(rms[c], floor);
    solveWeighted(w);
  }
  if (options.loss != RobustLoss::None && res.base.rank > 0) {
    Eigen::VectorXd base_weight(m);  // the rows' weights so far: 1 / sigma_c (1 for OLS)
    for (int i = 0; i < m; ++i) base_weight[i] = 1.0 / res.channel_sigma[system.channel[i]];
    reweightRobustly(system, options, base_weight, solveWeighted, res);
  }
  res.stddev = res.covariance.diagonal().cwiseMax(0.0).cwiseSqrt();
  res.channel_rms_after = channelRms(system.y - system.Phi * res.x, system.channel, nc);
  if (res.base.rank == 0) {
    res.status = Status::Failed;
    res.message = "the data see no parameter direction (regressor is zero): estimate = nominal";
  } else {
    res.status = Status::Converged;
  }
  if (res.base.rank < n) {
    res.warnings.push_back(std::to_string(n - res.base.rank) + " of " + std::to_string(n) +
                           " parameter directions are not identifiable from these data: they "
                           "stay at the nominal values");
  }
  if (!res.x.allFinite() || !res.covariance.allFinite()) {
    res.status = Status::Failed;
    res.message = "non-finite solution: estimate = nominal";
    res.x = x0;
    res.covariance.setZero(n, n);
    res.stddev.setZero(n);
  }
  res.time_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return res;
}

std::string LeastSquaresResult::report() const {
  std::ostringstream s;
  s << "status      " << toString(status) << (message.empty() ? "" : " (" + message + ")") << "\n"
    << "rows        " << rows << ", parameters " << x.size() << ", rank " << base.rank << "\n"
    << "condition   " << num(condition_number) << " (identifiable part), "
    << num(full_condition_number) << " (all)\n"
    << "residual    per channel RMS before -> after:\n";
  for (std::size_t c = 0; c < channel_names.size(); ++c) {
    s << "  " << std::left << std::setw(24) << channel_names[c] << num(channel_rms_before[c])
      << " -> " << num(channel_rms_after[c]) << "\n";
  }
  s << "estimates   name, nominal, estimate, std:\n";
  for (Eigen::Index i = 0; i < x.size(); ++i) {
    s << "  " << std::left << std::setw(28) << names[i] << num(x0[i], 5) << "  " << num(x[i], 5)
      << "  " << num(stddev[i], 3) << "\n";
  }
  s << "base parameters (" << base.rank << "):\n";
  for (const auto& e : base.expressions) s << "  " << e << "\n";
  for (const auto& w : warnings) s << "warning: " << w << "\n";
  s << "time        " << num(time_s, 3) << " s\n";
  return s.str();
}

BaseParameterError baseParameterError(const LinearSystem& system, const BaseParameters& base,
                                      const Eigen::VectorXd& x, const Eigen::VectorXd& x_true,
                                      double floor) {
  BaseParameterError e;
  const Eigen::VectorXd bt = base.K * x_true;
  const Eigen::VectorXd be = base.K * x;
  e.norm = (be - bt).norm() / std::max(bt.norm(), 1e-300);
  const double scale = bt.cwiseAbs().maxCoeff();
  e.per_parameter.resize(bt.size());
  for (Eigen::Index i = 0; i < bt.size(); ++i) {
    e.per_parameter[i] = std::abs(be[i] - bt[i]) / std::max(std::abs(bt[i]), floor * scale);
    if (e.per_parameter[i] > e.max) {
      e.max = e.per_parameter[i];
      e.argmax = static_cast<int>(i);
    }
  }
  const Eigen::VectorXd d = base.scale;
  const Eigen::VectorXd pt = base.range.transpose() * (d.asDiagonal() * x_true);
  const Eigen::VectorXd pe = base.range.transpose() * (d.asDiagonal() * x);
  e.projected = (pe - pt).norm() / std::max(pt.norm(), 1e-300);
  (void)system;
  return e;
}

}  // namespace heft::identify
