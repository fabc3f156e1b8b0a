#pragma once
/// \file Fixed-size types shared by every module.
#include <Eigen/Core>

namespace heft {

/// Inertial parameters of one body in Pinocchio's order
/// [m, m c_x, m c_y, m c_z, I_xx, I_xy, I_yy, I_xz, I_yz, I_zz] (inertia about the body frame
/// origin, expressed in the body frame), or a 10-dimensional parametrization of them (theta).
using Vector10 = Eigen::Matrix<double, 10, 1>;
using Matrix10 = Eigen::Matrix<double, 10, 10>;
using Matrix4 = Eigen::Matrix4d;
using Matrix3 = Eigen::Matrix3d;
using Vector3 = Eigen::Vector3d;

}  // namespace heft
