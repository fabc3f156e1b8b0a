#include "heft/model/parameter_constraints.hpp"

#include <cmath>

#include "heft/common/dense_qp.hpp"
#include "heft/common/error.hpp"
#include "heft/common/format.hpp"

namespace heft::model {
namespace {

std::string num(double x, int precision = 6) { return formatNumber(x, precision); }

int bodyPosition(const std::vector<std::string>& body_names, const std::string& name,
                 const std::string& what) {
  for (std::size_t b = 0; b < body_names.size(); ++b) {
    if (body_names[b] == name) return static_cast<int>(b);
  }
  std::string valid;
  for (const auto& n : body_names) valid += (valid.empty() ? "" : ", ") + n;
  require(false, what, "an identified body (" + valid + ")", "\"" + name + "\"");
  return -1;
}

}  // namespace

LinearConstraint totalMassConstraint(const RobotModel& robot,
                                     const std::vector<pinocchio::JointIndex>& bodies,
                                     double total_mass) {
  require(std::isfinite(total_mass) && total_mass > 0, "total_mass", "a finite mass > 0 kg",
          num(total_mass, 4));
  LinearConstraint c;
  c.name = "total mass " + num(total_mass) + " kg";
  const int nb = static_cast<int>(bodies.size());
  c.E = Eigen::MatrixXd::Zero(1, 10 * nb);
  double rest = robot.totalMass();
  for (int b = 0; b < nb; ++b) {
    c.E(0, 10 * b) = 1.0;
    rest -= robot.pi(bodies[b])[0];
  }
  c.e = Eigen::VectorXd::Constant(1, total_mass - rest);
  require(c.e[0] > 0, "total_mass",
          "more than the mass of the bodies not identified (" + num(rest) + " kg)",
          num(total_mass) + " kg");
  return c;
}

LinearConstraint symmetryConstraint(const std::vector<std::string>& body_names,
                                    const std::string& left, const std::string& right) {
  const int l = bodyPosition(body_names, left, "symmetry body");
  const int r = bodyPosition(body_names, right, "symmetry body");
  require(l != r, "symmetry", "two different bodies", left + " twice");
  LinearConstraint c;
  c.name = "symmetry " + left + " = mirror(" + right + ")";
  const int nb = static_cast<int>(body_names.size());
  c.E = Eigen::MatrixXd::Zero(10, 10 * nb);
  Eigen::Matrix<double, 10, 1> mirror = Eigen::Matrix<double, 10, 1>::Ones();
  mirror[2] = mirror[5] = mirror[8] = -1;  // h_y, I_xy, I_yz
  c.E.block<10, 10>(0, 10 * l).setIdentity();
  c.E.block<10, 10>(0, 10 * r) = -Eigen::Matrix<double, 10, 10>(mirror.asDiagonal());
  c.e = Eigen::VectorXd::Zero(10);
  return c;
}

LinearConstraint massBoundsConstraint(const std::vector<std::string>& body_names,
                                      const std::string& body, double lower, double upper) {
  const int b = bodyPosition(body_names, body, "mass bounds body");
  require(!std::isnan(lower) && !std::isnan(upper) && lower <= upper && upper > 0 &&
              lower < HUGE_VAL && upper > -HUGE_VAL,
          "mass bounds of " + body, "lower <= upper, upper > 0 [kg]",
          num(lower) + ", " + num(upper));
  LinearConstraint c;
  c.name = "mass of " + body + " in [" + num(lower) + ", " + num(upper) + "] kg";
  c.equality = false;
  const int nb = static_cast<int>(body_names.size());
  const int rows = (std::isfinite(lower) ? 1 : 0) + (std::isfinite(upper) ? 1 : 0);
  c.E = Eigen::MatrixXd::Zero(rows, 10 * nb);
  c.e = Eigen::VectorXd::Zero(rows);
  int row = 0;
  if (std::isfinite(lower)) {
    c.E(row, 10 * b) = 1;
    c.e[row++] = lower;
  }
  if (std::isfinite(upper)) {
    c.E(row, 10 * b) = -1;
    c.e[row++] = -upper;
  }
  return c;
}

StackedConstraints stackConstraints(const std::vector<LinearConstraint>& constraints, int n) {
  int ne = 0, ni = 0;
  for (const LinearConstraint& c : constraints)
    (c.equality ? ne : ni) += static_cast<int>(c.E.rows());
  StackedConstraints s;
  s.E_eq.resize(ne, n);
  s.E_in.resize(ni, n);
  s.e_eq.resize(ne);
  s.e_in.resize(ni);
  int ie = 0, ii = 0;
  for (const LinearConstraint& c : constraints) {
    const int rows = static_cast<int>(c.E.rows());
    int& at = c.equality ? ie : ii;
    (c.equality ? s.E_eq : s.E_in).middleRows(at, rows) = c.E;
    (c.equality ? s.e_eq : s.e_in).segment(at, rows) = c.e;
    at += rows;
  }
  return s;
}

void requireConsistent(const std::vector<LinearConstraint>& constraints,
                       const Eigen::VectorXd& nominal_pi) {
  const int n = static_cast<int>(nominal_pi.size());
  require(n > 0 && n % 10 == 0, "parameter constraints", "identified bodies (10 entries each)",
          std::to_string(n) + " entries");
  int ne = 0;
  for (const LinearConstraint& c : constraints) {
    require(c.E.cols() == n && c.E.rows() == c.e.size() && c.E.allFinite() && c.e.allFinite(),
            "constraint " + c.name,
            "finite rows over the " + std::to_string(n / 10) + " identified bodies' parameters",
            std::to_string(c.E.rows()) + " x " + std::to_string(c.E.cols()) + " rows");
    if (c.equality) ne += static_cast<int>(c.E.rows());
  }
  require(ne <= n, "parameter constraints",
          "at most " + std::to_string(n) + " equality rows (10 per identified body)",
          std::to_string(ne) + " rows");
  if (constraints.empty()) return;
  // A common point with every mass above zero, nearest the nominal parameters.
  const StackedConstraints s = stackConstraints(constraints, n);
  const int nb = n / 10, ni = static_cast<int>(s.e_in.size());
  Eigen::MatrixXd C = Eigen::MatrixXd::Zero(ni + nb, n);
  Eigen::VectorXd c(ni + nb);
  C.topRows(ni) = s.E_in;
  c.head(ni) = -s.e_in;
  for (int b = 0; b < nb; ++b) {
    C(ni + b, 10 * b) = 1;
    c[ni + b] = -1e-6;  // kg: a body has mass
  }
  std::string names;
  for (const LinearConstraint& k : constraints) names += (names.empty() ? "" : "; ") + k.name;
  DenseQp qp(n, ne, ni + nb);
  const DenseQp::Status status =
      qp.solve(Eigen::MatrixXd::Identity(n, n), -nominal_pi, s.E_eq, -s.e_eq, C, c);
  require(status == DenseQp::Status::Solved, "parameter constraints",
          "constraints with a common point where every identified body has mass",
          "contradictory parameter constraints (" + names + ")");
}

}  // namespace heft::model
