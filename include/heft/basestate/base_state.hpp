#pragma once
/// \file The base state of a whole log, offline: the contact-aided invariant EKF (contact_ekf.hpp)
/// run forward over the IMU and joint samples, then a Rauch-Tung-Striebel backward pass over the
/// core error state, and the base pose and twist at every joint sample (Pinocchio's free-flyer
/// convention: pose base-to-world, twist in the base frame), through the IMU-to-base kinematics
/// at that sample. docs/basestate.md has the equations; truth is never read (compareWithTruth
/// only scores).
#include <string>
#include <vector>

#include <Eigen/Core>
#include <pinocchio/multibody/model.hpp>

#include "heft/basestate/contact_ekf.hpp"
#include "heft/io/log.hpp"
#include "heft/model/contact_points.hpp"

namespace heft::basestate {

struct BaseStateOptions {
  ContactEkfOptions filter;
  /// true: forward filter then RTS backward pass (offline); false: the causal filter's output.
  bool smooth = true;
  /// The IMU frame of the model; empty: the log's imu/frame attribute.
  std::string imu_frame;
  /// z of the ground [m]: the start position puts the lowest stance foot there (x = y = 0).
  double ground_height = 0.0;
  /// \throws InputError naming the first field out of range.
  void validate() const;
};

/// What a run did.
struct BaseStateSummary {
  long joint_samples = 0, imu_samples = 0;
  long corrections = 0, flight_samples = 0, touchdowns = 0, rejected = 0, failures = 0;
  long ground_corrections = 0;  ///< level-ground updates (0 unless level_ground)
  bool smoothed = false;
  bool orientation_from_imu = false;  ///< initial orientation from imu/orientation (else accel)
  double seconds = 0;                 ///< wall time
  std::string report() const;
};

/// The estimate at every joint sample.
struct BaseStateTrajectory {
  Eigen::VectorXd time;        ///< N, the joints' time [s]
  Eigen::MatrixXd base_pose;   ///< N x 7 [x y z qx qy qz qw], base in world
  Eigen::MatrixXd base_twist;  ///< N x 6 [vx vy vz wx wy wz], base frame
  Eigen::MatrixXd gyro_bias;   ///< N x 3 [rad/s]
  Eigen::MatrixXd accel_bias;  ///< N x 3 [m/s^2]
  BaseStateSummary summary;
};

/// Runs the estimator over `log` (joints, imu, contacts: flags zero-order held). Contacts are
/// `contacts` (the log's contacts/names resolved by the caller, one per column of
/// contacts/flags, in order).
/// \throws InputError naming the field: no imu group, an IMU frame the model lacks, no contacts
///   group, contacts that never touch down, joints the model lacks.
BaseStateTrajectory estimateBaseState(const pinocchio::Model& model, const io::Log& log,
                                      const std::vector<model::ContactPoint>& contacts,
                                      const BaseStateOptions& options = {});

/// The contact points of a log: its contacts/names resolved against the model, through the points
/// `extra` (a config's) defines, then those the log defines (contacts/frames, contacts/offsets),
/// else frames (model::configOverLogPoints).
/// \throws InputError naming the field when the log has no contacts group or a name resolves to
///   nothing.
std::vector<model::ContactPoint> logContactPoints(
    const pinocchio::Model& model, const io::Log& log,
    const std::vector<model::ContactPoint>& extra = {});

/// Runs estimateBaseState with logContactPoints and writes the result into log.joints.base_pose
/// and base_twist (replacing any). Returns the trajectory.
BaseStateTrajectory fillBaseState(const pinocchio::Model& model, io::Log& log,
                                  const BaseStateOptions& options = {},
                                  const std::vector<model::ContactPoint>& extra = {});

/// Errors against the truth group.
struct BaseStateErrors {
  double orientation_rmse_deg = 0;  ///< angle of R_true^T R_est, RMS over samples
  double roll_rmse_deg = 0, pitch_rmse_deg = 0, yaw_rmse_deg = 0;
  double velocity_rmse = 0;          ///< base-frame linear velocity, RMS of the norm [m/s]
  double angular_velocity_rmse = 0;  ///< [rad/s]
  /// |(p(T) - p(0)) - (p_true(T) - p_true(0))| per minute of log [m/min] (position is
  /// unobservable: only its drift is scored).
  double position_drift_per_minute = 0;
  long samples = 0;
};

/// Compares a trajectory with the log's truth (nearest truth sample in time).
/// \throws InputError when the log has no truth base pose and twist.
BaseStateErrors compareWithTruth(const io::Log& log, const BaseStateTrajectory& trajectory);

}  // namespace heft::basestate
