#pragma once
/// \file Methods 1 and 2: linear least squares Phi x = y (torque or energy rows), ordinary or
/// weighted, with the base parameters (the combinations the data can see) from a rank-revealing
/// factorization and the covariance on the identifiable subspace (docs/identify.md).
///
/// Columns are equilibrated (divided by their norms D) before factorizing, so the rank and the
/// base parameters do not depend on the units of the entries. With Phi_s = Phi D^-1 = Q R P^T
/// (column-pivoting Householder QR) and R P^T = U S V^T:
///  - rank r: singular values s_i > rank_tolerance * s_1;
///  - estimate: x = x0 + D^-1 V_r S_r^-1 U_r^T Q^T (y - Phi x0), the least-squares solution
///    closest to the nominal x0 (unidentifiable directions stay at the nominal);
///  - covariance: sigma^2 D^-1 V_r S_r^-2 V_r^T D^-1 (weighted: rows scaled by 1/sigma_c first);
///  - base parameters: beta = K x with K = P [I, R11^-1 R12] P^T-style rows for the r
///    independent columns (the classical QR reduction), expressed in the independent entries'
///    units.
#include <string>
#include <vector>

#include <Eigen/Core>

#include "heft/common/robust_loss.hpp"
#include "heft/identify/problem.hpp"

namespace heft::identify {

/// Termination of a solve (shared by every method).
enum class Status {
  NotRun,
  Converged,      ///< a solution within tolerances
  MaxIterations,  ///< stopped at the iteration limit; the estimate is the last consistent one
  Failed,         ///< no trustworthy answer (message says why); the estimate is the last good one
};
std::string toString(Status status);

struct LeastSquaresOptions {
  /// Weighted least squares: rows of channel c weighted by 1 / sigma_c^2 with sigma_c the RMS
  /// residual of channel c after an ordinary fit (one refinement).
  bool weighted = false;
  /// Relative singular value below which a direction counts as unidentifiable, in (0, 1).
  double rank_tolerance = 1e-6;
  /// A robust loss by iteratively reweighted least squares: after the (weighted) fit, each row's
  /// weight is multiplied by rho'(e) / e of its standardized residual e = r / s_c, with s_c the
  /// robust scale of its channel (1.4826 times the median absolute residual), and the system is
  /// solved again, until the estimate moves less than 1e-9 of its size or `robust_iterations`
  /// passes. The covariance is the last weighted solve's.
  RobustLoss loss = RobustLoss::None;
  double loss_scale = 0;  ///< k in units of s_c; 0: defaultLossScale(loss)
  int robust_iterations = 30;
  /// \throws InputError naming the field.
  void validate() const;
};

/// The identifiable combinations of the linear vector x.
struct BaseParameters {
  int rank = 0;
  std::vector<int> independent;  ///< r entries of x kept as base parameters (QR pivots)
  Eigen::MatrixXd K;             ///< r x n: beta = K x
  Eigen::VectorXd scale;         ///< n: column norms D (equilibrated x_s = D x)
  Eigen::MatrixXd range;         ///< n x r: orthonormal basis V_r of the identifiable x_s
  Eigen::MatrixXd nullspace;     ///< n x (n - r): orthonormal basis of the unseen x_s directions
  /// One line per base parameter: "m[link3] + 0.42 hx[link4] - ..." (coefficients >= 1e-6).
  std::vector<std::string> expressions;
};

struct LeastSquaresResult {
  Status status = Status::NotRun;
  std::string message;
  std::vector<std::string> names;  ///< of x
  Eigen::VectorXd x;               ///< estimate (linear layout)
  Eigen::VectorXd x0;              ///< nominal the solution started from
  Eigen::MatrixXd covariance;      ///< n x n, on the identifiable subspace (zero on the null space)
  Eigen::VectorXd stddev;          ///< sqrt(diag(covariance))
  BaseParameters base;
  double condition_number = 0;  ///< s_1 / s_r of the equilibrated regressor (identifiable part)
  double full_condition_number = 0;  ///< s_1 / s_n (infinite when rank deficient)
  double sigma2 = 0;                 ///< residual variance (weighted: of the weighted residual)
  std::vector<std::string> channel_names;
  Eigen::VectorXd channel_rms_before;  ///< RMS residual per channel at x0
  Eigen::VectorXd channel_rms_after;   ///< at x
  Eigen::VectorXd channel_sigma;       ///< weights used (1 for OLS)
  /// With a robust loss: the passes run and the rows whose final weight is below one half.
  int robust_passes = 0, downweighted_rows = 0;
  int rows = 0;
  double time_s = 0;
  std::vector<std::string> warnings;
  /// Human-readable: status, rank, condition, base parameters, residuals, warnings.
  std::string report() const;
};

/// Solves Phi x = y near x0 (see the file comment). Never returns NaN: a system without any
/// identifiable direction returns x0 with status Failed and says so.
/// \throws InputError on inconsistent sizes or bad options.
LeastSquaresResult solveLeastSquares(const LinearSystem& system, const Eigen::VectorXd& x0,
                                     const LeastSquaresOptions& options = {});

/// Relative errors of the identifiable combinations: with beta = K x (base parameters),
/// `norm` = |K(x - x_true)| / |K x_true| and `max` = max_i |beta_i - beta*_i| / max(|beta*_i|,
/// floor * max_j |beta*_j|) per base parameter. Also the projector form
/// |P_r D (x - x_true)| / |P_r D x_true| on the equilibrated identifiable subspace.
struct BaseParameterError {
  double norm = 0;
  double max = 0;
  int argmax = -1;
  double projected = 0;
  Eigen::VectorXd per_parameter;
};
BaseParameterError baseParameterError(const LinearSystem& system, const BaseParameters& base,
                                      const Eigen::VectorXd& x, const Eigen::VectorXd& x_true,
                                      double floor = 1e-3);

}  // namespace heft::identify
