#include "heft/common/error.hpp"

#include <cmath>

#include "heft/common/format.hpp"

namespace heft {

void require(bool condition, const std::string& what, const std::string& expected,
             const std::string& got) {
  if (!condition) throw InputError(what + ": expected " + expected + ", got " + got);
}

void requirePositive(double x, const std::string& what, const std::string& unit) {
  require(std::isfinite(x) && x > 0, what, "a finite value > 0" + unit, formatNumber(x, 6));
}

void requireNonNegative(double x, const std::string& what, const std::string& unit) {
  require(std::isfinite(x) && x >= 0, what, "a finite value >= 0" + unit, formatNumber(x, 6));
}

}  // namespace heft
