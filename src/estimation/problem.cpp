#include "heft/estimation/problem.hpp"

#include <string>

#include "heft/common/error.hpp"

namespace heft::estimation {
namespace {

std::string dims(Eigen::Index rows, Eigen::Index cols) {
  return std::to_string(rows) + " x " + std::to_string(cols);
}

void checkStage(const StageModel& stage, const std::string& name, int nx, int ndx, int np) {
  require(stage.nx() == nx && stage.ndx() == ndx, name + " state dimensions (nx, ndx)",
          std::to_string(nx) + ", " + std::to_string(ndx) + " (the problem's state)",
          std::to_string(stage.nx()) + ", " + std::to_string(stage.ndx()));
  require(stage.np() == np, name + " parameter dimension", std::to_string(np),
          std::to_string(stage.np()));
}

}  // namespace

Problem::Problem(std::shared_ptr<const StateManifold> state,
                 std::vector<std::shared_ptr<const StageModel>> running,
                 std::shared_ptr<const StageModel> terminal, ArrivalPrior arrival)
    : state_(std::move(state)),
      running_(std::move(running)),
      terminal_(std::move(terminal)),
      arrival_(std::move(arrival)) {
  require(state_ != nullptr, "problem state manifold", "non-null", "null");
  require(!running_.empty(), "problem horizon", "at least one running stage", "0");
  require(terminal_ != nullptr, "problem terminal stage", "non-null", "null");
  require(!terminal_->hasDynamics(), "problem terminal stage", "a stage without dynamics",
          "a running stage");
  np_ = running_.front() ? running_.front()->np() : 0;
  for (std::size_t k = 0; k < running_.size(); ++k) {
    const std::string name = "running stage " + std::to_string(k);
    require(running_[k] != nullptr, name, "non-null", "null");
    require(running_[k]->hasDynamics(), name, "a stage with dynamics", "a terminal stage");
    checkStage(*running_[k], name, nx(), ndx(), np_);
    num_w_ += running_[k]->nw();
  }
  checkStage(*terminal_, "terminal stage", nx(), ndx(), np_);
  require(arrival_.x_mean.size() == nx(), "arrival x_mean size", std::to_string(nx()),
          std::to_string(arrival_.x_mean.size()));
  require(arrival_.x_sqrt_info.rows() == ndx() && arrival_.x_sqrt_info.cols() == ndx(),
          "arrival x_sqrt_info", dims(ndx(), ndx()),
          dims(arrival_.x_sqrt_info.rows(), arrival_.x_sqrt_info.cols()));
  require(arrival_.theta_mean.size() == np_, "arrival theta_mean size", std::to_string(np_),
          std::to_string(arrival_.theta_mean.size()));
  require(arrival_.theta_sqrt_info.rows() == np_ && arrival_.theta_sqrt_info.cols() == np_,
          "arrival theta_sqrt_info", dims(np_, np_),
          dims(arrival_.theta_sqrt_info.rows(), arrival_.theta_sqrt_info.cols()));
  require(arrival_.x_mean.allFinite() && arrival_.x_sqrt_info.allFinite() &&
              arrival_.theta_mean.allFinite() && arrival_.theta_sqrt_info.allFinite(),
          "arrival prior", "finite values", "NaN or infinity");
}

void Problem::setParameterConstraints(std::shared_ptr<const ParameterConstraints> constraints) {
  require(!constraints || constraints->np() == np_, "parameter constraints' theta size",
          std::to_string(np_), std::to_string(constraints ? constraints->np() : 0));
  constraints_ = std::move(constraints);
}

void Problem::setInertiaParametrization(inertia::Parametrization parametrization, int bodies) {
  require(bodies >= 0 && 10 * bodies <= np_, "bodies of the inertia parametrization",
          "0 to " + std::to_string(np_ / 10), std::to_string(bodies));
  inertia_layout_ = InertiaLayout{parametrization, bodies};
}

}  // namespace heft::estimation
