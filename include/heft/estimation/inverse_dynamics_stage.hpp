#pragma once
/// \file The inverse-dynamics stage (bayesian-sysid paper, secs. V and VIII): the acceleration is a
/// decision and the dynamics an equality row of the stage, eliminated by the solver on the
/// nullspace of its decision Jacobian (eqs. 72-79), instead of the forward dynamics'
/// a = FD(q, v, tau; theta) inside the step.
///
///   w   = (w_q, a, e, lambda[, v+, Lambda])              (nv each; lambda: nc contact forces)
///   v'  = v + dt a,   q' = q ⊕ dt v',   x_{k+1} = (q' ⊕ w_q, v')
///   h   = [ RNEA(q, v, a; theta) - J_c^T lambda - tau_eff(v; theta_act) - e     (nv rows, N m)
///           a_c(q, v, a) + K_d v_c(q, v) ]                                      (nc rows)
///   tau_eff = tau_k - E (b + f_v v + f_c tanh(r v))    (ActuatorTermsModel; armature in the RNEA)
///   r   = [ w_q / s_q ; e / s_tau ; the knot's sensor rows ]
///
/// The accelerometer of an IMU on the floating base reads the base's acceleration directly from
/// the decision a (its specific force at the IMU, as MultibodyStageModel's rows):
///   (R_bi^T (acc_b - R_wb^T g) - z_acc) / s,  acc_b = a_lin + alpha x p + omega x (v_lin + omega x
///   p).
///
/// Contacts (a rigid contact set, dynamics::ContactDynamicsModel's specs and Baumgarte K_d): lambda
/// is each contact's force (and moment, 6D) in its frame's own axes (LOCAL), so that the RNEA with
/// these external forces and its derivatives (which hold forces fixed in the joints' frames)
/// give dh/dq exactly (the bayesian-sysid paper's eqs. 29-32: no geometric-stiffness term for
/// local wrenches); a_c is a point contact's classical acceleration, a flat contact's spatial
/// acceleration, and v_c its velocity, all in the contact frame (Pinocchio's LOCAL frame
/// derivatives, eqs. 27-28 for a bilateral contact). A point contact's row is the forward
/// stage's (Pinocchio's LOCAL_WORLD_ALIGNED classical acceleration, rotated); a flat one's differs
/// from it by velocity products that vanish when the sole does not move.
///
/// Touchdown (`impulse`, the knot's contact set when it holds a contact the previous knot's did
/// not; the paper's reset map, eqs. 9 and 11 at zero restitution, with the impulses as decisions):
/// w gains the post-impact velocity
/// v+, the contacts' impulses Lambda (in their frames' axes, as lambda) and the loops' impulses
/// Lambda_l (as the loops' lambda), and h the rows of impulse dynamics with zero restitution,
///   M(q; theta) (v+ - v) - J_c^T Lambda - J_l^T Lambda_l = 0   (nv rows),
///   v_c(q, v+) = 0   (nc rows),   [R_1^T (v_1 - v_2)](q, v+) = 0   (m rows per loop),
/// and the step starts from v+ instead of v: v' = v+ + dt a, the RNEA, the friction and the
/// contact and loop rows at (q, v+). The forward stage's touchdown (IMPULSE(q, v; theta) inside
/// the step) is the same map without loops, solved there and an equality here.
///
/// Closed loops (model::LoopClosure, the paper's eqs. 16, 20 and 22 for a point anchor): m more
/// rows and m more decisions per loop after the contacts' (m = 3, or 2 for a planar loop). The
/// force lambda_k acts on the first anchor in that anchor frame's axes and, opposite, on the second
/// anchor; the rows are the anchors' relative classical acceleration with a Baumgarte term on
/// velocity and position (the position drifts otherwise: a passive joint has no encoder to hold
/// it), in the first anchor's axes (dual to lambda, so d h / d lambda is minus the rows' J^T):
///   [R_1^T (a_1 - a_2 + K_d (v_1 - v_2) + K_p (p_1 - p_2))]_(first m) = 0.
/// The force on the second body turns with the loop's relative rotation: the RNEA's derivatives
/// hold it fixed in the second joint's frame, so dh/dq gets the geometric-stiffness term of the
/// paper's eq. 31, -J_2^T [R_1 lambda]x (J_1,ang - J_2,ang) (world-aligned Jacobians).
///
/// Projected process noise (`projection`, the paper's eqs. 36-37): with a contact set the
/// configuration noise moves the state only along the contacts' dynamically consistent nullspace,
///   x_{k+1} = (q' ⊕ N(q; theta) w_q, v'),   N = I - M^{-1} J^T (J M^{-1} J^T)^{-1} J,
/// which is impulse dynamics with zero restitution applied to w_q (dynamics::ImpulseDynamicsModel
/// of the same contacts: N w_q = v^+(q, v^- = w_q)), so Pinocchio's impulse derivatives give
/// dN w_q / dq, N itself and d / dtheta (N depends on the inertias and the armature). With closed
/// loops (`project_on_loops`) J holds the loops' rows under the contacts' and N w_q is the stage's
/// own KKT solve with implicit-function derivatives (the impulse model knows contacts with the
/// world only); `projection` is then null.
///
/// e is the generalized-force noise of the forward-dynamics stage (MultibodyStageModel's w_tau):
/// on the same knots, priors and sensors the two formulations describe the same trajectories with
/// the same cost, so their MAP estimates coincide; they differ in the path of the solver. Here the
/// step is linear in the decisions and the nonlinearity sits in h: an initial guess from the
/// encoders' differences satisfies the dynamics exactly (e = the torque the guess needs), and
/// theta enters through the RNEA's regressor, linear in the inertias, instead of through M^{-1}.
///
/// The sensor rows are those of MultibodyStageModel's terminal form at the same knot (encoders,
/// joint velocities, an IMU's gyro and orientation, motion capture, a robust loss), with the
/// accelerometer's rows above in their place. With energy observations (MultibodySensors::energy)
/// the last row of r is the forward stage's e_E, on this step: T(q', v') - T(q, v_s) - dt v_m^T
/// tau_eff, whitened by the energy std.
#include <memory>
#include <vector>

#include <Eigen/Core>
#include <Eigen/LU>

#include "heft/dynamics/contact_dynamics.hpp"
#include "heft/dynamics/forward_dynamics.hpp"
#include "heft/dynamics/impulse_dynamics.hpp"
#include "heft/estimation/actuator_terms.hpp"
#include "heft/estimation/multibody_stage.hpp"
#include "heft/estimation/stage.hpp"
#include "heft/estimation/state.hpp"
#include "heft/model/model.hpp"

namespace heft::estimation {

struct InverseDynamicsStageData;

/// Baumgarte gains of the loop rows.
struct LoopGains {
  double kp = 100;  ///< [1/s^2]
  double kd = 20;   ///< [1/s]
};

class InverseDynamicsStageModel final : public StageModel {
 public:
  /// Arguments as MultibodyStageModel's running stage: `noise`'s generalized_force is the std of
  /// e, its configuration that of w_q; `contact` the knot's rigid contact set (its specs and
  /// Baumgarte K_d; K_p must be 0) or null; `loops` the robot's closed loops (their anchor
  /// frames must be frames of the dynamics model).
  /// \throws InputError naming the field on a size or value that does not fit.
  InverseDynamicsStageModel(
      std::shared_ptr<const dynamics::ForwardDynamicsModel> dynamics,
      std::shared_ptr<const MultibodyState> state, std::shared_ptr<const MultibodySensors> sensors,
      const MultibodyNoise& noise, MultibodyMeasurement measurement, double dt,
      std::shared_ptr<const ActuatorTermsModel> actuators = nullptr,
      std::shared_ptr<const dynamics::ContactDynamicsModel> contact = nullptr,
      std::vector<model::LoopClosure> loops = {}, LoopGains loop_gains = {},
      std::shared_ptr<const dynamics::ImpulseDynamicsModel> projection = nullptr,
      std::shared_ptr<const dynamics::ImpulseDynamicsModel> impulse = nullptr,
      bool project_on_loops = false);

  std::unique_ptr<StageData> createData() const override;
  /// The RNEA workspace (parametrized model, Pinocchio data, regressor) comes from `workspace`,
  /// keyed by the dynamics model, as MultibodyStageModel's.
  std::unique_ptr<StageData> createDataSharing(StageWorkspace& workspace) const override;
  void calc(StageData& data, const Eigen::Ref<const Eigen::VectorXd>& x,
            const Eigen::Ref<const Eigen::VectorXd>& w,
            const Eigen::Ref<const Eigen::VectorXd>& theta) const override;
  void calcDiff(StageData& data, const Eigen::Ref<const Eigen::VectorXd>& x,
                const Eigen::Ref<const Eigen::VectorXd>& w,
                const Eigen::Ref<const Eigen::VectorXd>& theta) const override;
  /// The process-noise rows are diagonal in w; the sensor rows' terms are the sensor stage's.
  void gaussNewton(const StageData& data, GaussNewtonTerms& out) const override;
  void linearResidual(const StageData& data, const Eigen::Ref<const Eigen::VectorXd>& dx,
                      const Eigen::Ref<const Eigen::VectorXd>& dw,
                      const Eigen::Ref<const Eigen::VectorXd>& dtheta,
                      Eigen::Ref<Eigen::VectorXd> e) const override;

  const MultibodyMeasurement& measurement() const { return sensors_stage_->measurement(); }
  double dt() const { return dt_; }
  const ActuatorTermsModel* actuators() const { return actuators_.get(); }
  const dynamics::ContactDynamicsModel* contact() const { return contact_.get(); }
  int nc() const { return nc_; }  ///< contact force coordinates (after e in w)
  /// Constraint force coordinates: the contacts' then the loops' (from w's 3 nv).
  int numForces() const { return nc_ + nl_; }
  /// A touchdown's stage: v+ at w's impulseStart(), then the impulses Lambda (nc, then nl).
  bool hasImpulse() const { return impulse_ != nullptr; }
  int impulseStart() const { return 3 * dynamics_->nv() + nc_ + nl_; }
  const std::vector<model::LoopClosure>& loops() const { return loops_; }

 private:
  InverseDynamicsStageModel(std::shared_ptr<const MultibodyStageModel> sensor_stage,
                            std::shared_ptr<const MultibodySensors> sensors,
                            std::shared_ptr<const dynamics::ForwardDynamicsModel> dynamics,
                            const std::shared_ptr<const MultibodyState>& state,
                            const MultibodyNoise& noise, Eigen::VectorXd tau, double dt,
                            std::shared_ptr<const ActuatorTermsModel> actuators,
                            std::shared_ptr<const dynamics::ContactDynamicsModel> contact,
                            std::vector<model::LoopClosure> loops, LoopGains loop_gains,
                            std::shared_ptr<const dynamics::ImpulseDynamicsModel> projection,
                            std::shared_ptr<const dynamics::ImpulseDynamicsModel> impulse,
                            bool project_on_loops);
  friend struct InverseDynamicsStageData;
  bool hasForces() const { return contact_ || !loops_.empty(); }
  // The shared workspace's model at theta (S's inertias, the armature) and, with contacts or
  // loops, the forces lambda of w in d.fext: what every RNEA call of calc and calcDiff starts
  // from.
  const pinocchio::Model& workingModel(InverseDynamicsStageData& d,
                                       const Eigen::Ref<const Eigen::VectorXd>& theta,
                                       const Eigen::Ref<const Eigen::VectorXd>& q,
                                       const Eigen::Ref<const Eigen::VectorXd>& w) const;
  // The loops' forces (w's m coordinates per loop from column `col`) on their two bodies, added
  // to fext after the contacts' (the rotations from pin's kinematics at q); their rows (calc) and
  // their Jacobians (calcDiff, after computeForwardKinematicsDerivatives).
  void loopForces(const pinocchio::Model& model, pinocchio::Data& pin,
                  std::vector<pinocchio::Force>& fext, const Eigen::Ref<const Eigen::VectorXd>& q,
                  const Eigen::Ref<const Eigen::VectorXd>& w, int col) const;
  void loopRows(InverseDynamicsStageData& d) const;
  // A loop force f (its first m coordinates, in the first anchor's axes R_1) turns with the loop:
  // -J_2,lin^T [R_1 f]x (J_1 - J_2)_ang added to `target` (nv x nv), the Jacobians world-aligned,
  // `scratch` 3 x nv.
  static void addLoopStiffness(const Eigen::Matrix3d& R1,
                               const Eigen::Ref<const Eigen::VectorXd>& f,
                               const Eigen::Ref<const Eigen::MatrixXd>& J2_lin,
                               const Eigen::Ref<const Eigen::MatrixXd>& relative_ang,
                               Eigen::Ref<Eigen::MatrixXd> scratch,
                               Eigen::Ref<Eigen::MatrixXd> target);
  // d / dq of R_1^T V, V = v_1 - v_2 the anchors' world-axes velocity: R_1^T (dv_1 - dv_2) +
  // [R_1^T V]x R_1^T J_1,ang into `out` (3 x nv; dv_1 becomes dv_1 - dv_2, `out` may be dv_2).
  static void relativeVelocityDq(const Eigen::Matrix3d& R1, const Eigen::Vector3d& V,
                                 Eigen::Ref<Eigen::MatrixXd> dv1,
                                 const Eigen::Ref<const Eigen::MatrixXd>& dv2,
                                 const Eigen::Ref<const Eigen::MatrixXd>& J1_ang,
                                 Eigen::Ref<Eigen::MatrixXd> out);
  void loopJacobians(InverseDynamicsStageData& d, const Eigen::Ref<const Eigen::VectorXd>& w) const;
  // What moves the configuration after q': w_q, or N w_q (calc's) when projected.
  Eigen::Ref<const Eigen::VectorXd> configurationNoise(
      const InverseDynamicsStageData& d, const Eigen::Ref<const Eigen::VectorXd>& w) const;
  // F's terms of the projected configuration noise (calcDiff, after A2 and B2 at N w_q).
  void projectionJacobians(InverseDynamicsStageData& d, const Eigen::Ref<const Eigen::VectorXd>& x,
                           const Eigen::Ref<const Eigen::VectorXd>& w,
                           const Eigen::Ref<const Eigen::VectorXd>& theta) const;
  // With loops: N w_q on the contacts' and the loops' rows together (calc, on the working model
  // at theta), and its F terms (calcDiff, as projectionJacobians'), in
  // inverse_dynamics_projection.cpp.
  void loopProjection(InverseDynamicsStageData& d, const Eigen::Ref<const Eigen::VectorXd>& q,
                      const Eigen::Ref<const Eigen::VectorXd>& w_q) const;
  void loopProjectionJacobians(InverseDynamicsStageData& d,
                               const Eigen::Ref<const Eigen::VectorXd>& x,
                               const Eigen::Ref<const Eigen::VectorXd>& w,
                               const Eigen::Ref<const Eigen::VectorXd>& theta) const;
  // The contact rows a_c + K_d v_c into d.h (calc, after forwardKinematics at (q, v, a)) or
  // their Jacobians into d.H_x, d.H_w (calcDiff, after the RNEA's derivatives: Pinocchio's data
  // then holds the kinematics at (q, v, a)). loopRows likewise.
  void contactRows(InverseDynamicsStageData& d) const;
  void contactJacobians(InverseDynamicsStageData& d, const Eigen::Ref<const Eigen::VectorXd>& q,
                        const Eigen::Ref<const Eigen::VectorXd>& v,
                        const Eigen::Ref<const Eigen::VectorXd>& a) const;
  // The accelerometer's rows (calc) and Jacobians (calcDiff), robust loss included.
  void accelerometerRows(InverseDynamicsStageData& d, const Eigen::Ref<const Eigen::VectorXd>& x,
                         const Eigen::Ref<const Eigen::VectorXd>& w) const;
  void accelerometerJacobians(InverseDynamicsStageData& d,
                              const Eigen::Ref<const Eigen::VectorXd>& x,
                              const Eigen::Ref<const Eigen::VectorXd>& w) const;
  // fext of the contact forces lambda (from w's column `col`) on their joints, in the joints'
  // frames, into `fext` (zeroed first).
  void contactForces(std::vector<pinocchio::Force>& fext,
                     const Eigen::Ref<const Eigen::VectorXd>& w, int col) const;
  // The velocity the step starts from: x's v, or a touchdown's v+.
  Eigen::Ref<const Eigen::VectorXd> startVelocity(const Eigen::Ref<const Eigen::VectorXd>& x,
                                                  const Eigen::Ref<const Eigen::VectorXd>& w) const;
  // The energy observation's row (calc) and its Jacobian rows (calcDiff, after A1, B1 and the
  // parameter Jacobian).
  void energyRow(InverseDynamicsStageData& d, const Eigen::Ref<const Eigen::VectorXd>& x,
                 const Eigen::Ref<const Eigen::VectorXd>& w) const;
  void energyJacobians(InverseDynamicsStageData& d, const Eigen::Ref<const Eigen::VectorXd>& x,
                       const Eigen::Ref<const Eigen::VectorXd>& w,
                       const Eigen::Ref<const Eigen::VectorXd>& theta) const;
  // A touchdown's impulse rows (calc) and their Jacobians with the step's v-columns moved to v+'s
  // (calcDiff, last).
  void impulseRows(InverseDynamicsStageData& d, const Eigen::Ref<const Eigen::VectorXd>& x,
                   const Eigen::Ref<const Eigen::VectorXd>& w) const;
  void impulseJacobians(InverseDynamicsStageData& d, const Eigen::Ref<const Eigen::VectorXd>& x,
                        const Eigen::Ref<const Eigen::VectorXd>& w,
                        const Eigen::Ref<const Eigen::VectorXd>& theta) const;
  // The parameter rows of a velocity jump's balance M(q; theta) jump (the reset map's and the
  // projection's) into `rows` (nv x np; columns other than the inertias' and the armatures' are
  // left alone); `zero` an nv zero vector.
  void jumpParameterRows(InverseDynamicsStageData& d, const Eigen::Ref<const Eigen::VectorXd>& q,
                         const Eigen::Ref<const Eigen::VectorXd>& jump,
                         const Eigen::Ref<const Eigen::VectorXd>& zero,
                         const Eigen::Ref<const Eigen::VectorXd>& theta,
                         Eigen::Ref<Eigen::MatrixXd> rows) const;

  std::shared_ptr<const dynamics::ForwardDynamicsModel> dynamics_;
  std::shared_ptr<const ActuatorTermsModel> actuators_;
  /// The knot's sensor rows: MultibodyStageModel in its terminal form.
  std::shared_ptr<const MultibodyStageModel> sensors_stage_;
  std::shared_ptr<const MultibodySensors> sensors_;
  int accel_row_ = -1;     ///< first accelerometer row of r (-1: none)
  double accel_info_ = 0;  ///< 1 / sigma, 0 without a sample at this knot
  double loss_scale_ = 1;  ///< the robust loss's k on the accelerometer and energy rows
  int energy_row_ = -1;    ///< the energy observation's row (the last of r), -1: none
  double energy_info_ = 0;
  std::shared_ptr<const dynamics::ContactDynamicsModel> contact_;
  struct ContactFrame {
    pinocchio::FrameIndex frame;
    pinocchio::JointIndex joint;
    pinocchio::SE3 placement;  ///< the frame in its joint
    int dimension;             ///< 3: point, 6: flat
  };
  std::vector<ContactFrame> contact_frames_;
  double damping_ = 0;  ///< K_d [1/s]
  int nc_ = 0;
  std::vector<model::LoopClosure> loops_;
  LoopGains loop_gains_;
  int nl_ = 0;  ///< the loops' rows (and forces)
  /// The contact set's impulse model: w_q projected on its nullspace (eq. 36), or null.
  std::shared_ptr<const dynamics::ImpulseDynamicsModel> projection_;
  /// w_q projected on the nullspace of the loops' and the contacts' rows (heft's own solve).
  bool project_on_loops_ = false;
  /// A touchdown's contact set (the knot's, zero restitution), or null.
  std::shared_ptr<const dynamics::ImpulseDynamicsModel> impulse_;
  Eigen::VectorXd tau_;           ///< nv: the logged generalized force over the step
  Eigen::VectorXd process_info_;  ///< 2 nv: 1 / sigma of w_q and e
  double dt_ = 0;
  int num_inertial_ = 0;
};

struct InverseDynamicsStageData final : StageData {
  InverseDynamicsStageData(const InverseDynamicsStageModel& model,
                           const dynamics::ForwardDynamicsModel& dynamics,
                           StageWorkspace* workspace, std::unique_ptr<StageData> sensors);
  std::unique_ptr<StageData> sensors;  ///< the sensor stage's data (rows after the process rows)
  /// Parametrized model, Pinocchio data and regressor, possibly shared with other stages.
  std::shared_ptr<dynamics::ForwardDynamicsData> work;
  Eigen::VectorXd tau_eff, v_next, q_next, dq;
  Eigen::MatrixXd A1, B1, A2, B2;
  Eigen::MatrixXd minus_identity;  ///< -I: ActuatorTermsModel's derivatives at K = -I are dh's
  /// Contacts: the forces on the joints (njoints), one contact frame's velocity and acceleration
  /// derivatives (6 x nv, LOCAL).
  std::vector<pinocchio::Force> fext;
  Eigen::MatrixXd v_dq, a_dq, a_dv, a_da;
  /// Loops: each anchor's classical-acceleration rows' derivatives (3 x nv) and its
  /// world-aligned Jacobian (6 x nv).
  Eigen::MatrixXd anchor_dq[2], anchor_dv[2], anchor_J[2];
  /// Loops at a touchdown: each anchor's world-axes velocity's d / dq (3 x nv), and the impulses'
  /// geometric stiffness in the impulse balance (nv x nv).
  Eigen::MatrixXd anchor_vq[2], impulse_stiffness;
  /// Projected noise: the impulse model's data and N w_q (what moves the configuration).
  std::unique_ptr<dynamics::ImpulseDynamicsData> projection;
  Eigen::VectorXd projected_noise;
  /// Projected noise on loops: the KKT system [M -G^T; G 0] [u; Lambda] = [M w_q; 0] of the
  /// contacts' and loops' rows G at q, its factorization and the derivative buffers.
  struct LoopProjectionData {
    LoopProjectionData(const pinocchio::Model& model, int rows, int parameters);
    pinocchio::Data pin;
    std::vector<pinocchio::Force> fext;
    Eigen::MatrixXd kkt, G, frame_J, anchor_J[2], anchor_vq[2], v_dq, v_dv;
    Eigen::PartialPivLU<Eigen::MatrixXd> lu;
    Eigen::VectorXd rhs, solution, jump, zero;
    Eigen::MatrixXd dphi_dq, dphi_dtheta, gravity_dq, du, du_dtheta;
  };
  std::unique_ptr<LoopProjectionData> loop_projection;
  /// Touchdown: the impulse rows' own Pinocchio data (the step's keeps its kinematics), their
  /// forces, v+ - v, a zero velocity and the gravity's derivatives.
  std::unique_ptr<pinocchio::Data> impulse_pin;
  std::vector<pinocchio::Force> impulse_fext;
  Eigen::VectorXd velocity_jump, zero_velocity;
  Eigen::MatrixXd gravity_dq;
  Eigen::Vector3d accel_slope = Eigen::Vector3d::Ones();  ///< the robust loss's d r / d r_white
  /// Energy observation: the forward stage's scratch (shared per dynamics model), the row's
  /// Jacobian [x | w | theta] and the robust loss's slope.
  std::shared_ptr<MultibodyStageData::EnergyScratch> energy;
  Eigen::VectorXd energy_rows;
  double energy_slope = 1;
};

}  // namespace heft::estimation
