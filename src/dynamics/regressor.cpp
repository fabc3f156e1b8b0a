#include "heft/dynamics/regressor.hpp"

#include <algorithm>
#include <limits>
#include <string>

#include <pinocchio/algorithm/jacobian.hpp>
#include <pinocchio/algorithm/regressor.hpp>
#include <pinocchio/algorithm/rnea-derivatives.hpp>
#include <pinocchio/algorithm/rnea.hpp>

#include "heft/common/error.hpp"

namespace heft::dynamics {
namespace {

void requireSize(Eigen::Index got, Eigen::Index expected, const char* what) {
  if (got != expected) {
    require(false, what, "size " + std::to_string(expected), "size " + std::to_string(got));
  }
}

// Pinocchio stores (m, c, I_c): a body with m == 0 cannot carry a first moment h != 0.
pinocchio::Inertia inertiaFromPi(const Eigen::Ref<const Eigen::VectorXd>& pi,
                                 pinocchio::JointIndex joint) {
  if (pi[0] == 0.0) {
    if (pi.segment<3>(1).squaredNorm() != 0.0) {
      require(false, "pi of joint " + std::to_string(joint), "m != 0, or m == 0 with m c == 0",
              "m == 0 with m c != 0");
    }
    pinocchio::Inertia inertia = pinocchio::Inertia::Zero();
    inertia.inertia() = pinocchio::Symmetric3(pi.segment<6>(4));
    return inertia;
  }
  return pinocchio::Inertia::FromDynamicParameters(pi);
}

// Pinocchio fills only the upper triangle of dtau/da (= M).
void symmetrizeFromUpper(Eigen::MatrixXd& M) {
  M.triangularView<Eigen::StrictlyLower>() = M.transpose().triangularView<Eigen::StrictlyLower>();
}

}  // namespace

RegressorModel::RegressorModel(const pinocchio::Model& model,
                               const std::vector<pinocchio::JointIndex>& identified)
    : full_(model), rest_(model), identified_(model), bodies_(identified) {
  for (std::size_t k = 0; k < bodies_.size(); ++k) {
    const pinocchio::JointIndex j = bodies_[k];
    if (j < 1 || j >= static_cast<pinocchio::JointIndex>(model.njoints)) {
      require(false, "identified body " + std::to_string(k),
              "a joint index in [1, " + std::to_string(model.njoints) + ")", std::to_string(j));
    }
    if (std::find(bodies_.begin(), bodies_.begin() + k, j) != bodies_.begin() + k) {
      require(false, "identified body " + std::to_string(k), "a joint index not already in S",
              "joint " + std::to_string(j) + " (" + model.names[j] + ") twice");
    }
  }
  // rest: S removed; S-only: everything else removed, armature too (it belongs to tau_nom).
  for (pinocchio::JointIndex j = 0; j < static_cast<pinocchio::JointIndex>(model.njoints); ++j) {
    if (indexOf(j) >= 0) {
      rest_.inertias[j] = pinocchio::Inertia::Zero();
    } else {
      identified_.inertias[j] = pinocchio::Inertia::Zero();
    }
  }
  identified_.armature.setZero();
  for (const pinocchio::JointIndex body : bodies_) {
    std::vector<std::pair<int, int>> rows;
    for (const pinocchio::JointIndex i : model.supports[body]) {
      if (i == 0 || model.nvs[i] == 0) continue;
      if (!rows.empty() && rows.back().first + rows.back().second == model.idx_vs[i])
        rows.back().second += model.nvs[i];
      else
        rows.emplace_back(model.idx_vs[i], model.nvs[i]);
    }
    support_rows_.push_back(std::move(rows));
  }
}

int RegressorModel::indexOf(pinocchio::JointIndex joint) const {
  const auto it = std::find(bodies_.begin(), bodies_.end(), joint);
  return it == bodies_.end() ? -1 : static_cast<int>(it - bodies_.begin());
}

Eigen::VectorXd RegressorModel::nominalParameters() const {
  Eigen::VectorXd pi(numParameters());
  for (int k = 0; k < numBodies(); ++k) {
    pi.segment<10>(10 * k) = full_.inertias[bodies_[k]].toDynamicParameters();
  }
  return pi;
}

void RegressorModel::setIdentifiedInertias(const Eigen::Ref<const Eigen::VectorXd>& pi_S,
                                           pinocchio::Model& target) const {
  requireSize(pi_S.size(), numParameters(), "pi_S");
  if (target.njoints != full_.njoints || target.nv != full_.nv) {
    require(false, "target model",
            std::to_string(full_.njoints) + " joints and nv " + std::to_string(full_.nv),
            std::to_string(target.njoints) + " joints and nv " + std::to_string(target.nv));
  }
  for (int k = 0; k < numBodies(); ++k) {
    target.inertias[bodies_[k]] = inertiaFromPi(pi_S.segment<10>(10 * k), bodies_[k]);
  }
}

RegressorData::RegressorData(const RegressorModel& model)
    : full(model.model()),
      rest(model.restModel()),
      identified(model.identifiedModel()),
      identified_model(model.identifiedModel()) {
  const int nv = model.nv();
  const int np = model.numParameters();
  Y.setZero(nv, np);
  tau_nom.setZero(nv);
  tau.setZero(nv);
  for (Eigen::MatrixXd* m : {&dtau_dq, &dtau_dv, &dtau_da, &dYpi_dq, &dYpi_dv, &dYpi_da,
                             &dtau_nom_dq, &dtau_nom_dv, &dtau_nom_da}) {
    m->setZero(nv, nv);
  }
  dpi_dtheta.setZero(10, np);
  dpi_theta.setConstant(np, std::numeric_limits<double>::quiet_NaN());
  dtau_dtheta.setZero(nv, np);
  joint_jacobian.setZero(6, nv);
}

const Eigen::MatrixXd& computeRestrictedRegressor(const RegressorModel& model, RegressorData& data,
                                                  const Eigen::Ref<const Eigen::VectorXd>& q,
                                                  const Eigen::Ref<const Eigen::VectorXd>& v,
                                                  const Eigen::Ref<const Eigen::VectorXd>& a) {
  requireSize(q.size(), model.nq(), "q");
  requireSize(v.size(), model.nv(), "v");
  requireSize(a.size(), model.nv(), "a");
  data.tau_nom = pinocchio::rnea(model.restModel(), data.rest, q, v, a);
  if (4 * model.numBodies() <= model.model().njoints - 1) {
    // Few bodies of many (a payload, a subset of links): each body's columns from its own
    // regressor, tau = sum_b J_b^T f_b with f_b = Phi_b pi_b in joint b's frame (J_b its LOCAL
    // Jacobian), with the velocities and accelerations (gravity in) that the RNEA above left per
    // joint, rather than Pinocchio's regressor of every body.
    const pinocchio::Model& rest = model.restModel();
    pinocchio::computeJointJacobians(rest, data.rest, q);
    for (int k = 0; k < model.numBodies(); ++k) {
      const pinocchio::JointIndex joint = model.bodies()[k];
      data.joint_jacobian.setZero();
      pinocchio::getJointJacobian(rest, data.rest, joint, pinocchio::LOCAL, data.joint_jacobian);
      data.Y.middleCols<10>(10 * k).noalias() =
          data.joint_jacobian.transpose() * pinocchio::jointBodyRegressor(rest, data.rest, joint);
    }
    return data.Y;
  }
  // Pinocchio's regressor has all bodies (joint j in columns 10(j-1)..); keep those of S.
  const Eigen::MatrixXd& Y_all =
      pinocchio::computeJointTorqueRegressor(model.model(), data.full, q, v, a);
  for (int k = 0; k < model.numBodies(); ++k) {
    data.Y.middleCols<10>(10 * k) =
        Y_all.middleCols<10>(10 * static_cast<Eigen::Index>(model.bodies()[k] - 1));
  }
  return data.Y;
}

const Eigen::VectorXd& computeRestrictedTorque(const RegressorModel& model, RegressorData& data,
                                               const Eigen::Ref<const Eigen::VectorXd>& pi_S) {
  requireSize(pi_S.size(), model.numParameters(), "pi_S");
  data.tau = data.tau_nom;
  data.tau.noalias() += data.Y * pi_S;
  return data.tau;
}

void computeRestrictedDerivatives(const RegressorModel& model, RegressorData& data,
                                  const Eigen::Ref<const Eigen::VectorXd>& q,
                                  const Eigen::Ref<const Eigen::VectorXd>& v,
                                  const Eigen::Ref<const Eigen::VectorXd>& a,
                                  const Eigen::Ref<const Eigen::VectorXd>& pi_S) {
  requireSize(q.size(), model.nq(), "q");
  requireSize(v.size(), model.nv(), "v");
  requireSize(a.size(), model.nv(), "a");
  requireSize(pi_S.size(), model.numParameters(), "pi_S");

  // Y_S pi_S is the RNEA of the S-only model carrying pi_S (linear in the inertias).
  model.setIdentifiedInertias(pi_S, data.identified_model);
  pinocchio::computeRNEADerivatives(data.identified_model, data.identified, q, v, a, data.dYpi_dq,
                                    data.dYpi_dv, data.dYpi_da);
  symmetrizeFromUpper(data.dYpi_da);

  pinocchio::computeRNEADerivatives(model.restModel(), data.rest, q, v, a, data.dtau_nom_dq,
                                    data.dtau_nom_dv, data.dtau_nom_da);
  symmetrizeFromUpper(data.dtau_nom_da);

  data.dtau_dq = data.dYpi_dq + data.dtau_nom_dq;
  data.dtau_dv = data.dYpi_dv + data.dtau_nom_dv;
  data.dtau_da = data.dYpi_da + data.dtau_nom_da;
  data.tau_nom = data.rest.tau;
  data.tau = data.identified.tau + data.rest.tau;
}

const Eigen::MatrixXd& computeParameterJacobian(const RegressorModel& model, RegressorData& data,
                                                inertia::Parametrization parametrization,
                                                const Eigen::Ref<const Eigen::VectorXd>& theta_S) {
  requireSize(theta_S.size(), model.numParameters(), "theta_S");
  // NaN in the cache never compares equal: the first call always computes.
  const bool cached = data.dpi_parametrization == static_cast<int>(parametrization) &&
                      (data.dpi_theta.array() == theta_S.array()).all();
  if (!cached) {
    for (int k = 0; k < model.numBodies(); ++k) {
      const Vector10 theta = theta_S.segment<10>(10 * k);
      data.dpi_dtheta.middleCols<10>(10 * k) = inertia::jacobian(parametrization, theta);
    }
    data.dpi_theta = theta_S;
    data.dpi_parametrization = static_cast<int>(parametrization);
  }
  // Y_S's block k is zero outside the rows that support body k (set zero at construction); the
  // blocks are a few rows by 10, where a coefficient-wise product beats a packed one.
  for (int k = 0; k < model.numBodies(); ++k)
    for (const auto& [start, size] : model.supportRows(k))
      data.dtau_dtheta.block(start, 10 * k, size, 10).noalias() =
          data.Y.block(start, 10 * k, size, 10).lazyProduct(data.dpi_dtheta.middleCols<10>(10 * k));
  return data.dtau_dtheta;
}

Eigen::VectorXd piFromTheta(const RegressorModel& model, inertia::Parametrization parametrization,
                            const Eigen::Ref<const Eigen::VectorXd>& theta_S) {
  requireSize(theta_S.size(), model.numParameters(), "theta_S");
  Eigen::VectorXd pi(model.numParameters());
  for (int k = 0; k < model.numBodies(); ++k) {
    const Vector10 theta = theta_S.segment<10>(10 * k);
    pi.segment<10>(10 * k) = inertia::piFromTheta(parametrization, theta);
  }
  return pi;
}

}  // namespace heft::dynamics
