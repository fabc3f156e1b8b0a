// Cost of one InertialEkf::update() on TALOS (free flyer, 8 sole-corner contacts), estimating one
// link (the forearm, arm_left_4) and two (forearm and upper torso), in both states, against one
// pinocchio::rnea on the same model, measured in the same run. The target: update() of
// one and of two links at most 5 RNEAs.
//
//   ./bench_filter --benchmark_repetitions=5 --benchmark_report_aggregates_only=true
//
// The samples are a replay of a short MuJoCo run (talos-forearm-step, made before timing), so
// every update does its real work (window, measurement, gate test, Kalman step).
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdio>
#include <string>
#include <tuple>
#include <vector>

#include <pinocchio/algorithm/joint-configuration.hpp>
#include <pinocchio/algorithm/rnea.hpp>

#include "heft/filter/inertial_ekf.hpp"
#include "heft/model/model.hpp"
#include "heft/sim/scenario.hpp"
#include "support/ratio_reporter.hpp"

namespace {

using Eigen::VectorXd;
using heft::filter::ContactPoint;
using heft::filter::InertialEkf;
using heft::filter::InertialEkfOptions;

// The replayed stream: joint samples in Pinocchio order, base from truth, truth contact forces.
struct Stream {
  heft::model::RobotModel robot = heft::model::loadRobot("talos");
  std::vector<ContactPoint> contacts;
  std::vector<double> time;
  std::vector<VectorXd> q, v, tau, forces, a;

  Stream() {
    heft::sim::SimulationOptions options;
    options.duration = 2.0;
    const auto run = heft::sim::simulate(heft::sim::findScenario("talos-forearm-step"), options);
    const heft::io::Log& log = run.log;
    const heft::io::TruthSeries& truth = *log.truth;
    const pinocchio::Model& model = robot.pinocchio();
    for (const std::string side : {"left", "right"}) {
      for (const auto& [corner, x, y] :
           {std::tuple<const char*, double, double>{"front_left", 0.1, 0.065},
            {"front_right", 0.1, -0.065},
            {"back_left", -0.1, 0.065},
            {"back_right", -0.1, -0.065}}) {
        contacts.push_back({side + "_sole_" + corner, side + "_sole_link", heft::Vector3(x, y, 0)});
      }
    }
    // truth and joints share the 1 kHz grid in this scenario (noise nominal: no joint jitter)
    const Eigen::Index n = std::min(log.joints.time.size(), truth.time.size());
    for (Eigen::Index k = 0; k < n; ++k) {
      VectorXd qk = pinocchio::neutral(model), vk = VectorXd::Zero(model.nv),
               tk = VectorXd::Zero(model.nv), fk = VectorXd::Zero(3 * contacts.size());
      qk.head<7>() = truth.base_pose.row(k).transpose();
      vk.head<6>() = truth.base_twist.row(k).transpose();
      for (pinocchio::JointIndex j = 2; j < static_cast<pinocchio::JointIndex>(model.njoints);
           ++j) {
        const auto it = std::find(log.joints.names.begin(), log.joints.names.end(), model.names[j]);
        const auto c = it - log.joints.names.begin();
        qk[model.idx_qs[j]] = log.joints.q(k, c);
        vk[model.idx_vs[j]] = log.joints.v(k, c);
        tk[model.idx_vs[j]] = log.joints.tau(k, c);
      }
      for (std::size_t c = 0; c < contacts.size(); ++c) {
        const auto it =
            std::find(truth.contact_names.begin(), truth.contact_names.end(), contacts[c].name);
        fk.segment<3>(3 * c) =
            truth.contact_forces.row(k).segment<3>(3 * (it - truth.contact_names.begin()));
      }
      time.push_back(log.joints.time[k]);
      q.push_back(qk);
      v.push_back(vk);
      tau.push_back(tk);
      forces.push_back(fk);
    }
    // accelerations for the RNEA baseline: differences of v (its cost does not depend on them)
    for (std::size_t k = 0; k < v.size(); ++k) {
      const std::size_t next = std::min(k + 1, v.size() - 1), prev = next - 1;
      a.push_back((v[next] - v[prev]) / (time[next] - time[prev]));
    }
  }
};

const Stream& stream() {
  static const Stream s;
  return s;
}

void pinocchioRnea(benchmark::State& state) {
  const Stream& s = stream();
  const pinocchio::Model& model = s.robot.pinocchio();
  pinocchio::Data data(model);
  std::size_t k = 0;
  for (auto _ : state) {
    pinocchio::rnea(model, data, s.q[k], s.v[k], s.a[k]);
    benchmark::DoNotOptimize(data.tau.data());
    k = (k + 1) % s.time.size();
  }
}

void filterUpdate(benchmark::State& state, std::vector<std::string> bodies,
                  InertialEkfOptions::State kind) {
  const Stream& s = stream();
  const pinocchio::Model& model = s.robot.pinocchio();
  std::vector<pinocchio::JointIndex> joints;
  VectorXd prior(10 * bodies.size());
  for (std::size_t b = 0; b < bodies.size(); ++b) {
    joints.push_back(s.robot.bodyIndex(bodies[b]));
    prior.segment<10>(10 * b) = s.robot.pi(joints.back());
  }
  InertialEkfOptions options;
  options.state = kind;
  options.calibration_duration = 0;
  options.gating = false;  // every timed call does the full Kalman step
  InertialEkf filter(model, joints, s.contacts, prior, options);
  // fill the window first so that the timed calls are updates; the stream then repeats with its
  // time shifted, so the window never sees time go backwards
  std::size_t k = 0;
  double offset = 0;
  const double period = s.time.back() - s.time.front() + 1e-3;
  auto next = [&] {
    const auto st = filter.update(s.time[k] + offset, s.q[k], s.v[k], s.tau[k], s.forces[k]);
    if (++k == s.time.size()) k = 0, offset += period;
    return st;
  };
  for (int i = 0; i < 2 * options.difference_half_width + 2; ++i) next();
  long updated = 0;
  for (auto _ : state) updated += next() == heft::filter::UpdateStatus::Updated;
  state.counters["updated_fraction"] =
      static_cast<double>(updated) / static_cast<double>(state.iterations());
}

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  const Stream& s = stream();  // simulate before timing anything
  std::printf("talos: nq %d, nv %d, %zu contacts, %zu samples replayed\n", s.robot.pinocchio().nq,
              s.robot.pinocchio().nv, s.contacts.size(), s.time.size());
  benchmark::RegisterBenchmark("talos/pinocchio_rnea", pinocchioRnea)
      ->Unit(benchmark::kMicrosecond);
  const std::vector<std::string> one{"arm_left_4_link"}, two{"arm_left_4_link", "torso_2_link"};
  for (const auto kind :
       {InertialEkfOptions::State::LogCholesky, InertialEkfOptions::State::LinearPi}) {
    const std::string suffix = kind == InertialEkfOptions::State::LogCholesky ? "" : "_linear_pi";
    benchmark::RegisterBenchmark(("talos/update_1_link" + suffix).c_str(), filterUpdate, one, kind)
        ->Unit(benchmark::kMicrosecond);
    benchmark::RegisterBenchmark(("talos/update_2_links" + suffix).c_str(), filterUpdate, two, kind)
        ->Unit(benchmark::kMicrosecond);
  }
  heft::bench::RatioReporter reporter("ratio to one pinocchio::rnea, same run",
                                      [](const std::string&) { return "talos/pinocchio_rnea"; });
  benchmark::RunSpecifiedBenchmarks(&reporter);
  benchmark::Shutdown();
  return 0;
}
