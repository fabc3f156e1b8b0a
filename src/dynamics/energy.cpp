#include "heft/dynamics/energy.hpp"

#include <string>

#include <pinocchio/algorithm/energy.hpp>
#include <pinocchio/algorithm/kinematics.hpp>
#include <pinocchio/algorithm/regressor.hpp>

#include "heft/common/error.hpp"

namespace heft::dynamics {
namespace {

void requireSize(Eigen::Index got, Eigen::Index expected, const char* what) {
  if (got != expected) {
    require(false, what, "size " + std::to_string(expected), "size " + std::to_string(got));
  }
}

}  // namespace

EnergyData::EnergyData(const RegressorModel& model)
    : kinetic_regressor(Eigen::RowVectorXd::Zero(model.numParameters())),
      potential_regressor(Eigen::RowVectorXd::Zero(model.numParameters())),
      full(model.model()),
      rest(model.restModel()) {}

void computeEnergyRegressors(const RegressorModel& model, EnergyData& data,
                             const Eigen::Ref<const Eigen::VectorXd>& q,
                             const Eigen::Ref<const Eigen::VectorXd>& v) {
  requireSize(q.size(), model.nq(), "q");
  requireSize(v.size(), model.nv(), "v");
  // Pinocchio's regressors hold every body (joint j in entries 10(j-1)..); keep those of S.
  const Eigen::RowVectorXd& yk =
      pinocchio::computeKineticEnergyRegressor(model.model(), data.full, q, v);
  for (int k = 0; k < model.numBodies(); ++k) {
    data.kinetic_regressor.segment<10>(10 * k) =
        yk.segment<10>(10 * static_cast<Eigen::Index>(model.bodies()[k] - 1));
  }
  const Eigen::RowVectorXd& yp =
      pinocchio::computePotentialEnergyRegressor(model.model(), data.full, q);
  for (int k = 0; k < model.numBodies(); ++k) {
    data.potential_regressor.segment<10>(10 * k) =
        yp.segment<10>(10 * static_cast<Eigen::Index>(model.bodies()[k] - 1));
  }
  // the rest model carries the armature, so K_rest includes the rotors' kinetic energy
  pinocchio::forwardKinematics(model.restModel(), data.rest, q, v);
  data.kinetic_rest = pinocchio::computeKineticEnergy(model.restModel(), data.rest);
  data.potential_rest = pinocchio::computePotentialEnergy(model.restModel(), data.rest);
}

double kineticEnergy(const RegressorModel& model, const EnergyData& data,
                     const Eigen::Ref<const Eigen::VectorXd>& pi_S) {
  requireSize(pi_S.size(), model.numParameters(), "pi_S");
  return data.kinetic_regressor.dot(pi_S) + data.kinetic_rest;
}

double potentialEnergy(const RegressorModel& model, const EnergyData& data,
                       const Eigen::Ref<const Eigen::VectorXd>& pi_S) {
  requireSize(pi_S.size(), model.numParameters(), "pi_S");
  return data.potential_regressor.dot(pi_S) + data.potential_rest;
}

}  // namespace heft::dynamics
