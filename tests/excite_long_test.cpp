// Study studies/excite (label `long`): the designed panda excitation against the panda scenario's
// seeded one of the same duration, both simulated in MuJoCo (nominal noise, seeds 1..3) and
// identified by ordinary least squares on the torque rows (heft::identify, as studies/noise-sweep
// method 1). Prints the table and writes studies/excite/results.md.
//
// Regenerate: cmake --build build --target test_excite_long heft && build/bin/test_excite_long
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <random>
#include <sstream>

#include "heft/excite/collision.hpp"
#include "heft/identify/identify.hpp"
#include "heft/inertia/inertia.hpp"
#include "heft/jobs/excite_job.hpp"
#include "heft/jobs/simulate_job.hpp"
#include "heft/model/identified_set.hpp"
#include "heft/model/robots.hpp"
#include "heft/sim/controller.hpp"
#include "heft/sim/scenario.hpp"
#include "support/perturbed_prior.hpp"

namespace heft {
namespace {

double now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

io::Log simulate(const sim::Scenario& scenario, const std::string& noise, std::uint64_t seed) {
  sim::SimulationOptions o;
  o.noise = noise;
  o.seed = seed;
  sim::SimulationResult r = sim::simulate(scenario, o);
  EXPECT_TRUE(r.summary.ok()) << r.summary.report();
  std::printf("[sim] %s %s seed %llu: max tracking error %.4f rad\n", scenario.name.c_str(),
              noise.c_str(), static_cast<unsigned long long>(seed), r.summary.max_tracking_error);
  return std::move(r.log);
}

// The torque system of a log: decimation 10 (100 Hz), default acceleration filter (SG 81/3);
// noise-free logs: forward-difference accelerations (exact for MuJoCo's Euler step).
identify::LinearSystem torqueSystem(const model::RobotModel& robot, const io::Log& log,
                                    const model::IdentifiedSet& set, bool exact) {
  identify::PreparationOptions prep;
  prep.decimation = 10;
  if (exact) {
    prep.acceleration = identify::AccelerationMethod::ForwardDifference;
    prep.filter = {1, 0};
  }
  const identify::Samples samples = identify::prepareSamples(robot, log, prep);
  return identify::torqueSystem(identify::buildProblem(robot, samples, set, {}));
}

// Self-collision of the configurations q (one column per sample, dt apart) with the check of
// tests/excite_test.cpp (example-robot-data's panda meshes and SRDF).
excite::SelfCollision collisions(const model::RobotModel& panda, const Eigen::MatrixXd& q,
                                 double dt) {
  const std::string urdf = panda.source();
  const std::string root = urdf.substr(0, urdf.find("/example-robot-data/"));
  const std::string srdf = root + "/example-robot-data/robots/panda_description/srdf/panda.srdf";
  excite::TrajectorySamples s;
  s.t = Eigen::VectorXd::LinSpaced(q.cols(), 0, dt * (q.cols() - 1));
  s.q = q;
  return excite::selfCollision(panda.pinocchio(), urdf, srdf, root, s);
}

struct Row {
  std::string trajectory;
  int colliding = 0;                 // samples in self-collision at 100 Hz
  double condition = 0;              // heft excite's prediction, base regressor of the design grid
  std::vector<double> error;         // per seed, |K (x_hat - x*)| / |K x*|
  std::vector<double> ls_condition;  // the LS's own (equilibrated) condition number
};

std::string table(const std::vector<Row>& rows) {
  std::ostringstream md;
  md << "| trajectory | self-collision (samples of 2001) | cond(Y_b), design grid | base error "
        "seed 1 | seed 2 | seed 3 | mean | LS condition (equilibrated), seed 1 |\n"
        "|---|---|---|---|---|---|---|---|\n";
  for (const Row& r : rows) {
    double mean = 0;
    md << "| " << r.trajectory << " | " << r.colliding << " | " << r.condition;
    for (double e : r.error) {
      char b[32];
      std::snprintf(b, sizeof b, "%.3g %%", 100 * e);
      md << " | " << b;
      mean += e / r.error.size();
    }
    char b[32];
    std::snprintf(b, sizeof b, "%.3g %%", 100 * mean);
    md << " | " << b << " | " << r.ls_condition.front() << " |\n";
  }
  return md.str();
}

}  // namespace

TEST(Studies, Excitation) {
  const double t0 = now();
  const std::string config_path = std::string(HEFT_SOURCE_DIR) + "/data/examples/panda_excite.yaml";
  const jobs::ExciteJob::Config config = jobs::ExciteJob::load(config_path);
  const jobs::ExciteJob::Result design = jobs::ExciteJob::run(config);
  ASSERT_TRUE(design.ok()) << design.report();
  std::printf("%s", design.report().c_str());
  sim::Scenario designed =
      jobs::SimulateJob::parse(design.scenario_yaml, "designed.yaml", ".").scenario;
  jobs::ExciteJob::Config logdet_config = config;
  logdet_config.design.criterion = excite::Criterion::LogDet;
  // the log-det design is simulated even when it fails the job's checks (the table says which)
  const jobs::ExciteJob::Result logdet = jobs::ExciteJob::run(logdet_config);
  std::printf("%s", logdet.report().c_str());
  sim::Scenario designed_logdet =
      jobs::SimulateJob::parse(logdet.scenario_yaml, "logdet.yaml", ".").scenario;
  sim::Scenario seeded = sim::findScenario(config.reference_scenario);
  seeded.duration = config.design.duration;

  const model::RobotModel panda = model::loadRobot("panda");
  const model::IdentifiedSet set = test::perturbedPrior(model::IdentifiedSet::build(panda, {}), 11);
  // one base map K for both trajectories: the noise-free seeded log's torque system
  const io::Log clean = simulate(seeded, "none", 1);
  const identify::LinearSystem clean_system = torqueSystem(panda, clean, set, true);
  const Eigen::VectorXd x0 = identify::nominalLinearVector(clean_system.layout, set, {});
  const identify::LeastSquaresResult clean_ls = identify::solveLeastSquares(clean_system, x0);
  const identify::BaseParameters base = clean_ls.base;

  const sim::Reference seeded_ref =
      sim::fourierReference(panda, seeded.fourier, config.design.duration, 0.01);
  std::vector<Row> rows = {{"seeded (panda scenario, seed 7)",
                            collisions(panda, seeded_ref.q, 0.01).colliding,
                            design.before.condition,
                            {},
                            {}},
                           {"designed (heft excite, condition)",
                            design.collision.colliding,
                            design.after.condition,
                            {},
                            {}},
                           {"designed (heft excite, logdet)",
                            logdet.collision.colliding,
                            logdet.after.condition,
                            {},
                            {}}};
  const sim::Scenario* scenarios[3] = {&seeded, &designed, &designed_logdet};
  for (int i = 0; i < 3; ++i) {
    for (std::uint64_t seed : {1, 2, 3}) {
      const io::Log log = simulate(*scenarios[i], "nominal", seed);
      const identify::LinearSystem system = torqueSystem(panda, log, set, false);
      const identify::LeastSquaresResult ls = identify::solveLeastSquares(system, x0);
      const Eigen::VectorXd truth = results::truthLinearVector(panda, log, system.layout);
      rows[i].error.push_back(identify::baseParameterError(clean_system, base, ls.x, truth).norm);
      rows[i].ls_condition.push_back(ls.condition_number);
    }
  }
  const std::string text = table(rows);
  std::printf("%s", text.c_str());
  std::ostringstream md;
  md << "# Excitation design: designed against seeded panda excitation\n\n"
     << "Generated by `Studies.Excitation` in tests/excite_long_test.cpp; regenerate with\n\n"
     << "```\ncmake --build build --target test_excite_long heft && "
        "build/bin/test_excite_long\n```\n\n"
     << "The design alone: `build/bin/heft excite data/examples/panda_excite.yaml --out "
        "out/excite`.\n\n"
     << "## Protocol\n\n"
     << "- Designed: `heft excite data/examples/panda_excite.yaml` (9 joints, 5 harmonics of "
        "0.1 Hz, 20 s, 2 s ramp, criterion `condition`, CMA-ES 300 generations, seed 1), and the "
        "same with `criterion: logdet`, each played by its scenario.yaml. Seeded: the built-in "
        "`panda` scenario (coefficient seed 7), 20 s. "
        "Same controller, same MuJoCo model (no friction).\n"
     << "- Logs: noise profile `nominal`, seeds 1, 2, 3, 1 kHz.\n"
     << "- Identification: heft::identify ordinary least squares on the joint-torque rows "
        "(decimation 10, Savitzky-Golay acceleration window 81 order 3: the defaults), the 9 "
        "panda links (90 inertial parameters), started from the perturbed prior of "
        "studies/noise-sweep (seed 11).\n"
     << "- Metric: `|K (x_hat - x*)| / |K x*|`, K the base-parameter map (rank-revealing QR) of "
        "the noise-free seeded log's torque system, the same K for every trajectory.\n"
     << "- Self-collision: the URDF's collision meshes (Pinocchio, coal; pairs the SRDF "
        "disables removed) at 100 Hz. heft::sim's MuJoCo model has no link collision geometry "
        "(only the contact spheres), so a self-colliding reference still simulates; `heft "
        "excite` fails (exit 1, no scenario written) for such a design, the study simulates it "
        "anyway.\n"
     << "- cond(Y_b): heft excite's prediction on its 201-sample design grid (unscaled base "
        "regressor); the LS condition number is identify's, of its equilibrated regressor.\n\n"
     << "## Results (measured)\n\n"
     << text << "\nRuntime " << static_cast<int>(now() - t0) << " s (design and simulations "
     << "included).\n";
  const std::string path = std::string(HEFT_SOURCE_DIR) + "/studies/excite/results.md";
  std::ofstream(path) << md.str();
  std::printf("wrote %s\n", path.c_str());
}

}  // namespace heft
