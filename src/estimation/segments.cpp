#include "heft/estimation/segments.hpp"

#include <string>
#include <utility>

#include "heft/common/error.hpp"

namespace heft::estimation {

namespace {

struct SegmentJoinData final : StageData {
  SegmentJoinData(const StageModel& model, std::unique_ptr<StageData> last_data)
      : StageData(model.nx(), model.ndx(), model.nw(), model.nr(), model.np(), true),
        last(std::move(last_data)),
        J_mean(Eigen::MatrixXd::Zero(model.ndx(), model.ndx())) {}
  std::unique_ptr<StageData> last;  ///< the wrapped terminal stage's data
  Eigen::VectorXd no_decision;      ///< the terminal stage's (empty) w
  Eigen::MatrixXd J_mean;           ///< d (xbar ⊕ w) / d xbar, unused
};

}  // namespace

SegmentJoinStage::SegmentJoinStage(std::shared_ptr<const StateManifold> state,
                                   std::shared_ptr<const StageModel> last,
                                   Eigen::VectorXd next_mean, Eigen::MatrixXd next_sqrt_info)
    : StageModel(last ? last->nx() : 1, last ? last->ndx() : 1, last ? last->ndx() : 1,
                 (last ? last->nr() + last->ndx() : 0), last ? last->np() : 0, true),
      state_(std::move(state)),
      last_(std::move(last)),
      next_mean_(std::move(next_mean)),
      next_sqrt_info_(std::move(next_sqrt_info)) {
  require(state_ != nullptr && last_ != nullptr, "segment join", "a state and a terminal stage",
          "null");
  require(!last_->hasDynamics(), "segment join: the segment's last stage", "a terminal stage",
          "a running stage");
  require(state_->nx() == nx() && state_->ndx() == ndx(), "segment join state",
          "the stage's nx, ndx", std::to_string(state_->nx()) + ", " + std::to_string(ndx()));
  require(next_mean_.size() == nx(), "segment join: next arrival mean", std::to_string(nx()),
          std::to_string(next_mean_.size()));
  require(next_sqrt_info_.rows() == ndx() && next_sqrt_info_.cols() == ndx(),
          "segment join: next arrival sqrt-information", "square of the tangent dimension",
          std::to_string(next_sqrt_info_.rows()) + " x " + std::to_string(next_sqrt_info_.cols()));
}

std::unique_ptr<StageData> SegmentJoinStage::makeData(std::unique_ptr<StageData> last_data) const {
  auto d = std::make_unique<SegmentJoinData>(*this, std::move(last_data));
  // the constant blocks: the next state depends on w only, the prior rows on w only
  d->R_w.bottomRows(ndx()) = next_sqrt_info_;
  return d;
}

std::unique_ptr<StageData> SegmentJoinStage::createData() const {
  return makeData(last_->createData());
}

std::unique_ptr<StageData> SegmentJoinStage::createDataSharing(StageWorkspace& workspace) const {
  return makeData(last_->createDataSharing(workspace));
}

void SegmentJoinStage::calc(StageData& data, const Eigen::Ref<const Eigen::VectorXd>& x,
                            const Eigen::Ref<const Eigen::VectorXd>& w,
                            const Eigen::Ref<const Eigen::VectorXd>& theta) const {
  auto& d = static_cast<SegmentJoinData&>(data);
  const int nl = last_->nr();
  last_->calc(*d.last, x, d.no_decision, theta);
  d.r.head(nl) = d.last->r;
  d.r.tail(ndx()).noalias() = next_sqrt_info_ * w;
  d.cost = 0.5 * d.r.squaredNorm();
  state_->integrate(next_mean_, w, d.xnext);
}

void SegmentJoinStage::calcDiff(StageData& data, const Eigen::Ref<const Eigen::VectorXd>& x,
                                const Eigen::Ref<const Eigen::VectorXd>& w,
                                const Eigen::Ref<const Eigen::VectorXd>& theta) const {
  auto& d = static_cast<SegmentJoinData&>(data);
  const int nl = last_->nr();
  last_->calcDiff(*d.last, x, d.no_decision, theta);
  d.R_x.topRows(nl) = d.last->R_x;
  d.R_theta.topRows(nl) = d.last->R_theta;
  // R_w's prior rows, F_x = 0 and F_theta = 0 are constant (set at creation)
  state_->integrateJacobians(next_mean_, w, d.J_mean, d.F_w);
}

// ---- joining ------------------------------------------------------------------------------------

JoinedProblem joinProblems(const std::vector<std::shared_ptr<const Problem>>& segments) {
  require(!segments.empty(), "segments", "at least one problem", "none");
  JoinedProblem joined;
  const Problem& first = *segments.front();
  if (segments.size() == 1) {
    joined.problem = segments.front();
    joined.layout.first_knot = {0};
    joined.layout.horizon = {first.horizon()};
    return joined;
  }
  std::shared_ptr<const StateManifold> state(segments.front(), &first.state());
  std::vector<std::shared_ptr<const StageModel>> running;
  for (std::size_t j = 0; j < segments.size(); ++j) {
    const Problem& s = *segments[j];
    const std::string name = "segment " + std::to_string(j + 1);
    require(s.nx() == first.nx() && s.ndx() == first.ndx() && s.np() == first.np(),
            name + " dimensions (nx, ndx, np)", "the first segment's", "others");
    require(s.arrival().theta_mean == first.arrival().theta_mean &&
                s.arrival().theta_sqrt_info == first.arrival().theta_sqrt_info,
            name + " parameter prior", "the first segment's (theta is shared)", "another");
    joined.layout.first_knot.push_back(static_cast<int>(running.size()));
    joined.layout.horizon.push_back(s.horizon());
    // the stages are shared, not copied: aliasing shared_ptrs that keep the segment alive
    for (int k = 0; k < s.horizon(); ++k) running.emplace_back(segments[j], &s.running(k));
    if (j + 1 < segments.size()) {
      const ArrivalPrior& next = segments[j + 1]->arrival();
      running.push_back(std::make_shared<SegmentJoinStage>(
          state, std::shared_ptr<const StageModel>(segments[j], &s.terminal()), next.x_mean,
          next.x_sqrt_info));
    }
  }
  const Problem& last = *segments.back();
  auto problem = std::make_shared<Problem>(
      state, std::move(running),
      std::shared_ptr<const StageModel>(segments.back(), &last.terminal()), first.arrival());
  problem->setParameterConstraints(first.parameterConstraints());  // on the shared theta
  joined.problem = problem;
  return joined;
}

void joinGuesses(const JoinedProblem& joined, const std::vector<std::vector<Eigen::VectorXd>>& xs,
                 const std::vector<std::vector<Eigen::VectorXd>>& ws,
                 std::vector<Eigen::VectorXd>& xs_out, std::vector<Eigen::VectorXd>& ws_out) {
  const SegmentLayout& layout = joined.layout;
  require(
      static_cast<int>(xs.size()) == layout.size() && static_cast<int>(ws.size()) == layout.size(),
      "segment guesses", std::to_string(layout.size()) + " segments",
      std::to_string(xs.size()) + " and " + std::to_string(ws.size()));
  xs_out.clear();
  ws_out.clear();
  const Problem& p = *joined.problem;
  for (int j = 0; j < layout.size(); ++j) {
    require(static_cast<int>(xs[j].size()) == layout.horizon[j] + 1 &&
                static_cast<int>(ws[j].size()) == layout.horizon[j],
            "segment " + std::to_string(j + 1) + " guess", "N + 1 states and N decisions",
            std::to_string(xs[j].size()) + " and " + std::to_string(ws[j].size()));
    xs_out.insert(xs_out.end(), xs[j].begin(), xs[j].end());
    ws_out.insert(ws_out.end(), ws[j].begin(), ws[j].end());
    if (j + 1 < layout.size()) {
      const auto& join =
          static_cast<const SegmentJoinStage&>(p.running(layout.first_knot[j] + layout.horizon[j]));
      // the next segment's first guess as the join's decision: no gap at the join
      Eigen::VectorXd w(p.ndx());
      p.state().difference(join.nextMean(), xs[j + 1].front(), w);
      ws_out.push_back(w);
    }
  }
}

std::vector<Eigen::VectorXd> segmentStates(const SegmentLayout& layout, int j,
                                           const std::vector<Eigen::VectorXd>& xs) {
  const auto begin = xs.begin() + layout.first_knot[j];
  return {begin, begin + layout.horizon[j] + 1};
}

std::vector<Eigen::VectorXd> segmentDecisions(const SegmentLayout& layout, int j,
                                              const std::vector<Eigen::VectorXd>& ws) {
  const auto begin = ws.begin() + layout.first_knot[j];
  return {begin, begin + layout.horizon[j]};
}

}  // namespace heft::estimation
