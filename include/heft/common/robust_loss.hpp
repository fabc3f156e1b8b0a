#pragma once
/// \file Robust losses on whitened residual rows, shared by the least-squares estimators.
///
/// Each whitened residual r (already divided by its standard deviation) becomes
/// sign(r) sqrt(2 rho(r)), so that a Gauss-Newton solver on the new rows minimizes sum rho(r_i)
/// with a consistent model (its Jacobian rows are the old ones times d/dr of that map), and its
/// line search compares the robust costs themselves. Huber: rho = r^2 / 2 for |r| <= k, k |r| - k^2
/// / 2 beyond. Cauchy: rho = k^2 / 2 log(1 + (r / k)^2). k is in units of the row's std.
#include <string>

namespace heft {

enum class RobustLoss { None, Huber, Cauchy };
std::string toString(RobustLoss loss);
/// "none", "huber", "cauchy"; throws InputError naming the accepted values.
RobustLoss parseRobustLoss(const std::string& name);
/// The default k: Huber 1.345, Cauchy 2.385 (95 % efficiency on Gaussian noise); 1 for None.
double defaultLossScale(RobustLoss loss);

/// sign(r) sqrt(2 rho(r)); with `derivative`, its derivative in r (1 in Huber's quadratic region
/// and, in the limit, at r = 0).
double robustResidual(RobustLoss loss, double k, double r, double* derivative);

}  // namespace heft
