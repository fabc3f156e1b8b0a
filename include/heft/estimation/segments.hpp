#pragma once
/// \file Several horizons that share theta (recordings of one robot, the pieces of a log around
/// excluded intervals) as one Problem for the parametrized Riccati solver.
///
/// Segment j has its own arrival prior on its first state, its stages and its terminal stage; theta
/// and its prior are common. The cost of the joined problem is the sum of the segments' costs with
/// the parameter prior counted once:
///   sum_j [ 0.5 |L_x^j (x^j_0 ⊖ xbar^j_0)|^2 + sum_k 0.5 |r^j_k|^2 + 0.5 |r^j_N(x^j_N)|^2 ]
///     + 0.5 |L_theta (theta - thetabar)|^2.
/// Between segments j and j+1 a join stage stands where segment j's terminal stage was: its
/// residual is that terminal stage's (the last knot's measurements) followed by the next
/// segment's arrival prior written on the decision, L_x^{j+1} w, and its dynamics start the next
/// segment afresh, x^{j+1}_0 = xbar^{j+1}_0 ⊕ w. The next state does not depend on x or theta
/// (F_x = 0, F_theta = 0), so the backward pass hands the next segment's information on theta,
/// and nothing else, back to this one: the theta Schur complement at the arrival node is the sum
/// of the segments' (docs/estimation.md, "Several segments").
#include <memory>
#include <vector>

#include <Eigen/Core>

#include "heft/estimation/problem.hpp"
#include "heft/estimation/stage.hpp"
#include "heft/estimation/state.hpp"

namespace heft::estimation {

/// The terminal stage of one segment followed by the arrival of the next (see the file comment).
/// nw = ndx, nr = the terminal stage's nr + ndx.
class SegmentJoinStage final : public StageModel {
 public:
  /// \param last the segment's terminal stage (no dynamics); \param next_mean and
  /// \param next_sqrt_info the next segment's arrival prior on its first state.
  /// \throws InputError on a null argument or dimensions that do not match.
  SegmentJoinStage(std::shared_ptr<const StateManifold> state,
                   std::shared_ptr<const StageModel> last, Eigen::VectorXd next_mean,
                   Eigen::MatrixXd next_sqrt_info);

  std::unique_ptr<StageData> createData() const override;
  std::unique_ptr<StageData> createDataSharing(StageWorkspace& workspace) const override;
  void calc(StageData& data, const Eigen::Ref<const Eigen::VectorXd>& x,
            const Eigen::Ref<const Eigen::VectorXd>& w,
            const Eigen::Ref<const Eigen::VectorXd>& theta) const override;
  void calcDiff(StageData& data, const Eigen::Ref<const Eigen::VectorXd>& x,
                const Eigen::Ref<const Eigen::VectorXd>& w,
                const Eigen::Ref<const Eigen::VectorXd>& theta) const override;

  const StageModel& last() const { return *last_; }
  const Eigen::VectorXd& nextMean() const { return next_mean_; }

 private:
  std::unique_ptr<StageData> makeData(std::unique_ptr<StageData> last_data) const;
  std::shared_ptr<const StateManifold> state_;
  std::shared_ptr<const StageModel> last_;
  Eigen::VectorXd next_mean_;
  Eigen::MatrixXd next_sqrt_info_;
};

/// Where each segment's knots and decisions sit in the joined problem: segment j's knots are
/// first_knot[j] .. first_knot[j] + horizon[j], its running stages the same indices but the last;
/// the join stage after it is running stage first_knot[j] + horizon[j].
struct SegmentLayout {
  std::vector<int> first_knot;
  std::vector<int> horizon;
  int size() const { return static_cast<int>(horizon.size()); }
};

struct JoinedProblem {
  std::shared_ptr<const Problem> problem;
  SegmentLayout layout;
};

/// Joins problems on one state manifold with the same theta (size and prior: the first one's is
/// used, the others' must be equal). One problem is returned as it is.
/// \throws InputError when they are empty, on different manifolds or disagree on theta's prior.
JoinedProblem joinProblems(const std::vector<std::shared_ptr<const Problem>>& segments);

/// The joined guess from the segments' guesses: states and decisions in order, each join stage's
/// decision the one that closes its gap (x^{j+1}_0 ⊖ xbar^{j+1}_0).
void joinGuesses(const JoinedProblem& joined, const std::vector<std::vector<Eigen::VectorXd>>& xs,
                 const std::vector<std::vector<Eigen::VectorXd>>& ws,
                 std::vector<Eigen::VectorXd>& xs_out, std::vector<Eigen::VectorXd>& ws_out);

/// Segment j's states and decisions cut out of the joined problem's.
std::vector<Eigen::VectorXd> segmentStates(const SegmentLayout& layout, int j,
                                           const std::vector<Eigen::VectorXd>& xs);
std::vector<Eigen::VectorXd> segmentDecisions(const SegmentLayout& layout, int j,
                                              const std::vector<Eigen::VectorXd>& ws);

}  // namespace heft::estimation
