#pragma once
/// \file Several logs of one robot combined into one estimate (docs/fleet.md, "Fusion"). Each
/// log's data in information form (information.hpp) has its torque offsets marginalized (a sensor
/// is zeroed anew in every recording); logs whose data the other logs' own estimates explain far
/// worse than typical are left out (the outlier gate); the rest are summed and the MAP is solved
/// once on the sum: the joint MAP of all logs, theta shared, each log its own weights and offsets.
#include <string>
#include <utility>
#include <vector>

#include <Eigen/Core>

#include "heft/identify/identify.hpp"
#include "heft/identify/information.hpp"
#include "heft/identify/map.hpp"

namespace heft::identify {

struct FusionOptions {
  /// A log whose data the other logs' own estimates explain worse than gate times the logs'
  /// median (FusedLog::excess_others) is left out; 0 keeps every log. Needs three logs or more.
  double outlier_gate = 10;
  /// A change of the robot between two consecutive used logs (the order given is taken as time) is
  /// reported when the largest split statistic (DriftScan) exceeds drift_gate times the logs'
  /// typical excess within the two parts; 0 turns the scan off. Needs two used logs or more.
  double drift_gate = 10;
  /// Divide the data's information in the fused covariance by max(1, S^2), S^2 the logs'
  /// dispersion about their common estimate (Dispersion): the posterior covariance were every
  /// log's noise S times larger than its own fit says, the prior's information kept (directions
  /// no log sees keep the prior's covariance). The estimate is the unscaled MAP's.
  bool scale_by_dispersion = true;
  /// \throws InputError naming the field.
  void validate() const;
};

/// One log's data as its own identification left it.
struct LogInformation {
  std::string source;           ///< names the log in messages (its information file)
  DataInformation information;  ///< with the log's torque offsets, if any
  double torque_offset_prior_std = 1;
};

/// What one log brought to the fusion.
struct FusedLog {
  std::string source;
  int rows = 0;       ///< data rows behind its information
  int data_rank = 0;  ///< directions its data see (after its offsets are marginalized)
  bool used = true;
  std::string left_out_because;  ///< empty when used
  /// 2 (cost of the log's data at the fused estimate - its own minimum) / data_rank: about 1 when
  /// the log agrees with the others, large for a log of another robot or payload.
  double excess = 0;
  /// The median over the other logs of the same at each one's own estimate: the outlier gate's
  /// measure (0 when the gate did not run).
  double excess_others = 0;
  /// Its torque offsets at the fused estimate (joint, value [N m]).
  std::vector<std::pair<std::string, double>> offsets;
  /// Its share of the used logs' information along each base parameter of the fused data (0..1;
  /// the used logs' shares sum to 1).
  std::vector<double> information_share;
};

/// Whether the logs, in the order given (taken as time), show the robot changing: a battery
/// swapped, a tool changed, a worn gear replaced. Two signs, both from the logs' data alone:
/// - a split of the used logs: for each split into the logs before a log and the logs from it on,
///   2 (cost of all their data at one estimate - the two parts' costs at one estimate each) per
///   data direction both parts see. The costs are minima of the logs' quadratic data costs (no
///   prior, no consistency), so the statistic measures only what the parts disagree on: about 1
///   when nothing changed and the weights are right. It counts as a change above drift_gate times
///   the median excess of a log at the own estimate of another log of its part (the gate's
///   measure, taken within the parts so that the change does not inflate it).
/// - a left-out tail: when the gate left out the last logs (two or more, after every used log)
///   and they agree with each other (their median pairwise excess within drift_gate times the used
///   logs'), they are the robot after a change, not strays; the fused estimate is the robot before.
/// - a left-out head: the same for the first logs; the fused estimate is the robot after.
struct DriftScan {
  bool ran = false;
  /// Per used log from the second on (in order): the statistic of the split just before it; 0
  /// where the two parts share no direction.
  std::vector<double> statistic;
  std::vector<int> shared_directions;  ///< per split, as statistic
  double largest = 0;                  ///< the largest statistic
  /// The scale of "nothing changed" at the largest split (1 when no part has two logs).
  double typical = 1;
  /// The median pairwise excess of the left-out tail or head last examined (0: none).
  double left_out_excess = 0;
  enum class Sign { None, Split, LeftOutTail, LeftOutHead };
  Sign detected = Sign::None;
  /// Indices into FusionResult::logs of the last used log before the change and the first log
  /// after it (at the largest split when none was detected; -1 when there was no split). Logs the
  /// gate left out between them may be on either side.
  int last_before = -1;
  int first_after = -1;
};

/// "none", "split", "left-out tail", "left-out head".
std::string toString(DriftScan::Sign sign);

/// How the used logs scatter about their common estimate against their own covariances (the
/// Birge ratio): S^2 = min_l sum_i |R_i l - z_i|^2 / (sum_i rank_i - rank), the logs' costs above
/// their own minima at the data's joint minimum (no prior), per degree of freedom the fusion
/// leaves (the sum of the logs' data ranks less the rank of their sum). About 1 when each log's
/// weights are right and the logs agree; an error all logs share (the same bias in every
/// regressor) does not show in it.
struct Dispersion {
  int degrees_of_freedom = 0;  ///< 0: one used log, or logs that see disjoint directions
  double ratio = 1;            ///< S^2 (1 when there is no degree of freedom)
  /// What the data's information was divided by: max(1, S^2) when scaled, else 1.
  double scale = 1;
};

struct FusionResult {
  /// The fused estimate in identify's shape (method Map); fused.map->information is the sum over
  /// the used logs (offsets marginalized), to fuse further.
  IdentifyResult fused;
  std::vector<FusedLog> logs;
  DriftScan drift;
  Dispersion dispersion;
  int used() const;
};

/// Fuses the logs' information into one MAP estimate with `set`'s priors and `map`'s options
/// (constraints included); with options.scale_by_dispersion and S^2 > 1, its covariance with the
/// data's information divided by S^2 (MapOptions::covariance_data_scale). Never throws on a
/// failed solve (fused.status says why).
/// \throws InputError when there is no log, or a log's parameters differ from the first's
///   (naming its source).
FusionResult fuse(const std::vector<LogInformation>& logs, const model::IdentifiedSet& set,
                  const ProblemOptions& problem, const MapOptions& map,
                  const FusionOptions& options = {});

}  // namespace heft::identify
