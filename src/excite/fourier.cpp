#include "heft/excite/fourier.hpp"

#include <algorithm>
#include <cmath>
#include <string>

#include "heft/common/error.hpp"

namespace heft::excite {

void FourierSeries::validate() const {
  requirePositive(base_frequency, "base_frequency", " Hz");
  require(a.size() == b.size(), "Fourier coefficients", "as many b as a",
          std::to_string(a.size()) + " a, " + std::to_string(b.size()) + " b");
  require(std::isfinite(q0) && a.allFinite() && b.allFinite(), "Fourier coefficients",
          "finite values", "non-finite values");
}

JointState evaluate(const FourierSeries& series, double t, double ramp) {
  const double w = 2 * M_PI * series.base_frequency;
  // the periodic part d = q_F - q0 and its derivatives
  double d = 0, dd = 0, ddd = 0;
  for (int l = 0; l < series.harmonics(); ++l) {
    const double wl = w * (l + 1);
    const double s = std::sin(wl * t), c = std::cos(wl * t);
    const double a = series.a[l], b = series.b[l];
    d += (a * s - b * c) / wl;
    dd += a * c + b * s;
    ddd += wl * (b * c - a * s);
  }
  // envelope e(t) and its first two time derivatives
  double e = 1, e1 = 0, e2 = 0;
  if (ramp > 0 && t < ramp) {
    const double x = std::max(t, 0.0) / ramp;
    e = x * x * x * (10 - 15 * x + 6 * x * x);
    e1 = 30 * x * x * (1 - 2 * x + x * x) / ramp;
    e2 = (60 * x - 180 * x * x + 120 * x * x * x) / (ramp * ramp);
  }
  return {series.q0 + e * d, e1 * d + e * dd, e2 * d + 2 * e1 * dd + e * ddd};
}

}  // namespace heft::excite
