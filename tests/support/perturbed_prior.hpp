#pragma once
/// \file A wrong nominal model for the identification tests and studies: the prior the estimators
/// start from, within about two prior standard deviations. Every body's mass scaled by
/// U(0.9, 1.1), its COM shifted by up to 1 cm per axis, its inertia about the COM scaled by
/// U(0.8, 1.2); still physically consistent. The sim scenarios "panda" and "panda-friction" use the
/// nominal inertias, so without this the estimators would start at the truth. The including test
/// file must itself include "heft/inertia/..." and "heft/model/..." so that CMake links them.
#include <random>

#include "heft/inertia/inertia.hpp"
#include "heft/model/identified_set.hpp"

namespace heft::test {

inline model::IdentifiedSet perturbedPrior(model::IdentifiedSet set, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> mass_scale(0.9, 1.1), inertia_scale(0.8, 1.2),
      shift(-0.01, 0.01);
  for (auto& b : set.bodies) {
    const double m = inertia::mass(b.prior_mean);
    const Eigen::Vector3d c = inertia::centerOfMass(b.prior_mean);
    const Eigen::Matrix3d Ic = inertia::rotationalInertiaAtCom(b.prior_mean);
    const Eigen::Vector3d dc(shift(rng), shift(rng), shift(rng));
    const double sm = mass_scale(rng), si = inertia_scale(rng);
    b.prior_mean = inertia::piFromMassComInertia(sm * m, c + dc, si * Ic);
    b.prior_covariance = model::defaultBodyCovariance(b.prior_mean);
  }
  return set;
}

}  // namespace heft::test
