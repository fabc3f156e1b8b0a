// Study behind docs/filter.md (label `long`): the two example filter jobs on MuJoCo logs of several
// seeds and both noise profiles, the EKF next to the linear-KF baseline and next to itself without
// gating; each log twice: as the example runs (no truth input: heft's base state, F/T sensors) and
// with the base state and contact forces from the truth group (the filter alone). Rewrites
// studies/filter/results.md with what it measured; asserts only that every run completed and that
// the log-Cholesky estimates stayed physically consistent (the study's numbers are reported, not
// gated: the default suite's filter_job tests hold the thresholds).
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <sstream>
#include <string>

#include "heft/common/format.hpp"
#include "heft/io/atomic_file.hpp"
#include "heft/io/log_io.hpp"
#include "heft/jobs/filter_job.hpp"
#include "heft/sim/scenario.hpp"
#include "support/simulated_log.hpp"

namespace heft::filter {
namespace {

using jobs::FilterJob;

namespace fs = std::filesystem;

std::string simulatedLog(const std::string& scenario, std::uint64_t seed, const std::string& noise,
                         sim::SimulationSummary& summary, bool force_torque) {
  const fs::path dir = fs::path(HEFT_BINARY_DIR) / "test-scratch" / "filter_long";
  fs::create_directories(dir);
  const fs::path path = dir / (scenario + "_" + noise + "_" + std::to_string(seed) + "_" +
                               std::to_string(::getpid()) + ".h5");
  summary = test::writeSimulatedLog(scenario, seed, noise, path.string(), force_torque);
  return path.string();
}

FilterJob::Config exampleConfig(const std::string& name, const std::string& log) {
  FilterJob::Config config =
      FilterJob::load(std::string(HEFT_SOURCE_DIR) + "/data/examples/" + name);
  config.log = log;
  return config;
}

// The inputs a row runs with: the example as it is (no truth input: heft's base state, the F/T
// sensors), the same with the contact forces projected out instead of measured (joints, IMU and
// contact flags only), or the truth group's base state and contact forces (the sole corners the
// example lists), which isolates the filter. Every row of a seed replays the same log.
enum class Inputs { NoTruth, NoTruthProjected, Smoothed, SmoothedProjected, TruthFed };
const char* name(Inputs inputs) {
  switch (inputs) {
    case Inputs::NoTruth:
      return "no truth";
    case Inputs::NoTruthProjected:
      return "no truth, projected";
    case Inputs::Smoothed:
      return "no truth, smoothed base state";
    case Inputs::SmoothedProjected:
      return "no truth, projected, smoothed base state";
    case Inputs::TruthFed:
      return "truth-fed";
  }
  return "?";
}

FilterJob::Config configFor(const std::string& example, const std::string& log, Inputs inputs) {
  FilterJob::Config config = exampleConfig(example, log);
  if (inputs == Inputs::NoTruthProjected || inputs == Inputs::SmoothedProjected)
    config.contact_forces = FilterJob::ContactForceSource::Projected;
  config.smooth_base_state = inputs == Inputs::Smoothed || inputs == Inputs::SmoothedProjected;
  if (inputs == Inputs::TruthFed) {
    config.base_state = FilterJob::BaseStateSource::Truth;
    config.contact_forces = FilterJob::ContactForceSource::Truth;
  }
  return config;
}

std::string f(double x, int precision = 3) { return formatNumber(x, precision); }
std::string pct(double x) { return formatNumber(100 * x, 3) + " %"; }

TEST(Studies, Filter) {
  std::ostringstream forearm, wave;
  forearm << "| noise | seed | inputs | EKF: settle within 3 % [s] | EKF: final mass [kg] (truth) "
             "| EKF: "
             "mass RMS | EKF: inconsistent [s] | EKF: gated / overrides | KF on pi: settle [s] | "
             "KF on pi: inconsistent [s] | update() median [us] "
             "|\n|---|---|---|---|---|---|---|---|---|---|---|\n";
  wave
      << "| noise | seed | inputs | gated: largest impact transient [kg] | ungated: largest impact "
         "transient "
         "[kg] | ratio | gated: mass RMS | ungated: mass RMS | gated: updates gated / overrides | "
         "touchdowns | output caught up [s] | KF on pi: inconsistent [s] |\n"
         "|---|---|---|---|---|---|---|---|---|---|---|---|\n";
  for (const std::string noise : {"nominal", "harsh"}) {
    for (std::uint64_t seed : {0, 1, 2, 3, 4, 5, 6, 7}) {
      // seeds 4-7: held out, the forearm at nominal noise only
      if (seed > 3 && noise != "nominal") continue;
      sim::SimulationSummary summary;
      const std::string forearm_log =
          simulatedLog("talos-forearm-step", seed, noise, summary, true);
      ASSERT_TRUE(summary.ok()) << summary.report();
      const std::string wave_log =
          seed <= 3 ? simulatedLog("talos-step-mass-wave", seed, noise, summary, true) : "";
      ASSERT_TRUE(summary.ok()) << summary.report();
      for (const Inputs input : {Inputs::NoTruth, Inputs::NoTruthProjected, Inputs::Smoothed,
                                 Inputs::SmoothedProjected, Inputs::TruthFed}) {
        const std::string inputs = name(input);
        {
          const FilterJob::Result r =
              FilterJob::run(configFor("talos_forearm_filter.yaml", forearm_log, input));
          const FilterRunSummary& ekf = r.summaries.at(0);
          const FilterRunSummary& kf = r.summaries.at(1);
          EXPECT_EQ(ekf.inconsistent_time, 0.0);
          const BodyMetrics& m = ekf.bodies.at(0);
          const BodyMetrics& mk = kf.bodies.at(0);
          auto settle = [](const BodyMetrics& b) {
            return b.steps.size() == 1 && b.steps[0].settle_time ? f(*b.steps[0].settle_time)
                                                                 : std::string("never");
          };
          forearm << "| " << noise << " | " << seed << " | " << inputs << " | " << settle(m)
                  << " | " << f(m.final.mass_estimate) << " (" << f(m.final.mass_true) << ") | "
                  << pct(m.mass_rms_relative) << " | " << f(ekf.inconsistent_time) << " | "
                  << ekf.counters.gated << " / " << ekf.counters.overridden << " | " << settle(mk)
                  << " | " << f(kf.inconsistent_time) << " | " << f(ekf.update_median_us) << " |\n";
        }
        if (!wave_log.empty() && (input == Inputs::NoTruth || input == Inputs::TruthFed)) {
          FilterJob::Config config = configFor("talos_step_mass_wave_filter.yaml", wave_log, input);
          const FilterJob::Result gated = FilterJob::run(config);
          config.options.gating = false;
          config.baseline = false;
          const FilterJob::Result ungated = FilterJob::run(config);
          const FilterRunSummary& g = gated.summaries.at(0);
          const FilterRunSummary& u = ungated.summaries.at(0);
          EXPECT_EQ(g.inconsistent_time, 0.0);
          EXPECT_EQ(u.inconsistent_time, 0.0);
          const BodyMetrics& mg = g.bodies.at(0);
          const BodyMetrics& mu = u.bodies.at(0);
          // the transients count only after the output caught up: without that, no figure
          const bool counted = g.caught_up_time && u.caught_up_time;
          const std::string none = "- (never caught up)";
          wave << "| " << noise << " | " << seed << " | " << inputs << " | "
               << (counted ? f(mg.largest_impact_transient) : none) << " | "
               << (counted ? f(mu.largest_impact_transient) : none) << " | "
               << (counted ? f(mg.largest_impact_transient / mu.largest_impact_transient) : none)
               << " | " << pct(mg.mass_rms_relative) << " | " << pct(mu.mass_rms_relative) << " | "
               << g.counters.gated << " / " << g.counters.overridden << " | " << mg.touchdowns
               << " | " << (g.caught_up_time ? f(*g.caught_up_time) : std::string("never")) << " | "
               << f(gated.summaries.at(1).inconsistent_time) << " |\n";
        }
      }
      fs::remove(forearm_log);
      if (!wave_log.empty()) fs::remove(wave_log);
    }
  }
  std::ostringstream md;
  md << "# Online inertial EKF: measured\n\n"
        "Written by `Studies.Filter` (tests/filter_long_test.cpp, label `long`); docs/filter.md "
        "explains the metrics, the defaults and how they were chosen. Each row: one MuJoCo run "
        "(heft::sim, the given noise profile and seed) replayed through the example config in "
        "data/examples with default filter options, every row of a seed on the same log (simulated "
        "with the F/T sensors). Inputs `no truth`: the example as it is (heft's causal base state "
        "with the level floor, the sensors' wrenches). `no truth, projected`: the same with the "
        "contact forces projected out (`contact_forces: projected`: joints, IMU and contact flags "
        "only). `smoothed base state`: the same two with the base-state estimator's backward pass "
        "(`smooth_base_state: true`, an offline replay; the others are causal, as in a control "
        "loop). `truth-fed`: base state and contact forces from the log's truth group, which "
        "measures the filter alone. The defaults were tuned on seed 0 at nominal noise with "
        "truth-fed inputs, except the difference half width h = 80, chosen among 40, 60, 80, 100 "
        "and 120 on seeds 0-3 at nominal noise, both inputs; the forearm's seeds 4-7 were not "
        "looked at before that choice (held out).\n\n"
        "## talos-forearm-step: 5.4 kg appears on the forearm at t = 6 s (elbow curls)\n\n"
        "Settle: from the step until the estimate that is available then (80 ms differentiation "
        "delay included) is within 3 % of the truth mass for the rest of the run. Mass RMS: "
        "relative, over every update after the start-up output ramp (also before the step, "
        "where the forearm is 1.1 kg and 3 % is 33 g).\n\n"
     << forearm.str()
     << "\n## talos-step-mass-wave: torso_2_link mass 30 +- 5 kg square wave while stepping in "
        "place\n\nLargest impact transient: over the touchdowns after the output caught up and "
        "not within [-0.5 s, +1 s] of a truth step, the largest change of the mass estimate within "
        "0.3 s after the touchdown. Ratio = gated / ungated (the target was <= 0.5; with the "
        "torques and forces averaged as the slope weighs the accelerations, the touchdowns leave "
        "the gate no outlier to cut, docs/filter.md).\n\n"
     << wave.str();
  const std::string path = std::string(HEFT_SOURCE_DIR) + "/studies/filter/results.md";
  fs::create_directories(fs::path(path).parent_path());
  io::writeTextFileAtomically(path, md.str(), true);
  std::cout << md.str();
}

}  // namespace
}  // namespace heft::filter
