// Cost of heft's parametrized dynamics derivatives against Pinocchio's plain ABA derivatives,
// measured in the same run on the same random states, for go2 (free flyer, 4 point feet) and
// talos (free flyer, 2 sole contacts). S = every body whose URDF inertia is strictly consistent.
//
//   ./bench_dynamics --benchmark_repetitions=5 --benchmark_report_aggregates_only=true
//
// After the usual table, a summary gives each benchmark's median (or single) time and its ratio
// to the baseline "<robot>/pinocchio_aba_derivatives".
// Robot folder: $HEFT_ROBOTS_DIR, else the compile definition HEFT_ROBOTS_DIR_FOR_TESTS, else
// example-robot-data in the bootstrap's virtual environment under HEFT_SOURCE_DIR.
#define PINOCCHIO_DISABLE_UNSUPPORTED_WARNINGS  // the rigid-constraint API is marked "will change"
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include <pinocchio/algorithm/aba-derivatives.hpp>
#include <pinocchio/algorithm/constrained-dynamics-derivatives.hpp>
#include <pinocchio/algorithm/constrained-dynamics.hpp>
#include <pinocchio/algorithm/frames.hpp>
#include <pinocchio/algorithm/joint-configuration.hpp>
#include <pinocchio/algorithm/regressor.hpp>
#include <pinocchio/parsers/urdf.hpp>

#include "heft/dynamics/contact_dynamics.hpp"
#include "heft/dynamics/forward_dynamics.hpp"
#include "heft/dynamics/impulse_dynamics.hpp"
#include "heft/dynamics/regressor.hpp"
#include "heft/dynamics/smoothed_contact.hpp"
#include "support/ratio_reporter.hpp"

namespace {

using Eigen::VectorXd;
using heft::dynamics::ContactSpec;

std::string robotsDir() {
  if (const char* env = std::getenv("HEFT_ROBOTS_DIR")) return env;
#if defined(HEFT_ROBOTS_DIR_FOR_TESTS)
  return HEFT_ROBOTS_DIR_FOR_TESTS;
#elif defined(HEFT_SOURCE_DIR)
  return std::string(HEFT_SOURCE_DIR) +
         "/.deps/venv/lib/python3.11/site-packages/cmeel.prefix/share/example-robot-data/robots";
#else
  return "robots";
#endif
}

std::vector<pinocchio::JointIndex> consistentBodies(const pinocchio::Model& model) {
  std::vector<pinocchio::JointIndex> bodies;
  for (pinocchio::JointIndex j = 1; j < static_cast<pinocchio::JointIndex>(model.njoints); ++j)
    if (heft::inertia::checkConsistency(model.inertias[j].toDynamicParameters(), 1e-12).consistent)
      bodies.push_back(j);
  return bodies;
}

// The shared fixture: one robot, its contacts, S, and the random states every benchmark cycles
// through.
struct Robot {
  std::string name;
  pinocchio::Model model;
  std::vector<ContactSpec> contacts;
  std::vector<pinocchio::JointIndex> bodies;
  std::vector<VectorXd> q, v, tau;

  Robot(std::string name_, const std::string& urdf, std::vector<ContactSpec> contacts_)
      : name(std::move(name_)), contacts(std::move(contacts_)) {
    pinocchio::urdf::buildModel(robotsDir() + "/" + urdf, pinocchio::JointModelFreeFlyer(), model);
    bodies = consistentBodies(model);
    std::mt19937 rng(7);
    std::uniform_real_distribution<double> u(-1.0, 1.0);
    auto random = [&](double scale) {
      VectorXd x(model.nv);
      for (int i = 0; i < model.nv; ++i) x[i] = scale * u(rng);
      return x;
    };
    for (int k = 0; k < kStates; ++k) {
      q.push_back(pinocchio::integrate(model, pinocchio::neutral(model), random(0.4)));
      v.push_back(random(1.0));
      tau.push_back(random(5.0));
    }
  }
  static constexpr int kStates = 32;
};

void pinocchioAbaDerivatives(benchmark::State& state, const Robot& r) {
  pinocchio::Data data(r.model);
  int k = 0;
  for (auto _ : state) {
    pinocchio::computeABADerivatives(r.model, data, r.q[k], r.v[k], r.tau[k]);
    benchmark::DoNotOptimize(data.ddq_dq.data());
    k = (k + 1) % Robot::kStates;
  }
}

void pinocchioTorqueRegressor(benchmark::State& state, const Robot& r) {
  pinocchio::Data data(r.model);
  int k = 0;
  for (auto _ : state) {
    pinocchio::computeJointTorqueRegressor(r.model, data, r.q[k], r.v[k], r.tau[k]);
    benchmark::DoNotOptimize(data.jointTorqueRegressor.data());
    k = (k + 1) % Robot::kStates;
  }
}

void heftRestrictedRegressor(benchmark::State& state, const Robot& r) {
  const heft::dynamics::RegressorModel model(r.model, r.bodies);
  heft::dynamics::RegressorData data(model);
  int k = 0;
  for (auto _ : state) {
    // tau stands in for an acceleration: same size, same scale of work.
    heft::dynamics::computeRestrictedRegressor(model, data, r.q[k], r.v[k], r.tau[k]);
    benchmark::DoNotOptimize(data.Y.data());
    k = (k + 1) % Robot::kStates;
  }
}

void heftForwardDynamicsDerivatives(benchmark::State& state, const Robot& r) {
  const heft::dynamics::ForwardDynamicsModel model(r.model, r.bodies,
                                                   heft::inertia::Parametrization::LogCholesky);
  heft::dynamics::ForwardDynamicsData data(model);
  const VectorXd theta = model.nominalTheta();
  int k = 0;
  for (auto _ : state) {
    heft::dynamics::computeForwardDynamicsDerivatives(model, data, r.q[k], r.v[k], r.tau[k], theta);
    benchmark::DoNotOptimize(data.da_dtheta.data());
    k = (k + 1) % Robot::kStates;
  }
}

void pinocchioContactDerivatives(benchmark::State& state, const Robot& r) {
  // Pinocchio alone on the same contacts: what heft adds on top is Y_S and the theta products.
  const heft::dynamics::ContactDynamicsModel model(r.model, r.contacts, r.bodies,
                                                   heft::inertia::Parametrization::LogCholesky);
  heft::dynamics::ContactDynamicsData data(model);
  int k = 0;
  for (auto _ : state) {
    pinocchio::constraintDynamics(r.model, data.pin, r.q[k], r.v[k], r.tau[k], data.constraints,
                                  data.constraint_datas, data.settings);
    pinocchio::computeConstraintDynamicsDerivatives(r.model, data.pin, data.constraints,
                                                    data.constraint_datas, data.settings);
    benchmark::DoNotOptimize(data.pin.dlambda_dq.data());
    k = (k + 1) % Robot::kStates;
  }
}

void heftContactDerivatives(benchmark::State& state, const Robot& r) {
  const heft::dynamics::ContactDynamicsModel model(r.model, r.contacts, r.bodies,
                                                   heft::inertia::Parametrization::LogCholesky);
  heft::dynamics::ContactDynamicsData data(model);
  const VectorXd theta = model.nominalTheta();
  int k = 0;
  for (auto _ : state) {
    heft::dynamics::computeContactDynamicsDerivatives(model, data, r.q[k], r.v[k], r.tau[k], theta);
    benchmark::DoNotOptimize(data.dlambda_dtheta.data());
    k = (k + 1) % Robot::kStates;
  }
}

void heftImpulseDerivatives(benchmark::State& state, const Robot& r) {
  const heft::dynamics::ImpulseDynamicsModel model(r.model, r.contacts, r.bodies,
                                                   heft::inertia::Parametrization::LogCholesky);
  heft::dynamics::ImpulseDynamicsData data(model);
  const VectorXd theta = model.nominalTheta();
  int k = 0;
  for (auto _ : state) {
    heft::dynamics::computeImpulseDynamicsDerivatives(model, data, r.q[k], r.v[k], theta);
    benchmark::DoNotOptimize(data.dvplus_dtheta.data());
    k = (k + 1) % Robot::kStates;
  }
}

// The smoothed contact step (PRIME eq. 17) from states near a stance: the robot's posture, the
// lowest contact point 0.1 mm above the floor, then a random tangent perturbation of 0.02, random
// v (0.3) and joint torques (5 N m), dt = 0.01. `model` starts Newton from the paper's lifted
// previous velocity (the default), `sticking` from the rigid sticking impulse; both identify every
// consistent body. `payload` identifies one body, the one the bundled estimate examples identify
// (go2's trunk, TALOS' torso) and PRIME's setting (its quadruped's torso, 10 parameters).
// `compliant` is `model` on a compliant floor (the compliance the contact-implicit study uses:
// go2 3.7e-5 m/N, TALOS 5e-6), which starts without the lift.
struct SmoothedCase {
  std::unique_ptr<heft::dynamics::SmoothedContactModel> model, sticking, payload, compliant;
  std::vector<VectorXd> q, v, tau;
};

SmoothedCase makeSmoothedCase(const Robot& r, const std::vector<heft::model::ContactPoint>& points,
                              const std::map<std::string, double>& posture,
                              const std::string& payload_joint, double compliance) {
  SmoothedCase c;
  heft::dynamics::SmoothedContactOptions compliant;
  compliant.compliance = compliance;
  c.compliant = std::make_unique<heft::dynamics::SmoothedContactModel>(
      r.model, points, r.bodies, heft::inertia::Parametrization::LogCholesky, compliant);
  c.model = std::make_unique<heft::dynamics::SmoothedContactModel>(
      r.model, points, r.bodies, heft::inertia::Parametrization::LogCholesky);
  c.payload = std::make_unique<heft::dynamics::SmoothedContactModel>(
      r.model, points, std::vector<pinocchio::JointIndex>{r.model.getJointId(payload_joint)},
      heft::inertia::Parametrization::LogCholesky);
  heft::dynamics::SmoothedContactOptions sticking;
  sticking.start = heft::dynamics::SmoothedContactStart::Sticking;
  c.sticking = std::make_unique<heft::dynamics::SmoothedContactModel>(
      r.model, points, r.bodies, heft::inertia::Parametrization::LogCholesky, sticking);
  VectorXd q0 = pinocchio::neutral(r.model);
  for (const auto& [joint, angle] : posture) q0[r.model.idx_qs[r.model.getJointId(joint)]] = angle;
  pinocchio::Data data(r.model);
  pinocchio::framesForwardKinematics(r.model, data, q0);
  double lowest = 1e9;
  for (const auto& p : points)
    lowest = std::min(lowest, data.oMf[r.model.getFrameId(p.frame)].act(p.offset).z());
  q0[2] += 1e-4 - lowest;
  std::mt19937 rng(11);
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  auto random = [&](double scale) {
    VectorXd x(r.model.nv);
    for (int i = 0; i < r.model.nv; ++i) x[i] = scale * u(rng);
    return x;
  };
  for (int k = 0; k < Robot::kStates; ++k) {
    c.q.push_back(pinocchio::integrate(r.model, q0, random(0.02)));
    c.v.push_back(random(0.3));
    VectorXd tau = random(5.0);
    tau.head<6>().setZero();
    c.tau.push_back(tau);
  }
  return c;
}

void heftSmoothedContactStep(benchmark::State& state, const SmoothedCase& c) {
  heft::dynamics::SmoothedContactData data(*c.model);
  const VectorXd theta = c.model->nominalTheta();
  int k = 0;
  for (auto _ : state) {
    heft::dynamics::smoothedContactStep(*c.model, data, c.q[k], c.v[k], c.tau[k], theta, 0.01);
    benchmark::DoNotOptimize(data.v_next.data());
    k = (k + 1) % Robot::kStates;
  }
}

// The step and the derivatives of v+ (q, v, tau, theta) from Newton's configured start; with
// `forces`, the forces' derivatives too.
void smoothedContactDerivatives(benchmark::State& state, const SmoothedCase& c,
                                const heft::dynamics::SmoothedContactModel& model,
                                bool forces = false) {
  heft::dynamics::SmoothedContactData data(model);
  const VectorXd theta = model.nominalTheta();
  int k = 0, iterations = 0, steps = 0;
  for (auto _ : state) {
    heft::dynamics::computeSmoothedContactDerivatives(model, data, c.q[k], c.v[k], c.tau[k], theta,
                                                      0.01);
    benchmark::DoNotOptimize(data.dvnext_dtheta.data());
    if (forces) {
      heft::dynamics::computeSmoothedContactForceDerivatives(data);
      benchmark::DoNotOptimize(data.dforce_dtheta.data());
    }
    iterations += data.summary.iterations;
    ++steps;
    k = (k + 1) % Robot::kStates;
  }
  state.counters["newton_iterations"] = static_cast<double>(iterations) / std::max(steps, 1);
}

void heftSmoothedContactDerivatives(benchmark::State& state, const SmoothedCase& c) {
  smoothedContactDerivatives(state, c, *c.model);
}

void heftSmoothedContactDerivativesSticking(benchmark::State& state, const SmoothedCase& c) {
  smoothedContactDerivatives(state, c, *c.sticking);
}

void heftSmoothedContactDerivativesPayload(benchmark::State& state, const SmoothedCase& c) {
  smoothedContactDerivatives(state, c, *c.payload);
}

void heftSmoothedContactDerivativesCompliant(benchmark::State& state, const SmoothedCase& c) {
  smoothedContactDerivatives(state, c, *c.compliant);
}

void heftSmoothedContactDerivativesWithForces(benchmark::State& state, const SmoothedCase& c) {
  smoothedContactDerivatives(state, c, *c.model, true);
}

// What an estimator pays per knot and iteration: calc's step, then calcDiff's derivatives started
// at calc's solution (Newton confirms it in one step).
void heftSmoothedContactStepThenDerivatives(benchmark::State& state, const SmoothedCase& c) {
  heft::dynamics::SmoothedContactData data(*c.model);
  const VectorXd theta = c.model->nominalTheta();
  VectorXd solution(c.model->nv());
  int k = 0;
  for (auto _ : state) {
    solution =
        heft::dynamics::smoothedContactStep(*c.model, data, c.q[k], c.v[k], c.tau[k], theta, 0.01);
    heft::dynamics::computeSmoothedContactDerivatives(*c.model, data, c.q[k], c.v[k], c.tau[k],
                                                      theta, 0.01, &solution);
    benchmark::DoNotOptimize(data.dvnext_dtheta.data());
    k = (k + 1) % Robot::kStates;
  }
}

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;

  std::vector<std::unique_ptr<Robot>> robots;
  std::vector<ContactSpec> feet;
  for (const char* foot : {"FL_foot", "FR_foot", "RL_foot", "RR_foot"})
    feet.push_back({foot, ContactSpec::Type::Point3D, pinocchio::LOCAL_WORLD_ALIGNED});
  robots.push_back(std::make_unique<Robot>("go2", "go2_description/urdf/go2.urdf", feet));
  robots.push_back(std::make_unique<Robot>(
      "talos", "talos_data/robots/talos_reduced.urdf",
      std::vector<ContactSpec>{
          {"left_sole_link", ContactSpec::Type::Surface6D, pinocchio::LOCAL},
          {"right_sole_link", ContactSpec::Type::Surface6D, pinocchio::LOCAL}}));

  for (const auto& robot : robots) {
    const Robot& r = *robot;
    std::printf("%s: nq %d, nv %d, |S| = %zu of %d bodies, %zu contacts\n", r.name.c_str(),
                r.model.nq, r.model.nv, r.bodies.size(), r.model.njoints - 1, r.contacts.size());
    const std::vector<std::pair<const char*, void (*)(benchmark::State&, const Robot&)>> cases = {
        {"pinocchio_aba_derivatives", pinocchioAbaDerivatives},
        {"pinocchio_torque_regressor", pinocchioTorqueRegressor},
        {"heft_restricted_regressor", heftRestrictedRegressor},
        {"heft_forward_dynamics_derivatives", heftForwardDynamicsDerivatives},
        {"pinocchio_contact_derivatives", pinocchioContactDerivatives},
        {"heft_contact_dynamics_derivatives", heftContactDerivatives},
        {"heft_impulse_dynamics_derivatives", heftImpulseDerivatives},
    };
    for (const auto& [name, fn] : cases)
      benchmark::RegisterBenchmark((r.name + "/" + name).c_str(), fn, std::cref(r))
          ->Unit(benchmark::kMicrosecond);
  }

  // Smoothed contact: go2 on its four feet standing, TALOS on four corners per sole, half-sitting.
  std::vector<heft::model::ContactPoint> go2_feet, talos_corners;
  for (const char* foot : {"FL_foot", "FR_foot", "RL_foot", "RR_foot"})
    go2_feet.push_back({foot, foot, heft::Vector3::Zero()});
  for (const std::string side : {"left", "right"})
    for (const double x : {0.1, -0.1})
      for (const double y : {0.065, -0.065})
        talos_corners.push_back({side, side + "_sole_link", heft::Vector3(x, y, 0)});
  std::map<std::string, double> go2_standing, talos_half_sitting;
  for (const std::string leg : {"FL", "FR", "RL", "RR"}) {
    go2_standing[leg + "_thigh_joint"] = 0.8;
    go2_standing[leg + "_calf_joint"] = -1.6;
  }
  for (const std::string side : {"left", "right"}) {
    talos_half_sitting["leg_" + side + "_3_joint"] = -0.411354;
    talos_half_sitting["leg_" + side + "_4_joint"] = 0.859395;
    talos_half_sitting["leg_" + side + "_5_joint"] = -0.448041;
  }
  std::vector<SmoothedCase> smoothed;
  smoothed.push_back(makeSmoothedCase(*robots[0], go2_feet, go2_standing, "root_joint", 3.7e-5));
  smoothed.push_back(
      makeSmoothedCase(*robots[1], talos_corners, talos_half_sitting, "torso_2_joint", 5e-6));
  for (size_t i = 0; i < smoothed.size(); ++i) {
    const std::string prefix = robots[i]->name + "/";
    using Benchmark = void (*)(benchmark::State&, const SmoothedCase&);
    const std::pair<const char*, Benchmark> benchmarks[] = {
        {"step", heftSmoothedContactStep},
        {"derivatives", heftSmoothedContactDerivatives},
        {"derivatives_sticking", heftSmoothedContactDerivativesSticking},
        {"derivatives_payload", heftSmoothedContactDerivativesPayload},
        {"derivatives_compliant", heftSmoothedContactDerivativesCompliant},
        {"derivatives_with_forces", heftSmoothedContactDerivativesWithForces},
        {"step_then_derivatives", heftSmoothedContactStepThenDerivatives}};
    for (const auto& [name, function] : benchmarks)
      benchmark::RegisterBenchmark((prefix + "heft_smoothed_contact_" + name).c_str(), function,
                                   std::cref(smoothed[i]))
          ->Unit(benchmark::kMicrosecond);
  }

  heft::bench::RatioReporter reporter(
      "ratio to <robot>/pinocchio_aba_derivatives", [](const std::string& name) {
        return name.substr(0, name.find('/')) + "/pinocchio_aba_derivatives";
      });
  benchmark::RunSpecifiedBenchmarks(&reporter);
  benchmark::Shutdown();
  return 0;
}
