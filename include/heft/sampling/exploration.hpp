#pragma once
/// \file Active exploration (spi-active Sec. 4, App. A.3): the command sequence of the robot's
/// own controller chosen to make the sampled parameters observable. The controller is the stance
/// controller of heft::sim (joint PD plus feed-forward on the nominal model, feet planted); its
/// commands are the base's offsets [x, y, z, roll, pitch, yaw] as Bezier curves per horizon
/// (sim::BezierCommands). For a design, the Fisher information of the stage-1 estimate (eq. 7)
/// comes from rollout sensitivities: the commanded motion is replayed in MuJoCo with the stage-1
/// model through the PD, in consecutive clips of the identification's horizon, and differentiated
/// by central differences (rolloutInformation); CMA-ES minimizes an information criterion of it
/// (eq. 6: tr F^-1) over the free control points, within bounds, the joint limits and the torque
/// limits, and a design whose rollout leaves the commanded motion (the robot falls or slips)
/// ranks last (the paper's termination penalty). docs/design/sampling.md has the choices.
#include <cstdint>
#include <string>
#include <vector>

#include <Eigen/Core>

#include "heft/excite/cmaes.hpp"
#include "heft/sampling/parameters.hpp"
#include "heft/sampling/rollout.hpp"
#include "heft/sampling/sysid.hpp"
#include "heft/sim/controller.hpp"

namespace heft::sampling {

enum class InformationCriterion {
  TraceInverse,   ///< A-optimal, tr F^-1 (spi-active eq. 6)
  LogDet,         ///< D-optimal, -log det F
  MinEigenvalue,  ///< E-optimal, -lambda_min(F)
};

std::string toString(InformationCriterion criterion);
/// "trace_inverse", "log_det" or "min_eigenvalue". \throws InputError naming `field` (when not
/// empty).
InformationCriterion informationCriterionFromName(const std::string& name,
                                                  const std::string& field);

struct ExplorationOptions {
  int segments = 2;               ///< horizons of the designed motion
  double segment_duration = 4.0;  ///< [s] per horizon (spi-active: 4 s)
  int degree = 10;                ///< Bezier degree per horizon (spi-active: 10)
  /// Largest |control point| per channel: x, y, z [m], roll, pitch, yaw [rad].
  Eigen::Matrix<double, 6, 1> bounds =
      (Eigen::Matrix<double, 6, 1>() << 0.04, 0.04, 0.06, 0.25, 0.25, 0.3).finished();
  /// [s] largest hop flight of a pronking segment (spi-active's gait commands): each segment has
  /// one more coordinate z_h, flight = max_hop_flight max(0, z_h) (z_h <= 0: no hops, so CMA-ES
  /// chooses between standing and pronking); 0 = no pronking.
  double max_hop_flight = 0.12;
  InformationCriterion criterion = InformationCriterion::TraceInverse;
  /// [s] the Fisher information sums consecutive clips of this length (the identification's
  /// longest clip: each clip starts from the commanded state, as the identification's do).
  double clip_horizon = 0.5;
  double step = 0.2;  ///< central-difference step in x units
  /// A design whose simulated base strays more than this from its commanded position [m] (a
  /// fall, a slip) is infeasible.
  double max_base_deviation = 0.05;
  /// The whole commanded motion, simulated continuously with the stage-1 model, must keep the
  /// base within these (a margin inside go2's fall bounds, 0.6 rad and 0.15 m: the stage-1 model
  /// is not the robot) [rad], [m].
  double max_tilt = 0.4;
  double min_base_height = 0.17;
  /// The feed-forward may use this fraction of each joint's effort limit (the PD needs the rest).
  double torque_fraction = 0.8;
  /// The identification profiles out a torque-sensor offset per joint (CostWeights::
  /// torque_offsets): the design's information marginalizes them as well (rolloutInformation).
  bool torque_offsets = false;
  int threads = 0;  ///< 0 = the machine's hardware threads
  excite::CmaesOptions optimizer = defaultOptimizer();
  /// CMA-ES on the control points scaled by `bounds` (so x in [-1, 1]), sigma0 0.3, 20
  /// generations.
  static excite::CmaesOptions defaultOptimizer();
  /// \throws InputError naming the field.
  void validate() const;
  /// The largest hop (2 hop_push + max_hop_flight) fits in a segment with 0.5 s free at each end.
  /// \throws InputError naming max_hop_flight.
  void requireHopFits(double hop_push) const;
};

/// The largest |tau_ff| / effort limit of `reference` over the actuated joints (the last columns
/// of `model`) and time; joints without a finite positive limit are left out.
double feedforwardRatio(const pinocchio::Model& model, const sim::Reference& reference);

/// One evaluated command design.
struct CommandDesign {
  Eigen::VectorXd z;                ///< the free control points scaled by the bounds, in [-1, 1]
  sim::StanceMotionOptions motion;  ///< the stance motion with these commands
  double duration = 0;              ///< [s] settle + commands + 0.5 s standing
  bool feasible = false;
  std::string why;       ///< why not feasible
  double criterion = 0;  ///< the criterion's value (infinite when infeasible)
  RolloutInformation information;
  double max_feedforward_ratio = 0;  ///< largest |tau_ff| / effort limit over joints and time
  /// The whole motion simulated continuously with the stage-1 model: the base's largest tilt
  /// [rad] and lowest height [m] (0 when not simulated).
  double max_tilt = 0, min_base_height = 0;
};

/// Evaluates command designs for one robot, stage-1 estimate and controller. Thread-safe: every
/// evaluation makes its own rollout.
class CommandExperiment {
 public:
  /// `x_hat`: the stage-1 estimate in `space`'s coordinates; `channel_sigma`: the noise of the six
  /// residual channels (RolloutInformation::channel_rms of the stage-1 fit); `base`: the stance
  /// motion whose commands are designed (its posture and settle; its phases are kept).
  /// \throws InputError for a fixed-base robot, bad options or sizes.
  CommandExperiment(const sim::SimModel& sim, const ParameterSpace& space, Eigen::VectorXd x_hat,
                    Replay replay, Eigen::VectorXd channel_sigma, sim::StanceMotionOptions base,
                    ExplorationOptions options);

  /// Per segment: 6 channels x (degree - 3) free control points, then its hop coordinate (when
  /// max_hop_flight > 0).
  int dimension() const;
  /// The commands for z, each entry clamped to [-1, 1] (a control point at most at its bound).
  sim::BezierCommands commands(const Eigen::VectorXd& z) const;
  /// The design of the commands at z; z outside [-1, 1] is evaluated clamped and its criterion
  /// multiplied by 1 + |z - clamp(z)|^2, so the search is drawn back inside.
  CommandDesign evaluate(const Eigen::VectorXd& z) const;
  /// A design drawn uniformly in the bounds, re-drawn until feasible (at most `tries`); the last
  /// draw when none is. Deterministic in `seed`. `draws`, when given, gets the designs evaluated.
  CommandDesign randomDesign(std::uint64_t seed, int tries = 20, int* draws = nullptr) const;
  const ExplorationOptions& options() const { return options_; }

 private:
  const sim::SimModel& sim_;
  const ParameterSpace& space_;
  Eigen::VectorXd x_hat_;
  Replay replay_;
  Eigen::VectorXd channel_sigma_;
  sim::StanceMotionOptions base_;
  ExplorationOptions options_;
};

struct ExplorationSummary {
  enum class Status {
    NotRun,
    Designed,  ///< the best design found is feasible
    Failed,    ///< no feasible design was found
  };
  Status status = Status::NotRun;
  std::string message;
  excite::CmaesSummary optimizer;
  CommandDesign best;
  long designs = 0;     ///< designs evaluated
  long infeasible = 0;  ///< of which infeasible
  double seconds = 0;
  bool usable() const { return status == Status::Designed; }
  std::string report() const;
};

std::string toString(ExplorationSummary::Status status);

/// Minimizes the criterion over the commands with CMA-ES from `z0` (empty: a random feasible
/// design of the optimizer's seed), the designs of a generation spread over threads.
ExplorationSummary designCommands(const CommandExperiment& experiment,
                                  const Eigen::VectorXd& z0 = {});

}  // namespace heft::sampling
