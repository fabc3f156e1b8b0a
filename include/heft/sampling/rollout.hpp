#pragma once
/// \file Clips of a log replayed in MuJoCo with a candidate model (spi-active Sec. 3): each clip
/// starts from the logged state and is driven by the logged commands, either open loop or through
/// the joint PD the robot ran, and its simulated states and torques are scored against the log
/// (eq. 4, the terms of Table 3). One Rollout per thread: it owns a copy of the compiled model that
/// each candidate edits in place, and its data; nothing is allocated per step.
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include <Eigen/Core>

#include "heft/io/log.hpp"
#include "heft/sampling/parameters.hpp"
#include "heft/sim/sim_model.hpp"

namespace heft::sampling {

/// The log's signals on the simulator's coordinates (Pinocchio convention), one column per sample.
struct ReplayData {
  Eigen::VectorXd time;     ///< N [s]
  Eigen::MatrixXd q;        ///< nq x N; a floating base from joints/base_pose
  Eigen::MatrixXd v;        ///< nv x N; a floating base from joints/base_twist
  Eigen::MatrixXd tau;      ///< nu x N measured joint torques
  Eigen::MatrixXd tau_cmd;  ///< nu x N commanded joint torques
  /// Where each appended recording starts (sample indices, increasing): no clip crosses one.
  std::vector<int> joins;
  int samples() const { return static_cast<int>(time.size()); }
  /// Recordings held: the first and one per join.
  int recordings() const { return static_cast<int>(joins.size()) + 1; }
  /// The recording sample `k` belongs to (0 = the first).
  int recordingOf(int k) const;
  /// Appends another recording of the same robot (spi-active's second stage identifies on the
  /// first log and the designed one together); its time continues this one's after one median
  /// step. \throws InputError when the sizes differ.
  void append(const ReplayData& other);
  /// The log's joints group on `sim`'s joints, the base height grounded (groundBaseHeight) unless
  /// `ground` is false (a base position measured in the simulator's world, e.g. by motion capture
  /// over the same floor). \throws InputError naming what is missing: a joint of the model,
  /// joints/tau_cmd, or a floating base's joints/base_pose and base_twist.
  static ReplayData fromLog(const sim::SimModel& sim, const io::Log& log, bool ground = true);
};

/// A floating base's logged height is relative to wherever its estimator started (position is not
/// observable from an IMU and leg kinematics), but a rollout starts on MuJoCo's floor at z = 0.
/// Shifts each sample's base height so that the contact spheres in contact at that sample (the
/// log's contacts/flags, held; without flags the lowest sphere) have their bottom at z = 0 on
/// average; in flight the last stance's shift is held.
void groundBaseHeight(const sim::SimModel& sim, const io::Log& log, ReplayData& data);

/// Samples [start, start + steps] of the log: `steps` simulated steps from sample `start`.
struct Clip {
  int start = 0;
  int steps = 0;
};

/// `count` clips with uniformly random starts and lengths in [min_steps, max_steps] (spi-active:
/// H ~ U(H_min, H_max)), deterministic in `seed`, within `samples` samples; a clip that would
/// cross one of `joins` (ReplayData::joins) is drawn again.
/// \throws InputError when the log is shorter than max_steps + 1 samples, or no recording is.
std::vector<Clip> drawClips(int samples, int count, int min_steps, int max_steps,
                            std::uint64_t seed, const std::vector<int>& joins = {});

/// How a clip is driven. Open loop: tau_cmd of the log. Through the PD: tau_cmd of the log plus
/// kp (q_log - q) + kd (v_log - v), which is what a joint PD with the same targets would command
/// at the simulated state (the PD is linear in the state, so the logged targets are not needed).
struct Replay {
  Eigen::VectorXd kp, kd;  ///< per actuated joint; empty = open loop
  bool closedLoop() const { return kp.size() > 0; }
};

/// Squared errors summed over a clip's steps (and over the clips, when accumulated).
struct CostTerms {
  double base_position = 0;          ///< |p - p_log|^2 [m^2]
  double base_orientation = 0;       ///< 1 - <quat, quat_log>^2
  double base_velocity = 0;          ///< |v - v_log|^2, base frame [m^2/s^2]
  double base_angular_velocity = 0;  ///< |w - w_log|^2 [rad^2/s^2]
  double joint_position = 0;         ///< |q - q_log|^2 over the joints
  double joint_velocity = 0;
  double joint_torque = 0;  ///< |tau - tau_log|^2 (tau: what the actuator model applies)
  /// sum of tau - tau_log per joint (rows, nu) and recording (columns, ReplayData::recordings();
  /// empty before the first step), and each recording's steps: with joint_torque, what a constant
  /// torque-sensor offset per joint and recording needs (jointTorqueBeyondOffsets)
  Eigen::MatrixXd joint_torque_sum;
  Eigen::VectorXd recording_steps;
  /// |a(tau_cmd_log) - tau_log|^2 over the fitted samples of the sampled groups' joints: the
  /// actuator model applied to the logged commands against the logged torque, no rollout
  /// (actuatorTerms); its sums per joint and recording, its samples per recording and in all, as
  /// for joint_torque
  double actuator_torque = 0;
  Eigen::MatrixXd actuator_torque_sum;
  Eigen::VectorXd actuator_recording_samples;
  long actuator_samples = 0;
  long steps = 0;
  /// Extremes of a floating base over the steps: the largest angle between its z axis and the
  /// world's [rad] and its lowest height [m] (falls, active exploration's feasibility).
  double max_tilt = 0;
  double min_base_height = std::numeric_limits<double>::infinity();
  bool finite = true;  ///< false when a rollout diverged or MuJoCo failed
  CostTerms& operator+=(const CostTerms& other);
  /// The mean of tau - tau_log per joint and recording (nu x recordings; empty before the first
  /// step): minus the constant offset per joint and recording that fits the logged torques best
  /// (tau_log = tau + offset). A recording without steps takes the mean over all the others (a
  /// recording the fit did not see is predicted with the offsets pooled over those it saw).
  Eigen::MatrixXd meanTorqueResidual() const;
  /// The joint torque term with `mean_residual` (nu x recordings) taken off every step's residual:
  /// sum_r sum_k |r_k - d_r|^2 = joint_torque - sum_r (2 d_r . sum_r - steps_r |d_r|^2).
  double jointTorqueLess(const Eigen::MatrixXd& mean_residual) const;
  /// The joint torque term beyond its own best offsets, min over d of the above =
  /// joint_torque - sum_r |sum_k r_k|^2 / steps_r: the offsets profiled out in closed form.
  double jointTorqueBeyondOffsets() const;
  /// The same three for the actuator term.
  Eigen::MatrixXd meanActuatorResidual() const;
  double actuatorTorqueLess(const Eigen::MatrixXd& mean_residual) const;
  double actuatorTorqueBeyondOffsets() const;
};

/// The actuator term of `candidate` over samples [begin, end) of `data`: for every joint of a
/// sampled actuator group, its model applied to the logged command against the logged torque
/// (CostTerms::actuator_*; the other fields 0). Only meaningful when the log's torque is measured
/// after the actuator (a joint torque sensor).
CostTerms actuatorTerms(const ParameterSpace& space, const Candidate& candidate,
                        const ReplayData& data, int begin, int end);

/// The weights of eq. 4's terms, spi-active Table 3.
struct CostWeights {
  double base_position = 4.0;
  double base_velocity = 2.0;
  double base_orientation = 2.0;
  double base_angular_velocity = 0.5;
  double joint_position = 3.0;
  double joint_velocity = 0.1;
  double joint_torque = 0.01;
  /// A torque sensor reads the joint torque plus a constant offset per joint, which no candidate
  /// model explains, and which changes between recordings (each power-up or calibration zeroes it
  /// anew): with true, the joint torque term is taken beyond each candidate's best offsets per
  /// joint and recording over its clips (CostTerms::jointTorqueBeyondOffsets), so an offset is not
  /// fitted by the actuators' gain and kappa. false: the offsets are 0.
  bool torque_offsets = false;
  /// The actuator term (CostTerms::actuator_torque, normalized as the others): the gain and kappa
  /// seen directly in the logged command and torque, which a rollout sees only through the states
  /// and its PD's feedback. 0: not used (spi-active's loss has no such term).
  double actuator_torque = 0;
  /// \throws InputError naming a negative or non-finite weight.
  void validate() const;
};

/// sum_term weight * term / reference term (each term's mean per step normalized by its value at
/// the start model, as spi-active normalizes its coefficients to unit cost on the nominal model);
/// terms whose reference is 0 (a fixed base) are left out. Infinite when `terms` is not finite.
double weightedCost(const CostTerms& terms, const CostTerms& reference, const CostWeights& weights);

class Rollout {
 public:
  Rollout(const sim::SimModel& sim, const ParameterSpace& space);
  ~Rollout();
  Rollout(const Rollout&) = delete;
  Rollout& operator=(const Rollout&) = delete;

  /// Writes the candidate into this rollout's model: body inertials (mass, COM, principal axes and
  /// moments), damping, frictionloss and armature, the actuator models; then MuJoCo's derived
  /// constants (mj_setConst).
  void apply(const Candidate& candidate);
  /// Simulates one clip with the applied candidate and returns its summed terms. With
  /// `residuals`, also writes each step's simulated-minus-logged values into it, residualSize()
  /// per step (clip.steps x residualSize() entries, step-major; resized when needed).
  CostTerms run(const ReplayData& data, const Clip& clip, const Replay& replay,
                Eigen::VectorXd* residuals = nullptr);
  /// Residual entries per step: base position, velocity and angular velocity (3 each, a floating
  /// base only), then joint positions, velocities and torques (nu each).
  int residualSize() const;

 private:
  const sim::SimModel& sim_;
  const ParameterSpace& space_;
  mjModel* model_ = nullptr;
  sim::SimModel::DataPtr data_;
  std::vector<sim::ActuatorModel> actuators_;  // per actuated joint
  double floor_offset_ = 0;                    // [m], added to the logged base heights
  Eigen::VectorXd q_, v_, tau_cmd_, tau_, positions_, positions_log_;
};

}  // namespace heft::sampling
