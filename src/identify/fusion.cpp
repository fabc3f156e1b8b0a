#include "heft/identify/fusion.hpp"

#include <algorithm>
#include <cmath>

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

// Outlier gate: how well each log's data are explained by the other logs' own estimates (the
// median over them: robust while most logs are of this robot); a log far above the logs' typical
// value is left out. Pairwise, because a fusion that includes an outlier explains the good logs
// badly too.
template <typename ExcessOf>
void gateOutliers(const std::vector<MarginalLog>& data, const model::IdentifiedSet& set,
                  const ProblemOptions& problem, const MapOptions& map, double gate,
                  const ExcessOf& excessOf, std::vector<FusedLog>& logs) {
  std::vector<Eigen::VectorXd> own(data.size());
  for (std::size_t i = 0; i < data.size(); ++i)
    own[i] = solveMap(data[i].rows, set, problem, map).linear;
  std::vector<double> scores;
  for (std::size_t j = 0; j < data.size(); ++j) {
    std::vector<double> e;
    for (std::size_t i = 0; i < data.size(); ++i)
      if (i != j) e.push_back(excessOf(j, own[i]));
    logs[j].excess_others = median(e);
    scores.push_back(logs[j].excess_others);
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

}  // namespace

void FusionOptions::validate() const {
  require(std::isfinite(outlier_gate) && outlier_gate >= 0, "outlier_gate",
          "a finite value >= 0 (0: keep every log)", formatNumber(outlier_gate, 6));
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
  if (options.outlier_gate > 0 && data.size() >= 3)
    gateOutliers(data, set, problem, map, options.outlier_gate, excessOf, result.logs);

  std::vector<DataInformation> used;
  std::vector<std::string> sources;
  for (std::size_t i = 0; i < data.size(); ++i) {
    if (!result.logs[i].used) continue;
    used.push_back(data[i].marginal);
    sources.push_back(logs[i].source);
  }
  DataInformation sum = sumInformation(used, sources);
  const LinearSystem rows = whitenedRows(sum);
  MapResult fused_map = solveMap(rows, set, problem, map);
  fused_map.information = std::move(sum);
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
