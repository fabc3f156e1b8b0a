#include "heft/common/robust_loss.hpp"

#include <cmath>

#include "heft/common/error.hpp"

namespace heft {

std::string toString(RobustLoss loss) {
  return loss == RobustLoss::Huber ? "huber" : loss == RobustLoss::Cauchy ? "cauchy" : "none";
}

RobustLoss parseRobustLoss(const std::string& name) {
  if (name == "none") return RobustLoss::None;
  if (name == "huber") return RobustLoss::Huber;
  if (name == "cauchy") return RobustLoss::Cauchy;
  throw InputError("expected none, huber or cauchy, got \"" + name + "\"");
}

double defaultLossScale(RobustLoss loss) {
  return loss == RobustLoss::Huber ? 1.345 : loss == RobustLoss::Cauchy ? 2.385 : 1.0;
}

double robustResidual(RobustLoss loss, double k, double r, double* derivative) {
  const double a = std::abs(r);
  if (loss == RobustLoss::Huber && a > k) {
    const double s = std::sqrt(2 * k * a - k * k);
    if (derivative) *derivative = k / s;
    return r > 0 ? s : -s;
  }
  // below 1e-8 k, log1p(u^2) is u^2 to rounding: the map is the identity (and u^2 could underflow)
  if (loss == RobustLoss::Cauchy && a > 1e-8 * k) {
    const double u = r / k;
    const double s = k * std::sqrt(std::log1p(u * u));
    if (derivative) *derivative = (a / (1 + u * u)) / s;
    return r > 0 ? s : -s;
  }
  if (derivative) *derivative = 1;
  return r;
}

}  // namespace heft
