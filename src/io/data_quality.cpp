#include "heft/io/data_quality.hpp"

#include <Eigen/Geometry>
#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>

#include "heft/common/error.hpp"
#include "heft/common/format.hpp"
#include "heft/io/validation.hpp"

namespace heft::io {

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
// 1.4826 x median |x| is the standard deviation of zero-mean Gaussian noise.
constexpr double kMadToSigma = 1.4826;

std::string num(double x, int digits = 4) { return formatNumber(x, digits); }
std::string ms(double seconds) { return num(1000 * seconds) + " ms"; }
std::string hz(double step) { return step > 0 ? num(1 / step) + " Hz" : "-"; }

std::string rowList(const std::vector<long>& rows) {
  std::string text;
  for (std::size_t i = 0; i < rows.size(); ++i) text += (i ? ", " : "") + std::to_string(rows[i]);
  return text;
}

// Median of `values` (upper median for an even count, as summarize); reorders them.
double medianInPlace(std::vector<double>& values) {
  if (values.empty()) return 0;
  auto middle = values.begin() + static_cast<std::ptrdiff_t>(values.size() / 2);
  std::nth_element(values.begin(), middle, values.end());
  return *middle;
}

// The `limit` largest (size, row) pairs seen, largest first, in storage reserved once.
class LargestRows {
 public:
  explicit LargestRows(int limit) : limit_(static_cast<std::size_t>(limit)) {
    entries_.reserve(limit_ + 1);
  }
  void clear() { entries_.clear(); }
  void add(double size, long row) {
    if (entries_.size() == limit_ && size <= entries_.back().first) return;
    auto at = std::find_if(entries_.begin(), entries_.end(),
                           [&](const auto& e) { return size > e.first; });
    entries_.insert(at, {size, row});
    if (entries_.size() > limit_) entries_.pop_back();
  }
  std::vector<long> rows() const {
    std::vector<long> rows;
    for (const auto& e : entries_) rows.push_back(e.second);
    return rows;
  }
  double largest() const { return entries_.empty() ? 0 : entries_.front().first; }

 private:
  std::size_t limit_;
  std::vector<std::pair<double, long>> entries_;
};

void requireRows(const Eigen::MatrixXd& m, Eigen::Index rows, Eigen::Index cols,
                 const std::string& field) {
  require(m.rows() == rows && m.cols() == cols, field,
          std::to_string(rows) + " x " + std::to_string(cols) + " (joints/time x joints/names)",
          std::to_string(m.rows()) + " x " + std::to_string(m.cols()));
}

// ---- time ---------------------------------------------------------------------------------------

// Positive steps and the rows that end them, in order; order breaks are counted in `steps`.
void collectSteps(const Eigen::VectorXd& time, const DataQualityOptions& options,
                  std::vector<double>& step, std::vector<long>& row, TimeSteps& out) {
  for (Eigen::Index i = 1; i < time.size(); ++i) {
    const TimeOrder order = timeOrderAt(time, i);
    if (order == TimeOrder::Increasing) {
      step.push_back(time(i) - time(i - 1));
      row.push_back(static_cast<long>(i));
      continue;
    }
    if (order == TimeOrder::NotFinite) continue;
    (order == TimeOrder::Duplicated ? out.duplicated : out.backwards) += 1;
    if (static_cast<int>(out.order_rows.size()) < options.max_rows)
      out.order_rows.push_back(static_cast<long>(i));
  }
}

// Statistics of the steps; jitter and gaps against the median of the step's own rate segment (a
// 200 Hz stretch before a 100 Hz one is a rate change, not 200 jittered steps).
void assessSteps(const std::vector<double>& step, const std::vector<long>& row,
                 const std::vector<RateSegment>& segments, const DataQualityOptions& options,
                 std::vector<double>& scratch, TimeSteps& out) {
  if (step.empty()) return;
  scratch.assign(step.begin(), step.end());
  out.median = medianInPlace(scratch);
  const auto [lo, hi] = std::minmax_element(step.begin(), step.end());
  out.min = *lo;
  out.max = *hi;
  out.min_row = row[static_cast<std::size_t>(lo - step.begin())];
  out.max_row = row[static_cast<std::size_t>(hi - step.begin())];
  for (std::size_t k = 0; k < step.size(); ++k) scratch[k] = std::abs(step[k] - out.median);
  out.spread = kMadToSigma * medianInPlace(scratch) / out.median;
  LargestRows gaps(options.max_rows);
  std::size_t segment = 0;
  for (std::size_t k = 0; k < step.size(); ++k) {
    while (segment + 1 < segments.size() && row[k] >= segments[segment + 1].first_row) ++segment;
    const double median = segments.empty() ? out.median : segments[segment].median_step;
    if (step[k] > options.gap_factor * median) {
      ++out.gaps;
      out.gap_time += step[k];
      gaps.add(step[k], row[k]);
    } else if (step[k] > options.jitter_factor * median ||
               step[k] < median / options.jitter_factor) {
      ++out.jittered;
      if (static_cast<int>(out.jittered_rows.size()) < options.max_rows)
        out.jittered_rows.push_back(row[k]);
    }
  }
  out.gap_rows = gaps.rows();
}

// Cost of splitting steps [begin, end) at `split`: steps before it at rate `before`, after it at
// `after` (absolute log ratios, so jitter on either side weighs the same).
long bestSplit(const std::vector<double>& step, std::size_t begin, std::size_t end, double before,
               double after) {
  double cost = 0;
  for (std::size_t k = begin; k < end; ++k) cost += std::abs(std::log(step[k] / after));
  double best = cost;
  std::size_t best_split = begin;
  for (std::size_t k = begin; k < end; ++k) {
    cost += std::abs(std::log(step[k] / before)) - std::abs(std::log(step[k] / after));
    if (cost < best) {
      best = cost;
      best_split = k + 1;
    }
  }
  return static_cast<long>(best_split);
}

// Segments of one rate: block medians compared with the current segment's (see the options).
std::vector<RateSegment> rateSegments(const std::vector<double>& step, const std::vector<long>& row,
                                      long samples, const DataQualityOptions& options,
                                      std::vector<double>& scratch) {
  const std::size_t block = static_cast<std::size_t>(options.rate_block);
  const auto blockMedian = [&](std::size_t first, std::size_t last) {
    scratch.assign(step.begin() + static_cast<std::ptrdiff_t>(first),
                   step.begin() + static_cast<std::ptrdiff_t>(last));
    return medianInPlace(scratch);
  };
  std::vector<RateSegment> segments;
  if (step.empty()) return segments;
  const std::size_t blocks = std::max<std::size_t>(1, step.size() / block);
  // the last block takes the remainder
  const auto blockEnd = [&](std::size_t b) {
    return b + 1 == blocks ? step.size() : (b + 1) * block;
  };
  std::vector<std::size_t> starts{0};  // first step of each segment
  std::vector<double> medians{blockMedian(0, blockEnd(0))};
  for (std::size_t b = 1; b < blocks; ++b) {
    const double m = blockMedian(b * block, blockEnd(b));
    if (std::abs(m / medians.back() - 1) <= options.rate_change_tolerance) continue;
    // the change lies in this block or the previous one (not before the segment's start)
    const std::size_t from = std::max(starts.back() + 1, (b - 1) * block);
    const auto split =
        static_cast<std::size_t>(bestSplit(step, from, blockEnd(b), medians.back(), m));
    starts.push_back(std::min(std::max(split, from), blockEnd(b) - 1));
    medians.push_back(m);
  }
  for (std::size_t s = 0; s < starts.size(); ++s) {
    RateSegment segment;
    segment.first_row = s == 0 ? 0 : row[starts[s]];
    segment.last_row = s + 1 < starts.size() ? row[starts[s + 1]] - 1 : samples - 1;
    const std::size_t last = s + 1 < starts.size() ? starts[s + 1] : step.size();
    segment.median_step = blockMedian(starts[s], std::max(last, starts[s] + 1));
    segments.push_back(segment);
  }
  return segments;
}

// ---- samples ------------------------------------------------------------------------------------

// Held rows are also marked in `mask` (the position/velocity check leaves them out).
HeldSamples heldSamples(const JointSeries& j, const DataQualityOptions& options,
                        std::vector<char>& mask) {
  HeldSamples held;
  mask.assign(static_cast<std::size_t>(j.time.size()), 0);
  long run = 0;
  const bool tau = j.tau.size() > 0;
  for (Eigen::Index i = 1; i <= j.time.size(); ++i) {
    const bool same = i < j.time.size() && (j.q.row(i).array() == j.q.row(i - 1).array()).all() &&
                      (j.v.row(i).array() == j.v.row(i - 1).array()).all() &&
                      (!tau || (j.tau.row(i).array() == j.tau.row(i - 1).array()).all());
    if (same) {
      mask[static_cast<std::size_t>(i)] = 1;
      ++held.rows;
      ++run;
      continue;
    }
    if (run == 0) continue;
    const long first = static_cast<long>(i) - run;
    ++held.runs;
    if (static_cast<int>(held.run_first.size()) < options.max_rows) held.run_first.push_back(first);
    if (run > held.longest_run) {
      held.longest_run = run;
      held.longest_run_first = first;
    }
    run = 0;
  }
  return held;
}

std::vector<TorqueSaturation> saturation(const JointSeries& j, const DataQualityOptions& options) {
  std::vector<TorqueSaturation> found;
  const Eigen::Index n = j.tau.rows();
  for (Eigen::Index c = 0; c < j.tau.cols(); ++c) {
    const double extreme = j.tau.col(c).cwiseAbs().maxCoeff();
    if (!(extreme > 0) || !std::isfinite(extreme)) continue;
    TorqueSaturation s;
    s.joint = j.names[static_cast<std::size_t>(c)];
    long run = 0;
    for (Eigen::Index i = 0; i <= n; ++i) {
      if (i < n && std::abs(j.tau(i, c)) == extreme) {
        ++run;
        continue;
      }
      // a torque constant over the whole log is not a clamp
      if (run >= options.saturation_run && run < n) {
        const long first = static_cast<long>(i) - run;
        if (s.samples == 0) {
          s.first_row = first;
          s.value = j.tau(first, c);
        }
        s.samples += run;
        s.longest_run = std::max(s.longest_run, run);
      }
      run = 0;
    }
    if (s.samples > 0) found.push_back(s);
  }
  return found;
}

std::vector<EffortLimitExcess> effortLimits(const JointSeries& j, const pinocchio::Model& model) {
  std::vector<EffortLimitExcess> found;
  for (std::size_t c = 0; c < j.names.size(); ++c) {
    if (!model.existJointName(j.names[c])) continue;
    const auto& joint = model.joints[model.getJointId(j.names[c])];
    if (joint.nv() != 1) continue;
    const double lower = model.lowerEffortLimit[joint.idx_v()];
    const double upper = model.upperEffortLimit[joint.idx_v()];
    if (!(std::isfinite(lower) && std::isfinite(upper) && lower < 0 && upper > 0)) continue;
    EffortLimitExcess e;
    e.joint = j.names[c];
    e.lower = lower;
    e.upper = upper;
    const auto tau = j.tau.col(static_cast<Eigen::Index>(c));
    e.max_abs = tau.cwiseAbs().maxCoeff();
    for (Eigen::Index i = 0; i < tau.size(); ++i) {
      if (tau(i) < upper && tau(i) > lower) continue;
      if (e.samples++ == 0) e.first_row = static_cast<long>(i);
    }
    if (e.samples > 0) found.push_back(e);
  }
  return found;
}

// ---- positions against integrated velocities ----------------------------------------------------

// One position channel: `step(i, dq, iv)` fills the change of position from row i - 1 to row i and
// the trapezoid integral of the velocity over that step (1 or 3 components, the rest 0). valid[i]
// is false for a step that is not strictly increasing in time or ends on a held row. Sums over
// windows of consistency_window steps, so that velocity noise (which grows as the square root of
// the window while the motion grows with it) does not bias a fit of dq against iv.
class ChannelAssessor {
 public:
  // `time`: the joint clock; `median_step` its median step [s].
  ChannelAssessor(const Eigen::VectorXd& time, double median_step,
                  const DataQualityOptions& options)
      : time_(time),
        median_step_(median_step),
        options_(options),
        residual_(static_cast<std::size_t>(time.size()), 0.0),
        scratch_(3 * static_cast<std::size_t>(time.size())),
        u_scratch_(3 * static_cast<std::size_t>(time.size())),
        jump_(static_cast<std::size_t>(time.size()), 0),
        largest_(options.max_rows) {}

  // Sums of Dq.Iv and Iv.Iv over the windows in each (first_row, last_row] range, the jumps at
  // clock factor c left out (no jump is looked for when c is NaN).
  template <typename Step>
  void fit(const std::vector<char>& valid, Step step, double c,
           const std::vector<std::pair<long, long>>& ranges, std::vector<double>& sxy,
           std::vector<double>& sxx) {
    if (std::isfinite(c)) {
      markJumps(valid, step, c);
    } else {
      std::fill(jump_.begin(), jump_.end(), 0);
    }
    for (std::size_t k = 0; k < ranges.size(); ++k) {
      forEachWindow(valid, step, ranges[k].first, ranges[k].second,
                    [&](const Eigen::Vector3d& dq, const Eigen::Vector3d& iv) {
                      sxy[k] += dq.dot(iv);
                      sxx[k] += iv.squaredNorm();
                    });
    }
  }

  // The channel's findings at clock factor c (pooled over its group); its jump rows are set in
  // `jump_rows`.
  template <typename Step>
  PositionVelocityChannel assess(const std::string& name, int dim, const std::vector<char>& valid,
                                 Step step, double c, std::vector<char>& jump_rows) {
    PositionVelocityChannel out;
    out.name = name;
    markJumps(valid, step, std::isfinite(c) ? c : 1.0);
    largest_.clear();
    for (std::size_t i = 1; i < valid.size(); ++i) {
      if (!jump_[i]) continue;
      ++out.jumps;
      largest_.add(residual_[i], static_cast<long>(i));
      jump_rows[i] = 1;
    }
    out.jump_rows = largest_.rows();
    out.largest_jump = largest_.largest();
    double sxy = 0, sxx = 0, diff2 = 0, dq2 = 0, motion2 = 0;
    long windows = 0;
    forEachWindow(valid, step, 0, static_cast<long>(valid.size()) - 1,
                  [&](const Eigen::Vector3d& dq, const Eigen::Vector3d& iv) {
                    sxy += dq.dot(iv);
                    sxx += iv.squaredNorm();
                    diff2 += (dq - iv).squaredNorm();
                    dq2 += dq.squaredNorm();
                    motion2 += std::max(dq.squaredNorm(), iv.squaredNorm());
                    ++windows;
                  });
    out.clock_factor = sxx > 0 ? sxy / sxx : kNaN;
    const double motion = windows > 0 ? std::sqrt(motion2 / static_cast<double>(windows)) : 0;
    out.judged = motion > 0 && motion > options_.motion_to_noise * windowNoise(valid, step, dim);
    out.disagreement =
        out.judged ? std::sqrt(diff2) / std::max(std::sqrt(dq2), std::sqrt(sxx)) : kNaN;
    return out;
  }

 private:
  // Residuals |dq - c iv| of every step and the jumps among them; returns the per-step noise.
  template <typename Step>
  double markJumps(const std::vector<char>& valid, Step step, double c) {
    Eigen::Vector3d dq, iv;
    double motion2 = 0;
    long steps = 0;
    scratch_.clear();
    for (std::size_t i = 1; i < valid.size(); ++i) {
      residual_[i] = 0;
      if (!valid[i]) continue;
      step(static_cast<Eigen::Index>(i), dq, iv);
      residual_[i] = (dq - c * iv).norm();
      motion2 += (c * iv).squaredNorm();
      ++steps;
      scratch_.push_back(residual_[i]);
    }
    const double noise = kMadToSigma * medianInPlace(scratch_);
    const double typical = steps > 0 ? std::sqrt(motion2 / static_cast<double>(steps)) : 0;
    const double threshold =
        std::max(options_.jump_factor * std::max(typical, noise), options_.min_jump);
    for (std::size_t i = 0; i < valid.size(); ++i)
      jump_[i] = valid[i] && residual_[i] > threshold && residual_[i] > 0;
    return noise;
  }

  // fn(Dq, Iv) for each window of consistency_window steps in rows (first, last] whose every step
  // is usable: a window with a jump, a held row or a clock break is left out, not bridged.
  template <typename Step, typename Fn>
  void forEachWindow(const std::vector<char>& valid, Step step, long first, long last, Fn fn) {
    Eigen::Vector3d dq, iv;
    Eigen::Vector3d window_dq = Eigen::Vector3d::Zero(), window_iv = Eigen::Vector3d::Zero();
    int in_window = 0;
    bool usable_window = true;
    for (long i = first + 1; i <= last; ++i) {
      const auto k = static_cast<std::size_t>(i);
      const bool usable = valid[k] && !jump_[k];
      if (usable) {
        step(static_cast<Eigen::Index>(i), dq, iv);
        window_dq += dq;
        window_iv += iv;
      }
      usable_window = usable_window && usable;
      if (++in_window < options_.consistency_window) continue;
      if (usable_window) fn(window_dq, window_iv);
      window_dq.setZero();
      window_iv.setZero();
      in_window = 0;
      usable_window = true;
    }
  }

  // Standard deviation of Dq - Iv over a window from noise alone, whatever the relation of q and
  // v: from second differences, which a smooth motion leaves near 0. Second differences of q have
  // variance 6 sigma_q^2; those of the step means u = iv / dt have sigma_v^2 exactly. A window
  // holds 2 sigma_q^2 (its ends) and about W (sigma_v dt)^2.
  template <typename Step>
  double windowNoise(const std::vector<char>& valid, Step step, int dim) {
    Eigen::Vector3d dq, iv, dq1 = Eigen::Vector3d::Zero(), u1 = Eigen::Vector3d::Zero(),
                            u2 = Eigen::Vector3d::Zero();
    int run = 0;  // consecutive valid steps so far
    scratch_.clear();
    u_scratch_.clear();
    for (std::size_t i = 1; i < valid.size(); ++i) {
      if (!valid[i]) {
        run = 0;
        continue;
      }
      step(static_cast<Eigen::Index>(i), dq, iv);
      const auto k = static_cast<Eigen::Index>(i);
      const Eigen::Vector3d u = iv / (time_(k) - time_(k - 1));
      if (run >= 1)
        for (int d = 0; d < dim; ++d) scratch_.push_back(std::abs(dq(d) - dq1(d)));
      if (run >= 2)
        for (int d = 0; d < dim; ++d) u_scratch_.push_back(std::abs(u(d) - 2 * u1(d) + u2(d)));
      dq1 = dq;
      u2 = u1;
      u1 = u;
      ++run;
    }
    const double sigma_q = kMadToSigma * medianInPlace(scratch_) / std::sqrt(6.0);
    const double sigma_v = kMadToSigma * medianInPlace(u_scratch_);
    const double w = options_.consistency_window;
    return std::sqrt(2 * sigma_q * sigma_q + w * std::pow(sigma_v * median_step_, 2));
  }

  const Eigen::VectorXd& time_;
  double median_step_;
  const DataQualityOptions& options_;
  std::vector<double> residual_, scratch_, u_scratch_;
  std::vector<char> jump_;
  LargestRows largest_;
};

// Held rows are reported on their own: their steps are left out here (the step that leaves a
// long hold is then usually a jump).
PositionVelocity positionVelocity(const JointSeries& j, double median_step,
                                  const std::vector<RateSegment>& rates,
                                  const std::vector<char>& held,
                                  const DataQualityOptions& options) {
  PositionVelocity out;
  const long n = static_cast<long>(j.time.size());
  std::vector<char> valid(static_cast<std::size_t>(n), 0);
  for (long i = 1; i < n; ++i) {
    const auto k = static_cast<std::size_t>(i);
    valid[k] = timeOrderAt(j.time, i) == TimeOrder::Increasing && !held[k];
  }
  ChannelAssessor assessor(j.time, median_step, options);
  std::vector<char> jump_rows(static_cast<std::size_t>(n), 0);
  const std::vector<std::pair<long, long>> whole{{0, n - 1}};
  std::vector<double> sxy(1), sxx(1);

  const auto jointStep = [&j](Eigen::Index c) {
    return [&j, c](Eigen::Index i, Eigen::Vector3d& dq, Eigen::Vector3d& iv) {
      dq << j.q(i, c) - j.q(i - 1, c), 0, 0;
      iv << 0.5 * (j.v(i, c) + j.v(i - 1, c)) * (j.time(i) - j.time(i - 1)), 0, 0;
    };
  };
  const Eigen::Index nj = j.q.cols();
  // the pooled clock factor: every window first, then without the jumps that factor reveals, and
  // last over the joints that move enough to be judged (a joint at rest holds only noise)
  std::vector<char> pooled(static_cast<std::size_t>(nj), 1), ignored(jump_rows);
  double c = kNaN;
  for (int pass = 0; pass < 3; ++pass) {
    if (pass == 2) {
      for (Eigen::Index col = 0; col < nj; ++col) {
        pooled[static_cast<std::size_t>(col)] =
            assessor.assess("", 1, valid, jointStep(col), c, ignored).judged;
      }
    }
    sxy[0] = sxx[0] = 0;
    for (Eigen::Index col = 0; col < nj; ++col)
      if (pooled[static_cast<std::size_t>(col)])
        assessor.fit(valid, jointStep(col), c, whole, sxy, sxx);
    c = sxx[0] > 0 ? sxy[0] / sxx[0] : kNaN;
  }
  out.clock_factor = c;
  for (Eigen::Index col = 0; col < nj; ++col) {
    out.joints.push_back(assessor.assess(j.names[static_cast<std::size_t>(col)], 1, valid,
                                         jointStep(col), c, jump_rows));
  }
  out.joint_jump_rows = static_cast<long>(std::count(jump_rows.begin(), jump_rows.end(), 1));

  out.has_base = j.base_pose.size() > 0 && j.base_twist.size() > 0;
  if (out.has_base) {
    // the twist's linear part is in the base frame; the position is in the world frame
    const auto worldVelocity = [&j](Eigen::Index i) {
      const auto p = j.base_pose.row(i);
      const Eigen::Quaterniond r(p(6), p(3), p(4), p(5));
      return Eigen::Vector3d(r.normalized() * j.base_twist.row(i).head<3>().transpose());
    };
    const auto baseStep = [&](Eigen::Index i, Eigen::Vector3d& dq, Eigen::Vector3d& iv) {
      dq = (j.base_pose.row(i).head<3>() - j.base_pose.row(i - 1).head<3>()).transpose();
      iv = 0.5 * (worldVelocity(i) + worldVelocity(i - 1)) * (j.time(i) - j.time(i - 1));
    };
    double cb = kNaN;
    for (int pass = 0; pass < 2; ++pass) {
      sxy[0] = sxx[0] = 0;
      assessor.fit(valid, baseStep, cb, whole, sxy, sxx);
      cb = sxx[0] > 0 ? sxy[0] / sxx[0] : kNaN;
    }
    out.base = assessor.assess("base", 3, valid, baseStep, cb, jump_rows);
  }

  // stretches between rate changes and jumps, each with its own factor (the judged joints')
  std::vector<long> starts{0};
  for (std::size_t s = 1; s < rates.size(); ++s) starts.push_back(rates[s].first_row);
  for (long i = 1; i < n; ++i)
    if (jump_rows[static_cast<std::size_t>(i)]) starts.push_back(i);
  std::sort(starts.begin(), starts.end());
  starts.erase(std::unique(starts.begin(), starts.end()), starts.end());
  std::vector<long> kept;  // a stretch shorter than a rate block is merged into the previous one
  for (long s : starts)
    if (kept.empty() || s - kept.back() >= options.rate_block) kept.push_back(s);
  if (kept.size() < 2 || !std::isfinite(c)) return out;
  std::vector<std::pair<long, long>> ranges;
  for (std::size_t s = 0; s < kept.size(); ++s)
    ranges.emplace_back(kept[s], s + 1 < kept.size() ? kept[s + 1] - 1 : n - 1);
  sxy.assign(ranges.size(), 0);
  sxx.assign(ranges.size(), 0);
  for (Eigen::Index col = 0; col < nj; ++col)
    if (out.joints[static_cast<std::size_t>(col)].judged)
      assessor.fit(valid, jointStep(col), c, ranges, sxy, sxx);
  for (std::size_t s = 0; s < ranges.size(); ++s) {
    out.segments.push_back(
        {ranges[s].first, ranges[s].second, sxx[s] > 0 ? sxy[s] / sxx[s] : kNaN});
  }
  return out;
}

// ---- findings -----------------------------------------------------------------------------------

DataQualityFinding finding(const std::string& check, Severity severity, long count,
                           std::vector<long> rows, std::string text) {
  return {check, severity, count, std::move(rows), std::move(text)};
}

void timeFindings(const DataQualityReport& r, const DataQualityOptions& o,
                  std::vector<DataQualityFinding>& out) {
  const TimeSteps& t = r.time_steps;
  const long breaks = t.duplicated + t.backwards;
  out.push_back(
      breaks == 0
          ? finding("time-order", Severity::Info, 0, {}, "time order: strictly increasing")
          : finding("time-order", Severity::Warning, breaks, t.order_rows,
                    "time order: " + std::to_string(t.backwards) +
                        " clock reset(s) (time goes back) and " + std::to_string(t.duplicated) +
                        " duplicated stamp(s), first at rows " + rowList(t.order_rows) +
                        " (validate-log rejects the log; split it at the resets)"));
  out.push_back(finding("time-steps", Severity::Info, 0, {},
                        "time steps: median " + ms(t.median) + " (" + hz(t.median) + "), min " +
                            ms(t.min) + " (row " + std::to_string(t.min_row) + "), max " +
                            ms(t.max) + " (row " + std::to_string(t.max_row) + "), robust spread " +
                            num(t.spread, 3) + " of the median"));
  out.push_back(
      t.jittered == 0
          ? finding("jitter", Severity::Info, 0, {},
                    "jitter: no step outside [median / " + num(o.jitter_factor) + ", " +
                        num(o.jitter_factor) + " x median] of its rate segment")
          : finding("jitter", Severity::Warning, t.jittered, t.jittered_rows,
                    "jitter: " + std::to_string(t.jittered) + " step(s) outside [median / " +
                        num(o.jitter_factor) + ", " + num(o.jitter_factor) +
                        " x median], first at rows " + rowList(t.jittered_rows) +
                        " (identify resamples onto a uniform clock; check the logger's time "
                        "stamps)"));
  out.push_back(t.gaps == 0
                    ? finding("gaps", Severity::Info, 0, {},
                              "gaps: no step longer than " + num(o.gap_factor) + " x median")
                    : finding("gaps", Severity::Warning, t.gaps, t.gap_rows,
                              "gaps: " + std::to_string(t.gaps) + " step(s) longer than " +
                                  num(o.gap_factor) + " x median, " + num(t.gap_time) +
                                  " s in all; longest ending at rows " + rowList(t.gap_rows)));
  const auto& segments = r.rate_segments;
  if (segments.size() <= 1) {
    out.push_back(finding("rate-changes", Severity::Info, 0, {}, "rate changes: none"));
  } else {
    std::string text = "rate changes: " + std::to_string(segments.size()) + " segments:";
    std::vector<long> rows;
    for (std::size_t s = 0; s < segments.size(); ++s) {
      text += (s ? ", rows " : " rows ") + std::to_string(segments[s].first_row) + "-" +
              std::to_string(segments[s].last_row) + " at " + hz(segments[s].median_step);
      if (s > 0 && static_cast<int>(rows.size()) < o.max_rows)
        rows.push_back(segments[s].first_row);
    }
    out.push_back(finding("rate-changes", Severity::Warning, static_cast<long>(segments.size()) - 1,
                          rows, text + " (recordings joined? identify each part on its own)"));
  }
}

void sampleFindings(const DataQualityReport& r, std::vector<DataQualityFinding>& out) {
  const HeldSamples& h = r.held;
  out.push_back(
      h.rows == 0 ? finding("held-samples", Severity::Info, 0, {},
                            "held samples: no row repeats the previous one")
                  : finding("held-samples", Severity::Warning, h.rows, h.run_first,
                            "held samples: " + std::to_string(h.rows) +
                                " row(s) repeat the previous row exactly (q, v, tau), in " +
                                std::to_string(h.runs) + " run(s), longest " +
                                std::to_string(h.longest_run) + " from row " +
                                std::to_string(h.longest_run_first) + "; runs start at rows " +
                                rowList(h.run_first) + " (a logger holding values: cut them out)"));
  if (r.saturation.empty()) {
    out.push_back(
        finding("saturation", Severity::Info, 0, {}, "saturation: no torque held at its extreme"));
  } else {
    std::string text = "saturation: " + std::to_string(r.saturation.size()) +
                       " joint torque(s) held at their extreme:";
    std::vector<long> rows;
    long samples = 0;
    for (std::size_t k = 0; k < r.saturation.size(); ++k) {
      const TorqueSaturation& s = r.saturation[k];
      text += (k ? "; " : " ") + s.joint + " at " + num(s.value) + " for " +
              std::to_string(s.samples) + " samples from row " + std::to_string(s.first_row);
      rows.push_back(s.first_row);
      samples += s.samples;
    }
    out.push_back(finding("saturation", Severity::Warning, samples, rows,
                          text + " (the torque is clipped there: leave those samples out)"));
  }
  if (!r.effort_limits_checked) return;
  if (r.effort_limits.empty()) {
    out.push_back(finding("effort-limits", Severity::Info, 0, {},
                          "effort limits: every torque inside the model's limits"));
    return;
  }
  std::string text = "effort limits: " + std::to_string(r.effort_limits.size()) +
                     " joint(s) at or beyond the model's limit:";
  std::vector<long> rows;
  long samples = 0;
  for (std::size_t k = 0; k < r.effort_limits.size(); ++k) {
    const EffortLimitExcess& e = r.effort_limits[k];
    text += (k ? "; " : " ") + e.joint + " max |tau| " + num(e.max_abs) + " vs [" + num(e.lower) +
            ", " + num(e.upper) + "] in " + std::to_string(e.samples) + " samples from row " +
            std::to_string(e.first_row);
    rows.push_back(e.first_row);
    samples += e.samples;
  }
  out.push_back(finding("effort-limits", Severity::Warning, samples, rows,
                        text + " (wrong units, or a model with wrong limits)"));
}

void motionFindings(const DataQualityReport& r, const DataQualityOptions& o,
                    std::vector<DataQualityFinding>& out) {
  const PositionVelocity& pv = r.position_velocity;
  // joints whose disagreement exceeds the threshold, worst first
  std::vector<const PositionVelocityChannel*> bad;
  long judged = 0;
  const PositionVelocityChannel* worst = nullptr;
  for (const auto& joint : pv.joints) {
    if (!joint.judged) continue;
    ++judged;
    if (!worst || joint.disagreement > worst->disagreement) worst = &joint;
    if (joint.disagreement > o.consistency_threshold) bad.push_back(&joint);
  }
  std::sort(bad.begin(), bad.end(),
            [](const auto* a, const auto* b) { return a->disagreement > b->disagreement; });
  const std::string unjudged = std::to_string(pv.joints.size() - static_cast<std::size_t>(judged)) +
                               " with too little motion to judge";
  if (bad.empty()) {
    out.push_back(finding(
        "position-velocity", Severity::Info, 0, {},
        "position/velocity: " + std::to_string(judged) + " joint(s) agree with their integrated " +
            "velocity" +
            (worst ? " (worst " + worst->name + ", " + num(worst->disagreement, 3) + ")" : "") +
            ", " + unjudged));
  } else {
    std::string text = "position/velocity: " + std::to_string(bad.size()) + " of " +
                       std::to_string(judged) +
                       " judged joint(s) disagree with their integrated velocity (|| dq - "
                       "integral v || / motion > " +
                       num(o.consistency_threshold) + "):";
    for (std::size_t k = 0; k < bad.size() && static_cast<int>(k) < o.max_rows; ++k)
      text += (k ? ", " : " ") + bad[k]->name + " " + num(bad[k]->disagreement, 3);
    if (static_cast<int>(bad.size()) > o.max_rows) text += ", ...";
    out.push_back(finding("position-velocity", Severity::Warning, static_cast<long>(bad.size()), {},
                          text + "; " + unjudged));
  }

  const double c = pv.clock_factor;
  std::string segments;
  bool segments_differ = false;
  for (std::size_t s = 0; s < pv.segments.size(); ++s) {
    const auto& seg = pv.segments[s];
    segments += (s ? ", rows " : "; by stretch: rows ") + std::to_string(seg.first_row) + "-" +
                std::to_string(seg.last_row) + " " + num(seg.clock_factor, 3);
    segments_differ = segments_differ || std::abs(seg.clock_factor / c - 1) > o.clock_tolerance;
  }
  if (!std::isfinite(c)) {
    out.push_back(finding("clock-factor", Severity::Info, 0, {},
                          "clock factor: not estimated (no joint moves)"));
  } else if (std::abs(c - 1) <= o.clock_tolerance && !segments_differ) {
    out.push_back(
        finding("clock-factor", Severity::Info, 0, {},
                "clock factor: " + num(c, 3) + " (dq / integral of v; 1 on a right clock)"));
  } else {
    std::vector<long> rows;
    for (const auto& seg : pv.segments)
      if (static_cast<int>(rows.size()) < o.max_rows) rows.push_back(seg.first_row);
    out.push_back(finding("clock-factor", Severity::Warning, 1, rows,
                          "clock factor: " + num(c, 3) +
                              " (dq / integral of v, 1 on a right clock" + segments +
                              "): the time stamps do not match the sampling (a " + num(c, 3) +
                              "x factor is a log read at the wrong rate)"));
  }

  // jumps: rows where any joint moved by more than its velocity explains
  LargestRows largest(o.max_rows);
  long jumps = 0;
  std::string joints;
  for (const auto& joint : pv.joints) {
    if (joint.jumps == 0) continue;
    jumps += joint.jumps;
    joints += (joints.empty() ? "" : ", ") + joint.name + " " + num(joint.largest_jump, 3) +
              " at row " + std::to_string(joint.jump_rows.front());
    largest.add(joint.largest_jump, joint.jump_rows.front());
  }
  out.push_back(
      jumps == 0
          ? finding("position-jumps", Severity::Info, 0, {},
                    "position jumps: no joint moves more than its velocity explains")
          : finding("position-jumps", Severity::Warning, pv.joint_jump_rows, largest.rows(),
                    "position jumps: " + std::to_string(pv.joint_jump_rows) +
                        " row(s) where joints move more than their velocity explains (" +
                        std::to_string(jumps) + " joint step(s); largest per joint: " + joints +
                        "): a join of recordings or a glitch; split the log there"));

  if (!pv.has_base) return;
  const PositionVelocityChannel& b = pv.base;
  std::string text = "base position/velocity: ";
  const bool disagrees = b.judged && b.disagreement > o.consistency_threshold;
  const bool clock =
      std::isfinite(b.clock_factor) && b.judged && std::abs(b.clock_factor - 1) > o.clock_tolerance;
  text += b.judged ? "disagreement " + num(b.disagreement, 3) + ", clock factor " +
                         num(b.clock_factor, 3)
                   : std::string("too little motion to judge");
  if (b.jumps > 0)
    text += "; " + std::to_string(b.jumps) + " jump(s), largest " + num(b.largest_jump, 3) +
            " m at rows " + rowList(b.jump_rows);
  const bool warn = disagrees || clock || b.jumps > 0;
  if (warn)
    text +=
        " (base_pose does not follow the integral of base_twist: check the state "
        "estimator's output and joins)";
  out.push_back(finding("base-position-velocity", warn ? Severity::Warning : Severity::Info,
                        warn ? std::max<long>(1, b.jumps) : 0, b.jump_rows, text));
}

DataQualityReport assess(const Log& log, const pinocchio::Model* model,
                         const DataQualityOptions& options) {
  options.validate();
  const JointSeries& j = log.joints;
  const Eigen::Index n = j.time.size(), nj = static_cast<Eigen::Index>(j.names.size());
  requireRows(j.q, n, nj, "joints/q");
  requireRows(j.v, n, nj, "joints/v");
  if (j.tau.size() > 0) requireRows(j.tau, n, nj, "joints/tau");
  if (j.base_pose.size() > 0) requireRows(j.base_pose, n, 7, "joints/base_pose");
  if (j.base_twist.size() > 0) requireRows(j.base_twist, n, 6, "joints/base_twist");

  DataQualityReport r;
  r.samples = static_cast<long>(n);
  if (n < 2) {
    r.findings.push_back(finding("time-steps", Severity::Info, 0, {},
                                 "too few samples (" + std::to_string(n) + ") to assess"));
    return r;
  }
  std::vector<double> step, scratch;
  std::vector<long> row;
  step.reserve(static_cast<std::size_t>(n));
  row.reserve(static_cast<std::size_t>(n));
  scratch.reserve(static_cast<std::size_t>(n));
  collectSteps(j.time, options, step, row, r.time_steps);
  r.rate_segments = rateSegments(step, row, r.samples, options, scratch);
  assessSteps(step, row, r.rate_segments, options, scratch, r.time_steps);
  std::vector<char> held;
  r.held = heldSamples(j, options, held);
  if (j.tau.size() > 0) r.saturation = saturation(j, options);
  if (model && j.tau.size() > 0) {
    r.effort_limits_checked = true;
    r.effort_limits = effortLimits(j, *model);
  }
  r.position_velocity = positionVelocity(j, r.time_steps.median, r.rate_segments, held, options);

  timeFindings(r, options, r.findings);
  sampleFindings(r, r.findings);
  motionFindings(r, options, r.findings);
  return r;
}

}  // namespace

void DataQualityOptions::validate() const {
  const std::string f = "DataQualityOptions.";
  require(max_rows >= 1, f + "max_rows", ">= 1", std::to_string(max_rows));
  require(std::isfinite(jitter_factor) && jitter_factor > 1, f + "jitter_factor", "> 1",
          num(jitter_factor));
  require(std::isfinite(gap_factor) && gap_factor > jitter_factor, f + "gap_factor",
          "> jitter_factor (" + num(jitter_factor) + ")", num(gap_factor));
  require(rate_block >= 5, f + "rate_block", ">= 5", std::to_string(rate_block));
  require(rate_change_tolerance > 0 && rate_change_tolerance < 1, f + "rate_change_tolerance",
          "in (0, 1)", num(rate_change_tolerance));
  require(saturation_run >= 2, f + "saturation_run", ">= 2", std::to_string(saturation_run));
  require(consistency_window >= 1, f + "consistency_window", ">= 1",
          std::to_string(consistency_window));
  require(consistency_threshold > 0 && consistency_threshold < 2, f + "consistency_threshold",
          "in (0, 2)", num(consistency_threshold));
  require(std::isfinite(motion_to_noise) && motion_to_noise >= 1, f + "motion_to_noise", ">= 1",
          num(motion_to_noise));
  require(std::isfinite(jump_factor) && jump_factor > 1, f + "jump_factor", "> 1",
          num(jump_factor));
  require(std::isfinite(min_jump) && min_jump >= 0, f + "min_jump", "a finite value >= 0",
          num(min_jump));
  require(clock_tolerance > 0 && clock_tolerance < 1, f + "clock_tolerance", "in (0, 1)",
          num(clock_tolerance));
}

std::string toString(Severity severity) {
  return severity == Severity::Warning ? "warning" : "info";
}

bool DataQualityReport::ok() const { return warnings() == 0; }

long DataQualityReport::warnings() const {
  return static_cast<long>(std::count_if(findings.begin(), findings.end(), [](const auto& f) {
    return f.severity == Severity::Warning;
  }));
}

std::vector<std::string> DataQualityReport::warningTexts() const {
  std::vector<std::string> texts;
  for (const auto& f : findings)
    if (f.severity == Severity::Warning) texts.push_back(f.text);
  return texts;
}

std::string DataQualityReport::report() const {
  const long w = warnings();
  std::string text = "data quality (joints, " + std::to_string(samples) + " samples): " +
                     (w == 0 ? std::string("no warnings") : std::to_string(w) + " warning(s)") +
                     "\n";
  for (const auto& f : findings)
    text += std::string(f.severity == Severity::Warning ? "  warning  " : "  info     ") + f.text +
            "\n";
  return text;
}

DataQualityReport assessDataQuality(const Log& log, const DataQualityOptions& options) {
  return assess(log, nullptr, options);
}

DataQualityReport assessDataQuality(const Log& log, const pinocchio::Model& model,
                                    const DataQualityOptions& options) {
  return assess(log, &model, options);
}

}  // namespace heft::io
