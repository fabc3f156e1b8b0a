#pragma once
/// \file Sensor models: what a robot would have logged, made from the simulator's truth.
///
/// The simulator records the truth at every physics step (TruthRecord); makeLog() then samples it
/// through the sensor models of a NoiseProfile and writes both the measured groups and the truth
/// group of a heft::io::Log. All random numbers come from heft::sim::Rng streams derived from one
/// seed (one stream per sensor), so one seed gives one log, bit for bit. Every number of the three
/// profiles is listed in docs/sim.md.
#include <Eigen/Core>
#include <cstdint>
#include <string>
#include <vector>

#include "heft/io/log.hpp"

namespace heft::sim {

class SimModel;

/// Truth at every physics step k (t_k = k dt), rows = samples. Filled by simulate().
struct TruthRecord {
  double dt = 1e-3;
  Eigen::VectorXd time;               ///< N [s]
  Eigen::MatrixXd joint_q;            ///< N x nu joint positions [rad] / [m]
  Eigen::MatrixXd joint_v;            ///< N x nu
  Eigen::MatrixXd joint_a;            ///< N x nu
  Eigen::MatrixXd tau;                ///< N x nu joint torque applied in MuJoCo [N m] / [N]
  Eigen::MatrixXd tau_cmd;            ///< N x nu torque the controller commanded
  Eigen::MatrixXd base_pose;          ///< N x 7 [x y z qx qy qz qw] (free-flyer), else 0 x 0
  Eigen::MatrixXd base_twist;         ///< N x 6 Pinocchio's base v (base frame)
  Eigen::MatrixXd base_acceleration;  ///< N x 6 Pinocchio's base a
  Eigen::MatrixXd contact_forces;     ///< N x 3 nc, world frame [N], on each contact sphere
  io::FlagMatrix contact_flags;       ///< N x nc
  Eigen::MatrixXd gyro;               ///< N x 3 IMU frame [rad/s] (free-flyer)
  Eigen::MatrixXd accel;              ///< N x 3 IMU frame specific force [m/s^2]
  Eigen::MatrixXd imu_orientation;    ///< N x 4 [qx qy qz qw] IMU-to-world
  /// pi of the bodies whose mass varies (SimModel::variedTruthRows order, duplicates removed):
  /// N x 10 nvb, as MuJoCo had them at each step; rows of truthPi() named in varying_rows.
  std::vector<int> varying_rows;
  Eigen::MatrixXd varying_pi;

  /// Allocates N samples for a model (free-flyer groups only for a free-flyer).
  void resize(int samples, int nu, int contacts, bool free_flyer);
  /// Keeps the first `samples` rows (after an early stop).
  void truncate(int samples);
  int samples() const { return static_cast<int>(time.size()); }
};

/// Numbers of a noise profile (units SI; "std" = standard deviation of white Gaussian noise,
/// "bias" = standard deviation of a constant drawn once per run, unless stated otherwise).
struct NoiseProfile {
  std::string name = "none";
  // joints, sampled at the physics rate
  double encoder_noise = 0;               ///< std added before quantization [rad]
  double encoder_resolution = 0;          ///< quantization step [rad] (0: none)
  bool velocity_by_differencing = false;  ///< v = backward difference of measured q, else true v
  double torque_noise = 0;                ///< std [N m]
  double torque_bias = 0;                 ///< per-joint bias std [N m]
  double joint_time_jitter = 0;           ///< timestamps t_k + U(-j, j) [s]
  // IMU (free-flyer)
  double imu_rate = 500;         ///< [Hz], must divide the physics rate
  double gyro_noise = 0;         ///< std [rad/s]
  double gyro_bias = 0;          ///< per-axis bias std [rad/s]
  double accel_noise = 0;        ///< std [m/s^2]
  double accel_bias = 0;         ///< per-axis bias std [m/s^2]
  double orientation_noise = 0;  ///< std of a rotation-vector error [rad] per axis
  double orientation_bias = 0;   ///< per-axis std of a constant rotation-vector error [rad]
  double imu_time_jitter = 0;    ///< [s]
  // motion capture of the base (free-flyer)
  double mocap_rate = 200;             ///< [Hz], must divide the physics rate
  double mocap_position_noise = 0;     ///< std per axis [m]
  double mocap_orientation_noise = 0;  ///< std per axis of a rotation-vector error [rad]
  Eigen::Vector3d mocap_position_offset = Eigen::Vector3d::Zero();  ///< calibration [m], base frame
  Eigen::Vector3d mocap_rpy_offset = Eigen::Vector3d::Zero();  ///< calibration roll pitch yaw [rad]
  double mocap_dropout = 0;            ///< probability that one sample is missing
  double mocap_burst_probability = 0;  ///< probability per sample that a burst of dropouts starts
  double mocap_burst_duration = 0;     ///< longest burst [s]; a burst lasts U(0.2, 1) times this
  double mocap_time_jitter = 0;        ///< [s]
  // contact flags from a foot force sensor (robots with contact frames)
  double contact_threshold = 15;   ///< flag = 1 when the measured normal force exceeds this [N]
  double contact_force_noise = 0;  ///< std on the normal force before the threshold [N]
  // force/torque sensors at the contact frames (written only when asked: makeLog's force_torque)
  double ft_force_noise = 0;   ///< std per force channel [N]
  double ft_force_bias = 0;    ///< per-channel constant offset std [N]
  double ft_torque_noise = 0;  ///< std per torque channel of a flat-foot (6-axis) sensor [N m]
  double ft_torque_bias = 0;   ///< per-channel constant offset std, flat-foot sensor [N m]

  /// "none", "nominal" or "harsh". \throws InputError naming the accepted names.
  static NoiseProfile fromName(const std::string& name);
  static std::vector<std::string> names();
  /// Throws InputError naming the field when a number is out of range.
  void validate() const;
};

/// Makes the log of a run: joints (q, v, tau, tau_cmd), IMU, mocap and contact flags through the
/// sensor models, the truth group (time, joint q / v / a, base pose / twist / acceleration, contact
/// forces and flags, and the true pi of every body from SimModel::truthPi), and the metadata.
/// \throws InputError when a rate does not divide the physics rate or a jitter reaches half a
///   sample period (timestamps must stay increasing).
/// With `force_torque`, also the force_torque group (docs/log-format.md, docs/sim.md): one sensor
/// per contact frame, named after the frame, on the joint clock. A frame whose contact spheres span
/// a plane (a sole, model::groupContactFrames) carries a 6-axis sensor: the sum of its spheres'
/// forces and their moments about the frame origin, in frame axes, each force taken at its
/// sphere's centre (as truth/contact_forces is); noise and bias on all six channels. Any other
/// frame carries a 3-axis force sensor: its force in frame axes with noise and bias, and the
/// torque the (noisy) force makes at the sphere's offset (zero at the frame origin).
io::Log makeLog(const SimModel& model, const TruthRecord& truth, const NoiseProfile& profile,
                std::uint64_t seed, const std::string& scenario, bool force_torque = false);

}  // namespace heft::sim
