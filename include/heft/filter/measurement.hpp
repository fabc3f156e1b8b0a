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

/// The constant part: rest model (S zeroed), rows, supports and contact placements.
class MeasurementModel {
 public:
  /// \param model the robot, copied; its inertias are the nominal parameters.
  /// \param bodies S as joint indices in [1, njoints), unique, at least one.
  /// \param contacts points whose world-frame forces enter the measurement (may be empty).
  /// \throws InputError on a bad index, an unknown frame, or a supporting joint whose motion
  ///   subspace in its own frame depends on q (only constant ones: revolute, prismatic,
  ///   free-flyer, spherical, ...).
  MeasurementModel(const pinocchio::Model& model, const std::vector<pinocchio::JointIndex>& bodies,
                   const std::vector<ContactPoint>& contacts);

  const pinocchio::Model& model() const { return full_; }
  const pinocchio::Model& restModel() const { return rest_; }
  const std::vector<pinocchio::JointIndex>& bodies() const { return bodies_; }
  const std::vector<ContactPoint>& contacts() const { return contacts_; }
  int nq() const { return full_.nq; }
  int nv() const { return full_.nv; }
  int numBodies() const { return static_cast<int>(bodies_.size()); }
  int numParameters() const { return 10 * numBodies(); }
  int numContacts() const { return static_cast<int>(contacts_.size()); }
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
};

/// Fills data.delta_tau and data.Y at (q, v, a) with generalized forces tau (nv; free-flyer rows
/// are normally 0) and contact forces (3 x contacts stacked, world frame [N], acting on the robot).
/// Sizes are the caller's contract (checked only by assertions: this runs in a control loop).
void computeMeasurement(const MeasurementModel& model, MeasurementData& data,
                        const Eigen::Ref<const Eigen::VectorXd>& q,
                        const Eigen::Ref<const Eigen::VectorXd>& v,
                        const Eigen::Ref<const Eigen::VectorXd>& a,
                        const Eigen::Ref<const Eigen::VectorXd>& tau,
                        const Eigen::Ref<const Eigen::VectorXd>& contact_forces);

}  // namespace heft::filter
