#pragma once
/// \file The stage of a robot in one contact phase: semi-implicit Euler of the parametrized forward
/// dynamics (no contact: a fixed-base arm, a body in flight) or rigid contact dynamics (the feet in
/// contact during the phase), with the logged joint torque as input; residuals of the joint
/// encoders, the IMU (gyro, orientation) and motion capture (pose of a tracked frame).
///
///   a   = FD(q, v, tau_k + w_tau; theta)  or  a = CD(q, v, tau_k + w_tau; theta)
///   v'  = v + dt a,   q' = q ⊕ dt v'
///   x_{k+1} = (q' ⊕ w_q, v')
///
/// The process noise w = (w_q, w_tau) is a generalized force w_tau (the torque sensor's noise on
/// the joints, unmodelled external forces on a floating base) plus a small configuration noise w_q
/// (discretization). Noise in torque space rather than velocity space matters: the velocity
/// noise dt M(q; theta)^{-1} w_tau depends on theta, and a constant velocity noise biased the mass
/// of a MuJoCo pendulum by 14 % (docs/estimation.md).
///
/// Residual rows, each whitened by its standard deviation (a sensor absent at a knot keeps its rows
/// with zero weight, so that every stage of a horizon has the same size):
///   [ w_q / s ; w_tau / s                     (running stages)
///     (q_j - z_q) / s                         (encoders)
///     (v_j - z_v) / s                         (logged joint velocities, optional)
///     (R_bi^T omega_b - z_gyro) / s           (IMU gyro; IMU frame on the floating base)
///     log3(Z_imu^T R_wb R_bi) / s             (IMU orientation)
///       an IMU on another body (a humanoid's torso): omega_i(q, v), the frame's own angular
///       velocity in its axes, and log3(Z_imu^T R_wi(q)), through the joints between base and IMU
///       (Pinocchio's frame velocity derivatives and frame Jacobian); no accelerometer rows then
///     (R_bi^T (acc_b - R_wb^T g) - z_acc) / s (IMU accelerometer, running stages: the specific
///       force at the IMU, acc_b = a_lin + alpha x p + omega x (v_lin + omega x p) with the
///       stage's base acceleration a (after the impulse, if any) and p the IMU's position)
///     (p_wf - z_p) / s ; log3(Z_m^T R_wf) / s (motion capture of a frame on the floating base)
///     e_E / s                                 (energy observation, running stages, optional) ]
/// The energy observation (bayesian-sysid eq. 63) balances the step's change of mechanical energy
/// T = K + U (at theta, armature included) against the logged torque's work net of the actuator
/// terms' dissipation, with the midpoint velocity v_m = (v_s + v') / 2:
///   e_E = T(q' , v') - T(q, v_s) - dt v_m^T (tau_k - E (b + f_v v_s + f_c tanh(r v_s))),
/// q' = q ⊕ dt v' before w_q. The dynamics make it the work of w_tau plus the integrator's
/// O(dt^2) error, so the row prices the process noise's work: the energy a wrong friction or
/// inertia would need the noise to supply. v_s (after an impulse) excludes the touchdown's loss;
/// rigid contacts do no work at rest; contacts implicit are refused (their forces at a distance
/// do). Its Jacobians by the chain rule through the step (eqs. 65-66), with dT/dq = sum_k (I_k
/// v_k)^T dv_k/dq + g(q), dT/dv = sum_k (I_k v_k)^T J_k + I_a v (eq. 70, LOCAL body velocities) and
/// dT/dtheta_S from the energy regressors (eq. 69).
/// Actuator terms (optional, ActuatorTermsModel): theta = [theta_S; theta_act]; the dynamics take
/// tau_eff = tau_k + w_tau - E (b + f_v v_s + f_c tanh(r v_s)) at the velocity v_s the step starts
/// from (v^+ after a touchdown), and the armature I_a on the working models' diagonal of M
/// (forward, contact and impulse dynamics alike: Pinocchio's ABA, CRBA and their derivatives
/// include model.armature). With K = da/dtau:
///   da/db_j = -K e_j,  da/dlog f_v = -K e_j f_v v_j,  da/dlog f_c = -K e_j f_c tanh(r v_j),
///   da/dlog I_a = -K e_j I_a a_j,  da/dv_s += -K E diag(f_v + f_c r (1 - tanh^2)) E^T,
///   dv^+/dlog I_a = -K_imp e_j I_a (v^+_j - v^-_j)  (dynamics::ImpulseDynamicsData).
/// Contact-implicit (PRIME, dynamics::SmoothedContactModel): no contact set and no reset map;
/// v' is the smoothed contact step's solution, through which every contact point may touch the
/// floor, and impulses at touchdown come out of the same step:
///   v'  = V+(q, v, tau_k + w_tau - E(b + f_v v + f_c tanh(r v)); theta_S),   q' = q ⊕ dt v',
/// with dv'/d(q, v, tau, theta_S) from the implicit function theorem (eq. 34); the accelerometer
/// reads a = (v' - v) / dt. Armature is not among its terms (an InputError).
/// Touchdown: a stage whose contact set closes a contact that was open at the previous knot may
/// carry the reset map of that set (dynamics::ImpulseDynamics): v^+ = IMPULSE(q, v; theta) first,
/// then the step above from (q, v^+), all within the stage (every stage keeps the same size):
///   v'  = v^+ + dt a(q, v^+, tau_k + w_tau; theta),   q' = q ⊕ dt v'.
#include <memory>
#include <vector>

#include <Eigen/Core>
#include <Eigen/Geometry>

#include "heft/common/robust_loss.hpp"
#include "heft/dynamics/contact_dynamics.hpp"
#include "heft/dynamics/energy.hpp"
#include "heft/dynamics/forward_dynamics.hpp"
#include "heft/dynamics/impulse_dynamics.hpp"
#include "heft/dynamics/smoothed_contact.hpp"
#include "heft/estimation/actuator_terms.hpp"
#include "heft/estimation/stage.hpp"
#include "heft/estimation/state.hpp"

namespace heft::estimation {

/// Process-noise standard deviations shared by every stage of a horizon.
struct MultibodyNoise {
  Eigen::VectorXd configuration;      ///< nv: std of w_q per step [rad, m]
  Eigen::VectorXd generalized_force;  ///< nv: std of w_tau [N m, N]
  /// Throws InputError naming the field.
  void validate(int ndx) const;
};

/// Which sensors a horizon has, and their noise. Frames are Pinocchio frame indices; 0 = absent.
struct MultibodySensors {
  std::vector<pinocchio::JointIndex> encoders;  ///< joints with nq = nv = 1
  bool joint_velocities = false;                ///< logged joint velocities as measurements
  pinocchio::FrameIndex imu_frame = 0;          ///< any frame (accelerometer: on the free flyer)
  pinocchio::FrameIndex mocap_frame = 0;        ///< on joint 1 (a free flyer)
  double encoder_std = 1e-3;                    ///< [rad] or [m]
  double joint_velocity_std = 1e-2;             ///< [rad/s] or [m/s]
  double gyro_std = 5e-3;                       ///< [rad/s]
  double imu_orientation_std = 5e-3;            ///< [rad]
  bool accelerometer = false;        ///< IMU accelerometer rows (needs imu_frame on the free flyer)
  double accelerometer_std = 0.1;    ///< [m/s^2] (noise and an uncalibrated bias)
  double mocap_position_std = 1e-3;  ///< [m]
  double mocap_orientation_std = 5e-3;  ///< [rad]
  /// Energy observations (file comment): one row per running stage. Not with contacts implicit.
  bool energy = false;
  double energy_std = 1e-3;  ///< [J] per step
  /// A robust loss on every sensor row (heft/common/robust_loss.hpp; the process-noise rows stay
  /// quadratic): a glitch of the motion capture, a spike of an encoder, a saturated IMU sample
  /// costs k |r| (Huber) or k^2 log|r| (Cauchy) instead of r^2. Per scalar row, whitened.
  RobustLoss loss = RobustLoss::None;
  double loss_scale = 0;  ///< k in units of the row's std; 0: defaultLossScale(loss)
};

/// One knot's data: what was measured and applied at t_k.
struct MultibodyMeasurement {
  Eigen::VectorXd tau;      ///< nv generalized force over [t_k, t_k + dt) (running stages)
  Eigen::VectorXd joint_q;  ///< encoder readings, one per MultibodySensors::encoders
  Eigen::VectorXd joint_v;  ///< joint velocities (when MultibodySensors::joint_velocities)
  bool has_gyro = false;
  Eigen::Vector3d gyro = Eigen::Vector3d::Zero();  ///< [rad/s], IMU frame
  bool has_imu_orientation = false;
  Eigen::Quaterniond imu_orientation = Eigen::Quaterniond::Identity();  ///< IMU-to-world
  bool has_accel = false;
  Eigen::Vector3d accel = Eigen::Vector3d::Zero();  ///< specific force [m/s^2], IMU frame
  bool has_mocap = false;
  Eigen::Vector3d mocap_position = Eigen::Vector3d::Zero();               ///< world [m]
  Eigen::Quaterniond mocap_orientation = Eigen::Quaterniond::Identity();  ///< frame-to-world
};

struct MultibodyStageData;

class MultibodyStageModel final : public StageModel {
 public:
  /// \param dynamics parametrized forward dynamics (S, parametrization), shared by every stage.
  /// \param contact the contact set of this stage's phase, or null for free dynamics; its model,
  ///        S and parametrization must be the dynamics'.
  /// \param dt step [s] (running stages); ignored for a terminal stage.
  /// \param terminal true: no dynamics, no w (the last knot).
  /// \param impulse the reset map applied at the start of the stage (a touchdown), or null; only
  ///        with a contact set; its model, S and parametrization must be the dynamics'.
  /// \param actuators the joint-side terms of theta's tail (file comment), or null: theta =
  ///        theta_S.
  /// \param smoothed contact-implicit dynamics (file comment) in place of `contact` and `impulse`
  ///        (both null then), or null; its robot, S and parametrization must be the dynamics'.
  /// \throws InputError naming the field on a size or value that does not fit.
  MultibodyStageModel(std::shared_ptr<const dynamics::ForwardDynamicsModel> dynamics,
                      std::shared_ptr<const dynamics::ContactDynamicsModel> contact,
                      std::shared_ptr<const MultibodyState> state,
                      std::shared_ptr<const MultibodySensors> sensors, const MultibodyNoise& noise,
                      MultibodyMeasurement measurement, double dt, bool terminal,
                      std::shared_ptr<const dynamics::ImpulseDynamicsModel> impulse = nullptr,
                      std::shared_ptr<const ActuatorTermsModel> actuators = nullptr,
                      std::shared_ptr<const dynamics::SmoothedContactModel> smoothed = nullptr);

  std::unique_ptr<StageData> createData() const override;
  /// The dynamics workspaces (Pinocchio data, constraint Cholesky, regressor) come from
  /// `workspace`, one per dynamics model: calcDiff recomputes the dynamics from its arguments.
  std::unique_ptr<StageData> createDataSharing(StageWorkspace& workspace) const override;
  void calc(StageData& data, const Eigen::Ref<const Eigen::VectorXd>& x,
            const Eigen::Ref<const Eigen::VectorXd>& w,
            const Eigen::Ref<const Eigen::VectorXd>& theta) const override;
  void calcDiff(StageData& data, const Eigen::Ref<const Eigen::VectorXd>& x,
                const Eigen::Ref<const Eigen::VectorXd>& w,
                const Eigen::Ref<const Eigen::VectorXd>& theta) const override;
  /// The rows' structure: the process-noise rows are diagonal in w and zero in x and theta; of
  /// the sensor rows only the accelerometer's depend on w and theta.
  void gaussNewton(const StageData& data, GaussNewtonTerms& out) const override;
  void linearResidual(const StageData& data, const Eigen::Ref<const Eigen::VectorXd>& dx,
                      const Eigen::Ref<const Eigen::VectorXd>& dw,
                      const Eigen::Ref<const Eigen::VectorXd>& dtheta,
                      Eigen::Ref<Eigen::VectorXd> e) const override;

  const MultibodyMeasurement& measurement() const { return measurement_; }
  const dynamics::ContactDynamicsModel* contact() const { return contact_.get(); }
  const dynamics::ImpulseDynamicsModel* impulse() const { return impulse_.get(); }
  const ActuatorTermsModel* actuators() const { return actuators_.get(); }
  const dynamics::SmoothedContactModel* smoothed() const { return smoothed_.get(); }
  double dt() const { return dt_; }
  /// 1 / sigma of w = (w_q, w_tau) at this stage (its process-noise rows' weights), ndx.
  const Eigen::VectorXd& processInfo() const { return process_info_; }

 private:
  friend struct MultibodyStageData;
  void validateContactModels(bool terminal) const;  // constructor: the models beside dynamics_
  // Sensor rows of the residual at x (no dynamics).
  void sensorResiduals(StageData& data, const Eigen::Ref<const Eigen::VectorXd>& x) const;
  void sensorJacobians(StageData& data, const Eigen::Ref<const Eigen::VectorXd>& x) const;
  // Writes theta_act's armature into the working models of the data's dynamics workspaces (shared
  // between stages: every calc and calcDiff writes it before its dynamics call).
  void applyArmature(MultibodyStageData& data,
                     const Eigen::Ref<const Eigen::VectorXd>& theta) const;
  // The contact-implicit step's derivatives, chained through the actuator terms, into dv_dx,
  // dv_dw, dv_dtheta and the accelerometer's da_dx, da_dtheta (calcDiff).
  void chainSmoothedDerivatives(MultibodyStageData& data,
                                const Eigen::Ref<const Eigen::VectorXd>& x,
                                const Eigen::Ref<const Eigen::VectorXd>& theta) const;
  // The dynamics' derivatives chained through v^+ and the actuator terms into da_dx, da_dtheta,
  // dvs_dx, dvs_dtheta (calcDiff).
  void chainDynamicsDerivatives(MultibodyStageData& data,
                                const Eigen::Ref<const Eigen::VectorXd>& x,
                                const Eigen::Ref<const Eigen::VectorXd>& theta) const;

  std::shared_ptr<const dynamics::ForwardDynamicsModel> dynamics_;
  std::shared_ptr<const dynamics::ContactDynamicsModel> contact_;
  std::shared_ptr<const dynamics::ImpulseDynamicsModel> impulse_;
  std::shared_ptr<const MultibodyState> state_;
  std::shared_ptr<const MultibodySensors> sensors_;
  std::shared_ptr<const ActuatorTermsModel> actuators_;
  std::shared_ptr<const dynamics::SmoothedContactModel> smoothed_;
  int num_inertial_ = 0;                ///< 10|S|: theta's head, the dynamics' theta_S
  bool imu_on_base_ = true;             ///< the IMU frame on the free flyer (or no IMU)
  std::vector<int> q_index_, v_index_;  ///< configuration / velocity index of each encoder
  Eigen::VectorXd process_info_;        ///< ndx: 1 / sigma_w
  MultibodyMeasurement measurement_;
  double dt_ = 0;
  // First row of each block (-1: absent).
  int encoder_row_ = 0, velocity_row_ = -1, gyro_row_ = -1, imu_row_ = -1, mocap_row_ = -1,
      accel_row_ = -1, energy_row_ = -1;
  // Weights of this knot (0 where the sensor has no sample).
  double gyro_info_ = 0, imu_info_ = 0, mocap_position_info_ = 0, mocap_orientation_info_ = 0,
         accel_info_ = 0, energy_info_ = 0;
  // Gyro and orientation rows of an IMU on a body other than the base (through the joints).
  void bodyImuResiduals(MultibodyStageData& d, const Eigen::Ref<const Eigen::VectorXd>& x) const;
  void bodyImuJacobians(MultibodyStageData& d, const Eigen::Ref<const Eigen::VectorXd>& x) const;
  // The robust loss on the sensor rows: r (calc) and the Jacobian rows (calcDiff, last).
  void robustResiduals(MultibodyStageData& d) const;
  void robustJacobians(MultibodyStageData& d) const;
  double loss_scale_ = 1;
  // Accelerometer rows at the stage's acceleration (calc / calcDiff after the dynamics).
  void accelerometerResidual(MultibodyStageData& d, const Eigen::Ref<const Eigen::VectorXd>& x,
                             const Eigen::VectorXd& a) const;
  void accelerometerJacobians(MultibodyStageData& d,
                              const Eigen::Ref<const Eigen::VectorXd>& x) const;
  // Energy observation row (calc / calcDiff after the dynamics; running stages).
  void energyResidual(MultibodyStageData& d, const Eigen::Ref<const Eigen::VectorXd>& x,
                      const Eigen::Ref<const Eigen::VectorXd>& w) const;
  void energyJacobians(MultibodyStageData& d, const Eigen::Ref<const Eigen::VectorXd>& x,
                       const Eigen::Ref<const Eigen::VectorXd>& w,
                       const Eigen::Ref<const Eigen::VectorXd>& theta) const;
  // The working model (S at pi(theta), armature) the last dynamics call left in d's workspace.
  const pinocchio::Model& workingModel(const MultibodyStageData& d) const;
};

/// Workspaces of MultibodyStageModel.
struct MultibodyStageData final : StageData {
  /// \param workspace null: workspaces of its own; else shared ones from it.
  MultibodyStageData(const MultibodyStageModel& model, StageWorkspace* workspace);
  // Scratch of the dynamics calls, possibly shared with other stages' datas (createDataSharing):
  // read only right after the call that filled it.
  std::shared_ptr<dynamics::ForwardDynamicsData> free;      ///< when the stage has no contact
  std::shared_ptr<dynamics::ContactDynamicsData> contact;   ///< when it has
  std::shared_ptr<dynamics::ImpulseDynamicsData> impulse;   ///< at a touchdown
  std::shared_ptr<dynamics::SmoothedContactData> smoothed;  ///< contact-implicit stages
  Eigen::VectorXd implicit_a;               ///< nv: (v' - v) / dt of a contact-implicit step
  Eigen::VectorXd tau, v_next, q_next, dq;  ///< tau + w_tau, v', q', dt v'
  Eigen::VectorXd v_start;       ///< v^+ at a touchdown, else v: the velocity the step starts from
  Eigen::MatrixXd dv_dx, dq_dx;  ///< nv x ndx
  Eigen::MatrixXd dv_dw, dq_dw;  ///< nv x nv: w.r.t. w_tau
  Eigen::MatrixXd dv_dtheta, dq_dtheta;  ///< nv x np
  Eigen::MatrixXd A1, B1, A2, B2;        ///< nv x nv integrate Jacobians
  // d a / d x and d a / d theta through v^+ too; d v_start / d x and d theta (accelerometer)
  Eigen::MatrixXd da_dx, da_dtheta, dvs_dx, dvs_dtheta;
  Eigen::MatrixXd da_dvs;  ///< nv x nv: d a / d v_start with the friction's share (actuator terms)
  Eigen::Matrix<double, 3, Eigen::Dynamic> acc_dv, acc_da;  ///< 3 x nv
  /// The accelerometer's rows of R_x, R_w, R_theta, transposed: (ndx + nw + np) x 3, contiguous
  /// columns for gaussNewton's rank-one updates.
  Eigen::MatrixXd accel_rows;
  /// An IMU on a body other than the base: kinematics scratch (possibly shared, as the dynamics'),
  /// the frame velocity's derivatives and the frame Jacobian (6 x nv, LOCAL).
  std::shared_ptr<pinocchio::Data> kinematics;
  Eigen::MatrixXd imu_dv_dq, imu_dv_dv, imu_jacobian;
  Eigen::VectorXd a_zero;  ///< nv zeros: the acceleration the kinematics derivatives take
  /// Energy observations: scratch (shared like the kinematics') and the row of R_x, R_w, R_theta
  /// as one contiguous vector (ndx + nw + np), for gaussNewton's rank-one update.
  struct EnergyScratch {
    explicit EnergyScratch(const dynamics::RegressorModel& regressor);
    /// The scratch of `dynamics` (from `workspace`, keyed by it, when given), sized for
    /// `num_actuator_parameters`.
    static std::shared_ptr<EnergyScratch> of(const dynamics::ForwardDynamicsModel& dynamics,
                                             StageWorkspace* workspace,
                                             int num_actuator_parameters);
    pinocchio::Data pin;                       ///< of the working model (the robot's structure)
    dynamics::EnergyData regressors;           ///< Y^K_S + Y^P_S at a point
    Eigen::MatrixXd joint_dv_dq, joint_dv_dv;  ///< 6 x nv: a body's LOCAL velocity derivatives
    Eigen::VectorXd grad_q, grad_v, grad_q_next, grad_v_next;  ///< nv: dT/dq, dT/dv at both ends
    Eigen::VectorXd v_mid, tau_in, dp_dv, dp_dtheta_act, a_zero;
    Eigen::RowVectorXd y_next;  ///< 1 x 10|S|: energy regressors at (q', v')
  };
  std::shared_ptr<EnergyScratch> energy;
  Eigen::VectorXd energy_rows;
  /// d (robust row) / d (whitened row) of every row (1 on the process-noise rows and without a
  /// robust loss): calc's, applied to the Jacobian rows by calcDiff.
  Eigen::VectorXd robust_slope;
};

/// T = K + U of `model` at (q, v) (Pinocchio's energies; K includes the rotors' 1/2 v^T I_a v),
/// on `data`'s kinematics.
double mechanicalEnergy(const pinocchio::Model& model, pinocchio::Data& data,
                        const Eigen::Ref<const Eigen::VectorXd>& q,
                        const Eigen::Ref<const Eigen::VectorXd>& v);
/// dT/dq (tangent) and dT/dv at (q, v), on the scratch's data (docs/estimation.md, "Energy
/// observations").
void energyGradient(const pinocchio::Model& model, MultibodyStageData::EnergyScratch& s,
                    const Eigen::Ref<const Eigen::VectorXd>& q,
                    const Eigen::Ref<const Eigen::VectorXd>& v, Eigen::VectorXd& grad_q,
                    Eigen::VectorXd& grad_v);
/// Adds e_E's parameter terms to `row` (1 x np): the energy regressors' difference between
/// (q', v') and (q, v_s) through dpi/dtheta (eq. 69), and with actuator terms dt dP/dtheta_act
/// (s.dp_dtheta_act, from ActuatorTermsModel::power) and the rotors' 1/2 I_a (v'^2 - v_s^2).
void addEnergyParameterTerms(const dynamics::RegressorModel& regressor,
                             const ActuatorTermsModel* actuators,
                             MultibodyStageData::EnergyScratch& s,
                             const Eigen::Ref<const Eigen::VectorXd>& q,
                             const Eigen::Ref<const Eigen::VectorXd>& v_start,
                             const Eigen::Ref<const Eigen::VectorXd>& q_next,
                             const Eigen::Ref<const Eigen::VectorXd>& v_next,
                             const Eigen::MatrixXd& dpi_dtheta,
                             const Eigen::Ref<const Eigen::VectorXd>& theta, double dt,
                             Eigen::Ref<Eigen::RowVectorXd, 0, Eigen::InnerStride<>> row);

}  // namespace heft::estimation
