#pragma once
/// \file A stage whose derivatives are central finite differences of another stage's calc: a
/// reference for a new stage model's analytical calcDiff (tests), or a stand-in while it has
/// none (Crocoddyl's ActionModelNumDiff, for this vocabulary).
///
/// Every Jacobian the analytical calcDiff fills is differenced, column by column with step h:
///   x:     g(x ⊕ ±h e_i) through StateManifold::integrate (tangent space at x),
///   w, theta: plain ± h e_i,
/// R_* = (r+ - r-) / 2h, and F_* = ((f+ ⊖ f) - (f- ⊖ f)) / 2h in the tangent space at f = f(x, w;
/// theta) through StateManifold::difference. Truncation error h^2/6 |g'''|, rounding error
/// ~ eps |g| / h: h = cbrt(eps) ~ 6e-6 balances them (relative accuracy ~ 1e-10 at O(1) scales).
/// Cost: 2 (ndx + nw + np) calls of the wrapped calc per calcDiff.
///
/// The data does not carry the semi-implicit structure of F (StageData::semi_implicit is false:
/// A_q, B_q, S_q are internal to a model), so a solver takes its dense path; gaussNewton and
/// linearResidual are the dense defaults of StageModel.
#include <cmath>
#include <limits>
#include <memory>

#include "heft/estimation/stage.hpp"
#include "heft/estimation/state.hpp"

namespace heft::estimation {

/// Options of StageModelNumDiff.
struct StageNumDiffOptions {
  /// Central-difference step h, the same for x (tangent coordinates), w and theta.
  double step = std::cbrt(std::numeric_limits<double>::epsilon());
  /// Throws InputError unless step is finite and in (0, 1).
  void validate() const;
};

/// Data of StageModelNumDiff: the wrapped model's datas and the difference buffers, allocated in
/// createData.
struct StageNumDiffData final : StageData {
  StageNumDiffData(const StageModel& model, std::unique_ptr<StageData> at_point,
                   std::unique_ptr<StageData> perturbed);
  std::unique_ptr<StageData> at_point;           ///< the wrapped model's data at (x, w, theta)
  std::unique_ptr<StageData> perturbed;          ///< its data at the perturbed points
  Eigen::VectorXd x_perturbed;                   ///< nx: x ⊕ ±h e_i
  Eigen::VectorXd dx;                            ///< ndx: ±h e_i
  Eigen::VectorXd w_perturbed, theta_perturbed;  ///< nw, np
  Eigen::VectorXd r_plus;                        ///< nr: r at the + point
  Eigen::VectorXd f_plus, f_minus;               ///< ndx: f± ⊖ f
};

/// Wraps a stage model: calc delegates to it, calcDiff fills R_x, R_w, R_theta and (running
/// stages) F_x, F_w, F_theta by central differences of its calc (see the file comment).
/// calcDiff allocates nothing beyond what the wrapped calc allocates (nothing, for a model that
/// keeps StageModel's contract).
class StageModelNumDiff final : public StageModel {
 public:
  using Options = StageNumDiffOptions;
  /// \param model the stage to difference (shared, not copied).
  /// \param state its state manifold: x is perturbed by integrate, f compared by difference.
  /// \throws InputError on a null argument, a state of other dimensions or invalid options.
  StageModelNumDiff(std::shared_ptr<const StageModel> model,
                    std::shared_ptr<const StateManifold> state, const Options& options = {});

  const StageModel& model() const { return *model_; }
  const Options& options() const { return options_; }

  std::unique_ptr<StageData> createData() const override;
  /// The wrapped model's datas share `workspace` (its calls from calcDiff do not overlap).
  std::unique_ptr<StageData> createDataSharing(StageWorkspace& workspace) const override;
  /// r, cost, xnext of the wrapped model.
  void calc(StageData& data, const Eigen::Ref<const Eigen::VectorXd>& x,
            const Eigen::Ref<const Eigen::VectorXd>& w,
            const Eigen::Ref<const Eigen::VectorXd>& theta) const override;
  /// Every Jacobian by central differences; calc was called with the same arguments just before.
  void calcDiff(StageData& data, const Eigen::Ref<const Eigen::VectorXd>& x,
                const Eigen::Ref<const Eigen::VectorXd>& w,
                const Eigen::Ref<const Eigen::VectorXd>& theta) const override;

 private:
  // Column i of R and F from the + and - evaluations left in `d`'s buffers and `d.perturbed`.
  void column(StageNumDiffData& d, Eigen::MatrixXd& R, Eigen::MatrixXd& F, int i) const;

  std::shared_ptr<const StageModel> model_;
  std::shared_ptr<const StateManifold> state_;
  Options options_;
};

}  // namespace heft::estimation
