#include "heft/sim/controller.hpp"

#include <algorithm>
#include <cmath>
#include <sstream>

#include <pinocchio/algorithm/crba.hpp>
#include <pinocchio/algorithm/frames.hpp>
#include <pinocchio/algorithm/jacobian.hpp>
#include <pinocchio/algorithm/joint-configuration.hpp>
#include <pinocchio/algorithm/kinematics.hpp>
#include <pinocchio/algorithm/rnea.hpp>
#include <pinocchio/algorithm/center-of-mass.hpp>

#include "heft/common/error.hpp"
#include "heft/sim/random.hpp"

namespace heft::sim {

namespace {

std::string num(double x) {
  std::ostringstream s;
  s.precision(6);
  s << x;
  return s.str();
}

void requirePositive(double x, const std::string& field, const std::string& unit) {
  require(std::isfinite(x) && x > 0, field, "a finite value > 0" + unit, num(x));
}
void requireNonNegative(double x, const std::string& field, const std::string& unit) {
  require(std::isfinite(x) && x >= 0, field, "a finite value >= 0" + unit, num(x));
}

// Quintic smoothstep on [0, 1] (value, first and second derivative w.r.t. x).
struct Smooth {
  double s = 0, ds = 0, dds = 0;
};
Smooth smoothstep(double x) {
  if (x <= 0) return {0, 0, 0};
  if (x >= 1) return {1, 0, 0};
  return {x * x * x * (10 - 15 * x + 6 * x * x), 30 * x * x * (1 - 2 * x + x * x),
          60 * x - 180 * x * x + 120 * x * x * x};
}

int sampleCount(double duration, double dt) {
  requirePositive(duration, "duration", " s");
  requirePositive(dt, "dt", " s");
  return static_cast<int>(std::llround(duration / dt)) + 1;
}

// Base pose offsets of the stance motion at time t.
struct PoseOffset {
  double roll = 0, pitch = 0, yaw = 0, dz = 0;
};

PoseOffset stanceOffset(const StanceMotionOptions& o, double t) {
  PoseOffset p;
  if (t < o.settle) return p;
  std::vector<int> phases;  // 0 roll, 1 pitch, 2 yaw, 3 squat
  if (o.roll_amplitude > 0) phases.push_back(0);
  if (o.pitch_amplitude > 0) phases.push_back(1);
  if (o.yaw_amplitude > 0) phases.push_back(2);
  if (o.squat_depth > 0) phases.push_back(3);
  if (phases.empty()) return p;
  const double cycle = o.phase_duration * static_cast<double>(phases.size());
  const double tau = std::fmod(t - o.settle, cycle);
  const int index = std::min(static_cast<int>(tau / o.phase_duration), static_cast<int>(phases.size()) - 1);
  const double local = tau - index * o.phase_duration;
  const double window =
      smoothstep(local / o.ramp).s * smoothstep((o.phase_duration - local) / o.ramp).s;
  const double rotation = std::sin(2 * M_PI * o.rotation_frequency * local) * window;
  switch (phases[index]) {
    case 0: p.roll = o.roll_amplitude * rotation; break;
    case 1: p.pitch = o.pitch_amplitude * rotation; break;
    case 2: p.yaw = o.yaw_amplitude * rotation; break;
    default:
      p.dz = -o.squat_depth * window * 0.5 * (1 - std::cos(2 * M_PI * o.squat_frequency * local));
  }
  return p;
}

// Newton iterations on the actuated joints so that every foot frame reaches its target, expressed
// in the base frame (the base is held at the identity). Returns false without convergence.
bool solveFeet(const pinocchio::Model& model, pinocchio::Data& data,
               const std::vector<pinocchio::FrameIndex>& feet, const Eigen::MatrixXd& targets,
               Eigen::VectorXd& q) {
  const int nu = model.nv - 6;
  const int nf = static_cast<int>(feet.size());
  q.head<7>() << 0, 0, 0, 0, 0, 0, 1;
  Eigen::VectorXd error(3 * nf);
  Eigen::MatrixXd J(3 * nf, nu);
  Eigen::Matrix<double, 6, Eigen::Dynamic> frame_jacobian(6, model.nv);
  for (int iteration = 0; iteration < 50; ++iteration) {
    pinocchio::forwardKinematics(model, data, q);
    pinocchio::updateFramePlacements(model, data);
    for (int f = 0; f < nf; ++f) {
      error.segment<3>(3 * f) = targets.col(f) - data.oMf[feet[f]].translation();
    }
    if (error.lpNorm<Eigen::Infinity>() < 1e-11) return true;
    pinocchio::computeJointJacobians(model, data, q);
    for (int f = 0; f < nf; ++f) {
      frame_jacobian.setZero();
      pinocchio::getFrameJacobian(model, data, feet[f], pinocchio::LOCAL_WORLD_ALIGNED,
                                  frame_jacobian);
      J.middleRows<3>(3 * f) = frame_jacobian.topRightCorner(3, nu);
    }
    // damped least squares: well defined for any number of feet and near singular legs
    const Eigen::MatrixXd JJt = J * J.transpose() + 1e-10 * Eigen::MatrixXd::Identity(3 * nf, 3 * nf);
    q.tail(nu) += J.transpose() * JJt.ldlt().solve(error);
  }
  return false;
}

}  // namespace

void StanceMotionOptions::validate(int nu) const {
  require(posture.size() == nu, "posture", std::to_string(nu) + " joint angles",
          std::to_string(posture.size()));
  require(posture.allFinite(), "posture", "finite angles", "non-finite values");
  requireNonNegative(settle, "settle", " s");
  requirePositive(phase_duration, "phase_duration", " s");
  requirePositive(ramp, "ramp", " s");
  require(2 * ramp <= phase_duration, "ramp", "at most phase_duration / 2 = " + num(phase_duration / 2),
          num(ramp));
  requireNonNegative(roll_amplitude, "roll_amplitude", " rad");
  requireNonNegative(pitch_amplitude, "pitch_amplitude", " rad");
  requireNonNegative(yaw_amplitude, "yaw_amplitude", " rad");
  requirePositive(rotation_frequency, "rotation_frequency", " Hz");
  requireNonNegative(squat_depth, "squat_depth", " m");
  requirePositive(squat_frequency, "squat_frequency", " Hz");
}

Reference stanceReference(const model::RobotModel& nominal, const std::vector<std::string>& feet,
                          double foot_radius, const StanceMotionOptions& options, double duration,
                          double dt) {
  require(nominal.hasFreeFlyer(), "stance motion robot", "a free-flyer base",
          nominal.displayName() + " with a fixed base");
  const pinocchio::Model& model = nominal.pinocchio();
  const int nu = model.nv - 6;
  require(model.nq == model.nv + 1, "stance motion joints", "revolute or prismatic joints only",
          "nq " + std::to_string(model.nq) + ", nv " + std::to_string(model.nv));
  options.validate(nu);
  require(!feet.empty(), "feet", "at least one foot frame", "none");
  requirePositive(foot_radius, "foot_radius", " m");
  const int n = sampleCount(duration, dt);

  std::vector<pinocchio::FrameIndex> ids;
  for (const auto& name : feet) {
    require(model.existFrame(name), "feet", "a frame of " + nominal.displayName(), "\"" + name + "\"");
    ids.push_back(model.getFrameId(name));
  }
  const int nf = static_cast<int>(ids.size());
  pinocchio::Data data(model);

  // feet stay where the standing posture puts them, sphere bottoms on the floor
  Eigen::VectorXd q = pinocchio::neutral(model);
  q.tail(nu) = options.posture;
  pinocchio::forwardKinematics(model, data, q);
  pinocchio::updateFramePlacements(model, data);
  Eigen::MatrixXd feet_world(3, nf);
  double mean_z = 0;
  for (int f = 0; f < nf; ++f) {
    feet_world.col(f) = data.oMf[ids[f]].translation();
    mean_z += feet_world(2, f) / nf;
  }
  const double height = foot_radius - mean_z;
  feet_world.row(2).setConstant(foot_radius);

  // configurations on the grid t = -dt .. (n) dt, for central differences
  Eigen::MatrixXd qs(model.nq, n + 2);
  Eigen::MatrixXd targets(3, nf);
  for (int i = 0; i < n + 2; ++i) {
    const double t = (i - 1) * dt;
    const PoseOffset o = stanceOffset(options, t);
    const Eigen::Matrix3d R = (Eigen::AngleAxisd(o.yaw, Eigen::Vector3d::UnitZ()) *
                               Eigen::AngleAxisd(o.pitch, Eigen::Vector3d::UnitY()) *
                               Eigen::AngleAxisd(o.roll, Eigen::Vector3d::UnitX()))
                                  .toRotationMatrix();
    const Eigen::Vector3d p(0, 0, height + o.dz);
    for (int f = 0; f < nf; ++f) targets.col(f) = R.transpose() * (feet_world.col(f) - p);
    if (!solveFeet(model, data, ids, targets, q)) {
      throw SolveError("stance reference: inverse kinematics did not converge at t = " + num(t) +
                       " s (roll " + num(o.roll) + ", pitch " + num(o.pitch) + ", yaw " +
                       num(o.yaw) + " rad, height " + num(p.z()) + " m)");
    }
    Eigen::VectorXd full = q;
    full.head<3>() = p;
    full.segment<4>(3) = Eigen::Quaterniond(R).coeffs();  // x y z w
    qs.col(i) = full;
  }

  Reference ref;
  ref.dt = dt;
  ref.q = qs.middleCols(1, n);
  ref.v.resize(model.nv, n);
  ref.a.resize(model.nv, n);
  ref.tau.resize(nu, n);
  Eigen::VectorXd back(model.nv), forward(model.nv);
  for (int k = 0; k < n; ++k) {
    pinocchio::difference(model, qs.col(k), qs.col(k + 1), back);
    pinocchio::difference(model, qs.col(k + 1), qs.col(k + 2), forward);
    ref.v.col(k) = (back + forward) / (2 * dt);
    ref.a.col(k) = (forward - back) / (dt * dt);
  }

  // feed-forward: base rows of the dynamics balanced by foot forces, joints take the rest
  const double weight = pinocchio::computeTotalMass(model) * 9.81;
  Eigen::VectorXd f0(3 * nf);
  for (int f = 0; f < nf; ++f) f0.segment<3>(3 * f) << 0, 0, weight / nf;
  Eigen::MatrixXd Jc(3 * nf, model.nv);
  Eigen::Matrix<double, 6, Eigen::Dynamic> frame_jacobian(6, model.nv);
  for (int k = 0; k < n; ++k) {
    const Eigen::VectorXd qk = ref.q.col(k);
    const Eigen::VectorXd tau_full = pinocchio::rnea(model, data, qk, ref.v.col(k), ref.a.col(k));
    pinocchio::computeJointJacobians(model, data, qk);
    for (int f = 0; f < nf; ++f) {
      frame_jacobian.setZero();
      pinocchio::getFrameJacobian(model, data, ids[f], pinocchio::LOCAL_WORLD_ALIGNED, frame_jacobian);
      Jc.middleRows(3 * f, 3) = frame_jacobian.topRows<3>();
    }
    // forces (world frame) closest to f0 with Jc_base^T f = tau_base
    const Eigen::MatrixXd A = Jc.leftCols<6>().transpose();
    const Eigen::VectorXd residual = tau_full.head<6>() - A * f0;
    const Eigen::MatrixXd AAt = A * A.transpose();
    const Eigen::VectorXd force = f0 + A.transpose() * AAt.ldlt().solve(residual);
    ref.tau.col(k) = tau_full.tail(nu) - Jc.rightCols(nu).transpose() * force;
  }
  return ref;
}

void FourierExcitationOptions::validate(int nu) const {
  require(harmonics >= 1 && harmonics <= 50, "harmonics", "1 .. 50", std::to_string(harmonics));
  requirePositive(base_frequency, "base_frequency", " Hz");
  require(std::isfinite(limit_margin) && limit_margin >= 0 && limit_margin < 1, "limit_margin",
          "a fraction in [0, 1)", num(limit_margin));
  require(std::isfinite(velocity_fraction) && velocity_fraction > 0 && velocity_fraction <= 1,
          "velocity_fraction", "a fraction in (0, 1]", num(velocity_fraction));
  requirePositive(max_acceleration, "max_acceleration", " rad/s^2");
  requirePositive(ramp, "ramp", " s");
  require(center.size() == 0 || center.size() == nu, "center",
          "empty or " + std::to_string(nu) + " values", std::to_string(center.size()));
  require(center.allFinite(), "center", "finite values", "non-finite values");
  requirePositive(unlimited_amplitude, "unlimited_amplitude", " rad");
}

Reference fourierReference(const model::RobotModel& nominal, const FourierExcitationOptions& options,
                           double duration, double dt) {
  require(!nominal.hasFreeFlyer(), "excitation robot", "a fixed base",
          nominal.displayName() + " with a free-flyer");
  const pinocchio::Model& model = nominal.pinocchio();
  const int nu = model.nv;
  options.validate(nu);
  const int n = sampleCount(duration, dt);
  const int L = options.harmonics;
  const double w = 2 * M_PI * options.base_frequency;

  // one joint per velocity; its angle, rate and acceleration drive q, v, a
  struct JointInfo {
    int idx_q, idx_v, nq;
    double center, amplitude, vmax;
    Eigen::VectorXd a, phi;
    double scale = 1;
  };
  std::vector<JointInfo> joints;
  Rng rng(options.coefficient_seed, 0x4F55524945ull);
  for (pinocchio::JointIndex j = 1; j < static_cast<pinocchio::JointIndex>(model.njoints); ++j) {
    const auto& jm = model.joints[j];
    require(jm.nv() == 1, "excitation joint " + model.names[j], "a 1-DoF joint", jm.shortname());
    JointInfo info{jm.idx_q(), jm.idx_v(), jm.nq(), 0, options.unlimited_amplitude, 0, {}, {}};
    if (options.center.size() > 0) info.center = options.center[info.idx_v];
    if (jm.nq() == 1) {
      const double lo = model.lowerPositionLimit[info.idx_q];
      const double hi = model.upperPositionLimit[info.idx_q];
      if (std::isfinite(lo) && std::isfinite(hi) && lo < hi) {
        info.center = 0.5 * (lo + hi);
        info.amplitude = (1 - options.limit_margin) * 0.5 * (hi - lo);
      }
    }
    const double vlimit = model.velocityLimit[info.idx_v];
    info.vmax = std::isfinite(vlimit) && vlimit > 0 ? options.velocity_fraction * vlimit
                                                    : std::numeric_limits<double>::infinity();
    info.a.resize(L);
    info.phi.resize(L);
    for (int l = 0; l < L; ++l) {
      info.a[l] = rng.uniform(-1, 1) / (l + 1);
      info.phi[l] = rng.uniform(0, 2 * M_PI);
    }
    joints.push_back(info);
  }

  // value, rate, acceleration of one joint's angle at time t with scale 1
  auto evaluate = [&](const JointInfo& info, double t, double& x, double& xd, double& xdd) {
    double d = 0, dd = 0, ddd = 0;
    for (int l = 0; l < L; ++l) {
      const double lw = (l + 1) * w;
      const double s = std::sin(lw * t + info.phi[l]), c = std::cos(lw * t + info.phi[l]);
      d += info.a[l] * s;
      dd += info.a[l] * lw * c;
      ddd -= info.a[l] * lw * lw * s;
    }
    const Smooth e = smoothstep(t / options.ramp);
    const double e1 = e.ds / options.ramp, e2 = e.dds / (options.ramp * options.ramp);
    x = e.s * d;
    xd = e1 * d + e.s * dd;
    xdd = e2 * d + 2 * e1 * dd + e.s * ddd;
  };

  // largest scale that respects every bound over the ramp and one full period
  const double horizon = options.ramp + 1.0 / options.base_frequency;
  for (auto& info : joints) {
    double max_x = 0, max_v = 0, max_a = 0;
    for (double t = 0; t <= horizon; t += 1e-3) {
      double x, xd, xdd;
      evaluate(info, t, x, xd, xdd);
      max_x = std::max(max_x, std::abs(x));
      max_v = std::max(max_v, std::abs(xd));
      max_a = std::max(max_a, std::abs(xdd));
    }
    info.scale = std::min({info.amplitude / max_x, info.vmax / max_v, options.max_acceleration / max_a});
  }

  Reference ref;
  ref.dt = dt;
  ref.q.resize(model.nq, n);
  ref.v.resize(nu, n);
  ref.a.resize(nu, n);
  pinocchio::Data data(model);
  const Eigen::VectorXd neutral = pinocchio::neutral(model);
  for (int k = 0; k < n; ++k) {
    const double t = k * dt;
    Eigen::VectorXd q = neutral;
    for (const auto& info : joints) {
      double x, xd, xdd;
      evaluate(info, t, x, xd, xdd);
      const double angle = info.center + info.scale * x;
      if (info.nq == 2) {
        q[info.idx_q] = std::cos(angle);
        q[info.idx_q + 1] = std::sin(angle);
      } else {
        q[info.idx_q] = angle;
      }
      ref.v(info.idx_v, k) = info.scale * xd;
      ref.a(info.idx_v, k) = info.scale * xdd;
    }
    ref.q.col(k) = q;
  }
  ref.tau.resize(nu, n);
  for (int k = 0; k < n; ++k) {
    ref.tau.col(k) = pinocchio::rnea(model, data, ref.q.col(k), ref.v.col(k), ref.a.col(k));
  }
  return ref;
}

void PdGains::validate(int nu) const {
  require(kp.size() == nu, "kp", std::to_string(nu) + " gains", std::to_string(kp.size()));
  require(kd.size() == nu, "kd", std::to_string(nu) + " gains", std::to_string(kd.size()));
  require(kp.allFinite() && (kp.array() >= 0).all(), "kp", "finite gains >= 0", "other values");
  require(kd.allFinite() && (kd.array() >= 0).all(), "kd", "finite gains >= 0", "other values");
}

PdGains uniformGains(int nu, double kp, double kd) {
  PdGains g{Eigen::VectorXd::Constant(nu, kp), Eigen::VectorXd::Constant(nu, kd)};
  g.validate(nu);
  return g;
}

PdGains bandwidthGains(const model::RobotModel& nominal, const Eigen::VectorXd& q, double bandwidth,
                       double damping_ratio) {
  const pinocchio::Model& model = nominal.pinocchio();
  require(q.size() == model.nq, "q", std::to_string(model.nq) + " entries", std::to_string(q.size()));
  requirePositive(bandwidth, "bandwidth", " rad/s");
  requireNonNegative(damping_ratio, "damping_ratio", "");
  pinocchio::Data data(model);
  pinocchio::crba(model, data, q);
  const int offset = nominal.hasFreeFlyer() ? 6 : 0;
  const int nu = model.nv - offset;
  PdGains g;
  g.kp.resize(nu);
  g.kd.resize(nu);
  // effective inertia of each joint with the others free, 1 / (M^-1)_ii: with these, the
  // eigenvalues of M^-1 Kd are at most nu 2 zeta w, so the explicit 1 kHz PD stays stable (M_ii
  // itself overestimates distal joints and made the panda's wrist and fingers diverge)
  data.M.triangularView<Eigen::StrictlyLower>() = data.M.transpose().triangularView<Eigen::StrictlyLower>();
  const Eigen::MatrixXd Minv = data.M.inverse();
  for (int i = 0; i < nu; ++i) {
    const double m = 1.0 / Minv(offset + i, offset + i);
    g.kp[i] = m * bandwidth * bandwidth;
    g.kd[i] = 2 * damping_ratio * bandwidth * m;
  }
  return g;
}

PdController::PdController(const model::RobotModel& nominal, Reference reference, PdGains gains)
    : model_(nominal.pinocchio()),
      reference_(std::move(reference)),
      gains_(std::move(gains)),
      offset_(nominal.hasFreeFlyer() ? 6 : 0),
      error_(model_.nv) {
  const int nu = model_.nv - offset_;
  gains_.validate(nu);
  require(reference_.samples() > 0, "reference", "at least one sample", "none");
  require(reference_.q.rows() == model_.nq && reference_.v.rows() == model_.nv &&
              reference_.tau.rows() == nu,
          "reference rows", "nq, nv, nu = " + std::to_string(model_.nq) + ", " +
                                std::to_string(model_.nv) + ", " + std::to_string(nu),
          std::to_string(reference_.q.rows()) + ", " + std::to_string(reference_.v.rows()) + ", " +
              std::to_string(reference_.tau.rows()));
}

void PdController::compute(int k, const Eigen::VectorXd& q, const Eigen::VectorXd& v,
                           Eigen::VectorXd& tau) {
  k = std::clamp(k, 0, reference_.samples() - 1);
  const int nu = model_.nv - offset_;
  pinocchio::difference(model_, q, reference_.q.col(k), error_);
  tau.resize(nu);
  tau = reference_.tau.col(k) + gains_.kp.cwiseProduct(error_.tail(nu)) +
        gains_.kd.cwiseProduct(reference_.v.col(k).tail(nu) - v.tail(nu));
}

}  // namespace heft::sim
