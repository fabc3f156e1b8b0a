#pragma once
/// \file Small summaries of samples.
#include <algorithm>
#include <vector>

namespace heft {

/// The median of a non-empty sample (the mean of the two middle values for an even count).
inline double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  const std::size_t n = values.size();
  return n % 2 ? values[n / 2] : 0.5 * (values[n / 2 - 1] + values[n / 2]);
}

}  // namespace heft
