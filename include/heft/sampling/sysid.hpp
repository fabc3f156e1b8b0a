#pragma once
/// \file Sampling-based system identification (spi-active Sec. 3, "SPI"): CMA-ES over candidate
/// models, each scored by replaying clips of the log in MuJoCo (heft::sampling::Rollout), the
/// candidates of a generation spread over threads. Deterministic: the same log, options and seeds
/// give the same result for any number of threads.
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "heft/excite/cmaes.hpp"
#include "heft/sampling/parameters.hpp"
#include "heft/sampling/rollout.hpp"

namespace heft::sampling {

struct SamplingOptions {
  int clips = 40;            ///< clips drawn from the log
  double min_horizon = 0.2;  ///< [s] shortest clip
  double max_horizon = 1.0;  ///< [s] longest clip
  std::uint64_t clip_seed = 1;
  /// The last fraction of the first recording (the log; ReplayData::joins) is held out: the fit's
  /// clips and the actuator term use every other sample, and `holdout_clips` clips drawn inside
  /// it (seed clip_seed + 1) score the start and the best model on data the fit did not see.
  /// Recordings after the first are fitted whole: they are added to inform the fit (spi-active's
  /// designed experiment), which holding out their end would undo. 0 = nothing held out.
  double holdout_fraction = 0.2;
  int holdout_clips = 20;
  CostWeights weights;
  Replay replay;    ///< open loop unless PD gains are given
  int threads = 0;  ///< 0 = the machine's hardware threads
  excite::CmaesOptions optimizer = defaultOptimizer();
  /// CMA-ES with sigma0 = 1 (x is normalized) and 60 generations at most.
  static excite::CmaesOptions defaultOptimizer();
  /// \throws InputError naming the field.
  void validate() const;
};

struct SamplingSummary {
  enum class Status {
    NotRun,
    Converged,      ///< CMA-ES stopped on its x or f tolerance
    MaxIterations,  ///< the generation budget ran out (the best candidate is still returned)
    Failed,         ///< no candidate could be simulated (every rollout diverged)
  };
  Status status = Status::NotRun;
  std::string message;
  excite::CmaesSummary optimizer;
  Candidate start, best;
  Eigen::VectorXd best_x;
  CostTerms start_terms, best_terms;  ///< summed over the clips
  /// With CostWeights::torque_offsets: the best model's torque-sensor offset [N m] per joint
  /// (rows) and recording (columns, ReplayData's order), tau_log = tau + offset: the actuator
  /// term's over the fitted samples for a sampled group's joint when that term is weighted, else
  /// the rollouts' over the fitted clips; a recording with no fitted data takes the offsets
  /// pooled over the others. Empty otherwise.
  Eigen::MatrixXd torque_offsets;
  double start_cost = 0, best_cost = 0;
  std::vector<Clip> clips;
  /// Held-out clips (SamplingOptions::holdout_fraction) and both models' terms on them.
  std::vector<Clip> holdout_clips;
  int holdout_begin = 0, holdout_end = 0;  ///< the held-out samples [begin, end)
  CostTerms holdout_start_terms, holdout_best_terms;
  /// The best model's weighted cost on the held-out clips relative to the start model's (the
  /// start model scores 1); -1 when nothing was held out. With torque offsets, each model's
  /// offsets are the ones it fitted on the fitted clips, not refitted on the held-out ones. The
  /// rollouts' terms only: the actuator term (CostWeights::actuator_torque) is left out, so the
  /// figure means the same with and without it.
  double holdout_prediction_error = -1;
  double dt = 0;  ///< median step of the log [s]
  int threads = 1;
  long rollouts = 0;  ///< clips simulated
  double seconds = 0;
  bool usable() const { return status == Status::Converged || status == Status::MaxIterations; }
  std::string report() const;
};

std::string toString(SamplingSummary::Status status);

/// Called after each generation: (generation, best cost so far, seconds).
using GenerationCallback = std::function<void(int, double, double)>;

/// How well clips of a log determine the sampled coordinates around x (spi-active eq. 5: the
/// Fisher information from rollout sensitivities). The residuals (simulated minus logged base
/// position, velocity, angular velocity, joint positions, velocities, torques) are differentiated
/// by central differences in x; each channel's noise is taken as its residual RMS at x; then
/// F = J^T diag(1 / sigma^2) J. Residuals of a rollout are correlated in time, so F^-1 is a lower
/// bound of the covariance (the white-noise Cramer-Rao bound), not a posterior. With torque
/// offsets (profiled in the fit, CostWeights::torque_offsets), the torque channel's RMS is taken
/// beyond them and F is the Schur complement that marginalizes one offset per joint and
/// recording: F - sum_r sum_j s_rj s_rj^T / N_r, s_rj the weighted torque rows of joint j summed
/// over the N_r steps of recording r's clips.
struct RolloutInformation {
  bool ok = false;              ///< false when a rollout diverged
  Eigen::MatrixXd information;  ///< F, dimension x dimension, x units
  /// F^-1, eigenvalues floored at 1e-14 of the largest (an unseen direction keeps a huge variance)
  Eigen::MatrixXd covariance;
  Eigen::VectorXd std_x;  ///< sqrt of covariance's diagonal
  int rank = 0;           ///< eigenvalues of F above 1e-12 of the largest
  /// Residual RMS per channel: base position [m], velocity [m/s], angular velocity [rad/s],
  /// joint position [rad], velocity [rad/s], torque [N m] (0 when absent); empty when the noise
  /// model was given (rolloutInformation's channel_sigma).
  Eigen::VectorXd channel_rms;
};

/// The Fisher information of `space`'s coordinates at x over `clips` (one thread); `step` is the
/// central-difference step in x units. `channel_sigma` (6 entries, the channels of channel_rms),
/// when given, is the noise model instead of the residual RMS at x (a designed motion, whose
/// "log" is the command itself: its residuals are not noise), and the rollouts at x are skipped.
RolloutInformation rolloutInformation(const sim::SimModel& sim, const ParameterSpace& space,
                                      const ReplayData& data, const std::vector<Clip>& clips,
                                      const Replay& replay, const Eigen::VectorXd& x,
                                      double step = 0.2,
                                      const Eigen::VectorXd& channel_sigma = Eigen::VectorXd(),
                                      bool torque_offsets = false);

/// The summed terms of `candidate` on `clips` of `data` (one thread): how well a model predicts
/// a log, e.g. one the fit did not see. Stops at the first clip that diverges (terms not finite).
CostTerms scoreCandidate(const sim::SimModel& sim, const ParameterSpace& space,
                         const ReplayData& data, const std::vector<Clip>& clips,
                         const Replay& replay, const Candidate& candidate);

/// Identifies `space` on `data`. \throws InputError for bad options or a log too short for the
/// clips; a start model whose rollouts diverge is a Failed summary, not a throw.
SamplingSummary identifyBySampling(const sim::SimModel& sim, const ParameterSpace& space,
                                   const ReplayData& data, const SamplingOptions& options,
                                   const GenerationCallback& on_generation = {});

}  // namespace heft::sampling
