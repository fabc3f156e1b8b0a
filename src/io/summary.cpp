#include "heft/io/summary.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "heft/common/error.hpp"

namespace heft::io {

void SummaryOptions::validate() const {
  require(std::isfinite(dropout_factor) && dropout_factor > 1, "SummaryOptions.dropout_factor",
          "> 1", std::to_string(dropout_factor));
}

namespace {

GroupSummary summarizeTime(const std::string& name, const Eigen::VectorXd& time,
                           double dropout_factor, const std::string& channels) {
  GroupSummary g;
  g.name = name;
  g.channels = channels;
  g.samples = static_cast<long>(time.size());
  if (time.size() == 0) return g;
  g.start = time(0);
  g.end = time(time.size() - 1);
  if (time.size() < 2) return g;
  std::vector<double> periods(time.size() - 1);
  for (Eigen::Index i = 0; i + 1 < time.size(); ++i) {
    periods[i] = time(i + 1) - time(i);
    if (periods[i] > g.largest_gap) {
      g.largest_gap = periods[i];
      g.largest_gap_at = time(i);
    }
  }
  std::vector<double> sorted = periods;
  std::nth_element(sorted.begin(), sorted.begin() + sorted.size() / 2, sorted.end());
  const double median = sorted[sorted.size() / 2];
  g.median_rate = median > 0 ? 1.0 / median : 0;
  for (double p : periods) {
    if (p > dropout_factor * median) {
      ++g.dropouts;
      g.dropout_time += p;
    }
  }
  return g;
}

std::string format(const char* pattern, double a) {
  char buffer[64];
  std::snprintf(buffer, sizeof(buffer), pattern, a);
  return buffer;
}

}  // namespace

LogSummary summarize(const Log& log, const SummaryOptions& options) {
  options.validate();
  LogSummary s;
  s.meta = log.meta;
  const double f = options.dropout_factor;
  const JointSeries& j = log.joints;
  if (!j.empty()) {  // empty only in an estimates-only log
    std::string channels = "q v tau";
    if (j.tau_cmd.size() > 0) channels += " tau_cmd";
    if (j.base_pose.size() > 0) channels += " base_pose";
    if (j.base_twist.size() > 0) channels += " base_twist";
    channels += " (" + std::to_string(j.names.size()) + " joints)";
    s.groups.push_back(summarizeTime("joints", j.time, f, channels));
  }
  if (log.imu) {
    s.groups.push_back(
        summarizeTime("imu", log.imu->time, f,
                      log.imu->orientation.size() > 0 ? "gyro accel orientation" : "gyro accel"));
  }
  if (log.mocap)
    s.groups.push_back(summarizeTime("mocap", log.mocap->time, f, "position orientation"));
  if (log.force_torque)
    s.groups.push_back(summarizeTime("force_torque", log.force_torque->time, f,
                                     std::to_string(log.force_torque->names.size()) + " sensors"));
  if (log.contacts) {
    const ContactSeries& c = *log.contacts;
    s.groups.push_back(
        summarizeTime("contacts", c.time, f, std::to_string(c.names.size()) + " flags"));
    s.contact_names = c.names;
    for (Eigen::Index k = 0; k < c.flags.cols(); ++k) {
      const double on = c.flags.col(k).cast<double>().sum();
      s.contact_fraction.push_back(c.flags.rows() > 0 ? on / static_cast<double>(c.flags.rows())
                                                      : 0.0);
    }
  }
  if (log.truth) {
    const TruthSeries& t = *log.truth;
    s.has_truth = true;
    std::vector<std::string> parts;
    if (t.time.size() > 0) {
      std::string states = "states (q v a";
      if (t.base_pose.size() > 0) states += " base_pose";
      if (t.base_twist.size() > 0) states += " base_twist";
      if (t.base_acceleration.size() > 0) states += " base_acceleration";
      parts.push_back(states + ")");
      if (!t.contact_names.empty()) {
        parts.push_back(std::to_string(t.contact_names.size()) + " contact forces" +
                        (t.contact_flags.size() > 0 ? " and flags" : ""));
      }
      s.groups.push_back(summarizeTime("truth", t.time, f, parts.front()));
    }
    if (!t.body_names.empty()) parts.push_back(std::to_string(t.body_names.size()) + " bodies");
    for (std::size_t i = 0; i < parts.size(); ++i) s.truth += (i ? ", " : "") + parts[i];
  }
  if (log.estimates) {
    const EstimateSeries& e = *log.estimates;
    std::string channels = "body_pi";
    if (e.body_pi_std.size() > 0) channels += " body_pi_std";
    if (e.nis.size() > 0) channels += " nis";
    if (e.status.size() > 0) channels += " status";
    channels += " (" + std::to_string(e.body_names.size()) + " bodies" +
                (e.estimator.empty() ? "" : ", " + e.estimator) + ")";
    s.groups.push_back(summarizeTime("estimates", e.time, f, channels));
  }
  return s;
}

std::string LogSummary::report() const {
  std::string out;
  out += "robot: " + (meta.robot.empty() ? std::string("(not given)") : meta.robot) + ", base " +
         toString(meta.base_type) + ", units " + meta.units + "\n";
  if (!meta.scenario.empty() || !meta.noise_profile.empty() || meta.seed) {
    out +=
        "scenario: " + (meta.scenario.empty() ? std::string("-") : meta.scenario) +
        ", noise profile: " + (meta.noise_profile.empty() ? std::string("-") : meta.noise_profile) +
        ", seed: " + (meta.seed ? std::to_string(*meta.seed) : std::string("-")) + "\n";
  }
  char line[256];
  std::snprintf(line, sizeof(line), "%-9s %8s %10s %10s %10s %10s %12s %9s\n", "group", "samples",
                "start [s]", "end [s]", "rate [Hz]", "max gap[s]", "gap at [s]", "dropouts");
  out += line;
  for (const auto& g : groups) {
    std::snprintf(line, sizeof(line), "%-9s %8ld %10.4f %10.4f %10.2f %10.4f %12.4f %9ld",
                  g.name.c_str(), g.samples, g.start, g.end, g.median_rate, g.largest_gap,
                  g.largest_gap_at, g.dropouts);
    out += line;
    if (g.dropouts > 0) out += " (" + format("%.3f", g.dropout_time) + " s)";
    out += "  " + g.channels + "\n";
  }
  if (!groups.empty()) {
    out += "duration: " + format("%.4f", groups.front().end - groups.front().start) + " s (" +
           groups.front().name + ")\n";
  }
  if (contact_names.empty()) {
    out += "contacts: none\n";
  } else {
    out += "contacts:";
    for (std::size_t i = 0; i < contact_names.size(); ++i) {
      out += " " + contact_names[i] + " (" + format("%.0f", 100 * contact_fraction[i]) +
             "% in contact)";
    }
    out += "\n";
  }
  out += "truth: " + (has_truth ? truth : std::string("none")) + "\n";
  return out;
}

}  // namespace heft::io
