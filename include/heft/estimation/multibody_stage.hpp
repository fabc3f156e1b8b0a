#pragma once
/// \file The stage of a robot without contacts (a fixed-base arm, or a floating body in flight):
/// semi-implicit Euler of the parametrized forward dynamics with the logged joint torque as input,
/// joint-encoder residuals.
///
///   a   = FD(q, v, tau_k + w_tau; theta)     (dynamics::forwardDynamics, Pinocchio's ABA)
///   v'  = v + dt a,   q' = q ⊕ dt v'
///   x_{k+1} = (q' ⊕ w_q, v')
///
/// The process noise w = (w_q, w_tau) is a generalized force w_tau (the torque sensor's noise on
/// the joints, unmodelled external forces on a floating base) plus a small configuration noise w_q
/// (discretization). Noise in torque space rather than velocity space matters: the velocity
/// noise dt M(q; theta)^{-1} w_tau depends on theta, and a constant velocity noise biased the mass
/// of a MuJoCo pendulum by 14 % (docs/estimation.md).
///
/// Residual rows, each whitened by its standard deviation:
///   [ w_q / sigma_q ; w_tau / sigma_tau (running stages) ; (q_j - z_q) / sigma_enc ;
///     (v_j - z_v) / sigma_vel (if logged) ]
/// The joints measured must have one configuration and one velocity coordinate (revolute,
/// prismatic); joint j's column is its velocity index.
///
/// Contact phases, impulses, IMU and motion-capture residuals are the next stage types
/// (docs/estimation.md lists what exists).
#include <memory>
#include <vector>

#include <Eigen/Core>

#include "heft/dynamics/forward_dynamics.hpp"
#include "heft/estimation/stage.hpp"
#include "heft/estimation/state.hpp"

namespace heft::estimation {

/// Standard deviations shared by every stage of a horizon.
struct MultibodyNoise {
  Eigen::VectorXd configuration;      ///< nv: std of w_q per step [rad, m]
  Eigen::VectorXd generalized_force;  ///< nv: std of w_tau [N m, N]
  double encoder_position = 1e-3;     ///< [rad] or [m]
  double encoder_velocity = 1e-2;     ///< [rad/s] or [m/s]
  /// Throws InputError naming the field.
  void validate(int ndx) const;
};

/// One knot's data: what was measured and applied at t_k.
struct MultibodyMeasurement {
  Eigen::VectorXd tau;      ///< nv generalized force applied over [t_k, t_k + dt) (running)
  Eigen::VectorXd joint_q;  ///< nj measured positions of the measured joints
  Eigen::VectorXd joint_v;  ///< nj measured velocities, or empty when not logged
};

class MultibodyStageModel final : public StageModel {
 public:
  /// \param dynamics shared by every stage; its model defines q, v.
  /// \param measured_joints Pinocchio joint indices whose encoders are measured (each with
  ///        nq = nv = 1).
  /// \param dt step [s] (running stages); ignored for a terminal stage.
  /// \param terminal true: no dynamics, no w (the last knot).
  /// \throws InputError naming the field on a size or value that does not fit.
  MultibodyStageModel(std::shared_ptr<const dynamics::ForwardDynamicsModel> dynamics,
                      std::shared_ptr<const MultibodyState> state,
                      const std::vector<pinocchio::JointIndex>& measured_joints,
                      const MultibodyNoise& noise, MultibodyMeasurement measurement, double dt,
                      bool terminal);

  std::unique_ptr<StageData> createData() const override;
  void calc(StageData& data, const Eigen::Ref<const Eigen::VectorXd>& x,
            const Eigen::Ref<const Eigen::VectorXd>& w,
            const Eigen::Ref<const Eigen::VectorXd>& theta) const override;
  void calcDiff(StageData& data, const Eigen::Ref<const Eigen::VectorXd>& x,
                const Eigen::Ref<const Eigen::VectorXd>& w,
                const Eigen::Ref<const Eigen::VectorXd>& theta) const override;

  const MultibodyMeasurement& measurement() const { return measurement_; }
  double dt() const { return dt_; }

 private:
  std::shared_ptr<const dynamics::ForwardDynamicsModel> dynamics_;
  std::shared_ptr<const MultibodyState> state_;
  std::vector<int> q_index_, v_index_;  ///< configuration / velocity index of each measured joint
  Eigen::VectorXd process_info_;        ///< ndx: 1 / sigma_w
  double position_info_ = 0, velocity_info_ = 0;
  MultibodyMeasurement measurement_;
  double dt_ = 0;
  int nw_rows_ = 0;  ///< first encoder row
};

/// Workspaces of MultibodyStageModel.
struct MultibodyStageData final : StageData {
  MultibodyStageData(const MultibodyStageModel& model, const dynamics::ForwardDynamicsModel& dyn);
  dynamics::ForwardDynamicsData dynamics;
  Eigen::VectorXd tau, v_next, q_next, dq;  ///< tau + w_tau, v', q', dt v'
  Eigen::MatrixXd dv_dx, dq_dx;             ///< nv x ndx
  Eigen::MatrixXd dv_dw, dq_dw;             ///< nv x nv: w.r.t. w_tau
  Eigen::MatrixXd dv_dtheta, dq_dtheta;     ///< nv x np
  Eigen::MatrixXd A1, B1, A2, B2;           ///< nv x nv integrate Jacobians
};

}  // namespace heft::estimation
