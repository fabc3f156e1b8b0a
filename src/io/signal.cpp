#include "heft/io/signal.hpp"

#include <Eigen/Geometry>
#include <Eigen/QR>
#include <algorithm>
#include <cmath>
#include <sstream>
#include <vector>

#include "heft/common/error.hpp"
#include "heft/common/format.hpp"

namespace heft::io {

namespace {

std::string num(double x) { return formatNumber(x, 10); }

/// Index i with time(i) <= t <= time(i+1) (i = N-2 at the last sample); t must be inside.
Eigen::Index bracket(const Eigen::VectorXd& time, double t) {
  const double* begin = time.data();
  const double* end = begin + time.size();
  Eigen::Index i = std::upper_bound(begin, end, t) - begin - 1;
  return std::clamp<Eigen::Index>(i, 0, std::max<Eigen::Index>(time.size() - 2, 0));
}

void checkQueries(const Eigen::VectorXd& time, Eigen::Index rows, const Eigen::VectorXd& query,
                  const std::string& field) {
  if (time.size() == 0) throw InputError(field + ": cannot interpolate an empty series");
  if (rows != time.size()) {
    throw InputError(field + ": expected " + std::to_string(time.size()) +
                     " rows (one per time stamp), got " + std::to_string(rows));
  }
  for (Eigen::Index q = 0; q < query.size(); ++q) {
    if (!(query(q) >= time(0) && query(q) <= time(time.size() - 1))) {
      throw InputError(field + ": query row " + std::to_string(q) + " at " + num(query(q)) +
                       " s is outside the samples' span [" + num(time(0)) + ", " +
                       num(time(time.size() - 1)) + "] s (no extrapolation)");
    }
  }
}

double medianPeriod(const Eigen::VectorXd& time) {
  if (time.size() < 2) return 0;
  std::vector<double> periods(time.size() - 1);
  for (Eigen::Index i = 0; i + 1 < time.size(); ++i) periods[i] = time(i + 1) - time(i);
  std::nth_element(periods.begin(), periods.begin() + periods.size() / 2, periods.end());
  return periods[periods.size() / 2];
}

/// Grid points inside the group's span and outside its gaps longer than max_gap (0: automatic).
/// Throws when none is left: an empty group would only fail later, far from the cause.
Eigen::VectorXd selectGrid(const Eigen::VectorXd& grid, const Eigen::VectorXd& time, double max_gap,
                           const std::string& field) {
  const double gap_limit = max_gap > 0 ? max_gap : 2.5 * medianPeriod(time);
  std::vector<double> kept;
  for (Eigen::Index g = 0; g < grid.size(); ++g) {
    const double t = grid(g);
    if (time.size() == 0 || t < time(0) || t > time(time.size() - 1)) continue;
    if (time.size() >= 2) {
      const Eigen::Index i = bracket(time, t);
      const bool inside = t > time(i) && t < time(i + 1);
      if (inside && time(i + 1) - time(i) > gap_limit) continue;
    }
    kept.push_back(t);
  }
  if (kept.empty()) {
    throw InputError(field + ": no point of the resampling grid [" + num(grid(0)) + ", " +
                     num(grid(grid.size() - 1)) + "] s falls inside this group's samples");
  }
  return Eigen::Map<Eigen::VectorXd>(kept.data(), static_cast<Eigen::Index>(kept.size()));
}

Eigen::MatrixXd interpolatePose(const Eigen::VectorXd& time, const Eigen::MatrixXd& pose,
                                const Eigen::VectorXd& query, const std::string& field) {
  if (pose.size() == 0) return Eigen::MatrixXd();
  Eigen::MatrixXd out(query.size(), 7);
  out.leftCols(3) = interpolateLinear(time, pose.leftCols(3), query, field);
  out.rightCols(4) = interpolateQuaternions(time, pose.rightCols(4), query, field);
  return out;
}

Eigen::MatrixXd interpolateOptional(const Eigen::VectorXd& time, const Eigen::MatrixXd& values,
                                    const Eigen::VectorXd& query, const std::string& field) {
  return values.size() == 0 ? Eigen::MatrixXd() : interpolateLinear(time, values, query, field);
}

}  // namespace

int nearestSample(const Eigen::VectorXd& time, double t) {
  const double* begin = time.data();
  const double* end = begin + time.size();
  const double* it = std::lower_bound(begin, end, t);
  if (it == end) return static_cast<int>(time.size()) - 1;
  if (it != begin && t - *(it - 1) < *it - t) --it;
  return static_cast<int>(it - begin);
}

Eigen::VectorXd uniformGrid(double start, double end, double rate) {
  require(std::isfinite(rate) && rate > 0, "grid rate [Hz]", "> 0", num(rate));
  require(std::isfinite(start) && std::isfinite(end) && end >= start, "grid span [s]",
          "finite start <= end", "[" + num(start) + ", " + num(end) + "]");
  const double period = 1.0 / rate;
  // samples as start + k / rate (not accumulated) so the grid does not drift
  const auto count = static_cast<Eigen::Index>(std::floor((end - start) / period + 1e-9)) + 1;
  Eigen::VectorXd grid(count);
  for (Eigen::Index k = 0; k < count; ++k) grid(k) = start + static_cast<double>(k) * period;
  return grid;
}

Eigen::MatrixXd interpolateLinear(const Eigen::VectorXd& time, const Eigen::MatrixXd& values,
                                  const Eigen::VectorXd& query, const std::string& field) {
  checkQueries(time, values.rows(), query, field);
  Eigen::MatrixXd out(query.size(), values.cols());
  for (Eigen::Index q = 0; q < query.size(); ++q) {
    if (time.size() == 1) {
      out.row(q) = values.row(0);
      continue;
    }
    const Eigen::Index i = bracket(time, query(q));
    const double s = (query(q) - time(i)) / (time(i + 1) - time(i));
    out.row(q) = (1 - s) * values.row(i) + s * values.row(i + 1);
  }
  return out;
}

Eigen::MatrixXd interpolateQuaternions(const Eigen::VectorXd& time,
                                       const Eigen::MatrixXd& quaternions,
                                       const Eigen::VectorXd& query, const std::string& field) {
  checkQueries(time, quaternions.rows(), query, field);
  require(quaternions.cols() == 4, field, "4 columns [qx qy qz qw]",
          std::to_string(quaternions.cols()));
  auto at = [&](Eigen::Index i) {
    const auto r = quaternions.row(i);
    return Eigen::Quaterniond(r(3), r(0), r(1), r(2)).normalized();
  };
  Eigen::MatrixXd out(query.size(), 4);
  for (Eigen::Index q = 0; q < query.size(); ++q) {
    Eigen::Quaterniond result;
    if (time.size() == 1) {
      result = at(0);
    } else {
      const Eigen::Index i = bracket(time, query(q));
      const double s = (query(q) - time(i)) / (time(i + 1) - time(i));
      result = at(i).slerp(s, at(i + 1));  // Eigen's slerp follows the shorter arc
    }
    result.normalize();
    out.row(q) << result.x(), result.y(), result.z(), result.w();
  }
  return out;
}

FlagMatrix interpolateFlags(const Eigen::VectorXd& time, const FlagMatrix& flags,
                            const Eigen::VectorXd& query, const std::string& field) {
  checkQueries(time, flags.rows(), query, field);
  FlagMatrix out(query.size(), flags.cols());
  const double* begin = time.data();
  for (Eigen::Index q = 0; q < query.size(); ++q) {
    const Eigen::Index i = std::upper_bound(begin, begin + time.size(), query(q)) - begin - 1;
    out.row(q) = flags.row(std::max<Eigen::Index>(i, 0));
  }
  return out;
}

double uniformPeriod(const Eigen::VectorXd& time, const std::string& field,
                     double relative_tolerance) {
  if (time.size() < 2) {
    throw InputError(field + ": expected at least 2 samples for a sample period, got " +
                     std::to_string(time.size()));
  }
  const double dt = (time(time.size() - 1) - time(0)) / static_cast<double>(time.size() - 1);
  if (!(std::isfinite(dt) && dt > 0)) {
    throw InputError(field + ": expected increasing time, got a mean period of " + num(dt) + " s");
  }
  for (Eigen::Index i = 0; i + 1 < time.size(); ++i) {
    const double step = time(i + 1) - time(i);
    if (!(std::abs(step - dt) <= relative_tolerance * dt)) {
      throw InputError(field + " row " + std::to_string(i + 1) +
                       ": expected uniform sampling (period " + num(dt) +
                       " s, relative tolerance " + num(relative_tolerance) + "), got a step of " +
                       num(step) + " s; resample first");
    }
  }
  return dt;
}

void ResampleOptions::validate() const {
  require(std::isfinite(rate) && rate > 0, "ResampleOptions.rate [Hz]", "> 0", num(rate));
  require(std::isfinite(max_gap) && max_gap >= 0, "ResampleOptions.max_gap [s]",
          ">= 0 (0: automatic)", num(max_gap));
}

Log resample(const Log& log, const ResampleOptions& options) {
  options.validate();
  const JointSeries& j = log.joints;
  require(j.time.size() >= 2, "joints/time", "at least 2 samples", std::to_string(j.time.size()));
  const Eigen::VectorXd grid = uniformGrid(j.time(0), j.time(j.time.size() - 1), options.rate);
  Log out;
  out.meta = log.meta;
  {
    JointSeries& r = out.joints;
    r.time = selectGrid(grid, j.time, options.max_gap, "joints/time");
    r.names = j.names;
    r.q = interpolateLinear(j.time, j.q, r.time, "joints/q");
    r.v = interpolateLinear(j.time, j.v, r.time, "joints/v");
    r.tau = interpolateLinear(j.time, j.tau, r.time, "joints/tau");
    r.tau_cmd = interpolateOptional(j.time, j.tau_cmd, r.time, "joints/tau_cmd");
    r.base_pose = interpolatePose(j.time, j.base_pose, r.time, "joints/base_pose");
    r.base_twist = interpolateOptional(j.time, j.base_twist, r.time, "joints/base_twist");
  }
  if (log.imu) {
    const ImuSeries& s = *log.imu;
    ImuSeries r;
    r.frame = s.frame;
    r.time = selectGrid(grid, s.time, options.max_gap, "imu/time");
    r.gyro = interpolateLinear(s.time, s.gyro, r.time, "imu/gyro");
    r.accel = interpolateLinear(s.time, s.accel, r.time, "imu/accel");
    if (s.orientation.size() > 0) {
      r.orientation = interpolateQuaternions(s.time, s.orientation, r.time, "imu/orientation");
    }
    out.imu = std::move(r);
  }
  if (log.mocap) {
    const MocapSeries& s = *log.mocap;
    MocapSeries r;
    r.frame = s.frame;
    r.time = selectGrid(grid, s.time, options.max_gap, "mocap/time");
    r.position = interpolateLinear(s.time, s.position, r.time, "mocap/position");
    r.orientation = interpolateQuaternions(s.time, s.orientation, r.time, "mocap/orientation");
    out.mocap = std::move(r);
  }
  if (log.contacts) {
    const ContactSeries& s = *log.contacts;
    ContactSeries r;
    r.names = s.names;
    r.time = selectGrid(grid, s.time, options.max_gap, "contacts/time");
    r.flags = interpolateFlags(s.time, s.flags, r.time, "contacts/flags");
    out.contacts = std::move(r);
  }
  if (log.force_torque) {
    const ForceTorqueSeries& s = *log.force_torque;
    ForceTorqueSeries r;
    r.names = s.names;
    r.frames = s.frames;
    r.time = selectGrid(grid, s.time, options.max_gap, "force_torque/time");
    r.wrench = interpolateLinear(s.time, s.wrench, r.time, "force_torque/wrench");
    out.force_torque = std::move(r);
  }
  if (log.truth) {
    const TruthSeries& s = *log.truth;
    TruthSeries r;
    r.body_names = s.body_names;
    r.body_pi = s.body_pi;
    r.contact_names = s.contact_names;
    if (s.time.size() > 0) {
      r.time = selectGrid(grid, s.time, options.max_gap, "truth/time");
      r.q = interpolateLinear(s.time, s.q, r.time, "truth/q");
      r.v = interpolateLinear(s.time, s.v, r.time, "truth/v");
      r.a = interpolateLinear(s.time, s.a, r.time, "truth/a");
      if (!s.varying_body_names.empty()) {
        r.varying_body_names = s.varying_body_names;
        r.varying_body_pi =
            interpolateLinear(s.time, s.varying_body_pi, r.time, "truth/varying_body_pi");
      }
      r.base_pose = interpolatePose(s.time, s.base_pose, r.time, "truth/base_pose");
      r.base_twist = interpolateOptional(s.time, s.base_twist, r.time, "truth/base_twist");
      r.base_acceleration =
          interpolateOptional(s.time, s.base_acceleration, r.time, "truth/base_acceleration");
      r.contact_forces =
          interpolateOptional(s.time, s.contact_forces, r.time, "truth/contact_forces");
      if (s.contact_flags.size() > 0) {
        r.contact_flags = interpolateFlags(s.time, s.contact_flags, r.time, "truth/contact_flags");
      }
    }
    out.truth = std::move(r);
  }
  // estimates refer to their own time stamps (the estimator's output): copied, not resampled
  out.estimates = log.estimates;
  return out;
}

// ---- Savitzky-Golay
// ------------------------------------------------------------------------------

void SavitzkyGolayOptions::validate() const {
  require(window >= 3 && window % 2 == 1, "SavitzkyGolayOptions.window", "an odd number >= 3",
          std::to_string(window));
  require(order >= 0 && order < window, "SavitzkyGolayOptions.order",
          "0 <= order < window (" + std::to_string(window) + ")", std::to_string(order));
}

SavitzkyGolayFilter::SavitzkyGolayFilter(const SavitzkyGolayOptions& options, int derivative,
                                         double dt)
    : window_(options.window), derivative_(derivative) {
  options.validate();
  require(derivative >= 0 && derivative <= 2, "Savitzky-Golay derivative", "0, 1 or 2",
          std::to_string(derivative));
  require(derivative <= options.order, "Savitzky-Golay derivative",
          "<= order (" + std::to_string(options.order) + ")", std::to_string(derivative));
  require(std::isfinite(dt) && dt > 0, "Savitzky-Golay sample period dt [s]", "> 0", num(dt));
  const int half = (window_ - 1) / 2, columns = options.order + 1;
  // positions scaled to [-1, 1] keep the Vandermonde matrix well conditioned for long windows
  Eigen::VectorXd u(window_);
  for (int k = 0; k < window_; ++k) u(k) = static_cast<double>(k - half) / half;
  Eigen::MatrixXd vandermonde(window_, columns);
  for (int k = 0; k < window_; ++k) {
    for (int p = 0; p < columns; ++p) vandermonde(k, p) = std::pow(u(k), p);
  }
  // coefficients = fit * samples (least squares)
  const Eigen::MatrixXd fit =
      vandermonde.colPivHouseholderQr().solve(Eigen::MatrixXd::Identity(window_, window_));
  // d^n/dt^n of sum_p c_p u^p at u_e, with u = (t - t_centre) / (half dt)
  const double scale = std::pow(half * dt, derivative);
  weights_.resize(window_, window_);
  for (int e = 0; e < window_; ++e) {
    Eigen::RowVectorXd evaluate = Eigen::RowVectorXd::Zero(columns);
    for (int p = derivative; p < columns; ++p) {
      double factor = 1;
      for (int i = 0; i < derivative; ++i) factor *= p - i;
      evaluate(p) = factor * std::pow(u(e), p - derivative);
    }
    weights_.row(e) = evaluate * fit / scale;
  }
}

Eigen::MatrixXd SavitzkyGolayFilter::apply(const Eigen::MatrixXd& x) const {
  const Eigen::Index n = x.rows();
  require(n >= window_, "Savitzky-Golay input",
          "at least window = " + std::to_string(window_) + " samples", std::to_string(n));
  const int half = (window_ - 1) / 2;
  Eigen::MatrixXd out(n, x.cols());
  for (Eigen::Index i = 0; i < n; ++i) {
    if (i < half) {
      out.row(i) = weights_.row(i) * x.topRows(window_);
    } else if (i >= n - half) {
      out.row(i) = weights_.row(i - (n - window_)) * x.bottomRows(window_);
    } else {
      out.row(i) = weights_.row(half) * x.middleRows(i - half, window_);
    }
  }
  return out;
}

Eigen::MatrixXd savitzkyGolay(const Eigen::VectorXd& time, const Eigen::MatrixXd& x, int derivative,
                              const SavitzkyGolayOptions& options, const std::string& field) {
  require(x.rows() == time.size(), field,
          std::to_string(time.size()) + " rows (one per time stamp)", std::to_string(x.rows()));
  return SavitzkyGolayFilter(options, derivative, uniformPeriod(time, field + " time")).apply(x);
}

}  // namespace heft::io
