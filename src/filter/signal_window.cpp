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
  const double mean_time = times_.mean();
  time = times_[centre];
  q = q_.col(centre);
  v = v_.rowwise().sum() / width_;
  tau = tau_.rowwise().sum() / width_;
  forces = forces_.rowwise().sum() / width_;
  double spread = 0;
  a.setZero();
  for (int i = 0; i < width_; ++i) {
    const double dt = times_[i] - mean_time;
    spread += dt * dt;
    a.noalias() += dt * v_.col(i);
  }
  a /= spread;
  return Push::Ready;
}

}  // namespace heft::filter
