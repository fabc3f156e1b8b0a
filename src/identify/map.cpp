#include "heft/identify/map.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <iomanip>
#include <optional>
#include <sstream>

#include <Eigen/Cholesky>
#include <Eigen/LU>
#include <Eigen/QR>

#include "heft/common/error.hpp"
#include "heft/common/format.hpp"
#include "heft/inertia/inertia.hpp"
#include "heft/results/body_estimate.hpp"

namespace heft::identify {
namespace {

std::string num(double x, int precision = 4) { return formatNumber(x, precision); }

Eigen::MatrixXd inverseCholeskyFactor(const Eigen::MatrixXd& cov, const std::string& what) {
  Eigen::LLT<Eigen::MatrixXd> llt(cov);
  require(llt.info() == Eigen::Success && cov.allFinite(), what, "a positive definite covariance",
          "one that is not");
  const Eigen::MatrixXd L = llt.matrixL();
  return L.triangularView<Eigen::Lower>().solve(Eigen::MatrixXd::Identity(cov.rows(), cov.cols()));
}

Eigen::VectorXd channelRms(const Eigen::VectorXd& r, const Eigen::VectorXi& channel, int nc) {
  Eigen::VectorXd sum = Eigen::VectorXd::Zero(nc), count = Eigen::VectorXd::Zero(nc);
  for (Eigen::Index i = 0; i < r.size(); ++i) {
    sum[channel[i]] += r[i] * r[i];
    count[channel[i]] += 1;
  }
  for (int c = 0; c < nc; ++c) sum[c] = count[c] > 0 ? std::sqrt(sum[c] / count[c]) : 0.0;
  return sum;
}

double c_e_scale(const MapProblem& mp) { return mp.constraintScale(); }

}  // namespace

// ---- constraints -------------------------------------------------------------------------------

LinearConstraint totalMassConstraint(const model::RobotModel& robot, const ParameterLayout& layout,
                                     double total_mass) {
  return model::totalMassConstraint(robot, layout.bodies, total_mass);
}

LinearConstraint symmetryConstraint(const ParameterLayout& layout, const std::string& left,
                                    const std::string& right) {
  return model::symmetryConstraint(layout.body_names, left, right);
}

void MapOptions::validate() const {
  require(max_iterations >= 1, "max_iterations", ">= 1", std::to_string(max_iterations));
  for (double t : {function_tolerance, step_tolerance, gradient_tolerance, initial_lambda}) {
    require(std::isfinite(t) && t > 0, "map tolerances", "finite values > 0", num(t));
  }
  require(std::isfinite(min_channel_std) && min_channel_std > 0, "min_channel_std",
          "a finite value > 0", num(min_channel_std));
  require(std::isfinite(loss_scale) && loss_scale >= 0, "loss_scale", "a finite value >= 0",
          num(loss_scale));
  require(std::isfinite(covariance_data_scale) && covariance_data_scale >= 1,
          "covariance_data_scale", "a finite value >= 1", num(covariance_data_scale));
  require(channel_std.size() == 0 || (channel_std.allFinite() && channel_std.minCoeff() > 0),
          "channel_std", "empty or finite values > 0", "other values");
  for (const auto& c : constraints) {
    require(c.E.rows() == c.e.size() && c.E.allFinite() && c.e.allFinite(), "constraint " + c.name,
            "E (k x n) and e (k), finite", "inconsistent");
    require(c.equality, "constraint " + c.name, "an equality (the MAP method takes no bounds)",
            "an inequality");
  }
}

// ---- problem -----------------------------------------------------------------------------------

void MapProblem::setDimensions(const MapOptions& options) {
  loss_ = options.loss;
  loss_scale_ = options.loss_scale > 0 ? options.loss_scale : defaultLossScale(options.loss);
  nb_ = layout_.numBodies();
  nf_ = layout_.numFriction();
  na_ = layout_.numArmature();
  no_ = layout_.numTorqueOffsets();
  friction_per_joint_ = form_ == FrictionForm::Full ? 6 : 2;
  dim_ = 10 * nb_ + friction_per_joint_ * nf_ + na_ + no_;
}

MapProblem::MapProblem(const StackedProblem& p, const model::IdentifiedSet& set,
                       const ProblemOptions& po, const MapOptions& options)
    : layout_(p.layout),
      parametrization_(set.parametrization),
      form_(po.friction_form),
      rate_(p.coulomb_rate) {
  options.validate();
  setDimensions(options);
  offset_std_ = po.torque_offset_prior_std;
  rows_ = p.rows();
  nj_ = static_cast<int>(p.G.cols());
  N_ = static_cast<int>(p.v_joint.cols());
  const int nc = p.numChannels();

  // channel weights, and the torque offsets' starting point: the offsets enter linearly, but LM
  // moves them slowly from 0 while the nonlinear parameters settle (it stops on the relative cost
  // change with panda offsets 15-40 % short), so they start at the ordinary least-squares values
  Eigen::VectorXd sigma = options.channel_std;
  offset_start_ = Eigen::VectorXd::Zero(no_);
  const LinearSystem sys = torqueSystem(p);
  const Eigen::VectorXd x0 = nominalLinearVector(p.layout, set, po);
  if (sigma.size() == 0 || no_ > 0) {
    const LeastSquaresResult ls = solveLeastSquares(sys, x0);
    offset_start_ = ls.x.tail(no_);
    if (!offset_start_.allFinite()) offset_start_.setZero();
    if (sigma.size() == 0) sigma = ls.channel_rms_after;
  }
  if (options.channel_std.size() == 0) {
    const double floor = std::max(options.min_channel_std, 1e-3 * sigma.maxCoeff());
    sigma = sigma.cwiseMax(floor);
  }
  require(sigma.size() == nc, "channel_std", "size " + std::to_string(nc),
          "size " + std::to_string(sigma.size()));
  w_.resize(rows_);
  for (int r = 0; r < rows_; ++r) w_[r] = 1.0 / sigma[p.channel[r]];
  // the second start: the least-squares minimum of the MAP's own (weighted) data cost, the same
  // as that of the log's whitened rows, so a run and its information alone restart alike
  if (options.boundary_restart) {
    LinearSystem weighted = sys;
    weighted.Phi = w_.asDiagonal() * sys.Phi;
    weighted.y = w_.asDiagonal() * sys.y;
    least_squares_ = solveLeastSquares(weighted, x0).x;
  }
  WA_ = w_.asDiagonal() * p.A;
  WG_ = w_.asDiagonal() * p.G;
  Wb_ = w_.asDiagonal() * p.b;
  sample_ = p.sample;
  v_ = p.v_joint;
  a_ = p.a_joint;
  buildPriors(set, po);
  buildConstraints(options);
}

MapProblem::MapProblem(const LinearSystem& rows, const model::IdentifiedSet& set,
                       const ProblemOptions& po, const MapOptions& options)
    : layout_(rows.layout),
      parametrization_(set.parametrization),
      form_(po.friction_form),
      rate_(po.coulomb_rate),
      linear_rows_(true),
      Phi_(rows.Phi),
      y_(rows.y) {
  options.validate();
  require(form_ == FrictionForm::CoulombViscous, "problem.friction_form",
          "coulomb-viscous (rows linear in the parameters)", toString(form_));
  require(options.loss == RobustLoss::None, "map.loss", "none (rows in information form)",
          "a robust loss");
  setDimensions(options);
  require(Phi_.cols() == layout_.linearDimension() && Phi_.rows() == y_.size(), "rows",
          std::to_string(layout_.linearDimension()) + " columns and one target per row",
          std::to_string(Phi_.cols()) + " columns");
  offset_std_ = po.torque_offset_prior_std;
  rows_ = static_cast<int>(y_.size());
  nj_ = 0;
  N_ = 0;
  w_ = Eigen::VectorXd::Ones(rows_);
  offset_start_ = Eigen::VectorXd::Zero(no_);
  if (rows_ > 0 && (no_ > 0 || options.boundary_restart)) {
    const LeastSquaresResult ls = solveLeastSquares(rows, nominalLinearVector(layout_, set, po));
    if (ls.x.allFinite()) offset_start_ = ls.x.tail(no_);
    least_squares_ = ls.x;
  }
  buildPriors(set, po);
  buildConstraints(options);
}

void MapProblem::buildPriors(const model::IdentifiedSet& set, const ProblemOptions& po) {
  for (int b = 0; b < nb_; ++b) {
    for (const auto& block : set.bodies) {
      if (block.joint != layout_.bodies[b]) continue;
      const auto report = inertia::checkConsistency(block.prior_mean);
      require(report.consistent, "prior mean of body " + block.name,
              "a strictly physically consistent pi (the MAP starts there)", "an inconsistent one");
      pi_mean_.push_back(block.prior_mean);
      pi_Linv_.push_back(
          inverseCholeskyFactor(block.prior_covariance, "prior of body " + block.name));
    }
  }
  for (int f = 0; f < nf_; ++f) {
    for (const auto& block : set.friction) {
      if (block.joint_name != layout_.friction_joints[f]) continue;
      if (form_ == FrictionForm::Full) {
        mu_mean_.push_back(dynamics::frictionMuFromGamma(block.prior_gamma));
        mu_Linv_.push_back(inverseCholeskyFactor(block.prior_log_covariance,
                                                 "friction prior of " + block.joint_name));
      } else {
        mu_mean_.push_back(
            Eigen::Vector2d(std::log(block.prior_gamma[3]), std::log(block.prior_gamma[5])));
        Eigen::Matrix2d cov;
        cov << block.prior_log_covariance(3, 3), block.prior_log_covariance(3, 5),
            block.prior_log_covariance(5, 3), block.prior_log_covariance(5, 5);
        mu_Linv_.push_back(inverseCholeskyFactor(cov, "friction prior of " + block.joint_name));
      }
    }
  }
  la_mean_ = Eigen::VectorXd::Constant(na_, std::log(po.armature_prior_median));
  la_std_ = po.armature_prior_log_std;
  prior_rows_ = 10 * nb_ + friction_per_joint_ * nf_ + na_ + no_;
}

void MapProblem::buildConstraints(const MapOptions& options) {
  int k = 0;
  for (const auto& c : options.constraints) {
    require(c.E.cols() == 10 * nb_, "constraint " + c.name, std::to_string(10 * nb_) + " columns",
            std::to_string(c.E.cols()));
    k += static_cast<int>(c.E.rows());
  }
  c_E_.resize(k, 10 * nb_);
  c_e_.resize(k);
  k = 0;
  for (const auto& c : options.constraints) {
    c_E_.middleRows(k, c.E.rows()) = c.E;
    c_e_.segment(k, c.e.size()) = c.e;
    k += static_cast<int>(c.E.rows());
  }
}

Eigen::VectorXd MapProblem::initial() const {
  Eigen::VectorXd x(dim_);
  for (int b = 0; b < nb_; ++b) {
    x.segment<10>(10 * b) = inertia::thetaFromPi(parametrization_, pi_mean_[b]);
  }
  for (int f = 0; f < nf_; ++f) {
    x.segment(10 * nb_ + friction_per_joint_ * f, friction_per_joint_) = mu_mean_[f];
  }
  x.segment(10 * nb_ + friction_per_joint_ * nf_, na_) = la_mean_;
  x.tail(no_) = offset_start_;  // the least-squares offsets (their prior mean is 0)
  return x;
}

std::optional<Eigen::VectorXd> MapProblem::leastSquaresStart(const Eigen::VectorXd& from) const {
  const Eigen::VectorXd& l = least_squares_;
  if (l.size() != layout_.linearDimension() || !l.allFinite()) return std::nullopt;
  Eigen::VectorXd x = from;
  bool any_body = false;
  for (int b = 0; b < nb_; ++b) {
    const Vector10 pi = l.segment<10>(10 * b);
    if (!inertia::checkConsistencyMargin(pi).consistent) continue;
    x.segment<10>(10 * b) = inertia::thetaFromPi(parametrization_, pi);
    any_body = true;
  }
  if (!any_body) return std::nullopt;
  return x;
}

Eigen::VectorXd MapProblem::pi(const Eigen::VectorXd& x) const {
  Eigen::VectorXd p(10 * nb_);
  for (int b = 0; b < nb_; ++b) {
    p.segment<10>(10 * b) = inertia::piFromTheta(parametrization_, x.segment<10>(10 * b));
  }
  return p;
}

Eigen::MatrixXd MapProblem::piJacobian(const Eigen::VectorXd& x) const {
  Eigen::MatrixXd J = Eigen::MatrixXd::Zero(10 * nb_, dim_);
  for (int b = 0; b < nb_; ++b) {
    J.block<10, 10>(10 * b, 10 * b) = inertia::jacobian(parametrization_, x.segment<10>(10 * b));
  }
  return J;
}

// T: nj x N joint-space torques added by friction, armature and offsets; dT: N x (fpj nf + na),
// column per parameter (the joint is implied by the parameter; an offset's derivative is 1).
void MapProblem::frictionTerms(const Eigen::VectorXd& x, Eigen::MatrixXd& T,
                               Eigen::MatrixXd* dT) const {
  T.setZero(nj_, N_);
  const int fo = 10 * nb_, ao = fo + friction_per_joint_ * nf_;
  if (dT) dT->setZero(N_, friction_per_joint_ * nf_ + na_);
  if (nf_ > 0 && form_ == FrictionForm::Full) {
    dynamics::FrictionModel fm(nf_);
    dynamics::FrictionData fd(fm);
    Eigen::VectorXd v(nf_);
    const Eigen::VectorXd mu = x.segment(fo, 6 * nf_);
    for (int s = 0; s < N_; ++s) {
      for (int f = 0; f < nf_; ++f) v[f] = v_(layout_.friction_joint[f], s);
      dynamics::computeFrictionDerivatives(fm, fd, v, mu);
      for (int f = 0; f < nf_; ++f) {
        T(layout_.friction_joint[f], s) += fd.tau[f];
        if (dT) dT->block(s, 6 * f, 1, 6) = fd.dtau_dmu.row(f);
      }
    }
  } else {
    for (int f = 0; f < nf_; ++f) {
      const int j = layout_.friction_joint[f];
      const double g3 = std::exp(x[fo + 2 * f]), g5 = std::exp(x[fo + 2 * f + 1]);
      for (int s = 0; s < N_; ++s) {
        const double v = v_(j, s);
        const double c = g3 * std::tanh(rate_ * v), d = g5 * v;
        T(j, s) += c + d;
        if (dT) {
          (*dT)(s, 2 * f) = c;
          (*dT)(s, 2 * f + 1) = d;
        }
      }
    }
  }
  for (int i = 0; i < na_; ++i) {
    const int j = layout_.armature_joint[i];
    const double arm = std::exp(x[ao + i]);
    for (int s = 0; s < N_; ++s) {
      T(j, s) += arm * a_(j, s);
      if (dT) (*dT)(s, friction_per_joint_ * nf_ + i) = arm * a_(j, s);
    }
  }
  for (int i = 0; i < no_; ++i) T.row(layout_.torque_offset_joint[i]).array() += x[ao + na_ + i];
}

void MapProblem::dataResidual(const Eigen::VectorXd& x, Eigen::VectorXd& r) const {
  require(x.size() == dim_, "x", "size " + std::to_string(dim_),
          "size " + std::to_string(x.size()));
  if (linear_rows_) {
    r.noalias() = Phi_ * linearVector(x);
    r -= y_;
    return;
  }
  const Eigen::VectorXd p = pi(x);
  Eigen::MatrixXd T;
  frictionTerms(x, T, nullptr);
  r.resize(rows_);
  r.noalias() = WA_ * p;
  r -= Wb_;
  if (nf_ + na_ + no_ > 0) {
    for (int row = 0; row < rows_; ++row) r[row] += WG_.row(row).dot(T.col(sample_[row]));
  }
}

void MapProblem::residual(const Eigen::VectorXd& x, Eigen::VectorXd& r) const {
  Eigen::VectorXd data;
  dataResidual(x, data);
  r.resize(numResiduals());
  for (int row = 0; row < rows_; ++row)
    r[row] = robustResidual(loss_, loss_scale_, data[row], nullptr);
  const Eigen::VectorXd p = pi(x);
  int o = rows_;
  for (int b = 0; b < nb_; ++b, o += 10) {
    r.segment<10>(o) = pi_Linv_[b] * (p.segment<10>(10 * b) - pi_mean_[b]);
  }
  const int fo = 10 * nb_;
  for (int f = 0; f < nf_; ++f, o += friction_per_joint_) {
    r.segment(o, friction_per_joint_) =
        mu_Linv_[f] * (x.segment(fo + friction_per_joint_ * f, friction_per_joint_) - mu_mean_[f]);
  }
  r.segment(o, na_) = (x.segment(fo + friction_per_joint_ * nf_, na_) - la_mean_) / la_std_;
  r.segment(o + na_, no_) = x.tail(no_) / offset_std_;
}

void MapProblem::jacobian(const Eigen::VectorXd& x, Eigen::MatrixXd& J) const {
  require(x.size() == dim_, "x", "size " + std::to_string(dim_),
          "size " + std::to_string(x.size()));
  J.setZero(numResiduals(), dim_);
  std::vector<Matrix10> Jpi(nb_);
  for (int b = 0; b < nb_; ++b) {
    Jpi[b] = inertia::jacobian(parametrization_, x.segment<10>(10 * b));
    if (!linear_rows_)
      J.block(0, 10 * b, rows_, 10).noalias() = WA_.middleCols(10 * b, 10) * Jpi[b];
  }
  const int fo = 10 * nb_;
  const int oo = fo + friction_per_joint_ * nf_ + na_;  // first offset
  if (linear_rows_) {
    J.topRows(rows_).noalias() = Phi_ * linearJacobian(x);
  } else {
    for (int i = 0; i < no_; ++i)
      J.block(0, oo + i, rows_, 1) = WG_.col(layout_.torque_offset_joint[i]);
  }
  if (!linear_rows_ && nf_ + na_ > 0) {
    Eigen::MatrixXd T, dT;
    frictionTerms(x, T, &dT);
    for (int row = 0; row < rows_; ++row) {
      const int s = sample_[row];
      for (int f = 0; f < nf_; ++f) {
        const double g = WG_(row, layout_.friction_joint[f]);
        if (g == 0) continue;
        for (int k = 0; k < friction_per_joint_; ++k) {
          J(row, fo + friction_per_joint_ * f + k) = g * dT(s, friction_per_joint_ * f + k);
        }
      }
      for (int i = 0; i < na_; ++i) {
        const double g = WG_(row, layout_.armature_joint[i]);
        J(row, fo + friction_per_joint_ * nf_ + i) = g * dT(s, friction_per_joint_ * nf_ + i);
      }
    }
  }
  if (loss_ != RobustLoss::None) {
    // chain rule through sign(r) sqrt(2 rho(r)): scale each data row by its derivative
    Eigen::VectorXd data;
    dataResidual(x, data);
    for (int row = 0; row < rows_; ++row) {
      double d = 1;
      robustResidual(loss_, loss_scale_, data[row], &d);
      J.row(row) *= d;
    }
  }
  int o = rows_;
  for (int b = 0; b < nb_; ++b, o += 10) J.block<10, 10>(o, 10 * b) = pi_Linv_[b] * Jpi[b];
  for (int f = 0; f < nf_; ++f, o += friction_per_joint_) {
    J.block(o, fo + friction_per_joint_ * f, friction_per_joint_, friction_per_joint_) =
        mu_Linv_[f];
  }
  for (int i = 0; i < na_; ++i) J(o + i, fo + friction_per_joint_ * nf_ + i) = 1.0 / la_std_;
  for (int i = 0; i < no_; ++i) J(o + na_ + i, oo + i) = 1.0 / offset_std_;
}

void MapProblem::constraints(const Eigen::VectorXd& x, Eigen::VectorXd& c,
                             Eigen::MatrixXd& C) const {
  c = c_E_ * pi(x) - c_e_;
  C = c_E_ * piJacobian(x);
}

std::vector<FrictionEstimate> MapProblem::friction(const Eigen::VectorXd& x,
                                                   const Eigen::MatrixXd& cov) const {
  std::vector<FrictionEstimate> out;
  const int fo = 10 * nb_;
  for (int f = 0; f < nf_; ++f) {
    FrictionEstimate e;
    e.joint = layout_.friction_joints[f];
    const int o = fo + friction_per_joint_ * f;
    auto sd = [&](int i) { return cov.size() > 0 ? std::sqrt(std::max(cov(i, i), 0.0)) : 0.0; };
    if (form_ == FrictionForm::Full) {
      for (int k = 0; k < 6; ++k) {
        e.gamma[k] = std::exp(x[o + k]);
        e.gamma_std[k] = e.gamma[k] * sd(o + k);
      }
    } else {
      e.gamma << 0, 0, 0, std::exp(x[o]), rate_, std::exp(x[o + 1]);
      e.gamma_std[3] = e.gamma[3] * sd(o);
      e.gamma_std[5] = e.gamma[5] * sd(o + 1);
    }
    out.push_back(e);
  }
  return out;
}

Eigen::VectorXd MapProblem::armature(const Eigen::VectorXd& x) const {
  return x.segment(10 * nb_ + friction_per_joint_ * nf_, na_).array().exp().matrix();
}

Eigen::VectorXd MapProblem::torqueOffsets(const Eigen::VectorXd& x) const { return x.tail(no_); }

Eigen::VectorXd MapProblem::linearVector(const Eigen::VectorXd& x) const {
  Eigen::VectorXd l(layout_.linearDimension());
  l.head(10 * nb_) = pi(x);
  const auto fr = friction(x, Eigen::MatrixXd());
  for (int f = 0; f < nf_; ++f) {
    l[layout_.frictionOffset() + 2 * f] = fr[f].coulomb();
    l[layout_.frictionOffset() + 2 * f + 1] = fr[f].viscous();
  }
  l.segment(layout_.armatureOffset(), na_) = armature(x);
  l.tail(no_) = torqueOffsets(x);
  return l;
}

Eigen::MatrixXd MapProblem::linearJacobian(const Eigen::VectorXd& x) const {
  Eigen::MatrixXd J = Eigen::MatrixXd::Zero(layout_.linearDimension(), dim_);
  J.topRows(10 * nb_) = piJacobian(x);
  const int fo = 10 * nb_;
  for (int f = 0; f < nf_; ++f) {
    const int o = fo + friction_per_joint_ * f;
    const int i3 = form_ == FrictionForm::Full ? o + 3 : o;
    const int i5 = form_ == FrictionForm::Full ? o + 5 : o + 1;
    J(layout_.frictionOffset() + 2 * f, i3) = std::exp(x[i3]);
    J(layout_.frictionOffset() + 2 * f + 1, i5) = std::exp(x[i5]);
  }
  for (int i = 0; i < na_; ++i) {
    const int o = fo + friction_per_joint_ * nf_ + i;
    J(layout_.armatureOffset() + i, o) = std::exp(x[o]);
  }
  for (int i = 0; i < no_; ++i) J(layout_.torqueOffsetStart() + i, dim_ - no_ + i) = 1.0;
  return J;
}

// ---- solver ------------------------------------------------------------------------------------

namespace {

// The Levenberg-Marquardt iterate: parameters, weighted residual and its Jacobian, constraint
// values and Jacobian (when constrained), cost.
struct MapIterate {
  Eigen::VectorXd x, r, c;
  Eigen::MatrixXd J, C;
  double cost = 0;
};

double costOf(const Eigen::VectorXd& r) { return 0.5 * r.squaredNorm(); }

// Identifiability of the linear data model (warning only: the prior regularizes): res.data_rank,
// and a warning naming the entries that dominate the unseen directions.
void checkIdentifiability(const LinearSystem& sys, const model::IdentifiedSet& set,
                          const ProblemOptions& problem_options, MapResult& res) {
  const LeastSquaresResult ls =
      solveLeastSquares(sys, nominalLinearVector(sys.layout, set, problem_options));
  res.data_rank = ls.base.rank;
  if (ls.base.rank < res.linear_dimension) {
    // the entries that dominate the unseen directions
    Eigen::VectorXd weight = ls.base.nullspace.rowwise().squaredNorm();
    std::vector<int> idx(weight.size());
    for (int i = 0; i < weight.size(); ++i) idx[i] = i;
    std::sort(idx.begin(), idx.end(), [&](int a, int b) { return weight[a] > weight[b]; });
    std::string list;
    for (int i = 0; i < std::min<int>(6, static_cast<int>(idx.size())); ++i) {
      list += (list.empty() ? "" : ", ") + sys.names[idx[i]];
    }
    res.warnings.push_back(std::to_string(res.linear_dimension - ls.base.rank) + " of " +
                           std::to_string(res.linear_dimension) +
                           " linear parameter directions are not seen by the data and are "
                           "regularized by the prior (mostly " +
                           list + ")");
  }
}

// Levenberg-Marquardt from `s`, with KKT steps on the linearized constraints and a quadratic
// penalty on their violation in the merit; sets res's status, message and cost history and
// returns the iterations taken.
int levenbergMarquardt(const MapProblem& mp, const MapOptions& options, MapIterate& s,
                       MapResult& res) {
  const int n = mp.dimension(), nc = mp.numConstraints();
  Eigen::VectorXd& x = s.x;
  Eigen::VectorXd& r = s.r;
  Eigen::VectorXd& c = s.c;
  Eigen::MatrixXd& J = s.J;
  Eigen::MatrixXd& C = s.C;
  double& cost = s.cost;
  Eigen::VectorXd r_new, c_new;
  Eigen::MatrixXd C_new;
  const double penalty = 1e6 * std::max(1.0, cost);
  auto merit = [&](double f, const Eigen::VectorXd& cv) {
    return nc > 0 ? f + 0.5 * penalty * cv.squaredNorm() : f;
  };
  double lambda = options.initial_lambda;
  res.status = Status::MaxIterations;
  res.message = "reached max_iterations";
  Eigen::MatrixXd H(n, n), K(n + nc, n + nc);
  Eigen::VectorXd g(n), rhs(n + nc);
  int it = 0;
  for (; it < options.max_iterations; ++it) {
    H.noalias() = J.transpose() * J;
    g.noalias() = J.transpose() * r;
    if (!H.allFinite() || !g.allFinite()) {
      res.status = Status::Failed;
      res.message = "non-finite Jacobian at iteration " + std::to_string(it);
      break;
    }
    if (g.lpNorm<Eigen::Infinity>() <= options.gradient_tolerance &&
        (nc == 0 || c.lpNorm<Eigen::Infinity>() < 1e-10)) {
      res.status = Status::Converged;
      res.message = "gradient below tolerance";
      break;
    }
    bool accepted = false;
    Eigen::VectorXd dx;
    for (int attempt = 0; attempt < 30 && !accepted; ++attempt) {
      K.setZero();
      K.topLeftCorner(n, n) = H;
      K.topLeftCorner(n, n).diagonal() += lambda * H.diagonal().cwiseMax(1e-12);
      rhs.head(n) = -g;
      if (nc > 0) {
        K.block(n, 0, nc, n) = C;
        K.block(0, n, n, nc) = C.transpose();
        rhs.tail(nc) = -c;
      }
      const Eigen::VectorXd sol = K.fullPivLu().solve(rhs);
      dx = sol.head(n);
      if (!dx.allFinite()) {
        lambda *= 10;
        continue;
      }
      const Eigen::VectorXd x_new = x + dx;
      double cost_new;
      try {
        mp.residual(x_new, r_new);
        if (nc > 0) mp.constraints(x_new, c_new, C_new);
        cost_new = costOf(r_new);
      } catch (const InputError&) {  // theta overflowed: reject the step
        lambda *= 10;
        continue;
      }
      if (std::isfinite(cost_new) && merit(cost_new, c_new) < merit(cost, c)) {
        accepted = true;
        const double decrease = (cost - cost_new) / std::max(cost, 1e-300);
        const double step = dx.norm();
        x = x_new;
        r = r_new;
        if (nc > 0) {
          c = c_new;
          C = C_new;
        }
        cost = cost_new;
        mp.jacobian(x, J);
        lambda = std::max(lambda / 3, 1e-12);
        res.cost_history.push_back(cost);
        if ((std::abs(decrease) < options.function_tolerance ||
             step <= options.step_tolerance * (x.norm() + options.step_tolerance)) &&
            (nc == 0 || c.lpNorm<Eigen::Infinity>() < 1e-9)) {
          res.status = Status::Converged;
          res.message = std::abs(decrease) < options.function_tolerance
                            ? "cost change below tolerance"
                            : "step below tolerance";
        }
      } else {
        lambda *= 10;
      }
    }
    if (!accepted) {
      // no decrease possible along any damping: a (local) minimum to working precision
      res.status = Status::Converged;
      res.message = "no further decrease (lambda " + num(lambda) + ")";
      break;
    }
    if (res.status == Status::Converged) {
      ++it;
      break;
    }
  }
  return it;
}

// The KKT steps satisfy the linearized constraints; a few Gauss-Newton projections onto
// E pi(theta) = e remove the second-order remainder (minimum-norm steps, cost barely moves).
void projectOntoConstraints(const MapProblem& mp, MapIterate& s) {
  Eigen::VectorXd& x = s.x;
  Eigen::VectorXd& c = s.c;
  Eigen::MatrixXd& C = s.C;
  for (int k = 0; k < 20 && c.lpNorm<Eigen::Infinity>() > 1e-13 * std::max(1.0, c_e_scale(mp));
       ++k) {
    const Eigen::VectorXd dx = -C.transpose() * (C * C.transpose()).ldlt().solve(c);
    if (!dx.allFinite()) break;
    try {
      Eigen::VectorXd c_try;
      Eigen::MatrixXd C_try;
      mp.constraints(x + dx, c_try, C_try);
      if (!(c_try.lpNorm<Eigen::Infinity>() < c.lpNorm<Eigen::Infinity>())) break;
      x += dx;
      c = c_try;
      C = C_try;
    } catch (const InputError&) {
      break;
    }
  }
  mp.residual(x, s.r);
  mp.jacobian(x, s.J);
  s.cost = costOf(s.r);
}

// Posterior covariance (Gauss-Newton, the data's part divided by data_scale), on the constraint
// tangent space when constrained, and the estimates derived from x with their uncertainties.
void posterior(const MapProblem& mp, const LinearSystem& sys, const MapIterate& s,
               double data_scale, MapResult& res) {
  const int n = mp.dimension(), nc = mp.numConstraints();
  const Eigen::VectorXd& x = s.x;
  Eigen::MatrixXd H(n, n);
  H.noalias() = s.J.transpose() * s.J;
  if (data_scale != 1) {
    const auto data = s.J.topRows(mp.numDataResiduals());
    H.noalias() -= (1 - 1 / data_scale) * (data.transpose() * data);
  }
  if (nc > 0) {
    Eigen::FullPivHouseholderQR<Eigen::MatrixXd> qr(s.C.transpose());
    const Eigen::MatrixXd Q = qr.matrixQ();
    const Eigen::MatrixXd Z = Q.rightCols(n - qr.rank());
    res.x_covariance =
        Z * (Z.transpose() * H * Z).ldlt().solve(Eigen::MatrixXd::Identity(Z.cols(), Z.cols())) *
        Z.transpose();
    res.constraint_violation = s.c.lpNorm<Eigen::Infinity>();
  } else {
    res.x_covariance = H.ldlt().solve(Eigen::MatrixXd::Identity(n, n));
  }
  const Eigen::MatrixXd Jpi = mp.piJacobian(x);
  res.pi = mp.pi(x);
  res.pi_covariance = Jpi * res.x_covariance * Jpi.transpose();
  res.pi_stddev = res.pi_covariance.diagonal().cwiseMax(0.0).cwiseSqrt();
  res.friction = mp.friction(x, res.x_covariance);
  res.armature = mp.armature(x);
  res.armature_std.resize(res.armature.size());
  const int offsets = mp.layout().numTorqueOffsets();
  for (int i = 0; i < res.armature.size(); ++i) {
    const int o = n - offsets - static_cast<int>(res.armature.size()) + i;
    res.armature_std[i] = res.armature[i] * std::sqrt(std::max(res.x_covariance(o, o), 0.0));
  }
  res.linear = mp.linearVector(x);
  {
    const Eigen::MatrixXd Jl = mp.linearJacobian(x);
    res.linear_covariance = Jl * res.x_covariance * Jl.transpose();
  }
  Eigen::VectorXd data;
  mp.dataResidual(x, data);  // before the robust loss
  const Eigen::VectorXd unweighted = data.cwiseQuotient(mp.weights());
  res.channel_rms_after =
      channelRms(unweighted, sys.channel, static_cast<int>(sys.channel_names.size()));
  if (!res.pi_covariance.allFinite()) {
    res.warnings.push_back("posterior covariance is not finite (singular Gauss-Newton Hessian)");
  }
}

}  // namespace

namespace {

// The log-Cholesky and exponential-eigenvalue maps flatten at the consistency boundary (their
// Jacobian degenerates there), so LM from the prior can stop on the boundary while the data's
// minimum is well inside. When LM stopped with a body near the boundary, it runs again with the
// bodies at the data's least-squares estimate (where consistent), the rest where it stopped, and
// the lower cost is kept. Unconstrained problems only (that start ignores the constraints).
void restartFromLeastSquares(const MapProblem& mp, const MapOptions& options, MapIterate& s,
                             MapResult& res, int& iterations) {
  if (!options.boundary_restart || mp.numConstraints() > 0) return;
  const Eigen::VectorXd pi = mp.pi(s.x);
  bool on_boundary = false;
  for (Eigen::Index b = 0; b < pi.size() / 10; ++b)
    on_boundary |= inertia::checkConsistency(pi.segment<10>(10 * b)).relative_margin <
                   results::kNearBoundaryRelativeMargin;
  if (!on_boundary) return;
  const std::optional<Eigen::VectorXd> start = mp.leastSquaresStart(s.x);
  if (!start) return;
  MapIterate t;
  t.x = *start;
  try {
    mp.residual(t.x, t.r);
  } catch (const InputError&) {  // theta out of range
    return;
  }
  t.cost = costOf(t.r);
  const double stopped = s.cost;
  mp.jacobian(t.x, t.J);
  MapResult second;
  second.cost_history.push_back(t.cost);
  iterations += levenbergMarquardt(mp, options, t, second);
  if (!(t.cost < s.cost)) return;
  s = std::move(t);
  res.status = second.status;
  res.message = second.message + "; restarted from the least-squares estimate (LM from the " +
                "prior stopped at cost " + num(stopped, 6) + ")";
  res.cost_history.insert(res.cost_history.end(), second.cost_history.begin(),
                          second.cost_history.end());
}

// Levenberg-Marquardt from the prior means (again from the least-squares bodies when it stopped on
// the consistency boundary), then the posterior. `sys` is the data's linear system
// (identifiability, channels).
MapResult solveProblem(const MapProblem& mp, const LinearSystem& sys,
                       const model::IdentifiedSet& set, const ProblemOptions& problem_options,
                       const MapOptions& options) {
  const auto start = std::chrono::steady_clock::now();
  MapResult res;
  res.layout = sys.layout;
  res.channel_names = sys.channel_names;
  res.linear_dimension = sys.layout.linearDimension();
  checkIdentifiability(sys, set, problem_options, res);
  const int channels = static_cast<int>(sys.channel_names.size());

  MapIterate s;
  s.x = mp.initial();
  mp.residual(s.x, s.r);
  mp.jacobian(s.x, s.J);
  if (mp.numConstraints() > 0) mp.constraints(s.x, s.c, s.C);
  s.cost = costOf(s.r);
  res.initial_cost = s.cost;
  res.cost_history.push_back(s.cost);
  Eigen::VectorXd data0;
  mp.dataResidual(s.x, data0);
  const Eigen::VectorXd unweighted0 = data0.cwiseQuotient(mp.weights());
  res.channel_rms_before = channelRms(unweighted0, sys.channel, channels);

  int it = levenbergMarquardt(mp, options, s, res);
  restartFromLeastSquares(mp, options, s, res, it);
  if (mp.numConstraints() > 0) projectOntoConstraints(mp, s);
  res.iterations = it;
  res.final_cost = s.cost;
  res.x = s.x;
  posterior(mp, sys, s, options.covariance_data_scale, res);
  res.time_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return res;
}

}  // namespace

MapResult solveMap(const StackedProblem& problem, const model::IdentifiedSet& set,
                   const ProblemOptions& problem_options, const MapOptions& options) {
  options.validate();
  const MapProblem mp(problem, set, problem_options, options);
  const LinearSystem sys = torqueSystem(problem);
  MapResult res = solveProblem(mp, sys, set, problem_options, options);
  if (problem_options.friction_form == FrictionForm::CoulombViscous &&
      options.loss == RobustLoss::None) {
    res.information = dataInformation(sys, mp.weights());
    res.information->samples = static_cast<int>(problem.v_joint.cols());
  }
  for (const auto& w : problem.warnings) res.warnings.push_back(w);
  return res;
}

MapResult solveMap(const LinearSystem& rows, const model::IdentifiedSet& set,
                   const ProblemOptions& problem_options, const MapOptions& options) {
  options.validate();
  const MapProblem mp(rows, set, problem_options, options);
  return solveProblem(mp, rows, set, problem_options, options);
}

std::string MapResult::report() const {
  std::ostringstream s;
  s << "status      " << toString(status) << (message.empty() ? "" : " (" + message + ")") << "\n"
    << "iterations  " << iterations << ", cost " << num(initial_cost, 6) << " -> "
    << num(final_cost, 6) << "\n"
    << "data rank   " << data_rank << " of " << linear_dimension << " linear directions\n";
  if (constraint_violation > 0)
    s << "constraints max violation " << num(constraint_violation) << "\n";
  s << "residual    per channel RMS before -> after:\n";
  for (std::size_t c = 0; c < channel_names.size(); ++c) {
    s << "  " << std::left << std::setw(24) << channel_names[c] << num(channel_rms_before[c])
      << " -> " << num(channel_rms_after[c]) << "\n";
  }
  static const char* entries[10] = {"m",   "hx",  "hy",  "hz",  "Ixx",
                                    "Ixy", "Iyy", "Ixz", "Iyz", "Izz"};
  s << "bodies      entry, estimate, std:\n";
  for (int b = 0; b < layout.numBodies(); ++b) {
    s << "  " << layout.body_names[b] << ":";
    for (int k = 0; k < 10; ++k) {
      s << " " << entries[k] << "=" << num(pi[10 * b + k]) << "(" << num(pi_stddev[10 * b + k], 2)
        << ")";
    }
    s << "\n";
  }
  for (const auto& f : friction) {
    s << "  friction " << f.joint << ": coulomb " << num(f.coulomb()) << " ("
      << num(f.gamma_std[3], 2) << "), viscous " << num(f.viscous()) << " ("
      << num(f.gamma_std[5], 2) << ")\n";
  }
  for (int i = 0; i < armature.size(); ++i) {
    s << "  armature " << layout.armature_joints[i] << ": " << num(armature[i]) << " ("
      << num(armature_std[i], 2) << ")\n";
  }
  for (const auto& w : warnings) s << "warning: " << w << "\n";
  s << "time        " << num(time_s, 3) << " s\n";
  return s.str();
}

}  // namespace heft::identify
