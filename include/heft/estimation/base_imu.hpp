#pragma once
/// \file The specific force of an IMU on a floating base, shared by the stages that read an
/// accelerometer (MultibodyStageModel: the base acceleration from the dynamics;
/// InverseDynamicsStageModel: from the decision a). With the base's twist (v_lin, omega) and
/// spatial acceleration (a_lin, alpha) in the base frame and the IMU at p with axes R_bi on it:
///   f = R_bi^T (acc_b - R_wb^T g),   acc_b = a_lin + alpha x p + omega x (v_lin + omega x p).
#include <Eigen/Core>
#include <Eigen/Geometry>
#include <pinocchio/spatial/se3.hpp>
#include <pinocchio/spatial/skew.hpp>

namespace heft::estimation {

/// R_wb of a free-flyer state x: Pinocchio stores the quaternion x, y, z, w at q[3..6].
inline Eigen::Matrix3d baseRotation(const Eigen::Ref<const Eigen::VectorXd>& x) {
  return Eigen::Quaterniond(x(6), x(3), x(4), x(5)).normalized().toRotationMatrix();
}

/// f at the IMU whose placement on the base is bMi; gravity in world axes.
inline Eigen::Vector3d baseImuSpecificForce(
    const pinocchio::SE3& bMi, const Eigen::Vector3d& gravity, const Eigen::Matrix3d& R_wb,
    const Eigen::Vector3d& v_lin, const Eigen::Vector3d& omega, const Eigen::Vector3d& a_lin,
    const Eigen::Vector3d& alpha) {
  const Eigen::Vector3d& p = bMi.translation();
  const Eigen::Vector3d acc_b = a_lin + alpha.cross(p) + omega.cross(v_lin + omega.cross(p));
  return bMi.rotation().transpose() * (acc_b - R_wb.transpose() * gravity);
}

/// weight x f's derivatives: w.r.t. the twist (v_lin, omega), the spatial acceleration
/// (a_lin, alpha) and the base rotation under R' = R Exp(dtheta) (d(R^T g) = [R^T g]x dtheta).
inline void baseImuSpecificForceJacobians(const pinocchio::SE3& bMi, double weight,
                                          const Eigen::Vector3d& gravity,
                                          const Eigen::Matrix3d& R_wb, const Eigen::Vector3d& v_lin,
                                          const Eigen::Vector3d& omega,
                                          Eigen::Matrix<double, 3, 6>& d_twist,
                                          Eigen::Matrix<double, 3, 6>& d_acceleration,
                                          Eigen::Matrix3d& d_rotation) {
  const Eigen::Vector3d& p = bMi.translation();
  const Eigen::Matrix3d S = weight * bMi.rotation().transpose();
  d_twist.leftCols<3>() = S * pinocchio::skew(omega);
  d_twist.rightCols<3>() = -S * (pinocchio::skew(v_lin) + pinocchio::skew(omega.cross(p)) +
                                 pinocchio::skew(omega) * pinocchio::skew(p));
  d_acceleration.leftCols<3>() = S;
  d_acceleration.rightCols<3>() = -S * pinocchio::skew(p);
  d_rotation = -S * pinocchio::skew(Eigen::Vector3d(R_wb.transpose() * gravity));
}

}  // namespace heft::estimation
