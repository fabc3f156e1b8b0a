#pragma once
/// \file One knot of an estimation horizon (../shared/DESIGN.md, "Solvers share one vocabulary").
///
/// A stage k has a state x_k on the problem's manifold, a decision w_k (process noise, in the
/// tangent space of the next state), the global parameters theta, a whitened residual r_k (its cost
/// is 0.5 |r_k|^2: measurements and the process-noise prior, each already multiplied by its
/// square-root information) and, unless it is the terminal stage, the dynamics
///   x_{k+1} = f_k(x_k, w_k; theta).
/// The solvers are Gauss-Newton: they need r and its Jacobians, never second derivatives.
///
/// Jacobian conventions: R_x, F_x w.r.t. x in the tangent space at x (column i: d/d eps of
/// g(x ⊕ eps e_i)); F_* in the tangent space at f (row space: f(x ⊕ dx) ⊖ f(x)).
#include <memory>

#include <Eigen/Core>

namespace heft::estimation {

/// Outputs of one stage's calc / calcDiff; models derive from it for their workspaces.
struct StageData {
  StageData(int nx, int ndx, int nw, int nr, int np, bool has_dynamics);
  virtual ~StageData() = default;

  // ---- calc ----
  Eigen::VectorXd r;      ///< nr whitened residual
  double cost = 0;        ///< 0.5 |r|^2
  Eigen::VectorXd xnext;  ///< nx: f(x, w; theta) (running stages)

  // ---- calcDiff ----
  Eigen::MatrixXd R_x, R_w, R_theta;  ///< nr x ndx, nr x nw, nr x np
  Eigen::MatrixXd F_x, F_w, F_theta;  ///< ndx x ndx, ndx x nw, ndx x np (running stages)
};

/// The constant part of a stage. calc and calcDiff must not allocate.
class StageModel {
 public:
  /// \param nw 0 for a terminal stage (has_dynamics false).
  StageModel(int nx, int ndx, int nw, int nr, int np, bool has_dynamics);
  virtual ~StageModel() = default;

  int nx() const { return nx_; }
  int ndx() const { return ndx_; }
  int nw() const { return nw_; }
  int nr() const { return nr_; }
  int np() const { return np_; }
  bool hasDynamics() const { return has_dynamics_; }

  virtual std::unique_ptr<StageData> createData() const = 0;
  /// r, cost and (running stages) xnext at (x, w, theta). w is empty for a terminal stage.
  virtual void calc(StageData& data, const Eigen::Ref<const Eigen::VectorXd>& x,
                    const Eigen::Ref<const Eigen::VectorXd>& w,
                    const Eigen::Ref<const Eigen::VectorXd>& theta) const = 0;
  /// Every Jacobian at (x, w, theta); calc was called with the same arguments just before.
  virtual void calcDiff(StageData& data, const Eigen::Ref<const Eigen::VectorXd>& x,
                        const Eigen::Ref<const Eigen::VectorXd>& w,
                        const Eigen::Ref<const Eigen::VectorXd>& theta) const = 0;

 private:
  int nx_, ndx_, nw_, nr_, np_;
  bool has_dynamics_;
};

}  // namespace heft::estimation
