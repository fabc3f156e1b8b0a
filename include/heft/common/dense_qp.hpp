#pragma once
/// \file A small dense strictly convex quadratic program with linear equalities and inequalities,
///   min_x 0.5 x^T H x + g^T x   s.t.   A x + a = 0,   C x + c >= 0,
/// by the dual active-set method of Goldfarb and Idnani (1983): start at the unconstrained
/// minimum, add the equalities, then the most violated inequality at a time, dropping an active
/// inequality whose multiplier would turn negative. Every iterate is dual feasible, so the method
/// needs no feasible starting point and reports infeasibility when a violated constraint cannot be
/// added. Each step solves with H's Cholesky factor (computed once) and the active normals' small
/// Gram matrix: O(n^2 q) per step for q active constraints; meant for n up to a few hundred
/// (the parameter step of the trajectory MAP, docs/estimation.md, "Parameter constraints").
/// Buffers are sized by the constructor; only the small Gram factorization resizes in solve().
#include <string>
#include <vector>

#include <Eigen/Cholesky>
#include <Eigen/Core>

namespace heft {

class DenseQp {
 public:
  enum class Status {
    Solved,
    Infeasible,           ///< the constraints have no common point (a violated one cannot be added)
    NotPositiveDefinite,  ///< H is not positive definite
    MaxIterations,
  };

  /// n variables, ne equalities, ni inequalities.
  DenseQp(int n, int ne, int ni);

  /// \pre H is n x n symmetric, g n, A ne x n, a ne, C ni x n, c ni (checked: InputError).
  Status solve(const Eigen::MatrixXd& H, const Eigen::VectorXd& g, const Eigen::MatrixXd& A,
               const Eigen::VectorXd& a, const Eigen::MatrixXd& C, const Eigen::VectorXd& c);

  const Eigen::VectorXd& x() const { return x_; }
  /// Multipliers at the solution: y (ne) for H x + g = A^T y + C^T z, z (ni) >= 0, zero where
  /// an inequality is inactive.
  const Eigen::VectorXd& equalityMultipliers() const { return y_; }
  const Eigen::VectorXd& inequalityMultipliers() const { return z_; }
  /// Indices of the inequalities active at the solution.
  const std::vector<int>& activeInequalities() const { return active_inequalities_; }
  int iterations() const { return iterations_; }
  /// Equalities found linearly dependent on earlier ones and consistent with them (skipped).
  int redundantEqualities() const { return redundant_; }
  /// A constraint counts as violated below -feasibility_tolerance * max(1, |row|).
  double feasibility_tolerance = 1e-10;

 private:
  // Adds constraint `id` (ne + i for inequality i) to the active set, dropping blocking
  // inequalities on the way; false when it cannot be added (infeasible).
  bool addConstraint(int id);
  double slack(int id) const;  // the constraint's value at x (signed normal for equalities)
  void normal(int id, Eigen::Ref<Eigen::VectorXd> out) const;
  void computeStep(int id);  // z_step_ (primal) and r_ (dual) for adding `id`
  void dropActive(int position);

  int n_, ne_, ni_;
  const Eigen::MatrixXd* A_ = nullptr;
  const Eigen::MatrixXd* C_ = nullptr;
  const Eigen::VectorXd* a_ = nullptr;
  const Eigen::VectorXd* c_ = nullptr;
  Eigen::LLT<Eigen::MatrixXd> H_llt_;
  Eigen::VectorXd x_, y_, z_;
  std::vector<int> active_;   ///< constraint ids in the order added
  std::vector<double> sign_;  ///< per equality: +1 or -1 (the side it was approached from)
  std::vector<int> active_inequalities_;
  Eigen::VectorXd u_;      ///< multipliers of active_
  Eigen::MatrixXd N_;      ///< n x (ne + ni): active normals (first |active| columns)
  Eigen::MatrixXd HinvN_;  ///< H^{-1} N
  Eigen::MatrixXd M_;      ///< N^T H^{-1} N
  Eigen::LDLT<Eigen::MatrixXd> M_ldlt_;
  Eigen::VectorXd np_, Hinv_np_, z_step_, r_, rhs_;
  int iterations_ = 0, redundant_ = 0;
};

std::string toString(DenseQp::Status status);

}  // namespace heft
