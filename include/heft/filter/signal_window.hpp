#pragma once
/// \file Accelerations by finite differences, with the matching delay on every other signal
/// (online EKF paper sec. III-D): a window of the last 2h + 1 samples yields, for its centre sample
/// (h samples ago),
///  - q at the centre (unfiltered),
///  - v, tau, contact forces averaged over the window,
///  - a = the least-squares slope of v over the window's time stamps,
///    a = sum_i (t_i - tbar) v_i / sum_i (t_i - tbar)^2 (a Savitzky-Golay first derivative; for
///    h = 1 the central difference (v_k - v_{k-2}) / (t_k - t_{k-2})).
/// All outputs therefore refer to the same instant: the window mean of v is what the slope
/// differentiates, and the delay of every signal is h samples. Larger h trades delay for noise.
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
  int head_ = -1, count_ = 0;  // ring buffer: newest column, number held
  Eigen::VectorXd times_;
  Eigen::MatrixXd q_, v_, tau_, forces_;
};

}  // namespace heft::filter
