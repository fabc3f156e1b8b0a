#include "heft/estimation/log_solution.hpp"

#include <algorithm>
#include <cmath>

#include <pinocchio/algorithm/frames.hpp>
#include <pinocchio/spatial.hpp>

#include "heft/common/error.hpp"
#include "heft/estimation/inverse_dynamics_stage.hpp"
#include "heft/io/signal.hpp"

namespace heft::estimation {
namespace {

// The generalized force a running stage of either formulation applied over its step: the logged
// one plus the estimated generalized-force noise (the forward stage's w_tau, the tail of w; the
// inverse stage's e, after w_q and a).
Eigen::VectorXd appliedTorque(const StageModel& stage, const Eigen::VectorXd& w, int nv) {
  if (const auto* forward = dynamic_cast<const MultibodyStageModel*>(&stage))
    return forward->measurement().tau + w.tail(nv);
  return dynamic_cast<const InverseDynamicsStageModel&>(stage).measurement().tau +
         w.segment(2 * nv, nv);
}

// The rigid contact set of a running stage of either formulation (null: none).
const dynamics::ContactDynamicsModel* contactOf(const StageModel& stage) {
  if (const auto* forward = dynamic_cast<const MultibodyStageModel*>(&stage))
    return forward->contact();
  return dynamic_cast<const InverseDynamicsStageModel&>(stage).contact();
}

}  // namespace

io::Log trajectoryLog(const model::RobotModel& robot, const io::Log& input, const LogProblem& lp,
                      const std::vector<Eigen::VectorXd>& xs,
                      const std::vector<Eigen::VectorXd>& ws) {
  const pinocchio::Model& pin = *lp.model;
  const bool floating = robot.hasFreeFlyer();
  const int N = static_cast<int>(lp.time.size()) - 1;
  const int nq = pin.nq;
  const auto& encoders = lp.sensors->encoders;
  const int nj = static_cast<int>(encoders.size());
  io::Log out;
  out.meta = input.meta;
  out.meta.noise_profile = "estimated by heft estimate from " + input.meta.noise_profile;
  io::JointSeries& j = out.joints;
  j.time = lp.time;
  for (pinocchio::JointIndex joint : encoders) j.names.push_back(pin.names[joint]);
  j.q.resize(N + 1, nj);
  j.v.resize(N + 1, nj);
  j.tau.resize(N + 1, nj);
  if (floating) {
    j.base_pose.resize(N + 1, 7);
    j.base_twist.resize(N + 1, 6);
  }
  for (int k = 0; k <= N; ++k) {
    const Eigen::VectorXd& x = xs[k];
    // the torque over [t_k, t_k + dt): the input plus the estimated generalized-force noise; the
    // last knot has no stage after it and keeps the previous one
    const int stage = std::min(k, N - 1);
    const Eigen::VectorXd tau = appliedTorque(lp.problem->running(stage), ws[stage], pin.nv);
    for (int i = 0; i < nj; ++i) {
      const auto& jm = pin.joints[encoders[i]];
      j.q(k, i) = x(jm.idx_q());
      j.v(k, i) = x(nq + jm.idx_v());
      j.tau(k, i) = tau(jm.idx_v());
    }
    if (floating) {
      j.base_pose.row(k) = x.head<7>().transpose();
      j.base_twist.row(k) = x.segment<6>(nq).transpose();
    }
  }
  // Contact flags of the knots: the contact set each stage's dynamics used.
  if (floating) {
    std::vector<std::string> names = robot.contactFrames();
    for (int k = 0; k < N; ++k) {
      const dynamics::ContactDynamicsModel* contact = contactOf(lp.problem->running(k));
      if (!contact) continue;
      for (const auto& spec : contact->contacts())
        if (std::find(names.begin(), names.end(), spec.frame) == names.end())
          names.push_back(spec.frame);
    }
    if (!names.empty()) {
      io::ContactSeries c;
      c.time = lp.time;
      c.names = names;
      c.flags = io::FlagMatrix::Zero(N + 1, names.size());
      for (int k = 0; k <= N; ++k) {
        const dynamics::ContactDynamicsModel* contact =
            contactOf(lp.problem->running(std::min(k, N - 1)));
        if (!contact) continue;
        for (const auto& spec : contact->contacts()) {
          const auto it = std::find(names.begin(), names.end(), spec.frame);
          c.flags(k, it - names.begin()) = 1;
        }
      }
      out.contacts = c;
    }
  }
  return out;
}

ContactForces reconstructContactForces(const LogProblem& lp, const std::vector<Eigen::VectorXd>& xs,
                                       const std::vector<Eigen::VectorXd>& ws,
                                       const Eigen::VectorXd& theta) {
  const int N = static_cast<int>(lp.time.size()) - 1;
  ContactForces out;
  // the points: the smoothed model's, else every point contact any stage's contact set holds
  if (lp.smoothed) {
    for (const auto& p : lp.smoothed->points()) {
      out.names.push_back(p.name);
      out.frames.push_back(p.frame);
      out.offsets.push_back(p.offset);
    }
  } else {
    for (int k = 0; k < N; ++k) {
      const dynamics::ContactDynamicsModel* contact = contactOf(lp.problem->running(k));
      if (!contact) continue;
      for (const auto& spec : contact->contacts())
        if (std::find(out.names.begin(), out.names.end(), spec.frame) == out.names.end()) {
          out.names.push_back(spec.frame);
          out.frames.push_back(spec.frame);
          out.offsets.push_back(Eigen::Vector3d::Zero());
        }
    }
  }
  const int P = static_cast<int>(out.names.size());
  out.force.setZero(N + 1, 3 * P);
  out.moment.setZero(N + 1, 3 * P);
  // each stage's own calc at the solution: the forces its dynamics applied over the step
  StageWorkspace workspace;
  const pinocchio::Model& model = *lp.model;
  pinocchio::Data kinematics(model);
  for (int k = 0; k < N; ++k) {
    const auto* forward = dynamic_cast<const MultibodyStageModel*>(&lp.problem->running(k));
    if (!forward) {  // inverse dynamics: the forces are decisions, in their frames' axes
      const auto& inverse = dynamic_cast<const InverseDynamicsStageModel&>(lp.problem->running(k));
      if (!inverse.contact()) continue;
      pinocchio::framesForwardKinematics(model, kinematics, xs[k].head(model.nq));
      int col = 3 * model.nv;
      for (const auto& spec : inverse.contact()->contacts()) {
        const auto i =
            std::find(out.names.begin(), out.names.end(), spec.frame) - out.names.begin();
        const Eigen::Matrix3d R = kinematics.oMf[model.getFrameId(spec.frame)].rotation();
        out.force.row(k).segment<3>(3 * i) = (R * ws[k].segment<3>(col)).transpose();
        if (spec.dimension() == 6)
          out.moment.row(k).segment<3>(3 * i) = (R * ws[k].segment<3>(col + 3)).transpose();
        col += spec.dimension();
      }
      continue;
    }
    const MultibodyStageModel& stage = *forward;
    const auto data = stage.createDataSharing(workspace);
    stage.calc(*data, xs[k], ws[k], theta);
    const auto& d = static_cast<const MultibodyStageData&>(*data);
    if (d.smoothed) {
      if (!d.smoothed->summary.converged()) ++out.unconverged;
      out.force.row(k) = d.smoothed->force.transpose();
      continue;
    }
    if (!stage.contact()) continue;
    int row = 0;  // lambda: the contacts' rows in order, world axes (LOCAL_WORLD_ALIGNED)
    for (const auto& spec : stage.contact()->contacts()) {
      const auto i = std::find(out.names.begin(), out.names.end(), spec.frame) - out.names.begin();
      out.force.row(k).segment<3>(3 * i) = d.contact->lambda.segment<3>(row).transpose();
      if (spec.dimension() == 6)
        out.moment.row(k).segment<3>(3 * i) = d.contact->lambda.segment<3>(row + 3).transpose();
      row += spec.dimension();
    }
  }
  if (N > 0) {
    out.force.row(N) = out.force.row(N - 1);
    out.moment.row(N) = out.moment.row(N - 1);
  }
  return out;
}

ContactForces forcesPerFrame(const LogProblem& lp, const std::vector<Eigen::VectorXd>& xs,
                             const ContactForces& forces) {
  const pinocchio::Model& pin = *lp.model;
  ContactForces out;
  out.unconverged = forces.unconverged;
  std::vector<int> frame_of;  // each point's index in out
  for (const std::string& frame : forces.frames) {
    auto it = std::find(out.frames.begin(), out.frames.end(), frame);
    if (it == out.frames.end()) {
      out.names.push_back(frame);
      out.frames.push_back(frame);
      out.offsets.push_back(Eigen::Vector3d::Zero());
      it = out.frames.end() - 1;
    }
    frame_of.push_back(static_cast<int>(it - out.frames.begin()));
  }
  const int K = static_cast<int>(forces.force.rows()), F = static_cast<int>(out.frames.size());
  out.force.setZero(K, 3 * F);
  out.moment.setZero(K, 3 * F);
  std::vector<pinocchio::FrameIndex> frame_ids;
  for (const std::string& frame : forces.frames) frame_ids.push_back(pin.getFrameId(frame));
  pinocchio::Data data(pin);
  for (int k = 0; k < K; ++k) {
    pinocchio::framesForwardKinematics(pin, data, xs[k].head(pin.nq));
    for (std::size_t i = 0; i < frame_of.size(); ++i) {
      const pinocchio::SE3& oMf = data.oMf[frame_ids[i]];
      const Eigen::Vector3d f = forces.force.row(k).segment<3>(3 * i).transpose();
      const Eigen::Vector3d r = oMf.rotation() * forces.offsets[i];  // point from the origin
      const int j = frame_of[i];
      out.force.row(k).segment<3>(3 * j) += f.transpose();
      out.moment.row(k).segment<3>(3 * j) +=
          (forces.moment.row(k).segment<3>(3 * i).transpose() + r.cross(f)).transpose();
    }
  }
  return out;
}

void addContactForces(io::Log& log, const LogProblem& lp, const std::vector<Eigen::VectorXd>& xs,
                      const ContactForces& forces, double threshold) {
  const pinocchio::Model& pin = *lp.model;
  const int K = static_cast<int>(forces.force.rows()), P = static_cast<int>(forces.names.size());
  io::ForceTorqueSeries ft;
  ft.time = lp.time;
  ft.names = forces.names;
  ft.frames = forces.frames;
  ft.wrench.setZero(K, 6 * P);
  io::ContactSeries contacts;
  contacts.time = lp.time;
  contacts.names = forces.names;
  contacts.frames = forces.frames;
  contacts.offsets.resize(P, 3);
  for (int i = 0; i < P; ++i) contacts.offsets.row(i) = forces.offsets[i].transpose();
  contacts.flags = io::FlagMatrix::Zero(K, P);
  std::vector<pinocchio::FrameIndex> frame_ids;
  for (const std::string& frame : forces.frames) frame_ids.push_back(pin.getFrameId(frame));
  pinocchio::Data data(pin);
  for (int k = 0; k < K; ++k) {
    pinocchio::framesForwardKinematics(pin, data, xs[k].head(pin.nq));
    for (int i = 0; i < P; ++i) {
      const Eigen::Vector3d f_world = forces.force.row(k).segment<3>(3 * i).transpose();
      const Eigen::Matrix3d R = data.oMf[frame_ids[i]].rotation();
      const Eigen::Vector3d f = R.transpose() * f_world;
      const Eigen::Vector3d m = R.transpose() * forces.moment.row(k).segment<3>(3 * i).transpose();
      ft.wrench.row(k).segment<3>(6 * i) = f.transpose();
      ft.wrench.row(k).segment<3>(6 * i + 3) = (m + forces.offsets[i].cross(f)).transpose();
      contacts.flags(k, i) = f_world.z() > threshold;
    }
  }
  log.force_torque = ft;
  if (lp.smoothed) log.contacts = contacts;  // else the stages' contact sets stay the flags
}

std::optional<results::TrajectoryErrors> trajectoryErrors(const model::RobotModel& robot,
                                                          const io::Log& log, const LogProblem& lp,
                                                          const std::vector<Eigen::VectorXd>& xs) {
  if (!log.truth || log.truth->time.size() == 0 || log.truth->q.size() == 0) return std::nullopt;
  const io::TruthSeries& truth = *log.truth;
  const pinocchio::Model& pin = *lp.model;
  const bool floating = robot.hasFreeFlyer();
  if (floating && truth.base_pose.rows() != truth.time.size()) return std::nullopt;
  const auto& encoders = lp.sensors->encoders;
  std::vector<int> column;  // truth column of each encoder
  for (pinocchio::JointIndex joint : encoders) {
    const auto it = std::find(log.joints.names.begin(), log.joints.names.end(), pin.names[joint]);
    if (it == log.joints.names.end()) return std::nullopt;
    column.push_back(static_cast<int>(it - log.joints.names.begin()));
  }
  const int nq = pin.nq;
  results::TrajectoryErrors e;
  e.has_base = floating;
  double q_est = 0, q_raw = 0, v_est = 0, v_raw = 0, p_est = 0, p_raw = 0, r_est = 0, r_raw = 0;
  int knots = 0;
  for (int k = 0; k < lp.time.size(); ++k) {
    const int i = io::nearestSample(truth.time, lp.time(k));
    if (std::abs(truth.time(i) - lp.time(k)) > 1e-6) continue;
    ++knots;
    const Eigen::VectorXd& x = xs[k];
    const Eigen::VectorXd& x0 = lp.xs[k];  // the initial guess: raw measurements
    for (std::size_t j = 0; j < encoders.size(); ++j) {
      const auto& jm = pin.joints[encoders[j]];
      const double qt = truth.q(i, column[j]), vt = truth.v(i, column[j]);
      q_est += std::pow(x(jm.idx_q()) - qt, 2);
      q_raw += std::pow(log.joints.q(lp.samples[k], column[j]) - qt, 2);
      v_est += std::pow(x(nq + jm.idx_v()) - vt, 2);
      v_raw += std::pow(x0(nq + jm.idx_v()) - vt, 2);
    }
    if (floating) {
      const Eigen::Vector3d pt = truth.base_pose.row(i).head<3>().transpose();
      const Eigen::Quaterniond rt(truth.base_pose(i, 6), truth.base_pose(i, 3),
                                  truth.base_pose(i, 4), truth.base_pose(i, 5));
      auto angle = [&](const Eigen::VectorXd& xx) {
        const Eigen::Quaterniond r(xx(6), xx(3), xx(4), xx(5));
        return rt.normalized().angularDistance(r.normalized());
      };
      p_est += (x.head<3>() - pt).squaredNorm();
      p_raw += (x0.head<3>() - pt).squaredNorm();
      r_est += std::pow(angle(x), 2);
      r_raw += std::pow(angle(x0), 2);
    }
  }
  if (knots == 0) return std::nullopt;
  const double nj = static_cast<double>(std::max<std::size_t>(1, encoders.size()));
  e.joint_position = std::sqrt(q_est / (knots * nj));
  e.joint_position_raw = std::sqrt(q_raw / (knots * nj));
  e.joint_velocity = std::sqrt(v_est / (knots * nj));
  e.joint_velocity_raw = std::sqrt(v_raw / (knots * nj));
  e.base_position = std::sqrt(p_est / knots);
  e.base_position_raw = std::sqrt(p_raw / knots);
  e.base_rotation = std::sqrt(r_est / knots);
  e.base_rotation_raw = std::sqrt(r_raw / knots);
  return e;
}

}  // namespace heft::estimation
