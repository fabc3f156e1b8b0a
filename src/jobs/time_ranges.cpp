#include "time_ranges.hpp"

#include <algorithm>

#include "heft/common/error.hpp"
#include "heft/common/format.hpp"

namespace heft::jobs {

void requireRangesHoldSamples(const std::vector<identify::TimeRange>& ranges,
                              const std::vector<const io::Log*>& logs, const std::string& where,
                              bool leave_some_out) {
  auto inAny = [&](double t) {
    return std::any_of(ranges.begin(), ranges.end(),
                       [t](const identify::TimeRange& r) { return r.contains(t); });
  };
  double longest = 0;
  bool outside = false;
  for (const io::Log* log : logs) {
    const Eigen::VectorXd& t = log->joints.time;
    longest = std::max(longest, t[t.size() - 1] - t[0]);
    for (Eigen::Index k = 0; k < t.size() && !outside; ++k) outside = !inAny(t[k] - t[0]);
  }
  const std::string span = "(0 to " + formatNumber(longest, 4) + " s from its first sample)";
  for (const identify::TimeRange& r : ranges) {
    bool inside = false;
    for (const io::Log* log : logs) {
      const Eigen::VectorXd& t = log->joints.time;
      for (Eigen::Index k = 0; k < t.size() && !inside; ++k) inside = r.contains(t[k] - t[0]);
    }
    if (!inside)
      throw InputError(where + ": [" + formatNumber(r.start, 4) + ", " + formatNumber(r.end, 4) +
                       "] s holds no sample of the log " + span);
  }
  if (leave_some_out && !outside)
    throw InputError(where + ": the ranges cover the whole log " + span +
                     ": nothing is left to fit on");
}

}  // namespace heft::jobs
