#pragma once
/// \file Named ground-truth scenarios (`heft simulate --list`) and the loop that runs one:
/// MuJoCo physics at 1 kHz, a PD + inverse-dynamics controller on the nominal model, the truth of
/// every step recorded, then the sensor models (sensors.hpp) make the log.
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "heft/io/log.hpp"
#include "heft/model/robots.hpp"
#include "heft/sim/controller.hpp"
#include "heft/sim/sensors.hpp"
#include "heft/sim/sim_model.hpp"

namespace heft::sim {

enum class Motion {
  Stance,    ///< feet planted: stand, torso roll / pitch / yaw, squats (stanceReference)
  Fourier,   ///< fixed base: Fourier-series excitation (fourierReference)
  Humanoid,  ///< soles flat: squats, weight shifts, torso twists, arm swings, stepping in
             ///< place (humanoidReference)
};

/// Bounds that define a fall (free-flyer only): the run stops when the base leaves them.
struct FallBounds {
  double min_base_height = 0.12;  ///< [m], base frame origin above the floor
  double max_tilt = 0.7;          ///< [rad], angle between the base z axis and the world z axis
};

/// One scenario: which robot, what the simulator changes with respect to the nominal model, which
/// motion, which gains, how long.
struct Scenario {
  std::string name;
  std::string description;  ///< one line for --list
  std::string robot;        ///< short name (model::knownRobots)
  SimModelOptions model;
  Motion motion = Motion::Stance;
  StanceMotionOptions stance;
  FourierExcitationOptions fourier;
  HumanoidMotionOptions humanoid;
  /// Per-joint gain overrides after the gains above are set (joint name -> kp, kd).
  std::map<std::string, std::pair<double, double>> joint_gains;
  /// Fixed gains when kp > 0; otherwise bandwidthGains(bandwidth, damping_ratio) at the start pose.
  double kp = 0, kd = 0;
  double bandwidth = 40, damping_ratio = 1;
  double duration = 15;  ///< default duration [s]
  FallBounds bounds;
  /// Largest tracking error |q_ref - q| of any joint that still counts as tracking [rad]
  /// (fixed-base robots: exceeding it ends the run as a failure).
  double max_tracking_error = 0.5;
};

/// Every scenario, in --list order.
const std::vector<Scenario>& scenarios();
/// The scenario called `name`. \throws InputError listing the names.
const Scenario& findScenario(const std::string& name);

/// How to run a scenario.
struct SimulationOptions {
  double duration = 0;            ///< [s]; 0 = the scenario's duration
  std::uint64_t seed = 0;         ///< noise seed (the motion does not depend on it)
  std::string noise = "nominal";  ///< noise profile name (NoiseProfile::fromName)
  /// When set, used instead of `noise` (studies that sweep one sensor number).
  std::optional<NoiseProfile> profile;
  /// Also log force/torque sensors at the contact frames (the force_torque group; makeLog). Off by
  /// default, so logs made before it stay the same bit for bit.
  bool force_torque = false;
  /// Skip the sensor models and the log (benchmarks of the physics alone); the summary is filled.
  bool make_log = true;
  /// Stop at the first step outside the fall bounds (the log then ends there).
  bool stop_on_fall = true;
  /// Throws InputError naming the field.
  void validate() const;
};

struct SimulationSummary {
  enum class Status {
    NotRun,
    Completed,  ///< ran the whole duration within bounds, no MuJoCo warning
    Fell,       ///< base out of the fall bounds (free-flyer) or tracking lost (fixed base)
    Warning,    ///< MuJoCo reported a warning (for example an unstable, NaN state)
  };
  Status status = Status::NotRun;
  std::string message;
  std::string scenario;
  double duration = 0;        ///< requested [s]
  double simulated_time = 0;  ///< [s]
  long steps = 0;
  long mujoco_warnings = 0;       ///< in-simulation (mjData) plus mju_warning during the run
  double min_base_height = 0;     ///< [m] (free-flyer)
  double max_tilt = 0;            ///< [rad] (free-flyer)
  double max_tracking_error = 0;  ///< [rad], largest |q_ref - q| over joints and time
  double total_mass = 0;          ///< simulated robot + payloads [kg] (MuJoCo subtree mass)
  double nominal_mass = 0;        ///< the estimator's model [kg]
  double reference_seconds = 0;   ///< wall time: inverse kinematics and dynamics of the reference
  double physics_seconds = 0;     ///< wall time: the MuJoCo loop with the controller
  double sensor_seconds = 0;      ///< wall time: sensor models and log assembly
  bool ok() const { return status == Status::Completed; }
  /// A few lines a person can read.
  std::string report() const;
};

std::string toString(SimulationSummary::Status status);

struct SimulationResult {
  io::Log log;  ///< empty when !make_log
  SimulationSummary summary;
};

/// Called once per simulated second: (simulated time, duration) [s].
using SimulationProgress = std::function<void(double, double)>;

/// Runs `scenario`. Errors in the input throw InputError; a MuJoCo error throws SolveError; a fall
/// or a MuJoCo warning is reported in the summary (and the log ends at the fall).
SimulationResult simulate(const Scenario& scenario, const SimulationOptions& options = {},
                          const SimulationProgress& on_progress = {});

}  // namespace heft::sim
