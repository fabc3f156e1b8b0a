#pragma once
/// \file A simulated log written once per test process (ctest runs every case as its own process,
/// in parallel: the file name carries the process id). The including test links heft::sim and
/// heft::io through its own includes (heft/sim/scenario.hpp, heft/io/log_io.hpp).
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <string>

#include "heft/io/log_io.hpp"
#include "heft/sim/scenario.hpp"
#include "support/scratch.hpp"

namespace heft::test {

/// Simulates `scenario` for `duration` s at nominal noise with `seed` and writes it to the scratch
/// file <group>/<scenario>_<seed>_<pid>.h5; returns the path.
inline std::string writeSimulatedLog(const std::string& group, const std::string& scenario,
                                     double duration, std::uint64_t seed) {
  const std::filesystem::path p = scratchPath(
      group, scenario + "_" + std::to_string(seed) + "_" + std::to_string(::getpid()) + ".h5");
  sim::SimulationOptions o;
  o.duration = duration;
  o.noise = "nominal";
  o.seed = seed;
  const sim::SimulationResult r = sim::simulate(sim::findScenario(scenario), o);
  EXPECT_TRUE(r.summary.ok()) << r.summary.report();
  io::writeLog(r.log, p.string());
  return p.string();
}

}  // namespace heft::test
