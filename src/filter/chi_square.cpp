#include "heft/filter/chi_square.hpp"

#include <cmath>
#include <limits>
#include <string>

#include "heft/common/error.hpp"
#include "heft/common/format.hpp"

namespace heft::filter {
namespace {

// P(a, x) by the series e^{-x} x^a sum_n x^n / Gamma(a + n + 1), accurate for x < a + 1.
double lowerGammaSeries(double a, double x) {
  double term = 1.0 / a, sum = term;
  for (int n = 1; n < 10000; ++n) {
    term *= x / (a + n);
    sum += term;
    if (std::abs(term) < std::abs(sum) * 1e-16) break;
  }
  return sum * std::exp(-x + a * std::log(x) - std::lgamma(a));
}

// Q(a, x) = 1 - P(a, x) by the continued fraction of Gamma(a, x) (modified Lentz), for x >= a + 1.
double upperGammaFraction(double a, double x) {
  constexpr double tiny = 1e-300;
  double b = x + 1 - a, c = 1 / tiny, d = 1 / b, h = d;
  for (int i = 1; i < 10000; ++i) {
    const double an = -i * (i - a);
    b += 2;
    d = an * d + b;
    if (std::abs(d) < tiny) d = tiny;
    c = b + an / c;
    if (std::abs(c) < tiny) c = tiny;
    d = 1 / d;
    const double delta = d * c;
    h *= delta;
    if (std::abs(delta - 1) < 1e-16) break;
  }
  return std::exp(-x + a * std::log(x) - std::lgamma(a)) * h;
}

void requireDof(int dof) {
  require(dof >= 1, "chi-square degrees of freedom", "an integer >= 1", std::to_string(dof));
}

}  // namespace

double chiSquareCdf(double x, int dof) {
  requireDof(dof);
  require(std::isfinite(x) && x >= 0, "chi-square argument", "a finite value >= 0",
          formatNumber(x));
  if (x == 0) return 0;
  const double a = 0.5 * dof, half = 0.5 * x;
  return half < a + 1 ? lowerGammaSeries(a, half) : 1 - upperGammaFraction(a, half);
}

double chiSquareQuantile(double probability, int dof) {
  requireDof(dof);
  require(probability > 0 && probability < 1, "chi-square probability", "a value in (0, 1)",
          formatNumber(probability));
  double low = 0, high = dof + 10.0;
  while (chiSquareCdf(high, dof) < probability) high *= 2;
  for (int i = 0; i < 200 && high - low > 1e-12 * high; ++i) {
    const double mid = 0.5 * (low + high);
    (chiSquareCdf(mid, dof) < probability ? low : high) = mid;
  }
  return 0.5 * (low + high);
}

}  // namespace heft::filter
