#include "heft/estimation/parameter_constraints.hpp"

#include <algorithm>
#include <cmath>

#include "heft/common/error.hpp"

namespace heft::estimation {

ParameterConstraints::ParameterConstraints(inertia::Parametrization parametrization, int np,
                                           const std::vector<model::LinearConstraint>& constraints,
                                           const Eigen::VectorXd& nominal_pi)
    : parametrization_(parametrization), np_(np) {
  require(nominal_pi.size() > 0 && nominal_pi.size() % 10 == 0 && nominal_pi.size() <= np,
          "parameter constraints", "10 nominal parameters per identified body, within theta",
          std::to_string(nominal_pi.size()) + " of " + std::to_string(np));
  nb_ = static_cast<int>(nominal_pi.size()) / 10;
  model::requireConsistent(constraints, nominal_pi);
  model::StackedConstraints stacked = model::stackConstraints(constraints, 10 * nb_);
  E_eq_ = std::move(stacked.E_eq);
  E_in_ = std::move(stacked.E_in);
  e_eq_ = std::move(stacked.e_eq);
  e_in_ = std::move(stacked.e_in);
}

Eigen::VectorXd ParameterConstraints::piOf(const Eigen::VectorXd& theta) const {
  Eigen::VectorXd pi(10 * nb_);
  for (int b = 0; b < nb_; ++b)
    pi.segment<10>(10 * b) = inertia::piFromTheta(parametrization_, theta.segment<10>(10 * b));
  return pi;
}

void ParameterConstraints::values(const Eigen::VectorXd& theta, Eigen::VectorXd& h,
                                  Eigen::VectorXd& g) const {
  require(theta.size() == np_, "constrained theta size", std::to_string(np_),
          std::to_string(theta.size()));
  const Eigen::VectorXd pi = piOf(theta);
  h = E_eq_ * pi - e_eq_;
  g = E_in_ * pi - e_in_;
}

void ParameterConstraints::linearize(const Eigen::VectorXd& theta, Eigen::VectorXd& h,
                                     Eigen::MatrixXd& H, Eigen::VectorXd& g,
                                     Eigen::MatrixXd& G) const {
  values(theta, h, g);
  H.setZero(numEqualities(), np_);
  G.setZero(numInequalities(), np_);
  for (int b = 0; b < nb_; ++b) {
    const Matrix10 J = inertia::jacobian(parametrization_, theta.segment<10>(10 * b));
    H.middleCols<10>(10 * b).noalias() = E_eq_.middleCols<10>(10 * b) * J;
    G.middleCols<10>(10 * b).noalias() = E_in_.middleCols<10>(10 * b) * J;
  }
}

void ParameterConstraints::violation(const Eigen::VectorXd& theta, double& norm1,
                                     double& max) const {
  Eigen::VectorXd h, g;
  values(theta, h, g);
  norm1 = h.lpNorm<1>();
  max = h.size() > 0 ? h.lpNorm<Eigen::Infinity>() : 0.0;
  for (Eigen::Index i = 0; i < g.size(); ++i) {
    const double v = std::max(0.0, -g[i]);
    norm1 += v;
    max = std::max(max, v);
  }
}

}  // namespace heft::estimation
