#include "heft/excite/design.hpp"

#include <Eigen/QR>
#include <Eigen/SVD>
#include <algorithm>
#include <cmath>
#include <limits>
#include <random>

#include <pinocchio/algorithm/regressor.hpp>
#include <pinocchio/algorithm/rnea.hpp>

#include "heft/common/error.hpp"
#include "heft/common/format.hpp"

namespace heft::excite {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

std::string num(double x) { return formatNumber(x, 6); }

// Velocity index of the 1-DoF joint `name`, or -1.
int velocityIndex(const pinocchio::Model& model, const std::string& name) {
  if (!model.existJointName(name)) return -1;
  const auto& joint = model.joints[model.getJointId(name)];
  return joint.nv() == 1 && joint.nq() == 1 ? joint.idx_v() : -1;
}

std::string jointNameOf(const pinocchio::Model& model, int idx_v) {
  for (pinocchio::JointIndex j = 1; j < model.joints.size(); ++j)
    if (model.joints[j].idx_v() == idx_v) return model.names[j];
  return "?";
}

// The velocity indices the design moves.
std::vector<int> excitedJoints(const pinocchio::Model& model, const DesignOptions& o) {
  std::vector<int> out;
  if (o.joints.empty()) {
    for (int i = 0; i < model.nv; ++i) out.push_back(i);
    return out;
  }
  for (const std::string& name : o.joints) out.push_back(velocityIndex(model, name));
  return out;
}

// Uniform samples in [lo, hi] from a 64-bit Mersenne twister (portable, unlike
// std::uniform_real_distribution).
double uniform(std::mt19937_64& rng, double lo, double hi) {
  return lo + (hi - lo) * (static_cast<double>(rng() >> 11) * 0x1.0p-53);
}

// The parameter names of the body moved by joint j, Pinocchio's order.
void addParameterNames(const pinocchio::Model& model, std::vector<std::string>& names) {
  static const char* kSuffix[10] = {"m",   "mcx", "mcy", "mcz", "Ixx",
                                    "Ixy", "Iyy", "Ixz", "Iyz", "Izz"};
  for (pinocchio::JointIndex j = 1; j < model.joints.size(); ++j) {
    std::string body = model.names[j];
    for (const auto& frame : model.frames) {
      if (frame.parentJoint == j && frame.type == pinocchio::BODY) {
        body = frame.name;
        break;
      }
    }
    for (const char* s : kSuffix) names.push_back(body + "." + s);
  }
}

}  // namespace

std::string toString(Criterion criterion) {
  return criterion == Criterion::Condition ? "condition" : "logdet";
}

Criterion parseCriterion(const std::string& text) {
  if (text == "condition") return Criterion::Condition;
  if (text == "logdet") return Criterion::LogDet;
  throw InputError("expected condition or logdet, got \"" + text + "\"");
}

void DesignOptions::validate(const pinocchio::Model& model) const {
  require(model.nq == model.nv, "robot", "a fixed base with revolute or prismatic joints",
          "nq " + std::to_string(model.nq) + ", nv " + std::to_string(model.nv));
  for (const std::string& name : joints) {
    require(velocityIndex(model, name) >= 0, "joints", "1-DoF joints of the robot",
            "\"" + name + "\"");
  }
  require(harmonics >= 1 && harmonics <= 20, "harmonics", "1 .. 20", std::to_string(harmonics));
  requirePositive(base_frequency, "base_frequency", " Hz");
  requirePositive(duration, "duration", " s");
  requireNonNegative(ramp, "ramp", " s");
  require(ramp < duration, "ramp", "shorter than the duration " + num(duration) + " s",
          num(ramp) + " s");
  require(samples >= 2, "samples", ">= 2", std::to_string(samples));
  require(std::isfinite(position_margin) && position_margin >= 0 && position_margin < 1,
          "position_margin", "a fraction in [0, 1)", num(position_margin));
  require(std::isfinite(velocity_fraction) && velocity_fraction > 0 && velocity_fraction <= 1,
          "velocity_fraction", "a fraction in (0, 1]", num(velocity_fraction));
  requirePositive(max_acceleration, "max_acceleration", " rad/s^2");
  require(std::isfinite(torque_fraction) && torque_fraction > 0 && torque_fraction <= 1,
          "torque_fraction", "a fraction in (0, 1]", num(torque_fraction));
  requirePositive(torque_noise_std, "torque_noise_std", " N m");
  require(basis_samples >= 1, "basis_samples", ">= 1", std::to_string(basis_samples));
  require(basis_threshold > 0 && basis_threshold < 1, "basis_threshold", "in (0, 1)",
          num(basis_threshold));
}

void ExcitationTrajectory::evaluate(double t, Eigen::VectorXd& q, Eigen::VectorXd& v,
                                    Eigen::VectorXd& a) const {
  for (std::size_t i = 0; i < joints.size(); ++i) {
    const JointState s = excite::evaluate(joints[i], t, ramp);
    q[i] = s.q;
    v[i] = s.qd;
    a[i] = s.qdd;
  }
}

TrajectorySamples sampleTrajectory(const ExcitationTrajectory& trajectory, double duration, int n) {
  require(n >= 2, "samples", ">= 2", std::to_string(n));
  const int nv = static_cast<int>(trajectory.joints.size());
  TrajectorySamples s;
  s.t = Eigen::VectorXd::LinSpaced(n, 0, duration);
  s.q.resize(nv, n);
  s.v.resize(nv, n);
  s.a.resize(nv, n);
  Eigen::VectorXd q(nv), v(nv), a(nv);
  for (int k = 0; k < n; ++k) {
    trajectory.evaluate(s.t[k], q, v, a);
    s.q.col(k) = q;
    s.v.col(k) = v;
    s.a.col(k) = a;
  }
  return s;
}

JointLimits JointLimits::from(const pinocchio::Model& model, const DesignOptions& o) {
  const int nv = model.nv;
  JointLimits l;
  l.center = Eigen::VectorXd::Zero(nv);
  l.half_range = Eigen::VectorXd::Constant(nv, kInf);
  l.velocity = Eigen::VectorXd::Constant(nv, kInf);
  l.acceleration = Eigen::VectorXd::Constant(nv, o.max_acceleration);
  l.torque = Eigen::VectorXd::Constant(nv, kInf);
  for (int i = 0; i < nv; ++i) {
    const double lo = model.lowerPositionLimit[i], hi = model.upperPositionLimit[i];
    if (std::isfinite(lo) && std::isfinite(hi) && lo < hi) {
      l.center[i] = 0.5 * (lo + hi);
      l.half_range[i] = (1 - o.position_margin) * 0.5 * (hi - lo);
    }
    const double vmax = model.velocityLimit[i], effort = model.effortLimit[i];
    if (std::isfinite(vmax) && vmax > 0) l.velocity[i] = o.velocity_fraction * vmax;
    if (std::isfinite(effort) && effort > 0) l.torque[i] = o.torque_fraction * effort;
  }
  return l;
}

LimitUse limitUse(const pinocchio::Model& model, const JointLimits& limits,
                  const TrajectorySamples& samples) {
  pinocchio::Data data(model);
  LimitUse use;
  double worst = -1;
  auto note = [&](double& field, double value, int i, int k, const char* what) {
    field = std::max(field, value);
    if (value > worst) {
      worst = value;
      use.worst = jointNameOf(model, i) + " at t = " + num(samples.t[k]) + " s: " + what;
    }
  };
  for (int k = 0; k < samples.size(); ++k) {
    const Eigen::VectorXd& tau =
        pinocchio::rnea(model, data, samples.q.col(k), samples.v.col(k), samples.a.col(k));
    for (int i = 0; i < model.nv; ++i) {
      note(use.position, std::abs(samples.q(i, k) - limits.center[i]) / limits.half_range[i], i, k,
           "position");
      note(use.velocity, std::abs(samples.v(i, k)) / limits.velocity[i], i, k, "velocity");
      note(use.acceleration, std::abs(samples.a(i, k)) / limits.acceleration[i], i, k,
           "acceleration");
      note(use.torque, std::abs(tau[i]) / limits.torque[i], i, k, "torque");
    }
  }
  return use;
}

BaseParameters baseParameters(const pinocchio::Model& model, const DesignOptions& options) {
  options.validate(model);
  const JointLimits limits = JointLimits::from(model, options);
  const std::vector<int> excited = excitedJoints(model, options);
  const int nv = model.nv, np = 10 * (model.njoints - 1), m = options.basis_samples;
  std::mt19937_64 rng(options.basis_seed);
  pinocchio::Data data(model);
  Eigen::MatrixXd W(m * nv, np);
  Eigen::VectorXd q = limits.center, v = Eigen::VectorXd::Zero(nv), a = Eigen::VectorXd::Zero(nv);
  for (int k = 0; k < m; ++k) {
    for (int i : excited) {
      const double half = std::isfinite(limits.half_range[i]) ? limits.half_range[i] : M_PI;
      const double vmax = std::isfinite(limits.velocity[i]) ? limits.velocity[i] : 1.0;
      q[i] = uniform(rng, limits.center[i] - half, limits.center[i] + half);
      v[i] = uniform(rng, -vmax, vmax);
      a[i] = uniform(rng, -limits.acceleration[i], limits.acceleration[i]);
    }
    W.middleRows(k * nv, nv) = pinocchio::computeJointTorqueRegressor(model, data, q, v, a);
  }
  Eigen::ColPivHouseholderQR<Eigen::MatrixXd> qr(W);
  qr.setThreshold(options.basis_threshold);
  const int r = static_cast<int>(qr.rank());
  BaseParameters base;
  std::vector<std::string> all;
  addParameterNames(model, all);
  const auto& perm = qr.colsPermutation().indices();
  for (int i = 0; i < np; ++i) (i < r ? base.columns : base.dependent).push_back(perm[i]);
  for (int c : base.columns) base.names.push_back(all[c]);
  const Eigen::MatrixXd R = qr.matrixR().topRows(r).template triangularView<Eigen::Upper>();
  base.K = R.leftCols(r).triangularView<Eigen::Upper>().solve(R.rightCols(np - r));
  return base;
}

Identifiability identifiability(const pinocchio::Model& model, const BaseParameters& base,
                                const TrajectorySamples& samples, double torque_noise_std) {
  requirePositive(torque_noise_std, "torque_noise_std", " N m");
  const int nv = model.nv, n = samples.size(), r = base.rank();
  pinocchio::Data data(model);
  Eigen::MatrixXd Yb(n * nv, r);
  for (int k = 0; k < n; ++k) {
    const auto& R = pinocchio::computeJointTorqueRegressor(model, data, samples.q.col(k),
                                                           samples.v.col(k), samples.a.col(k));
    for (int c = 0; c < r; ++c) Yb.block(k * nv, c, nv, 1) = R.col(base.columns[c]);
  }
  Identifiability out;
  out.rows = n * nv;
  const Eigen::BDCSVD<Eigen::MatrixXd> svd(Yb, Eigen::ComputeThinV);
  const Eigen::VectorXd& s = svd.singularValues();
  out.rank = static_cast<int>((s.array() > 1e-10 * s[0]).count());
  out.condition = out.rank == r ? s[0] / s[r - 1] : kInf;
  const double var = torque_noise_std * torque_noise_std;
  out.log_det = out.rank == r ? (2 * s.array().log()).sum() - r * std::log(var) : -kInf;
  out.std = Eigen::VectorXd::Constant(r, kInf);
  if (out.rank == r) {
    // (Y^T Y)^-1 = V S^-2 V^T
    const Eigen::MatrixXd VS = svd.matrixV() * s.cwiseInverse().asDiagonal();
    out.std = torque_noise_std * VS.rowwise().norm();
  }
  return out;
}

}  // namespace heft::excite
