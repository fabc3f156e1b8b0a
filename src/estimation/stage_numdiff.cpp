#include "heft/estimation/stage_numdiff.hpp"

#include <string>
#include <utility>

#include "heft/common/error.hpp"

namespace heft::estimation {

void StageNumDiffOptions::validate() const {
  require(std::isfinite(step) && step > 0 && step < 1, "numdiff step", "a finite value in (0, 1)",
          std::to_string(step));
}

StageNumDiffData::StageNumDiffData(const StageModel& model, std::unique_ptr<StageData> at_point_,
                                   std::unique_ptr<StageData> perturbed_)
    : StageData(model.nx(), model.ndx(), model.nw(), model.nr(), model.np(), model.hasDynamics()),
      at_point(std::move(at_point_)),
      perturbed(std::move(perturbed_)),
      x_perturbed(Eigen::VectorXd::Zero(model.nx())),
      dx(Eigen::VectorXd::Zero(model.ndx())),
      w_perturbed(Eigen::VectorXd::Zero(model.nw())),
      theta_perturbed(Eigen::VectorXd::Zero(model.np())),
      r_plus(Eigen::VectorXd::Zero(model.nr())),
      f_plus(Eigen::VectorXd::Zero(model.hasDynamics() ? model.ndx() : 0)),
      f_minus(Eigen::VectorXd::Zero(model.hasDynamics() ? model.ndx() : 0)) {}

StageModelNumDiff::StageModelNumDiff(std::shared_ptr<const StageModel> model,
                                     std::shared_ptr<const StateManifold> state,
                                     const Options& options)
    : StageModel(model ? model->nx() : 1, model ? model->ndx() : 1, model ? model->nw() : 0,
                 model ? model->nr() : 0, model ? model->np() : 0,
                 model ? model->hasDynamics() : false),
      model_(std::move(model)),
      state_(std::move(state)),
      options_(options) {
  require(model_ != nullptr && state_ != nullptr, "numdiff stage", "a model and a state", "null");
  require(state_->nx() == nx() && state_->ndx() == ndx(), "numdiff stage state",
          "the model's nx, ndx (" + std::to_string(nx()) + ", " + std::to_string(ndx()) + ")",
          std::to_string(state_->nx()) + ", " + std::to_string(state_->ndx()));
  options_.validate();
}

std::unique_ptr<StageData> StageModelNumDiff::createData() const {
  return std::make_unique<StageNumDiffData>(*this, model_->createData(), model_->createData());
}

std::unique_ptr<StageData> StageModelNumDiff::createDataSharing(StageWorkspace& workspace) const {
  return std::make_unique<StageNumDiffData>(*this, model_->createDataSharing(workspace),
                                            model_->createDataSharing(workspace));
}

void StageModelNumDiff::calc(StageData& data, const Eigen::Ref<const Eigen::VectorXd>& x,
                             const Eigen::Ref<const Eigen::VectorXd>& w,
                             const Eigen::Ref<const Eigen::VectorXd>& theta) const {
  auto& d = static_cast<StageNumDiffData&>(data);
  model_->calc(*d.at_point, x, w, theta);
  d.r = d.at_point->r;
  d.cost = d.at_point->cost;
  if (hasDynamics()) d.xnext = d.at_point->xnext;
}

void StageModelNumDiff::column(StageNumDiffData& d, Eigen::MatrixXd& R, Eigen::MatrixXd& F,
                               int i) const {
  const double h = options_.step;
  R.col(i) = (d.r_plus - d.perturbed->r) / (2 * h);
  if (hasDynamics()) F.col(i) = (d.f_plus - d.f_minus) / (2 * h);
}

void StageModelNumDiff::calcDiff(StageData& data, const Eigen::Ref<const Eigen::VectorXd>& x,
                                 const Eigen::Ref<const Eigen::VectorXd>& w,
                                 const Eigen::Ref<const Eigen::VectorXd>& theta) const {
  auto& d = static_cast<StageNumDiffData&>(data);
  const double h = options_.step;
  const bool dynamics = hasDynamics();
  // The wrapped calc at a perturbed point; the + point's outputs are kept for the column.
  auto evaluate = [&](const Eigen::Ref<const Eigen::VectorXd>& xp,
                      const Eigen::Ref<const Eigen::VectorXd>& wp,
                      const Eigen::Ref<const Eigen::VectorXd>& tp, bool plus) {
    model_->calc(*d.perturbed, xp, wp, tp);
    if (plus) d.r_plus = d.perturbed->r;
    if (dynamics)
      state_->difference(d.at_point->xnext, d.perturbed->xnext, plus ? d.f_plus : d.f_minus);
  };
  for (int i = 0; i < ndx(); ++i) {
    d.dx.setZero();
    for (const double s : {h, -h}) {
      d.dx(i) = s;
      state_->integrate(x, d.dx, d.x_perturbed);
      evaluate(d.x_perturbed, w, theta, s > 0);
    }
    column(d, d.R_x, d.F_x, i);
  }
  d.w_perturbed = w;
  for (int i = 0; i < nw(); ++i) {
    for (const double s : {h, -h}) {
      d.w_perturbed(i) = w(i) + s;
      evaluate(x, d.w_perturbed, theta, s > 0);
    }
    d.w_perturbed(i) = w(i);
    column(d, d.R_w, d.F_w, i);
  }
  d.theta_perturbed = theta;
  for (int i = 0; i < np(); ++i) {
    for (const double s : {h, -h}) {
      d.theta_perturbed(i) = theta(i) + s;
      evaluate(x, w, d.theta_perturbed, s > 0);
    }
    d.theta_perturbed(i) = theta(i);
    column(d, d.R_theta, d.F_theta, i);
  }
}

}  // namespace heft::estimation
