#pragma once
/// \file Keeping a log-Cholesky estimate inside the project's consistency margin
/// (kConsistencyMargin in inertia.hpp), for estimators that update theta in place (the online EKF).
///
/// With theta = [alpha, d1, d2, d3, s12, s23, s13, t1, t2, t3] and V = [[e^d1, s12, s13],
/// [0, e^d2, s23], [0, 0, e^d3]], the second moments of the body about its COM are
/// Sigma_c = e^{2 alpha} V V^T, and the relative margin (D1 + D2 - D3) / (D1 + D2 + D3) equals
/// lambda_min(Sigma_c) / trace(Sigma_c): it depends on V alone, not on the mass or the COM.
#include "heft/common/types.hpp"

namespace heft::inertia {

/// lambda_min(V V^T) / trace(V V^T) of a log-Cholesky theta (ConsistencyReport::relative_margin of
/// its pi). Allocation-free; theta must be finite.
double logCholeskyRelativeMargin(const Vector10& theta);

/// When theta's relative margin is below `target` (in (0, 1/3)): adds the same amount delta to each
/// second moment about the COM (Sigma_c + delta 1, so each principal moment of inertia about the
/// COM grows by 2 delta), the smallest such change that brings the margin to `target`, and
/// refactors V. Mass and COM (alpha, t) are unchanged. Returns whether theta changed.
/// Allocation-free.
bool liftLogCholeskyToMargin(Vector10& theta, double target);

}  // namespace heft::inertia
