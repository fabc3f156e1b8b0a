#pragma once
/// \file Linear constraints on the stacked inertial parameters pi_S of the identified bodies (10
/// per body, in the bodies' order): E pi_S = e (total mass, left-right symmetry) or E pi_S >= e
/// (mass bounds), the bayesian-sysid paper's parameter equalities and inequalities (eqs. 1e-1f).
/// heft identify's MAP takes the equalities; the trajectory MAP (heft::estimation) takes both, at
/// its arrival node (eq. 81).
#include <string>
#include <vector>

#include <Eigen/Core>

#include "heft/model/model.hpp"

namespace heft::model {

struct LinearConstraint {
  std::string name;
  Eigen::MatrixXd E;     ///< k x 10 nb
  Eigen::VectorXd e;     ///< k
  bool equality = true;  ///< E pi_S = e; false: E pi_S >= e
};

/// The identified bodies' masses add up so that the robot's total mass is `total_mass` [kg]
/// (bodies outside S keep their nominal masses). \throws InputError when total_mass is not above
/// the mass of the bodies outside S.
LinearConstraint totalMassConstraint(const RobotModel& robot,
                                     const std::vector<pinocchio::JointIndex>& bodies,
                                     double total_mass);
/// Body `left` is the mirror image of body `right` through the base's x-z plane:
/// pi_left = M pi_right with M negating h_y, I_xy and I_yz. Assumes the two body frames are
/// mirror images of each other with parallel axes (true for go2's and TALOS's legs). Both must be
/// among `body_names` (S).
LinearConstraint symmetryConstraint(const std::vector<std::string>& body_names,
                                    const std::string& left, const std::string& right);
/// lower <= m_body <= upper [kg] (two inequality rows; an infinite bound gives no row).
LinearConstraint massBoundsConstraint(const std::vector<std::string>& body_names,
                                      const std::string& body, double lower, double upper);

/// A set's equalities and inequalities, each stacked in the set's order: E_eq pi_S = e_eq,
/// E_in pi_S >= e_in (n columns: 10 per identified body).
struct StackedConstraints {
  Eigen::MatrixXd E_eq, E_in;
  Eigen::VectorXd e_eq, e_in;
};
StackedConstraints stackConstraints(const std::vector<LinearConstraint>& constraints, int n);

/// Checks a constraint set before any solve: finite rows of the right width, no more equality
/// rows than pi_S's 10 nb entries, and a common point of every constraint with every body's mass
/// positive (a quadratic program nearest the nominal pi_S). \throws InputError naming the
/// constraints when they contradict each other ("contradictory parameter constraints").
void requireConsistent(const std::vector<LinearConstraint>& constraints,
                       const Eigen::VectorXd& nominal_pi);

}  // namespace heft::model
