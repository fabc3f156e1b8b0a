#pragma once
/// \file A MuJoCo run of a named scenario (heft::sim) written to an HDF5 log, for the tests and
/// studies that replay logs through a job. The including test file must itself include
/// "heft/sim/..." and "heft/io/..." so that CMake links those modules (tests/CMakeLists.txt).
#include <cstdint>
#include <string>

#include "heft/io/log_io.hpp"
#include "heft/sim/scenario.hpp"

namespace heft::test {

/// Simulates `scenario` (its whole duration) with this noise profile and seed, writes the log to
/// `path` (replacing it) and returns the simulation's summary. `force_torque`: with the simulated
/// F/T sensors (heft simulate --force-torque).
inline sim::SimulationSummary writeSimulatedLog(const std::string& scenario, std::uint64_t seed,
                                                const std::string& noise, const std::string& path,
                                                bool force_torque = false) {
  sim::SimulationOptions options;
  options.seed = seed;
  options.noise = noise;
  options.force_torque = force_torque;
  const sim::SimulationResult run = sim::simulate(sim::findScenario(scenario), options);
  io::WriteOptions write;
  write.overwrite = true;
  io::writeLog(run.log, path, write);
  return run.summary;
}

/// A MuJoCo run of `scenario` for `duration` seconds with the nominal sensor noise but without its
/// torque bias, for estimates without torque offsets (estimate.torque_offsets, docs/estimation.md).
inline sim::SimulationResult simulateNominalWithoutTorqueBias(const std::string& scenario,
                                                              double duration, std::uint64_t seed) {
  sim::SimulationOptions options;
  options.duration = duration;
  options.seed = seed;
  sim::NoiseProfile profile = sim::NoiseProfile::fromName("nominal");
  profile.torque_bias = 0;
  options.profile = profile;
  return sim::simulate(sim::findScenario(scenario), options);
}

}  // namespace heft::test
