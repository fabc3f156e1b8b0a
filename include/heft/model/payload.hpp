#pragma once
/// \file A rigid payload bolted to a body: the lumped body is the truth an estimator should find.
#include <pinocchio/spatial.hpp>
#include <string>

#include "heft/common/types.hpp"
#include "heft/model/model.hpp"

namespace heft::model {

/// A rigid payload described in the frame of the body it is attached to.
struct Payload {
  double mass = 0;                    ///< kg, > 0
  Vector3 com = Vector3::Zero();      ///< payload COM in the body frame [m]
  Matrix3 inertia = Matrix3::Zero();  ///< about the payload COM, body-frame axes [kg m^2]

  /// A payload given in its own frame P placed at `body_T_payload` (body frame <- payload frame):
  /// com = R c_P + p, inertia = R I_P R^T.
  static Payload fromPlacement(const pinocchio::SE3& body_T_payload, double mass,
                               const Vector3& com_in_payload, const Matrix3& inertia_in_payload);

  /// pi of the payload in the body frame (heft's order, about the body frame origin).
  Vector10 pi() const;

  /// Throws InputError unless: mass > 0 and finite, com finite, inertia finite and symmetric,
  /// and the payload is physically realizable allowing point and line masses (inertia about the
  /// COM positive semi-definite, triangle inequalities, pseudo-inertia semi-definite, all up to
  /// 1e-12 relative to the largest entry of pi).
  void validate() const;
};

/// A copy of `robot` where the body called `body` (link or joint name) carries `payload`: its
/// inertia becomes the lumped sum (pinocchio::Inertia addition, i.e. masses add, the COM is the
/// mass-weighted mean and inertias combine by the parallel-axis theorem).
/// \throws InputError for an unknown body or an invalid payload.
RobotModel attachPayload(const RobotModel& robot, const std::string& body, const Payload& payload);
/// Same, by joint index.
RobotModel attachPayload(const RobotModel& robot, pinocchio::JointIndex joint,
                         const Payload& payload);

}  // namespace heft::model
