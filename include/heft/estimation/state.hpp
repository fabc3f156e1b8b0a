#pragma once
/// \file The manifold a problem's states live on: x = (q, v) of a Pinocchio model (q on the
/// configuration Lie group, v Euclidean), or a plain vector space for tests and toy problems.
///
/// Conventions (docs/estimation.md): dx lives in the tangent space, ndx = 2 nv for a robot;
/// difference(x0, x1) = x1 ⊖ x0 in the tangent space at x0; integrate(x, dx) = x ⊕ dx. Jacobians
/// follow Pinocchio's dIntegrate / dDifference: expressed in the tangent space of the output.
#include <memory>
#include <vector>

#include <Eigen/Core>
#include <pinocchio/multibody/model.hpp>

namespace heft::estimation {

/// Tangent coordinates [start, start + size).
struct TangentBlock {
  int start = 0;
  int size = 0;
};

/// Lie-group operations on the state. Implementations do not allocate.
class StateManifold {
 public:
  /// Until a derived class says otherwise, the whole tangent space is one curved block.
  StateManifold(int nx, int ndx) : nx_(nx), ndx_(ndx) { curved_blocks_.push_back({0, ndx}); }
  virtual ~StateManifold() = default;

  int nx() const { return nx_; }
  int ndx() const { return ndx_; }

  /// The tangent blocks on which difference() is not plain subtraction, in increasing order.
  /// Outside them differenceJacobians() gives J_x0 = -I and J_x1 = I, and both Jacobians are block
  /// diagonal over these blocks, so a solver may map a Jacobian through -J_x0^{-1} J_x1 block by
  /// block and leave the other rows alone (the identity). A free-flyer robot has one block of 6
  /// among 2 nv coordinates.
  const std::vector<TangentBlock>& curvedBlocks() const { return curved_blocks_; }

  /// out = x ⊕ dx (nx).
  virtual void integrate(const Eigen::Ref<const Eigen::VectorXd>& x,
                         const Eigen::Ref<const Eigen::VectorXd>& dx,
                         Eigen::Ref<Eigen::VectorXd> out) const = 0;
  /// out = x1 ⊖ x0 (ndx), in the tangent space at x0.
  virtual void difference(const Eigen::Ref<const Eigen::VectorXd>& x0,
                          const Eigen::Ref<const Eigen::VectorXd>& x1,
                          Eigen::Ref<Eigen::VectorXd> out) const = 0;
  /// Jacobians of integrate(x, dx) w.r.t. x (J_x) and dx (J_dx), ndx x ndx each.
  virtual void integrateJacobians(const Eigen::Ref<const Eigen::VectorXd>& x,
                                  const Eigen::Ref<const Eigen::VectorXd>& dx,
                                  Eigen::Ref<Eigen::MatrixXd> J_x,
                                  Eigen::Ref<Eigen::MatrixXd> J_dx) const = 0;
  /// Jacobians of difference(x0, x1) w.r.t. x0 and x1, ndx x ndx each.
  virtual void differenceJacobians(const Eigen::Ref<const Eigen::VectorXd>& x0,
                                   const Eigen::Ref<const Eigen::VectorXd>& x1,
                                   Eigen::Ref<Eigen::MatrixXd> J_x0,
                                   Eigen::Ref<Eigen::MatrixXd> J_x1) const = 0;
  /// differenceJacobians() on the curved blocks only: J_x0 and J_x1 hold those blocks on return,
  /// their other entries are unspecified (a solver that maps by the blocks skips filling and
  /// zeroing two ndx x ndx matrices per knot). The default computes the whole Jacobians.
  virtual void curvedDifferenceJacobians(const Eigen::Ref<const Eigen::VectorXd>& x0,
                                         const Eigen::Ref<const Eigen::VectorXd>& x1,
                                         Eigen::Ref<Eigen::MatrixXd> J_x0,
                                         Eigen::Ref<Eigen::MatrixXd> J_x1) const {
    differenceJacobians(x0, x1, J_x0, J_x1);
  }

 protected:
  std::vector<TangentBlock> curved_blocks_;

 private:
  int nx_;
  int ndx_;
};

/// R^n: integrate is +, difference is -.
class EuclideanState final : public StateManifold {
 public:
  explicit EuclideanState(int n);
  void integrate(const Eigen::Ref<const Eigen::VectorXd>& x,
                 const Eigen::Ref<const Eigen::VectorXd>& dx,
                 Eigen::Ref<Eigen::VectorXd> out) const override;
  void difference(const Eigen::Ref<const Eigen::VectorXd>& x0,
                  const Eigen::Ref<const Eigen::VectorXd>& x1,
                  Eigen::Ref<Eigen::VectorXd> out) const override;
  void integrateJacobians(const Eigen::Ref<const Eigen::VectorXd>& x,
                          const Eigen::Ref<const Eigen::VectorXd>& dx,
                          Eigen::Ref<Eigen::MatrixXd> J_x,
                          Eigen::Ref<Eigen::MatrixXd> J_dx) const override;
  void differenceJacobians(const Eigen::Ref<const Eigen::VectorXd>& x0,
                           const Eigen::Ref<const Eigen::VectorXd>& x1,
                           Eigen::Ref<Eigen::MatrixXd> J_x0,
                           Eigen::Ref<Eigen::MatrixXd> J_x1) const override;
};

/// x = (q, v) of a robot: q by Pinocchio's integrate / difference, v Euclidean.
class MultibodyState final : public StateManifold {
 public:
  /// \param model the robot (shared, not copied; must outlive this object's users).
  explicit MultibodyState(std::shared_ptr<const pinocchio::Model> model);

  const pinocchio::Model& model() const { return *model_; }
  int nq() const { return model_->nq; }
  int nv() const { return model_->nv; }

  void integrate(const Eigen::Ref<const Eigen::VectorXd>& x,
                 const Eigen::Ref<const Eigen::VectorXd>& dx,
                 Eigen::Ref<Eigen::VectorXd> out) const override;
  void difference(const Eigen::Ref<const Eigen::VectorXd>& x0,
                  const Eigen::Ref<const Eigen::VectorXd>& x1,
                  Eigen::Ref<Eigen::VectorXd> out) const override;
  void integrateJacobians(const Eigen::Ref<const Eigen::VectorXd>& x,
                          const Eigen::Ref<const Eigen::VectorXd>& dx,
                          Eigen::Ref<Eigen::MatrixXd> J_x,
                          Eigen::Ref<Eigen::MatrixXd> J_dx) const override;
  void differenceJacobians(const Eigen::Ref<const Eigen::VectorXd>& x0,
                           const Eigen::Ref<const Eigen::VectorXd>& x1,
                           Eigen::Ref<Eigen::MatrixXd> J_x0,
                           Eigen::Ref<Eigen::MatrixXd> J_x1) const override;
  void curvedDifferenceJacobians(const Eigen::Ref<const Eigen::VectorXd>& x0,
                                 const Eigen::Ref<const Eigen::VectorXd>& x1,
                                 Eigen::Ref<Eigen::MatrixXd> J_x0,
                                 Eigen::Ref<Eigen::MatrixXd> J_x1) const override;

 private:
  std::shared_ptr<const pinocchio::Model> model_;
};

}  // namespace heft::estimation
