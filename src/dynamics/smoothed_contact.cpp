#include "heft/dynamics/smoothed_contact.hpp"

#include <cmath>
#include <cstdio>
#include <string>

#include <pinocchio/algorithm/cholesky.hpp>
#include <pinocchio/algorithm/crba.hpp>
#include <pinocchio/algorithm/frames-derivatives.hpp>
#include <pinocchio/algorithm/frames.hpp>
#include <pinocchio/algorithm/jacobian.hpp>
#include <pinocchio/algorithm/kinematics-derivatives.hpp>
#include <pinocchio/algorithm/rnea-derivatives.hpp>
#include <pinocchio/algorithm/rnea.hpp>

#include "heft/common/error.hpp"

namespace heft::dynamics {

bool SmoothedContactOptions::validate(std::string* why) const {
  std::string reason;
  if (!(kappa > 0) || !std::isfinite(kappa))
    reason = "kappa must be finite and > 0";
  else if (!(friction_coefficient > 0) || !std::isfinite(friction_coefficient))
    reason = "friction_coefficient must be finite and > 0";
  else if (!std::isfinite(ground_height))
    reason = "ground_height must be finite";
  else if (!(compliance >= 0) || !std::isfinite(compliance))
    reason = "compliance must be finite and >= 0";
  else if (max_iterations < 1)
    reason = "max_iterations must be >= 1";
  else if (!(tolerance > 0))
    reason = "tolerance must be > 0";
  else if (!(feasibility_margin > 0) || !std::isfinite(feasibility_margin))
    reason = "feasibility_margin must be finite and > 0";
  else if (!(armijo > 0 && armijo < 0.5))
    reason = "armijo must be in (0, 0.5)";
  else if (!(backtracking > 0 && backtracking < 1))
    reason = "backtracking must be in (0, 1)";
  if (why) *why = reason;
  return reason.empty();
}

const char* toString(SmoothedContactStatus status) {
  switch (status) {
    case SmoothedContactStatus::NotRun:
      return "not run";
    case SmoothedContactStatus::Converged:
      return "converged";
    case SmoothedContactStatus::MaxIterations:
      return "max iterations";
    case SmoothedContactStatus::NumericalFailure:
      return "numerical failure";
  }
  return "unknown";
}

std::string SmoothedContactSummary::report() const {
  char line[200];
  std::snprintf(line, sizeof(line),
                "smoothed contact step: %s after %d Newton steps, decrement %.3e, cost %.6e J, "
                "initial lift %.3e m/s",
                toString(status), iterations, decrement, cost, initial_lift);
  return line;
}

// ---- model and data -----------------------------------------------------------------------------

SmoothedContactModel::SmoothedContactModel(const pinocchio::Model& robot,
                                           const std::vector<model::ContactPoint>& points,
                                           const std::vector<pinocchio::JointIndex>& identified,
                                           inertia::Parametrization parametrization,
                                           const SmoothedContactOptions& options)
    : regressor_(robot, identified),
      support_(regressor_),
      points_(points),
      options_(options),
      parametrization_(parametrization) {
  std::string why;
  if (!options_.validate(&why)) throw InputError("smoothed contact options: " + why);
  // The feasibility initializer translates the whole robot upwards through the root's velocity.
  if (robot.njoints < 2 || robot.joints[1].shortname() != "JointModelFreeFlyer")
    throw InputError("smoothed contact: expected a robot with a free-flyer root joint, got '" +
                     (robot.njoints < 2 ? std::string("none") : robot.joints[1].shortname()) + "'");
  if (points_.empty()) throw InputError("smoothed contact points: expected at least one, got 0");
  for (const model::ContactPoint& p : points_) {
    if (!robot.existFrame(p.frame))
      throw InputError("smoothed contact point '" + p.name + "': expected a frame of model '" +
                       robot.name + "', got '" + p.frame + "'");
    if (!p.offset.allFinite())
      throw InputError("smoothed contact point '" + p.name + "': expected a finite offset");
    const pinocchio::Frame& frame = robot.frames[robot.getFrameId(p.frame)];
    joints_.push_back(frame.parentJoint);
    placements_.push_back(frame.placement * pinocchio::SE3(Eigen::Matrix3d::Identity(), p.offset));
    std::vector<int> columns;
    for (pinocchio::JointIndex j : robot.supports[frame.parentJoint])
      for (int k = 0; k < robot.nvs[j]; ++k) columns.push_back(robot.idx_vs[j] + k);
    std::vector<ColumnRun> runs;
    for (int k = 0; k < static_cast<int>(columns.size()); ++k) {
      if (!runs.empty() && runs.back().velocity_index + runs.back().length == columns[k])
        ++runs.back().length;
      else
        runs.push_back({columns[k], k, 1});
    }
    columns_.push_back(std::move(columns));
    runs_.push_back(std::move(runs));
  }
}

SmoothedContactData::SmoothedContactData(const SmoothedContactModel& model)
    : v_next(Eigen::VectorXd::Zero(model.nv())),
      force(Eigen::VectorXd::Zero(3 * model.numPoints())),
      gap(Eigen::VectorXd::Zero(model.numPoints())),
      deflection(Eigen::VectorXd::Zero(model.numPoints())),
      dvnext_dq(Eigen::MatrixXd::Zero(model.nv(), model.nv())),
      dvnext_dv(Eigen::MatrixXd::Zero(model.nv(), model.nv())),
      dvnext_dtau(Eigen::MatrixXd::Zero(model.nv(), model.nv())),
      dvnext_dtheta(Eigen::MatrixXd::Zero(model.nv(), model.numParameters())),
      dforce_dq(Eigen::MatrixXd::Zero(3 * model.numPoints(), model.nv())),
      dforce_dv(Eigen::MatrixXd::Zero(3 * model.numPoints(), model.nv())),
      dforce_dtau(Eigen::MatrixXd::Zero(3 * model.numPoints(), model.nv())),
      dforce_dtheta(Eigen::MatrixXd::Zero(3 * model.numPoints(), model.numParameters())),
      inertias(model.regressor()),
      pin(model.model()),
      regressor(model.regressor()),
      M(Eigen::MatrixXd::Zero(model.nv(), model.nv())),
      momentum(Eigen::VectorXd::Zero(model.nv())),
      jacobian(Eigen::MatrixXd::Zero(3 * model.numPoints(), model.nv())),
      lift(Eigen::VectorXd::Zero(model.nv())),
      point_velocity(Eigen::VectorXd::Zero(3 * model.numPoints())),
      impulse(Eigen::VectorXd::Zero(3 * model.numPoints())),
      barrier_hessian(Eigen::MatrixXd::Zero(3, 3 * model.numPoints())),
      deflection_gradient(Eigen::VectorXd::Zero(model.numPoints())),
      deflection_curvature(Eigen::VectorXd::Zero(model.numPoints())),
      deflection_step(Eigen::VectorXd::Zero(model.numPoints())),
      trial_deflection(Eigen::VectorXd::Zero(model.numPoints())),
      deflection_coupling(Eigen::MatrixXd::Zero(3, model.numPoints())),
      deflection_correction(Eigen::VectorXd::Zero(3 * model.numPoints())),
      gradient(Eigen::VectorXd::Zero(model.nv())),
      newton_step(Eigen::VectorXd::Zero(model.nv())),
      trial(Eigen::VectorXd::Zero(model.nv())),
      scratch(Eigen::VectorXd::Zero(model.nv())),
      mass_velocity(Eigen::VectorXd::Zero(model.nv())),
      kj(Eigen::MatrixXd::Zero(3 * model.numPoints(), model.nv())),
      kd(Eigen::MatrixXd::Zero(3 * model.numPoints(), model.nv())),
      factorization(model.model()),
      frame_jacobian(Eigen::Matrix<double, 6, Eigen::Dynamic>::Zero(6, model.nv())),
      velocity_dq(Eigen::Matrix<double, 6, Eigen::Dynamic>::Zero(6, model.nv())),
      velocity_dv(Eigen::Matrix<double, 6, Eigen::Dynamic>::Zero(6, model.nv())),
      external_forces(static_cast<size_t>(model.model().njoints), pinocchio::Force::Zero()),
      mean_acceleration(Eigen::VectorXd::Zero(model.nv())),
      dg_dq(Eigen::MatrixXd::Zero(model.nv(), model.nv())),
      dg_dv(Eigen::MatrixXd::Zero(model.nv(), model.nv())),
      hessian_inverse(Eigen::MatrixXd::Zero(model.nv(), model.nv())),
      point_velocity_dq(Eigen::MatrixXd::Zero(3 * model.numPoints(), model.nv())),
      base_point_velocity(Eigen::VectorXd::Zero(3 * model.numPoints())),
      step_point_velocity(Eigen::VectorXd::Zero(3 * model.numPoints())),
      minv_jt(Eigen::MatrixXd::Zero(model.nv(), 3 * model.numPoints())),
      delassus(Eigen::MatrixXd::Zero(3 * model.numPoints(), 3 * model.numPoints())),
      delassus_llt(3 * model.numPoints()),
      free_velocity(Eigen::VectorXd::Zero(model.nv())),
      contact_target(Eigen::VectorXd::Zero(3 * model.numPoints())),
      held_points(Eigen::VectorXi::Zero(model.numPoints())) {
  Eigen::Index widest = 0;
  for (const std::vector<int>& columns : model.pointColumns()) {
    const auto n = static_cast<Eigen::Index>(columns.size());
    compact_jacobians.emplace_back(Eigen::Matrix<double, 3, Eigen::Dynamic>::Zero(3, n));
    widest = std::max(widest, n);
  }
  compact_kj.setZero(3, widest);
}

namespace {

using Matrix3 = Eigen::Matrix3d;

Matrix3 skew(const Eigen::Vector3d& x) {
  Matrix3 S;
  S << 0, -x.z(), x.y(), x.z(), 0, -x.x(), -x.y(), x.x(), 0;
  return S;
}

void checkInputs(const SmoothedContactModel& model, const Eigen::Ref<const Eigen::VectorXd>& q,
                 const Eigen::Ref<const Eigen::VectorXd>& v,
                 const Eigen::Ref<const Eigen::VectorXd>& tau,
                 const Eigen::Ref<const Eigen::VectorXd>& theta_S, double dt) {
  detail::checkSize("smoothed contact: q", model.nq(), q.size());
  detail::checkSize("smoothed contact: v", model.nv(), v.size());
  detail::checkSize("smoothed contact: tau", model.nv(), tau.size());
  detail::checkSize("smoothed contact: theta_S", model.numParameters(), theta_S.size());
  // A NaN input would make every output NaN: refuse it here, where the field can be named.
  if (!q.allFinite()) throw InputError("smoothed contact: q: expected finite values");
  if (!v.allFinite()) throw InputError("smoothed contact: v: expected finite values");
  if (!tau.allFinite()) throw InputError("smoothed contact: tau: expected finite values");
  if (!theta_S.allFinite()) throw InputError("smoothed contact: theta_S: expected finite values");
  if (!(dt > 0) || !std::isfinite(dt))
    throw InputError("smoothed contact: dt: expected a finite value > 0 [s], got " +
                     std::to_string(dt));
}

/// Pinocchio's U D U^T factorization of the upper triangle of pin.M along the kinematic tree (into
/// pin.U, pin.D); false unless every pivot is positive and finite (M not positive definite).
bool decomposeAlongTree(const pinocchio::Model& model, pinocchio::Data& pin) {
  pinocchio::cholesky::decompose(model, pin);
  return pin.D.allFinite() && (pin.D.array() > 0).all();
}

/// One point's barrier at tangential velocity (u_x, u_y) and w: s = w^2 / mu^2 - u_x^2 - u_y^2,
/// the impulse lambda = grad(log s) / kappa (eqs. 18-19) and, if K is given, K = -dlambda/du. False
/// outside the cone's upper nappe (w <= 0 or s <= 0), where the barrier is undefined.
bool pointBarrier(double ux, double uy, double w, double kappa, double mu2, double& s,
                  Eigen::Vector3d& lambda, Matrix3* K) {
  s = w * w / mu2 - ux * ux - uy * uy;
  if (!(w > 0) || !(s > 0)) return false;
  // lambda = grad(log s) / kappa, grad s = (-2 u_x, -2 u_y, 2 w / mu^2).
  const Eigen::Vector3d grad_s(-2 * ux, -2 * uy, 2 * w / mu2);
  lambda = grad_s / (kappa * s);
  if (!K) return true;
  // K = kappa lambda lambda^T - hess(s) / (kappa s), hess(s) = diag(-2, -2, 2 / mu^2).
  K->noalias() = kappa * lambda * lambda.transpose();
  K->diagonal() += Eigen::Vector3d(2, 2, -2 / mu2) / (kappa * s);
  return true;
}

/// lambda_i (eqs. 18-19) and, if `hessian`, K_i = -dlambda_i/du_i of every point at the point
/// velocities data.point_velocity and the deflections `deflection` (w_i = (phi_i + delta_i) / dt +
/// u_z); the barrier's sum of log s_i in `log_sum`. False if a point is outside the cone's upper
/// nappe (w_i <= 0 or s_i <= 0), where the barrier is undefined.
bool evaluateBarrier(const SmoothedContactModel& model, SmoothedContactData& data, double dt,
                     bool hessian, double& log_sum, const Eigen::VectorXd& deflection) {
  const double kappa = model.options().kappa;
  const double mu2 = model.options().friction_coefficient * model.options().friction_coefficient;
  log_sum = 0;
  double s = 0;
  Eigen::Vector3d lambda;
  Matrix3 K;
  for (int i = 0; i < model.numPoints(); ++i) {
    const auto u = data.point_velocity.segment<3>(3 * i);
    const double w = (data.gap[i] + deflection[i]) / dt + u.z();
    if (!pointBarrier(u.x(), u.y(), w, kappa, mu2, s, lambda, hessian ? &K : nullptr)) return false;
    log_sum += std::log(s);
    data.impulse.segment<3>(3 * i) = lambda;
    if (hessian) data.barrier_hessian.middleCols<3>(3 * i) = K;
  }
  return true;
}

/// c(x) of eq. 17 without its constant: x^T M x / 2 - momentum^T x - sum log s_i / kappa (+ the
/// springs' sum delta_i^2 / (2 compliance) at data.deflection); false
/// (and c untouched) if x is outside the barrier's domain. Overwrites point_velocity and impulse.
bool cost(const SmoothedContactModel& model, SmoothedContactData& data, const Eigen::VectorXd& x,
          double dt, double& c) {
  data.point_velocity.noalias() = data.jacobian * x;
  double log_sum = 0;
  if (!evaluateBarrier(model, data, dt, false, log_sum, data.deflection)) return false;
  data.scratch.noalias() = data.M * x;
  c = 0.5 * x.dot(data.scratch) - data.momentum.dot(x) - log_sum / model.options().kappa;
  if (model.options().compliance > 0)
    c += data.deflection.squaredNorm() / (2 * model.options().compliance);
  return true;
}

/// The deflections' rows of Newton's system at (x, delta), eliminated point by point (the delta
/// block is diagonal): with a_i = K_i e_z / dt, d_i = 1 / compliance + K_i,zz / dt^2 and g_delta_i
/// = delta_i / compliance - lambda^n_i / dt, K_i becomes K_i - a_i a_i^T / d_i and the gradient
/// g - sum J_i^T a_i g_delta_i / d_i (the Schur complement); Newton's deflection step is then
/// -(g_delta_i + a_i^T J_i dx) / d_i.
void eliminateDeflections(const SmoothedContactModel& model, SmoothedContactData& data, double dt) {
  const double compliance = model.options().compliance;
  for (int i = 0; i < model.numPoints(); ++i) {
    auto K = data.barrier_hessian.middleCols<3>(3 * i);
    const Eigen::Vector3d a = K.col(2) / dt;
    const double d = 1 / compliance + K(2, 2) / (dt * dt);
    const double g = data.deflection[i] / compliance - data.impulse[3 * i + 2] / dt;
    data.deflection_coupling.col(i) = a;
    data.deflection_curvature[i] = d;
    data.deflection_gradient[i] = g;
    data.deflection_correction.segment<3>(3 * i) = a * (g / d);
    K.noalias() -= a * a.transpose() / d;
  }
  data.gradient.noalias() -= data.jacobian.transpose() * data.deflection_correction;
}

/// Gradient g = M x - momentum - J^T lambda and Hessian H = M + sum J_i^T K_i J_i at x, and H's
/// sparse U D U^T factorization (data.factorization). False if x is infeasible or H is not positive
/// definite. With `products_known`, data.point_velocity and data.mass_velocity already hold J x and
/// M x (Newton carries them along its steps from J d and M d); otherwise they are computed. Leaves
/// J x in base_point_velocity and the barrier's log sum in base_log_sum for the line search; with
/// `keep_kj`, blockdiag(K_i) J in kj for the derivatives.
bool assembleNewtonSystem(const SmoothedContactModel& model, SmoothedContactData& data,
                          const Eigen::VectorXd& x, double dt, bool keep_kj,
                          bool products_known = false) {
  if (!products_known) {
    data.point_velocity.noalias() = data.jacobian * x;
    data.mass_velocity.noalias() = data.M * x;
  }
  data.base_point_velocity = data.point_velocity;
  if (!evaluateBarrier(model, data, dt, true, data.base_log_sum, data.deflection)) return false;
  data.gradient = data.mass_velocity - data.momentum;
  data.gradient.noalias() -= data.jacobian.transpose() * data.impulse;
  if (model.options().compliance > 0) eliminateDeflections(model, data, dt);
  // H = M + sum J_i^T K_i J_i, each term only on the columns of the point's limb (a quarter of
  // go2's Hessian, a tenth of TALOS'); K_i J_i is zero outside those columns. Only the upper
  // triangle is formed (decompose reads no other): the columns ascend, so a <= b is upper.
  Eigen::MatrixXd& hessian = data.factorization.M;
  hessian = data.M;
  for (int i = 0; i < model.numPoints(); ++i) {
    const std::vector<int>& columns = model.pointColumns()[i];
    const auto n = static_cast<Eigen::Index>(columns.size());
    const auto& Jc = data.compact_jacobians[static_cast<size_t>(i)];
    auto kj = data.compact_kj.leftCols(n);
    kj.noalias() = data.barrier_hessian.middleCols<3>(3 * i).lazyProduct(Jc);
    for (Eigen::Index b = 0; b < n; ++b) {
      const Eigen::Vector3d kj_b = kj.col(b);
      double* column = hessian.col(columns[static_cast<size_t>(b)]).data();
      for (Eigen::Index a = 0; a <= b; ++a)
        column[columns[static_cast<size_t>(a)]] += Jc.col(a).dot(kj_b);
      if (keep_kj) data.kj.col(columns[static_cast<size_t>(b)]).segment<3>(3 * i) = kj_b;
    }
  }
  return decomposeAlongTree(data.inertias.model, data.factorization);
}

/// M, momentum = M v + dt (tau - h), the points' world-axes Jacobians, gaps, and the lift
/// direction, all at q (they do not depend on v+).
void computeKinematics(const SmoothedContactModel& model, SmoothedContactData& data,
                       const Eigen::Ref<const Eigen::VectorXd>& q,
                       const Eigen::Ref<const Eigen::VectorXd>& v,
                       const Eigen::Ref<const Eigen::VectorXd>& tau, double dt) {
  const pinocchio::Model& m = data.inertias.model;
  pinocchio::crba(m, data.pin, q, pinocchio::Convention::WORLD);
  data.M = data.pin.M.selfadjointView<Eigen::Upper>();
  pinocchio::nonLinearEffects(m, data.pin, q, v);
  data.momentum.noalias() = data.M * v;
  data.momentum += dt * (tau - data.pin.nle);

  pinocchio::computeJointJacobians(m, data.pin, q);
  for (int i = 0; i < model.numPoints(); ++i) {
    const pinocchio::JointIndex joint = model.pointJoints()[i];
    const pinocchio::SE3& placement = model.pointPlacements()[i];
    data.frame_jacobian.setZero();
    pinocchio::getFrameJacobian(m, data.pin, joint, placement, pinocchio::LOCAL_WORLD_ALIGNED,
                                data.frame_jacobian);
    data.jacobian.middleRows<3>(3 * i) = data.frame_jacobian.topRows<3>();
    const std::vector<int>& columns = model.pointColumns()[i];
    auto& Jc = data.compact_jacobians[static_cast<size_t>(i)];
    for (size_t k = 0; k < columns.size(); ++k)
      Jc.col(static_cast<Eigen::Index>(k)) = data.frame_jacobian.col(columns[k]).head<3>();
    data.gap[i] =
        data.pin.oMi[joint].act(placement.translation()).z() - model.options().ground_height;
  }
  // The free flyer's linear velocity is in the base frame: R^T e_z translates the robot up.
  data.lift.setZero();
  data.lift.head<3>() = data.pin.oMi[1].rotation().row(2).transpose();
}

/// How far point i at the point velocities data.point_velocity is from the start's requirement
/// w_i >= mu |J^t_i x| + margin [m/s]; <= 0 when it is met.
double coneShortfall(const SmoothedContactModel& model, const SmoothedContactData& data, int i,
                     double dt) {
  const auto u = data.point_velocity.segment<3>(3 * i);
  const double w = data.gap[i] / dt + u.z();
  return model.options().friction_coefficient * u.head<2>().norm() +
         model.options().feasibility_margin - w;
}

/// The sticking start (SmoothedContactStart::Sticking) into data.v_next: the points that v leaves
/// outside their cone or within the margin of it are held at u_t = 0 and w_i = margin (a rigid
/// sticking contact), x = argmin (x - x_free)^T M (x - x_free) subject to that, with x_free =
/// M^-1 momentum the contact-free minimizer of eq. 17's quadratic part. The Delassus matrix is
/// regularized (the corners of a sole are dependent); rows of free points are decoupled.
void stickingStart(const SmoothedContactModel& model, SmoothedContactData& data,
                   const Eigen::Ref<const Eigen::VectorXd>& v, double dt) {
  const double margin = model.options().feasibility_margin;
  data.v_next = v;
  data.point_velocity.noalias() = data.jacobian * v;
  int held = 0;
  data.held_points.setZero();
  data.contact_target.setZero();
  for (int i = 0; i < model.numPoints(); ++i) {
    if (coneShortfall(model, data, i, dt) <= 0) continue;
    data.contact_target[3 * i + 2] = margin - data.gap[i] / dt;
    data.held_points[i] = 1;
    ++held;
  }
  data.summary.sticking_points = held;
  if (held == 0) return;
  // crba left M's upper triangle in data.pin.M: its sparse factorization in data.pin.U, D.
  const pinocchio::Model& m = data.inertias.model;
  if (!decomposeAlongTree(m, data.pin)) return;
  data.free_velocity = data.momentum;
  pinocchio::cholesky::solve(m, data.pin, data.free_velocity);
  data.minv_jt = data.jacobian.transpose();
  pinocchio::cholesky::solve(m, data.pin, data.minv_jt);
  data.delassus.noalias() = data.jacobian * data.minv_jt;
  data.contact_target.noalias() -= data.jacobian * data.free_velocity;
  const double regularization = 1e-10 * data.delassus.diagonal().maxCoeff();
  for (int i = 0; i < model.numPoints(); ++i) {
    if (data.held_points[i]) continue;
    data.delassus.middleRows<3>(3 * i).setZero();
    data.delassus.middleCols<3>(3 * i).setZero();
    data.delassus.block<3, 3>(3 * i, 3 * i).setIdentity();
    data.contact_target.segment<3>(3 * i).setZero();
  }
  data.delassus.diagonal().array() += regularization;
  data.delassus_llt.compute(data.delassus);
  if (data.delassus_llt.info() != Eigen::Success) return;
  data.delassus_llt.solveInPlace(data.contact_target);
  data.v_next = data.free_velocity;
  data.v_next.noalias() += data.minv_jt * data.contact_target;
}

/// The paper's feasibility initializer on x: lifted along the world vertical by the least amount
/// that puts every point strictly inside its velocity cone, w_i >= mu |J^t_i x| + margin. A
/// vertical translation adds the same normal velocity to every point and leaves the tangential
/// ones unchanged, so one shift satisfies all points. Returns the shift [m/s].
double liftIntoCones(const SmoothedContactModel& model, SmoothedContactData& data,
                     Eigen::VectorXd& x, double dt) {
  data.point_velocity.noalias() = data.jacobian * x;
  double shift = 0;
  for (int i = 0; i < model.numPoints(); ++i)
    shift = std::max(shift, coneShortfall(model, data, i, dt));
  x += shift * data.lift;
  return shift;
}

/// True if every point is strictly inside its cone at x (w_i > 0, s_i > 0): a start Newton can
/// use as it is, without the initializer's margin.
bool strictlyFeasible(const SmoothedContactModel& model, SmoothedContactData& data,
                      const Eigen::VectorXd& x, double dt) {
  data.point_velocity.noalias() = data.jacobian * x;
  double log_sum = 0;
  return evaluateBarrier(model, data, dt, false, log_sum, data.deflection);
}

/// With compliance: each deflection at its minimizer for the point velocities data.point_velocity
/// (J x), delta_i / compliance = lambda^n_i(delta_i) / dt, which exists for every x (a deep enough
/// deflection puts any point inside its cone), so that Newton starts feasible and at the optimal
/// deflections of its start. The root is unique (the left side increases with delta, from -inf at
/// the cone's boundary delta_min); it is concave, so Newton's iteration from a point left of the
/// root stays left of it (feasible) and converges monotonically.
void settleDeflections(const SmoothedContactModel& model, SmoothedContactData& data, double dt) {
  const double compliance = model.options().compliance;
  const double kappa = model.options().kappa;
  const double mu = model.options().friction_coefficient, mu2 = mu * mu;
  double s = 0;
  Eigen::Vector3d lambda;
  Matrix3 K;
  for (int i = 0; i < model.numPoints(); ++i) {
    const auto u = data.point_velocity.segment<3>(3 * i);
    // the deflection at which w_i = mu |u_t| (s_i = 0)
    const double boundary = dt * (mu * u.head<2>().norm() - u.z()) - data.gap[i];
    // g(delta) = delta / compliance - lambda^n / dt and g' = 1 / compliance + K_zz / dt^2, called
    // only inside the cone (delta > boundary)
    auto evaluate = [&](double delta, double& g, double& slope) {
      const double w = (data.gap[i] + delta) / dt + u.z();
      pointBarrier(u.x(), u.y(), w, kappa, mu2, s, lambda, &K);
      g = delta / compliance - lambda.z() / dt;
      slope = 1 / compliance + K(2, 2) / (dt * dt);
    };
    double delta = 0, g = 0, slope = 0;
    if (boundary >= 0) {
      // start a margin inside the cone, halved towards the boundary until left of the root
      double offset = model.options().feasibility_margin * dt;
      delta = boundary + offset;
      evaluate(delta, g, slope);
      for (int k = 0; k < 200 && g > 0; ++k) {
        offset *= 0.5;
        delta = boundary + offset;
        evaluate(delta, g, slope);
      }
    } else {
      evaluate(delta, g, slope);  // delta = 0 is inside the cone, and g(0) = -lambda^n / dt < 0
    }
    for (int k = 0; k < 200 && g < 0; ++k) {
      const double step = -g / slope;
      if (!(step > 1e-15 * (std::abs(delta) + compliance * 1e-3))) break;
      delta += step;
      evaluate(delta, g, slope);
    }
    data.deflection[i] = delta;
  }
}

/// Newton's start in data.v_next: a caller's solution if it is strictly feasible, else the
/// configured start lifted into the cones.
void initialGuess(const SmoothedContactModel& model, SmoothedContactData& data,
                  const Eigen::Ref<const Eigen::VectorXd>& v, double dt,
                  const Eigen::VectorXd* solution) {
  const bool compliant = model.options().compliance > 0;
  data.deflection.setZero();
  if (solution) {
    data.v_next = *solution;
    // with compliance every x is feasible at deep enough deflections
    if (compliant) {
      data.point_velocity.noalias() = data.jacobian * data.v_next;
      settleDeflections(model, data, dt);
      return;
    }
    if (strictlyFeasible(model, data, data.v_next, dt)) return;
  }
  if (model.options().start == SmoothedContactStart::Sticking)
    stickingStart(model, data, v, dt);
  else
    data.v_next = v;
  if (compliant) {
    // no lift: the deflections put the start inside the cones, nearer the solution
    data.point_velocity.noalias() = data.jacobian * data.v_next;
    settleDeflections(model, data, dt);
    return;
  }
  data.summary.initial_lift = liftIntoCones(model, data, data.v_next, dt);
}

/// Barrier log sum at x + alpha d from J x and J d (no product with J or M); false if outside the
/// domain. Leaves the trial's impulses in data.impulse.
bool trialLogSum(const SmoothedContactModel& model, SmoothedContactData& data, double alpha,
                 double dt, double& log_sum) {
  data.point_velocity = data.base_point_velocity + alpha * data.step_point_velocity;
  // on a rigid floor both deflection vectors stay zero
  data.trial_deflection = data.deflection + alpha * data.deflection_step;
  return evaluateBarrier(model, data, dt, false, log_sum, data.trial_deflection);
}

/// Step length along data.newton_step d from x = data.v_next: the first of 1, b, b^2, ... that
/// stays feasible and decreases c by the Armijo fraction of the predicted decrease, never shorter
/// than the damped step 1 / (1 + delta) that self-concordance guarantees feasible and decreasing.
/// In the quadratic region (delta < 1/4) the full step is taken without the cost test, which
/// rounding would decide there. c's quadratic part along d is exact, c(x + a d) - c(x) = a (M x -
/// momentum)^T d + a^2 d^T M d / 2 - (log sum(a) - log sum(0)) / kappa, so a trial costs only the
/// barrier. Returns 0 if no step is feasible; the accepted point is left in data.trial.
double lineSearch(const SmoothedContactModel& model, SmoothedContactData& data, double decrement2,
                  double dt) {
  const SmoothedContactOptions& o = model.options();
  const double delta = std::sqrt(o.kappa * decrement2);
  const double damped = 1 / (1 + delta);
  // The quadratic part's slope and curvature along d (J d is in step_point_velocity). Rigid: g = M
  // x - momentum - J^T lambda, so (M x - momentum)^T d = g^T d + lambda^T J d. Compliant: g is the
  // reduced gradient, so the slope is formed directly, with the springs' terms along delta's step.
  data.scratch.noalias() = data.M * data.newton_step;
  double curvature = data.newton_step.dot(data.scratch);
  double slope = -decrement2 + data.impulse.dot(data.step_point_velocity);
  if (o.compliance > 0) {
    slope = (data.mass_velocity - data.momentum).dot(data.newton_step) +
            data.deflection.dot(data.deflection_step) / o.compliance;
    curvature += data.deflection_step.squaredNorm() / o.compliance;
  }
  const bool quadratic = delta < 0.25;
  double log_sum = 0;
  double alpha = 1;
  for (; alpha > damped; alpha *= o.backtracking) {
    if (!trialLogSum(model, data, alpha, dt, log_sum)) continue;
    const double change =
        alpha * slope + 0.5 * alpha * alpha * curvature - (log_sum - data.base_log_sum) / o.kappa;
    if (quadratic || change <= -o.armijo * alpha * decrement2) break;
  }
  if (alpha <= damped) {
    alpha = damped;
    if (!trialLogSum(model, data, alpha, dt, log_sum)) return 0;
  }
  data.trial = data.v_next + alpha * data.newton_step;
  return alpha;
}

/// Newton's method on eq. 17 from data.v_next; fills data.summary.
void newton(const SmoothedContactModel& model, SmoothedContactData& data, double dt) {
  const SmoothedContactOptions& o = model.options();
  SmoothedContactSummary& summary = data.summary;
  summary.status = SmoothedContactStatus::MaxIterations;
  summary.iterations = 0;
  bool products_known = false;
  while (summary.iterations < o.max_iterations) {
    if (!assembleNewtonSystem(model, data, data.v_next, dt, false, products_known)) {
      summary.status = SmoothedContactStatus::NumericalFailure;
      return;
    }
    data.newton_step = -data.gradient;
    pinocchio::cholesky::solve(data.inertias.model, data.factorization, data.newton_step);
    double decrement2 = -data.gradient.dot(data.newton_step);  // g^T H^-1 g
    data.step_point_velocity.noalias() = data.jacobian * data.newton_step;
    if (o.compliance > 0) {
      // the eliminated deflections' steps, and their share of the decrement
      for (int i = 0; i < model.numPoints(); ++i) {
        const double g = data.deflection_gradient[i], d = data.deflection_curvature[i];
        data.deflection_step[i] =
            -(g + data.deflection_coupling.col(i).dot(data.step_point_velocity.segment<3>(3 * i))) /
            d;
        decrement2 += g * g / d;
      }
    }
    summary.decrement = 0.5 * o.kappa * decrement2;
    if (!std::isfinite(decrement2)) {
      summary.status = SmoothedContactStatus::NumericalFailure;
      return;
    }
    ++summary.iterations;
    if (summary.decrement <= o.tolerance) {
      // The full step from inside the quadratic region squares the remaining error.
      double log_sum = 0;
      if (trialLogSum(model, data, 1, dt, log_sum)) {
        data.v_next += data.newton_step;
        data.deflection += data.deflection_step;
      }
      summary.status = SmoothedContactStatus::Converged;
      return;
    }
    const double alpha = lineSearch(model, data, decrement2, dt);
    if (alpha == 0) {
      summary.status = SmoothedContactStatus::NumericalFailure;
      return;
    }
    data.v_next = data.trial;
    data.deflection += alpha * data.deflection_step;
    // The line search left J x' in point_velocity (its last trial is the accepted one) and M d in
    // scratch: M x' = M x + alpha M d, two products fewer per step.
    data.mass_velocity.noalias() += alpha * data.scratch;
    products_known = true;
  }
}

void solve(const SmoothedContactModel& model, SmoothedContactData& data,
           const Eigen::Ref<const Eigen::VectorXd>& q, const Eigen::Ref<const Eigen::VectorXd>& v,
           const Eigen::Ref<const Eigen::VectorXd>& tau,
           const Eigen::Ref<const Eigen::VectorXd>& theta_S, double dt,
           const Eigen::VectorXd* solution) {
  checkInputs(model, q, v, tau, theta_S, dt);
  if (solution) {
    detail::checkSize("smoothed contact: solution", model.nv(), solution->size());
    if (!solution->allFinite())
      throw InputError("smoothed contact: solution: expected finite values");
  }
  data.inertias.update(model.regressor(), model.parametrization(), theta_S);
  data.summary = SmoothedContactSummary();
  data.dt = dt;
  data.has_derivatives = false;
  computeKinematics(model, data, q, v, tau, dt);
  initialGuess(model, data, v, dt, solution);
  newton(model, data, dt);
  // Forces and cost at the returned iterate, which is always feasible.
  double c = 0;
  cost(model, data, data.v_next, dt, c);
  data.summary.cost = c;
  data.force = data.impulse / dt;
}

/// d(J_i v+)/dq at fixed v+ for every point, plus e_z dphi_i/dq / dt: the whole direct
/// q-dependence of the point's argument (J^t_i v+, w_i) of the barrier. Into point_velocity_dq.
/// From the LOCAL frame derivatives (getFrameVelocityDerivatives after
/// computeForwardKinematicsDerivatives at (q, v+)): the world velocity is R v_local, and R turns
/// with the frame, d(R v_local) = R (d v_local - [v_local]x J_angular dq).
void computePointVelocityDerivatives(const SmoothedContactModel& model, SmoothedContactData& data,
                                     const Eigen::Ref<const Eigen::VectorXd>& q, double dt) {
  const pinocchio::Model& m = data.inertias.model;
  data.scratch.setZero();
  pinocchio::computeForwardKinematicsDerivatives(m, data.pin, q, data.v_next, data.scratch);
  for (int i = 0; i < model.numPoints(); ++i) {
    const pinocchio::JointIndex joint = model.pointJoints()[i];
    const pinocchio::SE3& placement = model.pointPlacements()[i];
    data.velocity_dq.setZero();
    data.velocity_dv.setZero();
    pinocchio::getFrameVelocityDerivatives(m, data.pin, joint, placement, pinocchio::LOCAL,
                                           data.velocity_dq, data.velocity_dv);
    const Matrix3 R = data.pin.oMi[joint].rotation() * placement.rotation();
    const Eigen::Vector3d local = R.transpose() * data.point_velocity.segment<3>(3 * i);
    // velocity_dv is the frame's LOCAL Jacobian; reuse its top rows as scratch.
    data.velocity_dq.topRows<3>().noalias() -= skew(local) * data.velocity_dv.bottomRows<3>();
    auto D = data.point_velocity_dq.middleRows<3>(3 * i);
    D.noalias() = R * data.velocity_dq.topRows<3>();
    // dphi_i/dq is the vertical row of the point's world-axes Jacobian.
    D.row(2) += data.jacobian.row(3 * i + 2) / dt;
  }
}

/// dg/dq and dg/dv at fixed v+, g = dt (RNEA(q, v, (v+ - v)/dt; f_ext) - tau) with the contact
/// forces f_ext = lambda / dt held fixed in the world (file comment).
void computeResidualDerivatives(const SmoothedContactModel& model, SmoothedContactData& data,
                                const Eigen::Ref<const Eigen::VectorXd>& q,
                                const Eigen::Ref<const Eigen::VectorXd>& v, double dt) {
  const pinocchio::Model& m = data.inertias.model;
  // The forces in the frames of their joints (Pinocchio's f_ext convention).
  for (pinocchio::Force& f : data.external_forces) f.setZero();
  for (int i = 0; i < model.numPoints(); ++i) {
    const pinocchio::JointIndex joint = model.pointJoints()[i];
    const Eigen::Vector3d local =
        data.pin.oMi[joint].rotation().transpose() * data.force.segment<3>(3 * i);
    data.external_forces[joint].linear() += local;
    data.external_forces[joint].angular() += model.pointPlacements()[i].translation().cross(local);
  }
  data.mean_acceleration = (data.v_next - v) / dt;
  pinocchio::computeRNEADerivatives(m, data.pin, q, v, data.mean_acceleration,
                                    data.external_forces);
  data.dg_dq = dt * data.pin.dtau_dq;
  data.dg_dv = dt * data.pin.dtau_dv - data.M;

  for (int i = 0; i < model.numPoints(); ++i) {
    const pinocchio::JointIndex joint = model.pointJoints()[i];
    const Eigen::Vector3d r = model.pointPlacements()[i].translation();
    const Eigen::Vector3d local =
        data.pin.oMi[joint].rotation().transpose() * data.force.segment<3>(3 * i);
    // Pinocchio holds f_ext fixed in the joint frame; a world-fixed force turns in that frame
    // by -delta omega: d f_local = [f_local]x J_angular dq, d n_local = [r]x d f_local.
    data.frame_jacobian.setZero();
    pinocchio::getJointJacobian(m, data.pin, joint, pinocchio::LOCAL, data.frame_jacobian);
    const Matrix3 turn = skew(local);
    data.velocity_dv.topRows<3>().noalias() = turn * data.frame_jacobian.bottomRows<3>();
    data.velocity_dv.bottomRows<3>().noalias() = skew(r) * data.velocity_dv.topRows<3>();
    data.velocity_dv *= -dt;
    // lambda_i moves with q through (J^t_i v+, w_i): dlambda = -K_i D_i dq, and g has -J^T lambda.
    data.kd.middleRows<3>(3 * i).noalias() = data.barrier_hessian.middleCols<3>(3 * i).lazyProduct(
        data.point_velocity_dq.middleRows<3>(3 * i));
    // Both terms live on the point's columns only (its joint's support), run by run.
    const auto J_i = data.jacobian.middleRows<3>(3 * i);
    const auto kd_i = data.kd.middleRows<3>(3 * i);
    for (const SmoothedContactModel::ColumnRun& a : model.pointColumnRuns()[i]) {
      for (const SmoothedContactModel::ColumnRun& b : model.pointColumnRuns()[i]) {
        auto block = data.dg_dq.block(a.velocity_index, b.velocity_index, a.length, b.length);
        block.noalias() +=
            data.frame_jacobian.middleCols(a.velocity_index, a.length)
                .transpose()
                .lazyProduct(data.velocity_dv.middleCols(b.velocity_index, b.length));
        block.noalias() += J_i.middleCols(a.velocity_index, a.length)
                               .transpose()
                               .lazyProduct(kd_i.middleCols(b.velocity_index, b.length));
      }
    }
  }
}

}  // namespace

const Eigen::VectorXd& smoothedContactStep(const SmoothedContactModel& model,
                                           SmoothedContactData& data,
                                           const Eigen::Ref<const Eigen::VectorXd>& q,
                                           const Eigen::Ref<const Eigen::VectorXd>& v,
                                           const Eigen::Ref<const Eigen::VectorXd>& tau,
                                           const Eigen::Ref<const Eigen::VectorXd>& theta_S,
                                           double dt) {
  solve(model, data, q, v, tau, theta_S, dt, nullptr);
  return data.v_next;
}

void computeSmoothedContactDerivatives(const SmoothedContactModel& model, SmoothedContactData& data,
                                       const Eigen::Ref<const Eigen::VectorXd>& q,
                                       const Eigen::Ref<const Eigen::VectorXd>& v,
                                       const Eigen::Ref<const Eigen::VectorXd>& tau,
                                       const Eigen::Ref<const Eigen::VectorXd>& theta_S, double dt,
                                       const Eigen::VectorXd* solution) {
  solve(model, data, q, v, tau, theta_S, dt, solution);
  // H and K_i at the returned v+ (the last Newton step moved it after the last factorization).
  if (!assembleNewtonSystem(model, data, data.v_next, dt, true)) {
    // Unreachable for a feasible v+ and a positive-definite M; keep the outputs finite.
    data.summary.status = SmoothedContactStatus::NumericalFailure;
    return;
  }
  pinocchio::cholesky::computeMinv(data.inertias.model, data.factorization, data.hessian_inverse);

  computePointVelocityDerivatives(model, data, q, dt);
  computeResidualDerivatives(model, data, q, v, dt);

  // Eq. 34: dv+/dx = -H^-1 dg/dx; dg/dtau = -dt I, dg/dtheta = dt Y_S dpi/dtheta.
  data.dvnext_dq.noalias() = -data.hessian_inverse * data.dg_dq;
  data.dvnext_dv.noalias() = -data.hessian_inverse * data.dg_dv;
  data.dvnext_dtau = dt * data.hessian_inverse;
  computeRestrictedRegressor(model.regressor(), data.regressor, q, v, data.mean_acceleration);
  computeParameterJacobian(model.regressor(), data.regressor, model.parametrization(), theta_S);
  model.support().negativeProduct(data.hessian_inverse, data.regressor.dtau_dtheta,
                                  data.dvnext_dtheta);
  data.dvnext_dtheta *= dt;
  data.has_derivatives = true;
}

// df_i/dx = -(1/dt) K_i (J_i dv+/dx + [D_i for q]), stacked over the points: kj = blockdiag(K_i) J
// and kd = blockdiag(K_i) D were left by the derivatives' Hessian and q residual.
void computeSmoothedContactForceDerivatives(SmoothedContactData& data) {
  if (!data.has_derivatives)
    throw InputError(
        "smoothed contact force derivatives: expected computeSmoothedContactDerivatives on this "
        "step first");
  const double scale = -1 / data.dt;
  data.dforce_dq.noalias() = data.kj * data.dvnext_dq;
  data.dforce_dq += data.kd;
  data.dforce_dq *= scale;
  data.dforce_dv.noalias() = scale * data.kj * data.dvnext_dv;
  data.dforce_dtau.noalias() = scale * data.kj * data.dvnext_dtau;
  data.dforce_dtheta.noalias() = scale * data.kj * data.dvnext_dtheta;
}

}  // namespace heft::dynamics
