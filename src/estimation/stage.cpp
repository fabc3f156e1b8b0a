#include "heft/estimation/stage.hpp"

#include <string>

#include "heft/common/error.hpp"

namespace heft::estimation {

StageData::StageData(int nx, int ndx, int nw, int nr, int np, bool has_dynamics, int nh)
    : r(Eigen::VectorXd::Zero(nr)),
      xnext(Eigen::VectorXd::Zero(has_dynamics ? nx : 0)),
      h(Eigen::VectorXd::Zero(nh)),
      R_x(Eigen::MatrixXd::Zero(nr, ndx)),
      R_w(Eigen::MatrixXd::Zero(nr, nw)),
      R_theta(Eigen::MatrixXd::Zero(nr, np)),
      F_x(Eigen::MatrixXd::Zero(has_dynamics ? ndx : 0, ndx)),
      F_w(Eigen::MatrixXd::Zero(has_dynamics ? ndx : 0, nw)),
      F_theta(Eigen::MatrixXd::Zero(has_dynamics ? ndx : 0, np)),
      H_x(Eigen::MatrixXd::Zero(nh, ndx)),
      H_w(Eigen::MatrixXd::Zero(nh, nw)),
      H_theta(Eigen::MatrixXd::Zero(nh, np)) {}

StageModel::StageModel(int nx, int ndx, int nw, int nr, int np, bool has_dynamics, int nh)
    : nx_(nx), ndx_(ndx), nw_(nw), nr_(nr), np_(np), nh_(nh), has_dynamics_(has_dynamics) {
  require(nx > 0 && ndx > 0, "stage state dimensions (nx, ndx)", "> 0",
          std::to_string(nx) + ", " + std::to_string(ndx));
  require(nr >= 0 && np >= 0, "stage residual / parameter dimensions", ">= 0",
          std::to_string(nr) + ", " + std::to_string(np));
  require(has_dynamics ? nw > 0 : nw == 0, "stage decision dimension nw",
          has_dynamics ? "> 0 for a running stage" : "0 for a terminal stage", std::to_string(nw));
  require(nh >= 0 && nh <= nw, "stage equality rows nh",
          "in [0, nw]: no more rows than decisions to satisfy them (" + std::to_string(nw) + ")",
          std::to_string(nh));
}

std::unique_ptr<StageData> StageModel::createDataSharing(StageWorkspace&) const {
  return createData();
}

void StageModel::gaussNewton(const StageData& d, GaussNewtonTerms& out) const {
  out.xx.noalias() = d.R_x.transpose() * d.R_x;
  out.xw.noalias() = d.R_x.transpose() * d.R_w;
  out.ww.noalias() = d.R_w.transpose() * d.R_w;
  out.xt.noalias() = d.R_x.transpose() * d.R_theta;
  out.wt.noalias() = d.R_w.transpose() * d.R_theta;
  out.tt.noalias() = d.R_theta.transpose() * d.R_theta;
  out.x.noalias() = d.R_x.transpose() * d.r;
  out.w.noalias() = d.R_w.transpose() * d.r;
  out.t.noalias() = d.R_theta.transpose() * d.r;
}

void StageModel::linearResidual(const StageData& d, const Eigen::Ref<const Eigen::VectorXd>& dx,
                                const Eigen::Ref<const Eigen::VectorXd>& dw,
                                const Eigen::Ref<const Eigen::VectorXd>& dtheta,
                                Eigen::Ref<Eigen::VectorXd> e) const {
  e.noalias() = d.R_x * dx;
  if (nw_ > 0) e.noalias() += d.R_w * dw;
  e.noalias() += d.R_theta * dtheta;
}

void addDenseRow(GaussNewtonTerms& out, const Eigen::Ref<const Eigen::VectorXd>& row,
                 double residual) {
  const auto nx = out.x.size(), nw = out.w.size();
  const auto ex = row.head(nx), ew = row.segment(nx, nw), et = row.tail(out.t.size());
  out.xx.noalias() += ex * ex.transpose();
  out.xw.noalias() += ex * ew.transpose();
  out.ww.noalias() += ew * ew.transpose();
  out.xt.noalias() += ex * et.transpose();
  out.wt.noalias() += ew * et.transpose();
  out.tt.noalias() += et * et.transpose();
  out.x += residual * ex;
  out.w += residual * ew;
  out.t += residual * et;
}

}  // namespace heft::estimation
