#include "heft/filter/signal_window.hpp"

#include <cmath>
#include <string>

#include "heft/common/error.hpp"
#include "heft/common/format.hpp"

namespace heft::filter {

SignalWindow::SignalWindow(int nq, int nv, int forces_size, int half_width, double max_gap)
    : q(Eigen::VectorXd::Zero(nq)),
      v(Eigen::VectorXd::Zero(nv)),
      a(Eigen::VectorXd::Zero(nv)),
      tau(Eigen::VectorXd::Zero(nv)),
      forces(Eigen::VectorXd::Zero(forces_size)),
      half_width_(half_width),
      width_(2 * half_width + 1),
      max_gap_(max_gap) {
  require(half_width >= 1, "difference half width", "an integer >= 1", std::to_string(half_width));
  require(std::isfinite(max_gap) && max_gap > 0, "max sample gap", "a positive time [s]",
          formatNumber(max_gap));
  times_ = Eigen::VectorXd::Zero(width_);
  q_ = Eigen::MatrixXd::Zero(nq, width_);
  v_ = Eigen::MatrixXd::Zero(nv, width_);
  tau_ = Eigen::MatrixXd::Zero(nv, width_);
  forces_ = Eigen::MatrixXd::Zero(forces_size, width_);
  weights_ = Eigen::VectorXd::Zero(width_);
}

SignalWindow::Push SignalWindow::push(double t, const Eigen::Ref<const Eigen::VectorXd>& q_in,
                                      const Eigen::Ref<const Eigen::VectorXd>& v_in,
                                      const Eigen::Ref<const Eigen::VectorXd>& tau_in,
                                      const Eigen::Ref<const Eigen::VectorXd>& forces_in) {
  if (!std::isfinite(t) || !q_in.allFinite() || !v_in.allFinite() || !tau_in.allFinite() ||
      !forces_in.allFinite()) {
    return Push::Rejected;
  }
  if (count_ > 0) {
    const double step = t - times_[head_];
    if (!(step > 0)) return Push::Rejected;
    if (step > max_gap_) clear();  // the differences would span the gap
  }
  head_ = (head_ + 1) % width_;
  times_[head_] = t;
  q_.col(head_) = q_in;
  v_.col(head_) = v_in;
  tau_.col(head_) = tau_in;
  forces_.col(head_) = forces_in;
  if (count_ < width_) ++count_;
  if (count_ < width_) return Push::Filling;

  const int centre = (head_ + half_width_ + 1) % width_;  // h samples older than the newest
  time = times_[centre];
  q = q_.col(centre);
  // a: the least-squares slope sum_i c_i v_i, c_i = (t_i - tbar) / sum (t_j - tbar)^2. Summed by
  // parts it is the mean of the interval accelerations (v_{k+1} - v_k) / dt_k with weights
  // W_k = dt_k sum_{i > k} c_i (>= 0, sum 1: a parabola on a uniform grid). The dynamics hold
  // on each interval with the interval's mean torque, so v, tau and the forces are averaged with
  // the same weights (node i gets (W_{i-1} + W_i) / 2): a boxcar mean would weigh the window's
  // ends more than the slope does, and the two would disagree wherever the signals curve.
  const double mean_time = times_.mean();
  double spread = 0;
  for (int i = 0; i < width_; ++i) spread += (times_[i] - mean_time) * (times_[i] - mean_time);
  a.setZero();
  for (int i = 0; i < width_; ++i) a.noalias() += ((times_[i] - mean_time) / spread) * v_.col(i);
  weights_.setZero();
  double tail = 0;  // sum of c_i over the samples after interval k
  for (int k = width_ - 2; k >= 0; --k) {
    const int later = (head_ + 2 + k) % width_, earlier = (head_ + 1 + k) % width_;
    tail += (times_[later] - mean_time) / spread;
    const double w = tail * (times_[later] - times_[earlier]);
    weights_[earlier] += 0.5 * w;
    weights_[later] += 0.5 * w;
  }
  weights_ /= weights_.sum();  // 1 up to the rounding of the tail sums: a constant stays exact
  v.noalias() = v_ * weights_;
  tau.noalias() = tau_ * weights_;
  forces.noalias() = forces_ * weights_;
  return Push::Ready;
}

}  // namespace heft::filter
