#pragma once
/// \file What every estimator hands over for one identified body or joint: the estimate with its
/// prior and its standard deviations in the units a URDF uses, and the report lines a person reads.
#include <string>
#include <vector>

#include <Eigen/Core>

#include "heft/common/types.hpp"

namespace heft::results {

/// One identified body, in the units a URDF uses.
struct BodyEstimate {
  std::string name;
  Vector10 prior_pi = Vector10::Zero();  ///< prior mean (the robot's nominal values)
  Vector10 pi = Vector10::Zero();        ///< estimate (Pinocchio order, joint frame)
  Vector10 pi_std = Vector10::Zero();    ///< sqrt of the diagonal of its covariance
  Vector10 prior_std = Vector10::Zero();
  double mass = 0, mass_std = 0;
  Eigen::Vector3d com = Eigen::Vector3d::Zero(), com_std = Eigen::Vector3d::Zero();
  /// About the COM, body-frame axes; std entry-wise (delta method through pi's covariance).
  Eigen::Matrix3d inertia = Eigen::Matrix3d::Zero(), inertia_std = Eigen::Matrix3d::Zero();
  bool consistent = false;     ///< passes inertia::checkConsistencyMargin (the project's margin)
  double relative_margin = 0;  ///< inertia::ConsistencyReport::relative_margin
};

/// A body's estimate from its pi (Pinocchio order, joint frame) and pi's 10 x 10 covariance: mass,
/// COM and inertia about the COM with their standard deviations (delta method), consistency.
BodyEstimate makeBodyEstimate(const std::string& name, const Vector10& prior_pi,
                              const Vector10& prior_std, const Vector10& pi,
                              const Eigen::MatrixXd& covariance);

/// Below this relative margin (inertia::ConsistencyReport::relative_margin) a body is reported as
/// near the boundary: its smallest second moment about the COM is under 1/1000 of the sum, the
/// shape of a thin plate or rod. Consistent, but rarely a real link: the data hardly constrain
/// that direction.
inline constexpr double kNearBoundaryRelativeMargin = 1e-3;

/// Moves an estimate that lacks the project's consistency margin inside it, toward `prior_pi`
/// (inertia::moveInsideMargin), and says so in `warnings`. Returns true when pi changed.
bool moveInsideMargin(const std::string& body, Vector10& pi, const Vector10& prior_pi,
                      std::vector<std::string>& warnings);

/// A warning for each consistent body whose relative margin is below kNearBoundaryRelativeMargin.
void appendNearBoundaryWarnings(const std::vector<BodyEstimate>& bodies,
                                std::vector<std::string>& warnings);

/// The report's lines of the bodies (prior -> estimate +- std; without `with_std`, for an
/// estimator that has no covariance, start -> estimate).
std::string bodiesReport(const std::vector<BodyEstimate>& bodies, bool with_std = true);

/// One joint's friction estimate (Coulomb and viscous terms of the friction model).
struct JointFrictionEstimate {
  std::string joint;
  double coulomb = 0, coulomb_std = 0, coulomb_prior = 0;
  double viscous = 0, viscous_std = 0, viscous_prior = 0;
  /// The six gamma of bayesian-sysid eq. 56 (Stribeck amplitude and rates, Coulomb, its rate,
  /// viscous) when the full form was identified; empty otherwise.
  std::vector<double> gamma;
};

/// One joint's scalar estimate: a rotor armature [kg m^2] or a torque-sensor offset [N m] (logged
/// = true + offset), with its standard deviation and prior mean (median for the armature).
struct JointScalarEstimate {
  std::string joint;
  double value = 0, std = 0, prior = 0;
};

/// The report's lines of the joint-side terms (prior -> estimate +- std); empty without any.
std::string actuatorTermsReport(const std::vector<JointFrictionEstimate>& friction,
                                const std::vector<JointScalarEstimate>& armature,
                                const std::vector<JointScalarEstimate>& torque_offsets);

}  // namespace heft::results
