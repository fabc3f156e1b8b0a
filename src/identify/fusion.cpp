#include "heft/identify/fusion.hpp"

#include <algorithm>
#include <cmath>
#include <utility>

#include <Eigen/QR>

#include "heft/common/error.hpp"
#include "heft/common/format.hpp"
#include "heft/common/statistics.hpp"

namespace heft::identify {
namespace {

// One log with its offsets marginalized, and its data as rows: |R l - z|^2 is its cost above its
// own minimum.
struct MarginalLog {
  DataInformation marginal;
  OffsetMap offsets;
  LinearSystem rows;
};

// The shares of each used log's information along each base parameter: u_k = K^+ e_k moves base
// parameter k alone; log i brings u_k' D_i u_k of the used logs' sum.
void informationShares(const BaseParameters& base, const std::vector<MarginalLog>& data,
                       std::vector<FusedLog>& logs) {
  if (base.rank == 0) return;
  const Eigen::MatrixXd U = base.K.completeOrthogonalDecomposition().pseudoInverse();
  Eigen::VectorXd total = Eigen::VectorXd::Zero(base.rank);
  std::vector<Eigen::VectorXd> info(data.size());
  for (std::size_t i = 0; i < data.size(); ++i) {
    info[i] = (U.transpose() * data[i].marginal.matrix * U).diagonal();
    if (logs[i].used) total += info[i];
  }
  for (std::size_t i = 0; i < data.size(); ++i) {
    logs[i].information_share.resize(base.rank);
    for (int k = 0; k < base.rank; ++k)
      logs[i].information_share[k] = total[k] > 0 ? info[i][k] / total[k] : 0.0;
  }
}

// Log j's excess at log i's own estimate (its single-log MAP), for every pair: how well each
// log's data are explained by each other log alone.
template <typename ExcessOf>
Eigen::MatrixXd pairwiseExcess(const std::vector<MarginalLog>& data,
                               const model::IdentifiedSet& set, const ProblemOptions& problem,
                               const MapOptions& map, const ExcessOf& excessOf) {
  const auto n = static_cast<Eigen::Index>(data.size());
  std::vector<Eigen::VectorXd> own(data.size());
  for (std::size_t i = 0; i < data.size(); ++i)
    own[i] = solveMap(data[i].rows, set, problem, map).linear;
  Eigen::MatrixXd excess = Eigen::MatrixXd::Zero(n, n);
  for (Eigen::Index j = 0; j < n; ++j)
    for (Eigen::Index i = 0; i < n; ++i)
      if (i != j) excess(j, i) = excessOf(static_cast<std::size_t>(j), own[i]);
  return excess;
}

// Outlier gate: how well each log's data are explained by the other logs' own estimates (the
// median over them: robust while most logs are of this robot); a log far above the logs' typical
// value is left out. Pairwise, because a fusion that includes an outlier explains the good logs
// badly too.
void gateOutliers(const Eigen::MatrixXd& excess, double gate, std::vector<FusedLog>& logs) {
  std::vector<double> scores;
  for (Eigen::Index j = 0; j < excess.rows(); ++j) {
    std::vector<double> e;
    for (Eigen::Index i = 0; i < excess.cols(); ++i)
      if (i != j) e.push_back(excess(j, i));
    logs[static_cast<std::size_t>(j)].excess_others = median(e);
    scores.push_back(logs[static_cast<std::size_t>(j)].excess_others);
  }
  const double typical = median(scores);
  for (FusedLog& log : logs) {
    if (!(log.excess_others > gate * typical)) continue;
    log.used = false;
    log.left_out_because = "excess at the other runs' estimates " +
                           formatNumber(log.excess_others, 3) + " > gate " + formatNumber(gate, 3) +
                           " x the runs' median " + formatNumber(typical, 3);
  }
}

// The smallest summed cost sum_i |R_i l - z_i|^2 over one l for logs first..last-1 of `parts`
// (each |R_i l - z_i|^2 is log i's cost above its own minimum, so no large constants cancel),
// and the number of directions their rows see together.
std::pair<double, int> jointMinimum(const std::vector<const LinearSystem*>& parts,
                                    std::size_t first, std::size_t last) {
  Eigen::Index rows = 0;
  for (std::size_t i = first; i < last; ++i) rows += parts[i]->Phi.rows();
  if (rows == 0) return {0.0, 0};
  Eigen::MatrixXd A(rows, parts[first]->Phi.cols());
  Eigen::VectorXd y(rows);
  Eigen::Index r = 0;
  for (std::size_t i = first; i < last; ++i) {
    A.middleRows(r, parts[i]->Phi.rows()) = parts[i]->Phi;
    y.segment(r, parts[i]->y.size()) = parts[i]->y;
    r += parts[i]->Phi.rows();
  }
  const Eigen::CompleteOrthogonalDecomposition<Eigen::MatrixXd> cod(A);
  return {(A * cod.solve(y) - y).squaredNorm(), static_cast<int>(cod.rank())};
}

// The median pairwise excess among the logs at positions `members` (0 when fewer than two).
double medianPairwise(const Eigen::MatrixXd& excess, const std::vector<int>& members) {
  std::vector<double> pairs;
  for (int a : members)
    for (int b : members)
      if (a != b) pairs.push_back(excess(a, b));
  return pairs.empty() ? 0.0 : median(pairs);
}

// The generalized likelihood ratio of "two robots, split before used log k" against "one robot"
// for every k, per shared direction, into scan; returns the k of the largest (0: none above 0).
std::size_t scanSplits(const std::vector<const LinearSystem*>& parts, DriftScan& scan) {
  std::size_t largest_split = 0;
  const auto [all_cost, all_rank] = jointMinimum(parts, 0, parts.size());
  for (std::size_t k = 1; k < parts.size(); ++k) {
    const auto [before_cost, before_rank] = jointMinimum(parts, 0, k);
    const auto [after_cost, after_rank] = jointMinimum(parts, k, parts.size());
    const int shared = before_rank + after_rank - all_rank;
    const double statistic =
        shared > 0 ? std::max(0.0, all_cost - before_cost - after_cost) / shared : 0.0;
    scan.statistic.push_back(statistic);
    scan.shared_directions.push_back(shared);
    if (statistic > scan.largest) {
      scan.largest = statistic;
      largest_split = k;
    }
  }
  return largest_split;
}

// The median excess over pairs of used logs on the same side of the split before used log k.
double typicalWithinSides(const Eigen::MatrixXd& excess, const std::vector<int>& used,
                          std::size_t k) {
  std::vector<double> within;
  for (std::size_t a = 0; a < used.size(); ++a)
    for (std::size_t b = 0; b < used.size(); ++b)
      if (a != b && (a < k) == (b < k)) within.push_back(excess(used[a], used[b]));
  return within.empty() ? 1.0 : median(within);
}

// The gate's left-out logs after every used one (the robot after a change) or before every used
// one (the robot before it), two or more that agree with each other, as the used logs do.
void checkLeftOutSides(const Eigen::MatrixXd& excess, const std::vector<int>& used, int logs,
                       double drift_gate, DriftScan& scan) {
  const double used_typical = medianPairwise(excess, used);
  std::vector<int> tail, head;
  for (int i = used.back() + 1; i < logs; ++i) tail.push_back(i);
  for (int i = 0; i < used.front(); ++i) head.push_back(i);
  for (const auto& [side, sign] : {std::pair{tail, DriftScan::Sign::LeftOutTail},
                                   std::pair{head, DriftScan::Sign::LeftOutHead}}) {
    if (side.size() < 2) continue;
    scan.left_out_excess = medianPairwise(excess, side);
    if (scan.left_out_excess > drift_gate * used_typical) continue;
    scan.detected = sign;
    scan.last_before = sign == DriftScan::Sign::LeftOutTail ? used.back() : side.back();
    scan.first_after = sign == DriftScan::Sign::LeftOutTail ? side.front() : used.front();
    return;
  }
}

// The used logs' rows in order, and their indices into `logs`.
std::pair<std::vector<const LinearSystem*>, std::vector<int>> usedRows(
    const std::vector<MarginalLog>& data, const std::vector<FusedLog>& logs) {
  std::pair<std::vector<const LinearSystem*>, std::vector<int>> out;
  for (std::size_t i = 0; i < data.size(); ++i) {
    if (!logs[i].used) continue;
    out.first.push_back(&data[i].rows);
    out.second.push_back(static_cast<int>(i));
  }
  return out;
}

DriftScan scanForDrift(const std::vector<MarginalLog>& data, const std::vector<FusedLog>& logs,
                       const Eigen::MatrixXd& excess, double drift_gate) {
  DriftScan scan;
  const auto [parts, used] = usedRows(data, logs);
  if (drift_gate <= 0 || parts.size() < 2) return scan;
  scan.ran = true;
  const std::size_t k = scanSplits(parts, scan);
  if (excess.size() == 0) return scan;  // fewer than three logs: no pairwise scale
  if (k > 0) {
    scan.last_before = used[k - 1];
    scan.first_after = used[k];
    scan.typical = typicalWithinSides(excess, used, k);
    if (scan.largest > drift_gate * scan.typical) {
      scan.detected = DriftScan::Sign::Split;
      return scan;
    }
  }
  checkLeftOutSides(excess, used, static_cast<int>(logs.size()), drift_gate, scan);
  return scan;
}

// The Birge ratio of the used logs (Dispersion): their scatter about the data's joint minimum (no
// prior, no consistency map, so that a prior pulling against data all logs agree on does not count
// as scatter). Each log's rows are its cost above its own minimum, so the sum is the scatter alone.
Dispersion dispersionOf(const std::vector<MarginalLog>& data, const std::vector<FusedLog>& logs) {
  Dispersion d;
  const auto [parts, used] = usedRows(data, logs);
  if (parts.empty()) return d;
  int ranks = 0;
  for (int i : used) ranks += logs[static_cast<std::size_t>(i)].data_rank;
  const auto [scatter, rank] = jointMinimum(parts, 0, parts.size());
  d.degrees_of_freedom = ranks - rank;
  if (d.degrees_of_freedom > 0) d.ratio = scatter / d.degrees_of_freedom;
  return d;
}

}  // namespace

std::string toString(DriftScan::Sign sign) {
  switch (sign) {
    case DriftScan::Sign::Split:
      return "split";
    case DriftScan::Sign::LeftOutTail:
      return "left-out tail";
    case DriftScan::Sign::LeftOutHead:
      return "left-out head";
    case DriftScan::Sign::None:
      break;
  }
  return "none";
}

void FusionOptions::validate() const {
  require(std::isfinite(outlier_gate) && outlier_gate >= 0, "outlier_gate",
          "a finite value >= 0 (0: keep every log)", formatNumber(outlier_gate, 6));
  require(std::isfinite(drift_gate) && drift_gate >= 0, "drift_gate",
          "a finite value >= 0 (0: no drift scan)", formatNumber(drift_gate, 6));
}

int FusionResult::used() const {
  return static_cast<int>(
      std::count_if(logs.begin(), logs.end(), [](const FusedLog& l) { return l.used; }));
}

FusionResult fuse(const std::vector<LogInformation>& logs, const model::IdentifiedSet& set,
                  const ProblemOptions& problem, const MapOptions& map,
                  const FusionOptions& options) {
  options.validate();
  require(!logs.empty(), "logs", "at least one log to fuse", "none");
  FusionResult result;
  std::vector<MarginalLog> data;
  for (const LogInformation& log : logs) {
    MarginalLog m;
    m.marginal = marginalizeTorqueOffsets(log.information, log.torque_offset_prior_std, &m.offsets);
    m.rows = whitenedRows(m.marginal);
    FusedLog fused;
    fused.source = log.source;
    fused.rows = m.marginal.rows;
    fused.data_rank = static_cast<int>(m.rows.rows());
    data.push_back(std::move(m));
    result.logs.push_back(fused);
  }
  // the cost of log i's data above its own minimum at the estimate l, per data direction
  const auto excessOf = [&](std::size_t i, const Eigen::VectorXd& l) {
    const Eigen::VectorXd r = data[i].rows.Phi * l - data[i].rows.y;
    return result.logs[i].data_rank > 0 ? r.squaredNorm() / result.logs[i].data_rank : 0.0;
  };
  const bool gate = options.outlier_gate > 0 && data.size() >= 3;
  Eigen::MatrixXd excess;
  if (gate || (options.drift_gate > 0 && data.size() >= 3))
    excess = pairwiseExcess(data, set, problem, map, excessOf);
  if (gate) gateOutliers(excess, options.outlier_gate, result.logs);
  result.drift = scanForDrift(data, result.logs, excess, options.drift_gate);

  std::vector<DataInformation> used;
  std::vector<std::string> sources;
  for (std::size_t i = 0; i < data.size(); ++i) {
    if (!result.logs[i].used) continue;
    used.push_back(data[i].marginal);
    sources.push_back(logs[i].source);
  }
  DataInformation sum = sumInformation(used, sources);
  const LinearSystem rows = whitenedRows(sum);
  result.dispersion = dispersionOf(data, result.logs);
  MapOptions options_of_fusion = map;
  if (options.scale_by_dispersion && result.dispersion.ratio > 1)
    options_of_fusion.covariance_data_scale = result.dispersion.scale = result.dispersion.ratio;
  MapResult fused_map = solveMap(rows, set, problem, options_of_fusion);
  fused_map.information = std::move(sum);  // the data as they are: to fuse further
  result.fused = resultOfMap(std::move(fused_map), rows, set, problem);

  const Eigen::VectorXd& l = result.fused.estimate;
  for (std::size_t i = 0; i < data.size(); ++i) {
    result.logs[i].excess = excessOf(i, l);
    const OffsetMap& o = data[i].offsets;
    if (o.joints.empty()) continue;
    const Eigen::VectorXd offsets = o.mean - o.gain * l;
    for (std::size_t k = 0; k < o.joints.size(); ++k)
      result.logs[i].offsets.emplace_back(o.joints[k], offsets[static_cast<Eigen::Index>(k)]);
  }
  informationShares(result.fused.base, data, result.logs);
  return result;
}

}  // namespace heft::identify
