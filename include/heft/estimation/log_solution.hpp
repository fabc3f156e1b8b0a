#pragma once
/// \file What a solved log problem says, in the log's own terms: the estimated trajectory as a log,
/// and its errors against a simulated log's truth next to the raw measurements'.
#include <optional>
#include <vector>

#include <Eigen/Core>

#include "heft/estimation/log_problem.hpp"
#include "heft/io/log.hpp"
#include "heft/model/model.hpp"
#include "heft/results/truth.hpp"

namespace heft::estimation {

/// The trajectory (xs, ws) at the knots of `lp` as a log: joints (q, v, and tau = logged torque +
/// the estimated generalized-force noise), the base pose and twist on a floating base, and the
/// contact flags each stage's dynamics used. `input` gives the metadata.
io::Log trajectoryLog(const model::RobotModel& robot, const io::Log& input, const LogProblem& lp,
                      const std::vector<Eigen::VectorXd>& xs,
                      const std::vector<Eigen::VectorXd>& ws);

/// RMSEs of the trajectory xs and of the raw measurements (the initial guess lp.xs: encoders,
/// motion capture, central differences) against the log's truth, at the knots whose time the
/// truth has (within a microsecond); nullopt when it has none.
std::optional<results::TrajectoryErrors> trajectoryErrors(const model::RobotModel& robot,
                                                          const io::Log& log, const LogProblem& lp,
                                                          const std::vector<Eigen::VectorXd>& xs);

}  // namespace heft::estimation
