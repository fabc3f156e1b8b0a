#include "heft/filter/measurement.hpp"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <string>

#include <pinocchio/algorithm/jacobian.hpp>
#include <pinocchio/algorithm/joint-configuration.hpp>
#include <pinocchio/algorithm/regressor.hpp>
#include <pinocchio/algorithm/rnea.hpp>

#include "heft/common/error.hpp"
#include "heft/model/model.hpp"

namespace heft::filter {
namespace {

bool supports(const pinocchio::Model& model, pinocchio::JointIndex ancestor,
              pinocchio::JointIndex body) {
  const auto& chain = model.supports[body];
  return std::find(chain.begin(), chain.end(), ancestor) != chain.end();
}

// Motion subspace of every joint in its own frame at configuration q (6 x nv).
Eigen::Matrix<double, 6, Eigen::Dynamic> localSubspaces(const pinocchio::Model& model,
                                                        const Eigen::VectorXd& q) {
  pinocchio::Data data(model);
  pinocchio::computeJointJacobians(model, data, q);
  Eigen::Matrix<double, 6, Eigen::Dynamic> out(6, model.nv);
  Eigen::Matrix<double, 6, Eigen::Dynamic> J(6, model.nv);
  for (pinocchio::JointIndex i = 1; i < static_cast<pinocchio::JointIndex>(model.njoints); ++i) {
    J.setZero();
    pinocchio::getJointJacobian(model, data, i, pinocchio::LOCAL, J);
    out.middleCols(model.idx_vs[i], model.nvs[i]) = J.middleCols(model.idx_vs[i], model.nvs[i]);
  }
  return out;
}

}  // namespace

MeasurementModel::MeasurementModel(const pinocchio::Model& model,
                                   const std::vector<pinocchio::JointIndex>& bodies,
                                   const std::vector<ContactPoint>& contacts,
                                   const ExternalInputs& inputs)
    : full_(model),
      rest_(model),
      bodies_(bodies),
      contacts_(contacts),
      wrench_frames_(inputs.wrench_frames),
      stance_frames_(inputs.stance_frames) {
  require(!bodies_.empty(), "estimated bodies", "at least one", "none");
  for (std::size_t k = 0; k < bodies_.size(); ++k) {
    const auto j = bodies_[k];
    require(j >= 1 && j < static_cast<pinocchio::JointIndex>(model.njoints),
            "estimated body joint index", "in [1, " + std::to_string(model.njoints - 1) + "]",
            std::to_string(j));
    require(std::count(bodies_.begin(), bodies_.end(), j) == 1, "estimated bodies",
            "each body once", "joint " + model.names[j] + " twice");
    rest_.inertias[j] = pinocchio::Inertia::Zero();
  }
  base_rows_ = model::isFreeFlyer(model, 1) ? 6 : 0;

  // a frame of the model on a moving body: its joint
  auto frameJoint = [&](const std::string& frame, const std::string& field) {
    require(model.existFrame(frame), field, "a frame of the model", "\"" + frame + "\"");
    const pinocchio::Frame& f = model.frames[model.getFrameId(frame)];
    require(f.parentJoint > 0, field, "a frame on a moving body",
            "\"" + frame + "\" is fixed to the world");
    return f.parentJoint;
  };
  for (const auto& frame : wrench_frames_)
    wrench_joint_.push_back(frameJoint(frame, "wrench frame " + frame));
  for (const auto& stance : stance_frames_)
    stance_joint_.push_back(frameJoint(stance.frame, "stance frame " + stance.frame));

  // rows: every degree of freedom of a joint supporting some estimated body, and with stance
  // frames, every joint supporting one of them
  std::vector<pinocchio::JointIndex> joints;
  std::vector<pinocchio::JointIndex> tips(bodies_.begin(), bodies_.end());
  tips.insert(tips.end(), stance_joint_.begin(), stance_joint_.end());
  for (const auto j : tips) {
    for (const auto i : model.supports[j]) {
      if (i > 0 && std::find(joints.begin(), joints.end(), i) == joints.end()) joints.push_back(i);
    }
  }
  std::sort(joints.begin(), joints.end(),
            [&](auto a, auto b) { return model.idx_vs[a] < model.idx_vs[b]; });
  for (const auto i : joints) {
    for (int d = 0; d < model.nvs[i]; ++d) {
      rows_.push_back(model.idx_vs[i] + d);
      row_joint_.push_back(i);
    }
  }

  // the local motion subspace must not depend on q (it is read once, here)
  const Eigen::VectorXd q0 = pinocchio::neutral(model);
  Eigen::VectorXd step(model.nv);
  for (int k = 0; k < model.nv; ++k) step[k] = 0.6 * std::sin(1.0 + 1.7 * k);
  const Eigen::VectorXd q1 = pinocchio::integrate(model, q0, step);
  const auto s0 = localSubspaces(model, q0), s1 = localSubspaces(model, q1);
  const int m = numRows();
  row_subspace_.resize(6, m);
  for (int r = 0; r < m; ++r) {
    require((s0.col(rows_[r]) - s1.col(rows_[r])).norm() < 1e-12,
            "joint " + model.names[row_joint_[r]],
            "a motion subspace constant in the joint frame (revolute, prismatic, free-flyer, ...)",
            "type " + model.joints[row_joint_[r]].shortname());
    row_subspace_.col(r) = s0.col(rows_[r]);
  }
  row_sees_body_.resize(m, numBodies());
  for (int r = 0; r < m; ++r) {
    for (int k = 0; k < numBodies(); ++k) {
      row_sees_body_(r, k) = supports(model, row_joint_[r], bodies_[k]);
    }
  }

  row_sees_contact_.resize(m, numContacts());
  contact_point_.resize(3, numContacts());
  for (int c = 0; c < numContacts(); ++c) {
    const ContactPoint& point = contacts_[c];
    require(model.existFrame(point.frame), "contact " + point.name + " frame",
            "a frame of the model", "\"" + point.frame + "\"");
    require(point.offset.allFinite(), "contact " + point.name + " offset", "finite values",
            "NaN or Inf");
    const pinocchio::Frame& frame = model.frames[model.getFrameId(point.frame)];
    require(frame.parentJoint > 0, "contact " + point.name + " frame", "a frame on a moving body",
            "\"" + point.frame + "\" is fixed to the world");
    contact_joint_.push_back(frame.parentJoint);
    contact_point_.col(c) = frame.placement.act(point.offset);
    for (int r = 0; r < m; ++r) {
      row_sees_contact_(r, c) = supports(model, row_joint_[r], frame.parentJoint);
    }
  }
  row_sees_wrench_.resize(m, numWrenchFrames());
  for (int w = 0; w < numWrenchFrames(); ++w) {
    wrench_placement_.push_back(model.frames[model.getFrameId(wrench_frames_[w])].placement);
    for (int r = 0; r < m; ++r)
      row_sees_wrench_(r, w) = supports(model, row_joint_[r], wrench_joint_[w]);
  }
  row_sees_stance_.resize(m, numStanceFrames());
  stance_point_.resize(3, numStanceFrames());
  for (int f = 0; f < numStanceFrames(); ++f) {
    const model::ContactFrame& stance = stance_frames_[f];
    require(stance.offset.allFinite(), "stance frame " + stance.frame + " offset", "finite values",
            "NaN or Inf");
    // a flat foot's wrench is taken about the frame origin, a point foot's force at its point
    const Vector3 at = stance.flat ? Vector3::Zero() : stance.offset;
    stance_point_.col(f) = model.frames[model.getFrameId(stance.frame)].placement.act(at);
    max_constraints_ += stance.flat ? 6 : 3;
    for (int r = 0; r < m; ++r)
      row_sees_stance_(r, f) = supports(model, row_joint_[r], stance_joint_[f]);
  }
}

Eigen::VectorXd MeasurementModel::nominalParameters() const {
  Eigen::VectorXd pi(numParameters());
  for (int k = 0; k < numBodies(); ++k) {
    pi.segment<10>(10 * k) = full_.inertias[bodies_[k]].toDynamicParameters();
  }
  return pi;
}

MeasurementData::MeasurementData(const MeasurementModel& model)
    : delta_tau(Eigen::VectorXd::Zero(model.numRows())),
      Y(Eigen::MatrixXd::Zero(model.numRows(), model.numParameters())),
      rest(model.restModel()),
      world_placement(model.restModel().njoints, pinocchio::SE3::Identity()),
      body_world(6, model.numParameters()),
      contact_world(6, model.numContacts()),
      wrench_world(6, model.numWrenchFrames()),
      constraint(Eigen::MatrixXd::Zero(model.numRows(), model.maxConstraintColumns())) {
  body_world.setZero();
  contact_world.setZero();
  wrench_world.setZero();
}

void computeMeasurement(const MeasurementModel& model, MeasurementData& data,
                        const Eigen::Ref<const Eigen::VectorXd>& q,
                        const Eigen::Ref<const Eigen::VectorXd>& v,
                        const Eigen::Ref<const Eigen::VectorXd>& a,
                        const Eigen::Ref<const Eigen::VectorXd>& tau,
                        const Eigen::Ref<const Eigen::VectorXd>& contact_forces) {
  assert(q.size() == model.nq() && v.size() == model.nv() && a.size() == model.nv());
  assert(tau.size() == model.nv() && contact_forces.size() == model.numForceInputs());
  const pinocchio::Model& rest = model.rest_;
  // tau_nom, and every body's velocity and acceleration (gravity included) in its own frame
  pinocchio::rnea(rest, data.rest, q, v, a);
  auto& oMi = data.world_placement;
  for (pinocchio::JointIndex i = 1; i < static_cast<pinocchio::JointIndex>(rest.njoints); ++i) {
    oMi[i] = oMi[rest.parents[i]] * data.rest.liMi[i];
  }
  for (int k = 0; k < model.numBodies(); ++k) {
    const auto j = model.bodies_[k];
    data.body_world.middleCols<10>(10 * k).noalias() =
        oMi[j].toDualActionMatrix() * pinocchio::jointBodyRegressor(rest, data.rest, j);
  }
  for (int c = 0; c < model.numContacts(); ++c) {
    const Vector3 f = contact_forces.segment<3>(3 * c);
    const Vector3 p = oMi[model.contact_joint_[c]].act(Vector3(model.contact_point_.col(c)));
    data.contact_world.col(c).head<3>() = f;
    data.contact_world.col(c).tail<3>() = p.cross(f);
  }
  const int wrench_start = 3 * model.numContacts();
  for (int w = 0; w < model.numWrenchFrames(); ++w) {
    // [f; t] in the frame, about its origin -> world axes, about the world origin
    const pinocchio::SE3 oMf = oMi[model.wrench_joint_[w]] * model.wrench_placement_[w];
    const Vector3 f = oMf.rotation() * contact_forces.segment<3>(wrench_start + 6 * w);
    const Vector3 t = oMf.rotation() * contact_forces.segment<3>(wrench_start + 6 * w + 3);
    data.wrench_world.col(w).head<3>() = f;
    data.wrench_world.col(w).tail<3>() = t + oMf.translation().cross(f);
  }
  const int stance_start = wrench_start + 6 * model.numWrenchFrames();
  for (int r = 0; r < model.numRows(); ++r) {
    // the joint's motion subspace column in the world frame: a twist [linear; angular]
    const pinocchio::SE3& M = oMi[model.row_joint_[r]];
    Eigen::Matrix<double, 6, 1> s;
    s.tail<3>().noalias() = M.rotation() * model.row_subspace_.col(r).tail<3>();
    s.head<3>().noalias() = M.rotation() * model.row_subspace_.col(r).head<3>();
    s.head<3>() += M.translation().cross(Vector3(s.tail<3>()));
    const int row = model.rows_[r];
    double value = tau[row] - data.rest.tau[row];
    for (int c = 0; c < model.numContacts(); ++c) {
      if (model.row_sees_contact_(r, c)) value += s.dot(data.contact_world.col(c));
    }
    for (int w = 0; w < model.numWrenchFrames(); ++w) {
      if (model.row_sees_wrench_(r, w)) value += s.dot(data.wrench_world.col(w));
    }
    data.delta_tau[r] = value;
    // the stance columns: this row's share of unit world-aligned forces at the point (s . [e;
    // p x e] = (v + w x p) . e) and, for a flat foot, unit moments (s . [0; e] = w . e)
    int column = 0;
    for (int f = 0; f < model.numStanceFrames(); ++f) {
      if (!(contact_forces[stance_start + f] > 0)) continue;
      const bool flat = model.stance_frames_[f].flat;
      auto row = data.constraint.row(r);
      if (model.row_sees_stance_(r, f)) {
        const Vector3 p = oMi[model.stance_joint_[f]].act(Vector3(model.stance_point_.col(f)));
        row.segment<3>(column) = (s.head<3>() + Vector3(s.tail<3>()).cross(p)).transpose();
        if (flat) row.segment<3>(column + 3) = s.tail<3>().transpose();
      } else {
        row.segment(column, flat ? 6 : 3).setZero();
      }
      column += flat ? 6 : 3;
    }
    if (r == 0) data.active_constraints = column;
    data.constraint.row(r).tail(model.maxConstraintColumns() - column).setZero();
    for (int k = 0; k < model.numBodies(); ++k) {
      if (model.row_sees_body_(r, k)) {
        data.Y.row(r).segment<10>(10 * k).noalias() =
            s.transpose() * data.body_world.middleCols<10>(10 * k);
      } else {
        data.Y.row(r).segment<10>(10 * k).setZero();
      }
    }
  }
}

}  // namespace heft::filter
