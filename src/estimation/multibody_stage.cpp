#include "heft/estimation/multibody_stage.hpp"

#include <pinocchio/algorithm/joint-configuration.hpp>
#include <string>

#include "heft/common/error.hpp"

namespace heft::estimation {
namespace {

int residualRows(int ndx, int joints, bool with_velocity, bool terminal) {
  return (terminal ? 0 : ndx) + joints + (with_velocity ? joints : 0);
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
  requirePositive(encoder_position, "encoder_position std");
  requirePositive(encoder_velocity, "encoder_velocity std");
}

MultibodyStageModel::MultibodyStageModel(
    std::shared_ptr<const dynamics::ForwardDynamicsModel> dynamics,
    std::shared_ptr<const MultibodyState> state,
    const std::vector<pinocchio::JointIndex>& measured_joints, const MultibodyNoise& noise,
    MultibodyMeasurement measurement, double dt, bool terminal)
    : StageModel(state ? state->nx() : 1, state ? state->ndx() : 1,
                 terminal ? 0 : (state ? state->ndx() : 1),
                 residualRows(state ? state->ndx() : 0, static_cast<int>(measured_joints.size()),
                              measurement.joint_v.size() > 0, terminal),
                 dynamics ? dynamics->numParameters() : 0, !terminal),
      dynamics_(std::move(dynamics)),
      state_(std::move(state)),
      measurement_(std::move(measurement)),
      dt_(dt) {
  require(dynamics_ != nullptr && state_ != nullptr, "multibody stage", "dynamics and state",
          "null");
  const pinocchio::Model& model = dynamics_->model();
  require(state_->nq() == model.nq && state_->nv() == model.nv, "multibody stage state",
          "the dynamics model's nq, nv",
          std::to_string(state_->nq()) + ", " + std::to_string(state_->nv()));
  noise.validate(ndx());
  const int nj = static_cast<int>(measured_joints.size());
  for (pinocchio::JointIndex j : measured_joints) {
    require(j >= 1 && j < model.joints.size(), "measured joint index",
            "in [1, " + std::to_string(model.joints.size()) + ")", std::to_string(j));
    require(model.joints[j].nq() == 1 && model.joints[j].nv() == 1,
            "measured joint " + model.names[j], "one position and one velocity coordinate",
            std::to_string(model.joints[j].nq()) + " and " + std::to_string(model.joints[j].nv()));
    q_index_.push_back(model.joints[j].idx_q());
    v_index_.push_back(model.joints[j].idx_v());
  }
  require(measurement_.joint_q.size() == nj, "measured joint positions", std::to_string(nj),
          std::to_string(measurement_.joint_q.size()));
  require(measurement_.joint_v.size() == 0 || measurement_.joint_v.size() == nj,
          "measured joint velocities", "0 or " + std::to_string(nj),
          std::to_string(measurement_.joint_v.size()));
  require(measurement_.joint_q.allFinite() && measurement_.joint_v.allFinite(),
          "measured joint positions and velocities", "finite values", "NaN or infinity");
  if (!terminal) {
    requirePositive(dt_, "stage dt", " [s]");
    require(measurement_.tau.size() == model.nv, "stage tau", std::to_string(model.nv) + " (nv)",
            std::to_string(measurement_.tau.size()));
    require(measurement_.tau.allFinite(), "stage tau", "finite values", "NaN or infinity");
  }
  process_info_.resize(ndx());
  process_info_ << noise.configuration.cwiseInverse(), noise.generalized_force.cwiseInverse();
  position_info_ = 1 / noise.encoder_position;
  velocity_info_ = 1 / noise.encoder_velocity;
  nw_rows_ = terminal ? 0 : ndx();
}

MultibodyStageData::MultibodyStageData(const MultibodyStageModel& model,
                                       const dynamics::ForwardDynamicsModel& dyn)
    : StageData(model.nx(), model.ndx(), model.nw(), model.nr(), model.np(), model.hasDynamics()),
      dynamics(dyn) {
  const int nv = dyn.nv(), nq = dyn.nq(), ndx = model.ndx(), np = model.np();
  tau.setZero(nv);
  v_next.setZero(nv);
  dv_dw.setZero(nv, nv);
  dq_dw.setZero(nv, nv);
  q_next.setZero(nq);
  dq.setZero(nv);
  dv_dx.setZero(nv, ndx);
  dq_dx.setZero(nv, ndx);
  dv_dtheta.setZero(nv, np);
  dq_dtheta.setZero(nv, np);
  for (Eigen::MatrixXd* m : {&A1, &B1, &A2, &B2}) m->setZero(nv, nv);
}

std::unique_ptr<StageData> MultibodyStageModel::createData() const {
  return std::make_unique<MultibodyStageData>(*this, *dynamics_);
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
    d.tau = measurement_.tau + w.tail(nv);
    const Eigen::VectorXd& a =
        dynamics::forwardDynamics(*dynamics_, d.dynamics, q, v, d.tau, theta);
    d.v_next = v + dt_ * a;
    d.dq = dt_ * d.v_next;
    pinocchio::integrate(model, q, d.dq, d.q_next);
    pinocchio::integrate(model, d.q_next, w.head(nv), d.xnext.head(nq));
    d.xnext.tail(nv) = d.v_next;
    d.r.head(nw_rows_) = process_info_.cwiseProduct(w);
  }
  const int nj = static_cast<int>(q_index_.size());
  for (int i = 0; i < nj; ++i) {
    d.r(nw_rows_ + i) = position_info_ * (q(q_index_[i]) - measurement_.joint_q(i));
    if (measurement_.joint_v.size() > 0)
      d.r(nw_rows_ + nj + i) = velocity_info_ * (v(v_index_[i]) - measurement_.joint_v(i));
  }
  d.cost = 0.5 * d.r.squaredNorm();
}

void MultibodyStageModel::calcDiff(StageData& base, const Eigen::Ref<const Eigen::VectorXd>& x,
                                   const Eigen::Ref<const Eigen::VectorXd>& w,
                                   const Eigen::Ref<const Eigen::VectorXd>& theta) const {
  auto& d = static_cast<MultibodyStageData&>(base);
  const pinocchio::Model& model = dynamics_->model();
  const int nq = model.nq, nv = model.nv;
  const auto q = x.head(nq);
  const auto v = x.tail(nv);
  const int nj = static_cast<int>(q_index_.size());
  // Encoder rows: constant Jacobians (measured joints are one-dimensional).
  d.R_x.setZero();
  for (int i = 0; i < nj; ++i) {
    d.R_x(nw_rows_ + i, v_index_[i]) = position_info_;
    if (measurement_.joint_v.size() > 0)
      d.R_x(nw_rows_ + nj + i, nv + v_index_[i]) = velocity_info_;
  }
  if (!hasDynamics()) return;
  d.R_w.setZero();
  d.R_w.topRows(nw_rows_).diagonal() = process_info_;

  dynamics::computeForwardDynamicsDerivatives(*dynamics_, d.dynamics, q, v, d.tau, theta);
  const dynamics::ForwardDynamicsData& fd = d.dynamics;
  // v' = v + dt a
  d.dv_dx.leftCols(nv) = dt_ * fd.da_dq;
  d.dv_dx.rightCols(nv) = dt_ * fd.da_dv;
  d.dv_dx.rightCols(nv).diagonal().array() += 1;
  d.dv_dtheta = dt_ * fd.da_dtheta;
  d.dv_dw = dt_ * fd.da_dtau;
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
}

}  // namespace heft::estimation
