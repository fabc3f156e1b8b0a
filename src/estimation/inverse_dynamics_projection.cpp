// The projected configuration noise of an inverse-dynamics stage on a robot with closed loops
// (the paper's eq. 36 with the loops' rows in J): Pinocchio's impulse model, which the
// contacts-only projection uses, knows contacts with the world only, so the KKT system and its
// derivatives are heft's own here.
#include <pinocchio/algorithm/crba.hpp>
#include <pinocchio/algorithm/frames-derivatives.hpp>
#include <pinocchio/algorithm/frames.hpp>
#include <pinocchio/algorithm/jacobian.hpp>
#include <pinocchio/algorithm/kinematics-derivatives.hpp>
#include <pinocchio/algorithm/rnea-derivatives.hpp>
#include <pinocchio/spatial/skew.hpp>

#include "heft/estimation/inverse_dynamics_stage.hpp"

namespace heft::estimation {

InverseDynamicsStageData::LoopProjectionData::LoopProjectionData(const pinocchio::Model& model,
                                                                 int rows, int parameters)
    : pin(model), fext(model.njoints, pinocchio::Force::Zero()) {
  const int nv = model.nv;
  kkt.setZero(nv + rows, nv + rows);
  G.setZero(rows, nv);
  frame_J.setZero(6, nv);
  for (int i = 0; i < 2; ++i) {
    anchor_J[i].setZero(6, nv);
    anchor_vq[i].setZero(3, nv);
  }
  v_dq.setZero(6, nv);
  v_dv.setZero(6, nv);
  lu = Eigen::PartialPivLU<Eigen::MatrixXd>(nv + rows);
  rhs.setZero(nv + rows);
  solution.setZero(nv + rows);
  jump.setZero(nv);
  zero.setZero(nv);
  dphi_dq.setZero(nv + rows, nv);
  dphi_dtheta.setZero(nv + rows, parameters);
  gravity_dq.setZero(nv, nv);
  du.setZero(nv + rows, nv);
  du_dtheta.setZero(nv + rows, parameters);
}

// u = N w_q is the velocity of the reset map with v- = w_q at zero restitution:
//   [M  -G^T] [u     ]   [M w_q]
//   [G    0 ] [Lambda] = [  0  ],
// G the contacts' rows (LOCAL frame Jacobians, as the contact rows) over the loops' (R_1^T
// (J_1 - J_2)_lin, as the loop rows). M and G at q on the working model (theta, armature).
void InverseDynamicsStageModel::loopProjection(InverseDynamicsStageData& d,
                                               const Eigen::Ref<const Eigen::VectorXd>& q,
                                               const Eigen::Ref<const Eigen::VectorXd>& w_q) const {
  const pinocchio::Model& working = d.work->inertias.model;
  InverseDynamicsStageData::LoopProjectionData& p = *d.loop_projection;
  const int nv = dynamics_->nv(), rows = nc_ + nl_;
  pinocchio::crba(working, p.pin, q);
  pinocchio::computeJointJacobians(working, p.pin, q);
  pinocchio::updateFramePlacements(working, p.pin);
  int row = 0;
  for (const ContactFrame& c : contact_frames_) {
    p.frame_J.setZero();
    pinocchio::getFrameJacobian(working, p.pin, c.frame, pinocchio::LOCAL, p.frame_J);
    p.G.middleRows(row, c.dimension) = p.frame_J.topRows(c.dimension);
    row += c.dimension;
  }
  for (const model::LoopClosure& l : loops_) {
    for (int i = 0; i < 2; ++i) {
      p.anchor_J[i].setZero();
      pinocchio::getFrameJacobian(working, p.pin, i == 0 ? l.frame1 : l.frame2,
                                  pinocchio::LOCAL_WORLD_ALIGNED, p.anchor_J[i]);
    }
    p.anchor_J[0] -= p.anchor_J[1];
    p.anchor_vq[0].noalias() =
        p.pin.oMf[l.frame1].rotation().transpose() * p.anchor_J[0].topRows<3>();
    p.G.middleRows(row, l.dimension) = p.anchor_vq[0].topRows(l.dimension);
    row += l.dimension;
  }
  auto M = p.kkt.topLeftCorner(nv, nv);
  M.triangularView<Eigen::Upper>() = p.pin.M;
  M.triangularView<Eigen::StrictlyLower>() = p.pin.M.transpose();
  p.kkt.topRightCorner(nv, rows) = -p.G.transpose();
  p.kkt.bottomLeftCorner(rows, nv) = p.G;
  p.rhs.head(nv).noalias() = M * w_q;
  p.lu.compute(p.kkt);
  p.solution = p.lu.solve(p.rhs);
  d.projected_noise = p.solution.head(nv);
}

// By the implicit function theorem on Phi = [M (u - w_q) - G^T Lambda; G u] = 0:
// d[u; Lambda] = -K^{-1} dPhi, K calc's KKT matrix. Phi's d/dq: the RNEA's derivatives at
// (q, 0, u - w_q) with the multipliers as external forces held in the joints' frames, minus the
// gravity's, plus the loops' geometric stiffness on their second bodies; G u's from the frames'
// velocity derivatives at (q, u) (the loops' turned into the first anchor's axes as the loop
// rows). d/dtheta: (Y(q, 0, u - w_q) - Y(q, 0, 0)) dpi/dtheta and I_a (u - w_q) per armature;
// d/dw_q = [-M; 0], so du/dw_q = N.
void InverseDynamicsStageModel::loopProjectionJacobians(
    InverseDynamicsStageData& d, const Eigen::Ref<const Eigen::VectorXd>& x,
    const Eigen::Ref<const Eigen::VectorXd>& w,
    const Eigen::Ref<const Eigen::VectorXd>& theta) const {
  const pinocchio::Model& working = d.work->inertias.model;
  InverseDynamicsStageData::LoopProjectionData& p = *d.loop_projection;
  const int nq = dynamics_->nq(), nv = dynamics_->nv(), ns = num_inertial_;
  const auto q = x.head(nq);
  const auto u = p.solution.head(nv);
  p.jump = u - w.head(nv);
  // the multipliers as forces: contacts from the solution's column nv, loops after them
  contactForces(p.fext, p.solution, nv);
  loopForces(working, p.pin, p.fext, q, p.solution, nv + nc_);
  pinocchio::computeGeneralizedGravityDerivatives(working, p.pin, q, p.gravity_dq);
  pinocchio::computeRNEADerivatives(working, p.pin, q, p.zero, p.jump, p.fext);
  p.dphi_dq.topRows(nv) = p.pin.dtau_dq - p.gravity_dq;
  // G u at (q, u): the frames' velocity derivatives
  pinocchio::computeForwardKinematicsDerivatives(working, p.pin, q, u, p.zero);
  pinocchio::updateFramePlacements(working, p.pin);
  int row = nv;
  for (const ContactFrame& c : contact_frames_) {
    p.v_dq.setZero();
    p.v_dv.setZero();
    pinocchio::getFrameVelocityDerivatives(working, p.pin, c.frame, pinocchio::LOCAL, p.v_dq,
                                           p.v_dv);
    p.dphi_dq.middleRows(row, c.dimension) = p.v_dq.topRows(c.dimension);
    row += c.dimension;
  }
  int col = nv + nc_;
  for (const model::LoopClosure& l : loops_) {
    const pinocchio::FrameIndex frames[2] = {l.frame1, l.frame2};
    Eigen::Vector3d V = Eigen::Vector3d::Zero();
    for (int i = 0; i < 2; ++i) {
      p.v_dq.setZero();
      p.v_dv.setZero();
      pinocchio::getFrameVelocityDerivatives(working, p.pin, frames[i], pinocchio::LOCAL, p.v_dq,
                                             p.v_dv);
      const pinocchio::Motion vel =
          pinocchio::getFrameVelocity(working, p.pin, frames[i], pinocchio::LOCAL);
      const Eigen::Matrix3d& R = p.pin.oMf[frames[i]].rotation();
      // d (R v_lin) / dq = R (d v_lin / dq - [v_lin]x J_ang), J = d v / d v (LOCAL)
      p.v_dq.topRows<3>().noalias() -= pinocchio::skew(vel.linear()) * p.v_dv.bottomRows<3>();
      p.anchor_vq[i].noalias() = R * p.v_dq.topRows<3>();
      p.anchor_J[i].topRows<3>().noalias() = R * p.v_dv.topRows<3>();
      p.anchor_J[i].bottomRows<3>().noalias() = R * p.v_dv.bottomRows<3>();
      V += (i == 0 ? 1.0 : -1.0) * (R * vel.linear());
    }
    const Eigen::Matrix3d& R1 = p.pin.oMf[l.frame1].rotation();
    const int m = l.dimension;
    relativeVelocityDq(R1, V, p.anchor_vq[0], p.anchor_vq[1], p.anchor_J[0].bottomRows<3>(),
                       p.v_dq.topRows<3>());
    p.dphi_dq.middleRows(row, m) = p.v_dq.topRows(m);
    if (l.joint2 > 0) {  // Lambda_l's geometric stiffness on the second body
      p.anchor_J[0] -= p.anchor_J[1];
      addLoopStiffness(R1, p.solution.segment(col, m), p.anchor_J[1].topRows<3>(),
                       p.anchor_J[0].bottomRows<3>(), p.v_dq.bottomRows<3>(),
                       p.dphi_dq.topRows(nv));
    }
    row += m;
    col += m;
  }
  // du/dq, N, du/dtheta into F (B2 from calcDiff: q' ⊕ u)
  p.du = p.lu.solve(p.dphi_dq);
  d.F_x.topLeftCorner(nv, nv).noalias() -= d.B2 * p.du.topRows(nv);
  p.dphi_dq.setZero();
  p.dphi_dq.topRows(nv) = -p.kkt.topLeftCorner(nv, nv);
  p.du = p.lu.solve(p.dphi_dq);
  d.F_w.topLeftCorner(nv, nv).noalias() = -d.B2 * p.du.topRows(nv);
  const int na = actuators_ ? actuators_->numParameters() : 0;
  p.dphi_dtheta.setZero();
  jumpParameterRows(d, q, p.jump, p.zero, theta, p.dphi_dtheta.topRows(nv));
  p.du_dtheta = p.lu.solve(p.dphi_dtheta);
  d.F_theta.topLeftCorner(nv, ns + na).noalias() = -d.B2 * p.du_dtheta.topRows(nv);
}

}  // namespace heft::estimation
