#include "heft/estimation/state.hpp"

#include <pinocchio/algorithm/joint-configuration.hpp>

#include "heft/common/error.hpp"

namespace heft::estimation {

EuclideanState::EuclideanState(int n) : StateManifold(n, n) {
  require(n > 0, "EuclideanState dimension", "> 0", std::to_string(n));
  curved_blocks_.clear();
}

void EuclideanState::integrate(const Eigen::Ref<const Eigen::VectorXd>& x,
                               const Eigen::Ref<const Eigen::VectorXd>& dx,
                               Eigen::Ref<Eigen::VectorXd> out) const {
  out = x + dx;
}

void EuclideanState::difference(const Eigen::Ref<const Eigen::VectorXd>& x0,
                                const Eigen::Ref<const Eigen::VectorXd>& x1,
                                Eigen::Ref<Eigen::VectorXd> out) const {
  out = x1 - x0;
}

void EuclideanState::integrateJacobians(const Eigen::Ref<const Eigen::VectorXd>&,
                                        const Eigen::Ref<const Eigen::VectorXd>&,
                                        Eigen::Ref<Eigen::MatrixXd> J_x,
                                        Eigen::Ref<Eigen::MatrixXd> J_dx) const {
  J_x.setIdentity();
  J_dx.setIdentity();
}

void EuclideanState::differenceJacobians(const Eigen::Ref<const Eigen::VectorXd>&,
                                         const Eigen::Ref<const Eigen::VectorXd>&,
                                         Eigen::Ref<Eigen::MatrixXd> J_x0,
                                         Eigen::Ref<Eigen::MatrixXd> J_x1) const {
  J_x0 = -Eigen::MatrixXd::Identity(ndx(), ndx());
  J_x1.setIdentity();
}

MultibodyState::MultibodyState(std::shared_ptr<const pinocchio::Model> model)
    : StateManifold(model ? model->nq + model->nv : 0, model ? 2 * model->nv : 0),
      model_(std::move(model)) {
  require(model_ != nullptr, "MultibodyState model", "a robot model", "null");
  // Pinocchio's LieGroupMap puts every joint on a vector space (difference q1 - q0) except the
  // free flyer, spherical, planar and unbounded revolute joints (and composites holding them), all
  // with nq != nv; dDifference works joint by joint, so the Jacobians are block diagonal over
  // joints. v is Euclidean.
  curved_blocks_.clear();
  for (std::size_t j = 1; j < model_->joints.size(); ++j) {
    const auto& joint = model_->joints[j];
    if (joint.nq() != joint.nv()) curved_blocks_.push_back(TangentBlock{joint.idx_v(), joint.nv()});
  }
}

void MultibodyState::integrate(const Eigen::Ref<const Eigen::VectorXd>& x,
                               const Eigen::Ref<const Eigen::VectorXd>& dx,
                               Eigen::Ref<Eigen::VectorXd> out) const {
  const int nq = model_->nq, nv = model_->nv;
  pinocchio::integrate(*model_, x.head(nq), dx.head(nv), out.head(nq));
  out.tail(nv) = x.tail(nv) + dx.tail(nv);
}

void MultibodyState::difference(const Eigen::Ref<const Eigen::VectorXd>& x0,
                                const Eigen::Ref<const Eigen::VectorXd>& x1,
                                Eigen::Ref<Eigen::VectorXd> out) const {
  const int nq = model_->nq, nv = model_->nv;
  pinocchio::difference(*model_, x0.head(nq), x1.head(nq), out.head(nv));
  out.tail(nv) = x1.tail(nv) - x0.tail(nv);
}

void MultibodyState::integrateJacobians(const Eigen::Ref<const Eigen::VectorXd>& x,
                                        const Eigen::Ref<const Eigen::VectorXd>& dx,
                                        Eigen::Ref<Eigen::MatrixXd> J_x,
                                        Eigen::Ref<Eigen::MatrixXd> J_dx) const {
  const int nq = model_->nq, nv = model_->nv;
  J_x.setZero();
  J_dx.setZero();
  pinocchio::dIntegrate(*model_, x.head(nq), dx.head(nv), J_x.topLeftCorner(nv, nv),
                        pinocchio::ARG0);
  pinocchio::dIntegrate(*model_, x.head(nq), dx.head(nv), J_dx.topLeftCorner(nv, nv),
                        pinocchio::ARG1);
  J_x.bottomRightCorner(nv, nv).setIdentity();
  J_dx.bottomRightCorner(nv, nv).setIdentity();
}

void MultibodyState::differenceJacobians(const Eigen::Ref<const Eigen::VectorXd>& x0,
                                         const Eigen::Ref<const Eigen::VectorXd>& x1,
                                         Eigen::Ref<Eigen::MatrixXd> J_x0,
                                         Eigen::Ref<Eigen::MatrixXd> J_x1) const {
  const int nq = model_->nq, nv = model_->nv;
  J_x0.setZero();
  J_x1.setZero();
  pinocchio::dDifference(*model_, x0.head(nq), x1.head(nq), J_x0.topLeftCorner(nv, nv),
                         pinocchio::ARG0);
  pinocchio::dDifference(*model_, x0.head(nq), x1.head(nq), J_x1.topLeftCorner(nv, nv),
                         pinocchio::ARG1);
  J_x0.bottomRightCorner(nv, nv) = -Eigen::MatrixXd::Identity(nv, nv);
  J_x1.bottomRightCorner(nv, nv).setIdentity();
}

// Pinocchio's dDifference writes every joint's diagonal block of the q-rows (the curved blocks
// among them) and nothing else.
void MultibodyState::curvedDifferenceJacobians(const Eigen::Ref<const Eigen::VectorXd>& x0,
                                               const Eigen::Ref<const Eigen::VectorXd>& x1,
                                               Eigen::Ref<Eigen::MatrixXd> J_x0,
                                               Eigen::Ref<Eigen::MatrixXd> J_x1) const {
  const int nq = model_->nq, nv = model_->nv;
  pinocchio::dDifference(*model_, x0.head(nq), x1.head(nq), J_x0.topLeftCorner(nv, nv),
                         pinocchio::ARG0);
  pinocchio::dDifference(*model_, x0.head(nq), x1.head(nq), J_x1.topLeftCorner(nv, nv),
                         pinocchio::ARG1);
}

}  // namespace heft::estimation
