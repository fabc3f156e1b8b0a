#include "heft/sim/controller.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <sstream>

#include <pinocchio/algorithm/center-of-mass.hpp>
#include <pinocchio/algorithm/crba.hpp>
#include <pinocchio/algorithm/frames.hpp>
#include <pinocchio/algorithm/jacobian.hpp>
#include <pinocchio/algorithm/joint-configuration.hpp>
#include <pinocchio/algorithm/kinematics.hpp>
#include <pinocchio/algorithm/rnea.hpp>
#include <pinocchio/spatial/explog.hpp>

#include "heft/common/error.hpp"
#include "heft/common/format.hpp"
#include "heft/sim/random.hpp"

namespace heft::sim {

namespace {

std::string num(double x) { return formatNumber(x, 6); }

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
  double roll = 0, pitch = 0, yaw = 0, dx = 0, dy = 0, dz = 0;
  std::vector<double> lift;  // per foot, above the floor [m] (trot and hop phases); empty: none
};

// Quintic p(x) on [0, 1] with p(0), p'(0), p''(0) and p(1), p'(1), p''(1) given (derivatives with
// respect to x); returns value, first and second derivative with respect to x.
Smooth quintic(double x, double p0, double v0, double a0, double p1, double v1, double a1) {
  // p = p0 + v0 x + a0 x^2 / 2 + c3 x^3 + c4 x^4 + c5 x^5
  const double r0 = p1 - (p0 + v0 + a0 / 2), r1 = v1 - (v0 + a0), r2 = a1 - a0;
  const double c3 = 10 * r0 - 4 * r1 + r2 / 2;
  const double c4 = -15 * r0 + 7 * r1 - r2;
  const double c5 = 6 * r0 - 3 * r1 + r2 / 2;
  const double x2 = x * x, x3 = x2 * x;
  return {p0 + v0 * x + a0 * x2 / 2 + c3 * x3 + c4 * x2 * x2 + c5 * x3 * x2,
          v0 + a0 * x + 3 * c3 * x2 + 4 * c4 * x3 + 5 * c5 * x2 * x2,
          a0 + 6 * c3 * x + 12 * c4 * x2 + 20 * c5 * x3};
}

// Foot lift bump on [0, 1]: 64 h x^3 (1 - x)^3, zero value, rate and acceleration at both ends.
double bump(double x, double height) {
  if (x <= 0 || x >= 1) return 0;
  const double y = x * (1 - x);
  return 64 * height * y * y * y;
}

// Weight of a contact in the feed-forward force distribution from its height above the floor:
// 1 on the floor, falling to 0 over the first millimetre of lift, so the forces move smoothly.
double groundWeight(double lift) { return 1 - smoothstep(lift / 1e-3).s; }

// Contact forces (world frame, 3 per point) that balance the base rows of the dynamics,
// A f = tau_base with A = Jc_base^T (6 x 3n), closest (weighted least squares) to each point's
// share of the weight. `w` (one per point, in [0, 1]) is how much a point may carry: its share is
// w_c weight / sum(w) straight up and its force moves from the share only in proportion to w_c,
// so a point with w = 0 (in the air) carries nothing. `ridge` regularizes A W A^T: 0 balances
// exactly (the points with w > 0 must hold any wrench), > 0 keeps the forces bounded when they
// cannot (two feet hold no moment about their line, none hold nothing).
Eigen::VectorXd balancingForces(const Eigen::MatrixXd& A, const Eigen::VectorXd& tau_base,
                                const Eigen::VectorXd& w, double weight, double ridge) {
  const int nc = static_cast<int>(w.size());
  const double share = w.sum() > 0 ? weight / w.sum() : 0;
  Eigen::VectorXd w3(3 * nc), fw = Eigen::VectorXd::Zero(3 * nc);
  for (int c = 0; c < nc; ++c) {
    w3.segment<3>(3 * c).setConstant(w[c]);
    fw[3 * c + 2] = w[c] * share;
  }
  const Eigen::VectorXd residual = tau_base - A * fw;
  const Eigen::MatrixXd AW = A * w3.asDiagonal();
  const Eigen::MatrixXd AWAt = AW * A.transpose() + ridge * Eigen::MatrixXd::Identity(6, 6);
  return fw + AW.transpose() * AWAt.ldlt().solve(residual);
}

constexpr double kGravity = 9.81;

// One hop from rest to rest: push (base down then up to take-off at v0 with acceleration -g),
// flight (ballistic base, feet lifted by a bump), landing (mirror of the push). Returns the base
// height offset and sets `flight_lift` (feet above the floor) at local time `tau`.
double hopOffset(const StanceMotionOptions& o, double flight, double tau, double& flight_lift) {
  flight_lift = 0;
  const double v0 = kGravity * flight / 2;
  const double push = o.hop_push;
  if (tau < push) {
    // derivatives with respect to x = tau / push: velocity * push, acceleration * push^2
    return quintic(tau / push, 0, 0, 0, 0, v0 * push, -kGravity * push * push).s;
  }
  tau -= push;
  if (tau < flight) {
    flight_lift = bump(tau / flight, o.hop_clearance);
    return v0 * tau - 0.5 * kGravity * tau * tau;
  }
  tau -= flight;
  if (tau < push) return quintic(tau / push, 0, -v0 * push, -kGravity * push * push, 0, 0, 0).s;
  return 0;
}

// Pronking in a window of `window` seconds: as many whole hops from rest to rest as fit with
// `margin` seconds free at each end, centred. Returns the height offset at `local` seconds into
// the window and sets `lift` (the feet above the floor).
double pronkOffset(const StanceMotionOptions& o, double flight, double window, double margin,
                   double local, double& lift) {
  const double period = 2 * o.hop_push + flight;
  const int hops = static_cast<int>((window - 2 * margin) / period);
  const double tau = local - 0.5 * (window - hops * period);
  lift = 0;
  return tau >= 0 && tau < hops * period ? hopOffset(o, flight, std::fmod(tau, period), lift) : 0.0;
}

// Free time kept at each end of a pronking segment [s].
constexpr double kHopMargin = 0.5;

void addCommands(const StanceMotionOptions& o, double local, PoseOffset& p) {
  const BezierCommands& commands = o.commands;
  if (commands.points.size() == 0) return;
  const Eigen::Matrix<double, BezierCommands::kChannels, 1> c = commands.evaluate(local);
  p.dx += c[0];
  p.dy += c[1];
  p.dz += c[2];
  p.roll += c[3];
  p.pitch += c[4];
  p.yaw += c[5];
  if (!commands.hops() || local < 0 || local >= commands.duration()) return;
  const int segment =
      std::min(static_cast<int>(local / commands.segment_duration), commands.segments() - 1);
  const double flight = commands.hop_flight[segment];
  if (flight <= 0) return;
  const double H = commands.segment_duration;
  double lift = 0;
  p.dz += pronkOffset(o, flight, H, kHopMargin, local - segment * H, lift);
  // a phase's own lift (trot, hops) stays where it is higher
  if (p.lift.empty()) p.lift.assign(4, 0.0);
  for (double& l : p.lift) l = std::max(l, lift);
}

PoseOffset phaseOffset(const StanceMotionOptions& o, double t);

PoseOffset stanceOffset(const StanceMotionOptions& o, double t) {
  PoseOffset p = phaseOffset(o, t);
  if (t >= o.settle) addCommands(o, t - o.settle, p);
  return p;
}

PoseOffset phaseOffset(const StanceMotionOptions& o, double t) {
  PoseOffset p;
  if (t < o.settle) return p;
  std::vector<int> phases;  // 0 roll, 1 pitch, 2 yaw, 3 squat
  if (o.roll_amplitude > 0) phases.push_back(0);
  if (o.pitch_amplitude > 0) phases.push_back(1);
  if (o.yaw_amplitude > 0) phases.push_back(2);
  if (o.squat_depth > 0) phases.push_back(3);
  if (o.trot_height > 0) phases.push_back(4);
  if (o.hop_flight > 0) phases.push_back(5);
  if (phases.empty()) return p;
  const double cycle = o.phase_duration * static_cast<double>(phases.size());
  const double tau = std::fmod(t - o.settle, cycle);
  const int index =
      std::min(static_cast<int>(tau / o.phase_duration), static_cast<int>(phases.size()) - 1);
  const double local = tau - index * o.phase_duration;
  const double window =
      smoothstep(local / o.ramp).s * smoothstep((o.phase_duration - local) / o.ramp).s;
  const double rotation = std::sin(2 * M_PI * o.rotation_frequency * local) * window;
  switch (phases[index]) {
    case 0:
      p.roll = o.roll_amplitude * rotation;
      break;
    case 1:
      p.pitch = o.pitch_amplitude * rotation;
      break;
    case 2:
      p.yaw = o.yaw_amplitude * rotation;
      break;
    case 3:
      p.dz = -o.squat_depth * window * 0.5 * (1 - std::cos(2 * M_PI * o.squat_frequency * local));
      break;
    case 4: {
      // trot in place: feet 0 and 3 (FL, RR) swing in the first half of each cycle, 1 and 2 in
      // the second, each for trot_swing of its half; the lift fades in and out with the window
      p.lift.assign(4, 0.0);
      const double cycle_phase = std::fmod(local * o.trot_frequency, 1.0);
      const int pair = cycle_phase < 0.5 ? 0 : 1;
      const double half = std::fmod(cycle_phase, 0.5) / 0.5;  // [0, 1) within the half cycle
      const double x = (half - 0.5 * (1 - o.trot_swing)) / o.trot_swing;
      const double lift = bump(x, o.trot_height) * window;
      if (pair == 0) {
        p.lift[0] = p.lift[3] = lift;
      } else {
        p.lift[1] = p.lift[2] = lift;
      }
      break;
    }
    default: {
      double lift = 0;
      p.dz = pronkOffset(o, o.hop_flight, o.phase_duration, o.ramp, local, lift);
      p.lift.assign(4, lift);
    }
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
    const Eigen::MatrixXd JJt =
        J * J.transpose() + 1e-10 * Eigen::MatrixXd::Identity(3 * nf, 3 * nf);
    q.tail(nu) += J.transpose() * JJt.ldlt().solve(error);
  }
  return false;
}

}  // namespace

Eigen::Matrix<double, BezierCommands::kChannels, 1> BezierCommands::evaluate(double local) const {
  Eigen::Matrix<double, kChannels, 1> value = Eigen::Matrix<double, kChannels, 1>::Zero();
  const int count = segments();
  if (count == 0 || local < 0 || local >= count * segment_duration) return value;
  const int segment = std::min(static_cast<int>(local / segment_duration), count - 1);
  const double u = std::clamp(local / segment_duration - segment, 0.0, 1.0);
  // Bernstein weights by the recurrence C(n, i) u^i (1-u)^(n-i): start at (1-u)^n
  double weight = std::pow(1 - u, degree);
  for (int i = 0; i <= degree; ++i) {
    if (i > 0) {
      // C(n, i) / C(n, i - 1) = (n - i + 1) / i; u / (1 - u) is avoided at u = 1
      weight = u < 1 ? weight * (degree - i + 1) / i * u / (1 - u) : (i == degree ? 1.0 : 0.0);
    }
    value += weight * points.col(segment * (degree + 1) + i);
  }
  return value;
}

void BezierCommands::validate(double hop_push) const {
  if (points.size() == 0) {
    require(hop_flight.size() == 0, "commands.hop_flight", "none without control points",
            std::to_string(hop_flight.size()) + " values");
    return;
  }
  require(degree >= 4, "commands.degree", ">= 4 (two fixed control points at each end)",
          std::to_string(degree));
  requirePositive(segment_duration, "commands.segment_duration", " s");
  require(points.rows() == kChannels, "commands.points",
          std::to_string(kChannels) + " rows (x, y, z, roll, pitch, yaw)",
          std::to_string(points.rows()));
  require(points.cols() % (degree + 1) == 0, "commands.points",
          "degree + 1 = " + std::to_string(degree + 1) + " columns per segment",
          std::to_string(points.cols()) + " columns");
  require(points.allFinite(), "commands.points", "finite values", "non-finite values");
  for (int s = 0; s < segments(); ++s) {
    const int first = s * (degree + 1);
    const bool at_rest = points.col(first).isZero(0) && points.col(first + 1).isZero(0) &&
                         points.col(first + degree - 1).isZero(0) &&
                         points.col(first + degree).isZero(0);
    require(at_rest, "commands.points",
            "segments that start and end at rest (their first two and last two control points 0)",
            "segment " + std::to_string(s + 1) + " with a non-zero end point");
  }
  if (hop_flight.size() == 0) return;
  require(hop_flight.size() == segments(), "commands.hop_flight",
          "one flight time per segment (" + std::to_string(segments()) + ")",
          std::to_string(hop_flight.size()) + " values");
  for (Eigen::Index s = 0; s < hop_flight.size(); ++s) {
    require(std::isfinite(hop_flight[s]) && hop_flight[s] >= 0, "commands.hop_flight",
            "flight times >= 0 s", num(hop_flight[s]));
    require(
        hop_flight[s] == 0 || 2 * hop_push + hop_flight[s] <= segment_duration - 2 * kHopMargin,
        "commands.hop_flight",
        "hops (2 hop_push + flight) that fit in a segment with 0.5 s free at each end",
        num(2 * hop_push + hop_flight[s]) + " s in segments of " + num(segment_duration) + " s");
  }
}

void StanceMotionOptions::validate(int nu) const {
  require(posture.size() == nu, "posture", std::to_string(nu) + " joint angles",
          std::to_string(posture.size()));
  require(posture.allFinite(), "posture", "finite angles", "non-finite values");
  requireNonNegative(settle, "settle", " s");
  requirePositive(phase_duration, "phase_duration", " s");
  requirePositive(ramp, "ramp", " s");
  require(2 * ramp <= phase_duration, "ramp",
          "at most phase_duration / 2 = " + num(phase_duration / 2), num(ramp));
  requireNonNegative(roll_amplitude, "roll_amplitude", " rad");
  requireNonNegative(pitch_amplitude, "pitch_amplitude", " rad");
  requireNonNegative(yaw_amplitude, "yaw_amplitude", " rad");
  requirePositive(rotation_frequency, "rotation_frequency", " Hz");
  requireNonNegative(squat_depth, "squat_depth", " m");
  requirePositive(squat_frequency, "squat_frequency", " Hz");
  requireNonNegative(trot_height, "trot_height", " m");
  requirePositive(trot_frequency, "trot_frequency", " Hz");
  require(std::isfinite(trot_swing) && trot_swing > 0 && trot_swing <= 1, "trot_swing",
          "a fraction in (0, 1]", num(trot_swing));
  requireNonNegative(hop_flight, "hop_flight", " s");
  requirePositive(hop_push, "hop_push", " s");
  requireNonNegative(hop_clearance, "hop_clearance", " m");
  require(hop_flight == 0 || 2 * hop_push + hop_flight <= phase_duration - 2 * ramp, "hop_flight",
          "a hop (2 hop_push + hop_flight) that fits between the fades of a phase",
          num(2 * hop_push + hop_flight) + " s");
  commands.validate(hop_push);
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
    require(model.existFrame(name), "feet", "a frame of " + nominal.displayName(),
            "\"" + name + "\"");
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
    const Eigen::Vector3d p(o.dx, o.dy, height + o.dz);
    for (int f = 0; f < nf; ++f) {
      Eigen::Vector3d foot = feet_world.col(f);
      if (f < static_cast<int>(o.lift.size())) foot.z() += o.lift[f];
      targets.col(f) = R.transpose() * (foot - p);
    }
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
  const bool lifting = options.trot_height > 0 || options.hop_flight > 0 || options.commands.hops();
  if (lifting) {
    require(nf == 4, "feet", "four feet for the trot and hop phases", std::to_string(nf));
  }
  const double weight = pinocchio::computeTotalMass(model) * 9.81;
  Eigen::MatrixXd Jc(3 * nf, model.nv);
  Eigen::Matrix<double, 6, Eigen::Dynamic> frame_jacobian(6, model.nv);
  for (int k = 0; k < n; ++k) {
    const Eigen::VectorXd qk = ref.q.col(k);
    const Eigen::VectorXd tau_full = pinocchio::rnea(model, data, qk, ref.v.col(k), ref.a.col(k));
    pinocchio::computeJointJacobians(model, data, qk);
    for (int f = 0; f < nf; ++f) {
      frame_jacobian.setZero();
      pinocchio::getFrameJacobian(model, data, ids[f], pinocchio::LOCAL_WORLD_ALIGNED,
                                  frame_jacobian);
      Jc.middleRows(3 * f, 3) = frame_jacobian.topRows<3>();
    }
    // forces (world frame) closest to an equal share with Jc_base^T f = tau_base
    const Eigen::MatrixXd A = Jc.leftCols<6>().transpose();
    Eigen::VectorXd w = Eigen::VectorXd::Ones(nf);
    double ridge = 0;
    if (lifting) {
      // feet in the air carry nothing (weight falling to 0 over the first millimetre of lift, so
      // the forces move smoothly between feet); a small ridge keeps it defined with two feet (no
      // moment about their line) or none (flight) and bounds the force on a foot that is about
      // to lift (ridge 1e-2: at most 5 N per N m of unbalanced moment)
      const PoseOffset o = stanceOffset(options, k * dt);
      for (int f = 0; f < nf && f < static_cast<int>(o.lift.size()); ++f) {
        w[f] = groundWeight(o.lift[f]);
      }
      ridge = 1e-2;
    }
    const Eigen::VectorXd force = balancingForces(A, tau_full.head<6>(), w, weight, ridge);
    ref.tau.col(k) = tau_full.tail(nu) - Jc.rightCols(nu).transpose() * force;
  }
  return ref;
}

void HumanoidMotionOptions::validate() const {
  require(soles.size() >= 1, "soles", "at least one sole frame", "none");
  requireNonNegative(settle, "settle", " s");
  requirePositive(phase_duration, "phase_duration", " s");
  requirePositive(ramp, "ramp", " s");
  require(2 * ramp <= phase_duration, "ramp",
          "at most phase_duration / 2 = " + num(phase_duration / 2), num(ramp));
  for (const auto& [joint, angle] : posture) {
    require(std::isfinite(angle), "posture[" + joint + "]", "a finite angle", num(angle));
  }
  auto checkWave = [](const JointWave& w, const std::string& where) {
    require(std::isfinite(w.amplitude) && std::isfinite(w.phase), where + "[" + w.joint + "]",
            "finite amplitude and phase", num(w.amplitude) + ", " + num(w.phase));
    requirePositive(w.frequency, where + "[" + w.joint + "] frequency", " Hz");
  };
  for (const auto& phase : phases) {
    requireNonNegative(phase.squat_depth, "phases squat_depth", " m");
    requirePositive(phase.squat_frequency, "phases squat_frequency", " Hz");
    require(std::isfinite(phase.shift_amplitude), "phases shift_amplitude", "a finite value",
            num(phase.shift_amplitude));
    requirePositive(phase.shift_frequency, "phases shift_frequency", " Hz");
    for (const auto& w : phase.joints) checkWave(w, "phases joints");
    requireNonNegative(phase.step_height, "phases step_height", " m");
    if (phase.step_height > 0) {
      require(soles.size() == 2, "soles", "two sole frames for stepping",
              std::to_string(soles.size()));
      requireNonNegative(phase.step_shift, "phases step_shift", " m");
      requirePositive(phase.step_transfer, "phases step_transfer", " s");
      requirePositive(phase.step_swing, "phases step_swing", " s");
      requireNonNegative(phase.step_landing_speed, "phases step_landing_speed", " m/s");
      const double step = 2 * phase.step_transfer + phase.step_swing;
      require(step <= phase_duration - 2 * ramp, "phases step_transfer",
              "a step (2 step_transfer + step_swing) that fits between the fades of a phase (" +
                  num(phase_duration - 2 * ramp) + " s)",
              num(step) + " s");
    }
  }
  for (const auto& w : continuous) checkWave(w, "continuous");
}

namespace {

// Pelvis offsets and joint offsets (velocity index -> angle) of the humanoid motion at time t;
// per sole (stepping): its lift above the floor [m] and its share of the feed-forward load [0, 1].
struct HumanoidOffset {
  double dz = 0, dy = 0;
  std::vector<std::pair<int, double>> joints;
  std::array<double, 2> lift = {0, 0};
  std::array<double, 2> load = {1, 1};
};

// Stepping in place at time `local` into a phase (HumanoidPhase::step_height): adds the pelvis y
// and sets the lifts and loads. `side` is the world y direction (+1 / -1) of each sole.
void addSteps(const HumanoidPhase& phase, double phase_duration, double ramp, double local,
              const std::array<double, 2>& side, HumanoidOffset& out) {
  const double step = phase.step_transfer + phase.step_swing;
  const int steps =
      static_cast<int>((phase_duration - 2 * ramp - phase.step_transfer) / step);  // >= 1
  const double start = 0.5 * (phase_duration - steps * step - phase.step_transfer);
  const double tau = local - start;
  if (tau < 0 || tau >= steps * step + phase.step_transfer) return;
  const int i = std::min(static_cast<int>(tau / step), steps);
  const double u = tau - i * step;
  // step i stands on sole i % 2; the pelvis goes from the previous stance (the middle before
  // the first step) to this one, and back to the middle after the last
  auto pelvis = [&](int j) { return j < 0 || j >= steps ? 0.0 : phase.step_shift * side[j % 2]; };
  const int stance = i % 2, other = 1 - stance;
  if (u < phase.step_transfer) {
    const double s = smoothstep(u / phase.step_transfer).s;
    out.dy += pelvis(i - 1) + (pelvis(i) - pelvis(i - 1)) * s;
    // the load leaves the sole that swings next and comes onto the one that just landed
    if (i == 0) {
      out.load[other] = 1 - s;
    } else if (i == steps) {
      out.load[stance] = s;  // the last swing's sole (steps - 1 stood on the other)
    } else {
      out.load[stance] = s;
      out.load[other] = 1 - s;
    }
    return;
  }
  out.dy += pelvis(i);
  out.load[other] = 0;
  // the bump, plus v T x^3 (1 - x): lands at the touchdown speed v (the rate steps to 0 there)
  const double x = (u - phase.step_transfer) / phase.step_swing;
  out.lift[other] = bump(x, phase.step_height) +
                    phase.step_landing_speed * phase.step_swing * x * x * x * (1 - x);
}

HumanoidOffset humanoidOffset(const HumanoidMotionOptions& o, const std::vector<int>& phase_start,
                              const std::vector<int>& wave_index, const std::array<double, 2>& side,
                              double t) {
  HumanoidOffset out;
  if (t < o.settle) return out;
  const double local_all = t - o.settle;
  // continuous waves, faded in once
  const double fade = smoothstep(local_all / o.ramp).s;
  const int first_continuous = phase_start.back();
  for (std::size_t w = 0; w < o.continuous.size(); ++w) {
    const JointWave& wave = o.continuous[w];
    out.joints.emplace_back(
        wave_index[first_continuous + w],
        fade * wave.amplitude * std::sin(2 * M_PI * wave.frequency * local_all + wave.phase));
  }
  if (o.phases.empty()) return out;
  const int count = static_cast<int>(o.phases.size());
  const double cycle = o.phase_duration * count;
  const double tau = std::fmod(local_all, cycle);
  const int index = std::min(static_cast<int>(tau / o.phase_duration), count - 1);
  const double local = tau - index * o.phase_duration;
  const double window =
      smoothstep(local / o.ramp).s * smoothstep((o.phase_duration - local) / o.ramp).s;
  const HumanoidPhase& phase = o.phases[index];
  out.dz =
      -phase.squat_depth * window * 0.5 * (1 - std::cos(2 * M_PI * phase.squat_frequency * local));
  out.dy = phase.shift_amplitude * window * std::sin(2 * M_PI * phase.shift_frequency * local);
  for (std::size_t w = 0; w < phase.joints.size(); ++w) {
    const JointWave& wave = phase.joints[w];
    out.joints.emplace_back(
        wave_index[phase_start[index] + w],
        window * wave.amplitude * std::sin(2 * M_PI * wave.frequency * local + wave.phase));
  }
  if (phase.step_height > 0) addSteps(phase, o.phase_duration, o.ramp, local, side, out);
  return out;
}

// Newton iterations on the actuated joints so that every sole frame reaches its placement
// (expressed in the base frame; the base is held at the identity). Other joints do not move the
// soles, so their columns are zero and they keep their values. Returns false without convergence.
bool solveSoles(const pinocchio::Model& model, pinocchio::Data& data,
                const std::vector<pinocchio::FrameIndex>& soles,
                const std::vector<pinocchio::SE3>& targets, Eigen::VectorXd& q) {
  const int nu = model.nv - 6;
  const int ns = static_cast<int>(soles.size());
  q.head<7>() << 0, 0, 0, 0, 0, 0, 1;
  Eigen::VectorXd error(6 * ns);
  Eigen::MatrixXd J(6 * ns, nu);
  Eigen::Matrix<double, 6, Eigen::Dynamic> frame_jacobian(6, model.nv);
  for (int iteration = 0; iteration < 50; ++iteration) {
    pinocchio::forwardKinematics(model, data, q);
    pinocchio::updateFramePlacements(model, data);
    for (int f = 0; f < ns; ++f) {
      error.segment<6>(6 * f) = pinocchio::log6(data.oMf[soles[f]].actInv(targets[f])).toVector();
    }
    if (error.lpNorm<Eigen::Infinity>() < 1e-11) return true;
    pinocchio::computeJointJacobians(model, data, q);
    for (int f = 0; f < ns; ++f) {
      frame_jacobian.setZero();
      pinocchio::getFrameJacobian(model, data, soles[f], pinocchio::LOCAL, frame_jacobian);
      J.middleRows<6>(6 * f) = frame_jacobian.rightCols(nu);
    }
    const Eigen::MatrixXd JJt =
        J * J.transpose() + 1e-10 * Eigen::MatrixXd::Identity(6 * ns, 6 * ns);
    q.tail(nu) += J.transpose() * JJt.ldlt().solve(error);
  }
  return false;
}

}  // namespace

namespace {

// What humanoidReference's steps share: the frames, every wave's velocity index (phases in order,
// then the continuous waves), the standing posture and where it puts the soles.
struct HumanoidPlan {
  std::vector<pinocchio::FrameIndex> soles, contacts;
  std::vector<int> phase_start, wave_index;
  Eigen::VectorXd posture;
  double height = 0;  ///< of the base above the floor in the posture
  std::vector<pinocchio::SE3> soles_world;
  std::array<double, 2> side = {1, -1};  ///< which way (world y) each sole lies from the middle
  bool landing_at_speed = false;
};

pinocchio::FrameIndex frameOf(const model::RobotModel& nominal, const std::string& name,
                              const std::string& field) {
  const pinocchio::Model& model = nominal.pinocchio();
  require(model.existFrame(name), field, "a frame of " + nominal.displayName(), "\"" + name + "\"");
  return model.getFrameId(name);
}

int velocityIndexOf(const model::RobotModel& nominal, const std::string& joint,
                    const std::string& field) {
  const pinocchio::Model& model = nominal.pinocchio();
  require(model.existJointName(joint), field, "a joint of " + nominal.displayName(),
          "\"" + joint + "\"");
  const auto& jm = model.joints[model.getJointId(joint)];
  require(jm.nv() == 1 && jm.nq() == 1, field + " " + joint, "a 1-DoF joint", jm.shortname());
  return jm.idx_v();
}

// The soles' and contact points' frames and the waves' joints.
HumanoidPlan humanoidPlan(const model::RobotModel& nominal, const HumanoidMotionOptions& options,
                          const std::vector<std::string>& contact_frames) {
  HumanoidPlan plan;
  for (const auto& name : options.soles) plan.soles.push_back(frameOf(nominal, name, "soles"));
  for (const auto& name : contact_frames)
    plan.contacts.push_back(frameOf(nominal, name, "contact frames"));
  for (const auto& phase : options.phases) {
    plan.phase_start.push_back(static_cast<int>(plan.wave_index.size()));
    for (const auto& w : phase.joints)
      plan.wave_index.push_back(velocityIndexOf(nominal, w.joint, "phases joints"));
  }
  plan.phase_start.push_back(static_cast<int>(plan.wave_index.size()));
  for (const auto& w : options.continuous)
    plan.wave_index.push_back(velocityIndexOf(nominal, w.joint, "continuous"));
  return plan;
}

// The standing posture; the soles stay where it puts them, flat on the floor z = 0. Stepping:
// which way (world y) each sole lies from the middle.
void standingPosture(const model::RobotModel& nominal, const HumanoidMotionOptions& options,
                     pinocchio::Data& data, HumanoidPlan& plan) {
  const pinocchio::Model& model = nominal.pinocchio();
  plan.posture = pinocchio::neutral(model);
  for (const auto& [joint, angle] : options.posture) {
    // 1-DoF joints: idx_q = idx_v + 1
    plan.posture[velocityIndexOf(nominal, joint, "posture") + 1] = angle;
  }
  pinocchio::forwardKinematics(model, data, plan.posture);
  pinocchio::updateFramePlacements(model, data);
  double mean_z = 0;
  for (auto id : plan.soles)
    mean_z += data.oMf[id].translation().z() / static_cast<double>(plan.soles.size());
  plan.height = -mean_z;
  for (auto id : plan.soles) {
    const pinocchio::SE3& M = data.oMf[id];
    const Eigen::Vector3d x = M.rotation().col(0);
    const double yaw = std::atan2(x.y(), x.x());
    Eigen::Vector3d p = M.translation();
    p.z() = 0;
    plan.soles_world.emplace_back(
        Eigen::AngleAxisd(yaw, Eigen::Vector3d::UnitZ()).toRotationMatrix(), p);
  }
  bool stepping = false;
  for (const auto& phase : options.phases) {
    stepping = stepping || phase.step_height > 0;
    plan.landing_at_speed =
        plan.landing_at_speed || (phase.step_height > 0 && phase.step_landing_speed > 0);
  }
  if (stepping) {
    const std::vector<pinocchio::SE3>& soles_world = plan.soles_world;
    const double mid_y =
        0.5 * (soles_world[0].translation().y() + soles_world[1].translation().y());
    for (int f = 0; f < 2; ++f) plan.side[f] = soles_world[f].translation().y() >= mid_y ? 1 : -1;
    require(plan.side[0] != plan.side[1], "soles", "two soles side by side (different y)",
            "the same y " + num(mid_y) + " m");
  }
}

// Configurations on the grid t = -dt .. n dt (columns), for central differences, by inverse
// kinematics of the soles; lift_sum: how high the soles are, per column.
Eigen::MatrixXd humanoidConfigurations(const pinocchio::Model& model,
                                       const HumanoidMotionOptions& options,
                                       const HumanoidPlan& plan, pinocchio::Data& data, int n,
                                       double dt, std::vector<double>& lift_sum) {
  const int nu = model.nv - 6;
  Eigen::MatrixXd qs(model.nq, n + 2);
  lift_sum.assign(n + 2, 0.0);
  Eigen::VectorXd q = plan.posture;
  std::vector<pinocchio::SE3> targets(plan.soles.size());
  for (int i = 0; i < n + 2; ++i) {
    const double t = (i - 1) * dt;
    const HumanoidOffset o =
        humanoidOffset(options, plan.phase_start, plan.wave_index, plan.side, t);
    lift_sum[i] = o.lift[0] + o.lift[1];
    // joints other than the legs: posture plus waves (IK overwrites only the sole chains)
    q.tail(nu) = plan.posture.tail(nu);
    for (const auto& [index, angle] : o.joints) q[index + 1] += angle;  // nq = nv + 1
    const pinocchio::SE3 base(Eigen::Matrix3d::Identity(),
                              Eigen::Vector3d(0, o.dy, plan.height + o.dz));
    for (std::size_t f = 0; f < plan.soles.size(); ++f) {
      pinocchio::SE3 sole = plan.soles_world[f];
      if (f < 2) sole.translation().z() += o.lift[f];  // a stepping sole rises flat
      targets[f] = base.actInv(sole);
    }
    if (!solveSoles(model, data, plan.soles, targets, q)) {
      throw SolveError("humanoid reference: inverse kinematics did not converge at t = " + num(t) +
                       " s (pelvis shift " + num(o.dy) + " m, height " + num(plan.height + o.dz) +
                       " m)");
    }
    Eigen::VectorXd full = q;
    full.head<3>() = base.translation();
    full.segment<4>(3) << 0, 0, 0, 1;
    qs.col(i) = full;
  }
  return qs;
}

// Rates by central differences on the grid.
void humanoidRates(const pinocchio::Model& model, const Eigen::MatrixXd& qs,
                   const std::vector<double>& lift_sum, bool landing_at_speed, int n, double dt,
                   Reference& ref) {
  ref.v.resize(model.nv, n);
  ref.a.resize(model.nv, n);
  Eigen::VectorXd back(model.nv), forward(model.nv);
  for (int k = 0; k < n; ++k) {
    pinocchio::difference(model, qs.col(k), qs.col(k + 1), back);
    pinocchio::difference(model, qs.col(k + 1), qs.col(k + 2), forward);
    ref.v.col(k) = (back + forward) / (2 * dt);
    ref.a.col(k) = (forward - back) / (dt * dt);
  }
  // a sole landing at speed (step_landing_speed) makes the reference rate step to zero; the
  // central differences turn that into an acceleration impulse, which the feed-forward would use
  // to stop the foot itself: the samples whose stencil spans a landing keep the acceleration of
  // the sample before, so the floor stops the foot (an impact, as when a real foot lands)
  auto lands = [&](int i) { return lift_sum[i] > 0 && lift_sum[i + 1] == 0; };  // qs columns
  for (int k = 1; k < n && landing_at_speed; ++k) {
    if (lands(k) || lands(k + 1)) ref.a.col(k) = ref.a.col(k - 1);
  }
}

// Feed-forward: base rows balanced by point forces closest to an equal share of the weight;
// while stepping, a sole's points carry its load, nothing in the air (as the quadruped trot).
void humanoidFeedForward(const pinocchio::Model& model, const HumanoidMotionOptions& options,
                         const HumanoidPlan& plan,
                         const std::vector<Eigen::Vector3d>& contact_offsets, pinocchio::Data& data,
                         int n, double dt, Reference& ref) {
  const int nu = model.nv - 6;
  const std::vector<pinocchio::FrameIndex>& soles = plan.soles;
  const std::vector<pinocchio::FrameIndex>& contacts = plan.contacts;
  ref.tau.resize(nu, n);
  const int nc = static_cast<int>(contacts.size());
  const double weight = pinocchio::computeTotalMass(model) * 9.81;
  std::vector<int> sole_of(nc, -1);  // the sole (0, 1) on the same body as each point
  for (int c = 0; c < nc; ++c) {
    for (std::size_t f = 0; f < soles.size() && f < 2; ++f) {
      if (model.frames[contacts[c]].parentJoint == model.frames[soles[f]].parentJoint) {
        sole_of[c] = static_cast<int>(f);
      }
    }
  }
  Eigen::VectorXd w(nc);
  Eigen::MatrixXd Jc(3 * nc, model.nv);
  Eigen::Matrix<double, 6, Eigen::Dynamic> frame_jacobian(6, model.nv);
  for (int k = 0; k < n; ++k) {
    const Eigen::VectorXd qk = ref.q.col(k);
    const Eigen::VectorXd tau_full = pinocchio::rnea(model, data, qk, ref.v.col(k), ref.a.col(k));
    pinocchio::computeJointJacobians(model, data, qk);
    pinocchio::updateFramePlacements(model, data);
    for (int c = 0; c < nc; ++c) {
      frame_jacobian.setZero();
      pinocchio::getFrameJacobian(model, data, contacts[c], pinocchio::LOCAL_WORLD_ALIGNED,
                                  frame_jacobian);
      // point velocity = frame origin velocity + omega x r, r = R offset
      const Eigen::Vector3d r = data.oMf[contacts[c]].rotation() * contact_offsets[c];
      Eigen::Matrix3d skew;
      skew << 0, -r.z(), r.y(), r.z(), 0, -r.x(), -r.y(), r.x(), 0;
      Jc.middleRows(3 * c, 3) = frame_jacobian.topRows<3>() - skew * frame_jacobian.bottomRows<3>();
    }
    const HumanoidOffset o =
        humanoidOffset(options, plan.phase_start, plan.wave_index, plan.side, k * dt);
    for (int c = 0; c < nc; ++c) {
      w[c] = sole_of[c] < 0 ? 1.0 : o.load[sole_of[c]] * groundWeight(o.lift[sole_of[c]]);
    }
    // no ridge: the four points of one sole hold any wrench
    const Eigen::MatrixXd A = Jc.leftCols<6>().transpose();
    const Eigen::VectorXd force = balancingForces(A, tau_full.head<6>(), w, weight, 0);
    ref.tau.col(k) = tau_full.tail(nu) - Jc.rightCols(nu).transpose() * force;
  }
}

}  // namespace

Reference humanoidReference(const model::RobotModel& nominal, const HumanoidMotionOptions& options,
                            const std::vector<std::string>& contact_frames,
                            const std::vector<Eigen::Vector3d>& contact_offsets, double duration,
                            double dt) {
  require(nominal.hasFreeFlyer(), "humanoid motion robot", "a free-flyer base",
          nominal.displayName() + " with a fixed base");
  const pinocchio::Model& model = nominal.pinocchio();
  require(model.nq == model.nv + 1, "humanoid motion joints", "revolute or prismatic joints only",
          "nq " + std::to_string(model.nq) + ", nv " + std::to_string(model.nv));
  options.validate();
  require(!contact_frames.empty() && contact_frames.size() == contact_offsets.size(),
          "contact points", "as many offsets as frames, at least one",
          std::to_string(contact_frames.size()) + " frames, " +
              std::to_string(contact_offsets.size()) + " offsets");
  const int n = sampleCount(duration, dt);
  HumanoidPlan plan = humanoidPlan(nominal, options, contact_frames);
  // one Data through the steps: the posture's kinematics, the inverse kinematics, the feed-forward
  pinocchio::Data data(model);
  standingPosture(nominal, options, data, plan);
  std::vector<double> lift_sum;
  const Eigen::MatrixXd qs = humanoidConfigurations(model, options, plan, data, n, dt, lift_sum);
  Reference ref;
  ref.dt = dt;
  ref.q = qs.middleCols(1, n);
  humanoidRates(model, qs, lift_sum, plan.landing_at_speed, n, dt, ref);
  humanoidFeedForward(model, options, plan, contact_offsets, data, n, dt, ref);
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
  for (const auto& [joint, s] : series) {
    try {
      s.validate();
    } catch (const InputError& e) {
      throw InputError("series." + joint + ": " + e.what());
    }
  }
}

Reference fourierReference(const model::RobotModel& nominal,
                           const FourierExcitationOptions& options, double duration, double dt) {
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

  // explicit coefficients: every listed joint must exist
  const bool explicit_series = !options.series.empty();
  for (const auto& [joint, s] : options.series) {
    require(model.existJointName(joint), "series", "joints of " + nominal.displayName(),
            "\"" + joint + "\"");
  }
  // angle, rate, acceleration of the listed joint (joints in order, one per velocity)
  auto explicitState = [&](const JointInfo& info, double t) -> excite::JointState {
    const auto it = options.series.find(model.names[1 + (&info - joints.data())]);
    if (it == options.series.end()) return {info.center, 0, 0};
    return excite::evaluate(it->second, t, options.ramp);
  };

  // largest scale that respects every bound over the ramp and one full period
  const double horizon = options.ramp + 1.0 / options.base_frequency;
  for (auto& info : joints) {
    if (explicit_series) break;
    double max_x = 0, max_v = 0, max_a = 0;
    for (double t = 0; t <= horizon; t += 1e-3) {
      double x, xd, xdd;
      evaluate(info, t, x, xd, xdd);
      max_x = std::max(max_x, std::abs(x));
      max_v = std::max(max_v, std::abs(xd));
      max_a = std::max(max_a, std::abs(xdd));
    }
    info.scale =
        std::min({info.amplitude / max_x, info.vmax / max_v, options.max_acceleration / max_a});
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
      double angle, rate, acceleration;
      if (explicit_series) {
        const excite::JointState e = explicitState(info, t);
        angle = e.q;
        rate = e.qd;
        acceleration = e.qdd;
      } else {
        evaluate(info, t, x, xd, xdd);
        angle = info.center + info.scale * x;
        rate = info.scale * xd;
        acceleration = info.scale * xdd;
      }
      if (info.nq == 2) {
        q[info.idx_q] = std::cos(angle);
        q[info.idx_q + 1] = std::sin(angle);
      } else {
        q[info.idx_q] = angle;
      }
      ref.v(info.idx_v, k) = rate;
      ref.a(info.idx_v, k) = acceleration;
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
  require(q.size() == model.nq, "q", std::to_string(model.nq) + " entries",
          std::to_string(q.size()));
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
  data.M.triangularView<Eigen::StrictlyLower>() =
      data.M.transpose().triangularView<Eigen::StrictlyLower>();
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
          "reference rows",
          "nq, nv, nu = " + std::to_string(model_.nq) + ", " + std::to_string(model_.nv) + ", " +
              std::to_string(nu),
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
