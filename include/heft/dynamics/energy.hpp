#pragma once
/// \file Kinetic and potential energy regressors restricted to the identified bodies S:
/// \f[ K(q, v) = Y^K_S(q, v)\, \pi_S + K_{rest}(q, v), \qquad
///     P(q) = Y^P_S(q)\, \pi_S + P_{rest}(q), \f]
/// with Y^K, Y^P the columns of S in Pinocchio's computeKineticEnergyRegressor /
/// computePotentialEnergyRegressor, and K_rest, P_rest the energies of the rest model (S zeroed).
/// Same conventions as regressor.hpp (pi order, S order). Units: J. Pinocchio's potential energy
/// is -sum_i m_i g^T c_i (world frame, gravity -9.81 z): zero at the world origin height.
#include <Eigen/Core>
#include <pinocchio/multibody.hpp>

#include "heft/dynamics/regressor.hpp"

namespace heft::dynamics {

/// Buffers of the energy regressors of one RegressorModel.
class EnergyData {
 public:
  explicit EnergyData(const RegressorModel& model);

  // ---- computeEnergyRegressors ----
  Eigen::RowVectorXd kinetic_regressor;    ///< 1 x 10|S|: Y^K_S(q, v)
  Eigen::RowVectorXd potential_regressor;  ///< 1 x 10|S|: Y^P_S(q)
  double kinetic_rest = 0;                 ///< K of the rest model [J]
  double potential_rest = 0;               ///< P of the rest model [J]

  // ---- workspaces ----
  pinocchio::Data full;
  pinocchio::Data rest;
};

/// Fills the energy regressors of S and the rest's energies at (q, v); then for any pi_S
/// K = kinetic_regressor pi_S + kinetic_rest and P = potential_regressor pi_S + potential_rest.
/// \param q configuration (nq, normalized quaternion), v velocity (nv).
/// \throws InputError on a wrong size.
void computeEnergyRegressors(const RegressorModel& model, EnergyData& data,
                             const Eigen::Ref<const Eigen::VectorXd>& q,
                             const Eigen::Ref<const Eigen::VectorXd>& v);

/// K = kinetic_regressor pi_S + kinetic_rest [J]. Assumes computeEnergyRegressors ran.
/// \throws InputError on a wrong size of pi_S.
double kineticEnergy(const RegressorModel& model, const EnergyData& data,
                     const Eigen::Ref<const Eigen::VectorXd>& pi_S);

/// P = potential_regressor pi_S + potential_rest [J]. Assumes computeEnergyRegressors ran.
/// \throws InputError on a wrong size of pi_S.
double potentialEnergy(const RegressorModel& model, const EnergyData& data,
                       const Eigen::Ref<const Eigen::VectorXd>& pi_S);

}  // namespace heft::dynamics
