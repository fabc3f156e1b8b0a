// Cost of one ContactEkf::update() (propagation to the joint sample, contact bookkeeping, leg
// kinematics and one 3-row correction per stance foot) on go2 (4 point feet) and TALOS (2 flat
// feet, IMU on the torso), against one pinocchio::rnea on the same model, measured in the same run.
//
//   ./bench_basestate --benchmark_repetitions=5 --benchmark_report_aggregates_only=true
//
// The samples are a short MuJoCo run (made before timing), replayed with their IMU samples; the
// stream repeats with its time shifted so that time never goes back.
#include <benchmark/benchmark.h>

#include <string>
#include <vector>

#include <pinocchio/algorithm/joint-configuration.hpp>
#include <pinocchio/algorithm/rnea.hpp>

#include "heft/basestate/base_state.hpp"
#include "heft/basestate/contact_ekf.hpp"
#include "heft/io/joint_binding.hpp"
#include "heft/model/model.hpp"
#include "heft/sim/scenario.hpp"
#include "support/ratio_reporter.hpp"

namespace {

using Eigen::VectorXd;
using FlagVector = Eigen::Matrix<std::uint8_t, Eigen::Dynamic, 1>;

struct Stream {
  heft::model::RobotModel robot;
  heft::io::Log log;
  std::vector<heft::model::ContactPoint> contacts;
  std::vector<VectorXd> q, v, a;
  std::vector<FlagVector> flags;

  Stream(const std::string& robot_name, const std::string& scenario)
      : robot(heft::model::loadRobot(robot_name)) {
    heft::sim::SimulationOptions options;
    options.duration = 2.0;
    log = heft::sim::simulate(heft::sim::findScenario(scenario), options).log;
    const pinocchio::Model& model = robot.pinocchio();
    contacts = heft::basestate::logContactPoints(model, log);
    const heft::io::JointBinding binding = heft::io::bindJoints(model, log.joints.names);
    const auto& c = *log.contacts;
    Eigen::Index row = 0;
    for (Eigen::Index k = 0; k < log.joints.time.size(); ++k) {
      VectorXd qk = pinocchio::neutral(model), vk = VectorXd::Zero(model.nv);
      for (int j = 0; j < binding.size(); ++j) {
        qk[binding.idx_q[j]] = log.joints.q(k, binding.log_column[j]);
        vk[binding.idx_v[j]] = log.joints.v(k, binding.log_column[j]);
      }
      while (row + 1 < c.time.size() && c.time[row + 1] <= log.joints.time[k]) ++row;
      q.push_back(qk);
      v.push_back(vk);
      a.push_back(VectorXd::Zero(model.nv));
      flags.push_back(c.flags.row(row).transpose());
    }
  }
};

const Stream& stream(const std::string& robot) {
  static const Stream go2("go2", "go2-trot"), talos("talos", "talos-step-mass-wave");
  return robot == "go2" ? go2 : talos;
}

void pinocchioRnea(benchmark::State& state, std::string robot) {
  const Stream& s = stream(robot);
  const pinocchio::Model& model = s.robot.pinocchio();
  pinocchio::Data data(model);
  std::size_t k = 0;
  for (auto _ : state) {
    pinocchio::rnea(model, data, s.q[k], s.v[k], s.a[k]);
    benchmark::DoNotOptimize(data.tau.data());
    k = (k + 1) % s.q.size();
  }
}

void ekfUpdate(benchmark::State& state, std::string robot) {
  const Stream& s = stream(robot);
  const pinocchio::Model& model = s.robot.pinocchio();
  heft::basestate::ContactEkf ekf(model, s.log.imu->frame, s.contacts);
  const auto& time = s.log.joints.time;
  const auto& imu = *s.log.imu;
  ekf.initialize(time[0], heft::Matrix3::Identity(), heft::Vector3::Zero(), heft::Vector3::Zero());
  std::size_t k = 0;
  Eigen::Index i = 0;
  double offset = 0;
  const double period = time[time.size() - 1] - time[0] + 1e-3;
  long updated = 0;
  for (auto _ : state) {
    const double t = time[k] + offset;
    for (; i < imu.time.size() && imu.time[i] + offset <= t; ++i) {
      ekf.propagateTo(imu.time[i] + offset);
      ekf.setImu(imu.gyro.row(i).transpose(), imu.accel.row(i).transpose());
    }
    updated += ekf.update(t, s.q[k], s.flags[k]) == heft::basestate::ContactEkfStatus::Updated;
    if (++k == s.q.size()) k = 0, i = 0, offset += period;
  }
  state.counters["updated_fraction"] =
      static_cast<double>(updated) / static_cast<double>(state.iterations());
}

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  for (const std::string robot : {"go2", "talos"}) {
    stream(robot);  // simulate before timing anything
    benchmark::RegisterBenchmark((robot + "/pinocchio_rnea").c_str(), pinocchioRnea, robot)
        ->Unit(benchmark::kMicrosecond);
    benchmark::RegisterBenchmark((robot + "/contact_ekf_update").c_str(), ekfUpdate, robot)
        ->Unit(benchmark::kMicrosecond);
  }
  heft::bench::RatioReporter reporter(
      "ratio to one pinocchio::rnea of the same model, same run",
      [](const std::string& name) { return name.substr(0, name.find('/')) + "/pinocchio_rnea"; });
  benchmark::RunSpecifiedBenchmarks(&reporter);
  benchmark::Shutdown();
  return 0;
}
