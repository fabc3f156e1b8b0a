#pragma once
/// \file A small random number generator whose sequence does not depend on the standard library
/// (std::normal_distribution's does): SplitMix64 seeding, xoshiro256** numbers, Box-Muller
/// normals. The simulator draws all noise from it, so one seed gives one file.
#include <cstdint>

namespace heft::sim {

class Rng {
 public:
  /// `seed` and `stream` select independent sequences (one stream per sensor, so changing one
  /// sensor's rate does not change the noise of another).
  explicit Rng(std::uint64_t seed = 0, std::uint64_t stream = 0);
  /// Next 64 random bits.
  std::uint64_t next();
  /// Uniform in [0, 1) with 53 random bits.
  double uniform();
  /// Uniform in [lo, hi).
  double uniform(double lo, double hi) { return lo + (hi - lo) * uniform(); }
  /// Standard normal (Box-Muller; the second value of each pair is kept for the next call).
  double normal();
  /// Normal with standard deviation `sigma` (0 gives exactly 0 without consuming numbers).
  double normal(double sigma) { return sigma == 0 ? 0.0 : sigma * normal(); }

 private:
  std::uint64_t s_[4];
  bool has_spare_ = false;
  double spare_ = 0;
};

}  // namespace heft::sim
