#include "heft/results/truth.hpp"

#include <algorithm>
#include <cmath>
#include <iomanip>
#include <limits>
#include <sstream>
#include <utility>

#include <Eigen/Cholesky>
#include <Eigen/Eigenvalues>

#include "heft/common/error.hpp"
#include "heft/common/format.hpp"
#include "heft/inertia/inertia.hpp"
#include "heft/io/signal.hpp"

namespace heft::results {
namespace {

std::string num(double x, int precision = 4) { return formatNumber(x, precision); }

const JointFrictionTruth* findJoint(const std::vector<JointFrictionTruth>& list,
                                    const std::string& joint) {
  for (const auto& f : list) {
    if (f.joint == joint) return &f;
  }
  return nullptr;
}

double relative(double est, double truth) {
  return truth != 0 ? std::abs(est - truth) / std::abs(truth) : std::abs(est - truth);
}

}  // namespace

double pseudoInertiaDistance(const Matrix4& A, const Matrix4& B) {
  require(A.allFinite() && B.allFinite(), "pseudo-inertias", "finite matrices", "non-finite ones");
  // the eigenvalues of L^-1 A L^-T, B = L L^T
  const Eigen::LLT<Matrix4> chol(B);
  require(chol.info() == Eigen::Success, "the true pseudo-inertia", "positive definite",
          "a matrix whose Cholesky factorization fails");
  const Matrix4 L_inv = chol.matrixL().solve(Matrix4::Identity());
  const Matrix4 C = L_inv * A * L_inv.transpose();
  const Eigen::SelfAdjointEigenSolver<Matrix4> eig(0.5 * (C + C.transpose()),
                                                   Eigen::EigenvaluesOnly);
  if (eig.eigenvalues().minCoeff() <= 0) return std::numeric_limits<double>::infinity();
  return eig.eigenvalues().array().log().matrix().norm();
}

BodyError bodyError(const std::string& name, const Vector10& pe, const Vector10& pt) {
  BodyError e;
  e.name = name;
  e.mass_true = pt[0];
  e.mass_estimate = pe[0];
  e.mass_relative = relative(pe[0], pt[0]);
  e.com_true = inertia::centerOfMass(pt);
  const Matrix3 It = inertia::rotationalInertiaAtCom(pt);
  if (pe[0] > 0) {
    e.com_estimate = inertia::centerOfMass(pe);
    e.com_error = (e.com_estimate - e.com_true).norm();
    e.inertia_relative = (inertia::rotationalInertiaAtCom(pe) - It).norm() / It.norm();
    e.pseudo_inertia_distance =
        pseudoInertiaDistance(inertia::pseudoInertiaFromPi(pe), inertia::pseudoInertiaFromPi(pt));
  } else {
    e.com_error = e.inertia_relative = e.pseudo_inertia_distance =
        std::numeric_limits<double>::infinity();
  }
  return e;
}

Vector10 truthPi(const model::RobotModel& robot, const io::Log& log, pinocchio::JointIndex joint,
                 const std::string& name) {
  require(log.truth && log.truth->body_pi.rows() > 0, "truth/bodies", "true body parameters",
          "a log without them");
  const auto& t = *log.truth;
  for (std::size_t i = 0; i < t.body_names.size(); ++i) {
    if (robot.bodyIndex(t.body_names[i]) == joint) return t.body_pi.row(i).transpose();
  }
  require(false, "truth/bodies/names", "body " + (name.empty() ? robot.body(joint).name : name),
          "a log without it");
  return Vector10::Zero();
}

Eigen::VectorXd truthLinearVector(const model::RobotModel& robot, const io::Log& log,
                                  const ParameterLayout& layout,
                                  const std::vector<JointFrictionTruth>& friction) {
  Eigen::VectorXd x = Eigen::VectorXd::Zero(layout.linearDimension());
  for (int b = 0; b < layout.numBodies(); ++b) {
    x.segment<10>(10 * b) = truthPi(robot, log, layout.bodies[b], layout.body_names[b]);
  }
  for (int f = 0; f < layout.numFriction(); ++f) {
    if (const auto* t = findJoint(friction, layout.friction_joints[f])) {
      x[layout.frictionOffset() + 2 * f] = t->coulomb;
      x[layout.frictionOffset() + 2 * f + 1] = t->viscous;
    }
  }
  for (int i = 0; i < layout.numArmature(); ++i) {
    if (const auto* t = findJoint(friction, layout.armature_joints[i])) {
      x[layout.armatureOffset() + i] = t->armature;
    }
  }
  return x;
}

TruthErrors truthErrors(const model::RobotModel& robot, const io::Log& log,
                        const ParameterLayout& layout, const Eigen::VectorXd& linear,
                        const std::vector<JointFrictionTruth>& friction) {
  require(linear.size() == layout.linearDimension(), "estimate",
          "size " + std::to_string(layout.linearDimension()),
          "size " + std::to_string(linear.size()));
  const Eigen::VectorXd truth = truthLinearVector(robot, log, layout, friction);
  TruthErrors out;
  for (int b = 0; b < layout.numBodies(); ++b) {
    out.bodies.push_back(
        bodyError(layout.body_names[b], linear.segment<10>(10 * b), truth.segment<10>(10 * b)));
  }
  std::vector<std::string> joints = layout.friction_joints;
  for (const auto& j : layout.armature_joints) {
    if (std::find(joints.begin(), joints.end(), j) == joints.end()) joints.push_back(j);
  }
  for (const auto& j : joints) {
    JointError e;
    e.joint = j;
    const auto* t = findJoint(friction, j);
    for (int f = 0; f < layout.numFriction(); ++f) {
      if (layout.friction_joints[f] != j) continue;
      e.coulomb_estimate = linear[layout.frictionOffset() + 2 * f];
      e.viscous_estimate = linear[layout.frictionOffset() + 2 * f + 1];
      if (t) {
        e.coulomb_true = t->coulomb;
        e.viscous_true = t->viscous;
        e.coulomb_relative = relative(e.coulomb_estimate, t->coulomb);
        e.viscous_relative = relative(e.viscous_estimate, t->viscous);
      }
    }
    for (int i = 0; i < layout.numArmature(); ++i) {
      if (layout.armature_joints[i] != j) continue;
      e.armature_estimate = linear[layout.armatureOffset() + i];
      if (t) {
        e.armature_true = t->armature;
        e.armature_relative = relative(e.armature_estimate, t->armature);
      }
    }
    out.joints.push_back(e);
  }
  return out;
}

std::string TruthErrors::report() const {
  std::ostringstream s;
  s << std::left << std::setw(22) << "body" << std::setw(12) << "mass true" << std::setw(12)
    << "estimate" << std::setw(10) << "rel err" << std::setw(12) << "COM err [m]"
    << "inertia rel err\n";
  for (const auto& b : bodies) {
    s << std::left << std::setw(22) << b.name << std::setw(12) << num(b.mass_true) << std::setw(12)
      << num(b.mass_estimate) << std::setw(10) << num(b.mass_relative, 3) << std::setw(12)
      << num(b.com_error, 3) << num(b.inertia_relative, 3) << "\n";
  }
  for (const auto& j : joints) {
    s << std::left << std::setw(22) << j.joint << "coulomb " << num(j.coulomb_estimate) << " / "
      << num(j.coulomb_true) << " (" << num(j.coulomb_relative, 3) << "), viscous "
      << num(j.viscous_estimate) << " / " << num(j.viscous_true) << " ("
      << num(j.viscous_relative, 3) << "), armature " << num(j.armature_estimate) << " / "
      << num(j.armature_true) << " (" << num(j.armature_relative, 3) << ")\n";
  }
  return s.str();
}

std::optional<ContactForceErrors> contactForceErrors(const io::Log& log,
                                                     const Eigen::VectorXd& time,
                                                     const std::vector<std::string>& names,
                                                     const Eigen::MatrixXd& force,
                                                     double threshold) {
  if (!log.truth || log.truth->time.size() == 0 || log.truth->contact_forces.size() == 0)
    return std::nullopt;
  const io::TruthSeries& truth = *log.truth;
  // (estimate point, the truth points it stands for): the one of its name, else those the log's
  // contact points put on the frame of that name (a flat foot's corners)
  std::vector<std::pair<int, std::vector<int>>> pairs;
  const std::vector<model::ContactPoint> defined =
      log.contacts ? log.contacts->definedPoints() : std::vector<model::ContactPoint>();
  for (std::size_t i = 0; i < names.size(); ++i) {
    std::vector<int> points;
    for (std::size_t j = 0; j < truth.contact_names.size(); ++j)
      if (truth.contact_names[j] == names[i]) points.push_back(static_cast<int>(j));
    const bool by_name = !points.empty();
    for (std::size_t j = 0; j < truth.contact_names.size() && !by_name; ++j)
      for (const model::ContactPoint& p : defined)
        if (p.name == truth.contact_names[j] && p.frame == names[i])
          points.push_back(static_cast<int>(j));
    if (!points.empty()) pairs.emplace_back(static_cast<int>(i), points);
  }
  ContactForceErrors e;
  e.threshold = threshold;
  e.points = static_cast<int>(pairs.size());
  double squared = 0, reference = 0;
  long agree = 0;
  // the step [t_k, t_k+1): the estimate is its impulse over dt, the truth its samples' mean
  for (Eigen::Index k = 0; k + 1 < time.size() && !pairs.empty(); ++k) {
    const int first = io::nearestSample(truth.time, time(k));
    if (std::abs(truth.time(first) - time(k)) > 1e-6) continue;
    int end = first + 1;
    while (end < truth.time.size() && truth.time(end) < time(k + 1) - 1e-6) ++end;
    ++e.knots;
    for (const auto& [i, points] : pairs) {
      const Eigen::Vector3d f = force.row(k).segment<3>(3 * i).transpose();
      Eigen::Vector3d f_true = Eigen::Vector3d::Zero();
      for (int t = first; t < end; ++t)
        for (const int j : points)
          f_true += truth.contact_forces.row(t).segment<3>(3 * j).transpose();
      f_true /= end - first;
      squared += (f - f_true).squaredNorm();
      reference += f_true.squaredNorm();
      agree += (f.z() > threshold) == (f_true.z() > threshold);
    }
  }
  if (e.knots == 0) return std::nullopt;
  const double n = static_cast<double>(e.knots) * e.points;
  e.rmse = std::sqrt(squared / n);
  e.relative =
      reference > 0 ? std::sqrt(squared / reference) : std::numeric_limits<double>::infinity();
  e.state_agreement = agree / n;
  return e;
}

std::string ContactForceErrors::report() const {
  std::ostringstream s;
  s << "  contact force RMSE " << num(rmse, 3) << " N, relative error " << num(100 * relative, 3)
    << " %, contact state agreement " << num(100 * state_agreement, 3) << " % (" << points
    << " points, " << knots << " knots, in contact above " << num(threshold, 3) << " N)\n";
  return s.str();
}

std::string TrajectoryErrors::report() const {
  std::ostringstream s;
  s << "  joint position RMSE " << num(joint_position, 3) << " rad (encoders "
    << num(joint_position_raw, 3) << ")\n"
    << "  joint velocity RMSE " << num(joint_velocity, 3) << " rad/s (central differences "
    << num(joint_velocity_raw, 3) << ")\n";
  if (has_base)
    s << "  base position RMSE  " << num(base_position, 3) << " m (motion capture "
      << num(base_position_raw, 3) << ")\n"
      << "  base rotation RMSE  " << num(base_rotation, 3) << " rad (motion capture "
      << num(base_rotation_raw, 3) << ")\n";
  return s.str();
}

}  // namespace heft::results
