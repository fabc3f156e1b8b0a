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

struct FusionResult {
  /// The fused estimate in identify's shape (method Map); fused.map->information is the sum over
  /// the used logs (offsets marginalized), to fuse further.
  IdentifyResult fused;
  std::vector<FusedLog> logs;
  int used() const;
};

/// Fuses the logs' information into one MAP estimate with `set`'s priors and `map`'s options
/// (constraints included). Never throws on a failed solve (fused.status says why).
/// \throws InputError when there is no log, or a log's parameters differ from the first's
///   (naming its source).
FusionResult fuse(const std::vector<LogInformation>& logs, const model::IdentifiedSet& set,
                  const ProblemOptions& problem, const MapOptions& map,
                  const FusionOptions& options = {});

}  // namespace heft::identify
