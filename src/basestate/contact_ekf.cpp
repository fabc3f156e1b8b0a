#include "heft/basestate/contact_ekf.hpp"

#include <algorithm>
#include <cmath>

#include <Eigen/Cholesky>
#include <Eigen/LU>
#include <pinocchio/algorithm/frames.hpp>
#include <pinocchio/algorithm/jacobian.hpp>
#include <pinocchio/algorithm/joint-configuration.hpp>
#include <pinocchio/algorithm/kinematics.hpp>
#include <pinocchio/spatial.hpp>

#include "heft/common/error.hpp"
#include "heft/common/format.hpp"
#include "heft/model/model.hpp"
#include "heft/model/plane.hpp"

namespace heft::basestate {

namespace {

// error-state layout: [phi, v, p, b_g, b_a, d_1 .. d_K]
constexpr int kPhi = 0, kVel = 3, kPos = 6, kGyroBias = 9, kAccelBias = 12, kFeet = 15;
const Vector3 kGravity(0, 0, -9.81);

Matrix3 skew(const Vector3& x) {
  Matrix3 s;
  s << 0, -x.z(), x.y(), x.z(), 0, -x.x(), -x.y(), x.x(), 0;
  return s;
}

int footIndex(int k) { return kFeet + 3 * k; }

// The unit normal of the plane of a flat foot's points (their largest triangle), in its frame.
Vector3 planeNormal(const std::vector<model::ContactPoint>& points, const std::vector<int>& idx) {
  std::vector<Vector3> offsets;
  for (const int i : idx) offsets.push_back(points[i].offset);
  return model::largestTriangle(offsets).normal;
}

}  // namespace

CoreState retractCore(const CoreState& x, const Vector15& delta) {
  const Vector3 phi = delta.segment<3>(kPhi);
  const Matrix3 rotation = pinocchio::exp3(phi);
  Matrix3 right_jacobian = Matrix3::Zero();
  pinocchio::Jexp3(phi, right_jacobian);
  const Matrix3 left_jacobian = right_jacobian.transpose();
  CoreState y;
  y.R = rotation * x.R;
  y.v = rotation * x.v + left_jacobian * delta.segment<3>(kVel);
  y.p = rotation * x.p + left_jacobian * delta.segment<3>(kPos);
  y.gyro_bias = x.gyro_bias + delta.segment<3>(kGyroBias);
  y.accel_bias = x.accel_bias + delta.segment<3>(kAccelBias);
  return y;
}

Vector15 localCore(const CoreState& y, const CoreState& x) {
  const Matrix3 rotation = y.R * x.R.transpose();
  const Vector3 phi = pinocchio::log3(rotation);
  Matrix3 right_jacobian = Matrix3::Zero();
  pinocchio::Jexp3(phi, right_jacobian);
  const Eigen::PartialPivLU<Matrix3> left_jacobian(right_jacobian.transpose());
  Vector15 delta;
  delta.segment<3>(kPhi) = phi;
  delta.segment<3>(kVel) = left_jacobian.solve(y.v - rotation * x.v);
  delta.segment<3>(kPos) = left_jacobian.solve(y.p - rotation * x.p);
  delta.segment<3>(kGyroBias) = y.gyro_bias - x.gyro_bias;
  delta.segment<3>(kAccelBias) = y.accel_bias - x.accel_bias;
  return delta;
}

void ContactEkfOptions::validate() const {
  requireNonNegative(gyro_noise, "gyro_noise", " [rad/s/sqrt(Hz)]");
  requireNonNegative(accel_noise, "accel_noise", " [m/s^2/sqrt(Hz)]");
  requireNonNegative(gyro_bias_walk, "gyro_bias_walk", " [rad/s^2/sqrt(Hz)]");
  requireNonNegative(accel_bias_walk, "accel_bias_walk", " [m/s^3/sqrt(Hz)]");
  requireNonNegative(foot_velocity_noise, "foot_velocity_noise", " [m/s/sqrt(Hz)]");
  // a zero kinematics noise would make a touchdown foot perfectly correlated with p
  requirePositive(kinematics_noise, "kinematics_noise", " [m]");
  requireNonNegative(encoder_noise, "encoder_noise", " [rad]");
  requirePositive(initial_orientation_std, "initial_orientation_std", " [rad]");
  requirePositive(initial_velocity_std, "initial_velocity_std", " [m/s]");
  requirePositive(initial_position_std, "initial_position_std", " [m]");
  requirePositive(initial_gyro_bias_std, "initial_gyro_bias_std", " [rad/s]");
  requirePositive(initial_accel_bias_std, "initial_accel_bias_std", " [m/s^2]");
  requirePositive(max_step, "max_step", " [s]");
  requirePositive(ground_height_noise, "ground_height_noise", " [m]");
  requirePositive(ground_tilt_noise, "ground_tilt_noise", " [rad]");
}

const char* toString(ContactEkfStatus status) {
  switch (status) {
    case ContactEkfStatus::Updated:
      return "updated";
    case ContactEkfStatus::NoContact:
      return "no-contact";
    case ContactEkfStatus::RejectedInput:
      return "rejected-input";
    case ContactEkfStatus::NumericalFailure:
      return "numerical-failure";
  }
  return "unknown";
}

ContactEkf::ContactEkf(const pinocchio::Model& model, const std::string& imu_frame,
                       const std::vector<model::ContactPoint>& contacts,
                       const ContactEkfOptions& options)
    : model_(model), data_(model), options_(options), points_(contacts) {
  options_.validate();
  require(model::isFreeFlyer(model, 1), "model",
          "a free-flyer robot (base state of a floating base)", "a fixed base");
  require(model.existFrame(imu_frame), "imu frame", "a frame of the model " + model.name,
          "\"" + imu_frame + "\"");
  imu_frame_ = model.getFrameId(imu_frame);
  require(!contacts.empty(), "contact points", "at least one", "none");
  for (const model::ContactPoint& point : contacts) {
    require(model.existFrame(point.frame), "contact point " + point.name + ": frame",
            "a frame of the model " + model.name, "\"" + point.frame + "\"");
  }
  feet_ = model::groupContactFrames(contacts);
  point_foot_.assign(contacts.size(), 0);
  for (std::size_t k = 0; k < feet_.size(); ++k) {
    foot_frames_.push_back(model.getFrameId(feet_[k].frame));
    for (int i : feet_[k].points) point_foot_[i] = static_cast<int>(k);
    // a flat foot is the sole frame itself
    if (feet_[k].flat) feet_[k].offset.setZero();
    sole_normal_.push_back(feet_[k].flat ? planeNormal(contacts, feet_[k].points)
                                         : Vector3::Zero());
  }
  const int K = numFeet();
  n_ = kFeet + 3 * K;
  feet_position_.setZero(3, K);
  in_contact_.assign(K, 0);
  contact_now_.assign(K, 0);
  points_down_.assign(K, 0);
  P_.setZero(n_, n_);
  q_work_ = pinocchio::neutral(model);
  frame_jacobian_.setZero(6, model.nv);
  imu_jacobian_.setZero(6, model.nv);
  foot_jacobian_.setZero(3, model.nv);
  point_jacobian_.setZero(3, model.nv);
  A_.setZero(n_, n_);
  Phi_.setZero(n_, n_);
  Qc_.setZero(n_, 3);
  Qd_.setZero(n_, n_);
  PHt_.setZero(n_, 3);
  K_.setZero(3, n_);
  tmp_.setZero(n_, n_);
  step_.setZero(n_);
  h_.setZero(n_);
  Ph_.setZero(n_);
  initialize(0, Matrix3::Identity(), Vector3::Zero(), Vector3::Zero());
}

void ContactEkf::initialize(double time, const Matrix3& R, const Vector3& p, const Vector3& v) {
  time_ = time;
  R_ = R;
  p_ = p;
  v_ = v;
  bg_.setZero();
  ba_.setZero();
  feet_position_.setZero();
  std::fill(in_contact_.begin(), in_contact_.end(), 0);
  P_.setZero();
  const auto diag = [this](int at, double std) {
    P_.block<3, 3>(at, at) = std * std * Matrix3::Identity();
  };
  diag(kPhi, options_.initial_orientation_std);
  diag(kVel, options_.initial_velocity_std);
  diag(kPos, options_.initial_position_std);
  if (options_.estimate_biases) {
    diag(kGyroBias, options_.initial_gyro_bias_std);
    diag(kAccelBias, options_.initial_accel_bias_std);
  }
  transition_.setIdentity();
  transition_consumed_ = false;
  counters_ = Counters();
}

void ContactEkf::setImu(const Vector3& gyro, const Vector3& accel) {
  if (!gyro.allFinite() || !accel.allFinite()) {
    ++counters_.rejected;
    return;
  }
  gyro_ = gyro;
  accel_ = accel;
}

void ContactEkf::propagationJacobian(double dt, Eigen::MatrixXd& Phi) {
  // continuous error dynamics d(delta)/dt = A delta (paper eq. 48 with the bias columns)
  A_.setZero();
  const Matrix3 g_cross = skew(kGravity);
  A_.block<3, 3>(kVel, kPhi) = g_cross;
  A_.block<3, 3>(kPos, kVel).setIdentity();
  if (options_.estimate_biases) {
    A_.block<3, 3>(kPhi, kGyroBias) = -R_;
    A_.block<3, 3>(kVel, kGyroBias) = -skew(v_) * R_;
    A_.block<3, 3>(kVel, kAccelBias) = -R_;
    A_.block<3, 3>(kPos, kGyroBias) = -skew(p_) * R_;
    for (int k = 0; k < numFeet(); ++k) {
      if (in_contact_[k])
        A_.block<3, 3>(footIndex(k), kGyroBias) = -skew(feet_position_.col(k)) * R_;
    }
  }
  // Phi = exp(A dt) to second order
  Phi.setIdentity(n_, n_);
  Phi += dt * A_;
  tmp_.noalias() = A_ * A_;
  Phi += (0.5 * dt * dt) * tmp_;
}

void ContactEkf::propagateStep(double dt) {
  propagationJacobian(dt, Phi_);
  // process noise: Q = G Qc G^T with the gyro noise entering through Ad_X (rows I, v x, p x, d x)
  Qc_.setZero();
  Qc_.block<3, 3>(kPhi, 0).setIdentity();
  Qc_.block<3, 3>(kVel, 0) = skew(v_);
  Qc_.block<3, 3>(kPos, 0) = skew(p_);
  for (int k = 0; k < numFeet(); ++k) {
    if (in_contact_[k]) Qc_.block<3, 3>(footIndex(k), 0) = skew(feet_position_.col(k));
  }
  Qd_.noalias() = (options_.gyro_noise * options_.gyro_noise) * Qc_ * Qc_.transpose();
  const auto addDiag = [this](int at, double density) {
    Qd_.block<3, 3>(at, at).diagonal().array() += density * density;
  };
  addDiag(kVel, options_.accel_noise);
  if (options_.estimate_biases) {
    addDiag(kGyroBias, options_.gyro_bias_walk);
    addDiag(kAccelBias, options_.accel_bias_walk);
  }
  for (int k = 0; k < numFeet(); ++k) {
    if (in_contact_[k]) addDiag(footIndex(k), options_.foot_velocity_noise);
  }
  // P = Phi (P + Q dt) Phi^T (paper: Q_d = Phi Q Phi^T dt)
  P_ += dt * Qd_;
  tmp_.noalias() = Phi_ * P_;
  P_.noalias() = tmp_ * Phi_.transpose();

  // core transition since the last update (the smoother's Phi)
  if (transition_consumed_) {
    transition_.setIdentity();
    transition_consumed_ = false;
  }
  const Matrix15 core = Phi_.topLeftCorner<15, 15>();
  transition_ = core * transition_;

  // mean: the IMU kinematics with the bias-corrected sample held over dt
  const Vector3 w = gyro_ - bg_;
  const Vector3 a = accel_ - ba_;
  const Vector3 acceleration = R_ * a + kGravity;
  p_ += v_ * dt + 0.5 * dt * dt * acceleration;
  v_ += acceleration * dt;
  R_ = R_ * pinocchio::exp3(Vector3(w * dt));
}

void ContactEkf::propagateTo(double time) {
  if (!std::isfinite(time)) return;
  while (time > time_) {
    const double dt = std::min(time - time_, options_.max_step);
    propagateStep(dt);
    time_ += dt;
    // guard against a remainder below the clock's resolution
    if (time - time_ < 1e-12) time_ = time;
  }
}

void ContactEkf::kinematics(const Eigen::Ref<const Eigen::VectorXd>& q) {
  // the base at the origin: every placement is relative to the base
  q_work_.tail(model_.nq - 7) = q.tail(model_.nq - 7);
  pinocchio::computeJointJacobians(model_, data_, q_work_);
  pinocchio::updateFramePlacements(model_, data_);
  imu_jacobian_.setZero();
  pinocchio::getFrameJacobian(model_, data_, imu_frame_, pinocchio::LOCAL_WORLD_ALIGNED,
                              imu_jacobian_);
}

Vector3 ContactEkf::footPoint(int k) {
  const pinocchio::SE3& foot = data_.oMf[foot_frames_[k]];
  const pinocchio::SE3& imu = data_.oMf[imu_frame_];
  const Vector3 point = foot.act(Vector3(feet_[k].offset));
  return imu.rotation().transpose() * (point - imu.translation());
}

void ContactEkf::footPointJacobian(int k) {
  const pinocchio::SE3& foot = data_.oMf[foot_frames_[k]];
  const pinocchio::SE3& imu = data_.oMf[imu_frame_];
  frame_jacobian_.setZero();
  pinocchio::getFrameJacobian(model_, data_, foot_frames_[k], pinocchio::LOCAL_WORLD_ALIGNED,
                              frame_jacobian_);
  // s = R_i^T (x_f - t_i): ds = R_i^T (v_point - v_i + (x_f - t_i) x w_i)
  const Vector3 lever = foot.rotation() * feet_[k].offset;
  const Vector3 y = foot.translation() + lever - imu.translation();
  foot_jacobian_.noalias() = frame_jacobian_.topRows<3>();
  foot_jacobian_.noalias() -= skew(lever) * frame_jacobian_.bottomRows<3>();
  foot_jacobian_ -= imu_jacobian_.topRows<3>();
  foot_jacobian_.noalias() += skew(y) * imu_jacobian_.bottomRows<3>();
  point_jacobian_ = foot_jacobian_;
  foot_jacobian_.noalias() = imu.rotation().transpose() * point_jacobian_;
  foot_jacobian_.leftCols<6>().setZero();  // the base does not move in these kinematics
}

Vector3 ContactEkf::footInImu(const Eigen::Ref<const Eigen::VectorXd>& q, int k) {
  kinematics(q);
  footPointJacobian(k);
  return footPoint(k);
}

Matrix3 ContactEkf::footNoise() const {
  // the kinematic model's error plus the encoders' through the leg Jacobian (IMU frame)
  Matrix3 noise = options_.kinematics_noise * options_.kinematics_noise * Matrix3::Identity();
  noise.noalias() +=
      options_.encoder_noise * options_.encoder_noise * foot_jacobian_ * foot_jacobian_.transpose();
  return noise;
}

void ContactEkf::touchdown(int k, const Vector3& s) {
  const int d = footIndex(k);
  feet_position_.col(k) = p_ + R_ * s;
  // delta_d = delta_p + R n: the foot inherits p's correlations plus the kinematics noise
  P_.middleRows<3>(d) = P_.middleRows<3>(kPos);
  P_.middleCols<3>(d) = P_.middleCols<3>(kPos);
  const Matrix3 noise = footNoise();
  P_.block<3, 3>(d, d) = P_.block<3, 3>(kPos, kPos) + R_ * noise * R_.transpose();
  in_contact_[k] = 1;
  ++counters_.touchdowns;
}

void ContactEkf::liftoff(int k) {
  const int d = footIndex(k);
  P_.middleRows<3>(d).setZero();
  P_.middleCols<3>(d).setZero();
  in_contact_[k] = 0;
}

bool ContactEkf::correct(int k, const Vector3& s) {
  const int d = footIndex(k);
  // r = R s - (d - p) = H delta + n, H = [.., -I (p), .., +I (d_k)]
  const Vector3 r = R_ * s - (feet_position_.col(k) - p_);
  PHt_ = P_.middleCols<3>(d) - P_.middleCols<3>(kPos);
  const Matrix3 noise = footNoise();
  const Matrix3 S = PHt_.middleRows<3>(d) - PHt_.middleRows<3>(kPos) + R_ * noise * R_.transpose();
  const Eigen::LLT<Matrix3> llt(S);
  if (llt.info() != Eigen::Success) return false;
  K_ = PHt_.transpose();
  llt.solveInPlace(K_);  // K^T = S^-1 (P H^T)^T
  step_.noalias() = K_.transpose() * r;
  if (!step_.allFinite()) return false;
  P_.noalias() -= K_.transpose() * PHt_.transpose();
  tmp_ = P_.transpose();
  P_ = 0.5 * (P_ + tmp_);
  retract(step_);
  return true;
}

bool ContactEkf::correctScalar(double r, double noise_std) {
  // h_ = -dr/d(retraction), as H in correct(): the update retracts by K r
  Ph_.noalias() = P_ * h_;
  const double S = h_.dot(Ph_) + noise_std * noise_std;
  if (!(S > 0) || !std::isfinite(r)) return false;
  step_ = (r / S) * Ph_;
  if (!step_.allFinite()) return false;
  P_.noalias() -= (1.0 / S) * Ph_ * Ph_.transpose();
  retract(step_);
  return true;
}

bool ContactEkf::onGround(int k) const {
  // a flat foot counts only with every point down: on its heel or toe the sole is tilted and its
  // frame lifted (on TALOS stepping, counting those took the velocity error from 3 to 11 mm/s)
  return in_contact_[k] &&
         (!feet_[k].flat || points_down_[k] == static_cast<int>(feet_[k].points.size()));
}

int ContactEkf::groundHeightRows() const {
  int stance = 0;
  for (int k = 0; k < numFeet(); ++k) stance += onGround(k);
  return std::max(stance - 1, 0);
}

int ContactEkf::groundRows() const {
  int flat = 0;
  for (int k = 0; k < numFeet(); ++k) flat += feet_[k].flat && onGround(k);
  return groundHeightRows() + 2 * flat;
}

double ContactEkf::groundRow(int row, Eigen::Ref<Eigen::VectorXd> h) const {
  h.setZero();
  int first = -1, at = 0;
  // the stance feet's heights against the first's: r = d_k,z - d_j,z; a retraction by delta moves
  // d by phi x d + delta_d, so dr/dphi = (d_k - d_j) x e_z and h = -dr/d(retraction)
  for (int k = 0; k < numFeet(); ++k) {
    if (!onGround(k)) continue;
    if (first < 0) {
      first = k;
      continue;
    }
    if (at++ != row) continue;
    const Vector3 diff = feet_position_.col(k) - feet_position_.col(first);
    h.segment<3>(kPhi) = Vector3::UnitZ().cross(diff);
    h(footIndex(k) + 2) = -1;
    h(footIndex(first) + 2) = 1;
    return diff.z();
  }
  // a flat foot's sole normal in the world, m = R R_if n (sign: up), is vertical: r = m_x, m_y;
  // a retraction rotates m by phi: d(e . m)/dphi = m x e, so h = e x m
  for (int k = 0; k < numFeet(); ++k) {
    if (!feet_[k].flat || !onGround(k)) continue;
    for (int axis = 0; axis < 2; ++axis) {
      if (at++ != row) continue;
      const Matrix3 R_if =
          data_.oMf[imu_frame_].rotation().transpose() * data_.oMf[foot_frames_[k]].rotation();
      Vector3 m = R_ * R_if * sole_normal_[k];
      if (m.z() < 0) m = -m;
      const Vector3 e = Vector3::Unit(axis);
      h.segment<3>(kPhi) = e.cross(m);
      // A level sole is level at any yaw, but a tilted estimate's m turns with yaw: that column
      // would make yaw look observable and drift it (11.7 deg RMS against 1.9 on
      // talos-forearm-5.4kg). It is dropped, as an observability-constrained EKF does.
      h(kPhi + 2) = 0;
      return m(axis);
    }
  }
  return 0;
}

bool ContactEkf::correctLevelGround() {
  bool ok = true;
  const int rows = groundRows(), height_rows = groundHeightRows();
  for (int i = 0; i < rows; ++i) {
    const double r = groundRow(i, h_);  // at the state the previous rows corrected
    const bool done = correctScalar(
        r, i < height_rows ? options_.ground_height_noise : options_.ground_tilt_noise);
    counters_.ground_corrections += done;
    ok = ok && done;
  }
  return ok;
}

void ContactEkf::retract(const Eigen::Ref<const Eigen::VectorXd>& delta) {
  // X = exp(delta) X on SE_{2+K}(3): rotation Exp(phi), translations Exp(phi) x + J_l(phi) dx
  const Vector3 phi = delta.segment<3>(kPhi);
  const Matrix3 rotation = pinocchio::exp3(phi);
  Matrix3 right_jacobian = Matrix3::Zero();
  pinocchio::Jexp3(phi, right_jacobian);
  const Matrix3 left_jacobian = right_jacobian.transpose();
  R_ = rotation * R_;
  v_ = rotation * v_ + left_jacobian * delta.segment<3>(kVel);
  p_ = rotation * p_ + left_jacobian * delta.segment<3>(kPos);
  for (int k = 0; k < numFeet(); ++k) {
    if (!in_contact_[k]) continue;
    feet_position_.col(k) =
        rotation * feet_position_.col(k) + left_jacobian * delta.segment<3>(footIndex(k));
  }
  if (options_.estimate_biases) {
    bg_ += delta.segment<3>(kGyroBias);
    ba_ += delta.segment<3>(kAccelBias);
  }
}

ContactEkfStatus ContactEkf::update(
    double time, const Eigen::Ref<const Eigen::VectorXd>& q,
    const Eigen::Ref<const Eigen::Matrix<std::uint8_t, Eigen::Dynamic, 1>>& point_contact) {
  ++counters_.updates;
  if (!std::isfinite(time) || time < time_ || q.size() != model_.nq || !q.allFinite() ||
      point_contact.size() != static_cast<Eigen::Index>(points_.size())) {
    ++counters_.rejected;
    return ContactEkfStatus::RejectedInput;
  }
  propagateTo(time);
  if (transition_consumed_) transition_.setIdentity();  // no step since the last update
  transition_consumed_ = true;
  predicted_core_P_ = P_.topLeftCorner<15, 15>();
  predicted_core_ = core();

  std::fill(contact_now_.begin(), contact_now_.end(), 0);
  std::fill(points_down_.begin(), points_down_.end(), 0);
  for (std::size_t i = 0; i < points_.size(); ++i) {
    if (!point_contact[i]) continue;
    contact_now_[point_foot_[i]] = 1;
    ++points_down_[point_foot_[i]];
  }
  bool any = false;
  for (int k = 0; k < numFeet(); ++k) {
    if (in_contact_[k] && !contact_now_[k]) liftoff(k);
    any = any || contact_now_[k];
  }
  if (!any) {
    ++counters_.flight;
    return ContactEkfStatus::NoContact;
  }
  kinematics(q);
  ContactEkfStatus status = ContactEkfStatus::Updated;
  for (int k = 0; k < numFeet(); ++k) {
    if (!contact_now_[k]) continue;
    const Vector3 s = footPoint(k);
    footPointJacobian(k);
    if (!in_contact_[k]) {
      touchdown(k, s);  // the first sample places the foot: nothing to correct yet
    } else if (correct(k, s)) {
      ++counters_.corrections;
    } else {
      ++counters_.failures;
      status = ContactEkfStatus::NumericalFailure;
    }
  }
  if (options_.level_ground && !correctLevelGround()) {
    ++counters_.failures;
    status = ContactEkfStatus::NumericalFailure;
  }
  return status;
}

void ContactEkf::setState(const Matrix3& R, const Vector3& v, const Vector3& p, const Vector3& bg,
                          const Vector3& ba, const Eigen::Matrix<double, 3, Eigen::Dynamic>& feet,
                          const std::vector<bool>& in_contact) {
  R_ = R;
  v_ = v;
  p_ = p;
  bg_ = bg;
  ba_ = ba;
  feet_position_ = feet;
  for (int k = 0; k < numFeet(); ++k) in_contact_[k] = in_contact[k] ? 1 : 0;
  for (int k = 0; k < numFeet(); ++k)
    points_down_[k] = in_contact_[k] ? static_cast<int>(feet_[k].points.size()) : 0;
}

}  // namespace heft::basestate
