#include "heft/filter/replay.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>

#include "heft/common/error.hpp"
#include "heft/inertia/inertia.hpp"

namespace heft::filter {

namespace {

double seconds(std::chrono::steady_clock::time_point since) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - since).count();
}

// ---- metrics against truth ---------------------------------------------------------------------

// truth pi of one body at the estimate times (a varying body, else its constant value)
Eigen::MatrixXd truthPi(const io::TruthSeries& truth, const std::string& body,
                        const Eigen::VectorXd& time) {
  const auto vit =
      std::find(truth.varying_body_names.begin(), truth.varying_body_names.end(), body);
  if (vit != truth.varying_body_names.end()) {
    const int b = static_cast<int>(vit - truth.varying_body_names.begin());
    // zero-order hold: a simulated step is a step, not a ramp between samples
    Eigen::MatrixXd out(time.size(), 10);
    Eigen::Index j = 0;
    for (Eigen::Index i = 0; i < time.size(); ++i) {
      while (j + 1 < truth.time.size() && truth.time[j + 1] <= time[i] + 1e-12) ++j;
      out.row(i) = truth.varying_body_pi.block(j, 10 * b, 1, 10);
    }
    return out;
  }
  const auto it = std::find(truth.body_names.begin(), truth.body_names.end(), body);
  require(it != truth.body_names.end(), "truth/body_names", "the estimated body " + body,
          "a truth group without it");
  return truth.body_pi.row(it - truth.body_names.begin()).replicate(time.size(), 1);
}

// touchdown times: a frame's points go from none in contact to some in contact
std::vector<double> touchdowns(const io::TruthSeries& truth,
                               const std::vector<ContactPoint>& points) {
  std::vector<double> out;
  if (truth.contact_flags.rows() == 0) return out;
  std::vector<std::string> frames;
  for (const auto& p : points)
    if (std::find(frames.begin(), frames.end(), p.frame) == frames.end()) frames.push_back(p.frame);
  for (const std::string& frame : frames) {
    std::vector<int> columns;
    for (const auto& p : points) {
      if (p.frame != frame) continue;
      const auto it = std::find(truth.contact_names.begin(), truth.contact_names.end(), p.name);
      if (it != truth.contact_names.end())
        columns.push_back(static_cast<int>(it - truth.contact_names.begin()));
    }
    if (columns.empty()) continue;
    // a touchdown ends a swing of at least 50 ms: a sole rocking on its corners is not one
    double last_contact = truth.time.size() > 0 ? truth.time[0] : 0;
    for (Eigen::Index k = 0; k < truth.contact_flags.rows(); ++k) {
      bool now = false;
      for (int c : columns) now = now || truth.contact_flags(k, c) != 0;
      if (!now) continue;
      if (k > 0 && truth.time[k] - last_contact > 0.05) out.push_back(truth.time[k]);
      last_contact = truth.time[k];
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace

FilterTrace replay(InertialEkf& filter, const ReplaySamples& s,
                   const std::vector<std::string>& names) {
  FilterTrace trace;
  const bool log_cholesky = filter.options().state == InertialEkfOptions::State::LogCholesky;
  trace.estimator = log_cholesky ? "log-cholesky-ekf" : "linear-pi-kf";
  const int n = static_cast<int>(s.time.size()), np = filter.measurementModel().numParameters();
  std::vector<double> times, nis, update_us;
  std::vector<std::uint8_t> status;
  std::vector<Eigen::VectorXd> pi, pi_std;
  update_us.reserve(n);
  for (int i = 0; i < n; ++i) {
    const auto start = std::chrono::steady_clock::now();
    const UpdateStatus st =
        filter.update(s.time[i], s.q.col(i), s.v.col(i), s.tau.col(i), s.forces.col(i));
    update_us.push_back(1e6 * seconds(start));
    if (st == UpdateStatus::Filling || st == UpdateStatus::RejectedInput) continue;
    times.push_back(filter.estimateTime());
    trace.available_time.push_back(s.time[i]);
    if (!trace.caught_up_time && filter.outputCaughtUp())
      trace.caught_up_time = filter.estimateTime();
    status.push_back(static_cast<std::uint8_t>(st));
    nis.push_back(filter.lastNis());
    pi.push_back(filter.estimate());
    pi_std.push_back(filter.piStandardDeviation());
  }
  std::sort(update_us.begin(), update_us.end());
  trace.update_median_us = update_us[update_us.size() / 2];
  trace.update_max_us = update_us.back();
  trace.counters = filter.counters();
  io::EstimateSeries& e = trace.series;
  e.estimator = trace.estimator;
  e.body_names = names;
  const int E = static_cast<int>(times.size());
  e.time = Eigen::Map<const Eigen::VectorXd>(times.data(), E);
  e.nis = Eigen::Map<const Eigen::VectorXd>(nis.data(), E);
  e.body_pi.resize(E, np);
  e.body_pi_std.resize(E, np);
  e.status.resize(E, 1);
  trace.consistent.resize(E);
  for (int i = 0; i < E; ++i) {
    e.body_pi.row(i) = pi[i].transpose();
    e.body_pi_std.row(i) = pi_std[i].transpose();
    e.status(i, 0) = status[i];
    bool ok = true;
    for (int k = 0; k < np / 10 && ok; ++k) {
      ok = inertia::checkConsistencyMargin(pi[i].segment<10>(10 * k)).consistent;
    }
    trace.consistent[i] = ok;
  }
  return trace;
}

FilterRunSummary summarize(const FilterTrace& trace, const std::vector<std::string>& truth_names,
                           const std::optional<io::TruthSeries>& truth,
                           const std::vector<ContactPoint>& contacts, double settle_tolerance) {
  FilterRunSummary out;
  out.estimator = trace.estimator;
  out.counters = trace.counters;
  out.update_median_us = trace.update_median_us;
  out.update_max_us = trace.update_max_us;
  const io::EstimateSeries& e = trace.series;
  const Eigen::Index E = e.time.size();
  for (Eigen::Index i = 0; i + 1 < E; ++i) {
    if (trace.consistent[i]) continue;
    if (!out.first_inconsistent) out.first_inconsistent = e.time[i];
    out.inconsistent_time += e.time[i + 1] - e.time[i];
  }
  out.caught_up_time = trace.caught_up_time;
  if (!truth || E == 0) return out;
  // the start-up ramp of the rate-limited output is not tracking error: metrics start after it
  const double start_time = trace.caught_up_time ? *trace.caught_up_time : e.time[E - 1];
  const std::vector<double> impacts = touchdowns(*truth, contacts);
  for (std::size_t b = 0; b < e.body_names.size(); ++b) {
    BodyMetrics m;
    m.name = e.body_names[b];
    const Eigen::MatrixXd true_pi = truthPi(*truth, truth_names[b], e.time);
    const Eigen::MatrixXd pi = e.body_pi.middleCols(10 * b, 10);
    m.final = results::bodyError(m.name, pi.row(E - 1).transpose(), true_pi.row(E - 1).transpose());
    double sum = 0;
    int count = 0;
    for (Eigen::Index i = 0; i < E; ++i) {
      const auto st = static_cast<UpdateStatus>(e.status(i, 0));
      if (st == UpdateStatus::Calibrating || e.time[i] < start_time) continue;
      const double r = pi(i, 0) / true_pi(i, 0) - 1;
      sum += r * r;
      ++count;
    }
    m.mass_rms_relative = count > 0 ? std::sqrt(sum / count) : 0;
    // steps: a truth mass change of more than 1 % between two estimate samples
    std::vector<Eigen::Index> step_index;
    for (Eigen::Index i = 1; i < E; ++i) {
      if (std::abs(true_pi(i, 0) - true_pi(i - 1, 0)) > 0.01 * std::abs(true_pi(i - 1, 0)))
        step_index.push_back(i);
    }
    for (std::size_t s = 0; s < step_index.size(); ++s) {
      const Eigen::Index i0 = step_index[s];
      const Eigen::Index i1 = s + 1 < step_index.size() ? step_index[s + 1] : E;
      StepResponse r;
      r.time = e.time[i0];
      r.mass_before = true_pi(i0 - 1, 0);
      r.mass_after = true_pi(i0, 0);
      // the first sample after which the error stays within tolerance until the next step
      Eigen::Index settled = i1;
      for (Eigen::Index i = i1 - 1; i >= i0; --i) {
        if (std::abs(pi(i, 0) / true_pi(i, 0) - 1) > settle_tolerance) break;
        settled = i;
      }
      if (settled < i1) r.settle_time = trace.available_time[settled] - r.time;
      m.steps.push_back(r);
    }
    // impact transients: how far the estimate moves in the 0.3 s after a touchdown, from its value
    // just before; left out: touchdowns before the output caught up, and from 0.5 s before a
    // truth step to 1 s after it (the 0.3 s window, widened by the differentiation window the
    // estimate at time t already sees, would hold the step response)
    for (double td : impacts) {
      bool settling = false;
      for (const StepResponse& r : m.steps)
        settling = settling || (td >= r.time - 0.5 && td < r.time + 1);
      if (settling || td < start_time || td + 0.3 > e.time[E - 1]) continue;
      const Eigen::Index before =
          std::lower_bound(e.time.data(), e.time.data() + E, td) - e.time.data() - 1;
      if (before < 0) continue;
      double largest = 0;
      for (Eigen::Index i = before + 1; i < E && e.time[i] <= td + 0.3; ++i)
        largest = std::max(largest, std::abs(pi(i, 0) - pi(before, 0)));
      m.largest_impact_transient = std::max(m.largest_impact_transient, largest);
      ++m.touchdowns;
    }
    out.bodies.push_back(m);
  }
  return out;
}

}  // namespace heft::filter
