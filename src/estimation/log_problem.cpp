#include "heft/estimation/log_problem.hpp"

#include <algorithm>
#include <cmath>

#include "heft/common/error.hpp"

namespace heft::estimation {

void LogProblemOptions::validate() const {
  require(!identified_bodies.empty(), "identified_bodies", "at least one body name", "none");
  require(first_sample >= 0, "first_sample", ">= 0", std::to_string(first_sample));
  require(knots >= 1, "knots", ">= 1", std::to_string(knots));
  require(stride >= 1, "stride", ">= 1", std::to_string(stride));
  requirePositive(torque_std, "torque_std", " [N m]");
  requirePositive(configuration_std, "configuration_std", " [rad]");
  requirePositive(encoder_std, "encoder_std", " [rad]");
  requirePositive(velocity_std, "velocity_std", " [rad/s]");
  requirePositive(theta_prior_std, "theta_prior_std");
}

LogProblem buildLogProblem(const model::RobotModel& robot, const io::Log& log,
                           const LogProblemOptions& options) {
  options.validate();
  require(!robot.hasFreeFlyer(), "log problem robot " + robot.displayName(),
          "a fixed-base robot (floating bases need contact phases and IMU residuals, not "
          "implemented yet)",
          "a free-flyer model");
  const io::JointSeries& joints = log.joints;
  const pinocchio::Model& pin = robot.pinocchio();
  const int nv = pin.nv, nq = pin.nq;
  const int last = options.first_sample + options.knots * options.stride;
  require(last < joints.time.size(), "log joint samples",
          "at least " + std::to_string(last + 1) + " (first_sample + knots * stride + 1)",
          std::to_string(joints.time.size()));

  LogProblem p;
  p.model = std::make_shared<pinocchio::Model>(pin);
  for (const auto& name : options.identified_bodies) p.identified.push_back(robot.bodyIndex(name));
  p.dynamics = std::make_shared<dynamics::ForwardDynamicsModel>(*p.model, p.identified,
                                                                options.parametrization);
  p.state = std::make_shared<MultibodyState>(p.model);

  // Log column of every one-dimensional joint of the model, in joint order.
  std::vector<pinocchio::JointIndex> measured;
  std::vector<int> column;
  for (pinocchio::JointIndex j = 1; j < pin.joints.size(); ++j) {
    require(pin.joints[j].nq() == 1 && pin.joints[j].nv() == 1, "joint " + pin.names[j],
            "one position and one velocity coordinate", "another joint type");
    const auto it = std::find(joints.names.begin(), joints.names.end(), pin.names[j]);
    require(it != joints.names.end(), "log joints/names", "the joint " + pin.names[j],
            "no such column");
    measured.push_back(j);
    column.push_back(static_cast<int>(it - joints.names.begin()));
  }
  const int nj = static_cast<int>(measured.size());

  const double period = joints.time(1) - joints.time(0);
  for (int s = options.first_sample; s < last; ++s) {
    const double step = joints.time(s + 1) - joints.time(s);
    require(std::abs(step - period) <= 1e-6 * period,
            "log joints/time row " + std::to_string(s + 1),
            "uniform sampling at " + std::to_string(period) + " s", std::to_string(step) + " s");
  }
  p.dt = options.stride * period;

  auto sampleOf = [&](int k) { return options.first_sample + k * options.stride; };
  auto jointRow = [&](const Eigen::MatrixXd& m, int s) {
    Eigen::VectorXd out(nj);
    for (int i = 0; i < nj; ++i) out(i) = m(s, column[i]);
    return out;
  };
  auto stateAt = [&](int k) {
    // Encoders and central differences over one step (one-sided at the window's ends if needed).
    const int s = sampleOf(k);
    const int lo = std::max(0, s - options.stride);
    const int hi = std::min<int>(joints.time.size() - 1, s + options.stride);
    Eigen::VectorXd x(nq + nv);
    const Eigen::VectorXd q = jointRow(joints.q, s);
    for (int i = 0; i < nj; ++i) x(pin.joints[measured[i]].idx_q()) = q(i);
    const Eigen::VectorXd dq =
        (jointRow(joints.q, hi) - jointRow(joints.q, lo)) / (joints.time(hi) - joints.time(lo));
    for (int i = 0; i < nj; ++i) x(nq + pin.joints[measured[i]].idx_v()) = dq(i);
    return x;
  };

  const Eigen::VectorXd x0 = stateAt(0);
  MultibodyNoise noise;
  noise.generalized_force = Eigen::VectorXd::Constant(nv, options.torque_std);
  noise.configuration = Eigen::VectorXd::Constant(nv, options.configuration_std);
  noise.encoder_position = options.encoder_std;
  noise.encoder_velocity = options.velocity_std;

  std::vector<std::shared_ptr<const StageModel>> running;
  running.reserve(options.knots);
  p.time.resize(options.knots + 1);
  for (int k = 0; k <= options.knots; ++k) {
    const int s = sampleOf(k);
    p.time(k) = joints.time(s);
    MultibodyMeasurement z;
    z.joint_q = jointRow(joints.q, s);
    if (options.use_logged_velocity) z.joint_v = jointRow(joints.v, s);
    const bool terminal = k == options.knots;
    if (!terminal) {
      z.tau = Eigen::VectorXd::Zero(nv);
      const Eigen::VectorXd tau = jointRow(joints.tau, s);
      for (int i = 0; i < nj; ++i) z.tau(pin.joints[measured[i]].idx_v()) = tau(i);
    }
    auto stage = std::make_shared<MultibodyStageModel>(p.dynamics, p.state, measured, noise,
                                                       std::move(z), p.dt, terminal);
    if (terminal) {
      ArrivalPrior arrival;
      arrival.x_mean = x0;
      arrival.x_sqrt_info = Eigen::MatrixXd::Zero(2 * nv, 2 * nv);
      arrival.x_sqrt_info.diagonal().head(nv).setConstant(1 / options.encoder_std);
      arrival.x_sqrt_info.diagonal().tail(nv).setConstant(1 / options.velocity_std);
      p.theta = p.dynamics->nominalTheta();
      arrival.theta_mean = p.theta;
      arrival.theta_sqrt_info =
          Eigen::MatrixXd::Identity(p.theta.size(), p.theta.size()) / options.theta_prior_std;
      p.problem = std::make_shared<Problem>(p.state, running, stage, arrival);
    } else {
      running.push_back(stage);
    }
  }
  for (int k = 0; k <= options.knots; ++k) p.xs.push_back(stateAt(k));
  p.ws.assign(options.knots, Eigen::VectorXd::Zero(2 * nv));
  return p;
}

}  // namespace heft::estimation
