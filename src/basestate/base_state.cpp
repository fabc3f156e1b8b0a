#include "heft/basestate/base_state.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <sstream>

#include <Eigen/Cholesky>
#include <Eigen/Geometry>
#include <pinocchio/algorithm/frames.hpp>
#include <pinocchio/algorithm/joint-configuration.hpp>
#include <pinocchio/algorithm/kinematics.hpp>
#include <pinocchio/multibody/data.hpp>
#include <pinocchio/spatial.hpp>

#include "heft/common/error.hpp"
#include "heft/common/format.hpp"
#include "heft/io/joint_binding.hpp"
#include "heft/model/model.hpp"

namespace heft::basestate {

namespace {

// Orientation with zero yaw whose gravity matches a specific force f (IMU frame, at rest f = -R^T g
// points up): roll and pitch from the accelerometer.
Matrix3 orientationFromGravity(const Vector3& f) {
  const double roll = std::atan2(f.y(), f.z());
  const double pitch = std::atan2(-f.x(), std::hypot(f.y(), f.z()));
  return (Eigen::AngleAxisd(pitch, Vector3::UnitY()) * Eigen::AngleAxisd(roll, Vector3::UnitX()))
      .toRotationMatrix();
}

Matrix3 rotationFromCoeffs(const Eigen::Vector4d& c) {
  return Eigen::Quaterniond(c[3], c[0], c[1], c[2]).normalized().toRotationMatrix();
}

// Index of the last sample of `time` at or before t, or -1.
Eigen::Index lastAtOrBefore(const Eigen::VectorXd& time, double t) {
  const double* begin = time.data();
  const double* end = begin + time.size();
  return static_cast<Eigen::Index>(std::upper_bound(begin, end, t) - begin) - 1;
}

// Nearest sample of `time` to t.
Eigen::Index nearest(const Eigen::VectorXd& time, double t) {
  const Eigen::Index after = lastAtOrBefore(time, t) + 1;
  if (after <= 0) return 0;
  if (after >= time.size()) return time.size() - 1;
  return (t - time[after - 1] <= time[after] - t) ? after - 1 : after;
}

// Roll, pitch, yaw (Z-Y-X) of a rotation.
Vector3 rollPitchYaw(const Matrix3& R) {
  return Vector3(std::atan2(R(2, 1), R(2, 2)), std::asin(std::clamp(-R(2, 0), -1.0, 1.0)),
                 std::atan2(R(1, 0), R(0, 0)));
}

double wrapAngle(double a) { return std::atan2(std::sin(a), std::cos(a)); }

}  // namespace

void BaseStateOptions::validate() const {
  filter.validate();
  require(std::isfinite(ground_height), "ground_height", "a finite value [m]",
          formatNumber(ground_height));
}

std::string BaseStateSummary::report() const {
  std::ostringstream out;
  out << "base state: " << joint_samples << " joint samples, " << imu_samples << " IMU samples, "
      << corrections << " foot corrections, " << ground_corrections << " level-ground updates, "
      << touchdowns << " touchdowns, " << flight_samples << " samples without contact, " << rejected
      << " rejected, " << failures << " failed corrections; "
      << (smoothed ? "smoothed (RTS)" : "forward filter only") << "; initial orientation from "
      << (orientation_from_imu ? "imu/orientation" : "imu/accel") << "; "
      << formatNumber(seconds, 3) << " s\n";
  return out.str();
}

namespace {

// Base pose and twist (and the biases) at each joint sample, from the IMU states through the
// IMU-to-base kinematics of the joints.
void writeBaseFromImu(const pinocchio::Model& model, const std::string& imu_frame,
                      const io::JointSeries& joints, const io::JointBinding& binding,
                      const std::vector<CoreState>& state, const std::vector<Vector3>& gyro,
                      BaseStateTrajectory& out) {
  const Eigen::Index N = joints.time.size();
  Eigen::VectorXd q = pinocchio::neutral(model), v = Eigen::VectorXd::Zero(model.nv);
  const auto fillJoints = [&](Eigen::Index k) {
    for (int j = 0; j < binding.size(); ++j) {
      q[binding.idx_q[j]] = joints.q(k, binding.log_column[j]);
      v[binding.idx_v[j]] = joints.v(k, binding.log_column[j]);
    }
  };
  out.base_pose.resize(N, 7);
  out.base_twist.resize(N, 6);
  out.gyro_bias.resize(N, 3);
  out.accel_bias.resize(N, 3);
  pinocchio::Data data(model);
  const pinocchio::FrameIndex imu_id = model.getFrameId(imu_frame);
  for (Eigen::Index k = 0; k < N; ++k) {
    fillJoints(k);
    pinocchio::forwardKinematics(model, data, q, v);
    const pinocchio::SE3 base_to_imu = pinocchio::updateFramePlacement(model, data, imu_id);
    const pinocchio::Motion relative =
        pinocchio::getFrameVelocity(model, data, imu_id, pinocchio::LOCAL);
    const CoreState& x = state[k];
    const pinocchio::SE3 world_to_imu(x.R, x.p);
    const pinocchio::SE3 base = world_to_imu * base_to_imu.inverse();
    // the IMU's own twist (IMU frame) minus what the joints add between base and IMU
    const pinocchio::Motion imu_twist(Vector3(x.R.transpose() * x.v),
                                      Vector3(gyro[k] - x.gyro_bias));
    const pinocchio::Motion base_twist = base_to_imu.act(imu_twist - relative);
    const Eigen::Quaterniond quaternion(base.rotation());
    out.base_pose.row(k).head<3>() = base.translation().transpose();
    out.base_pose.row(k).tail<4>() = quaternion.normalized().coeffs().transpose();
    out.base_twist.row(k).head<3>() = base_twist.linear().transpose();
    out.base_twist.row(k).tail<3>() = base_twist.angular().transpose();
    out.gyro_bias.row(k) = x.gyro_bias.transpose();
    out.accel_bias.row(k) = x.accel_bias.transpose();
  }
}

}  // namespace

BaseStateTrajectory estimateBaseState(const pinocchio::Model& model, const io::Log& log,
                                      const std::vector<model::ContactPoint>& contacts,
                                      const BaseStateOptions& options) {
  const auto start_clock = std::chrono::steady_clock::now();
  options.validate();
  require(model::isFreeFlyer(model, 1), "model", "a free-flyer robot", "a fixed base");
  require(log.imu.has_value(), "imu",
          "an IMU group (a floating-base log needs one for its base state)", "none");
  const io::ImuSeries& imu = *log.imu;
  const std::string imu_frame = options.imu_frame.empty() ? imu.frame : options.imu_frame;
  require(!imu_frame.empty(), "imu/frame", "the link the IMU is mounted on", "no frame attribute");
  require(model.existFrame(imu_frame), "imu/frame", "a frame of the model " + model.name,
          "\"" + imu_frame + "\"");
  require(imu.time.size() >= 2, "imu/time", "at least 2 samples", std::to_string(imu.time.size()));
  require(log.contacts.has_value(), "contacts",
          "a contacts group (flags of the feet touching the ground)", "none");
  const io::ContactSeries& flags = *log.contacts;
  require(contacts.size() == flags.names.size(), "contacts/names",
          std::to_string(contacts.size()) + " contact points", std::to_string(flags.names.size()));
  require(flags.flags.size() > 0 && flags.flags.maxCoeff() > 0, "contacts/flags",
          "at least one touchdown", "flags that never touch down");
  const io::JointSeries& joints = log.joints;
  const io::JointBinding binding = io::bindJoints(model, joints.names);
  const Eigen::Index N = joints.time.size();

  ContactEkf ekf(model, imu_frame, contacts, options.filter);
  BaseStateTrajectory out;
  out.summary.joint_samples = N;
  out.time = joints.time;

  // configuration and velocity of every joint sample (base at the origin, at rest)
  Eigen::VectorXd q = pinocchio::neutral(model), v = Eigen::VectorXd::Zero(model.nv);
  const auto fillJoints = [&](Eigen::Index k) {
    for (int j = 0; j < binding.size(); ++j) {
      q[binding.idx_q[j]] = joints.q(k, binding.log_column[j]);
      v[binding.idx_v[j]] = joints.v(k, binding.log_column[j]);
    }
  };
  Eigen::Matrix<std::uint8_t, Eigen::Dynamic, 1> point_flags(contacts.size());
  const auto fillFlags = [&](double t) {
    const Eigen::Index c = lastAtOrBefore(flags.time, t);
    if (c < 0)
      point_flags.setZero();
    else
      point_flags = flags.flags.row(c).transpose();
  };

  // start at the later of the first IMU and the first joint sample
  const double t0 = std::max(imu.time[0], joints.time[0]);
  Eigen::Index i_imu = std::max<Eigen::Index>(lastAtOrBefore(imu.time, t0), 0);
  Matrix3 R0;
  out.summary.orientation_from_imu = imu.orientation.rows() > 0;
  if (out.summary.orientation_from_imu) {
    R0 = rotationFromCoeffs(imu.orientation.row(i_imu).transpose());
  } else {
    R0 = orientationFromGravity(imu.accel.row(i_imu).transpose());
  }
  // position: x = y = 0, the lowest stance foot (or any foot) on the ground
  const Eigen::Index k0 = std::max<Eigen::Index>(lastAtOrBefore(joints.time, t0), 0);
  fillJoints(k0);
  fillFlags(joints.time[k0]);
  double lowest = 0;
  bool found = false;
  for (int f = 0; f < ekf.numFeet(); ++f) {
    bool touching = false;
    for (int i : ekf.feet()[f].points) touching = touching || point_flags[i];
    const double z = (R0 * ekf.footInImu(q, f)).z();
    if ((touching || !found) && (!found || z < lowest)) lowest = z;
    found = found || touching;
  }
  ekf.initialize(t0, R0, Vector3(0, 0, options.ground_height - lowest), Vector3::Zero());
  ekf.setImu(imu.gyro.row(i_imu).transpose(), imu.accel.row(i_imu).transpose());
  ++i_imu;

  // forward pass, storing what the smoother needs at every joint sample
  std::vector<CoreState> filtered(N), predicted(N);
  std::vector<Matrix15> gain(N, Matrix15::Identity());  // RTS gain C_k (k -> k + 1)
  std::vector<Vector3> gyro(N, Vector3::Zero());
  Matrix15 previous_P = ekf.covariance().topLeftCorner<15, 15>();
  const int m = options.filter.estimate_biases ? 15 : 9;  // bias blocks are 0 without biases
  Eigen::Index first = -1;
  for (Eigen::Index k = 0; k < N; ++k) {
    const double t = joints.time[k];
    if (t < t0) continue;
    while (i_imu < imu.time.size() && imu.time[i_imu] <= t) {
      ekf.propagateTo(imu.time[i_imu]);
      ekf.setImu(imu.gyro.row(i_imu).transpose(), imu.accel.row(i_imu).transpose());
      ++i_imu;
      ++out.summary.imu_samples;
    }
    fillJoints(k);
    fillFlags(t);
    ekf.update(t, q, point_flags);
    filtered[k] = ekf.core();
    predicted[k] = ekf.predictedCore();
    gyro[k] = ekf.heldGyro();
    if (first >= 0 && options.smooth) {
      // C_{k-1} = P_{k-1|k-1} Phi^T P_{k|k-1}^-1
      const Eigen::MatrixXd Pp = ekf.predictedCoreCovariance().topLeftCorner(m, m);
      const Eigen::MatrixXd PPhiT =
          previous_P.topLeftCorner(m, m) * ekf.transition().topLeftCorner(m, m).transpose();
      const Eigen::LDLT<Eigen::MatrixXd> ldlt(Pp);
      Matrix15 C = Matrix15::Zero();
      C.topLeftCorner(m, m) = ldlt.solve(PPhiT.transpose()).transpose();
      if (C.allFinite()) gain[k - 1] = C;
    }
    if (first < 0) first = k;
    previous_P = ekf.covariance().topLeftCorner<15, 15>();
  }
  require(first >= 0, "joints/time", "samples after the first IMU sample", "none");
  const ContactEkf::Counters& counters = ekf.counters();
  out.summary.corrections = counters.corrections;
  out.summary.ground_corrections = counters.ground_corrections;
  out.summary.flight_samples = counters.flight;
  out.summary.touchdowns = counters.touchdowns;
  out.summary.rejected = counters.rejected;
  out.summary.failures = counters.failures;

  // backward pass (RTS on the core): delta_k = C_k local(X^s_{k+1}, X_{k+1|k})
  std::vector<CoreState>& state = filtered;  // smoothed in place
  if (options.smooth) {
    out.summary.smoothed = true;
    for (Eigen::Index k = N - 2; k >= first; --k) {
      const Vector15 next = localCore(state[k + 1], predicted[k + 1]);
      state[k] = retractCore(state[k], gain[k] * next);
    }
  }
  // samples before the start hold the first estimate
  for (Eigen::Index k = 0; k < first; ++k) {
    state[k] = state[first];
    gyro[k] = gyro[first];
  }

  writeBaseFromImu(model, imu_frame, joints, binding, state, gyro, out);
  out.summary.seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start_clock).count();
  return out;
}

std::vector<model::ContactPoint> logContactPoints(const pinocchio::Model& model, const io::Log& log,
                                                  const std::vector<model::ContactPoint>& extra) {
  require(log.contacts.has_value(), "contacts",
          "a contacts group (flags of the feet touching the ground)", "none");
  return model::resolveContactPoints(
      model, log.contacts->names, model::configOverLogPoints(extra, log.contacts->definedPoints()),
      "contacts/names");
}

BaseStateTrajectory fillBaseState(const pinocchio::Model& model, io::Log& log,
                                  const BaseStateOptions& options,
                                  const std::vector<model::ContactPoint>& extra) {
  BaseStateTrajectory trajectory =
      estimateBaseState(model, log, logContactPoints(model, log, extra), options);
  log.joints.base_pose = trajectory.base_pose;
  log.joints.base_twist = trajectory.base_twist;
  return trajectory;
}

BaseStateErrors compareWithTruth(const io::Log& log, const BaseStateTrajectory& trajectory) {
  require(log.truth.has_value() && log.truth->time.size() > 0 &&
              log.truth->base_pose.rows() == log.truth->time.size() &&
              log.truth->base_twist.rows() == log.truth->time.size(),
          "truth", "a truth group with base_pose and base_twist", "none");
  const io::TruthSeries& truth = *log.truth;
  BaseStateErrors e;
  const Eigen::Index N = trajectory.time.size();
  require(N >= 2, "trajectory", "at least 2 samples", std::to_string(N));
  double angle2 = 0, roll2 = 0, pitch2 = 0, yaw2 = 0, vel2 = 0, omega2 = 0;
  Vector3 first_est = Vector3::Zero(), first_true = Vector3::Zero(), last_est = Vector3::Zero(),
          last_true = Vector3::Zero();
  for (Eigen::Index k = 0; k < N; ++k) {
    const Eigen::Index j = nearest(truth.time, trajectory.time[k]);
    const Matrix3 R_est = rotationFromCoeffs(trajectory.base_pose.row(k).tail<4>().transpose());
    const Matrix3 R_true = rotationFromCoeffs(truth.base_pose.row(j).tail<4>().transpose());
    const double angle = pinocchio::log3(Matrix3(R_true.transpose() * R_est)).norm();
    const Vector3 d = rollPitchYaw(R_est) - rollPitchYaw(R_true);
    angle2 += angle * angle;
    roll2 += std::pow(wrapAngle(d[0]), 2);
    pitch2 += std::pow(wrapAngle(d[1]), 2);
    yaw2 += std::pow(wrapAngle(d[2]), 2);
    vel2 +=
        (trajectory.base_twist.row(k).head<3>() - truth.base_twist.row(j).head<3>()).squaredNorm();
    omega2 +=
        (trajectory.base_twist.row(k).tail<3>() - truth.base_twist.row(j).tail<3>()).squaredNorm();
    const Vector3 p_est = trajectory.base_pose.row(k).head<3>().transpose();
    const Vector3 p_true = truth.base_pose.row(j).head<3>().transpose();
    if (k == 0) {
      first_est = p_est;
      first_true = p_true;
    }
    last_est = p_est;
    last_true = p_true;
  }
  const double deg = 180.0 / M_PI;
  const double n = static_cast<double>(N);
  e.samples = N;
  e.orientation_rmse_deg = std::sqrt(angle2 / n) * deg;
  e.roll_rmse_deg = std::sqrt(roll2 / n) * deg;
  e.pitch_rmse_deg = std::sqrt(pitch2 / n) * deg;
  e.yaw_rmse_deg = std::sqrt(yaw2 / n) * deg;
  e.velocity_rmse = std::sqrt(vel2 / n);
  e.angular_velocity_rmse = std::sqrt(omega2 / n);
  const double duration = trajectory.time[N - 1] - trajectory.time[0];
  e.position_drift_per_minute =
      ((last_est - first_est) - (last_true - first_true)).norm() / std::max(duration, 1e-9) * 60;
  return e;
}

}  // namespace heft::basestate
