#pragma once
// Logs that do not hold every joint: the robot a job computes with has the config's locked joints
// removed (model::lockJoints) and the log loses their columns. Every job reads `locked_joints`.
#include <string>
#include <vector>

#include "heft/io/log.hpp"
#include "heft/model/model.hpp"

namespace heft::jobs {

// `robot` with `locked` removed; `log` without their columns and without truth bodies the reduced
// model lacks. A 1-DoF joint of the model that the log lacks and `locked` does not hold is bad
// input: the error names the joints and the config key that locks them.
model::RobotModel robotForLog(const model::RobotModel& robot,
                              const std::vector<model::LockedJoint>& locked, io::Log& log,
                              const std::string& source);

}  // namespace heft::jobs
