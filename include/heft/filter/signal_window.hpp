#pragma once
/// \file Accelerations by finite differences, with the matching delay on every other signal
/// (online EKF paper sec. III-D): a window of the last 2h + 1 samples yields, for its centre sample
/// (h samples ago),
///  - q at the centre (unfiltered),
///  - a = the least-squares slope of v over the window's time stamps,
///    a = sum_i (t_i - tbar) v_i / sum_i (t_i - tbar)^2 (a Savitzky-Golay first derivative; for
///    h = 1 the central difference (v_k - v_{k-2}) / (t_k - t_{k-2})), which equals a weighted
///    mean of the interval accelerations (v_{k+1} - v_k) / dt_k, weights W_k = dt_k
///    sum_{i > k} (t_i - tbar) / sum_i (t_i - tbar)^2 (a parabola on a uniform grid);
///  - v, tau, contact forces averaged with those same weights (node i: (W_{i-1} + W_i) / 2), so
///    that the averaged dynamics M a + h = tau hold for any motion in the window, not only for one
///    whose acceleration is linear in time.
/// All outputs refer to the same instant, and the delay of every signal is h samples. Larger h
/// trades delay for noise.
/// Fixed memory; push() allocates nothing.
#include <Eigen/Core>

namespace heft::filter {

class SignalWindow {
 public:
  /// \param nq, nv configuration and velocity sizes; \param forces number of force channels.
  /// \param half_width h >= 1. \param max_gap a time step above this restarts the window [s].
  SignalWindow(int nq, int nv, int forces, int half_width, double max_gap);

  enum class Push { Filling, Ready, Rejected };
  /// Adds one sample. Rejected (window unchanged): non-finite time or values, or time not after
  /// the previous sample. A gap above max_gap empties the window first. Ready: the centre outputs
  /// below were updated.
  Push push(double time, const Eigen::Ref<const Eigen::VectorXd>& q,
            const Eigen::Ref<const Eigen::VectorXd>& v,
            const Eigen::Ref<const Eigen::VectorXd>& tau,
            const Eigen::Ref<const Eigen::VectorXd>& forces);
  void clear() { count_ = 0, head_ = -1; }  // head too: sums run in the same order again
  int halfWidth() const { return half_width_; }

  // ---- the centre sample, valid after push() returned Ready ----
  double time = 0;
  Eigen::VectorXd q, v, a, tau, forces;

 private:
  int half_width_, width_;
  double max_gap_;
  int head_ = -1, count_ = 0;        // ring buffer: newest column, number held
  Eigen::VectorXd times_, weights_;  // weights_: per ring column, the averaging weights
  Eigen::MatrixXd q_, v_, tau_, forces_;
};

}  // namespace heft::filter
