#pragma once
/// \file Numbers in messages and reports.
#include <sstream>
#include <string>

namespace heft {

/// x with `precision` significant digits in std::ostream's default float format (like %g), for
/// error messages and reports.
inline std::string formatNumber(double x, int precision = 6) {
  std::ostringstream s;
  s.precision(precision);
  s << x;
  return s.str();
}

}  // namespace heft
