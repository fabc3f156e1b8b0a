#include "heft/sim/scenario.hpp"

#include <mujoco/mujoco.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <sstream>
#include <tuple>

#include "heft/common/error.hpp"
#include "heft/common/format.hpp"
#include "heft/io/joint_binding.hpp"
#include "heft/sim/mujoco_errors.hpp"

namespace heft::sim {

namespace {

std::string num(double x, int precision = 6) { return formatNumber(x, precision); }

// Solid box of mass m and edge lengths a (x), b (y), c (z), centered at `com` (body frame).
model::Payload box(double m, const Vector3& com, double a, double b, double c) {
  model::Payload p;
  p.mass = m;
  p.com = com;
  p.inertia = Matrix3::Zero();
  p.inertia(0, 0) = m * (b * b + c * c) / 12;
  p.inertia(1, 1) = m * (a * a + c * c) / 12;
  p.inertia(2, 2) = m * (a * a + b * b) / 12;
  return p;
}

// Go2: standing posture with the feet under the thigh joints (thigh 0.8, calf -1.6 rad),
// stiff joint PD (the feed-forward does not know the payload), torso motions with feet planted.
Scenario go2Base(const std::string& name, const std::string& description) {
  Scenario s;
  s.name = name;
  s.description = description;
  s.robot = "go2";
  s.motion = Motion::Stance;
  s.stance.posture.resize(12);
  for (int leg = 0; leg < 4; ++leg) s.stance.posture.segment<3>(3 * leg) << 0, 0.8, -1.6;
  s.kp = 60;
  s.kd = 1.5;
  s.duration = 15;
  s.bounds.min_base_height = 0.15;
  s.bounds.max_tilt = 0.6;
  return s;
}

// Panda: Fourier excitation of all nine joints (fingers included) within limits.
Scenario pandaBase(const std::string& name, const std::string& description) {
  Scenario s;
  s.name = name;
  s.description = description;
  s.robot = "panda";
  s.motion = Motion::Fourier;
  s.fourier.harmonics = 5;
  s.fourier.base_frequency = 0.1;
  s.fourier.coefficient_seed = 7;
  s.fourier.ramp = 2.0;
  s.bandwidth = 40;
  s.damping_ratio = 1;
  s.duration = 20;
  s.max_tracking_error = 0.2;
  return s;
}

constexpr double kTalosLegKp = 3000, kTalosLegKd = 30;

// TALOS (talos_reduced): half-sitting posture (talos.srdf), four corner spheres per sole, double
// support. Gains from the closed-loop bandwidth at the start pose (effective inertias).
Scenario talosBase(const std::string& name, const std::string& description) {
  Scenario s;
  s.name = name;
  s.description = description;
  s.robot = "talos";
  s.motion = Motion::Humanoid;
  s.model.contact_radius = 0.01;
  s.model.imu_frame = "imu_link";
  for (const std::string side : {"left", "right"}) {
    const std::string sole = side + "_sole_link";
    for (const auto& [corner, x, y] :
         {std::tuple<const char*, double, double>{"front_left", 0.1, 0.065},
          {"front_right", 0.1, -0.065},
          {"back_left", -0.1, 0.065},
          {"back_right", -0.1, -0.065}}) {
      // sphere bottoms on the sole plane
      s.model.contact_points.push_back({side + "_sole_" + corner, sole, Vector3(x, y, 0.01)});
    }
  }
  auto& posture = s.humanoid.posture;
  for (const std::string side : {"left", "right"}) {
    const double sign = side == "left" ? 1 : -1;
    posture["leg_" + side + "_3_joint"] = -0.411354;
    posture["leg_" + side + "_4_joint"] = 0.859395;
    posture["leg_" + side + "_5_joint"] = -0.448041;
    posture["leg_" + side + "_6_joint"] = -0.001708;
    posture["arm_" + side + "_1_joint"] = sign * 0.25847;
    posture["arm_" + side + "_2_joint"] = sign * 0.173046;
    posture["arm_" + side + "_4_joint"] = -0.525366;
    posture["arm_" + side + "_7_joint"] = 0.1;
  }
  posture["torso_2_joint"] = 0.006761;
  HumanoidPhase squat;
  squat.squat_depth = 0.06;
  squat.squat_frequency = 0.5;
  HumanoidPhase shift;
  shift.shift_amplitude = 0.05;
  shift.shift_frequency = 0.25;
  HumanoidPhase twist;
  twist.joints = {{"torso_1_joint", 0.3, 0.5, 0}};
  HumanoidPhase arms;
  arms.joints = {{"arm_left_1_joint", 0.2, 0.5, 0},    {"arm_right_1_joint", 0.2, 0.5, 0},
                 {"arm_left_2_joint", 0.15, 0.5, 0},   {"arm_right_2_joint", -0.15, 0.5, 0},
                 {"arm_left_4_joint", 0.4, 0.5, M_PI}, {"arm_right_4_joint", 0.4, 0.5, 0}};
  s.humanoid.phases = {squat, shift, twist, arms};
  s.humanoid.settle = 1.0;
  s.humanoid.phase_duration = 4.0;
  s.humanoid.ramp = 0.5;
  s.bandwidth = 40;
  s.damping_ratio = 1;
  // legs: the effective inertia of a free floating base (bandwidthGains) is the foot's, far below
  // what a standing leg carries; stiff fixed gains instead
  for (const std::string side : {"left", "right"}) {
    for (int j = 1; j <= 6; ++j) {
      s.joint_gains["leg_" + side + "_" + std::to_string(j) + "_joint"] = {kTalosLegKp,
                                                                           kTalosLegKd};
    }
  }
  s.duration = 17;
  s.bounds.min_base_height = 0.75;
  s.bounds.max_tilt = 0.4;
  return s;
}

// The quadrupeds: go2 (and go1) standing, carrying payloads, trotting.
void addGo2Scenarios(std::vector<Scenario>& list) {
  {
    Scenario s =
        go2Base("go2-stand", "go2 nominal model standing still (static contact truth), 10 s");
    s.stance.roll_amplitude = s.stance.pitch_amplitude = s.stance.yaw_amplitude = 0;
    s.stance.squat_depth = 0;
    s.duration = 10;
    list.push_back(s);
  }
  list.push_back(go2Base(
      "go2-nominal", "go2 nominal model: stand, torso roll/pitch/yaw, squats, 15 s (baseline)"));
  {
    Scenario s = go2Base("go2-payload-3kg",
                         "go2 +3 kg box on the torso (PRIME Table I): stand, torso rotations, "
                         "squats, 15 s");
    s.model.payloads.push_back({"payload", "base", box(3.0, Vector3(0, 0, 0.09), 0.2, 0.1, 0.06)});
    list.push_back(s);
  }
  {
    Scenario s = go2Base("go2-com-shift",
                         "go2 torso COM shifted -0.1 m in z (PRIME Table I): stand, torso "
                         "rotations, squats, 15 s");
    s.model.link_edits.push_back({"base", 1.0, Vector3(0, 0, -0.1)});
    list.push_back(s);
  }
  {
    Scenario s = go2Base("go2-rear-4.7kg",
                         "go2 4.7 kg low at the rear of the torso (SPI-Active): stand, torso "
                         "rotations, squats, 15 s");
    s.model.payloads.push_back(
        {"payload", "base", box(4.7, Vector3(-0.15, 0, -0.09), 0.15, 0.12, 0.05)});
    list.push_back(s);
  }
  {
    Scenario s = go2Base("go2-actuator",
                         "go2 nominal model with per-joint actuator gains and tanh saturation "
                         "(SPI-Active eq. 3): stand, torso rotations, squats, 15 s");
    // tau = gain kappa tanh(tau_cmd / kappa), within SPI-Active's ranges (kappa 10-40 N m, gain
    // 0.5-1.5); kappa low enough that the stance torques (calf ~7 N m) bend visibly
    for (const std::string leg : {"FL", "FR", "RL", "RR"}) {
      s.model.actuators[leg + "_hip_joint"] = ActuatorModel{1.0, 20.0};
      s.model.actuators[leg + "_thigh_joint"] = ActuatorModel{0.97, 20.0};
      s.model.actuators[leg + "_calf_joint"] = ActuatorModel{0.95, 15.0};
    }
    list.push_back(s);
  }
  {
    Scenario s = go2Base("go2-belly-4.6kg",
                         "go2 4.6 kg under the belly: stand, torso rotations, squats, pronking "
                         "hops, 16 s");
    s.model.payloads.push_back(
        {"payload", "base", box(4.6, Vector3(0.0, 0, -0.09), 0.2, 0.12, 0.05)});
    s.stance.hop_flight = 0.1;
    s.stance.hop_push = 0.25;
    s.stance.hop_clearance = 0.03;
    s.duration = 16;
    list.push_back(s);
  }
  {
    Scenario s = go2Base("go2-trot", "go2 nominal model trotting in place, 15 s");
    s.stance.roll_amplitude = s.stance.pitch_amplitude = s.stance.yaw_amplitude = 0;
    s.stance.squat_depth = 0;
    s.stance.trot_height = 0.06;
    s.stance.phase_duration = 14;
    list.push_back(s);
  }
  {
    Scenario s =
        go2Base("go1-7.2kg", "go1 +7.2 kg on the torso trotting in place (walking stand-in), 15 s");
    s.robot = "go1";
    s.model.contact_radius = 0.02;
    s.model.payloads.push_back(
        {"payload", "base", box(7.2, Vector3(0, 0, 0.09), 0.25, 0.12, 0.08)});
    s.stance.roll_amplitude = s.stance.pitch_amplitude = s.stance.yaw_amplitude = 0;
    s.stance.squat_depth = 0;
    s.stance.trot_height = 0.05;
    s.stance.phase_duration = 14;
    list.push_back(s);
  }
}

// The panda arm: Fourier excitation with and without joint friction.
void addPandaScenarios(std::vector<Scenario>& list) {
  {
    Scenario s = pandaBase("panda-friction",
                           "panda Fourier excitation with joint friction (damping, frictionloss, "
                           "armature), 20 s");
    for (int i = 1; i <= 7; ++i) {
      const bool large = i <= 4;
      s.model.joint_friction["panda_joint" + std::to_string(i)] =
          large ? JointFriction{0.3, 0.5, 0.05} : JointFriction{0.1, 0.2, 0.02};
    }
    list.push_back(s);
  }
  list.push_back(pandaBase("panda", "panda Fourier excitation without joint friction, 20 s"));
}

// The TALOS humanoid: standing, payloads, mass variations, stepping.
void addTalosScenarios(std::vector<Scenario>& list) {
  {
    Scenario s = talosBase("talos-stand",
                           "TALOS nominal model standing still in double support "
                           "(static contact truth), 10 s");
    s.humanoid.phases.clear();
    s.duration = 10;
    list.push_back(s);
  }
  {
    Scenario s = talosBase("talos-torso-2.9kg",
                           "TALOS +2.9 kg on the torso (PRIME Table II): double-support squats, "
                           "weight shifts, torso twists, arm swings, 17 s");
    s.model.payloads.push_back(
        {"payload", "torso_2_link", box(2.9, Vector3(-0.12, 0, 0.1), 0.1, 0.25, 0.2)});
    list.push_back(s);
  }
  {
    Scenario s =
        talosBase("talos-forearm-5.4kg",
                  "TALOS +5.4 kg on the left forearm during elbow curls (0.7 rad, 0.333 Hz; "
                  "online EKF paper): squats, weight shifts, torso twists, 18 s");
    // a dumbbell strapped across the middle of the forearm
    s.model.payloads.push_back(
        {"payload", "arm_left_4_link", box(5.4, Vector3(-0.01, 0, -0.15), 0.08, 0.25, 0.08)});
    s.humanoid.posture["arm_left_4_joint"] = -1.0;
    s.humanoid.phases.pop_back();  // no arm swings: the left arm curls throughout
    s.humanoid.continuous = {{"arm_left_4_joint", 0.7, 1.0 / 3.0, 0}};
    s.duration = 18;
    list.push_back(s);
    // the same curls with the dumbbell picked up at t = 6 s: a welded payload of 0 kg before
    // (MuJoCo composes it into the forearm, which keeps its own mass), 5.4 kg after
    Scenario step = s;
    step.name = "talos-forearm-step";
    step.description =
        "TALOS picks up 5.4 kg on the left forearm at t = 6 s during elbow curls (0.7 rad, "
        "0.333 Hz; online EKF paper): squats, weight shifts, torso twists, 14 s";
    step.model.mass_variations.push_back(
        {"payload", MassVariation::Waveform::Step, 0.0, 5.4, 0.0, 6.0});
    step.duration = 14;
    list.push_back(step);
  }
  {
    Scenario s = talosBase("talos-torso-mass-wave",
                           "TALOS torso mass a 0.2 Hz square wave 30 kg +/- 5 kg (online EKF paper "
                           "Table I): double-support weight shifts and squats, 15 s");
    s.model.mass_variations.push_back(
        {"torso_2_link", MassVariation::Waveform::Square, 30.0, 5.0, 0.2});
    s.humanoid.phases = {s.humanoid.phases[1], s.humanoid.phases[0]};  // weight shifts, squats
    s.duration = 15;
    list.push_back(s);
    // the paper's motion: stepping in place, ten steps of 1.25 s. The weight transfer is as fast
    // as the soles allow: pelvis 0.058 m over the stance sole puts the COM 0.05 m out (0.03 m
    // inside the sole's inner edge), and in 0.9 s the dynamic ZMP of the quintic stays 0.04 m
    // inside the outer edge (0.8 s with 0.07 m put it past the edge: the robot rolled out)
    Scenario step = s;
    step.name = "talos-step-mass-wave";
    step.description =
        "TALOS torso mass a 0.2 Hz square wave 30 kg +/- 5 kg (online EKF paper Table I): "
        "stepping in place, 10 steps lifting the feet 4 cm, 15 s";
    HumanoidPhase stepping;
    stepping.step_height = 0.04;
    stepping.step_shift = 0.058;
    stepping.step_transfer = 0.9;
    stepping.step_swing = 0.35;
    stepping.step_landing_speed = 0.3;
    step.humanoid.phases = {stepping};
    step.humanoid.phase_duration = 14;
    step.humanoid.ramp = 0.25;
    // a foot in the air gives the ankle roll its own inertia (0.0075 kg m^2): with kd = 30 the
    // explicit 1 kHz PD (kd dt / m = 4 > 2) diverged as soon as a foot lifted
    for (const std::string side : {"left", "right"}) {
      for (int j : {5, 6}) {
        step.joint_gains["leg_" + side + "_" + std::to_string(j) + "_joint"] = {kTalosLegKp, 10.0};
      }
    }
    list.push_back(step);
  }
}

// The double pendulum, with and without an unknown payload.
void addPendulumScenarios(std::vector<Scenario>& list) {
  {
    Scenario s;
    s.name = "double-pendulum";
    s.description = "double pendulum Fourier excitation about the hanging position, 15 s";
    s.robot = "double_pendulum";
    s.motion = Motion::Fourier;
    s.fourier.harmonics = 4;
    s.fourier.base_frequency = 0.2;
    s.fourier.coefficient_seed = 3;
    s.fourier.ramp = 1.0;
    s.fourier.center = Eigen::Vector2d(M_PI, 0);
    s.fourier.unlimited_amplitude = 1.2;
    s.fourier.max_acceleration = 20;
    s.bandwidth = 40;
    s.damping_ratio = 1;
    s.duration = 15;
    s.max_tracking_error = 0.2;
    list.push_back(s);
    // The same motion with an unknown 0.15 kg weight near the tip of link 2 (+45 % of its mass):
    // the fixed-base case of heft::estimation's tests.
    Scenario payload = s;
    payload.name = "double-pendulum-payload";
    payload.description =
        "double pendulum with a 0.15 kg weight on link 2, Fourier excitation, 15 s";
    payload.model.payloads.push_back(
        {"payload", "joint2", box(0.15, Vector3(0.0, 0, 0.18), 0.03, 0.03, 0.03)});
    // The controller knows only the nominal model, so the unknown weight costs tracking: over the
    // 15 s the error peaks once at 0.203 rad (t = 3.42 s), which the nominal pendulum's 0.2 rad
    // "lost" threshold called a fall. The motion and the log are the same with either threshold.
    payload.max_tracking_error = 0.25;
    list.push_back(payload);
    // The same motion with joint friction and rotor inertia: Coulomb about 5 % of the gravity
    // torque at the shoulder, armature about half of link 2's inertia about its joint (the
    // pendulum of the energy-observation studies).
    Scenario friction = s;
    friction.name = "double-pendulum-friction";
    friction.description =
        "double pendulum with joint friction (damping, frictionloss, armature), Fourier "
        "excitation, 15 s";
    friction.model.joint_friction["joint1"] = JointFriction{0.02, 0.05, 0.002};
    friction.model.joint_friction["joint2"] = JointFriction{0.01, 0.03, 0.001};
    list.push_back(friction);
  }
}

// The four-bar knee leg (data/robots/fourbar_leg.xml): hip and knee motor driven, the knee and
// the coupler's hinge passive (no motor, no encoder), motor-side friction the estimator should
// find behind the linkage.
void addFourBarScenarios(std::vector<Scenario>& list) {
  Scenario s;
  s.name = "fourbar-leg-friction";
  s.description =
      "four-bar knee leg: hip and knee motor with friction and armature, knee and coupler "
      "passive (unlogged), Fourier excitation, 20 s";
  s.robot = "fourbar_leg";
  s.motion = Motion::Fourier;
  s.fourier.harmonics = 4;
  s.fourier.base_frequency = 0.2;
  s.fourier.coefficient_seed = 5;
  s.fourier.ramp = 1.0;
  s.fourier.unlimited_amplitude = 1.0;
  s.fourier.max_acceleration = 20;
  // fixed gains: the nominal tree does not see the shank's load on the motor (the controller's
  // feed-forward ignores the loop), the PD takes it; knee motor ~0.01 kg m^2 reflected, hip ~0.15
  s.kp = 60;
  s.kd = 6;
  s.joint_gains["knee_motor"] = {20.0, 0.9};
  s.model.passive_joints = {"knee", "coupler_hinge"};
  s.model.joint_friction["hip"] = JointFriction{0.05, 0.1, 0.003};
  s.model.joint_friction["knee_motor"] = JointFriction{0.03, 0.08, 0.002};
  s.duration = 20;
  s.max_tracking_error = 0.3;
  list.push_back(s);
}

std::vector<Scenario> makeScenarios() {
  std::vector<Scenario> list;
  addGo2Scenarios(list);
  addPandaScenarios(list);
  addTalosScenarios(list);
  addPendulumScenarios(list);
  addFourBarScenarios(list);
  return list;
}

// The motion's reference and its feed-forward, all on the nominal model.
Reference scenarioReference(const model::RobotModel& robot, const SimModel& sim,
                            const Scenario& scenario, double duration, double dt) {
  if (scenario.motion == Motion::Stance) {
    return stanceReference(robot, sim.contactNames(), scenario.model.contact_radius,
                           scenario.stance, duration, dt);
  } else if (scenario.motion == Motion::Humanoid) {
    std::vector<std::string> frames;
    std::vector<Eigen::Vector3d> offsets;
    for (const auto& p : sim.contactPoints()) {
      frames.push_back(p.frame);
      offsets.push_back(p.offset);
    }
    return humanoidReference(robot, scenario.humanoid, frames, offsets, duration, dt);
  } else {
    return fourierReference(robot, scenario.fourier, duration, dt);
  }
}

// The PD gains: the scenario's uniform ones or from a bandwidth at the start configuration, and
// the scenario's per-joint overrides.
PdGains scenarioGains(const model::RobotModel& robot, const SimModel& sim, const Scenario& scenario,
                      const Eigen::VectorXd& q_start) {
  PdGains gains = scenario.kp > 0
                      ? uniformGains(sim.nu(), scenario.kp, scenario.kd)
                      : bandwidthGains(robot, q_start, scenario.bandwidth, scenario.damping_ratio);
  for (const auto& [joint, kp_kd] : scenario.joint_gains) {
    const auto& names = sim.jointNames();
    const auto it = std::find(names.begin(), names.end(), joint);
    require(it != names.end(), "joint_gains", "a joint of " + robot.displayName(),
            "\"" + joint + "\"");
    gains.kp[it - names.begin()] = kp_kd.first;
    gains.kd[it - names.begin()] = kp_kd.second;
  }
  return gains;
}

// The base's truth at sample k (pose, twist, acceleration, IMU), its extremes in the summary and
// the bounds check: true (with the summary's message) when the base left them.
bool recordBase(const SimModel& sim, const mjData* d, int k, const Eigen::VectorXd& q,
                const Eigen::VectorXd& v, const Eigen::VectorXd& a, const FallBounds& bounds,
                TruthRecord& truth, SimulationSummary& summary) {
  const double dt = truth.dt;
  truth.base_pose.row(k) = q.head<7>().transpose();
  truth.base_twist.row(k) = v.head<6>().transpose();
  truth.base_acceleration.row(k) = a.head<6>().transpose();
  const ImuSample imu = sim.getImu(d);
  truth.gyro.row(k) = imu.gyro.transpose();
  truth.accel.row(k) = imu.accel.transpose();
  truth.imu_orientation.row(k) = imu.orientation.coeffs().transpose();
  const Eigen::Quaterniond base(q[6], q[3], q[4], q[5]);
  const double tilt = std::acos(std::clamp(base.normalized().toRotationMatrix()(2, 2), -1.0, 1.0));
  summary.min_base_height = std::min(summary.min_base_height, q[2]);
  summary.max_tilt = std::max(summary.max_tilt, tilt);
  if (q[2] < bounds.min_base_height || tilt > bounds.max_tilt) {
    summary.message = "base left the bounds at t = " + num(k * dt) + " s (height " + num(q[2], 4) +
                      " m, tilt " + num(tilt, 3) + " rad)";
    return true;
  }
  return false;
}

double seconds(std::chrono::steady_clock::time_point since) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - since).count();
}

}  // namespace

const std::vector<Scenario>& scenarios() {
  static const std::vector<Scenario> list = makeScenarios();
  return list;
}

const Scenario& findScenario(const std::string& name) {
  std::string names;
  for (const auto& s : scenarios()) {
    if (s.name == name) return s;
    names += (names.empty() ? "" : ", ") + s.name;
  }
  throw InputError("scenario: expected one of " + names + ", got \"" + name + "\"");
}

void SimulationOptions::validate() const {
  require(std::isfinite(duration) && duration >= 0 && duration <= 3600, "duration",
          "0 (the scenario's) or a value in (0, 3600] s", num(duration));
  if (profile) {
    profile->validate();
  } else {
    NoiseProfile::fromName(noise);
  }
}

std::string toString(SimulationSummary::Status status) {
  switch (status) {
    case SimulationSummary::Status::NotRun:
      return "not run";
    case SimulationSummary::Status::Completed:
      return "completed";
    case SimulationSummary::Status::Fell:
      return "fell";
    case SimulationSummary::Status::Warning:
      return "MuJoCo warning";
  }
  return "?";
}

std::string SimulationSummary::report() const {
  std::ostringstream s;
  s << "scenario  " << scenario << ": " << toString(status)
    << (message.empty() ? "" : " (" + message + ")") << "\n"
    << "time      " << num(simulated_time) << " of " << num(duration) << " s simulated in " << steps
    << " steps\n"
    << "mass      " << num(total_mass) << " kg simulated, " << num(nominal_mass) << " kg nominal\n"
    << "tracking  max joint error " << num(max_tracking_error, 3) << " rad\n";
  if (min_base_height > 0 || max_tilt > 0) {
    s << "base      min height " << num(min_base_height, 4) << " m, max tilt " << num(max_tilt, 3)
      << " rad\n";
  }
  s << "warnings  " << mujoco_warnings << " from MuJoCo\n"
    << "wall      reference " << num(reference_seconds, 3) << " s, physics "
    << num(physics_seconds, 3) << " s, sensors " << num(sensor_seconds, 3) << " s\n";
  return s.str();
}

namespace {

// A closed-loop robot starts on its loops: the passive joints (free) close them for the
// reference's first configuration of the others, at rest.
void startClosed(const model::RobotModel& robot, const SimModel& sim, Eigen::VectorXd& q0,
                 Eigen::VectorXd& v0) {
  const pinocchio::Model& pm = robot.pinocchio();
  std::vector<bool> fixed(pm.nv, true);
  const int offset = sim.actuatedOffset();
  for (int j = 0; j < sim.nu(); ++j)
    if (sim.isPassive(j)) {
      fixed[offset + j] = false;
      v0[offset + j] = 0;
    }
  const double gap = model::closeLoops(robot, q0, fixed);
  if (!(gap <= model::RobotModel::closureTolerance()))
    throw InputError("scenario start: the loops of " + robot.displayName() +
                     " do not close over the passive joints (anchors " + num(gap) +
                     " m apart); list every joint a loop moves freely in passive_joints");
}

}  // namespace

SimulationResult simulate(const Scenario& scenario, const SimulationOptions& options,
                          const SimulationProgress& on_progress) {
  options.validate();
  installMujocoHandlers();
  const NoiseProfile profile =
      options.profile ? *options.profile : NoiseProfile::fromName(options.noise);
  const double duration = options.duration > 0 ? options.duration : scenario.duration;
  const model::RobotModel robot = model::loadRobot(scenario.robot);
  SimModel sim(robot, scenario.model);
  const double dt = scenario.model.timestep;
  const mjModel* m = sim.mujoco();
  const bool varying = !sim.variedBodies().empty();
  if (varying) sim.applyMassVariations(0.0);

  SimulationResult result;
  SimulationSummary& summary = result.summary;
  summary.scenario = scenario.name;
  summary.duration = duration;
  summary.total_mass = m->body_subtreemass[0];
  summary.nominal_mass = robot.totalMass();

  // the reference and its feed-forward, all on the nominal model
  auto start = std::chrono::steady_clock::now();
  Reference reference = scenarioReference(robot, sim, scenario, duration, dt);
  const PdGains gains = scenarioGains(robot, sim, scenario, reference.q.col(0));
  Eigen::VectorXd q0 = reference.q.col(0), v0 = reference.v.col(0);
  if (!robot.loops().empty()) startClosed(robot, sim, q0, v0);
  PdController controller(robot, std::move(reference), gains);
  summary.reference_seconds = seconds(start);

  // the loop: step1 (kinematics, contacts at t_k), control, step2 (accelerations, forces,
  // integration to t_k+1); the truth of sample k is read between and after
  start = std::chrono::steady_clock::now();
  SimModel::DataPtr data = sim.makeData();
  mjData* d = data.get();
  sim.setState(d, q0, v0);
  const int n = controller.reference().samples();
  const int nu = sim.nu();
  const int nc = static_cast<int>(sim.contactNames().size());
  const bool free_flyer = sim.hasFreeFlyer();
  TruthRecord truth;
  truth.dt = dt;
  truth.resize(n, nu, nc, free_flyer);
  Eigen::VectorXd q(sim.nq()), v(sim.nv()), a(sim.nv()), tau(nu), tau_cmd(nu), forces(3 * nc),
      positions(nu);
  // bodies whose mass varies: their truth pi at every step
  for (int row : sim.variedTruthRows()) {
    if (std::find(truth.varying_rows.begin(), truth.varying_rows.end(), row) ==
        truth.varying_rows.end()) {
      truth.varying_rows.push_back(row);
    }
  }
  truth.varying_pi.resize(varying ? n : 0, 10 * static_cast<int>(truth.varying_rows.size()));
  std::vector<std::uint8_t> flags;
  const long warnings_before = mujocoWarningCount();
  summary.min_base_height = free_flyer ? q0[2] : 0;
  summary.status = SimulationSummary::Status::Completed;
  int recorded = 0;
  for (int k = 0; k < n; ++k) {
    if (varying) sim.applyMassVariations(k * dt);
    sim.step1(d);
    sim.getState(d, q, v);
    controller.compute(k, q, v, tau_cmd);
    sim.applyActuators(tau_cmd, tau);
    sim.setJointTorques(d, tau);
    sim.step2(d);
    sim.getAcceleration(d, q, v, a);

    truth.time[k] = k * dt;
    sim.jointPositions(q, positions);
    truth.joint_q.row(k) = positions.transpose();
    truth.joint_v.row(k) = v.tail(nu).transpose();
    truth.joint_a.row(k) = a.tail(nu).transpose();
    truth.tau.row(k) = tau.transpose();
    truth.tau_cmd.row(k) = tau_cmd.transpose();
    if (varying) {
      const Eigen::MatrixXd pi = sim.truthPi();
      for (std::size_t b = 0; b < truth.varying_rows.size(); ++b) {
        truth.varying_pi.block(k, 10 * b, 1, 10) = pi.row(truth.varying_rows[b]);
      }
    }
    if (nc > 0) {
      sim.getContactForces(d, forces, flags);
      truth.contact_forces.row(k) = forces.transpose();
      for (int c = 0; c < nc; ++c) truth.contact_flags(k, c) = flags[c];
    }
    double error = 0;  // passive joints follow the loop, not the reference
    for (int j = 0; j < nu; ++j)
      if (!sim.isPassive(j))
        error = std::max(error,
                         std::abs(controller.lastError()[controller.lastError().size() - nu + j]));
    summary.max_tracking_error = std::max(summary.max_tracking_error, error);
    bool fell = false;
    if (free_flyer) {
      fell = recordBase(sim, d, k, q, v, a, scenario.bounds, truth, summary);
    } else if (error > scenario.max_tracking_error) {
      fell = true;
      summary.message = "tracking lost at t = " + num(k * dt) + " s (joint error " + num(error, 3) +
                        " rad > " + num(scenario.max_tracking_error) + ")";
    }
    recorded = k + 1;
    const long warnings = SimModel::warningCount(d) + (mujocoWarningCount() - warnings_before);
    if (warnings > 0 || !q.allFinite() || !a.allFinite()) {
      summary.status = SimulationSummary::Status::Warning;
      summary.message = "at t = " + num(k * dt) + " s: " +
                        (warnings > 0 ? "MuJoCo warning " + lastMujocoWarning()
                                      : std::string("non-finite state"));
      break;
    }
    if (fell && summary.status == SimulationSummary::Status::Completed) {
      summary.status = SimulationSummary::Status::Fell;
      if (options.stop_on_fall) break;
    }
    if (on_progress && std::floor((k + 1) * dt) > std::floor(k * dt))
      on_progress((k + 1) * dt, duration);
  }
  summary.steps = recorded;
  summary.simulated_time = recorded * dt;
  summary.mujoco_warnings = SimModel::warningCount(d) + (mujocoWarningCount() - warnings_before);
  summary.physics_seconds = seconds(start);
  truth.truncate(recorded);

  if (options.make_log) {
    start = std::chrono::steady_clock::now();
    result.log = makeLog(sim, truth, profile, options.seed, scenario.name, options.force_torque);
    io::dropJointColumns(result.log, scenario.model.passive_joints);  // no encoder, no motor
    summary.sensor_seconds = seconds(start);
  }
  return result;
}

}  // namespace heft::sim
