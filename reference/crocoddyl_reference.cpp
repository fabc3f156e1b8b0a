// heft-reference-crocoddyl IN OUT
// IN : line 1 urdf path; line 2 "aba N"; then N lines "q... v... tau..."; then "fddp T dt iters
// x_goal0". OUT: N lines of crocoddyl's free forward dynamics xout, then "fddp converged cost stop
// xT0".
#include <crocoddyl/core/costs/residual.hpp>
#include <crocoddyl/core/integrator/euler.hpp>
#include <crocoddyl/core/residuals/control.hpp>
#include <crocoddyl/core/solvers/fddp.hpp>
#include <crocoddyl/multibody/actions/free-fwddyn.hpp>
#include <crocoddyl/multibody/actuations/full.hpp>
#include <crocoddyl/multibody/residuals/state.hpp>
#include <crocoddyl/multibody/states/multibody.hpp>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <pinocchio/algorithm/joint-configuration.hpp>
#include <pinocchio/parsers/urdf.hpp>

static std::shared_ptr<crocoddyl::DifferentialActionModelFreeFwdDynamics> makeDam(
    const std::shared_ptr<crocoddyl::StateMultibody>& state, const Eigen::VectorXd& x_goal) {
  auto actuation = std::make_shared<crocoddyl::ActuationModelFull>(state);
  auto costs = std::make_shared<crocoddyl::CostModelSum>(state, actuation->get_nu());
  costs->addCost("state",
                 std::make_shared<crocoddyl::CostModelResidual>(
                     state, std::make_shared<crocoddyl::ResidualModelState>(state, x_goal,
                                                                            actuation->get_nu())),
                 1.0);
  costs->addCost(
      "control",
      std::make_shared<crocoddyl::CostModelResidual>(
          state, std::make_shared<crocoddyl::ResidualModelControl>(state, actuation->get_nu())),
      1e-4);
  return std::make_shared<crocoddyl::DifferentialActionModelFreeFwdDynamics>(state, actuation,
                                                                             costs);
}

int main(int argc, char** argv) {
  if (argc != 3) {
    std::cerr << "usage: heft-reference-crocoddyl IN OUT\n";
    return 2;
  }
  std::ifstream in(argv[1]);
  std::ofstream out(argv[2]);
  out << std::setprecision(17);
  std::string urdf, tag;
  std::getline(in, urdf);
  pinocchio::Model model;
  pinocchio::urdf::buildModel(urdf, model);
  auto state =
      std::make_shared<crocoddyl::StateMultibody>(std::make_shared<pinocchio::Model>(model));
  int n = 0;
  in >> tag >> n;
  auto dam = makeDam(state, state->zero());
  auto dad = dam->createData();
  for (int k = 0; k < n; ++k) {
    Eigen::VectorXd x(model.nq + model.nv), u(model.nv);
    for (Eigen::Index i = 0; i < x.size(); ++i) in >> x(i);
    for (Eigen::Index i = 0; i < u.size(); ++i) in >> u(i);
    dam->calc(dad, x, u);
    out << dad->xout.transpose() << "\n";
  }
  int T = 0, iters = 0;
  double dt = 0, goal0 = 0;
  in >> tag >> T >> dt >> iters >> goal0;
  Eigen::VectorXd x_goal = state->zero();
  x_goal.head(model.nq) = pinocchio::neutral(model);
  x_goal(0) = goal0;
  auto running =
      std::make_shared<crocoddyl::IntegratedActionModelEuler>(makeDam(state, x_goal), dt);
  auto terminal =
      std::make_shared<crocoddyl::IntegratedActionModelEuler>(makeDam(state, x_goal), 0.0);
  Eigen::VectorXd x0 = state->zero();
  x0.head(model.nq) = pinocchio::neutral(model);
  auto problem = std::make_shared<crocoddyl::ShootingProblem>(
      x0, std::vector<std::shared_ptr<crocoddyl::ActionModelAbstract>>(T, running), terminal);
  crocoddyl::SolverFDDP solver(problem);
  const bool ok = solver.solve({}, {}, iters);
  out << "fddp " << ok << " " << solver.get_cost() << " " << solver.get_stop() << " "
      << solver.get_iter() << " " << solver.get_xs().back()(0) << "\n";
  return out.good() ? 0 : 1;
}
