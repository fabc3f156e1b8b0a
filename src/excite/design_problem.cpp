// ExcitationDesign: the cost CMA-ES minimizes, evaluated without allocation.
#include <algorithm>
#include <cmath>
#include <limits>

#include <pinocchio/algorithm/regressor.hpp>
#include <pinocchio/algorithm/rnea.hpp>

#include "heft/common/error.hpp"
#include "heft/excite/design.hpp"

namespace heft::excite {

namespace {

// Floor of the smallest eigenvalue of Y_b^T Y_b relative to the largest: keeps the cost finite
// (and ranked) for trajectories that leave some base parameter unexcited.
constexpr double kEigenFloor = 1e-30;

// Positive part of (use - 1).
double over(double value, double bound) { return std::max(0.0, std::abs(value) / bound - 1); }

}  // namespace

ExcitationDesign::ExcitationDesign(const pinocchio::Model& model, DesignOptions options)
    : model_(model), options_(std::move(options)), data_(model) {
  options_.validate(model_);
  base_ = baseParameters(model_, options_);
  limits_ = JointLimits::from(model_, options_);
  if (options_.joints.empty()) {
    for (int i = 0; i < model_.nv; ++i) excited_.push_back(i);
  } else {
    for (const std::string& name : options_.joints)
      excited_.push_back(model_.joints[model_.getJointId(name)].idx_v());
  }
  // every joint starts held at the middle of its range
  trajectory_.ramp = options_.ramp;
  trajectory_.joints.resize(model_.nv);
  for (int i = 0; i < model_.nv; ++i) {
    trajectory_.joints[i].q0 = limits_.center[i];
    trajectory_.joints[i].base_frequency = options_.base_frequency;
  }
  for (int i : excited_) {
    trajectory_.joints[i].a = Eigen::VectorXd::Zero(options_.harmonics);
    trajectory_.joints[i].b = Eigen::VectorXd::Zero(options_.harmonics);
  }
  q_.resize(model_.nv);
  v_.resize(model_.nv);
  a_.resize(model_.nv);
  Rb_.resize(model_.nv, base_.rank());
  A_.resize(base_.rank(), base_.rank());
  eigen_ = Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd>(base_.rank());
}

void ExcitationDesign::decodeInto(const Eigen::VectorXd& x, ExcitationTrajectory& t) const {
  // checked without building the message first: this runs once per candidate
  if (x.size() != dimension())
    throw InputError("x: expected " + std::to_string(dimension()) + " entries, got " +
                     std::to_string(x.size()));
  const int L = options_.harmonics;
  for (std::size_t j = 0; j < excited_.size(); ++j) {
    const int i = excited_[j];
    const auto xj = x.segment(j * (2 * L + 1), 2 * L + 1);
    const double half = std::isfinite(limits_.half_range[i]) ? limits_.half_range[i] : 1.0;
    const double vmax = std::isfinite(limits_.velocity[i]) ? limits_.velocity[i] : 1.0;
    FourierSeries& s = t.joints[i];
    s.q0 = limits_.center[i] + xj[0] * half;
    s.a = xj.segment(1, L) * (vmax / L);
    s.b = xj.segment(1 + L, L) * (vmax / L);
  }
}

ExcitationTrajectory ExcitationDesign::decode(const Eigen::VectorXd& x) const {
  ExcitationTrajectory t = trajectory_;
  decodeInto(x, t);
  return t;
}

double ExcitationDesign::excess() {
  const Eigen::VectorXd& tau = pinocchio::rnea(model_, data_, q_, v_, a_);
  double e = 0;
  for (int i = 0; i < model_.nv; ++i) {
    e += over(q_[i] - limits_.center[i], limits_.half_range[i]);
    e += over(v_[i], limits_.velocity[i]) + over(a_[i], limits_.acceleration[i]);
    e += over(tau[i], limits_.torque[i]);
  }
  return e;
}

void ExcitationDesign::accumulate() {
  const auto& R = pinocchio::computeJointTorqueRegressor(model_, data_, q_, v_, a_);
  for (int c = 0; c < base_.rank(); ++c) Rb_.col(c) = R.col(base_.columns[c]);
  A_.selfadjointView<Eigen::Lower>().rankUpdate(Rb_.transpose());
}

double ExcitationDesign::criterion() {
  eigen_.compute(A_, Eigen::EigenvaluesOnly);
  const Eigen::VectorXd& lambda = eigen_.eigenvalues();  // ascending
  const double top = lambda[lambda.size() - 1];
  if (!(top > 0)) return kInfeasible;
  const double bottom = std::max(lambda[0], kEigenFloor * top);
  if (options_.criterion == Criterion::Condition) return 0.5 * std::log(top / bottom);
  const double var = options_.torque_noise_std * options_.torque_noise_std;
  double log_det = 0;
  for (int i = 0; i < lambda.size(); ++i) log_det += std::log(std::max(lambda[i], bottom) / var);
  return -log_det;
}

double ExcitationDesign::cost(const Eigen::VectorXd& x) {
  decodeInto(x, trajectory_);
  A_.setZero();
  double total_excess = 0;
  const int n = options_.samples;
  for (int k = 0; k < n; ++k) {
    trajectory_.evaluate(options_.duration * k / (n - 1), q_, v_, a_);
    total_excess += excess();
    accumulate();
  }
  if (total_excess > 0) return kInfeasible + total_excess;
  return criterion();
}

DesignResult designExcitation(ExcitationDesign& design, const CmaesOptions& optimizer) {
  DesignResult result;
  const Eigen::VectorXd x0 = Eigen::VectorXd::Zero(design.dimension());
  result.summary = cmaes([&](const Eigen::VectorXd& x) { return design.cost(x); }, x0, optimizer);
  result.trajectory = design.decode(result.summary.best_x);
  const DesignOptions& o = design.options();
  const TrajectorySamples samples = sampleTrajectory(result.trajectory, o.duration, o.samples);
  result.limits = limitUse(design.model(), design.limits(), samples);
  result.identifiability =
      identifiability(design.model(), design.base(), samples, o.torque_noise_std);
  return result;
}

}  // namespace heft::excite
