// heft::DenseQp against the KKT conditions checked by enumeration of the active sets, and its
// reports of infeasible and redundant constraints.
#include <random>

#include <gtest/gtest.h>
#include <Eigen/Dense>

#include "heft/common/dense_qp.hpp"
#include "heft/common/error.hpp"

namespace {

struct RandomQp {
  Eigen::MatrixXd H, A, C;
  Eigen::VectorXd g, a, c;
};

RandomQp randomQp(std::mt19937& rng, int n, int ne, int ni) {
  std::normal_distribution<double> normal(0.0, 1.0);
  auto matrix = [&](int r, int c) {
    Eigen::MatrixXd m(r, c);
    for (int i = 0; i < r; ++i)
      for (int j = 0; j < c; ++j) m(i, j) = normal(rng);
    return m;
  };
  RandomQp qp;
  const Eigen::MatrixXd B = matrix(n, n);
  qp.H = B * B.transpose() + 0.1 * Eigen::MatrixXd::Identity(n, n);
  qp.g = matrix(n, 1);
  qp.A = matrix(ne, n);
  qp.a = matrix(ne, 1);
  qp.C = matrix(ni, n);
  // A common point exists: the inequalities hold with slack at a random x0 on the equalities.
  const Eigen::VectorXd x0 =
      ne > 0 ? Eigen::VectorXd(qp.A.completeOrthogonalDecomposition().solve(-qp.a))
             : Eigen::VectorXd(Eigen::VectorXd::Zero(n));
  qp.c = -qp.C * x0 + Eigen::VectorXd::Constant(ni, 0.5);
  return qp;
}

// The solution by enumeration: the active set whose KKT point is primal and dual feasible.
Eigen::VectorXd enumeratedSolution(const RandomQp& qp) {
  const int n = static_cast<int>(qp.H.rows()), ne = static_cast<int>(qp.A.rows()),
            ni = static_cast<int>(qp.C.rows());
  for (int mask = 0; mask < (1 << ni); ++mask) {
    std::vector<int> set;
    for (int i = 0; i < ni; ++i)
      if (mask & (1 << i)) set.push_back(i);
    const int m = ne + static_cast<int>(set.size());
    Eigen::MatrixXd K = Eigen::MatrixXd::Zero(n + m, n + m);
    Eigen::VectorXd rhs(n + m);
    K.topLeftCorner(n, n) = qp.H;
    rhs.head(n) = -qp.g;
    for (int i = 0; i < ne; ++i) {
      K.block(n + i, 0, 1, n) = qp.A.row(i);
      K.block(0, n + i, n, 1) = -qp.A.row(i).transpose();
      rhs[n + i] = -qp.a[i];
    }
    for (std::size_t j = 0; j < set.size(); ++j) {
      K.block(n + ne + j, 0, 1, n) = qp.C.row(set[j]);
      K.block(0, n + ne + j, n, 1) = -qp.C.row(set[j]).transpose();
      rhs[n + ne + j] = -qp.c[set[j]];
    }
    const Eigen::VectorXd sol = K.fullPivLu().solve(rhs);
    const Eigen::VectorXd x = sol.head(n);
    if ((qp.C * x + qp.c).minCoeff() < -1e-9) continue;
    if (m > ne && sol.tail(m - ne).minCoeff() < -1e-9) continue;
    return x;
  }
  return Eigen::VectorXd();
}

}  // namespace

TEST(DenseQp, MatchesTheKktPointFoundByEnumeratingActiveSets) {
  std::mt19937 rng(7);
  int with_active = 0;
  for (int trial = 0; trial < 200; ++trial) {
    const int n = 6, ne = trial % 3, ni = 5;
    RandomQp qp = randomQp(rng, n, ne, ni);
    // Shift the unconstrained minimum out of the feasible set so that inequalities bind.
    qp.g *= 10;
    heft::DenseQp solver(n, ne, ni);
    ASSERT_EQ(solver.solve(qp.H, qp.g, qp.A, qp.a, qp.C, qp.c), heft::DenseQp::Status::Solved);
    const Eigen::VectorXd expected = enumeratedSolution(qp);
    ASSERT_EQ(expected.size(), n);
    EXPECT_LT((solver.x() - expected).norm(), 1e-8 * (1 + expected.norm())) << "trial " << trial;
    // Its multipliers satisfy stationarity and complementarity.
    const Eigen::VectorXd stationarity = qp.H * solver.x() + qp.g -
                                         qp.A.transpose() * solver.equalityMultipliers() -
                                         qp.C.transpose() * solver.inequalityMultipliers();
    EXPECT_LT(stationarity.norm(), 1e-8 * (1 + qp.g.norm()));
    EXPECT_GE(solver.inequalityMultipliers().minCoeff(), 0.0);
    EXPECT_LT((qp.A * solver.x() + qp.a).norm(), 1e-9);
    with_active += solver.activeInequalities().empty() ? 0 : 1;
  }
  EXPECT_GT(with_active, 100);  // the cases exercise the active set, not only the equalities
}

TEST(DenseQp, ReportsContradictoryConstraintsAsInfeasible) {
  const Eigen::MatrixXd H = Eigen::MatrixXd::Identity(2, 2);
  const Eigen::VectorXd g = Eigen::VectorXd::Zero(2);
  // x0 = 1 and x0 = 2.
  Eigen::MatrixXd A(2, 2);
  A << 1, 0, 1, 0;
  Eigen::VectorXd a(2);
  a << -1, -2;
  const Eigen::MatrixXd none(0, 2);
  const Eigen::VectorXd empty(0);
  heft::DenseQp equalities(2, 2, 0);
  EXPECT_EQ(equalities.solve(H, g, A, a, none, empty), heft::DenseQp::Status::Infeasible);
  // x0 + x1 = 1 with x0 >= 1 and x1 >= 0.5.
  Eigen::MatrixXd A1(1, 2), C(2, 2);
  A1 << 1, 1;
  C << 1, 0, 0, 1;
  Eigen::VectorXd a1(1), c(2);
  a1 << -1;
  c << -1, -0.5;
  heft::DenseQp mixed(2, 1, 2);
  EXPECT_EQ(mixed.solve(H, g, A1, a1, C, c), heft::DenseQp::Status::Infeasible);
  // x0 >= 1 and -x0 >= 0.
  Eigen::MatrixXd C2(2, 2);
  C2 << 1, 0, -1, 0;
  Eigen::VectorXd c2(2);
  c2 << -1, 0;
  heft::DenseQp bounds(2, 0, 2);
  EXPECT_EQ(bounds.solve(H, g, none, empty, C2, c2), heft::DenseQp::Status::Infeasible);
}

TEST(DenseQp, SkipsARepeatedEqualityAndRejectsAnIndefiniteHessian) {
  Eigen::MatrixXd H = Eigen::MatrixXd::Identity(3, 3);
  const Eigen::VectorXd g = Eigen::VectorXd::Ones(3);
  Eigen::MatrixXd A(2, 3);
  A << 1, 1, 0, 2, 2, 0;
  Eigen::VectorXd a(2);
  a << -1, -2;
  const Eigen::MatrixXd none(0, 3);
  const Eigen::VectorXd empty(0);
  heft::DenseQp qp(3, 2, 0);
  ASSERT_EQ(qp.solve(H, g, A, a, none, empty), heft::DenseQp::Status::Solved);
  EXPECT_EQ(qp.redundantEqualities(), 1);
  EXPECT_NEAR(qp.x()[0] + qp.x()[1], 1.0, 1e-12);
  EXPECT_NEAR(qp.x()[0], qp.x()[1], 1e-12);  // symmetric in x0, x1
  EXPECT_NEAR(qp.x()[2], -1.0, 1e-12);
  H(2, 2) = -1;
  EXPECT_EQ(qp.solve(H, g, A, a, none, empty), heft::DenseQp::Status::NotPositiveDefinite);
  EXPECT_THROW(qp.solve(Eigen::MatrixXd::Identity(2, 2), g, A, a, none, empty), heft::InputError);
}
