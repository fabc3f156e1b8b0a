#include "heft/identify/prediction.hpp"

#include "heft/common/error.hpp"

namespace heft::identify {

results::TorquePrediction predictTorques(const std::string& model, const StackedProblem& problem,
                                         const Samples& samples, const Eigen::VectorXd& x) {
  const LinearSystem system = torqueSystem(problem);
  require(x.size() == system.Phi.cols(), "linear vector of " + model,
          "size " + std::to_string(system.Phi.cols()) + " (" +
              std::to_string(problem.layout.linearDimension()) + " parameters)",
          "size " + std::to_string(x.size()));
  const Eigen::VectorXd error = system.y - system.Phi * x;
  Eigen::VectorXd measured(problem.rows());
  for (int r = 0; r < problem.rows(); ++r)
    measured[r] = problem.G.row(r).dot(samples.tau.col(problem.sample[r]));
  return results::torquePrediction(model, error, measured, problem.channel, problem.channel_names,
                                   samples.size());
}

}  // namespace heft::identify
