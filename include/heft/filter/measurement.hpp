#pragma once
/// \file The online EKF's measurement (online EKF paper eqs. 6-7, 13-15): with the estimated bodies
/// S and the rest of the robot known,
/// \f[ \Delta\tau = \tau_{obs} - \tau_{nom}(q, v, a) + \sum_c J_c^T(q) \lambda_c
///                \approx Y_S(q, v, a)\, \pi_S, \f]
/// where tau_nom is one RNEA of the model with the S bodies zeroed and lambda_c are contact forces
/// (an input: from force sensors, a log, or a contact estimator).
///
/// Only the rows that can see pi_S are used: the velocity indices of the joints that support at
/// least one body of S (for a free-flyer: the six base rows and the joints on the chains to S).
/// Other rows of Y_S are identically zero and would only add noise to the innovation.
///
/// Y_S is computed the paper's way, not by the full-robot regressor: one RNEA of the rest model
/// gives tau_nom and every body's velocity and acceleration (with gravity); each S body's 6 x 10
/// regressor (pinocchio::jointBodyRegressor) is moved to the world frame and projected on the
/// world-frame motion subspace of every supporting joint. The contact forces are projected the
/// same way. Cost: one RNEA plus O(rows x (10|S| + contacts)); no allocation (covered by test
/// InertialEkf.UpdateDoesNotAllocate, which runs it inside update()).
#include <string>
#include <vector>

#include <Eigen/Core>
#include <pinocchio/multibody.hpp>

#include "heft/common/types.hpp"
#include "heft/model/contact_points.hpp"

namespace heft::filter {

using model::ContactPoint;  ///< a point fixed on the robot where a contact force acts

class MeasurementData;

/// What else acts on the robot besides the joint torques, beyond the point forces of `contacts`.
struct ExternalInputs {
  /// Frames that receive a measured 6D wrench (force/torque sensors): [f; t] in the frame's axes,
  /// about its origin, acting on the robot (docs/log-format.md, force_torque).
  std::vector<std::string> wrench_frames;
  /// Frames whose contact forces are unknown and projected out while they are in stance: a flat
  /// foot removes a full wrench at its frame (6 constraint columns), a point foot a force at its
  /// offset (3). Non-empty: the rows also hold every joint supporting one of these frames (their
  /// torques are what lets the projection keep the information the base rows lose).
  std::vector<model::ContactFrame> stance_frames;
};

/// The constant part: rest model (S zeroed), rows, supports and contact placements.
class MeasurementModel {
 public:
  /// \param model the robot, copied; its inertias are the nominal parameters.
  /// \param bodies S as joint indices in [1, njoints), unique, at least one.
  /// \param contacts points whose world-frame forces enter the measurement (may be empty).
  /// \throws InputError on a bad index, an unknown frame, or a supporting joint whose motion
  ///   subspace in its own frame depends on q (only constant ones: revolute, prismatic,
  ///   free-flyer, spherical, ...).
  /// \param inputs wrench frames and stance frames (ExternalInputs), may be empty.
  MeasurementModel(const pinocchio::Model& model, const std::vector<pinocchio::JointIndex>& bodies,
                   const std::vector<ContactPoint>& contacts, const ExternalInputs& inputs = {});

  const pinocchio::Model& model() const { return full_; }
  const pinocchio::Model& restModel() const { return rest_; }
  const std::vector<pinocchio::JointIndex>& bodies() const { return bodies_; }
  const std::vector<ContactPoint>& contacts() const { return contacts_; }
  int nq() const { return full_.nq; }
  int nv() const { return full_.nv; }
  int numBodies() const { return static_cast<int>(bodies_.size()); }
  int numParameters() const { return 10 * numBodies(); }
  int numContacts() const { return static_cast<int>(contacts_.size()); }
  int numWrenchFrames() const { return static_cast<int>(wrench_frames_.size()); }
  int numStanceFrames() const { return static_cast<int>(stance_frames_.size()); }
  const std::vector<model::ContactFrame>& stanceFrames() const { return stance_frames_; }
  /// Length of the force input of computeMeasurement: 3 per contact point, then 6 per wrench
  /// frame, then 1 per stance frame (> 0: in stance).
  int numForceInputs() const {
    return 3 * numContacts() + 6 * numWrenchFrames() + numStanceFrames();
  }
  /// Largest number of constraint columns (all stance frames in stance).
  int maxConstraintColumns() const { return max_constraints_; }
  /// Measurement dimension m: the rows used.
  int numRows() const { return static_cast<int>(rows_.size()); }
  /// Velocity index of each row, ascending.
  const std::vector<int>& rows() const { return rows_; }
  /// Whether row r is a free-flyer row (0..2 force [N], 3..5 moment [N m]) or a joint row.
  bool isBaseRow(int r) const { return rows_[r] < base_rows_; }
  /// pi_S of the model's own inertias (10|S|).
  Eigen::VectorXd nominalParameters() const;

 private:
  friend void computeMeasurement(const MeasurementModel&, MeasurementData&,
                                 const Eigen::Ref<const Eigen::VectorXd>&,
                                 const Eigen::Ref<const Eigen::VectorXd>&,
                                 const Eigen::Ref<const Eigen::VectorXd>&,
                                 const Eigen::Ref<const Eigen::VectorXd>&,
                                 const Eigen::Ref<const Eigen::VectorXd>&);
  pinocchio::Model full_;
  pinocchio::Model rest_;
  std::vector<pinocchio::JointIndex> bodies_;
  std::vector<ContactPoint> contacts_;
  std::vector<int> rows_;
  std::vector<pinocchio::JointIndex> row_joint_;
  Eigen::Matrix<double, 6, Eigen::Dynamic> row_subspace_;  ///< 6 x m, in the row joint's frame
  Eigen::Matrix<bool, Eigen::Dynamic, Eigen::Dynamic> row_sees_body_;     ///< m x |S|
  Eigen::Matrix<bool, Eigen::Dynamic, Eigen::Dynamic> row_sees_contact_;  ///< m x contacts
  std::vector<pinocchio::JointIndex> contact_joint_;
  Eigen::Matrix<double, 3, Eigen::Dynamic> contact_point_;  ///< 3 x contacts, in the joint frame
  std::vector<std::string> wrench_frames_;
  std::vector<pinocchio::JointIndex> wrench_joint_;
  std::vector<pinocchio::SE3> wrench_placement_;  ///< frame in its joint's frame
  Eigen::Matrix<bool, Eigen::Dynamic, Eigen::Dynamic> row_sees_wrench_;  ///< m x wrench frames
  std::vector<model::ContactFrame> stance_frames_;
  std::vector<pinocchio::JointIndex> stance_joint_;
  Eigen::Matrix<double, 3, Eigen::Dynamic> stance_point_;  ///< point of each, in its joint frame
  Eigen::Matrix<bool, Eigen::Dynamic, Eigen::Dynamic> row_sees_stance_;  ///< m x stance frames
  int max_constraints_ = 0;
  int base_rows_ = 0;
};

/// Buffers; outputs are public and valid after computeMeasurement.
class MeasurementData {
 public:
  explicit MeasurementData(const MeasurementModel& model);
  Eigen::VectorXd delta_tau;  ///< m: tau_obs - tau_nom + sum J^T lambda, on the rows
  Eigen::MatrixXd Y;          ///< m x 10|S|: Y_S on the rows
  pinocchio::Data rest;       ///< RNEA of the rest model (tau_nom = rest.tau)
  std::vector<pinocchio::SE3> world_placement;             ///< oMi, every joint
  Eigen::Matrix<double, 6, Eigen::Dynamic> body_world;     ///< 6 x 10|S| regressors, world frame
  Eigen::Matrix<double, 6, Eigen::Dynamic> contact_world;  ///< 6 x contacts, wrench at the origin
  Eigen::Matrix<double, 6, Eigen::Dynamic> wrench_world;   ///< 6 x wrench frames, at the origin
  /// m x maxConstraintColumns: the rows of J_c^T of the frames in stance (world-aligned unit
  /// forces at the contact point, then for a flat foot unit moments), zero columns for the others.
  Eigen::MatrixXd constraint;
  int active_constraints = 0;  ///< columns of `constraint` in use (the frames in stance)
};

/// Fills data.delta_tau and data.Y at (q, v, a) with generalized forces tau (nv; free-flyer rows
/// are normally 0) and `contact_forces` (numForceInputs(): 3 per contact point, world frame [N],
/// then 6 per wrench frame, [f; t] in the frame, then 1 per stance frame, > 0 in stance; all acting
/// on the robot). With stance frames, also data.constraint (the stance columns; delta_tau holds
/// no force of them).
/// Sizes are the caller's contract (checked only by assertions: this runs in a control loop).
void computeMeasurement(const MeasurementModel& model, MeasurementData& data,
                        const Eigen::Ref<const Eigen::VectorXd>& q,
                        const Eigen::Ref<const Eigen::VectorXd>& v,
                        const Eigen::Ref<const Eigen::VectorXd>& a,
                        const Eigen::Ref<const Eigen::VectorXd>& tau,
                        const Eigen::Ref<const Eigen::VectorXd>& contact_forces);

}  // namespace heft::filter
