// libcrocoddyl (PyPI wheel) is our reference solver. These tests show that the pinned wheel works
// against the pinned libpinocchio: same dynamics as Pinocchio's ABA called from heft, and an FDDP
// solve that converges. A mismatched pair shows up here as wrong numbers or a crash.
#include <gtest/gtest.h>

#include <crocoddyl/core/integrator/euler.hpp>
#include <crocoddyl/core/solvers/fddp.hpp>
#include <crocoddyl/core/utils/callbacks.hpp>
#include <crocoddyl/multibody/actions/free-fwddyn.hpp>
#include <crocoddyl/multibody/actuations/full.hpp>
#include <crocoddyl/core/costs/residual.hpp>
#include <crocoddyl/multibody/residuals/state.hpp>
#include <crocoddyl/core/residuals/control.hpp>
#include <crocoddyl/multibody/states/multibody.hpp>
#include <pinocchio/algorithm/aba.hpp>
#include <pinocchio/algorithm/joint-configuration.hpp>
#include <pinocchio/algorithm/model.hpp>
#include <pinocchio/parsers/urdf.hpp>

namespace {

pinocchio::Model loadPanda() {
  pinocchio::Model model;
  pinocchio::urdf::buildModel(std::string(HEFT_ROBOTS_DIR_FOR_TESTS) +
                                  "/panda_description/urdf/panda.urdf",
                              model);
  return model;
}

std::shared_ptr<crocoddyl::DifferentialActionModelFreeFwdDynamics> makeDifferentialModel(
    const std::shared_ptr<crocoddyl::StateMultibody>& state, const Eigen::VectorXd& x_goal) {
  auto actuation = std::make_shared<crocoddyl::ActuationModelFull>(state);
  auto costs = std::make_shared<crocoddyl::CostModelSum>(state, actuation->get_nu());
  costs->addCost("state",
                 std::make_shared<crocoddyl::CostModelResidual>(
                     state, std::make_shared<crocoddyl::ResidualModelState>(state, x_goal,
                                                                            actuation->get_nu())),
                 1.0);
  costs->addCost("control",
                 std::make_shared<crocoddyl::CostModelResidual>(
                     state, std::make_shared<crocoddyl::ResidualModelControl>(state,
                                                                              actuation->get_nu())),
                 1e-4);
  return std::make_shared<crocoddyl::DifferentialActionModelFreeFwdDynamics>(state, actuation,
                                                                             costs);
}

TEST(Reference, CrocoddylForwardDynamicsMatchesPinocchioAba) {
  const pinocchio::Model model = loadPanda();
  pinocchio::Data data(model);
  auto state = std::make_shared<crocoddyl::StateMultibody>(std::make_shared<pinocchio::Model>(model));
  auto dam = makeDifferentialModel(state, state->zero());
  auto dad = dam->createData();
  std::srand(7);
  for (int trial = 0; trial < 5; ++trial) {
    const Eigen::VectorXd q = pinocchio::randomConfiguration(model);
    const Eigen::VectorXd v = Eigen::VectorXd::Random(model.nv);
    const Eigen::VectorXd tau = Eigen::VectorXd::Random(model.nv) * 5;
    Eigen::VectorXd x(model.nq + model.nv);
    x << q, v;
    dam->calc(dad, x, tau);
    const Eigen::VectorXd a = pinocchio::aba(model, data, q, v, tau);
    EXPECT_LT((dad->xout - a).norm(), 1e-9 * (1 + a.norm()))
        << "crocoddyl: " << dad->xout.transpose() << "\npinocchio: " << a.transpose()
        << "\ncrocoddyl data ddq: " << dad->pinocchio.ddq.transpose()
        << "\nactuation tau: " << dad->multibody.actuation->tau.transpose() << "\ntau " << tau.transpose();
  }
}

TEST(Reference, CrocoddylFddpConverges) {
  const pinocchio::Model model = loadPanda();
  auto state = std::make_shared<crocoddyl::StateMultibody>(std::make_shared<pinocchio::Model>(model));
  Eigen::VectorXd x_goal = state->zero();
  x_goal.head(model.nq) = pinocchio::neutral(model);
  x_goal(0) = 0.5;
  auto running = std::make_shared<crocoddyl::IntegratedActionModelEuler>(
      makeDifferentialModel(state, x_goal), 1e-2);
  auto terminal = std::make_shared<crocoddyl::IntegratedActionModelEuler>(
      makeDifferentialModel(state, x_goal), 0.0);
  Eigen::VectorXd x0 = state->zero();
  x0.head(model.nq) = pinocchio::neutral(model);
  auto problem = std::make_shared<crocoddyl::ShootingProblem>(
      x0, std::vector<std::shared_ptr<crocoddyl::ActionModelAbstract>>(30, running), terminal);
  crocoddyl::SolverFDDP solver(problem);
  ASSERT_TRUE(solver.solve({}, {}, 100));
  EXPECT_TRUE(std::isfinite(solver.get_cost()));
  EXPECT_LT(solver.get_stop(), 1e-6);
  // the arm moves toward the goal
  EXPECT_GT(solver.get_xs().back()(0), 0.05);
}

}  // namespace
