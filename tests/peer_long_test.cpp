// Studies against the strongest peer (label `long`): MuJoCo's own identification module
// (mujoco.sysid, in its own venv: `make peer`) on the same logs as heft's methods, scored against
// the same truth. Writes studies/peer/results.md.
//
// Regenerate: make peer && cmake --build build --target test_peer_long && build/bin/test_peer_long
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "heft/basestate/base_state.hpp"
#include "heft/common/types.hpp"
#include "heft/identify/identify.hpp"
#include "heft/inertia/inertia.hpp"
#include "heft/io/atomic_file.hpp"
#include "heft/io/log.hpp"
#include "heft/io/log_io.hpp"
#include "heft/jobs/estimate_job.hpp"
#include "heft/jobs/filter_job.hpp"
#include "heft/jobs/identify_job.hpp"
#include "heft/jobs/sample_job.hpp"
#include "heft/model/identified_set.hpp"
#include "heft/model/model.hpp"
#include "heft/sim/mjcf.hpp"
#include "heft/sim/scenario.hpp"
#include "heft/sim/sim_model.hpp"
#include "support/perturbed_prior.hpp"

namespace heft::identify {
namespace {

namespace fs = std::filesystem;

double now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

std::string pct(double x) {
  char b[32];
  std::snprintf(b, sizeof b, "%.3g %%", 100 * x);
  return b;
}

std::string fixed(double x, int digits) {
  char b[32];
  std::snprintf(b, sizeof b, "%.*f", digits, x);
  return b;
}

// A wall-time ratio: four decimals below 1 (heft's methods take a fraction of a second).
std::string timeRatio(double r) { return fixed(r, r < 1 ? 4 : 2); }

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

io::Log simulate(const std::string& scenario, int seed, double duration, const std::string& noise) {
  sim::SimulationOptions o;
  o.seed = seed;
  o.duration = duration;
  o.profile = sim::NoiseProfile::fromName(noise);
  sim::SimulationResult r = sim::simulate(sim::findScenario(scenario), o);
  EXPECT_TRUE(r.summary.ok()) << r.summary.report();
  return std::move(r.log);
}

std::vector<results::JointFrictionTruth> scenarioFriction(const std::string& scenario) {
  std::vector<results::JointFrictionTruth> out;
  for (const auto& [joint, f] : sim::findScenario(scenario).model.joint_friction)
    out.push_back({joint, f.frictionloss, f.damping, f.armature});
  return out;
}

// The Python of the peer's venv (scripts/bootstrap.sh --peer), or HEFT_PEER_PYTHON.
std::string peerPython() {
  if (const char* p = std::getenv("HEFT_PEER_PYTHON")) return p;
  return std::string(HEFT_SOURCE_DIR) + "/.deps/venv-peer/bin/python";
}

struct PeerRun {
  nlohmann::json out;  // what studies/peer/mujoco_sysid.py wrote
  double optimize_s = 0, wall_s = 0, cost_start = 0, cost_final = 0;
  int chunks = 0;
};

// mujoco.sysid (studies/peer/mujoco_sysid.py) on `log` for `bodies` (inertia) and `joints`
// (damping, frictionloss, armature), started from heft's simulation model of `robot` with the
// `start` inertials and the friction prior's medians.
PeerRun runPeer(const model::RobotModel& robot, const sim::MjcfPatch& start,
                const std::vector<std::string>& bodies, const std::vector<std::string>& joints,
                const io::Log& log, const std::string& dir, double chunk_s, int max_iters,
                const std::string& control) {
  fs::create_directories(dir);
  io::WriteOptions wo;
  wo.overwrite = true;
  io::writeLog(log, dir + "/log.h5", wo);
  io::writeTextFileAtomically(dir + "/nominal.xml", sim::SimModel(robot).mjcf(), true);
  std::vector<std::string> notes;
  io::writeTextFileAtomically(dir + "/start.xml",
                              sim::patchMjcf(dir + "/nominal.xml", start, notes), true);
  const auto joined = [](const std::vector<std::string>& names) {
    std::string s;
    for (const auto& name : names) s += (s.empty() ? "" : ",") + name;
    return s.empty() ? std::string("''") : s;
  };
  const std::string out = dir + "/peer.json";
  const std::string command =
      peerPython() + " " + HEFT_SOURCE_DIR + "/studies/peer/mujoco_sysid.py --model " + dir +
      "/start.xml --log " + dir + "/log.h5 --out " + out + " --bodies " + joined(bodies) +
      " --joints " + joined(joints) + " --chunk " + std::to_string(chunk_s) + " --max-iters " +
      std::to_string(max_iters) + " --threads 2 --control " + control;
  const double t0 = now();
  const int rc = std::system(command.c_str());
  PeerRun run;
  run.wall_s = now() - t0;
  EXPECT_EQ(rc, 0) << command;
  run.out = nlohmann::json::parse(io::readTextFile(out));
  run.optimize_s = run.out["time_s"];
  run.cost_start = run.out["cost_start"];
  run.cost_final = run.out["cost_final"];
  run.chunks = run.out["chunks"];
  return run;
}

Vector10 peerPi(const PeerRun& run, const std::string& body) {
  const std::vector<double> pi = run.out["bodies"][body]["pi"];
  Vector10 out;
  for (int k = 0; k < 10; ++k) out[k] = pi[k];
  return out;
}

// The peer's estimate in `layout`'s linear vector (Coulomb = frictionloss, viscous = damping).
Eigen::VectorXd peerLinearVector(const PeerRun& run, const ParameterLayout& layout) {
  Eigen::VectorXd x = Eigen::VectorXd::Zero(layout.linearDimension());
  for (int b = 0; b < layout.numBodies(); ++b)
    x.segment<10>(10 * b) = peerPi(run, layout.body_names[b]);
  for (int f = 0; f < layout.numFriction(); ++f) {
    const auto& joint = run.out["joints"][layout.friction_joints[f]];
    x[layout.frictionOffset() + 2 * f] = joint["frictionloss"];
    x[layout.frictionOffset() + 2 * f + 1] = joint["damping"];
  }
  for (int a = 0; a < layout.numArmature(); ++a)
    x[layout.armatureOffset() + a] = run.out["joints"][layout.armature_joints[a]]["armature"];
  return x;
}

// Relative torque prediction error |Phi x - y| / |y| on rows the fit did not see.
double heldOutError(const LinearSystem& held_out, const Eigen::VectorXd& x) {
  return (held_out.Phi * x - held_out.y).norm() / held_out.y.norm();
}

// Mean relative error of the Coulomb and viscous coefficients over the friction joints.
double frictionError(const ParameterLayout& layout, const Eigen::VectorXd& x,
                     const Eigen::VectorXd& xt) {
  double sum = 0;
  const int n = 2 * layout.numFriction();
  for (int i = 0; i < n; ++i) {
    const int k = layout.frictionOffset() + i;
    sum += std::abs(x[k] - xt[k]) / std::abs(xt[k]);
  }
  return n ? sum / n : 0;
}

// ---- studies/peer: panda-friction ---------------------------------------------------------------

// The panda study on `noise` logs of `seeds`, written to studies/peer/<file> by test `test_name`.
struct PandaSettings {
  std::string noise, file, test_name;
  std::vector<int> seeds;
  std::string scenario = "panda-friction";
  double duration = 10, held_out_duration = 5;  // [s]
  double chunk_s = 0.5;                         // mujoco.sysid's chunks [s]
  int max_iters = 30;
};

struct PandaMethod {
  std::string name;
  double base = 0, friction = 0, held_out = 0, seconds = 0;
};
struct PandaRow {
  int seed = 0;
  std::vector<PandaMethod> methods;  // prior, LS, MAP, mujoco.sysid
  PeerRun peer;
};

void writePandaStudy(const PandaSettings& settings, const std::vector<PandaRow>& rows);

void pandaStudy(const PandaSettings& settings) {
  ASSERT_TRUE(fs::exists(peerPython()))
      << peerPython() << " is missing: `make peer` installs mujoco.sysid's venv";
  const std::string& noise = settings.noise;
  const std::string& scenario = settings.scenario;
  const double duration = settings.duration, held_out_duration = settings.held_out_duration;
  const model::RobotModel panda = model::loadRobot("panda");
  const auto friction = scenarioFriction(scenario);
  std::vector<std::string> arm;
  for (int i = 1; i <= 7; ++i) arm.push_back("panda_joint" + std::to_string(i));
  model::IdentifiedSetOptions so;
  so.identify_friction = true;
  so.friction_joints = arm;
  const model::IdentifiedSet set = test::perturbedPrior(model::IdentifiedSet::build(panda, so), 11);
  ProblemOptions po;
  po.identify_armature = true;
  po.min_speed = 0.05;
  PreparationOptions prep;  // the example config's: SG derivative 81 / 3, every 10th sample
  prep.filter = {81, 3};
  prep.decimation = 10;

  std::vector<PandaRow> rows;
  const std::string work = std::string(HEFT_BINARY_DIR) + "/peer-study";
  for (int seed : settings.seeds) {
    const io::Log log = simulate(scenario, seed, duration, noise);
    const io::Log clean = simulate(scenario, seed, duration, "none");
    const io::Log held = simulate(scenario, seed + 100, held_out_duration, noise);

    // the base-parameter map K from the noise-free log (exact accelerations)
    PreparationOptions exact;
    exact.acceleration = AccelerationMethod::ForwardDifference;
    exact.filter = {1, 0};
    exact.decimation = prep.decimation;
    const LinearSystem clean_sys =
        torqueSystem(buildProblem(panda, prepareSamples(panda, clean, exact), set, po));
    const Eigen::VectorXd x0 = nominalLinearVector(clean_sys.layout, set, po);
    const LeastSquaresResult clean_ls = solveLeastSquares(clean_sys, x0);
    const LinearSystem held_sys =
        torqueSystem(buildProblem(panda, prepareSamples(panda, held, prep), set, po));
    const ParameterLayout& layout = clean_sys.layout;
    const Eigen::VectorXd xt = results::truthLinearVector(panda, log, layout, friction);

    PandaRow row;
    row.seed = seed;
    const auto score = [&](const std::string& name, const Eigen::VectorXd& x, double seconds) {
      PandaMethod m;
      m.name = name;
      m.base = baseParameterError(clean_sys, clean_ls.base, x, xt).norm;
      m.friction = frictionError(layout, x, xt);
      m.held_out = heldOutError(held_sys, x);
      m.seconds = seconds;
      row.methods.push_back(m);
      std::printf("seed %d %-13s base %s, friction %s, held-out %s, %.1f s\n", seed, name.c_str(),
                  pct(m.base).c_str(), pct(m.friction).c_str(), pct(m.held_out).c_str(), seconds);
    };
    score("prior", x0, 0);

    double t0 = now();
    const StackedProblem sp = buildProblem(panda, prepareSamples(panda, log, prep), set, po);
    const LinearSystem sys = torqueSystem(sp);
    const LeastSquaresResult ls = solveLeastSquares(sys, x0);
    const double t_ls = now() - t0;
    ASSERT_EQ(sys.layout.linearNames(), layout.linearNames());
    EXPECT_EQ(ls.status, Status::Converged) << ls.message;
    score("heft LS", ls.x, t_ls);

    t0 = now();
    const StackedProblem sp_map = buildProblem(panda, prepareSamples(panda, log, prep), set, po);
    const MapResult map = solveMap(sp_map, set, po);
    const double t_map = now() - t0;
    EXPECT_NE(map.status, Status::Failed) << map.message;
    score("heft MAP", map.linear, t_map);

    sim::MjcfPatch start;  // the prior's inertials, as heft's methods start from
    for (const auto& b : set.bodies)
      start.bodies.push_back({b.name, pinocchio::Inertia::FromDynamicParameters(b.prior_mean)});
    row.peer = runPeer(panda, start, layout.body_names, layout.friction_joints, log,
                       work + "/panda-" + noise + "-seed" + std::to_string(seed), settings.chunk_s,
                       settings.max_iters, "tau");
    score("mujoco.sysid", peerLinearVector(row.peer, layout), row.peer.wall_s);
    EXPECT_LT(row.peer.cost_final, row.peer.cost_start);
    rows.push_back(row);
  }
  writePandaStudy(settings, rows);
}

void writePandaStudy(const PandaSettings& settings, const std::vector<PandaRow>& rows) {
  const std::string& noise = settings.noise;
  const std::vector<int>& seeds = settings.seeds;
  const std::string& test_name = settings.test_name;
  const std::string& scenario = settings.scenario;
  const double duration = settings.duration, held_out_duration = settings.held_out_duration;
  const double chunk_s = settings.chunk_s;
  const int max_iters = settings.max_iters;
  std::ostringstream md;
  std::string seed_list;
  for (int seed : seeds) seed_list += (seed_list.empty() ? "" : ", ") + std::to_string(seed);
  md << "# Peer: heft against mujoco.sysid on panda-friction"
     << (noise == "nominal" ? "" : " (noise `" + noise + "`)") << "\n\n"
     << "Generated by `PeerStudy." << test_name
     << "` in tests/peer_long_test.cpp; regenerate with\n\n"
     << "```\nmake peer && cmake --build build --target test_peer_long && "
        "build/bin/test_peer_long --gtest_filter=PeerStudy."
     << test_name << "\n```\n\n"
     << "## Protocol\n\n"
     << "- Logs: heft::sim scenario `" << scenario << "` (Fourier excitation, MuJoCo, 1 kHz, "
     << "joint damping, frictionloss and armature), " << duration << " s, noise profile `" << noise
     << "`, seed" << (seeds.size() > 1 ? "s " : " ") << seed_list
     << ". Held out: a recording of another seed "
        "(seed + 100), "
     << held_out_duration << " s, same noise.\n"
     << "- Identified: the 9 panda bodies (90 inertial parameters), Coulomb and viscous friction "
        "and armature of the 7 arm joints. Every method starts from the same wrong model: the "
        "perturbed prior of studies/noise-sweep (mass x U(0.9, 1.1), COM +-1 cm, inertia about "
        "the COM x U(0.8, 1.2), seed 11) and the friction prior's medians (Coulomb 0.2 N m, "
        "viscous 0.05 N m s/rad, armature 0.01 kg m^2).\n"
     << "- heft LS and MAP: `heft identify`'s methods 1 and 3 (the example config's "
        "preparation: Savitzky-Golay derivative 81 / 3, every 10th sample, min_speed 0.05 rad/s; "
        "MAP with log-Cholesky and the default prior).\n"
     << "- mujoco.sysid (MuJoCo "
     << "3.8.1, requirements-peer.txt): studies/peer/mujoco_sysid.py "
        "as its documentation shows: heft's simulation model of the panda (`heft mjcf --robot "
        "panda`) with the prior's inertials, a motor per joint and joint position and velocity "
        "sensors; the log cut into "
     << chunk_s
     << " s chunks, each started from the logged (noisy) state and replaying the logged torques "
        "open loop (the measured ones: the signal heft's methods regress); bodies in its "
        "pseudo-inertia parametrization with its default box bounds, "
        "damping / frictionloss / armature in [0, 5] / [0, 5] / [0, 0.5]; its default optimizer "
        "(`mujoco`: Gauss-Newton, finite-difference Jacobians), at most "
     << max_iters << " iterations, 2 threads; no prior.\n"
     << "- Metrics: **base** = `|K (x_hat - x*)| / |K x*|` (studies/noise-sweep's, K from the "
        "noise-free log of the same seed); **friction** = mean relative error of the 14 "
        "Coulomb and viscous coefficients; **held-out** = `|Phi x - tau| / |tau|` on the held-out "
        "recording's torque rows (heft's regressor: RNEA + tanh Coulomb + viscous + armature, "
        "the same preparation); **time** = wall time of the whole method (preparation "
        "included; mujoco.sysid: the Python run, model compile and chunking included).\n"
     << "- What each needs from the log: heft LS / MAP: joint positions, velocities, torques "
        "(accelerations are differentiated). mujoco.sysid: the same, plus a simulator model "
        "whose rollouts can follow the log open loop for a chunk.\n\n"
     << "## Results (measured)\n\n"
     << "| seed | method | base | friction | held-out | time [s] |\n|---|---|---|---|---|---|\n";
  for (const PandaRow& r : rows)
    for (const PandaMethod& m : r.methods)
      md << "| " << r.seed << " | " << m.name << " | " << pct(m.base) << " | " << pct(m.friction)
         << " | " << pct(m.held_out) << " | " << fixed(m.seconds, 1) << " |\n";
  md << "\nMedians over the seeds:\n\n| method | base | friction | held-out | time [s] | time / "
        "mujoco.sysid's |\n|---|---|---|---|---|---|\n";
  const std::size_t n_methods = rows.front().methods.size();
  std::vector<double> peer_time;
  for (const PandaRow& r : rows) peer_time.push_back(r.methods.back().seconds);
  for (std::size_t k = 0; k < n_methods; ++k) {
    std::vector<double> base, fr, held, t;
    for (const PandaRow& r : rows) {
      base.push_back(r.methods[k].base);
      fr.push_back(r.methods[k].friction);
      held.push_back(r.methods[k].held_out);
      t.push_back(r.methods[k].seconds);
    }
    const std::string ratio = k == 0 ? "" : timeRatio(median(t) / median(peer_time));
    md << "| " << rows.front().methods[k].name << " | " << pct(median(base)) << " | "
       << pct(median(fr)) << " | " << pct(median(held)) << " | "
       << (k == 0 ? "" : fixed(median(t), 1)) << " | " << ratio << " |\n";
  }
  md << "\nmujoco.sysid per seed: chunks, cost before and after (its normalized residual), "
        "optimizer time:";
  for (const PandaRow& r : rows) {
    char b[160];
    std::snprintf(b, sizeof b, " seed %d: %d chunks, %.4g -> %.4g, %.0f s;", r.seed, r.peer.chunks,
                  r.peer.cost_start, r.peer.cost_final, r.peer.optimize_s);
    md << b;
  }
  md << "\n";
  std::printf("%s", md.str().c_str());
  const std::string path = std::string(HEFT_SOURCE_DIR) + "/studies/peer/" + settings.file;
  std::ofstream f(path);
  ASSERT_TRUE(f.good()) << "cannot write " << path;
  f << md.str();
}

TEST(PeerStudy, PandaFriction) {
  pandaStudy({"nominal", "results.md", "PandaFriction", {1, 2, 3}});
}

// The same without any noise: whether the peer's setup can reach the truth at all, apart from
// what noise does to it.
TEST(PeerStudy, PandaFrictionNoiseFree) {
  pandaStudy({"none", "noise-free.md", "PandaFrictionNoiseFree", {1}});
}

// ---- studies/peer: go2 payloads -----------------------------------------------------------------

// An example config (data/examples/NAME) with its log replaced.
std::string exampleFor(const std::string& name, const std::string& log) {
  std::string text = io::readTextFile(std::string(HEFT_SOURCE_DIR) + "/data/examples/" + name);
  const std::size_t at = text.find("\nlog: ") + 1;
  text.replace(at, text.find('\n', at) - at, "log: " + log);
  return text;
}

struct Go2Method {
  std::string name;
  double mass = 0, com_mm = 0, inertia = 0, distance = 0, seconds = 0;
};
struct Go2Row {
  std::string scenario;
  int seed = 0;
  double mass_true = 0;
  // nominal, heft LS, heft MAP, heft estimate, heft EKF, heft sample, mujoco.sysid
  std::vector<Go2Method> methods;
  PeerRun peer;
};

void writeGo2Study(const std::vector<Go2Row>& rows, double chunk_s, int max_iters) {
  std::ostringstream md;
  md << "# Peer: heft against mujoco.sysid on go2 payloads\n\n"
     << "Generated by `PeerStudy.Go2Payloads` in tests/peer_long_test.cpp; regenerate with\n\n"
     << "```\nmake peer && cmake --build build --target test_peer_long && "
        "build/bin/test_peer_long --gtest_filter=PeerStudy.Go2Payloads\n```\n\n"
     << "## Protocol\n\n"
     << "- Logs: heft::sim scenarios `go2-payload-3kg` (3 kg on the trunk) and `go2-rear-4.7kg` "
        "(SPI-Active's 4.7 kg low at the rear), 15 s, noise profile `nominal`, seeds 1, 2. No "
        "log has a base state: each method estimates it from the IMU, the legs and the contact "
        "flags (heft's base-state estimator); the truth group only scores.\n"
     << "- Identified: the trunk's 10 inertial parameters (payload lumped in), from the nominal "
        "go2 (no payload).\n"
     << "- heft's families, each from its example config with the log replaced: LS and MAP = "
        "`heft identify` data/examples/go2_payload_identify.yaml (method 4: contact null space; "
        "`method: ls` for LS), estimate = `heft estimate` data/examples/go2_payload_estimate.yaml "
        "(the batch Riccati MAP of trajectory and trunk over 0.5 s at 1 kHz, with the log's IMU "
        "and motion capture), sample = `heft sample` data/examples/go2_rear_sample.yaml (CMA-ES "
        "over 24 clips replayed through the robot's PD, 150 generations), EKF = `heft filter` "
        "(the log-Cholesky EKF with its default options, `contact_forces: projected`: the "
        "stance feet's forces projected out of the measurement; its final estimate).\n"
     << "- mujoco.sysid (MuJoCo 3.8.1): studies/peer/mujoco_sysid.py on heft's simulation model "
        "of go2 (`heft mjcf --robot go2`: contact spheres, floor) with a motor per joint, joint "
        "position and velocity sensors (no base pose: its residual divides each column by the "
        "norm of the measured signal, and the base's x, y and quaternion x, y, z hover near "
        "zero); "
     << chunk_s
     << " s chunks from the (estimated) logged state with the base put on the floor (the lowest "
        "foot sphere at z = 0, as heft sample grounds its clips), the commanded torques "
        "(`tau_cmd`, what heft sample replays) open loop; the trunk in its "
        "pseudo-inertia parametrization with its default bounds (mass x [0.1, 10], COM +-0.5 m); "
        "optimizer `mujoco`, at most "
     << max_iters << " iterations, 2 threads. Its time includes heft's base-state estimate.\n"
     << "- Metrics: trunk mass error (signed), COM error [mm], inertia about the COM "
        "(`|I_c - I_c*|_F / |I_c*|_F`), the pseudo-inertias' distance "
        "`|log(J*^-1/2 J J*^-1/2)|_F` (the 10 parameters' error in one number, the same in any "
        "frame and units; a mass off by 1 % alone gives 0.020: results::BodyError), wall time.\n\n"
     << "## Results (measured)\n\n"
     << "| scenario | seed | method | mass | COM [mm] | inertia | distance | time [s] |\n"
        "|---|---|---|---|---|---|---|---|\n";
  for (const Go2Row& r : rows)
    for (const Go2Method& m : r.methods)
      md << "| " << r.scenario << " | " << r.seed << " | " << m.name << " | "
         << fixed(100 * m.mass, 2) << " % | " << fixed(m.com_mm, 1) << " | " << pct(m.inertia)
         << " | " << fixed(m.distance, 4) << " | " << fixed(m.seconds, 1) << " |\n";
  // per log: heft's method with the smallest distance against mujoco.sysid's (the last method)
  md << "\nheft's best method per log (smallest distance) against mujoco.sysid:\n\n"
        "| scenario | seed | heft's best | distance | mujoco.sysid's distance | ratio |\n"
        "|---|---|---|---|---|---|\n";
  for (const Go2Row& r : rows) {
    const Go2Method* best = nullptr;
    for (std::size_t k = 1; k + 1 < r.methods.size(); ++k)  // past the nominal, before the peer
      if (!best || r.methods[k].distance < best->distance) best = &r.methods[k];
    if (!best) continue;
    const Go2Method& peer = r.methods.back();
    md << "| " << r.scenario << " | " << r.seed << " | " << best->name << " | "
       << fixed(best->distance, 4) << " | " << fixed(peer.distance, 4) << " | "
       << fixed(best->distance / peer.distance, 2) << " |\n";
  }
  md << "\nMedians over the seeds (|mass error|):\n\n| scenario | method | mass | COM [mm] | "
        "distance | time [s] | time / mujoco.sysid's |\n|---|---|---|---|---|---|---|\n";
  for (const std::string scenario : {"go2-payload-3kg", "go2-rear-4.7kg"}) {
    std::vector<const Go2Row*> of;
    for (const Go2Row& r : rows)
      if (r.scenario == scenario) of.push_back(&r);
    if (of.empty()) continue;
    std::vector<double> peer_time;
    for (const Go2Row* r : of) peer_time.push_back(r->methods.back().seconds);
    for (std::size_t k = 0; k < of.front()->methods.size(); ++k) {
      std::vector<double> mass, com, distance, t;
      for (const Go2Row* r : of) {
        mass.push_back(std::abs(r->methods[k].mass));
        com.push_back(r->methods[k].com_mm);
        distance.push_back(r->methods[k].distance);
        t.push_back(r->methods[k].seconds);
      }
      md << "| " << scenario << " | " << of.front()->methods[k].name << " | "
         << fixed(100 * median(mass), 2) << " % | " << fixed(median(com), 1) << " | "
         << fixed(median(distance), 4) << " | " << (k == 0 ? "" : fixed(median(t), 1)) << " | "
         << (k == 0 ? "" : timeRatio(median(t) / median(peer_time))) << " |\n";
    }
  }
  md << "\nmujoco.sysid per log: chunks, cost before and after (its normalized residual):";
  for (const Go2Row& r : rows) {
    char b[200];
    std::snprintf(b, sizeof b, " %s seed %d: %d chunks, %.4g -> %.4g;", r.scenario.c_str(), r.seed,
                  r.peer.chunks, r.peer.cost_start, r.peer.cost_final);
    md << b;
  }
  md << "\n";
  std::printf("%s", md.str().c_str());
  const std::string out = std::string(HEFT_SOURCE_DIR) + "/studies/peer/go2.md";
  std::ofstream f(out);
  ASSERT_TRUE(f.good()) << "cannot write " << out;
  f << md.str();
}

TEST(PeerStudy, Go2Payloads) {
  ASSERT_TRUE(fs::exists(peerPython()))
      << peerPython() << " is missing: `make peer` installs mujoco.sysid's venv";
  const double chunk_s = 0.2;
  const int max_iters = 30;
  const model::RobotModel go2 = model::loadRobot("go2");
  const std::string base = go2.body(1).name;
  std::vector<Go2Row> rows;
  const std::string work = std::string(HEFT_BINARY_DIR) + "/peer-study";
  for (const std::string scenario : {"go2-payload-3kg", "go2-rear-4.7kg"}) {
    for (int seed : {1, 2}) {
      const io::Log log = simulate(scenario, seed, 15, "nominal");
      const std::string dir = work + "/" + scenario + "-seed" + std::to_string(seed);
      fs::create_directories(dir);
      const std::string path = dir + "/recording.h5";
      io::WriteOptions wo;
      wo.overwrite = true;
      io::writeLog(log, path, wo);  // no base state: every method estimates it
      Go2Row row;
      row.scenario = scenario;
      row.seed = seed;
      int truth_index = -1;
      for (std::size_t b = 0; b < log.truth->body_names.size(); ++b)  // the joint's or the link's
        if (log.truth->body_names[b] == base ||
            log.truth->body_names[b] == go2.pinocchio().names[1])
          truth_index = static_cast<int>(b);
      ASSERT_GE(truth_index, 0);
      const Vector10 truth = log.truth->body_pi.row(truth_index).transpose();
      row.mass_true = truth[0];
      const auto record = [&](const std::string& name, const results::BodyError& e,
                              double seconds) {
        row.methods.push_back({name, (e.mass_estimate - e.mass_true) / e.mass_true,
                               1e3 * e.com_error, e.inertia_relative, e.pseudo_inertia_distance,
                               seconds});
      };
      const auto score = [&](const std::string& name, const Vector10& pi, double seconds) {
        const results::BodyError e = results::bodyError(base, pi, truth);
        record(name, e, seconds);
        std::printf("%s seed %d %-13s mass %+.2f %%, COM %.1f mm, inertia %s, %.1f s\n",
                    scenario.c_str(), seed, name.c_str(), 100 * row.methods.back().mass,
                    row.methods.back().com_mm, pct(e.inertia_relative).c_str(), seconds);
      };
      score("nominal", go2.pi(base), 0);

      const auto scoreTruth = [&](const std::string& name,
                                  const std::optional<results::TruthErrors>& truth_errors,
                                  double seconds) {
        ASSERT_TRUE(truth_errors.has_value()) << name;
        const results::BodyError& e = truth_errors->bodies.at(0);
        record(name, e, seconds);
        std::printf("%s seed %d %-13s mass %+.2f %%, COM %.1f mm, %.1f s\n", scenario.c_str(), seed,
                    name.c_str(), 100 * row.methods.back().mass, row.methods.back().com_mm,
                    seconds);
      };
      for (const std::string method : {"ls", "map"}) {
        std::string text = exampleFor("go2_payload_identify.yaml", path);
        const std::size_t at = text.find("\nmethod: map");
        ASSERT_NE(at, std::string::npos);
        text.replace(at, 12, "\nmethod: " + method);
        const double t0 = now();
        const jobs::IdentifyJob::Result id = jobs::IdentifyJob::run(
            jobs::IdentifyJob::parse(text, "go2_payload_identify.yaml", "."));
        EXPECT_TRUE(id.writable()) << id.message;
        scoreTruth(method == "ls" ? "heft LS" : "heft MAP", id.truth, now() - t0);
      }

      double t0 = now();
      const jobs::EstimateJob::Result estimated = jobs::EstimateJob::run(jobs::EstimateJob::parse(
          exampleFor("go2_payload_estimate.yaml", path), "go2_payload_estimate.yaml", "."));
      EXPECT_TRUE(estimated.writable());
      scoreTruth("heft estimate", estimated.truth, now() - t0);

      // the online EKF from its defaults, the stance feet's forces projected out (no force input)
      t0 = now();
      const jobs::FilterJob::Result filtered = jobs::FilterJob::run(jobs::FilterJob::parse(
          "robot: go2\nlog: " + path + "\nbodies: [" + base +
              "]\nbase_state: auto\nbaseline: false\ncontact_forces: projected\ncontacts:\n"
              "  - {name: FL_foot, frame: FL_foot}\n  - {name: FR_foot, frame: FR_foot}\n"
              "  - {name: RL_foot, frame: RL_foot}\n  - {name: RR_foot, frame: RR_foot}\n"
              "filter: {}\n",
          "go2_filter.yaml", "."));
      const double t_filter = now() - t0;
      ASSERT_FALSE(filtered.traces.empty());
      const Eigen::MatrixXd& series = filtered.traces.front().series.body_pi;
      score("heft EKF", series.row(series.rows() - 1).transpose(), t_filter);

      t0 = now();
      const jobs::SampleJob::Result sampled = jobs::SampleJob::run(jobs::SampleJob::parse(
          exampleFor("go2_rear_sample.yaml", path), "go2_rear_sample.yaml", "."));
      EXPECT_TRUE(sampled.ok());
      scoreTruth("heft sample", sampled.truth, now() - t0);

      // the peer gets the base state heft estimates from the IMU, legs and contacts (no truth)
      io::Log with_base = log;
      t0 = now();
      basestate::fillBaseState(go2.pinocchio(), with_base);
      const double t_base = now() - t0;
      row.peer = runPeer(go2, {}, {base}, {}, with_base, dir, chunk_s, max_iters, "tau_cmd");
      score("mujoco.sysid", peerPi(row.peer, base), row.peer.wall_s + t_base);
      EXPECT_LT(row.peer.cost_final, row.peer.cost_start);
      rows.push_back(row);
    }
  }
  writeGo2Study(rows, chunk_s, max_iters);
}

}  // namespace
}  // namespace heft::identify
