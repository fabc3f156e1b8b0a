#pragma once
/// \file Resampling onto a uniform grid and Savitzky-Golay smoothing / differentiation.
#include <Eigen/Core>
#include <string>

#include "heft/io/log.hpp"

namespace heft::io {

// ---- grids and interpolation -------------------------------------------------------------------
/// start, start + 1/rate, ... up to `end` (included when it falls on the grid within 1e-9 periods).
/// Throws InputError unless rate > 0 and end >= start are finite.
Eigen::VectorXd uniformGrid(double start, double end, double rate);

/// Index of the sample of `time` (strictly increasing, non-empty) nearest to t; ties go to the
/// later sample.
int nearestSample(const Eigen::VectorXd& time, double t);

/// Linear interpolation of the rows of `values` (N x m, sampled at strictly increasing `time`) at
/// `query` (Q). Every query must lie in [time(0), time(N-1)] (no extrapolation): InputError
/// otherwise, naming `field` and the query row.
Eigen::MatrixXd interpolateLinear(const Eigen::VectorXd& time, const Eigen::MatrixXd& values,
                                  const Eigen::VectorXd& query,
                                  const std::string& field = "values");

/// Spherical linear interpolation of unit quaternions (N x 4, [qx qy qz qw]) along the shorter arc
/// (q and -q are the same rotation). Output rows are unit quaternions. Same range rule.
Eigen::MatrixXd interpolateQuaternions(const Eigen::VectorXd& time,
                                       const Eigen::MatrixXd& quaternions,
                                       const Eigen::VectorXd& query,
                                       const std::string& field = "orientation");

/// Flags hold their value until the next sample (zero-order hold). Same range rule.
FlagMatrix interpolateFlags(const Eigen::VectorXd& time, const FlagMatrix& flags,
                            const Eigen::VectorXd& query, const std::string& field = "flags");

/// Checks that `time` is uniform, |t(i+1) - t(i) - dt| <= relative_tolerance * dt for every i with
/// dt = (t(N-1) - t(0)) / (N - 1), and returns dt. InputError names `field` and the first bad row.
double uniformPeriod(const Eigen::VectorXd& time, const std::string& field,
                     double relative_tolerance = 1e-6);

struct ResampleOptions {
  /// Rate of the common grid [Hz], > 0.
  double rate = 0;
  /// A group keeps no sample on grid points that fall inside one of its gaps longer than this [s]
  /// (mocap dropouts are not bridged). 0 means 2.5 times the group's median sample period.
  double max_gap = 0;
  void validate() const;
};

/// Resamples every time series of `log` onto the grid uniformGrid(joints.time(0), joints.time(N-1),
/// rate): each group keeps the grid points inside its own time span and outside its long gaps.
/// Vectors are interpolated linearly, quaternions by slerp, flags by zero-order hold. Truth bodies,
/// estimates and metadata are copied. The log must be valid (validateLog) and hold joints.
Log resample(const Log& log, const ResampleOptions& options);

// ---- Savitzky-Golay ----------------------------------------------------------------------------
struct SavitzkyGolayOptions {
  /// Number of samples in the fitting window: odd, >= 3, > order.
  int window = 21;
  /// Degree of the local least-squares polynomial: 0 <= order < window. Must be >= the derivative.
  int order = 3;
  void validate() const;
};

/// Savitzky-Golay filter for uniformly sampled signals: each output sample is the `derivative`-th
/// derivative (0, 1, 2) at that sample of the degree-`order` polynomial fitted by least squares to
/// the `window` samples around it. At the edges (the first and last window/2 samples) the window
/// cannot be centred: the polynomial fitted to the first (last) `window` samples is evaluated at
/// the sample's own position (scipy's mode="interp"). So every output, edges included, is exact for
/// polynomials of degree <= order; the edges are noisier than the centre.
class SavitzkyGolayFilter {
 public:
  /// `dt` is the sample period [s] > 0. Throws InputError on bad options or derivative > order.
  SavitzkyGolayFilter(const SavitzkyGolayOptions& options, int derivative, double dt);

  /// x: N x m samples (rows are time), N >= window. Returns N x m, in units of x / s^derivative.
  Eigen::MatrixXd apply(const Eigen::MatrixXd& x) const;

  int window() const { return window_; }
  int derivative() const { return derivative_; }

 private:
  int window_;
  int derivative_;
  /// weights_(p, k): weight of window sample k for the output at window position p (0..window-1),
  /// already divided by dt^derivative. Row window/2 is the centred filter.
  Eigen::MatrixXd weights_;
};

/// Convenience: SavitzkyGolayFilter(options, derivative, uniformPeriod(time, field)).apply(x).
Eigen::MatrixXd savitzkyGolay(const Eigen::VectorXd& time, const Eigen::MatrixXd& x, int derivative,
                              const SavitzkyGolayOptions& options,
                              const std::string& field = "values");

}  // namespace heft::io
