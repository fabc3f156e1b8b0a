#include "heft/estimation/inverse_dynamics_stage.hpp"

#include <string>

#include <pinocchio/algorithm/frames-derivatives.hpp>
#include <pinocchio/algorithm/frames.hpp>
#include <pinocchio/algorithm/joint-configuration.hpp>
#include <pinocchio/algorithm/kinematics-derivatives.hpp>
#include <pinocchio/algorithm/kinematics.hpp>
#include <pinocchio/algorithm/rnea-derivatives.hpp>
#include <pinocchio/algorithm/rnea.hpp>
#include <pinocchio/spatial/skew.hpp>

#include "heft/common/error.hpp"
#include "heft/common/robust_loss.hpp"
#include "heft/estimation/base_imu.hpp"

namespace heft::estimation {
namespace {

std::shared_ptr<const MultibodyStageModel> makeSensorStage(
    const std::shared_ptr<const dynamics::ForwardDynamicsModel>& dynamics,
    const std::shared_ptr<const MultibodyState>& state,
    const std::shared_ptr<const MultibodySensors>& sensors, const MultibodyNoise& noise,
    MultibodyMeasurement measurement, const std::shared_ptr<const ActuatorTermsModel>& actuators) {
  require(dynamics && state && sensors, "inverse-dynamics stage dynamics, state and sensors",
          "non-null", "null");
  // the energy row is the inverse stage's own (the terminal form has no step)
  auto terminal_sensors = std::make_shared<MultibodySensors>(*sensors);
  terminal_sensors->energy = false;
  return std::make_shared<MultibodyStageModel>(dynamics, nullptr, state, terminal_sensors, noise,
                                               std::move(measurement), 0.0, true, nullptr,
                                               actuators);
}

int loopRowCount(const std::vector<model::LoopClosure>& loops) {
  int rows = 0;
  for (const model::LoopClosure& l : loops) rows += l.dimension;
  return rows;
}

// The stage's equality rows: the torque balance (nv), the contacts', the loops' and, at a
// touchdown, the reset map's (nv + nc + nl: the impulse balance, the contacts' and the loops'
// velocities at v+). Its decisions are these plus w_q and e (2 nv).
int equalityRowCount(int nv, const dynamics::ContactDynamicsModel* contact,
                     const std::vector<model::LoopClosure>& loops, bool touchdown) {
  const int nc = contact ? contact->nc() : 0, nl = loopRowCount(loops);
  return nv + nc + nl + (touchdown ? nv + nc + nl : 0);
}

}  // namespace

InverseDynamicsStageModel::InverseDynamicsStageModel(
    std::shared_ptr<const dynamics::ForwardDynamicsModel> dynamics,
    std::shared_ptr<const MultibodyState> state, std::shared_ptr<const MultibodySensors> sensors,
    const MultibodyNoise& noise, MultibodyMeasurement measurement, double dt,
    std::shared_ptr<const ActuatorTermsModel> actuators,
    std::shared_ptr<const dynamics::ContactDynamicsModel> contact,
    std::vector<model::LoopClosure> loops, LoopGains loop_gains,
    std::shared_ptr<const dynamics::ImpulseDynamicsModel> projection,
    std::shared_ptr<const dynamics::ImpulseDynamicsModel> impulse, bool project_on_loops)
    : InverseDynamicsStageModel(
          makeSensorStage(dynamics, state, sensors, noise, measurement, actuators), sensors,
          dynamics, state, noise, measurement.tau, dt, actuators, std::move(contact),
          std::move(loops), loop_gains, std::move(projection), std::move(impulse),
          project_on_loops) {}

InverseDynamicsStageModel::InverseDynamicsStageModel(
    std::shared_ptr<const MultibodyStageModel> sensor_stage,
    std::shared_ptr<const MultibodySensors> sensors,
    std::shared_ptr<const dynamics::ForwardDynamicsModel> dynamics,
    const std::shared_ptr<const MultibodyState>& state, const MultibodyNoise& noise,
    Eigen::VectorXd tau, double dt, std::shared_ptr<const ActuatorTermsModel> actuators,
    std::shared_ptr<const dynamics::ContactDynamicsModel> contact,
    std::vector<model::LoopClosure> loops, LoopGains loop_gains,
    std::shared_ptr<const dynamics::ImpulseDynamicsModel> projection,
    std::shared_ptr<const dynamics::ImpulseDynamicsModel> impulse, bool project_on_loops)
    : StageModel(
          state->nx(), state->ndx(),
          2 * state->nv() + equalityRowCount(state->nv(), contact.get(), loops, impulse != nullptr),
          2 * state->nv() + sensor_stage->nr() + (sensors->energy ? 1 : 0),
          dynamics->numParameters() + (actuators ? actuators->numParameters() : 0), true,
          equalityRowCount(state->nv(), contact.get(), loops, impulse != nullptr)),
      dynamics_(std::move(dynamics)),
      actuators_(std::move(actuators)),
      sensors_stage_(std::move(sensor_stage)),
      sensors_(std::move(sensors)),
      contact_(std::move(contact)),
      loops_(std::move(loops)),
      loop_gains_(loop_gains),
      nl_(loopRowCount(loops_)),
      projection_(std::move(projection)),
      project_on_loops_(project_on_loops),
      impulse_(std::move(impulse)),
      tau_(std::move(tau)),
      dt_(dt) {
  const pinocchio::Model& model = dynamics_->model();
  const int nv = model.nv;
  require(state->nq() == model.nq && state->nv() == nv, "inverse-dynamics stage state",
          "the dynamics model's nq, nv",
          std::to_string(state->nq()) + ", " + std::to_string(state->nv()));
  requirePositive(dt_, "stage dt", " [s]");
  require(tau_.size() == nv, "stage tau", std::to_string(nv) + " (nv)",
          std::to_string(tau_.size()));
  require(tau_.allFinite(), "stage tau", "finite values", "NaN or infinity");
  num_inertial_ = dynamics_->numParameters();
  if (contact_) {
    require(contact_->nq() == model.nq && contact_->nv() == nv,
            "inverse-dynamics stage contact set", "the dynamics model's robot",
            "nq, nv = " + std::to_string(contact_->nq()) + ", " + std::to_string(contact_->nv()));
    require(contact_->options().baumgarte_kp == 0,
            "inverse-dynamics stage contact set's Baumgarte kp", "0 (no anchors)",
            std::to_string(contact_->options().baumgarte_kp));
    damping_ = contact_->options().baumgarte_kd;
    nc_ = contact_->nc();
    for (const dynamics::ContactSpec& spec : contact_->contacts()) {
      const pinocchio::FrameIndex f = model.getFrameId(spec.frame);
      contact_frames_.push_back(
          {f, model.frames[f].parentJoint, model.frames[f].placement, spec.dimension()});
    }
  }
  require(std::isfinite(loop_gains_.kp) && loop_gains_.kp >= 0 && std::isfinite(loop_gains_.kd) &&
              loop_gains_.kd >= 0,
          "inverse-dynamics stage loop gains", "finite kp, kd >= 0",
          std::to_string(loop_gains_.kp) + ", " + std::to_string(loop_gains_.kd));
  for (const model::LoopClosure& l : loops_) {
    const auto nf = static_cast<pinocchio::FrameIndex>(model.frames.size());
    require(l.frame1 < nf && l.frame2 < nf && model.frames[l.frame1].name == l.name + "_anchor1" &&
                model.frames[l.frame2].name == l.name + "_anchor2",
            "inverse-dynamics stage loop '" + l.name + "'", "anchor frames of the dynamics model",
            "frames it does not have");
  }
  if (project_on_loops_) {
    require(!loops_.empty() && !projection_, "inverse-dynamics stage noise projection on loops",
            "closed loops, and no impulse model (the loops' projection takes the contacts too)",
            std::to_string(loops_.size()) + " loops" + (projection_ ? ", an impulse model" : ""));
    // G M^-1 G^T must be invertible: no more rows than velocities
    require(nc_ + nl_ <= nv, "inverse-dynamics stage noise projection on loops",
            "contact and loop rows of at most nv = " + std::to_string(nv) + " (full row rank)",
            std::to_string(nc_ + nl_) + " rows");
  }
  if (projection_) {
    require(contact_ != nullptr, "inverse-dynamics stage noise projection",
            "a contact set to project on", "none");
    // J M^-1 J^T must be invertible: go2's four feet as flat contacts (24 rows, nv 18) are not
    require(projection_->nc() <= nv, "inverse-dynamics stage noise projection",
            "a contact set of at most nv = " + std::to_string(nv) + " rows (full row rank)",
            std::to_string(projection_->nc()) + " rows");
    require(projection_->nv() == nv && projection_->numParameters() == num_inertial_ &&
                projection_->parametrization() == dynamics_->parametrization() &&
                projection_->options().restitution == 0,
            "inverse-dynamics stage noise projection",
            "the dynamics' robot, S and parametrization, zero restitution", "another model");
  }
  if (impulse_) {
    // the reset map of the knot's own contact set: its rows reuse the contact frames
    bool same = contact_ != nullptr && impulse_->contacts().size() == contact_->contacts().size();
    for (size_t i = 0; same && i < impulse_->contacts().size(); ++i)
      same = impulse_->contacts()[i].frame == contact_->contacts()[i].frame &&
             impulse_->contacts()[i].dimension() == contact_->contacts()[i].dimension();
    require(same, "inverse-dynamics stage touchdown", "the impulse of the knot's contact set",
            "another contact set");
    require(impulse_->options().restitution == 0, "inverse-dynamics stage touchdown",
            "zero restitution", "restitution " + std::to_string(impulse_->options().restitution));
  }
  const MultibodySensors& s = *sensors_;
  loss_scale_ = s.loss_scale > 0 ? s.loss_scale : defaultLossScale(s.loss);
  if (s.imu_frame > 0 && s.accelerometer) {  // the sensor stage validated the IMU's frame
    const int nj = static_cast<int>(s.encoders.size());
    accel_row_ = 2 * nv + nj + (s.joint_velocities ? nj : 0) + 6;  // after encoders, gyro, IMU
    accel_info_ = sensors_stage_->measurement().has_accel ? 1 / s.accelerometer_std : 0;
  }
  if (s.energy) {  // the last row
    energy_row_ = nr() - 1;
    energy_info_ = 1 / s.energy_std;
  }
  process_info_.resize(2 * nv);
  process_info_ << noise.configuration.cwiseInverse(), noise.generalized_force.cwiseInverse();
}

InverseDynamicsStageData::InverseDynamicsStageData(const InverseDynamicsStageModel& model,
                                                   const dynamics::ForwardDynamicsModel& dynamics,
                                                   StageWorkspace* workspace,
                                                   std::unique_ptr<StageData> sensor_data)
    : StageData(model.nx(), model.ndx(), model.nw(), model.nr(), model.np(), true, model.nh()),
      sensors(std::move(sensor_data)) {
  auto create = [&dynamics] { return new dynamics::ForwardDynamicsData(dynamics); };
  work = workspace ? workspace->get<dynamics::ForwardDynamicsData>(&dynamics, create)
                   : std::shared_ptr<dynamics::ForwardDynamicsData>(create());
  const int nv = dynamics.nv();
  tau_eff.setZero(nv);
  v_next.setZero(nv);
  q_next.setZero(dynamics.nq());
  dq.setZero(nv);
  for (Eigen::MatrixXd* m : {&A1, &B1, &A2, &B2}) m->setZero(nv, nv);
  minus_identity = -Eigen::MatrixXd::Identity(nv, nv);
  // Constant blocks: dv'/dv = I (dv'/dv+ = I at a touchdown), dv'/da = dt I, dh/de = -I.
  if (model.hasImpulse())
    F_w.block(nv, model.impulseStart(), nv, nv).setIdentity();
  else
    F_x.bottomRightCorner(nv, nv).setIdentity();
  F_w.block(nv, nv, nv, nv).diagonal().setConstant(model.dt());
  H_w.block(0, 2 * nv, nv, nv) = minus_identity;
  fext.assign(dynamics.model().njoints, pinocchio::Force::Zero());
  for (Eigen::MatrixXd* m : {&v_dq, &a_dq, &a_dv, &a_da}) m->setZero(6, nv);
  if (model.projection_) {
    projection = std::make_unique<dynamics::ImpulseDynamicsData>(*model.projection_);
    projected_noise.setZero(nv);
  }
  if (model.project_on_loops_) {
    loop_projection =
        std::make_unique<LoopProjectionData>(dynamics.model(), model.nc_ + model.nl_, model.np());
    projected_noise.setZero(nv);
  }
  if (model.energy_row_ >= 0) {
    energy = MultibodyStageData::EnergyScratch::of(
        dynamics, workspace, model.actuators_ ? model.actuators_->numParameters() : 0);
    energy_rows.setZero(model.ndx() + model.nw() + model.np());
  }
  if (model.hasImpulse()) {
    impulse_pin = std::make_unique<pinocchio::Data>(dynamics.model());
    impulse_fext.assign(dynamics.model().njoints, pinocchio::Force::Zero());
    velocity_jump.setZero(nv);
    zero_velocity.setZero(nv);
    gravity_dq.setZero(nv, nv);
  }
  for (int i = 0; i < 2; ++i) {
    anchor_dq[i].setZero(3, nv);
    anchor_dv[i].setZero(3, nv);
    anchor_J[i].setZero(6, nv);
    anchor_vq[i].setZero(3, nv);
  }
  impulse_stiffness.setZero(nv, nv);
}

std::unique_ptr<StageData> InverseDynamicsStageModel::createData() const {
  return std::make_unique<InverseDynamicsStageData>(*this, *dynamics_, nullptr,
                                                    sensors_stage_->createData());
}

std::unique_ptr<StageData> InverseDynamicsStageModel::createDataSharing(
    StageWorkspace& workspace) const {
  return std::make_unique<InverseDynamicsStageData>(*this, *dynamics_, &workspace,
                                                    sensors_stage_->createDataSharing(workspace));
}

void InverseDynamicsStageModel::calc(StageData& base, const Eigen::Ref<const Eigen::VectorXd>& x,
                                     const Eigen::Ref<const Eigen::VectorXd>& w,
                                     const Eigen::Ref<const Eigen::VectorXd>& theta) const {
  auto& d = static_cast<InverseDynamicsStageData&>(base);
  const pinocchio::Model& model = dynamics_->model();
  const int nq = model.nq, nv = model.nv;
  const auto q = x.head(nq);
  const auto v = startVelocity(x, w);
  const auto a = w.segment(nv, nv);
  dynamics::ForwardDynamicsData& work = *d.work;
  const pinocchio::Model& working = workingModel(d, theta, q, w);
  d.tau_eff = tau_;
  if (actuators_) actuators_->subtractFrom(theta.tail(actuators_->numParameters()), v, d.tau_eff);
  if (hasForces())
    pinocchio::rnea(working, work.pin, q, v, a, d.fext);  // - J_c^T lambda
  else
    pinocchio::rnea(working, work.pin, q, v, a);
  d.h.head(nv) = work.pin.tau - d.tau_eff - w.segment(2 * nv, nv);
  if (contact_ || !loops_.empty()) {
    pinocchio::forwardKinematics(working, work.pin, q, v, a);  // the rows' frame kinematics
    if (contact_) contactRows(d);
    if (!loops_.empty()) loopRows(d);
  }
  // x_{k+1} = ((q ⊕ dt v') ⊕ w_q, v')
  d.v_next = v + dt_ * a;
  d.dq = dt_ * d.v_next;
  pinocchio::integrate(model, q, d.dq, d.q_next);
  if (projection_) {
    if (actuators_)
      actuators_->applyArmature(theta.tail(actuators_->numParameters()),
                                d.projection->inertias.model);
    d.projected_noise = dynamics::impulseDynamics(*projection_, *d.projection, q, w.head(nv),
                                                  theta.head(num_inertial_));
  }
  if (project_on_loops_) loopProjection(d, q, w.head(nv));
  pinocchio::integrate(model, d.q_next, configurationNoise(d, w), d.xnext.head(nq));
  d.xnext.tail(nv) = d.v_next;
  if (energy_row_ >= 0) energyRow(d, x, w);
  // Rows: w_q, e, the sensors'.
  d.r.head(nv) = process_info_.head(nv).cwiseProduct(w.head(nv));
  d.r.segment(nv, nv) = process_info_.tail(nv).cwiseProduct(w.segment(2 * nv, nv));
  sensors_stage_->calc(*d.sensors, x, Eigen::VectorXd(), theta);
  d.r.segment(2 * nv, d.sensors->r.size()) = d.sensors->r;
  if (accel_row_ >= 0) accelerometerRows(d, x, w);
  if (impulse_) impulseRows(d, x, w);
  d.cost = 0.5 * d.r.squaredNorm();
}

void InverseDynamicsStageModel::calcDiff(StageData& base,
                                         const Eigen::Ref<const Eigen::VectorXd>& x,
                                         const Eigen::Ref<const Eigen::VectorXd>& w,
                                         const Eigen::Ref<const Eigen::VectorXd>& theta) const {
  auto& d = static_cast<InverseDynamicsStageData&>(base);
  const pinocchio::Model& model = dynamics_->model();
  const int nq = model.nq, nv = model.nv, ns = num_inertial_;
  const auto q = x.head(nq);
  const auto v = startVelocity(x, w);
  const auto a = w.segment(nv, nv);
  dynamics::ForwardDynamicsData& work = *d.work;
  const auto theta_S = theta.head(ns);
  const pinocchio::Model& working = workingModel(d, theta, q, w);
  // dh/dq, dh/dv, dh/da = M (armature included; Pinocchio fills its upper triangle); with contacts
  // the forces are held in the joints' frames, as the RNEA derivatives assume
  if (hasForces())
    pinocchio::computeRNEADerivatives(working, work.pin, q, v, a, d.fext);
  else
    pinocchio::computeRNEADerivatives(working, work.pin, q, v, a);
  auto dyn_x = d.H_x.topRows(nv);
  dyn_x.leftCols(nv) = work.pin.dtau_dq;
  dyn_x.rightCols(nv) = work.pin.dtau_dv;
  auto M = d.H_w.block(0, nv, nv, nv);
  M.triangularView<Eigen::Upper>() = work.pin.M;
  M.triangularView<Eigen::StrictlyLower>() = work.pin.M.transpose();
  // dh/dtheta_S = Y_S(q, v, a) dpi/dtheta_S (the armature is not in Y_S)
  dynamics::computeRestrictedRegressor(dynamics_->regressor(), work.regressor, q, v, a);
  d.H_theta.topLeftCorner(nv, ns) = dynamics::computeParameterJacobian(
      dynamics_->regressor(), work.regressor, dynamics_->parametrization(), theta_S);
  if (actuators_) {
    // h = ... + E(b + f_v v + f_c tanh(r v)) + (I_a a)_E: the acceleration's derivatives of the
    // forward stage at K = -I are exactly these (ActuatorTermsModel::accelerationDerivatives).
    const int na = actuators_->numParameters();
    actuators_->accelerationDerivatives(theta.tail(na), v, a, d.minus_identity,
                                        d.H_theta.topRightCorner(nv, na),
                                        d.H_x.topRightCorner(nv, nv));
  }
  if (contact_) contactJacobians(d, q, v, a);
  if (!loops_.empty()) {
    if (!contact_) pinocchio::computeForwardKinematicsDerivatives(working, work.pin, q, v, a);
    loopJacobians(d, w);
  }
  // F: q' = q ⊕ dt v', v' = v + dt a, x_{k+1} = (q' ⊕ w_q, v')
  pinocchio::dIntegrate(model, q, d.dq, d.A1, pinocchio::ARG0);
  pinocchio::dIntegrate(model, q, d.dq, d.B1, pinocchio::ARG1);
  const Eigen::Ref<const Eigen::VectorXd> noise_step = configurationNoise(d, w);  // calc's
  pinocchio::dIntegrate(model, d.q_next, noise_step, d.A2, pinocchio::ARG0);
  pinocchio::dIntegrate(model, d.q_next, noise_step, d.B2, pinocchio::ARG1);
  d.F_x.topLeftCorner(nv, nv).noalias() = d.A2 * d.A1;
  d.F_x.topRightCorner(nv, nv).noalias() = dt_ * (d.A2 * d.B1);
  if (projection_)
    projectionJacobians(d, x, w, theta);
  else if (project_on_loops_)
    loopProjectionJacobians(d, x, w, theta);
  else
    d.F_w.topLeftCorner(nv, nv) = d.B2;
  d.F_w.block(0, nv, nv, nv).noalias() = dt_ * d.F_x.topRightCorner(nv, nv);
  // Rows: the process rows are constant, the sensors' from the sensor stage.
  sensors_stage_->calcDiff(*d.sensors, x, Eigen::VectorXd(), theta);
  const int ns_rows = static_cast<int>(d.sensors->r.size());
  d.R_w.setZero();
  d.R_w.topLeftCorner(nv, nv).diagonal() = process_info_.head(nv);
  d.R_w.block(nv, 2 * nv, nv, nv).diagonal() = process_info_.tail(nv);
  d.R_x.middleRows(2 * nv, ns_rows) = d.sensors->R_x;
  d.R_theta.middleRows(2 * nv, ns_rows) = d.sensors->R_theta;
  if (energy_row_ >= 0) energyJacobians(d, x, w, theta);
  if (accel_row_ >= 0) accelerometerJacobians(d, x, w);
  if (impulse_) impulseJacobians(d, x, w, theta);
}

// x_{k+1}'s configuration q' ⊕ nu with nu = N(q; theta) w_q = v^+(q, w_q; theta): d nu / dq
// joins F_x's q columns, N is d nu / d w_q, and theta's inertias and armature move N.
void InverseDynamicsStageModel::projectionJacobians(
    InverseDynamicsStageData& d, const Eigen::Ref<const Eigen::VectorXd>& x,
    const Eigen::Ref<const Eigen::VectorXd>& w,
    const Eigen::Ref<const Eigen::VectorXd>& theta) const {
  const int nq = dynamics_->nq(), nv = dynamics_->nv(), ns = num_inertial_;
  dynamics::computeImpulseDynamicsDerivatives(*projection_, *d.projection, x.head(nq), w.head(nv),
                                              theta.head(ns));
  const dynamics::ImpulseDynamicsData& I = *d.projection;
  d.F_x.topLeftCorner(nv, nv).noalias() += d.B2 * I.dvplus_dq;
  d.F_w.topLeftCorner(nv, nv).noalias() = d.B2 * I.dvplus_dvminus;
  d.F_theta.topLeftCorner(nv, ns).noalias() = d.B2 * I.dvplus_dtheta;
  if (actuators_) {  // d nu / d log I_a = d nu / d I_a * I_a
    const auto theta_act = theta.tail(actuators_->numParameters());
    for (int k = 0; k < actuators_->numArmature(); ++k) {
      const int col = actuators_->armatureStart() + k;
      auto column = d.F_theta.col(ns + col).head(nv);
      column.noalias() = d.B2 * I.dvplus_darmature.col(actuators_->armatureIndex()[k]);
      column *= std::exp(theta_act(col));
    }
  }
}

void InverseDynamicsStageModel::gaussNewton(const StageData& base, GaussNewtonTerms& out) const {
  const auto& d = static_cast<const InverseDynamicsStageData&>(base);
  const int nv = static_cast<int>(process_info_.size()) / 2;
  auto no_xw = out.xw.leftCols(0);  // the sensor stage is a terminal one: no w
  auto no_ww = out.ww.topLeftCorner(0, 0);
  auto no_wt = out.wt.topRows(0);
  auto no_w = out.w.head(0);
  GaussNewtonTerms sensor{out.xx, no_xw, no_ww, out.xt, no_wt, out.tt, out.x, no_w, out.t};
  sensors_stage_->gaussNewton(*d.sensors, sensor);
  out.xw.setZero();
  out.ww.setZero();
  out.wt.setZero();
  out.ww.diagonal().head(nv) = process_info_.head(nv).cwiseAbs2();
  out.ww.diagonal().segment(2 * nv, nv) = process_info_.tail(nv).cwiseAbs2();
  out.w.setZero();
  out.w.head(nv) = process_info_.head(nv).cwiseProduct(d.r.head(nv));
  out.w.segment(2 * nv, nv) = process_info_.tail(nv).cwiseProduct(d.r.segment(nv, nv));
  // the energy row: one row through x, w and theta
  if (energy_row_ >= 0) addDenseRow(out, d.energy_rows, d.r(energy_row_));
  if (accel_row_ < 0) return;
  // the accelerometer's three rows (the sensor stage's are zero: a terminal form has no step)
  const auto Ax = d.R_x.middleRows<3>(accel_row_);
  const auto Aw = d.R_w.middleRows<3>(accel_row_);
  const auto ra = d.r.segment<3>(accel_row_);
  out.xx.noalias() += Ax.transpose() * Ax;
  out.xw.noalias() += Ax.transpose() * Aw;
  out.ww.noalias() += Aw.transpose() * Aw;
  out.x.noalias() += Ax.transpose() * ra;
  out.w.noalias() += Aw.transpose() * ra;
}

void InverseDynamicsStageModel::linearResidual(const StageData& base,
                                               const Eigen::Ref<const Eigen::VectorXd>& dx,
                                               const Eigen::Ref<const Eigen::VectorXd>& dw,
                                               const Eigen::Ref<const Eigen::VectorXd>& dtheta,
                                               Eigen::Ref<Eigen::VectorXd> e) const {
  const auto& d = static_cast<const InverseDynamicsStageData&>(base);
  const int nv = static_cast<int>(process_info_.size()) / 2;
  e.head(nv) = process_info_.head(nv).cwiseProduct(dw.head(nv));
  e.segment(nv, nv) = process_info_.tail(nv).cwiseProduct(dw.segment(2 * nv, nv));
  sensors_stage_->linearResidual(*d.sensors, dx, dw.head(0), dtheta,
                                 e.segment(2 * nv, d.sensors->r.size()));
  if (energy_row_ >= 0) {
    const int ndx = static_cast<int>(dx.size()), nw = static_cast<int>(dw.size());
    e(energy_row_) = d.energy_rows.head(ndx).dot(dx) + d.energy_rows.segment(ndx, nw).dot(dw) +
                     d.energy_rows.tail(dtheta.size()).dot(dtheta);
  }
  if (accel_row_ >= 0) {
    e.segment<3>(accel_row_).noalias() = d.R_x.middleRows<3>(accel_row_) * dx;
    e.segment<3>(accel_row_).noalias() += d.R_w.middleRows<3>(accel_row_) * dw;
  }
}

// The base's spatial acceleration is the decision's a.head(6), its twist the step's start v_s
// (x's v, or v+): the IMU's specific force of base_imu.hpp, whose d f / d a lands on a's base
// columns directly.
void InverseDynamicsStageModel::accelerometerRows(
    InverseDynamicsStageData& d, const Eigen::Ref<const Eigen::VectorXd>& x,
    const Eigen::Ref<const Eigen::VectorXd>& w) const {
  const pinocchio::Model& model = dynamics_->model();
  const int nv = model.nv;
  const auto v = startVelocity(x, w);
  const Eigen::Vector3d f = baseImuSpecificForce(
      model.frames[sensors_->imu_frame].placement, model.gravity.linear(), baseRotation(x),
      v.segment<3>(0), v.segment<3>(3), w.segment<3>(nv), w.segment<3>(nv + 3));
  const Eigen::Vector3d white = accel_info_ * (f - sensors_stage_->measurement().accel);
  for (int i = 0; i < 3; ++i)
    d.r(accel_row_ + i) =
        sensors_->loss == RobustLoss::None
            ? white(i)
            : robustResidual(sensors_->loss, loss_scale_, white(i), &d.accel_slope(i));
}

void InverseDynamicsStageModel::accelerometerJacobians(
    InverseDynamicsStageData& d, const Eigen::Ref<const Eigen::VectorXd>& x,
    const Eigen::Ref<const Eigen::VectorXd>& w) const {
  const pinocchio::Model& model = dynamics_->model();
  const int nv = model.nv;
  const auto v = startVelocity(x, w);
  Eigen::Matrix<double, 3, 6> d_twist, d_acceleration;
  Eigen::Matrix3d d_rotation;
  baseImuSpecificForceJacobians(model.frames[sensors_->imu_frame].placement, accel_info_,
                                model.gravity.linear(), baseRotation(x), v.segment<3>(0),
                                v.segment<3>(3), d_twist, d_acceleration, d_rotation);
  auto R_x = d.R_x.middleRows<3>(accel_row_);
  auto R_w = d.R_w.middleRows<3>(accel_row_);
  R_x.setZero();
  R_w.setZero();
  R_x.middleCols<3>(3) = d_rotation;
  if (impulse_)
    R_w.middleCols<6>(impulseStart()) = d_twist;
  else
    R_x.middleCols<6>(nv) = d_twist;
  R_w.middleCols<6>(nv) = d_acceleration;
  if (sensors_->loss == RobustLoss::None) return;
  for (int i = 0; i < 3; ++i) {
    R_x.row(i) *= d.accel_slope(i);
    R_w.row(i) *= d.accel_slope(i);
  }
}

const pinocchio::Model& InverseDynamicsStageModel::workingModel(
    InverseDynamicsStageData& d, const Eigen::Ref<const Eigen::VectorXd>& theta,
    const Eigen::Ref<const Eigen::VectorXd>& q, const Eigen::Ref<const Eigen::VectorXd>& w) const {
  dynamics::ParametrizedInertias& inertias = d.work->inertias;
  inertias.update(dynamics_->regressor(), dynamics_->parametrization(), theta.head(num_inertial_));
  if (actuators_)
    actuators_->applyArmature(theta.tail(actuators_->numParameters()), inertias.model);
  if (hasForces()) contactForces(d.fext, w, 3 * dynamics_->nv());
  if (!loops_.empty())
    loopForces(inertias.model, d.work->pin, d.fext, q, w, 3 * dynamics_->nv() + nc_);
  return inertias.model;
}

Eigen::Ref<const Eigen::VectorXd> InverseDynamicsStageModel::configurationNoise(
    const InverseDynamicsStageData& d, const Eigen::Ref<const Eigen::VectorXd>& w) const {
  if (projection_ || project_on_loops_) return d.projected_noise;
  return w.head(dynamics_->nv());
}

void InverseDynamicsStageModel::contactForces(std::vector<pinocchio::Force>& fext,
                                              const Eigen::Ref<const Eigen::VectorXd>& w,
                                              int col) const {
  for (pinocchio::Force& f : fext) f.setZero();
  for (const ContactFrame& c : contact_frames_) {
    const Eigen::Vector3d moment =
        c.dimension == 6 ? Eigen::Vector3d(w.segment<3>(col + 3)) : Eigen::Vector3d::Zero();
    fext[c.joint] += c.placement.act(pinocchio::Force(w.segment<3>(col), moment));
    col += c.dimension;
  }
}

Eigen::Ref<const Eigen::VectorXd> InverseDynamicsStageModel::startVelocity(
    const Eigen::Ref<const Eigen::VectorXd>& x, const Eigen::Ref<const Eigen::VectorXd>& w) const {
  const int nv = dynamics_->nv();
  if (impulse_) return w.segment(impulseStart(), nv);
  return x.tail(nv);
}

// M (v+ - v) - J_c^T Lambda - J_l^T Lambda_l = RNEA(q, 0, v+ - v; -Lambda) - g(q), on the impulse
// rows' own data (the contacts' velocities v_c(q, v+) and the loops' relative velocities come
// with the contact and loop rows, from the step's kinematics).
void InverseDynamicsStageModel::impulseRows(InverseDynamicsStageData& d,
                                            const Eigen::Ref<const Eigen::VectorXd>& x,
                                            const Eigen::Ref<const Eigen::VectorXd>& w) const {
  const pinocchio::Model& working = d.work->inertias.model;
  const int nq = dynamics_->nq(), nv = dynamics_->nv(), start = impulseStart();
  pinocchio::Data& pin = *d.impulse_pin;
  contactForces(d.impulse_fext, w, start + nv);
  if (!loops_.empty()) loopForces(working, pin, d.impulse_fext, x.head(nq), w, start + nv + nc_);
  d.velocity_jump = w.segment(start, nv) - x.tail(nv);
  pinocchio::rnea(working, pin, x.head(nq), d.zero_velocity, d.velocity_jump, d.impulse_fext);
  const int row = nv + nc_ + nl_;
  d.h.segment(row, nv) = pin.tau;
  d.h.segment(row, nv) -= pinocchio::computeGeneralizedGravity(working, pin, x.head(nq));
}

// The step's rows and F were differentiated at (q, v+) into x's v columns: they move to v+'s.
// The impulse rows: d/dq from the RNEA's derivatives at (q, 0, v+ - v) with the impulses held in
// the joints' frames (local wrenches, as lambda) minus the gravity's; d/dv = -M, d/dv+ = M;
// d/dtheta_S = (Y(q, 0, v+ - v) - Y(q, 0, 0)) dpi/dtheta; a rotor's armature adds I_a (v+ - v).
void InverseDynamicsStageModel::impulseJacobians(
    InverseDynamicsStageData& d, const Eigen::Ref<const Eigen::VectorXd>& x,
    const Eigen::Ref<const Eigen::VectorXd>& w,
    const Eigen::Ref<const Eigen::VectorXd>& theta) const {
  const pinocchio::Model& working = d.work->inertias.model;
  const int nq = dynamics_->nq(), nv = dynamics_->nv();
  const int start = impulseStart(), row = nv + nc_ + nl_;
  d.H_w.block(0, start, row, nv) = d.H_x.block(0, nv, row, nv);
  d.H_x.block(0, nv, row, nv).setZero();
  d.F_w.block(0, start, nv, nv) = d.F_x.topRightCorner(nv, nv);
  d.F_x.topRightCorner(nv, nv).setZero();
  const auto q = x.head(nq);
  pinocchio::Data& pin = *d.impulse_pin;
  contactForces(d.impulse_fext, w, start + nv);
  if (!loops_.empty()) loopForces(working, pin, d.impulse_fext, q, w, start + nv + nc_);
  d.velocity_jump = w.segment(start, nv) - x.tail(nv);
  // the gravity's first: the RNEA's derivatives below are read from `pin` afterwards
  pinocchio::computeGeneralizedGravityDerivatives(working, pin, q, d.gravity_dq);
  pinocchio::computeRNEADerivatives(working, pin, q, d.zero_velocity, d.velocity_jump,
                                    d.impulse_fext);
  d.H_x.block(row, 0, nv, nv) = pin.dtau_dq - d.gravity_dq;
  if (!loops_.empty()) d.H_x.block(row, 0, nv, nv) += d.impulse_stiffness;  // loopJacobians'
  auto M = d.H_w.block(row, start, nv, nv);
  M.triangularView<Eigen::Upper>() = pin.M;
  M.triangularView<Eigen::StrictlyLower>() = pin.M.transpose();
  d.H_x.block(row, nv, nv, nv) = -M;
  jumpParameterRows(d, q, d.velocity_jump, d.zero_velocity, theta, d.H_theta.middleRows(row, nv));
}

// d/dtheta of M(q; theta) jump = RNEA(q, 0, jump) - g(q): (Y(q, 0, jump) - Y(q, 0, 0)) dpi/dtheta
// into the first ns columns, and I_a jump_i into each armature's column (d (I_a jump) / d log I_a).
void InverseDynamicsStageModel::jumpParameterRows(InverseDynamicsStageData& d,
                                                  const Eigen::Ref<const Eigen::VectorXd>& q,
                                                  const Eigen::Ref<const Eigen::VectorXd>& jump,
                                                  const Eigen::Ref<const Eigen::VectorXd>& zero,
                                                  const Eigen::Ref<const Eigen::VectorXd>& theta,
                                                  Eigen::Ref<Eigen::MatrixXd> rows) const {
  const int ns = num_inertial_;
  dynamics::computeRestrictedRegressor(dynamics_->regressor(), d.work->regressor, q, zero, jump);
  rows.leftCols(ns) = dynamics::computeParameterJacobian(
      dynamics_->regressor(), d.work->regressor, dynamics_->parametrization(), theta.head(ns));
  dynamics::computeRestrictedRegressor(dynamics_->regressor(), d.work->regressor, q, zero, zero);
  rows.leftCols(ns) -= dynamics::computeParameterJacobian(
      dynamics_->regressor(), d.work->regressor, dynamics_->parametrization(), theta.head(ns));
  if (!actuators_) return;
  const auto theta_act = theta.tail(actuators_->numParameters());
  for (int k = 0; k < actuators_->numArmature(); ++k) {
    const int col = actuators_->armatureStart() + k, i = actuators_->armatureIndex()[k];
    rows(i, ns + col) = std::exp(theta_act(col)) * jump(i);
  }
}

void InverseDynamicsStageModel::contactRows(InverseDynamicsStageData& d) const {
  const pinocchio::Model& model = d.work->inertias.model;
  pinocchio::Data& pin = d.work->pin;
  int row = dynamics_->nv();
  for (const ContactFrame& c : contact_frames_) {
    const pinocchio::Motion vel =
        pinocchio::getFrameVelocity(model, pin, c.frame, pinocchio::LOCAL);
    if (c.dimension == 3) {
      const pinocchio::Motion acc =
          pinocchio::getFrameClassicalAcceleration(model, pin, c.frame, pinocchio::LOCAL);
      d.h.segment<3>(row) = acc.linear() + damping_ * vel.linear();
    } else {
      const pinocchio::Motion acc =
          pinocchio::getFrameAcceleration(model, pin, c.frame, pinocchio::LOCAL);
      d.h.segment<6>(row) = acc.toVector() + damping_ * vel.toVector();
    }
    // a touchdown's v_c(q, v+) = 0, after the impulse's nv rows
    if (impulse_)
      d.h.segment(row + nc_ + nl_ + dynamics_->nv(), c.dimension) =
          vel.toVector().head(c.dimension);
    row += c.dimension;
  }
}

// A point's classical acceleration a_lin + omega x v_lin: its derivatives add
// [omega]x d v_lin - [v_lin]x d omega to the spatial acceleration's linear rows (eq. 27-28's
// cross-product terms, LOCAL frame); the frame Jacobian J is d a / d a (and d v / d v).
void InverseDynamicsStageModel::contactJacobians(InverseDynamicsStageData& d,
                                                 const Eigen::Ref<const Eigen::VectorXd>& q,
                                                 const Eigen::Ref<const Eigen::VectorXd>& v,
                                                 const Eigen::Ref<const Eigen::VectorXd>& a) const {
  const pinocchio::Model& model = d.work->inertias.model;
  pinocchio::Data& pin = d.work->pin;
  const int nv = dynamics_->nv();
  pinocchio::computeForwardKinematicsDerivatives(model, pin, q, v, a);
  int row = nv, col = 3 * nv;
  for (const ContactFrame& c : contact_frames_) {
    for (Eigen::MatrixXd* m : {&d.v_dq, &d.a_dq, &d.a_dv, &d.a_da}) m->setZero();
    pinocchio::getFrameAccelerationDerivatives(model, pin, c.frame, pinocchio::LOCAL, d.v_dq,
                                               d.a_dq, d.a_dv, d.a_da);
    const Eigen::MatrixXd& J = d.a_da;
    d.H_w.block(0, col, nv, c.dimension) = -J.topRows(c.dimension).transpose();
    if (c.dimension == 3) {
      const pinocchio::Motion vel =
          pinocchio::getFrameVelocity(model, pin, c.frame, pinocchio::LOCAL);
      const Eigen::Matrix3d omega = pinocchio::skew(vel.angular());
      const Eigen::Matrix3d v_lin = pinocchio::skew(vel.linear());
      auto rows_q = d.H_x.block(row, 0, 3, nv);
      auto rows_v = d.H_x.block(row, nv, 3, nv);
      rows_q = d.a_dq.topRows<3>() + damping_ * d.v_dq.topRows<3>();
      rows_q.noalias() += omega * d.v_dq.topRows<3>();
      rows_q.noalias() -= v_lin * d.v_dq.bottomRows<3>();
      rows_v = d.a_dv.topRows<3>() + damping_ * J.topRows<3>();
      rows_v.noalias() += omega * J.topRows<3>();
      rows_v.noalias() -= v_lin * J.bottomRows<3>();
      d.H_w.block(row, nv, 3, nv) = J.topRows<3>();
    } else {
      d.H_x.block(row, 0, 6, nv) = d.a_dq + damping_ * d.v_dq;
      d.H_x.block(row, nv, 6, nv) = d.a_dv + damping_ * J;
      d.H_w.block(row, nv, 6, nv) = J;
    }
    if (impulse_) {  // the impulse rows: -J^T Lambda, and v_c(q, v+)'s derivatives
      const int impulse_row = row + nc_ + nl_ + nv,
                impulse_col = col - 3 * nv + impulseStart() + nv;
      d.H_w.block(nv + nc_ + nl_, impulse_col, nv, c.dimension) =
          -J.topRows(c.dimension).transpose();
      d.H_x.block(impulse_row, 0, c.dimension, nv) = d.v_dq.topRows(c.dimension);
      d.H_w.block(impulse_row, impulseStart(), c.dimension, nv) = J.topRows(c.dimension);
    }
    row += c.dimension;
    col += c.dimension;
  }
}

// lambda_k in the first anchor's axes (its first `dimension` coordinates): +lambda on the first
// body at its anchor (fixed in its joint's frame), -R_2^T R_1 lambda on the second, the rotations
// from the kinematics at q.
void InverseDynamicsStageModel::loopForces(const pinocchio::Model& model, pinocchio::Data& pin,
                                           std::vector<pinocchio::Force>& fext,
                                           const Eigen::Ref<const Eigen::VectorXd>& q,
                                           const Eigen::Ref<const Eigen::VectorXd>& w,
                                           int col) const {
  pinocchio::forwardKinematics(model, pin, q);
  for (const model::LoopClosure& l : loops_) {
    const pinocchio::SE3& o1 = pinocchio::updateFramePlacement(model, pin, l.frame1);
    const pinocchio::SE3& o2 = pinocchio::updateFramePlacement(model, pin, l.frame2);
    Eigen::Vector3d lambda = Eigen::Vector3d::Zero();
    lambda.head(l.dimension) = w.segment(col, l.dimension);
    fext[l.joint1] +=
        model.frames[l.frame1].placement.act(pinocchio::Force(lambda, Eigen::Vector3d::Zero()));
    if (l.joint2 > 0) {
      const Eigen::Vector3d f2 = -(o2.rotation().transpose() * (o1.rotation() * lambda));
      fext[l.joint2] +=
          model.frames[l.frame2].placement.act(pinocchio::Force(f2, Eigen::Vector3d::Zero()));
    }
    col += l.dimension;
  }
}

// The anchors' relative motion W = a_1 - a_2 + K_d (v_1 - v_2) + K_p (p_1 - p_2) in world axes
// (classical accelerations), of which the rows keep R_1^T W's first `dimension` coordinates.
void InverseDynamicsStageModel::loopRows(InverseDynamicsStageData& d) const {
  const pinocchio::Model& model = d.work->inertias.model;
  pinocchio::Data& pin = d.work->pin;
  int row = dynamics_->nv() + nc_;
  const auto frame = pinocchio::LOCAL_WORLD_ALIGNED;
  for (const model::LoopClosure& l : loops_) {
    const pinocchio::SE3& o1 = pinocchio::updateFramePlacement(model, pin, l.frame1);
    const Eigen::Vector3d p =
        o1.translation() - pinocchio::updateFramePlacement(model, pin, l.frame2).translation();
    const Eigen::Vector3d vel = pinocchio::getFrameVelocity(model, pin, l.frame1, frame).linear() -
                                pinocchio::getFrameVelocity(model, pin, l.frame2, frame).linear();
    const Eigen::Vector3d acc =
        pinocchio::getFrameClassicalAcceleration(model, pin, l.frame1, frame).linear() -
        pinocchio::getFrameClassicalAcceleration(model, pin, l.frame2, frame).linear();
    const Eigen::Vector3d W = acc + loop_gains_.kd * vel + loop_gains_.kp * p;
    d.h.segment(row, l.dimension) = (o1.rotation().transpose() * W).head(l.dimension);
    // a touchdown's relative velocity at v+ (the step's kinematics start there), after the
    // impulse balance and the contacts' velocities
    if (impulse_)
      d.h.segment(row + nl_ + dynamics_->nv() + nc_, l.dimension) =
          (o1.rotation().transpose() * vel).head(l.dimension);
    row += l.dimension;
  }
}

// Each anchor's W-terms in world axes are R times its LOCAL ones: the classical acceleration
// a_c = a_lin + omega x v_lin has the contacts' LOCAL derivatives, and turning R adds
// -R [a_c]x J_ang to d / dq (likewise for the velocity); d a / d a = d v / d v = d p / d q =
// R J_lin, the anchor's world-aligned Jacobian. The rows R_1^T W add [R_1^T W]x R_1^T J_1,ang to
// d / dq. The dynamics rows get d h / d lambda = -(the rows' d / d a)^T and the second body's
// geometric-stiffness term.
void InverseDynamicsStageModel::loopJacobians(InverseDynamicsStageData& d,
                                              const Eigen::Ref<const Eigen::VectorXd>& w) const {
  const pinocchio::Model& model = d.work->inertias.model;
  pinocchio::Data& pin = d.work->pin;
  const int nv = dynamics_->nv();
  int row = nv + nc_, col = 3 * nv + nc_;
  if (impulse_) d.impulse_stiffness.setZero();
  for (const model::LoopClosure& l : loops_) {
    const pinocchio::FrameIndex frames[2] = {l.frame1, l.frame2};
    Eigen::Vector3d W = Eigen::Vector3d::Zero(), V = Eigen::Vector3d::Zero();
    for (int i = 0; i < 2; ++i) {
      for (Eigen::MatrixXd* m : {&d.v_dq, &d.a_dq, &d.a_dv, &d.a_da}) m->setZero();
      pinocchio::getFrameAccelerationDerivatives(model, pin, frames[i], pinocchio::LOCAL, d.v_dq,
                                                 d.a_dq, d.a_dv, d.a_da);
      const pinocchio::Motion vel =
          pinocchio::getFrameVelocity(model, pin, frames[i], pinocchio::LOCAL);
      const Eigen::Vector3d acc =
          pinocchio::getFrameClassicalAcceleration(model, pin, frames[i], pinocchio::LOCAL)
              .linear();
      const pinocchio::SE3& placement = pin.oMf[frames[i]];
      const Eigen::Matrix3d& R = placement.rotation();
      W += (i == 0 ? 1.0 : -1.0) *
           (R * (acc + loop_gains_.kd * vel.linear()) + loop_gains_.kp * placement.translation());
      const Eigen::Matrix3d omega = pinocchio::skew(vel.angular());
      const Eigen::Matrix3d v_lin = pinocchio::skew(vel.linear());
      const Eigen::MatrixXd& J = d.a_da;  // LOCAL
      // LOCAL terms first (in a_dq's and a_dv's top rows, used up here)
      d.a_dq.topRows<3>().noalias() += omega * d.v_dq.topRows<3>();
      d.a_dq.topRows<3>().noalias() -= v_lin * d.v_dq.bottomRows<3>();
      d.a_dq.topRows<3>().noalias() -= pinocchio::skew(acc) * J.bottomRows<3>();
      d.v_dq.topRows<3>().noalias() -= v_lin * J.bottomRows<3>();
      if (impulse_) {  // the world-axes velocity R v_lin and its d / dq
        V += (i == 0 ? 1.0 : -1.0) * (R * vel.linear());
        d.anchor_vq[i].noalias() = R * d.v_dq.topRows<3>();
      }
      d.a_dq.topRows<3>() += loop_gains_.kd * d.v_dq.topRows<3>() + loop_gains_.kp * J.topRows<3>();
      d.a_dv.topRows<3>().noalias() += omega * J.topRows<3>();
      d.a_dv.topRows<3>().noalias() -= v_lin * J.bottomRows<3>();
      d.a_dv.topRows<3>() += loop_gains_.kd * J.topRows<3>();
      d.anchor_dq[i].noalias() = R * d.a_dq.topRows<3>();
      d.anchor_dv[i].noalias() = R * d.a_dv.topRows<3>();
      d.anchor_J[i].topRows<3>().noalias() = R * J.topRows<3>();
      d.anchor_J[i].bottomRows<3>().noalias() = R * J.bottomRows<3>();
    }
    const Eigen::Matrix3d& R1 = pin.oMf[l.frame1].rotation();
    const int m = l.dimension;
    // world-axes blocks into the anchors' first buffers, then the rows R_1^T (.)
    d.anchor_dq[0] -= d.anchor_dq[1];
    d.anchor_dv[0] -= d.anchor_dv[1];
    const Eigen::Matrix3d turn =
        pinocchio::skew(Eigen::Vector3d(R1.transpose() * W)) * R1.transpose();
    d.anchor_dq[1].noalias() = turn * d.anchor_J[0].bottomRows<3>();
    d.anchor_dq[1].noalias() += R1.transpose() * d.anchor_dq[0];
    d.H_x.block(row, 0, m, nv) = d.anchor_dq[1].topRows(m);
    d.anchor_dv[1].noalias() = R1.transpose() * d.anchor_dv[0];
    d.H_x.block(row, nv, m, nv) = d.anchor_dv[1].topRows(m);
    // the relative Jacobian J_1 - J_2 (world axes) into a_da, free now (no temporaries: the
    // products below would allocate one for a difference)
    d.a_da = d.anchor_J[0] - d.anchor_J[1];
    d.anchor_dv[1].noalias() = R1.transpose() * d.a_da.topRows<3>();
    d.H_w.block(row, nv, m, nv) = d.anchor_dv[1].topRows(m);
    d.H_w.block(0, col, nv, m) = -d.anchor_dv[1].topRows(m).transpose();
    // lambda's geometric stiffness on the second body
    if (l.joint2 > 0)
      addLoopStiffness(R1, w.segment(col, m), d.anchor_J[1].topRows<3>(), d.a_da.bottomRows<3>(),
                       d.a_dq.topRows<3>(), d.H_x.block(0, 0, nv, nv));
    if (impulse_) {
      // the reset map: R_1^T (v_1 - v_2)(q, v+) = 0 (d / d v+ is the rows' d / d a, d / dq turns
      // R_1 as the rows' W), and the impulse Lambda_l in the impulse balance as lambda in the
      // torque balance (its stiffness for impulseJacobians, which sets those rows after this)
      const int vel_row = row + nl_ + nv + nc_, impulse_col = col - 3 * nv + impulseStart() + nv;
      relativeVelocityDq(R1, V, d.anchor_vq[0], d.anchor_vq[1], d.anchor_J[0].bottomRows<3>(),
                         d.anchor_vq[1]);
      d.H_x.block(vel_row, 0, m, nv) = d.anchor_vq[1].topRows(m);
      d.H_w.block(vel_row, impulseStart(), m, nv) = d.anchor_dv[1].topRows(m);
      d.H_w.block(nv + nc_ + nl_, impulse_col, nv, m) = -d.anchor_dv[1].topRows(m).transpose();
      if (l.joint2 > 0)
        addLoopStiffness(R1, w.segment(impulse_col, m), d.anchor_J[1].topRows<3>(),
                         d.a_da.bottomRows<3>(), d.a_dq.topRows<3>(), d.impulse_stiffness);
    }
    row += m;
    col += m;
  }
}

void InverseDynamicsStageModel::addLoopStiffness(
    const Eigen::Matrix3d& R1, const Eigen::Ref<const Eigen::VectorXd>& f,
    const Eigen::Ref<const Eigen::MatrixXd>& J2_lin,
    const Eigen::Ref<const Eigen::MatrixXd>& relative_ang, Eigen::Ref<Eigen::MatrixXd> scratch,
    Eigen::Ref<Eigen::MatrixXd> target) {
  Eigen::Vector3d force = Eigen::Vector3d::Zero();
  force.head(f.size()) = f;
  scratch.noalias() = pinocchio::skew(Eigen::Vector3d(R1 * force)) * relative_ang;
  target.noalias() -= J2_lin.transpose() * scratch;
}

void InverseDynamicsStageModel::relativeVelocityDq(const Eigen::Matrix3d& R1,
                                                   const Eigen::Vector3d& V,
                                                   Eigen::Ref<Eigen::MatrixXd> dv1,
                                                   const Eigen::Ref<const Eigen::MatrixXd>& dv2,
                                                   const Eigen::Ref<const Eigen::MatrixXd>& J1_ang,
                                                   Eigen::Ref<Eigen::MatrixXd> out) {
  dv1 -= dv2;
  out.noalias() = R1.transpose() * dv1;
  out.noalias() += pinocchio::skew(Eigen::Vector3d(R1.transpose() * V)) * R1.transpose() * J1_ang;
}

// e_E = T(q', v') - T(q, v_s) - dt v_m^T tau_eff (docs/estimation.md, "Energy observations"):
// q' before w_q, v_s the step's start (v, or v+ after a touchdown), tau_eff the logged torque net
// of the actuator terms; e and the contact forces are not in it, so the row prices their work.
void InverseDynamicsStageModel::energyRow(InverseDynamicsStageData& d,
                                          const Eigen::Ref<const Eigen::VectorXd>& x,
                                          const Eigen::Ref<const Eigen::VectorXd>& w) const {
  const pinocchio::Model& working = d.work->inertias.model;
  MultibodyStageData::EnergyScratch& s = *d.energy;
  const auto v_start = startVelocity(x, w);
  const double T_next = mechanicalEnergy(working, s.pin, d.q_next, d.v_next);
  const double T = mechanicalEnergy(working, s.pin, x.head(working.nq), v_start);
  s.v_mid = 0.5 * (v_start + d.v_next);
  const double white = energy_info_ * (T_next - T - dt_ * s.v_mid.dot(d.tau_eff));
  d.energy_slope = 1;
  d.r(energy_row_) = sensors_->loss == RobustLoss::None
                         ? white
                         : robustResidual(sensors_->loss, loss_scale_, white, &d.energy_slope);
}

// With G' = (dt B1)^T dT/dq(x') + dT/dv(x') - dt/2 tau_eff (v' through q' and itself) and
// G_s = -dT/dv(x_s) - dt/2 tau_eff + dt dP/dv_s (P = v_m^T E (b + f(v_s)) at fixed v_m):
// de/dq = A1^T dT/dq(x') - dT/dq(x), de/dv_s = G' + G_s, de/da = dt G', and d/dtheta the energy
// regressors' difference through dpi/dtheta, the rotors' 1/2 I_a (v'^2 - v_s^2) and dt dP/dtheta.
void InverseDynamicsStageModel::energyJacobians(
    InverseDynamicsStageData& d, const Eigen::Ref<const Eigen::VectorXd>& x,
    const Eigen::Ref<const Eigen::VectorXd>& w,
    const Eigen::Ref<const Eigen::VectorXd>& theta) const {
  const pinocchio::Model& working = d.work->inertias.model;
  MultibodyStageData::EnergyScratch& s = *d.energy;
  const int nv = working.nv, nx = ndx(), nw_ = nw();
  const auto q = x.head(working.nq);
  const auto v_start = startVelocity(x, w);
  energyGradient(working, s, d.q_next, d.v_next, s.grad_q_next, s.grad_v_next);
  energyGradient(working, s, q, v_start, s.grad_q, s.grad_v);
  s.v_mid = 0.5 * (v_start + d.v_next);
  s.dp_dv.setZero();
  if (actuators_)
    actuators_->power(theta.tail(actuators_->numParameters()), v_start, s.v_mid, s.dp_dtheta_act,
                      s.dp_dv);
  s.grad_v_next -= 0.5 * dt_ * d.tau_eff;
  s.grad_v_next.noalias() += dt_ * d.B1.transpose() * s.grad_q_next;  // G'
  s.grad_v = -s.grad_v - 0.5 * dt_ * d.tau_eff + dt_ * s.dp_dv;       // G_s
  Eigen::VectorXd& rows = d.energy_rows;
  rows.setZero();
  rows.head(nv).noalias() = d.A1.transpose() * s.grad_q_next;
  rows.head(nv) -= s.grad_q;
  const int vs_col = impulse_ ? nx + impulseStart() : nv;
  rows.segment(vs_col, nv) = s.grad_v_next + s.grad_v;
  rows.segment(nx + nv, nv) = dt_ * s.grad_v_next;
  // dpi/dtheta at this theta: calcDiff's parameter Jacobian filled it
  Eigen::Map<Eigen::RowVectorXd> rt(rows.data() + nx + nw_, np());
  addEnergyParameterTerms(dynamics_->regressor(), actuators_.get(), s, q, v_start, d.q_next,
                          d.v_next, d.work->regressor.dpi_dtheta, theta, dt_, rt);
  rows *= energy_info_ * d.energy_slope;
  d.R_x.row(energy_row_) = rows.head(nx).transpose();
  d.R_w.row(energy_row_) = rows.segment(nx, nw_).transpose();
  d.R_theta.row(energy_row_) = rows.tail(np()).transpose();
}

}  // namespace heft::estimation
