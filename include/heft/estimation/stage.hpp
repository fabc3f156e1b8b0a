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
/// A running stage may also carry nh equality rows h_k(x_k, w_k; theta) = 0 (the bayesian-sysid
/// paper's eq. 72: implicit dynamics such as an inverse-dynamics balance). The solver eliminates
/// them inside its backward pass on the nullspace of H_w (eqs. 76-79), which must have full row
/// rank nh <= nw.
///
/// Jacobian conventions: R_x, F_x w.r.t. x in the tangent space at x (column i: d/d eps of
/// g(x ⊕ eps e_i)); F_* in the tangent space at f (row space: f(x ⊕ dx) ⊖ f(x)).
#include <map>
#include <memory>
#include <typeindex>
#include <typeinfo>
#include <utility>

#include <Eigen/Core>

namespace heft::estimation {

/// Outputs of one stage's calc / calcDiff; models derive from it for their workspaces.
struct StageData {
  StageData(int nx, int ndx, int nw, int nr, int np, bool has_dynamics, int nh = 0);
  virtual ~StageData() = default;

  // ---- calc ----
  Eigen::VectorXd r;      ///< nr whitened residual
  double cost = 0;        ///< 0.5 |r|^2
  Eigen::VectorXd xnext;  ///< nx: f(x, w; theta) (running stages)
  Eigen::VectorXd h;      ///< nh: the equality rows' values (0 at a feasible point)

  // ---- calcDiff ----
  Eigen::MatrixXd R_x, R_w, R_theta;  ///< nr x ndx, nr x nw, nr x np
  Eigen::MatrixXd F_x, F_w, F_theta;  ///< ndx x ndx, ndx x nw, ndx x np (running stages)
  Eigen::MatrixXd H_x, H_w, H_theta;  ///< nh x ndx, nh x nw, nh x np (equality rows)

  /// Optional structure of F that a solver may use to skip products (F stays complete). A
  /// semi-implicit step of x = (q, v), ndx = 2 nv, with w = (w_q, w_v), w_q of size nv and
  /// q' = (q ⊕ dt v') ⊕ w_q: with F^v_* the bottom nv rows (the rows of v'),
  ///   F_x     = [A_q 0; 0 0] + [S_q; I] F^v_x,
  ///   F_w     = [B_q 0; 0 0] + [S_q; I] F^v_w,   F^v_w's w_q columns zero,
  ///   F_theta =                [S_q; I] F^v_theta,
  /// with A_q, B_q, S_q (nv x nv) block diagonal on the state's curved blocks
  /// (StateManifold::curvedBlocks, all within the first nv tangent coordinates) and diagonal
  /// elsewhere. And w_q enters the residual only through rows of its own: R_w's w_q columns are
  /// zero in every row where R_x, R_theta or R_w's w_v columns are not (its prior), so that a
  /// solver may eliminate w_q from the next knot's value function before the rest.
  /// Set by the stage's data; filled by calcDiff.
  bool semi_implicit = false;
  Eigen::MatrixXd A_q, B_q, S_q;  ///< dq'/dq at fixed v', dq'/dw_q, dq'/dv'
};

/// The Gauss-Newton expansion of a stage's cost 0.5 |r + R_x dx + R_w dw + R_theta dtheta|^2:
/// the Hessian blocks R_a^T R_b and the gradients R_a^T r, written into a solver's workspace
/// (ndx, nw, np rows; a terminal stage's w blocks have nw = 0 rows or columns).
struct GaussNewtonTerms {
  Eigen::Ref<Eigen::MatrixXd> xx, xw, ww, xt, wt, tt;
  Eigen::Ref<Eigen::VectorXd> x, w, t;
};

/// Adds one dense row r + row^T [dx; dw; dtheta] to `out` (a rank-one update): `row` holds its
/// x, w and theta coefficients in that order.
void addDenseRow(GaussNewtonTerms& out, const Eigen::Ref<const Eigen::VectorXd>& row,
                 double residual);

/// Scratch memory that the datas of many stages share when they are used one at a time (one
/// solver, one thread): a go2 stage's Pinocchio workspaces take about 2 MB; with them shared the
/// solver holds ~150 kB per knot, outputs and its own buffers (docs/estimation.md, "Speed and
/// memory"). Items are keyed by their type and an address (a dynamics model's), created on first
/// request.
class StageWorkspace {
 public:
  template <class T, class Make>
  std::shared_ptr<T> get(const void* key, Make make) {
    auto& item = items_[{std::type_index(typeid(T)), key}];
    if (!item) item = std::shared_ptr<T>(make());
    return std::static_pointer_cast<T>(item);
  }

 private:
  std::map<std::pair<std::type_index, const void*>, std::shared_ptr<void>> items_;
};

/// The constant part of a stage. calc, calcDiff and gaussNewton must not allocate.
class StageModel {
 public:
  /// \param nw 0 for a terminal stage (has_dynamics false).
  /// \param nh equality rows (running stages only), at most nw.
  StageModel(int nx, int ndx, int nw, int nr, int np, bool has_dynamics, int nh = 0);
  virtual ~StageModel() = default;

  int nx() const { return nx_; }
  int ndx() const { return ndx_; }
  int nw() const { return nw_; }
  int nr() const { return nr_; }
  int np() const { return np_; }
  int nh() const { return nh_; }
  bool hasDynamics() const { return has_dynamics_; }

  /// A data with workspaces of its own: independent of every other data.
  virtual std::unique_ptr<StageData> createData() const = 0;
  /// A data whose scratch memory comes from `workspace` and is shared with the other datas made
  /// from it: their calc / calcDiff calls must not overlap in time (one thread), and calcDiff
  /// must not rely on scratch left by calc (only on the data's own members). The default makes an
  /// independent data.
  virtual std::unique_ptr<StageData> createDataSharing(StageWorkspace& workspace) const;
  /// r, cost and (running stages) xnext at (x, w, theta). w is empty for a terminal stage.
  virtual void calc(StageData& data, const Eigen::Ref<const Eigen::VectorXd>& x,
                    const Eigen::Ref<const Eigen::VectorXd>& w,
                    const Eigen::Ref<const Eigen::VectorXd>& theta) const = 0;
  /// Every Jacobian at (x, w, theta); calc was called with the same arguments just before.
  virtual void calcDiff(StageData& data, const Eigen::Ref<const Eigen::VectorXd>& x,
                        const Eigen::Ref<const Eigen::VectorXd>& w,
                        const Eigen::Ref<const Eigen::VectorXd>& theta) const = 0;
  /// Overwrites every term from data's r and Jacobians (calcDiff was called). The default forms
  /// the dense products; a model that knows which rows are zero or diagonal in a block can skip
  /// them (the solver's backward pass spends most of its time here and in the dynamics' terms).
  virtual void gaussNewton(const StageData& data, GaussNewtonTerms& out) const;
  /// e = R_x dx + R_w dw + R_theta dtheta (nr) from data's Jacobians (calcDiff was called); dw
  /// empty for a terminal stage. The default forms the dense products; like gaussNewton, a model
  /// may skip rows it knows (the solver's linear rollout reads every knot's data).
  virtual void linearResidual(const StageData& data, const Eigen::Ref<const Eigen::VectorXd>& dx,
                              const Eigen::Ref<const Eigen::VectorXd>& dw,
                              const Eigen::Ref<const Eigen::VectorXd>& dtheta,
                              Eigen::Ref<Eigen::VectorXd> e) const;

 private:
  int nx_, ndx_, nw_, nr_, np_, nh_;
  bool has_dynamics_;
};

}  // namespace heft::estimation
