#include "heft/results/body_estimate.hpp"

#include <algorithm>
#include <cmath>
#include <iomanip>
#include <sstream>

#include "heft/common/format.hpp"
#include "heft/inertia/inertia.hpp"

namespace heft::results {

namespace {

// [m, c (3), I_c (xx, xy, yy, xz, yz, zz)] of a pi: what a URDF writes.
Vector10 urdfQuantities(const Vector10& pi) {
  Vector10 out;
  const double m = pi[0];
  const Eigen::Vector3d h = pi.segment<3>(1);
  Eigen::Matrix3d S;  // [h]x
  S << 0, -h.z(), h.y(), h.z(), 0, -h.x(), -h.y(), h.x(), 0;
  Eigen::Matrix3d Io;
  Io << pi[4], pi[5], pi[7], pi[5], pi[6], pi[8], pi[7], pi[8], pi[9];
  // I_o = I_c - m [c]x [c]x, so I_c = I_o + [h]x [h]x / m
  const Eigen::Matrix3d Ic = Io + S * S / m;
  out << m, h / m, Ic(0, 0), Ic(0, 1), Ic(1, 1), Ic(0, 2), Ic(1, 2), Ic(2, 2);
  return out;
}

// Standard deviations of urdfQuantities by the delta method. The Jacobian is taken by central
// differences: this is first-order uncertainty propagation, not a derivative a solver relies on.
Vector10 urdfQuantitiesStd(const Vector10& pi, const Eigen::MatrixXd& covariance) {
  Eigen::Matrix<double, 10, 10> J;
  for (int i = 0; i < 10; ++i) {
    const double h = 1e-6 * std::max(std::abs(pi[i]), 1e-3 * std::abs(pi[0]) + 1e-9);
    Vector10 plus = pi, minus = pi;
    plus[i] += h;
    minus[i] -= h;
    J.col(i) = (urdfQuantities(plus) - urdfQuantities(minus)) / (2 * h);
  }
  const Eigen::MatrixXd C = J * covariance * J.transpose();
  return C.diagonal().cwiseMax(0).cwiseSqrt();
}

Eigen::Matrix3d symmetric3(double xx, double xy, double yy, double xz, double yz, double zz) {
  Eigen::Matrix3d I;
  I << xx, xy, xz, xy, yy, yz, xz, yz, zz;
  return I;
}

std::string fixed(double x, int precision = 4) { return formatNumber(x, precision); }

}  // namespace

BodyEstimate makeBodyEstimate(const std::string& name, const Vector10& prior_pi,
                              const Vector10& prior_std, const Vector10& pi,
                              const Eigen::MatrixXd& covariance) {
  BodyEstimate b;
  b.name = name;
  b.prior_pi = prior_pi;
  b.prior_std = prior_std;
  b.pi = pi;
  b.pi_std = covariance.diagonal().cwiseMax(0).cwiseSqrt();
  const inertia::ConsistencyReport consistency = inertia::checkConsistencyMargin(pi);
  b.consistent = consistency.consistent;
  b.relative_margin = consistency.relative_margin;
  if (pi[0] > 0) {
    const Vector10 u = urdfQuantities(pi);
    const Vector10 s = urdfQuantitiesStd(pi, covariance);
    b.mass = u[0];
    b.mass_std = s[0];
    b.com = u.segment<3>(1);
    b.com_std = s.segment<3>(1);
    b.inertia = symmetric3(u[4], u[5], u[6], u[7], u[8], u[9]);
    b.inertia_std = symmetric3(s[4], s[5], s[6], s[7], s[8], s[9]);
  } else {
    b.mass = pi[0];
  }
  return b;
}

bool moveInsideMargin(const std::string& body, Vector10& pi, const Vector10& prior_pi,
                      std::vector<std::string>& warnings) {
  const Vector10 estimate = pi;
  const double alpha = inertia::moveInsideMargin(pi, prior_pi);
  if (alpha <= 0) return false;
  warnings.push_back("body " + body +
                     ": the estimate lies on the boundary of physical consistency (the data pull "
                     "it outside); moved inside the consistency margin by the convex combination "
                     "(1 - a) pi + a pi_prior, a = " +
                     fixed(alpha, 1) + ", max |change| " +
                     fixed((pi - estimate).cwiseAbs().maxCoeff(), 2));
  return true;
}

void appendNearBoundaryWarnings(const std::vector<BodyEstimate>& bodies,
                                std::vector<std::string>& warnings) {
  for (const BodyEstimate& b : bodies) {
    if (!b.consistent || b.relative_margin >= kNearBoundaryRelativeMargin) continue;
    warnings.push_back(
        "body " + b.name +
        ": near the boundary of physical consistency (smallest second moment "
        "about the COM " +
        fixed(b.relative_margin, 2) +
        " of their sum: a thin plate or rod); the data hardly constrain its shape: excite the "
        "body more or tighten its inertia prior");
  }
}

std::string bodiesReport(const std::vector<BodyEstimate>& bodies, bool with_std) {
  std::ostringstream s;
  s << (with_std ? "bodies (prior -> estimate +- std; " : "bodies (start -> estimate; ")
    << "COM [m] and inertia about the COM [kg m^2], body frame)\n";
  const auto pm = [with_std](double std, const char* unit) {
    return with_std ? " +- " + fixed(std, 2) + unit : std::string(*unit ? unit : "");
  };
  for (const BodyEstimate& b : bodies) {
    const Vector10 prior = urdfQuantities(b.prior_pi);
    s << "  " << b.name << (b.consistent ? "" : "   ** NOT physically consistent **") << "\n";
    s << "    mass  " << std::setw(10) << fixed(prior[0]) << " -> " << std::setw(10)
      << fixed(b.mass) << pm(b.mass_std, " kg") << "\n";
    const char* axes[3] = {"x", "y", "z"};
    for (int i = 0; i < 3; ++i)
      s << "    com " << axes[i] << " " << std::setw(10) << fixed(prior[1 + i]) << " -> "
        << std::setw(10) << fixed(b.com[i]) << pm(b.com_std[i], "") << "\n";
    const char* names[6] = {"Ixx", "Ixy", "Iyy", "Ixz", "Iyz", "Izz"};
    const int rr[6] = {0, 0, 1, 0, 1, 2}, cc[6] = {0, 1, 1, 2, 2, 2};
    for (int i = 0; i < 6; ++i)
      s << "    " << names[i] << "  " << std::setw(10) << fixed(prior[4 + i]) << " -> "
        << std::setw(10) << fixed(b.inertia(rr[i], cc[i])) << pm(b.inertia_std(rr[i], cc[i]), "")
        << "\n";
  }
  return s.str();
}

std::string actuatorTermsReport(const std::vector<JointFrictionEstimate>& friction,
                                const std::vector<JointScalarEstimate>& armature,
                                const std::vector<JointScalarEstimate>& torque_offsets) {
  std::ostringstream s;
  if (!friction.empty()) {
    s << "\nfriction (prior -> estimate +- std)\n";
    for (const JointFrictionEstimate& f : friction)
      s << "  " << f.joint << "  coulomb " << fixed(f.coulomb_prior) << " -> " << fixed(f.coulomb)
        << " +- " << fixed(f.coulomb_std, 2) << " N m, viscous " << fixed(f.viscous_prior) << " -> "
        << fixed(f.viscous) << " +- " << fixed(f.viscous_std, 2) << " N m s/rad\n";
  }
  if (!armature.empty()) {
    s << "\narmature (prior -> estimate +- std)\n";
    for (const JointScalarEstimate& a : armature)
      s << "  " << a.joint << "  " << fixed(a.prior) << " -> " << fixed(a.value) << " +- "
        << fixed(a.std, 2) << " kg m^2\n";
  }
  if (!torque_offsets.empty()) {
    s << "\ntorque offsets (measured = true + offset; prior -> estimate +- std)\n";
    for (const JointScalarEstimate& o : torque_offsets)
      s << "  " << o.joint << "  " << fixed(o.prior) << " -> " << fixed(o.value) << " +- "
        << fixed(o.std, 2) << " N m\n";
  }
  return s.str();
}

}  // namespace heft::results
