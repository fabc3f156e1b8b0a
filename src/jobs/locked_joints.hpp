#pragma once
// Logs that do not hold every joint: the robot a job computes with has the config's locked joints
// removed (model::lockJoints) and the log loses their columns. Every job reads `locked_joints`.
#include <functional>
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

// A job's recordings (its `log`, one path or a list), read in order, each through robotForLog.
struct JobLogs {
  model::RobotModel robot;  ///< with the locked joints removed
  std::vector<io::Log> logs;
  std::vector<const io::Log*> pointers() const;
};
JobLogs readJobLogs(const std::string& robot, model::BaseType base,
                    const std::vector<model::LockedJoint>& locked,
                    const std::vector<std::string>& paths, const std::string& source,
                    const std::function<void(const std::string&)>& say);

}  // namespace heft::jobs
