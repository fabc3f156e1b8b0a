#include "locked_joints.hpp"

#include <algorithm>
#include <optional>

#include "heft/common/error.hpp"
#include "heft/io/joint_binding.hpp"
#include "heft/io/log_io.hpp"

namespace heft::jobs {

model::RobotModel robotForLog(const model::RobotModel& full,
                              const std::vector<model::LockedJoint>& locked, io::Log& log,
                              const std::string& source) {
  model::RobotModel robot = full;
  try {
    robot = model::lockJoints(full, locked);
  } catch (const InputError& e) {
    throw InputError(source + ": " + e.what());
  }
  std::vector<std::string> names;
  for (const model::LockedJoint& l : locked) names.push_back(l.name);
  io::dropJointColumns(log, names);
  if (log.joints.empty()) return robot;

  const pinocchio::Model& model = robot.pinocchio();
  // a log joint the model lacks: another robot's log, which validateLog names; not a partial log
  for (const std::string& name : log.joints.names)
    if (!model.existJointName(name)) return robot;
  std::string missing, yaml;
  const std::vector<pinocchio::JointIndex> passive = model::loopJoints(robot);  // may be unlogged
  for (pinocchio::JointIndex j = 1; j < model.joints.size(); ++j) {
    if (model.joints[j].nv() != 1) continue;
    if (std::find(passive.begin(), passive.end(), j) != passive.end()) continue;
    const std::string& name = model.names[j];
    if (std::find(log.joints.names.begin(), log.joints.names.end(), name) != log.joints.names.end())
      continue;
    missing += (missing.empty() ? "" : ", ") + name;
    yaml += (yaml.empty() ? "" : ", ") + name + ": <position>";
  }
  if (!missing.empty())
    throw InputError(source + ": the log has no column for joint(s) " + missing + " of " +
                     robot.displayName() + ": lock them where they were with locked_joints: {" +
                     yaml + "}");

  if (log.truth && !log.truth->body_names.empty()) {
    std::vector<std::string> bodies;
    std::vector<int> rows;
    for (size_t b = 0; b < log.truth->body_names.size(); ++b) {
      try {
        robot.bodyIndex(log.truth->body_names[b]);
      } catch (const InputError&) {
        continue;  // a body of a locked joint: lumped into its parent now
      }
      bodies.push_back(log.truth->body_names[b]);
      rows.push_back(static_cast<int>(b));
    }
    if (bodies.size() < log.truth->body_names.size()) {
      Eigen::MatrixXd pi(static_cast<Eigen::Index>(rows.size()), 10);
      for (size_t i = 0; i < rows.size(); ++i)
        pi.row(static_cast<Eigen::Index>(i)) = log.truth->body_pi.row(rows[i]);
      log.truth->body_names = bodies;
      log.truth->body_pi = pi;
    }
  }
  return robot;
}

std::vector<const io::Log*> JobLogs::pointers() const {
  std::vector<const io::Log*> out;
  for (const io::Log& log : logs) out.push_back(&log);
  return out;
}

JobLogs readJobLogs(const std::string& robot, model::BaseType base,
                    const std::vector<model::LockedJoint>& locked,
                    const std::vector<std::string>& paths, const std::string& source,
                    const std::function<void(const std::string&)>& say) {
  model::LoadOptions load;
  load.base = base;
  const model::RobotModel full = model::loadRobot(robot, load);
  std::vector<io::Log> logs(paths.size());
  std::optional<model::RobotModel> reduced;
  for (std::size_t i = 0; i < paths.size(); ++i) {
    say("reading " + paths[i]);
    logs[i] = io::readLog(paths[i]);
    model::RobotModel r = robotForLog(full, locked, logs[i], source);
    if (!reduced) reduced = std::move(r);
  }
  say("robot " + reduced->displayName());
  return {std::move(*reduced), std::move(logs)};
}

}  // namespace heft::jobs
