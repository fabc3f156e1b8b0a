#include "heft/estimation/multibody_stage.hpp"

#include <cmath>
#include <string>
#include <type_traits>

#include <pinocchio/algorithm/energy.hpp>
#include <pinocchio/algorithm/frames-derivatives.hpp>
#include <pinocchio/algorithm/frames.hpp>
#include <pinocchio/algorithm/joint-configuration.hpp>
#include <pinocchio/algorithm/kinematics-derivatives.hpp>
#include <pinocchio/algorithm/kinematics.hpp>
#include <pinocchio/algorithm/rnea.hpp>
#include <pinocchio/spatial.hpp>

#include "heft/common/error.hpp"
#include "heft/estimation/base_imu.hpp"

namespace heft::estimation {
namespace {

// Residual rows of the sensors in `sensors` (without the process-noise rows).
int sensorRows(const MultibodySensors& sensors) {
  const int nj = static_cast<int>(sensors.encoders.size());
  return nj + (sensors.joint_velocities ? nj : 0) + (sensors.imu_frame > 0 ? 6 : 0) +
         (sensors.imu_frame > 0 && sensors.accelerometer ? 3 : 0) +
         (sensors.mocap_frame > 0 ? 6 : 0) + (sensors.energy ? 1 : 0);
}

void requireOnFloatingBase(const pinocchio::Model& model, pinocchio::FrameIndex frame,
                           const std::string& what) {
  require(frame < model.frames.size(), what,
          "a frame index < " + std::to_string(model.frames.size()), std::to_string(frame));
  require(
      model.joints.size() > 1 && model.joints[1].nv() == 6 && model.frames[frame].parentJoint == 1,
      what + " " + model.frames[frame].name, "a frame on the floating base (joint 1, a free flyer)",
      "a frame on joint " + std::to_string(model.frames[frame].parentJoint));
}

// The sensors' noise and frames; returns whether the IMU (if any) is on the free flyer.
bool validateImuAndMocap(const pinocchio::Model& model, const MultibodySensors& s) {
  require(!s.accelerometer || s.imu_frame > 0, "multibody sensors accelerometer",
          "an IMU frame (imu_frame)", "none");
  for (double sd :
       {s.encoder_std, s.joint_velocity_std, s.gyro_std, s.imu_orientation_std,
        s.mocap_position_std, s.mocap_orientation_std, s.accelerometer_std, s.energy_std})
    requirePositive(sd, "multibody sensor std");
  if (s.mocap_frame > 0) requireOnFloatingBase(model, s.mocap_frame, "motion-capture frame");
  if (s.imu_frame == 0) return true;
  require(s.imu_frame < model.frames.size(), "IMU frame",
          "a frame index < " + std::to_string(model.frames.size()), std::to_string(s.imu_frame));
  if (s.accelerometer) requireOnFloatingBase(model, s.imu_frame, "IMU frame (accelerometer)");
  return model.joints.size() > 1 && model.joints[1].nv() == 6 &&
         model.frames[s.imu_frame].parentJoint == 1;
}

}  // namespace

void MultibodyNoise::validate(int ndx) const {
  const int nv = ndx / 2;
  require(configuration.size() == nv, "configuration noise size", std::to_string(nv) + " (nv)",
          std::to_string(configuration.size()));
  require(generalized_force.size() == nv, "generalized force noise size",
          std::to_string(nv) + " (nv)", std::to_string(generalized_force.size()));
  for (int i = 0; i < nv; ++i) {
    requirePositive(configuration(i), "configuration noise std [" + std::to_string(i) + "]");
    requirePositive(generalized_force(i),
                    "generalized force noise std [" + std::to_string(i) + "]");
  }
}

MultibodyStageModel::MultibodyStageModel(
    std::shared_ptr<const dynamics::ForwardDynamicsModel> dynamics,
    std::shared_ptr<const dynamics::ContactDynamicsModel> contact,
    std::shared_ptr<const MultibodyState> state, std::shared_ptr<const MultibodySensors> sensors,
    const MultibodyNoise& noise, MultibodyMeasurement measurement, double dt, bool terminal,
    std::shared_ptr<const dynamics::ImpulseDynamicsModel> impulse,
    std::shared_ptr<const ActuatorTermsModel> actuators,
    std::shared_ptr<const dynamics::SmoothedContactModel> smoothed)
    : StageModel(
          state ? state->nx() : 1, state ? state->ndx() : 1,
          terminal ? 0 : (state ? state->ndx() : 1),
          (terminal || !state ? 0 : state->ndx()) + (sensors ? sensorRows(*sensors) : 0),
          (dynamics ? dynamics->numParameters() : 0) + (actuators ? actuators->numParameters() : 0),
          !terminal),
      dynamics_(std::move(dynamics)),
      contact_(std::move(contact)),
      impulse_(std::move(impulse)),
      state_(std::move(state)),
      sensors_(std::move(sensors)),
      actuators_(std::move(actuators)),
      smoothed_(std::move(smoothed)),
      measurement_(std::move(measurement)),
      dt_(dt) {
  require(dynamics_ != nullptr && state_ != nullptr && sensors_ != nullptr, "multibody stage",
          "dynamics, state and sensors", "null");
  const pinocchio::Model& model = dynamics_->model();
  num_inertial_ = dynamics_->numParameters();
  if (actuators_)
    require(actuators_->nv() == model.nv, "multibody stage actuator terms",
            "the dynamics model's nv " + std::to_string(model.nv),
            std::to_string(actuators_->nv()));
  require(state_->nq() == model.nq && state_->nv() == model.nv, "multibody stage state",
          "the dynamics model's nq, nv",
          std::to_string(state_->nq()) + ", " + std::to_string(state_->nv()));
  validateContactModels(terminal);
  noise.validate(ndx());
  const MultibodySensors& s = *sensors_;
  const int nj = static_cast<int>(s.encoders.size());
  for (pinocchio::JointIndex j : s.encoders) {
    require(j >= 1 && j < model.joints.size(), "encoder joint index",
            "in [1, " + std::to_string(model.joints.size()) + ")", std::to_string(j));
    require(model.joints[j].nq() == 1 && model.joints[j].nv() == 1,
            "encoder joint " + model.names[j], "one position and one velocity coordinate",
            std::to_string(model.joints[j].nq()) + " and " + std::to_string(model.joints[j].nv()));
    q_index_.push_back(model.joints[j].idx_q());
    v_index_.push_back(model.joints[j].idx_v());
  }
  imu_on_base_ = validateImuAndMocap(model, s);
  require(std::isfinite(s.loss_scale) && s.loss_scale >= 0, "sensor loss_scale",
          "a finite value >= 0 (0: the loss's default)", std::to_string(s.loss_scale));
  loss_scale_ = s.loss_scale > 0 ? s.loss_scale : defaultLossScale(s.loss);

  require(measurement_.joint_q.size() == nj, "measured joint positions", std::to_string(nj),
          std::to_string(measurement_.joint_q.size()));
  require(measurement_.joint_v.size() == (s.joint_velocities ? nj : 0), "measured joint velocities",
          std::to_string(s.joint_velocities ? nj : 0), std::to_string(measurement_.joint_v.size()));
  require(measurement_.joint_q.allFinite() && measurement_.joint_v.allFinite() &&
              measurement_.gyro.allFinite() && measurement_.imu_orientation.coeffs().allFinite() &&
              measurement_.accel.allFinite() && measurement_.mocap_position.allFinite() &&
              measurement_.mocap_orientation.coeffs().allFinite(),
          "stage measurements", "finite values", "NaN or infinity");
  if (!terminal) {
    requirePositive(dt_, "stage dt", " [s]");
    require(measurement_.tau.size() == model.nv, "stage tau", std::to_string(model.nv) + " (nv)",
            std::to_string(measurement_.tau.size()));
    require(measurement_.tau.allFinite(), "stage tau", "finite values", "NaN or infinity");
  }
  measurement_.imu_orientation.normalize();
  measurement_.mocap_orientation.normalize();
  process_info_.resize(ndx());
  process_info_ << noise.configuration.cwiseInverse(), noise.generalized_force.cwiseInverse();

  int row = terminal ? 0 : ndx();
  encoder_row_ = row;
  row += nj;
  if (s.joint_velocities) {
    velocity_row_ = row;
    row += nj;
  }
  if (s.imu_frame > 0) {
    gyro_row_ = row;
    imu_row_ = row + 3;
    row += 6;
    gyro_info_ = measurement_.has_gyro ? 1 / s.gyro_std : 0;
    imu_info_ = measurement_.has_imu_orientation ? 1 / s.imu_orientation_std : 0;
    if (s.accelerometer) {
      accel_row_ = row;
      row += 3;
      // the terminal knot has no acceleration: its rows stay at zero weight
      accel_info_ = measurement_.has_accel && !terminal ? 1 / s.accelerometer_std : 0;
    }
  }
  if (s.mocap_frame > 0) {
    mocap_row_ = row;
    row += 6;
    mocap_position_info_ = measurement_.has_mocap ? 1 / s.mocap_position_std : 0;
    mocap_orientation_info_ = measurement_.has_mocap ? 1 / s.mocap_orientation_std : 0;
  }
  if (s.energy) {
    require(smoothed_ == nullptr, "energy observations",
            "rigid contacts or none (the smoothed contact forces work at a distance)",
            "contacts implicit");
    energy_row_ = row;
    row += 1;
    energy_info_ = terminal ? 0 : 1 / s.energy_std;  // the terminal knot has no step
  }
}

// The contact set, impulse or smoothed step beside the forward dynamics: the same robot, S and
// parametrization; an impulse only on a running stage with a contact set; the smoothed step alone.
void MultibodyStageModel::validateContactModels(bool terminal) const {
  auto requireSameDynamics = [this](const auto& other, const std::string& what) {
    require(other.nv() == dynamics_->nv() && other.numParameters() == dynamics_->numParameters() &&
                other.parametrization() == dynamics_->parametrization(),
            what, "the dynamics' robot, S and parametrization", "a different one");
  };
  if (contact_) requireSameDynamics(*contact_, "multibody stage contact model");
  if (impulse_) {
    require(contact_ != nullptr && !terminal, "multibody stage impulse",
            "a running stage with a contact set (a touchdown)", "none");
    requireSameDynamics(*impulse_, "multibody stage impulse model");
  }
  if (smoothed_) {
    require(contact_ == nullptr && impulse_ == nullptr, "multibody stage smoothed contact",
            "no rigid contact set or impulse beside it (contact-implicit)", "both");
    requireSameDynamics(*smoothed_, "multibody stage smoothed contact model");
    require(!actuators_ || actuators_->numArmature() == 0, "armature with contacts implicit",
            "no armature terms (the smoothed contact step takes the model's armature as fixed)",
            std::to_string(actuators_ ? actuators_->numArmature() : 0) + " armature joints");
  }
}

MultibodyStageData::MultibodyStageData(const MultibodyStageModel& model, StageWorkspace* workspace)
    : StageData(model.nx(), model.ndx(), model.nw(), model.nr(), model.np(), model.hasDynamics()) {
  const dynamics::ForwardDynamicsModel& dyn = *model.dynamics_;
  // One workspace per dynamics model: stages of the same contact set share it.
  auto make = [workspace](const auto& dynamics_model, auto& out) {
    using Data = typename std::decay_t<decltype(out)>::element_type;
    auto create = [&] { return new Data(dynamics_model); };
    out =
        workspace ? workspace->get<Data>(&dynamics_model, create) : std::shared_ptr<Data>(create());
  };
  if (model.contact_)
    make(*model.contact_, contact);
  else if (model.smoothed_)
    make(*model.smoothed_, smoothed);
  else
    make(dyn, free);
  if (model.impulse_) make(*model.impulse_, impulse);
  const int nv = dyn.nv(), nq = dyn.nq(), ndx = model.ndx(), np = model.np();
  tau.setZero(nv);
  if (model.smoothed_) implicit_a.setZero(nv);
  v_start.setZero(nv);
  v_next.setZero(nv);
  q_next.setZero(nq);
  dq.setZero(nv);
  dv_dx.setZero(nv, ndx);
  dq_dx.setZero(nv, ndx);
  dv_dw.setZero(nv, nv);
  dq_dw.setZero(nv, nv);
  dv_dtheta.setZero(nv, np);
  dq_dtheta.setZero(nv, np);
  for (Eigen::MatrixXd* m : {&A1, &B1, &A2, &B2}) m->setZero(nv, nv);
  // F's semi-implicit structure (StageData): x_{k+1} = ((q ⊕ dt v') ⊕ w_q, v'), w = (w_q, w_tau)
  if (model.hasDynamics()) {
    semi_implicit = true;
    for (Eigen::MatrixXd* m : {&A_q, &B_q, &S_q}) m->setZero(nv, nv);
  }
  da_dx.setZero(nv, ndx);
  dvs_dx.setZero(nv, ndx);
  // without an impulse v_start = v: constant, set once (calcDiff sets it at a touchdown)
  if (!model.impulse_) dvs_dx.rightCols(nv).setIdentity();
  da_dtheta.setZero(nv, np);
  dvs_dtheta.setZero(nv, np);
  if (model.actuators_) da_dvs.setZero(nv, nv);
  acc_dv.setZero(3, nv);
  acc_da.setZero(3, nv);
  if (model.accel_row_ >= 0) accel_rows.setZero(ndx + model.nw() + np, 3);
  robust_slope.setOnes(model.nr());
  if (model.energy_row_ >= 0 && model.hasDynamics()) {
    energy =
        EnergyScratch::of(dyn, workspace, model.actuators_ ? model.actuators_->numParameters() : 0);
    energy_rows.setZero(ndx + model.nw() + np);
  }
  if (model.gyro_row_ >= 0 && !model.imu_on_base_) {
    const pinocchio::Model& pin = dyn.model();
    // keyed by the sensors: one kinematics scratch per horizon, read right after it is filled
    auto create = [&pin] { return new pinocchio::Data(pin); };
    kinematics = workspace ? workspace->get<pinocchio::Data>(model.sensors_.get(), create)
                           : std::shared_ptr<pinocchio::Data>(create());
    for (Eigen::MatrixXd* m : {&imu_dv_dq, &imu_dv_dv, &imu_jacobian}) m->setZero(6, nv);
    a_zero.setZero(nv);
  }
}

MultibodyStageData::EnergyScratch::EnergyScratch(const dynamics::RegressorModel& regressor)
    : pin(regressor.model()), regressors(regressor) {
  const int nv = regressor.nv();
  joint_dv_dq.setZero(6, nv);
  joint_dv_dv.setZero(6, nv);
  for (Eigen::VectorXd* v :
       {&grad_q, &grad_v, &grad_q_next, &grad_v_next, &v_mid, &tau_in, &dp_dv, &a_zero})
    v->setZero(nv);
  y_next.setZero(regressor.numParameters());
}

std::shared_ptr<MultibodyStageData::EnergyScratch> MultibodyStageData::EnergyScratch::of(
    const dynamics::ForwardDynamicsModel& dynamics, StageWorkspace* workspace,
    int num_actuator_parameters) {
  const dynamics::RegressorModel& regressor = dynamics.regressor();
  auto create = [&regressor] { return new EnergyScratch(regressor); };
  std::shared_ptr<EnergyScratch> scratch = workspace
                                               ? workspace->get<EnergyScratch>(&dynamics, create)
                                               : std::shared_ptr<EnergyScratch>(create());
  if (scratch->dp_dtheta_act.size() != num_actuator_parameters)
    scratch->dp_dtheta_act.setZero(num_actuator_parameters);
  return scratch;
}

std::unique_ptr<StageData> MultibodyStageModel::createData() const {
  return std::make_unique<MultibodyStageData>(*this, nullptr);
}

std::unique_ptr<StageData> MultibodyStageModel::createDataSharing(StageWorkspace& workspace) const {
  return std::make_unique<MultibodyStageData>(*this, &workspace);
}

void MultibodyStageModel::sensorResiduals(StageData& d,
                                          const Eigen::Ref<const Eigen::VectorXd>& x) const {
  const pinocchio::Model& model = dynamics_->model();
  const int nq = model.nq;
  const auto q = x.head(nq);
  const auto v = x.tail(model.nv);
  const MultibodySensors& s = *sensors_;
  const int nj = static_cast<int>(q_index_.size());
  for (int i = 0; i < nj; ++i) {
    d.r(encoder_row_ + i) = (q(q_index_[i]) - measurement_.joint_q(i)) / s.encoder_std;
    if (velocity_row_ >= 0)
      d.r(velocity_row_ + i) = (v(v_index_[i]) - measurement_.joint_v(i)) / s.joint_velocity_std;
  }
  if (gyro_row_ >= 0 && !imu_on_base_) bodyImuResiduals(static_cast<MultibodyStageData&>(d), x);
  if ((gyro_row_ >= 0 && imu_on_base_) || mocap_row_ >= 0) {
    const Eigen::Matrix3d R_wb = baseRotation(x);
    if (gyro_row_ >= 0 && imu_on_base_) {
      const Eigen::Matrix3d& R_bi = model.frames[s.imu_frame].placement.rotation();
      d.r.segment<3>(gyro_row_) =
          gyro_info_ * (R_bi.transpose() * v.segment<3>(3) - measurement_.gyro);
      const Eigen::Matrix3d E =
          measurement_.imu_orientation.toRotationMatrix().transpose() * R_wb * R_bi;
      d.r.segment<3>(imu_row_) = imu_info_ * pinocchio::log3(E);
    }
    if (mocap_row_ >= 0) {
      const pinocchio::SE3& bMf = model.frames[s.mocap_frame].placement;
      d.r.segment<3>(mocap_row_) = mocap_position_info_ * (q.head<3>() + R_wb * bMf.translation() -
                                                           measurement_.mocap_position);
      const Eigen::Matrix3d E =
          measurement_.mocap_orientation.toRotationMatrix().transpose() * R_wb * bMf.rotation();
      d.r.segment<3>(mocap_row_ + 3) = mocap_orientation_info_ * pinocchio::log3(E);
    }
  }
}

void MultibodyStageModel::sensorJacobians(StageData& d,
                                          const Eigen::Ref<const Eigen::VectorXd>& x) const {
  const pinocchio::Model& model = dynamics_->model();
  const int nv = model.nv;
  const MultibodySensors& s = *sensors_;
  const int nj = static_cast<int>(q_index_.size());
  d.R_x.setZero();
  for (int i = 0; i < nj; ++i) {
    d.R_x(encoder_row_ + i, v_index_[i]) = 1 / s.encoder_std;
    if (velocity_row_ >= 0) d.R_x(velocity_row_ + i, nv + v_index_[i]) = 1 / s.joint_velocity_std;
  }
  if (gyro_row_ >= 0 && !imu_on_base_) bodyImuJacobians(static_cast<MultibodyStageData&>(d), x);
  if ((gyro_row_ < 0 || !imu_on_base_) && mocap_row_ < 0) return;
  // Free-flyer tangent: dx = (dp, domega) in the base frame, p' = p + R dp, R' = R Exp(domega).
  const Eigen::Matrix3d R_wb = baseRotation(x);
  Eigen::Matrix3d Jlog;
  if (gyro_row_ >= 0 && imu_on_base_) {
    const Eigen::Matrix3d& R_bi = model.frames[s.imu_frame].placement.rotation();
    d.R_x.block<3, 3>(gyro_row_, nv + 3) = gyro_info_ * R_bi.transpose();
    const Eigen::Matrix3d E =
        measurement_.imu_orientation.toRotationMatrix().transpose() * R_wb * R_bi;
    pinocchio::Jlog3(E, Jlog);
    d.R_x.block<3, 3>(imu_row_, 3) = imu_info_ * Jlog * R_bi.transpose();
  }
  if (mocap_row_ >= 0) {
    const pinocchio::SE3& bMf = model.frames[s.mocap_frame].placement;
    d.R_x.block<3, 3>(mocap_row_, 0) = mocap_position_info_ * R_wb;
    d.R_x.block<3, 3>(mocap_row_, 3) =
        -mocap_position_info_ * R_wb * pinocchio::skew(bMf.translation());
    const Eigen::Matrix3d E =
        measurement_.mocap_orientation.toRotationMatrix().transpose() * R_wb * bMf.rotation();
    pinocchio::Jlog3(E, Jlog);
    d.R_x.block<3, 3>(mocap_row_ + 3, 3) =
        mocap_orientation_info_ * Jlog * bMf.rotation().transpose();
  }
}

void MultibodyStageModel::calc(StageData& base, const Eigen::Ref<const Eigen::VectorXd>& x,
                               const Eigen::Ref<const Eigen::VectorXd>& w,
                               const Eigen::Ref<const Eigen::VectorXd>& theta) const {
  auto& d = static_cast<MultibodyStageData&>(base);
  const pinocchio::Model& model = dynamics_->model();
  const int nq = model.nq, nv = model.nv;
  const auto q = x.head(nq);
  const auto v = x.tail(nv);
  if (hasDynamics()) {
    const auto theta_S = theta.head(num_inertial_);
    applyArmature(d, theta);
    if (impulse_)
      d.v_start = dynamics::impulseDynamics(*impulse_, *d.impulse, q, v, theta_S);
    else
      d.v_start = v;
    d.tau = measurement_.tau + w.tail(nv);
    if (actuators_)
      actuators_->subtractFrom(theta.tail(actuators_->numParameters()), d.v_start, d.tau);
    if (smoothed_) {
      d.v_next =
          dynamics::smoothedContactStep(*smoothed_, *d.smoothed, q, d.v_start, d.tau, theta_S, dt_);
      d.implicit_a = (d.v_next - d.v_start) / dt_;
    } else {
      const Eigen::VectorXd& a =
          contact_ ? dynamics::contactDynamics(*contact_, *d.contact, q, d.v_start, d.tau, theta_S)
                   : dynamics::forwardDynamics(*dynamics_, *d.free, q, d.v_start, d.tau, theta_S);
      d.v_next = d.v_start + dt_ * a;
    }
    d.dq = dt_ * d.v_next;
    pinocchio::integrate(model, q, d.dq, d.q_next);
    pinocchio::integrate(model, d.q_next, w.head(nv), d.xnext.head(nq));
    d.xnext.tail(nv) = d.v_next;
    d.r.head(ndx()) = process_info_.cwiseProduct(w);
  }
  sensorResiduals(d, x);
  if (accel_row_ >= 0) {
    if (hasDynamics())
      accelerometerResidual(d, x, smoothed_ ? d.implicit_a : (contact_ ? d.contact->a : d.free->a));
    else
      d.r.segment<3>(accel_row_).setZero();
  }
  if (energy_row_ >= 0) {
    if (hasDynamics())
      energyResidual(d, x, w);
    else
      d.r(energy_row_) = 0;
  }
  robustResiduals(d);
  d.cost = 0.5 * d.r.squaredNorm();
}

void MultibodyStageModel::robustResiduals(MultibodyStageData& d) const {
  if (sensors_->loss == RobustLoss::None) return;
  for (int i = encoder_row_; i < nr(); ++i)
    d.r(i) = robustResidual(sensors_->loss, loss_scale_, d.r(i), &d.robust_slope(i));
}

void MultibodyStageModel::robustJacobians(MultibodyStageData& d) const {
  if (sensors_->loss == RobustLoss::None) return;
  for (int i = encoder_row_; i < nr(); ++i) {
    const double slope = d.robust_slope(i);
    if (slope == 1) continue;
    d.R_x.row(i) *= slope;
    if (hasDynamics()) d.R_w.row(i) *= slope;
    d.R_theta.row(i) *= slope;
  }
  if (accel_row_ >= 0 && hasDynamics())
    for (int c = 0; c < 3; ++c) d.accel_rows.col(c) *= d.robust_slope(accel_row_ + c);
  if (energy_row_ >= 0 && hasDynamics()) d.energy_rows *= d.robust_slope(energy_row_);
}

void MultibodyStageModel::calcDiff(StageData& base, const Eigen::Ref<const Eigen::VectorXd>& x,
                                   const Eigen::Ref<const Eigen::VectorXd>& w,
                                   const Eigen::Ref<const Eigen::VectorXd>& theta) const {
  auto& d = static_cast<MultibodyStageData&>(base);
  const pinocchio::Model& model = dynamics_->model();
  const int nq = model.nq, nv = model.nv;
  const auto q = x.head(nq);
  sensorJacobians(d, x);
  if (!hasDynamics()) {
    robustJacobians(d);
    return;
  }
  d.R_w.setZero();
  d.R_w.topRows(ndx()).diagonal() = process_info_;

  if (smoothed_) {
    chainSmoothedDerivatives(d, x, theta);
  } else {
    chainDynamicsDerivatives(d, x, theta);
    const Eigen::MatrixXd& da_dtau = contact_ ? d.contact->da_dtau : d.free->da_dtau;
    // v' = v_start + dt a
    d.dv_dx = d.dvs_dx + dt_ * d.da_dx;
    d.dv_dtheta = d.dvs_dtheta + dt_ * d.da_dtheta;
    d.dv_dw = dt_ * da_dtau;
  }
  // q' = q ⊕ dt v'
  pinocchio::dIntegrate(model, q, d.dq, d.A1, pinocchio::ARG0);
  pinocchio::dIntegrate(model, q, d.dq, d.B1, pinocchio::ARG1);
  d.dq_dx.noalias() = dt_ * d.B1 * d.dv_dx;
  d.dq_dx.leftCols(nv) += d.A1;
  d.dq_dtheta.noalias() = dt_ * d.B1 * d.dv_dtheta;
  d.dq_dw.noalias() = dt_ * d.B1 * d.dv_dw;
  // x_{k+1} = (q' ⊕ w_q, v')
  pinocchio::dIntegrate(model, d.q_next, w.head(nv), d.A2, pinocchio::ARG0);
  pinocchio::dIntegrate(model, d.q_next, w.head(nv), d.B2, pinocchio::ARG1);
  d.F_x.topRows(nv).noalias() = d.A2 * d.dq_dx;
  d.F_x.bottomRows(nv) = d.dv_dx;
  d.F_theta.topRows(nv).noalias() = d.A2 * d.dq_dtheta;
  d.F_theta.bottomRows(nv) = d.dv_dtheta;
  d.F_w.topLeftCorner(nv, nv) = d.B2;
  d.F_w.topRightCorner(nv, nv).noalias() = d.A2 * d.dq_dw;
  d.F_w.bottomLeftCorner(nv, nv).setZero();
  d.F_w.bottomRightCorner(nv, nv) = d.dv_dw;
  // the same q-rows in the structure's terms: A2 (A1 dq + dt B1 dv') + B2 dw_q
  d.A_q.noalias() = d.A2 * d.A1;
  d.B_q = d.B2;
  d.S_q.noalias() = dt_ * d.A2 * d.B1;
  if (accel_row_ >= 0) accelerometerJacobians(d, x);
  if (energy_row_ >= 0) energyJacobians(d, x, w, theta);
  robustJacobians(d);
}

void MultibodyStageModel::applyArmature(MultibodyStageData& d,
                                        const Eigen::Ref<const Eigen::VectorXd>& theta) const {
  if (!actuators_ || actuators_->numArmature() == 0) return;
  const auto theta_act = theta.tail(actuators_->numParameters());
  actuators_->applyArmature(theta_act,
                            contact_ ? d.contact->inertias.model : d.free->inertias.model);
  if (impulse_) actuators_->applyArmature(theta_act, d.impulse->inertias.model);
}

// v' = V+(q, v, tau_eff(v); theta_S) (eq. 34's derivatives), tau_eff = tau + w_tau minus the
// actuator terms at v; the accelerometer's a = (v' - v) / dt. Without armature the terms enter
// through tau alone, so their columns and the friction's share of dv'/dv are a forward step's
// with K = dv'/dtau (ActuatorTermsModel::accelerationDerivatives; its a is read by armature only).
void MultibodyStageModel::chainSmoothedDerivatives(
    MultibodyStageData& d, const Eigen::Ref<const Eigen::VectorXd>& x,
    const Eigen::Ref<const Eigen::VectorXd>& theta) const {
  const int nq = dynamics_->model().nq, nv = dynamics_->model().nv, ns = num_inertial_;
  const auto q = x.head(nq);
  const auto theta_S = theta.head(ns);
  // calc left v' at these inputs: Newton confirms it in one step instead of solving again.
  dynamics::computeSmoothedContactDerivatives(*smoothed_, *d.smoothed, q, d.v_start, d.tau, theta_S,
                                              dt_, &d.v_next);
  const dynamics::SmoothedContactData& S = *d.smoothed;
  d.dv_dx.leftCols(nv) = S.dvnext_dq;
  d.dv_dx.rightCols(nv) = S.dvnext_dv;
  d.dv_dtheta.leftCols(ns) = S.dvnext_dtheta;
  d.dv_dw = S.dvnext_dtau;
  if (actuators_) {
    const int na = actuators_->numParameters();
    auto dv_dv = d.dv_dx.rightCols(nv);
    actuators_->accelerationDerivatives(theta.tail(na), d.v_start, d.implicit_a, S.dvnext_dtau,
                                        d.dv_dtheta.rightCols(na), dv_dv);
  }
  // a = (v' - v) / dt; v_start = v here (dvs_dx = [0 I], dvs_dtheta = 0, set once)
  d.da_dx = d.dv_dx / dt_;
  d.da_dx.rightCols(nv).diagonal().array() -= 1 / dt_;
  d.da_dtheta = d.dv_dtheta / dt_;
}

// a = a(q, v_s, tau_eff(v_s); theta) with v_s = v^+(q, v; theta) at a touchdown, else v.
void MultibodyStageModel::chainDynamicsDerivatives(
    MultibodyStageData& d, const Eigen::Ref<const Eigen::VectorXd>& x,
    const Eigen::Ref<const Eigen::VectorXd>& theta) const {
  const int nq = dynamics_->model().nq, nv = dynamics_->model().nv, ns = num_inertial_;
  const auto q = x.head(nq);
  const auto v = x.tail(nv);
  const auto theta_S = theta.head(ns);
  applyArmature(d, theta);
  const Eigen::MatrixXd *da_dq, *da_dv, *da_dtau, *da_dtheta;
  const Eigen::VectorXd* a;
  if (contact_) {
    dynamics::computeContactDynamicsDerivatives(*contact_, *d.contact, q, d.v_start, d.tau,
                                                theta_S);
    da_dq = &d.contact->da_dq;
    da_dv = &d.contact->da_dv;
    da_dtau = &d.contact->da_dtau;
    da_dtheta = &d.contact->da_dtheta;
    a = &d.contact->a;
  } else {
    dynamics::computeForwardDynamicsDerivatives(*dynamics_, *d.free, q, v, d.tau, theta_S);
    da_dq = &d.free->da_dq;
    da_dv = &d.free->da_dv;
    da_dtau = &d.free->da_dtau;
    da_dtheta = &d.free->da_dtheta;
    a = &d.free->a;
  }
  d.da_dtheta.leftCols(ns) = *da_dtheta;
  if (actuators_) {  // the terms' columns, and the friction's share of d a / d v_s
    const int na = actuators_->numParameters();
    d.da_dvs = *da_dv;
    actuators_->accelerationDerivatives(theta.tail(na), d.v_start, *a, *da_dtau,
                                        d.da_dtheta.rightCols(na), d.da_dvs);
    da_dv = &d.da_dvs;
  }
  if (!impulse_) {
    d.da_dx.leftCols(nv) = *da_dq;
    d.da_dx.rightCols(nv) = *da_dv;
    return;
  }
  dynamics::computeImpulseDynamicsDerivatives(*impulse_, *d.impulse, q, v, theta_S);
  const dynamics::ImpulseDynamicsData& I = *d.impulse;
  d.dvs_dx.leftCols(nv) = I.dvplus_dq;
  d.dvs_dx.rightCols(nv) = I.dvplus_dvminus;
  d.dvs_dtheta.leftCols(ns) = I.dvplus_dtheta;
  if (actuators_) {  // d v^+ / d log I_a = d v^+ / d I_a * I_a
    const auto theta_act = theta.tail(actuators_->numParameters());
    for (int k = 0; k < actuators_->numArmature(); ++k) {
      const int col = actuators_->armatureStart() + k;
      d.dvs_dtheta.col(ns + col) =
          std::exp(theta_act(col)) * I.dvplus_darmature.col(actuators_->armatureIndex()[k]);
    }
  }
  d.da_dx.leftCols(nv) = *da_dq;
  d.da_dx.rightCols(nv).setZero();
  d.da_dx.noalias() += *da_dv * d.dvs_dx;
  d.da_dtheta.noalias() += *da_dv * d.dvs_dtheta;
}

namespace {
// out = A B^T for A (m x 3) and B (n x 3), a column at a time: one pass over out with three
// multiply-adds per entry (zeroing out and three rank-one updates made four passes: 77k -> 39k
// instructions per go2 knot; a general product's packing, and a lazy product's 3-long dot
// products per entry, measured slower than the rank-one updates).
template <class Out, class A, class B>
void assignRankThree(Out&& out, const A& a, const B& b) {
  for (Eigen::Index j = 0; j < out.cols(); ++j)
    out.col(j).noalias() = a.col(0) * b(j, 0) + a.col(1) * b(j, 1) + a.col(2) * b(j, 2);
}
}  // namespace

void MultibodyStageModel::gaussNewton(const StageData& d, GaussNewtonTerms& out) const {
  // The accelerometer's rows, the only sensor rows through the dynamics (every column of x, w_v
  // and theta), from their contiguous transposed copy (calcDiff's); then the other sensor rows,
  // each by the columns of x it touches (sensorJacobians): an encoder or joint velocity row one
  // entry, the IMU and motion-capture rows 3 or 6 base columns. The dense R_x^T R_x over go2's
  // 27 sensor rows was a tenth of the backward pass's multiply-adds.
  const int nv = dynamics_->model().nv;
  const bool accel = hasDynamics() && accel_row_ >= 0;
  if (accel) {
    const Eigen::MatrixXd& rows = static_cast<const MultibodyStageData&>(d).accel_rows;
    const auto ax = rows.topRows(ndx()), aw = rows.middleRows(ndx(), nw()),
               at = rows.bottomRows(np());
    const Eigen::Vector3d ar = d.r.segment<3>(accel_row_);
    assignRankThree(out.xx, ax, ax);
    assignRankThree(out.xw, ax, aw);
    assignRankThree(out.ww, aw, aw);
    assignRankThree(out.xt, ax, at);
    assignRankThree(out.wt, aw, at);
    assignRankThree(out.tt, at, at);
    out.x.noalias() = ax * ar;
    out.w.noalias() = aw * ar;
    out.t.noalias() = at * ar;
  } else {
    out.xx.setZero();
    out.x.setZero();
    out.xt.setZero();
    out.tt.setZero();
    out.t.setZero();
    if (hasDynamics()) {
      out.xw.setZero();
      out.ww.setZero();
      out.wt.setZero();
      out.w.setZero();
    }
  }
  for (std::size_t i = 0; i < v_index_.size(); ++i) {
    const int row = encoder_row_ + static_cast<int>(i), col = v_index_[i];
    out.xx(col, col) += d.R_x(row, col) * d.R_x(row, col);
    out.x(col) += d.R_x(row, col) * d.r(row);
    if (velocity_row_ >= 0) {
      const int vrow = velocity_row_ + static_cast<int>(i), vcol = nv + v_index_[i];
      out.xx(vcol, vcol) += d.R_x(vrow, vcol) * d.R_x(vrow, vcol);
      out.x(vcol) += d.R_x(vrow, vcol) * d.r(vrow);
    }
  }
  auto addRows = [&](int row, int col, auto cols) {  // 3 rows touching cols [col, col + cols)
    const auto R = d.R_x.block<3, decltype(cols)::value>(row, col);
    out.xx.block<decltype(cols)::value, decltype(cols)::value>(col, col).noalias() +=
        R.transpose().lazyProduct(R);
    out.x.segment<decltype(cols)::value>(col).noalias() += R.transpose() * d.r.segment<3>(row);
  };
  using Three = std::integral_constant<int, 3>;
  using Six = std::integral_constant<int, 6>;
  if (gyro_row_ >= 0 && imu_on_base_) {
    addRows(gyro_row_, nv + 3, Three());  // base angular velocity
    addRows(imu_row_, 3, Three());        // base orientation
  } else if (gyro_row_ >= 0) {  // an IMU on a body: the six rows through the chain's q and v
    const auto R = d.R_x.middleRows<6>(gyro_row_);
    out.xx.noalias() += R.transpose() * R;
    out.x.noalias() += R.transpose() * d.r.segment<6>(gyro_row_);
  }
  if (mocap_row_ >= 0) {
    addRows(mocap_row_, 0, Six());        // position: base position and orientation
    addRows(mocap_row_ + 3, 3, Three());  // orientation
  }
  if (!hasDynamics()) return;  // no w; theta enters no sensor row without the dynamics
  // Process-noise rows: r = process_info .* w.
  out.ww.diagonal() += process_info_.cwiseAbs2();
  out.w += process_info_.cwiseProduct(d.r.head(ndx()));
  if (energy_row_ >= 0)  // one row through x, w_tau and theta
    addDenseRow(out, static_cast<const MultibodyStageData&>(d).energy_rows, d.r(energy_row_));
}

// The rows gaussNewton knows: process noise diag(process_info) in w, zero in x and theta; the
// sensor rows by the columns of x they touch; the accelerometer's through every column of x, w
// and theta, from their contiguous transposed copy (the dense R_x product read all of R_x's
// columns for 27 sparse rows, in the linear rollout's stream over every knot's data).
void MultibodyStageModel::linearResidual(const StageData& d,
                                         const Eigen::Ref<const Eigen::VectorXd>& dx,
                                         const Eigen::Ref<const Eigen::VectorXd>& dw,
                                         const Eigen::Ref<const Eigen::VectorXd>& dtheta,
                                         Eigen::Ref<Eigen::VectorXd> e) const {
  const int nv = dynamics_->model().nv;
  if (hasDynamics()) e.head(ndx()) = process_info_.cwiseProduct(dw);
  for (std::size_t i = 0; i < v_index_.size(); ++i) {
    const int row = encoder_row_ + static_cast<int>(i), col = v_index_[i];
    e(row) = d.R_x(row, col) * dx(col);
    if (velocity_row_ >= 0) {
      const int vrow = velocity_row_ + static_cast<int>(i), vcol = nv + v_index_[i];
      e(vrow) = d.R_x(vrow, vcol) * dx(vcol);
    }
  }
  if (gyro_row_ >= 0 && imu_on_base_) {
    e.segment<3>(gyro_row_).noalias() =
        d.R_x.block<3, 3>(gyro_row_, nv + 3) * dx.segment<3>(nv + 3);
    e.segment<3>(imu_row_).noalias() = d.R_x.block<3, 3>(imu_row_, 3) * dx.segment<3>(3);
  } else if (gyro_row_ >= 0) {
    e.segment<6>(gyro_row_).noalias() = d.R_x.middleRows<6>(gyro_row_) * dx;
  }
  if (mocap_row_ >= 0) {
    e.segment<3>(mocap_row_).noalias() = d.R_x.block<3, 6>(mocap_row_, 0) * dx.head<6>();
    e.segment<3>(mocap_row_ + 3).noalias() =
        d.R_x.block<3, 3>(mocap_row_ + 3, 3) * dx.segment<3>(3);
  }
  if (energy_row_ >= 0) {
    if (hasDynamics()) {
      const Eigen::VectorXd& rows = static_cast<const MultibodyStageData&>(d).energy_rows;
      e(energy_row_) = rows.head(ndx()).dot(dx) + rows.segment(ndx(), nw()).dot(dw) +
                       rows.tail(np()).dot(dtheta);
    } else {
      e(energy_row_) = 0;
    }
  }
  if (accel_row_ >= 0) {
    if (!hasDynamics()) {  // the terminal knot's rows have zero weight
      e.segment<3>(accel_row_).setZero();
      return;
    }
    const Eigen::MatrixXd& rows = static_cast<const MultibodyStageData&>(d).accel_rows;
    auto ea = e.segment<3>(accel_row_);
    ea.noalias() = rows.topRows(ndx()).transpose() * dx;
    ea.noalias() += rows.middleRows(ndx(), nw()).transpose() * dw;
    ea.noalias() += rows.bottomRows(np()).transpose() * dtheta;
  }
}

// An IMU on a body other than the base: its angular velocity in its own axes (Pinocchio's LOCAL
// frame velocity) and its orientation R_wi(q), through the joints between base and IMU.
void MultibodyStageModel::bodyImuResiduals(MultibodyStageData& d,
                                           const Eigen::Ref<const Eigen::VectorXd>& x) const {
  const pinocchio::Model& model = dynamics_->model();
  const auto q = x.head(model.nq);
  const auto v = x.tail(model.nv);
  const pinocchio::FrameIndex frame = sensors_->imu_frame;
  pinocchio::Data& kin = *d.kinematics;
  pinocchio::forwardKinematics(model, kin, q, v);
  const pinocchio::SE3& oMi = pinocchio::updateFramePlacement(model, kin, frame);
  const pinocchio::Motion velocity =
      pinocchio::getFrameVelocity(model, kin, frame, pinocchio::LOCAL);
  d.r.segment<3>(gyro_row_) = gyro_info_ * (velocity.angular() - measurement_.gyro);
  const Eigen::Matrix3d E =
      measurement_.imu_orientation.toRotationMatrix().transpose() * oMi.rotation();
  d.r.segment<3>(imu_row_) = imu_info_ * pinocchio::log3(E);
}

// d omega_i / d(q, v) from the frame velocity derivatives (the LOCAL angular rows); the
// orientation's d log3(Z^T R_wi) / dq = Jlog3 J_ang with J the LOCAL frame Jacobian
// (R_wi' = R_wi Exp(J_ang dq)).
void MultibodyStageModel::bodyImuJacobians(MultibodyStageData& d,
                                           const Eigen::Ref<const Eigen::VectorXd>& x) const {
  const pinocchio::Model& model = dynamics_->model();
  const int nv = model.nv;
  const auto q = x.head(model.nq);
  const auto v = x.tail(nv);
  const pinocchio::FrameIndex frame = sensors_->imu_frame;
  pinocchio::Data& kin = *d.kinematics;
  d.a_zero.setZero();
  pinocchio::computeForwardKinematicsDerivatives(model, kin, q, v, d.a_zero);
  d.imu_dv_dq.setZero();
  d.imu_dv_dv.setZero();
  pinocchio::getFrameVelocityDerivatives(model, kin, frame, pinocchio::LOCAL, d.imu_dv_dq,
                                         d.imu_dv_dv);
  d.R_x.block(gyro_row_, 0, 3, nv) = gyro_info_ * d.imu_dv_dq.bottomRows<3>();
  d.R_x.block(gyro_row_, nv, 3, nv) = gyro_info_ * d.imu_dv_dv.bottomRows<3>();
  pinocchio::updateFramePlacement(model, kin, frame);
  d.imu_jacobian.setZero();
  pinocchio::getFrameJacobian(model, kin, frame, pinocchio::LOCAL, d.imu_jacobian);
  const Eigen::Matrix3d E =
      measurement_.imu_orientation.toRotationMatrix().transpose() * kin.oMf[frame].rotation();
  Eigen::Matrix3d Jlog;
  pinocchio::Jlog3(E, Jlog);
  d.R_x.block(imu_row_, 0, 3, nv) = imu_info_ * Jlog * d.imu_jacobian.bottomRows<3>();
}

// The IMU is on the floating base: with the base twist (v_lin, omega) and spatial acceleration
// (a_lin, alpha) in the base frame (Pinocchio's free-flyer v and a), the classical acceleration of
// the IMU point p is acc_b = a_lin + alpha x p + omega x (v_lin + omega x p).
void MultibodyStageModel::accelerometerResidual(MultibodyStageData& d,
                                                const Eigen::Ref<const Eigen::VectorXd>& x,
                                                const Eigen::VectorXd& a) const {
  const pinocchio::Model& model = dynamics_->model();
  const Eigen::Vector3d f = baseImuSpecificForce(
      model.frames[sensors_->imu_frame].placement, model.gravity.linear(), baseRotation(x),
      d.v_start.head<3>(), d.v_start.segment<3>(3), a.head<3>(), a.segment<3>(3));
  d.r.segment<3>(accel_row_) = accel_info_ * (f - measurement_.accel);
}

void MultibodyStageModel::accelerometerJacobians(MultibodyStageData& d,
                                                 const Eigen::Ref<const Eigen::VectorXd>& x) const {
  const pinocchio::Model& model = dynamics_->model();
  const int nv = model.nv;
  // d f / d v_start and d f / d a (base columns only), in the IMU frame, weighted
  Eigen::Matrix<double, 3, 6> d_twist, d_acceleration;
  Eigen::Matrix3d d_rotation;
  baseImuSpecificForceJacobians(model.frames[sensors_->imu_frame].placement, accel_info_,
                                model.gravity.linear(), baseRotation(x), d.v_start.head<3>(),
                                d.v_start.segment<3>(3), d_twist, d_acceleration, d_rotation);
  d.acc_dv.setZero();
  d.acc_dv.leftCols<6>() = d_twist;
  d.acc_da.setZero();
  d.acc_da.leftCols<6>() = d_acceleration;
  auto R_x = d.R_x.middleRows<3>(accel_row_);
  R_x.noalias() = d.acc_dv * d.dvs_dx;
  R_x.noalias() += d.acc_da * d.da_dx;
  R_x.middleCols<3>(3) += d_rotation;
  // w = (w_q, w_tau): only w_tau moves a, by d a / d tau = dv_dw / dt
  auto R_w = d.R_w.middleRows<3>(accel_row_);
  R_w.leftCols(nv).setZero();
  R_w.rightCols(nv).noalias() = d.acc_da * d.dv_dw;
  R_w.rightCols(nv) /= dt_;
  auto R_theta = d.R_theta.middleRows<3>(accel_row_);
  R_theta.noalias() = d.acc_dv * d.dvs_dtheta;
  R_theta.noalias() += d.acc_da * d.da_dtheta;
  d.accel_rows.topRows(ndx()) = R_x.transpose();
  d.accel_rows.middleRows(ndx(), nw()) = R_w.transpose();
  d.accel_rows.bottomRows(np()) = R_theta.transpose();
}

const pinocchio::Model& MultibodyStageModel::workingModel(const MultibodyStageData& d) const {
  return contact_ ? d.contact->inertias.model : d.free->inertias.model;
}

using EnergyScratch = MultibodyStageData::EnergyScratch;

double mechanicalEnergy(const pinocchio::Model& model, pinocchio::Data& data,
                        const Eigen::Ref<const Eigen::VectorXd>& q,
                        const Eigen::Ref<const Eigen::VectorXd>& v) {
  pinocchio::forwardKinematics(model, data, q, v);
  // Pinocchio's kinetic energy includes the rotors' (model.armature)
  return pinocchio::computeKineticEnergy(model, data) +
         pinocchio::computePotentialEnergy(model, data);
}

// dT/dq (tangent) and dT/dv of T = K + U at (q, v): K = 1/2 sum_k v_k^T I_k v_k + 1/2 v^T I_a v
// with v_k the LOCAL body velocities (eq. 70), dU/dq = g(q) the generalized gravity.
void energyGradient(const pinocchio::Model& model, EnergyScratch& s,
                    const Eigen::Ref<const Eigen::VectorXd>& q,
                    const Eigen::Ref<const Eigen::VectorXd>& v, Eigen::VectorXd& grad_q,
                    Eigen::VectorXd& grad_v) {
  pinocchio::computeForwardKinematicsDerivatives(model, s.pin, q, v, s.a_zero);
  grad_q.setZero();
  grad_v = model.armature.cwiseProduct(v);
  for (pinocchio::JointIndex j = 1; j < model.joints.size(); ++j) {
    s.joint_dv_dq.setZero();
    s.joint_dv_dv.setZero();
    pinocchio::getJointVelocityDerivatives(model, s.pin, j, pinocchio::LOCAL, s.joint_dv_dq,
                                           s.joint_dv_dv);
    const Eigen::Matrix<double, 6, 1> momentum = (model.inertias[j] * s.pin.v[j]).toVector();
    grad_q.noalias() += s.joint_dv_dq.transpose() * momentum;
    grad_v.noalias() += s.joint_dv_dv.transpose() * momentum;
  }
  grad_q += pinocchio::computeGeneralizedGravity(model, s.pin, q);
}

void addEnergyParameterTerms(const dynamics::RegressorModel& regressor,
                             const ActuatorTermsModel* actuators, EnergyScratch& s,
                             const Eigen::Ref<const Eigen::VectorXd>& q,
                             const Eigen::Ref<const Eigen::VectorXd>& v_start,
                             const Eigen::Ref<const Eigen::VectorXd>& q_next,
                             const Eigen::Ref<const Eigen::VectorXd>& v_next,
                             const Eigen::MatrixXd& dpi_dtheta,
                             const Eigen::Ref<const Eigen::VectorXd>& theta, double dt,
                             Eigen::Ref<Eigen::RowVectorXd, 0, Eigen::InnerStride<>> row) {
  dynamics::computeEnergyRegressors(regressor, s.regressors, q_next, v_next);
  s.y_next = s.regressors.kinetic_regressor + s.regressors.potential_regressor;
  dynamics::computeEnergyRegressors(regressor, s.regressors, q, v_start);
  s.y_next -= s.regressors.kinetic_regressor + s.regressors.potential_regressor;
  for (int k = 0; k < regressor.numBodies(); ++k)
    row.segment<10>(10 * k).noalias() +=
        s.y_next.segment<10>(10 * k) * dpi_dtheta.middleCols<10>(10 * k);
  if (!actuators) return;
  const int ns = 10 * regressor.numBodies(), na = actuators->numParameters();
  const auto theta_act = theta.tail(na);
  row.segment(ns, na) += dt * s.dp_dtheta_act.transpose();
  for (int k = 0; k < actuators->numArmature(); ++k) {  // K's rotor term 1/2 I_a v_j^2
    const int col = actuators->armatureStart() + k, i = actuators->armatureIndex()[k];
    row(ns + col) +=
        0.5 * std::exp(theta_act(col)) * (v_next(i) * v_next(i) - v_start(i) * v_start(i));
  }
}

void MultibodyStageModel::energyResidual(MultibodyStageData& d,
                                         const Eigen::Ref<const Eigen::VectorXd>& x,
                                         const Eigen::Ref<const Eigen::VectorXd>& w) const {
  const pinocchio::Model& model = workingModel(d);
  EnergyScratch& s = *d.energy;
  const auto q = x.head(model.nq);
  const double T_next = mechanicalEnergy(model, s.pin, d.q_next, d.v_next);
  const double T = mechanicalEnergy(model, s.pin, q, d.v_start);
  s.v_mid = 0.5 * (d.v_start + d.v_next);
  // tau_k - E (b + f(v_s)) = tau_eff - w_tau
  s.tau_in = d.tau - w.tail(model.nv);
  d.r(energy_row_) = energy_info_ * (T_next - T - dt_ * s.v_mid.dot(s.tau_in));
}

void MultibodyStageModel::energyJacobians(MultibodyStageData& d,
                                          const Eigen::Ref<const Eigen::VectorXd>& x,
                                          const Eigen::Ref<const Eigen::VectorXd>& w,
                                          const Eigen::Ref<const Eigen::VectorXd>& theta) const {
  const pinocchio::Model& model = workingModel(d);
  EnergyScratch& s = *d.energy;
  const int nv = model.nv;
  const auto q = x.head(model.nq);
  energyGradient(model, s, d.q_next, d.v_next, s.grad_q_next, s.grad_v_next);
  energyGradient(model, s, q, d.v_start, s.grad_q, s.grad_v);
  s.v_mid = 0.5 * (d.v_start + d.v_next);
  s.tau_in = d.tau - w.tail(nv);
  // the dissipation's share: dt v_m^T E (b + f(v_s)), its slope in v_s and theta_act at fixed v_m
  s.dp_dv.setZero();
  if (actuators_)
    actuators_->power(theta.tail(actuators_->numParameters()), d.v_start, s.v_mid, s.dp_dtheta_act,
                      s.dp_dv);
  // de/dv' and de/dv_s (into grad_v_next, grad_v)
  s.grad_v_next -= 0.5 * dt_ * s.tau_in;
  s.grad_v = -s.grad_v - 0.5 * dt_ * s.tau_in + dt_ * s.dp_dv;
  auto R_x = d.R_x.row(energy_row_);
  R_x.noalias() = s.grad_q_next.transpose() * d.dq_dx;
  R_x.noalias() += s.grad_v_next.transpose() * d.dv_dx;
  R_x.noalias() += s.grad_v.transpose() * d.dvs_dx;
  R_x.head(nv) -= s.grad_q.transpose();
  // w = (w_q, w_tau): q' is taken before w_q
  auto R_w = d.R_w.row(energy_row_);
  R_w.head(nv).setZero();
  R_w.tail(nv).noalias() = s.grad_q_next.transpose() * d.dq_dw;
  R_w.tail(nv).noalias() += s.grad_v_next.transpose() * d.dv_dw;
  auto R_theta = d.R_theta.row(energy_row_);
  R_theta.noalias() = s.grad_q_next.transpose() * d.dq_dtheta;
  R_theta.noalias() += s.grad_v_next.transpose() * d.dv_dtheta;
  R_theta.noalias() += s.grad_v.transpose() * d.dvs_dtheta;
  // T's own dependence on theta: the energy regressors of S (eq. 69) through dpi/dtheta, whose
  // blocks the dynamics' derivatives just computed (cached per theta across the horizon)
  const dynamics::RegressorModel& regressor = dynamics_->regressor();
  addEnergyParameterTerms(regressor, actuators_.get(), s, q, d.v_start, d.q_next, d.v_next,
                          (contact_ ? d.contact->regressor : d.free->regressor).dpi_dtheta, theta,
                          dt_, R_theta);
  R_x *= energy_info_;
  R_w *= energy_info_;
  R_theta *= energy_info_;
  d.energy_rows.head(ndx()) = R_x.transpose();
  d.energy_rows.segment(ndx(), nw()) = R_w.transpose();
  d.energy_rows.tail(np()) = R_theta.transpose();
}

}  // namespace heft::estimation
