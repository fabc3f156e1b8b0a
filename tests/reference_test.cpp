// Crocoddyl (PyPI libcrocoddyl 3.2.1) is our reference solver. The wheel was compiled against
// libpinocchio 4.0.0, whose ModelTpl layout differs from the 4.1 that heft uses, so it lives in
// .deps/venv-reference and runs as a separate program (heft-reference-crocoddyl) that this test
// drives through files. Never link crocoddyl into a heft target.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include <pinocchio/algorithm/aba.hpp>
#include <pinocchio/algorithm/joint-configuration.hpp>
#include <pinocchio/parsers/urdf.hpp>

namespace {

const std::string kUrdf =
    std::string(HEFT_ROBOTS_DIR_FOR_TESTS) + "/panda_description/urdf/panda.urdf";

TEST(Reference, CrocoddylMatchesPinocchioAbaAndFddpConverges) {
  pinocchio::Model model;
  pinocchio::urdf::buildModel(kUrdf, model);
  pinocchio::Data data(model);
  const std::string in_path = std::string(HEFT_BINARY_DIR) + "/reference_problem.txt";
  const std::string out_path = std::string(HEFT_BINARY_DIR) + "/reference_solution.txt";
  std::srand(7);
  const int n = 5;
  std::vector<Eigen::VectorXd> expected;
  {
    std::ofstream in(in_path);
    in.precision(17);
    in << kUrdf << "\naba " << n << "\n";
    for (int k = 0; k < n; ++k) {
      const Eigen::VectorXd q = pinocchio::randomConfiguration(model);
      Eigen::VectorXd v = Eigen::VectorXd::Random(model.nv);
      const Eigen::VectorXd tau = Eigen::VectorXd::Random(model.nv) * 5;
      if (k == 0) v.setZero();  // gravity-dominated case
      in << q.transpose() << " " << v.transpose() << " " << tau.transpose() << "\n";
      expected.push_back(pinocchio::aba(model, data, q, v, tau));
    }
    in << "fddp 30 0.01 100 0.5\n";
  }
  const std::string cmd = std::string(HEFT_REFERENCE_EXE) + " " + in_path + " " + out_path;
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  std::ifstream out(out_path);
  for (int k = 0; k < n; ++k) {
    Eigen::VectorXd a(model.nv);
    for (Eigen::Index i = 0; i < a.size(); ++i) out >> a(i);
    EXPECT_LT((a - expected[k]).norm(), 1e-9 * (1 + expected[k].norm()))
        << "crocoddyl: " << a.transpose() << "\npinocchio: " << expected[k].transpose();
  }
  std::string tag;
  int converged = 0, iters = 0;
  double cost = 0, stop = 0, xT0 = 0;
  out >> tag >> converged >> cost >> stop >> iters >> xT0;
  ASSERT_EQ(tag, "fddp");
  EXPECT_TRUE(converged);
  EXPECT_TRUE(std::isfinite(cost));
  EXPECT_LT(stop, 1e-6);
  EXPECT_GT(xT0, 0.05);
  std::cout << "fddp: iters " << iters << " cost " << cost << " stop " << stop << " xT0 " << xT0
            << "\n";
}

}  // namespace
