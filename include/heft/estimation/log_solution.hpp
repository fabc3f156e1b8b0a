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

/// The contact forces of a solution, as its stages' dynamics applied them over each step (each
/// running stage's calc at (x_k, w_k, theta)): contact-implicit (lp.smoothed), the smoothed step's
/// force on every point; with contact phases, the rigid contacts' lambda on every contact frame
/// (a point foot's force; a flat foot's whole wrench at its frame, not split into its corners),
/// zero while out of the stage's contact set, the force after a touchdown's impulse (not the
/// impulse).
struct ContactForces {
  std::vector<std::string> names, frames;  ///< the contact points and their frames
  std::vector<Eigen::Vector3d> offsets;    ///< each point in its frame [m]
  /// (N + 1) x 3P: (f_x, f_y, f_z) per point, world axes [N], at lp.time; the last knot repeats
  /// the last step's (no step after it), as the trajectory's torque does
  Eigen::MatrixXd force;
  /// (N + 1) x 3P: the moment about each point, world axes [N m]: a flat foot's (contact
  /// phases), zero for points
  Eigen::MatrixXd moment;
  int unconverged = 0;  ///< smoothed steps whose Newton solve did not converge (last iterate used)
};
ContactForces reconstructContactForces(const LogProblem& lp, const std::vector<Eigen::VectorXd>& xs,
                                       const std::vector<Eigen::VectorXd>& ws,
                                       const Eigen::VectorXd& theta);

/// The same forces per contact frame: the points on one frame (a sole's corners) summed into one
/// force and its moment about the frame's origin (world axes), at the knots' configurations xs;
/// named after the frame, offset zero. What a 6D contact's lambda is, so that contact-implicit
/// corners and a fixed schedule's flat feet compare on the same footing.
ContactForces forcesPerFrame(const LogProblem& lp, const std::vector<Eigen::VectorXd>& xs,
                             const ContactForces& forces);

/// Writes `forces` into `log` as what a force sensor at each point would read: the force_torque
/// group (one sensor per point, named after it, in its frame: the wrench about the frame's origin
/// in the frame's axes, at the knots' configurations xs) and, contact-implicit, the contacts group
/// (a point is in contact while its normal force exceeds `threshold` [N]; with contact phases the
/// group keeps the sets the stages used).
void addContactForces(io::Log& log, const LogProblem& lp, const std::vector<Eigen::VectorXd>& xs,
                      const ContactForces& forces, double threshold);

/// RMSEs of the trajectory xs and of the raw measurements (the initial guess lp.xs: encoders,
/// motion capture, central differences) against the log's truth, at the knots whose time the
/// truth has (within a microsecond); nullopt when it has none.
std::optional<results::TrajectoryErrors> trajectoryErrors(const model::RobotModel& robot,
                                                          const io::Log& log, const LogProblem& lp,
                                                          const std::vector<Eigen::VectorXd>& xs);

}  // namespace heft::estimation
