#pragma once
/// \file Motions that keep the robot up: references computed on the NOMINAL model (the controller
/// does not know the payload, friction or model errors, as on a real robot), tracked by joint PD
/// plus a feed-forward from Pinocchio inverse dynamics.
///
/// A reference is computed once for the whole run on the physics grid (inverse kinematics and
/// inverse dynamics per sample), so the simulation loop only evaluates the PD law.
#include <Eigen/Core>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "heft/excite/fourier.hpp"
#include "heft/model/model.hpp"

namespace heft::sim {

/// A joint-space reference on a uniform time grid t_k = k dt, in Pinocchio's convention.
struct Reference {
  double dt = 1e-3;
  Eigen::MatrixXd q;    ///< nq x N
  Eigen::MatrixXd v;    ///< nv x N
  Eigen::MatrixXd a;    ///< nv x N
  Eigen::MatrixXd tau;  ///< nu x N feed-forward torques of the actuated joints (nominal model)
  int samples() const { return static_cast<int>(q.cols()); }
};

/// Base commands given as Bezier curves (spi-active App. A.3: command sequences reparametrized by
/// the control points of a Bezier curve per horizon), the form active exploration designs
/// (heft::sampling::designCommands). After the stance motion's `settle`, consecutive segments of
/// `segment_duration` seconds; in segment s, at u = (t - start) / segment_duration in [0, 1],
///   offset(t) = sum_{i=0..n} C(n, i) u^i (1 - u)^(n - i) P_{s,i},  n = degree,
/// where P_{s,i} is column s (n + 1) + i of `points`, whose rows are the base offsets
/// [x, y, z (m, world), roll, pitch, yaw (rad)]. The first two and the last two control points of
/// each segment are 0, so every segment starts and ends standing at rest (offset and rate 0) and
/// the segments join smoothly. After the last segment the robot stands.
/// A segment may also pronk (spi-active's gait commands: its exploration favours pronking): with
/// hop_flight[s] > 0, whole hops of that flight time (the stance motion's hop_push and
/// hop_clearance) from rest to rest, centred in the segment with at least 0.5 s free at each end,
/// add their height and foot lift to the curves'.
struct BezierCommands {
  static constexpr int kChannels = 6;  ///< x, y, z, roll, pitch, yaw
  int degree = 10;                     ///< spi-active's 10-degree curve
  double segment_duration = 4.0;       ///< [s], spi-active's horizon H
  Eigen::MatrixXd points;              ///< kChannels x segments (degree + 1); empty = none
  Eigen::VectorXd hop_flight;          ///< [s] per segment, 0 = no hops; empty = none
  bool hops() const { return hop_flight.size() > 0 && hop_flight.maxCoeff() > 0; }
  int segments() const { return static_cast<int>(points.cols()) / (degree + 1); }
  double duration() const { return segments() * segment_duration; }
  /// The offsets at `local` seconds after the commands start (0 outside them).
  Eigen::Matrix<double, kChannels, 1> evaluate(double local) const;
  /// Throws InputError naming the field; `hop_push` is the motion's.
  void validate(double hop_push = 0.3) const;
};

/// Quadruped motions with every foot planted: the base follows a pose trajectory and inverse
/// kinematics of the nominal model keeps the feet where they stood. After `settle` seconds of
/// standing, the phases roll, pitch, yaw (sinusoids) and squats (height) follow each other for
/// `phase_duration` seconds each, and the cycle repeats. An amplitude of 0 skips its phase.
/// Every phase is faded in and out over `ramp` seconds (quintic smoothstep, so the reference is
/// twice continuously differentiable).
struct StanceMotionOptions {
  /// Joint angles of the standing posture, one per actuated joint (Pinocchio order) [rad].
  Eigen::VectorXd posture;
  double settle = 1.0;              ///< [s] standing still at the start
  double phase_duration = 3.0;      ///< [s] per phase
  double ramp = 0.5;                ///< [s] fade in / out of each phase
  double roll_amplitude = 0.15;     ///< [rad]
  double pitch_amplitude = 0.15;    ///< [rad]
  double yaw_amplitude = 0.2;       ///< [rad]
  double rotation_frequency = 0.5;  ///< [Hz]
  double squat_depth = 0.06;        ///< [m] peak lowering of the base
  double squat_frequency = 0.5;     ///< [Hz]
  /// Trot in place (a phase after the squats when > 0): the diagonal pairs of a four-footed robot
  /// (feet 0 and 3, then 1 and 2: FL RR / FR RL) lift their feet by up to this height [m] in turn.
  double trot_height = 0;
  double trot_frequency = 1.5;  ///< [Hz] gait cycles (each pair swings once per cycle)
  double trot_swing = 0.8;      ///< fraction of its half cycle a pair is in the air, (0, 1]
  /// Pronking (a phase after the trot when > 0): hops of this flight time [s], each from rest to
  /// rest: a push of `hop_push` s (the base dips and rises to take off at g flight / 2 m/s with
  /// acceleration -g), the flight (ballistic base, every foot lifted by up to `hop_clearance`), a
  /// landing mirroring the push. As many whole hops as fit between the fades.
  double hop_flight = 0;
  double hop_push = 0.3;        ///< [s]
  double hop_clearance = 0.03;  ///< [m]
  /// Designed base commands, added to the phases' offsets from the end of `settle` on.
  BezierCommands commands;
  /// Throws InputError naming the field (`nu` = actuated joints of the robot).
  void validate(int nu) const;
};

/// Reference for a free-flyer robot whose `feet` (frame names, contact sphere centers of radius
/// `foot_radius`) stand on the floor z = 0. The initial base height puts the sphere bottoms at
/// z = 0. Feed-forward: floating-base inverse dynamics (RNEA) with the contact forces that balance
/// the base rows, chosen closest (least squares) to an equal share of the robot's weight per foot.
/// \throws InputError for a fixed-base model, unknown feet or bad options; SolveError when the
/// inverse kinematics does not converge (the pose is out of reach).
Reference stanceReference(const model::RobotModel& nominal, const std::vector<std::string>& feet,
                          double foot_radius, const StanceMotionOptions& options, double duration,
                          double dt);

/// A sinusoid on one joint: amplitude sin(2 pi frequency t + phase), added to its posture angle.
struct JointWave {
  std::string joint;
  double amplitude = 0;  ///< [rad]
  double frequency = 0;  ///< [Hz]
  double phase = 0;      ///< [rad]
};

/// One phase of the humanoid's motion: a pelvis squat (depth d, profile
/// d (1 - cos(2 pi f t)) / 2), a lateral pelvis shift (amplitude sin(2 pi f t), the weight moves
/// from foot to foot), joint sinusoids (torso twists, arm swings) and stepping in place.
struct HumanoidPhase {
  double squat_depth = 0;         ///< [m]
  double squat_frequency = 0.5;   ///< [Hz]
  double shift_amplitude = 0;     ///< [m], pelvis y in the world
  double shift_frequency = 0.25;  ///< [Hz]
  std::vector<JointWave> joints;
  /// Stepping in place (when > 0; two soles): as many whole steps as fit between the phase's
  /// fades, centered in it. A step is a weight transfer of `step_transfer` s in double support
  /// (the pelvis moves by a quintic smoothstep to `step_shift` towards the stance sole and the
  /// feed-forward load moves onto that sole), then `step_swing` s of single support with the
  /// pelvis at rest: the other sole rises flat by this height [m] and is put back where it stood,
  /// along h b(x) + v T x^3 (1 - x), x = time / T in [0, 1], T = step_swing, b the quadruped
  /// trot's bump 64 x^3 (1 - x)^3 (zero rate at lift-off) and v = `step_landing_speed`: the sole
  /// reaches the floor at v (0: at rest), so each touchdown is an impact, which the floor and
  /// not the feed-forward absorbs (the reference rate steps to 0 there and the acceleration is
  /// held, without the finite-difference impulse). The apex is at most h + 0.11 v T.
  /// soles[0] stands first, then the soles alternate; a last transfer brings the pelvis back to
  /// the middle.
  double step_height = 0;
  double step_shift = 0.07;         ///< [m], pelvis y towards the stance sole in single support
  double step_transfer = 0.8;       ///< [s]
  double step_swing = 0.5;          ///< [s]
  double step_landing_speed = 0.0;  ///< [m/s], >= 0
};

/// Humanoid motions with the feet flat on the floor: inverse kinematics of the nominal model keeps
/// each sole frame where the standing posture put it (or lifted straight above it while it steps)
/// while the pelvis follows the phases; the other joints follow their posture plus the phase's
/// sinusoids. After `settle`
/// seconds standing, the phases follow each other for `phase_duration` seconds each, faded in and
/// out over `ramp` seconds, and the cycle repeats. `continuous` waves (elbow curls) run from the
/// end of `settle` to the end, faded in once.
struct HumanoidMotionOptions {
  std::map<std::string, double> posture;  ///< joint angles [rad]; joints not listed are 0
  std::vector<std::string> soles = {"left_sole_link", "right_sole_link"};
  double settle = 1.0;          ///< [s]
  double phase_duration = 4.0;  ///< [s]
  double ramp = 0.5;            ///< [s]
  std::vector<HumanoidPhase> phases;
  std::vector<JointWave> continuous;
  void validate() const;
};

/// Reference for a free-flyer humanoid standing on its soles (frames whose z axis is the sole
/// normal, the sole plane through their origin) on the floor z = 0. The contact points (sphere
/// centers in frames of the legs) only serve the feed-forward: floating-base RNEA with the point
/// forces that balance the base rows, closest (least squares) to an equal share of the weight per
/// point; while stepping, the points of a sole carry a share that moves off it during the weight
/// transfer before its swing and back on after it, none in the air (weighted least squares, as
/// the quadruped trot). \throws InputError for bad options, SolveError when the inverse kinematics
/// fails.
Reference humanoidReference(const model::RobotModel& nominal, const HumanoidMotionOptions& options,
                            const std::vector<std::string>& contact_frames,
                            const std::vector<Eigen::Vector3d>& contact_offsets, double duration,
                            double dt);

/// Periodic excitation (Swevers et al. 1997): every actuated joint follows
///   q_i(t) = c_i + e(t) s_i sum_{l=1..L} a_il sin(l w t + phi_il),  w = 2 pi base_frequency,
/// with random a_il (uniform in [-1, 1] / l) and phi_il from `coefficient_seed`, an envelope e(t)
/// rising from 0 to 1 over `ramp` seconds (quintic smoothstep), and the largest scale s_i that
/// keeps the joint within its limits shrunk by `limit_margin` (a fraction of the half range), its
/// speed under `velocity_fraction` of the velocity limit and its acceleration under
/// `max_acceleration`.
struct FourierExcitationOptions {
  int harmonics = 5;
  double base_frequency = 0.1;  ///< [Hz], the period of the whole trajectory is 1 / this
  std::uint64_t coefficient_seed = 1;
  double limit_margin = 0.15;      ///< fraction of the half range kept free at each limit
  double velocity_fraction = 0.6;  ///< of the model's velocity limit (when finite and > 0)
  double max_acceleration = 8.0;   ///< [rad/s^2] (prismatic: [m/s^2])
  double ramp = 2.0;               ///< [s]
  /// Centers c_i (nu entries) for joints without limits; empty = 0. Limited joints use mid-range.
  Eigen::VectorXd center;
  double unlimited_amplitude = 1.0;  ///< [rad] bound on |q - c| for joints without limits
  /// Explicit coefficients by joint name (a designed trajectory, `heft excite`), used instead of
  /// the seed when not empty: a listed joint follows excite::evaluate(series, t, ramp) exactly
  /// (no scaling, the limits are the designer's job); the others hold c_i.
  std::map<std::string, excite::FourierSeries> series;
  void validate(int nu) const;
};

/// Reference for a fixed-base robot; feed-forward = RNEA of the nominal model.
/// \throws InputError for a free-flyer model, bad options or a series naming no joint.
Reference fourierReference(const model::RobotModel& nominal,
                           const FourierExcitationOptions& options, double duration, double dt);

/// Joint PD gains, one per actuated joint.
struct PdGains {
  Eigen::VectorXd kp;  ///< [N m/rad]
  Eigen::VectorXd kd;  ///< [N m s/rad]
  void validate(int nu) const;
};

/// The same kp and kd for every joint.
PdGains uniformGains(int nu, double kp, double kd);

/// Gains that give each joint the closed-loop natural frequency `bandwidth` [rad/s] and damping
/// ratio `damping_ratio` with its effective inertia m_i = 1 / (M(q)^-1)_ii (the other joints free):
/// kp = m_i w^2, kd = 2 zeta w m_i. Used for arms, whose link inertias span orders of magnitude;
/// m_i (not M_ii) keeps the explicit PD at 1 kHz stable (eigenvalues of M^-1 Kd <= nu 2 zeta w).
PdGains bandwidthGains(const model::RobotModel& nominal, const Eigen::VectorXd& q, double bandwidth,
                       double damping_ratio);

/// tau = tau_ff(k) + kp (q_ref(k) - q) + kd (v_ref(k) - v) on the actuated joints; the position
/// error is pinocchio::difference (so continuous joints wrap). Samples past the end hold the last.
class PdController {
 public:
  PdController(const model::RobotModel& nominal, Reference reference, PdGains gains);
  /// `tau` gets nu entries. No allocation after the first call.
  void compute(int k, const Eigen::VectorXd& q, const Eigen::VectorXd& v, Eigen::VectorXd& tau);
  /// pinocchio::difference(q, q_ref) of the last compute() (nv entries).
  const Eigen::VectorXd& lastError() const { return error_; }
  const Reference& reference() const { return reference_; }
  const PdGains& gains() const { return gains_; }

 private:
  pinocchio::Model model_;
  Reference reference_;
  PdGains gains_;
  int offset_;
  Eigen::VectorXd error_;
};

}  // namespace heft::sim
