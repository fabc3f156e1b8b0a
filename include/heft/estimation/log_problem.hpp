#pragma once
/// \file An estimation problem from a log: one knot per joint sample (every `stride`-th), the
/// logged torque as the dynamics input, encoders (and, on a floating base, the IMU's gyro and
/// orientation and the motion capture) as measurements, the contact set of each knot from the
/// log's contact flags or kinematic thresholds (or, contact-implicit, no schedule: every contact
/// point on the smoothed contact step), the nominal model as the prior and the initial guess
/// (docs/estimation.md, "From a log").
#include <cmath>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <Eigen/Core>

#include "heft/dynamics/contact_dynamics.hpp"
#include "heft/dynamics/forward_dynamics.hpp"
#include "heft/dynamics/smoothed_contact.hpp"
#include "heft/estimation/actuator_terms.hpp"
#include "heft/estimation/multibody_stage.hpp"
#include "heft/estimation/parameter_constraints.hpp"
#include "heft/estimation/problem.hpp"
#include "heft/inertia/inertia.hpp"
#include "heft/io/log.hpp"
#include "heft/model/contact_points.hpp"
#include "heft/model/model.hpp"
#include "heft/state/contacts.hpp"

namespace heft::estimation {

/// Where the contact set of each knot comes from (floating base).
enum class ContactSource {
  Auto,       ///< the log's contact flags when it has a contacts group, else Kinematic
  Flags,      ///< the log's contacts group (required)
  Kinematic,  ///< thresholds on the initial guess: foot height and speed (ContactDetectionOptions)
  /// No contact schedule: every contact point may touch the floor at every knot, through the
  /// smoothed contact step (PRIME; dynamics::SmoothedContactModel, LogProblemOptions::implicit).
  Implicit,
};
std::string toString(ContactSource source);
/// "auto" / "flags" / "kinematic" / "implicit"; throws InputError naming the accepted values.
ContactSource parseContactSource(const std::string& name);

/// How a running stage models the dynamics (docs/estimation.md, "Inverse dynamics").
enum class DynamicsFormulation {
  Forward,  ///< a = FD(q, v, tau + w_tau; theta) inside the step (MultibodyStageModel)
  /// a is a decision, RNEA(q, v, a; theta) - tau_eff - e = 0 an equality row of the stage
  /// (InverseDynamicsStageModel; bayesian-sysid sec. VIII): knots without contacts only.
  Inverse,
};
std::string toString(DynamicsFormulation formulation);
/// "forward" / "inverse"; throws InputError naming the accepted values.
DynamicsFormulation parseDynamicsFormulation(const std::string& name);

struct LogProblemOptions {
  std::vector<std::string> identified_bodies;  ///< body names (model::RobotModel::bodyIndex)
  /// Exponential eigenvalue by default: it separates the mass and first moment, which the data
  /// pin down, from the rotational inertia about the COM, which they often barely excite; with
  /// log-Cholesky (whose coordinates mix the two) Gauss-Newton crawled along a curved valley and
  /// stopped at the iteration cap on every go2 log (docs/estimation.md, "Parametrization").
  inertia::Parametrization parametrization = inertia::Parametrization::ExponentialEigenvalue;
  /// Forward dynamics in the step, or inverse dynamics as the stages' equality rows (same MAP
  /// problem, another solver path).
  DynamicsFormulation dynamics = DynamicsFormulation::Forward;
  int first_sample = 0;      ///< joint sample of knot 0
  int knots = 1000;          ///< N: running stages (N + 1 knots)
  int stride = 1;            ///< samples per step: dt = stride * the log's period
  double torque_std = 0.05;  ///< joint-torque noise [N m]: the generalized-force process noise
  /// Floating base: unmodelled force and moment on the base (contact-model mismatch) [N, N m].
  double base_force_std = 2.0;
  double base_moment_std = 0.5;
  /// Floating base: Baumgarte damping of the contact points' velocity [1/s] (0: none). MuJoCo's
  /// contacts are soft; rigid contacts keep any initial foot velocity forever without it.
  double contact_damping = 0;
  ContactSource contact_source = ContactSource::Auto;
  /// The smoothed contact model of ContactSource::Implicit: kappa (500), the friction coefficient
  /// and the floor's height (a foot sphere's radius when the points are the spheres' centres).
  dynamics::SmoothedContactOptions implicit;
  /// Kinematic contact detection: the robot's contact frames (model::RobotModel::contactFrames)
  /// on the initial guess (encoders, motion capture, their differences).
  state::ContactDetectionOptions contact_detection;
  /// Contact points away from a frame origin (sole corners), by name, over the log's own
  /// contacts/frames and offsets. Points on one frame that span a plane make a flat foot: a 6D
  /// contact (the sole does not move); other points must sit at their frame's origin.
  std::vector<model::ContactPoint> contact_points;
  /// Knots within transition_window [s] of a contact-set change get their generalized-force
  /// noise multiplied by transition_noise_scale (1: off): rigid contacts and impulses do not model
  /// the soft transient of a real (or MuJoCo) touchdown and lift-off.
  double transition_window = 0.01;
  double transition_noise_scale = 100;
  /// Stiction band (0: off): at knots where a friction joint's initial-guess speed is below
  /// stiction_speed [rad/s], that joint's generalized-force noise std becomes
  /// hypot(torque_std, stiction_torque_std). The Coulomb term f_c tanh(r v) fixes the friction
  /// torque of a slow joint, but a sticking joint (a real one, MuJoCo's frictionloss) holds any
  /// torque within +-f_c: identify drops such samples (min_speed), the trajectory MAP widens them.
  double stiction_speed = 0;
  double stiction_torque_std = 0.5;  ///< [N m]
  /// Reset map (impulse dynamics of the new contact set) at every knot where a contact closes.
  bool touchdown_impulses = true;
  /// Configuration process noise per step [rad, m]: what semi-implicit Euler misses over one step.
  double configuration_std = 1e-6;
  /// With `dynamics` inverse: at knots with contacts, the configuration noise moves the state
  /// only along the contacts' dynamically consistent nullspace (the Bayesian SysID paper's eq.
  /// 36; InverseDynamicsStageModel). Off: the noise may also move the feet (the slack of
  /// contact_configuration_rate_std for soft contacts).
  bool project_process_noise = false;
  /// The same at knots with a contact set, as a rate: the std per step is this times dt. Rigid
  /// contacts hold the feet still to the encoders' precision, soft ones (MuJoCo's, a real foot's)
  /// let them sink and roll by millimetres over a stance; this slack absorbs the difference
  /// (docs/estimation.md, measured on go2 and go1). A drift, not a random walk, so it grows with
  /// the step: 1e-4 per step at 1 kHz, 1e-3 at dt 0.01 (go1 at dt 0.01: mass 2.2 % -> 0.4 %).
  double contact_configuration_rate_std = 0.1;  ///< [rad/s, m/s]
  double encoder_std = 3e-5;                    ///< [rad]
  bool use_logged_velocity = false;             ///< add the log's joint velocities as measurements
  double velocity_std = 0.05;  ///< [rad/s], logged velocity and the arrival prior on v
  bool use_imu = true;         ///< floating base: gyro and orientation residuals
  /// Floating base: the IMU's specific force (with use_imu). On go1 trotting it took the mass
  /// error from 2.9 % to 0.2 % (docs/estimation.md, "The accelerometer").
  bool use_accelerometer = true;
  bool use_mocap = true;                ///< floating base: pose residuals of the tracked frame
  double gyro_std = 6e-3;               ///< [rad/s] (noise and an uncalibrated bias)
  double imu_orientation_std = 5e-3;    ///< [rad]
  double accelerometer_std = 0.1;       ///< [m/s^2] (noise and an uncalibrated bias)
  double mocap_position_std = 2e-3;     ///< [m] (noise and an uncalibrated marker offset)
  double mocap_orientation_std = 1e-2;  ///< [rad]
  /// Energy observations (MultibodySensors::energy, bayesian-sysid eq. 63): per step, the change
  /// of mechanical energy against the logged torque's work net of friction; energy_std [J] per
  /// step. Not with contacts implicit.
  bool use_energy = false;
  double energy_std = 1e-3;
  /// A robust loss on every measurement row (MultibodySensors::loss): None by default.
  RobustLoss loss = RobustLoss::None;
  double loss_scale = 0;  ///< k in units of each row's std; 0: defaultLossScale(loss)
  /// Without motion capture, the arrival prior on the base around the log's own base state (a
  /// state estimator's joints/base_pose): its position and orientation std [m, rad].
  double base_state_position_std = 0.05;
  double base_state_orientation_std = 0.05;
  /// Prior on theta around the nominal model: this std on every coordinate of theta (log-Cholesky
  /// coordinates are logarithms and lengths of the pseudo-inertia's factor).
  /// Infinity: no prior (the paper's setting for comparing parametrizations; unexcited directions
  /// then stay where they start, through the solver's nullspace step).
  double theta_prior_std = 1.0;
  /// Joint friction, armature and torque offsets estimated with the inertias (theta's tail,
  /// ActuatorTermsModel); none by default. Their priors are their own (not theta_prior_std).
  ActuatorTermsOptions actuators;
  /// Parameter constraints (bayesian-sysid eqs. 1e-1f), enforced at every iteration's arrival
  /// node (ParameterConstraints): the robot's total mass [kg] with the bodies outside S at their
  /// nominal masses (0: none), mirrored [left, right] body pairs (model::symmetryConstraint), and
  /// bounds on identified bodies' masses [kg].
  double total_mass = 0;
  std::vector<std::pair<std::string, std::string>> symmetric;
  struct MassBounds {
    std::string body;
    double lower = 0;
    double upper = HUGE_VAL;
  };
  std::vector<MassBounds> mass_bounds;
  bool hasParameterConstraints() const {
    return total_mass > 0 || !symmetric.empty() || !mass_bounds.empty();
  }
  /// Throws InputError naming the field.
  void validate() const;
};

struct LogProblem {
  std::shared_ptr<const pinocchio::Model> model;
  std::shared_ptr<const dynamics::ForwardDynamicsModel> dynamics;
  std::shared_ptr<const MultibodyState> state;
  std::shared_ptr<const MultibodySensors> sensors;
  std::shared_ptr<const Problem> problem;
  std::vector<pinocchio::JointIndex> identified;  ///< S
  /// theta's tail after the 10|S| inertial coordinates (null: no actuator terms)
  std::shared_ptr<const ActuatorTermsModel> actuators;
  Eigen::VectorXd time;      ///< N + 1 knot times [s]
  std::vector<int> samples;  ///< joint sample of each knot
  double dt = 0;
  int contact_phases = 0;          ///< number of contact-set changes along the horizon
  int touchdowns = 0;              ///< stages that start with an impulse (a contact closes)
  int transition_knots = 0;        ///< running stages with inflated noise (near a contact change)
  bool contacts_detected = false;  ///< contact sets from kinematic thresholds, not the log's flags
  /// Contact-implicit: the smoothed contact model every running stage steps with (null otherwise).
  std::shared_ptr<const dynamics::SmoothedContactModel> smoothed;
  // Initial guess: encoders (and the motion capture for the base), central-difference
  // velocities, w = 0, nominal theta_S and the actuator terms' prior mean. With inverse dynamics
  // w = (0, a, e): a the velocities' forward differences, e the torque balance's remainder (the
  // equality rows hold at the guess).
  std::vector<Eigen::VectorXd> xs, ws;
  Eigen::VectorXd theta;
};

/// \throws InputError naming the field: unknown body, too few samples, a joint of the model
/// missing from the log, non-uniform sampling, a floating-base log without motion capture (the
/// base's initial guess), an unknown contact or sensor frame, contradictory parameter
/// constraints (checked first, model::requireConsistent).
LogProblem buildLogProblem(const model::RobotModel& robot, const io::Log& log,
                           const LogProblemOptions& options);
/// The parameter constraints of `options` (total_mass, symmetric, mass_bounds) over its
/// identified bodies, checked for consistency (model::requireConsistent); null when there are
/// none. \throws InputError naming the constraint or "contradictory parameter constraints".
std::shared_ptr<const ParameterConstraints> makeParameterConstraints(
    const model::RobotModel& robot, const LogProblemOptions& options);
/// The smoothing pass's options (docs/estimation.md, "Noisy encoders"): `options` with theta held
/// at the prior (std 1e-6), no actuator terms, no parameter constraints, and this
/// generalized-force noise on the joints.
LogProblemOptions smoothingPassOptions(const LogProblemOptions& options, double torque_std);
/// `xs` with the joint velocities at zero, the smoothing pass's start: differences of noisy
/// encoders are worse than no velocity. A floating base keeps its (motion capture, gyro) twist.
std::vector<Eigen::VectorXd> jointsAtRest(std::vector<Eigen::VectorXd> xs,
                                          const pinocchio::Model& model);
/// The same problem with `trajectory` (N + 1 states, from an earlier solve of a problem on the
/// same knots) as the initial guess and the arrival prior's mean in place of the encoders'
/// differences; the stiction band is decided on its velocities.
/// \throws InputError as above, or when `trajectory` has the wrong length or state size.
LogProblem buildLogProblem(const model::RobotModel& robot, const io::Log& log,
                           const LogProblemOptions& options,
                           const std::vector<Eigen::VectorXd>& trajectory);

}  // namespace heft::estimation
