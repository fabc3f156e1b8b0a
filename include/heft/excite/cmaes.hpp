#pragma once
/// \file A small CMA-ES (covariance matrix adaptation evolution strategy, Hansen and Ostermeier
/// 2001; the parameter choices of Hansen's tutorial "The CMA Evolution Strategy", 2016): a
/// gradient-free minimizer for a few hundred variables at most, deterministic given its seed.
#include <Eigen/Core>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace heft::excite {

/// Options of cmaes().
struct CmaesOptions {
  /// Candidates per generation (lambda); 0 = 4 + floor(3 ln n), the tutorial's default.
  int population = 0;
  /// Generations at most.
  int max_iterations = 300;
  /// Initial step size, in the units of x (sample spread around the initial mean).
  double sigma0 = 0.3;
  /// Stop when sigma times the largest standard deviation of the search distribution is below
  /// this (the distribution has shrunk to a point).
  double x_tolerance = 1e-11;
  /// Stop when the best costs of the last 10 + 30 n / lambda generations and of the current one
  /// span less than this.
  double f_tolerance = 1e-12;
  /// Seed of the normal samples: the same seed and objective give the same result.
  std::uint64_t seed = 1;
  /// \throws InputError naming the field.
  void validate() const;
};

struct CmaesSummary {
  enum class Status {
    NotRun,
    XTolerance,     ///< the search distribution shrank below x_tolerance
    FTolerance,     ///< the best cost stalled within f_tolerance
    MaxIterations,  ///< max_iterations generations ran
    Failed,         ///< the objective returned a non-finite value for every candidate
  };
  Status status = Status::NotRun;
  std::string message;
  int iterations = 0;
  long evaluations = 0;
  double initial_cost = 0;  ///< at the initial mean
  double best_cost = 0;
  Eigen::VectorXd best_x;
  std::vector<double> cost_history;  ///< best cost of each generation
  double final_sigma = 0;
  double seconds = 0;
  /// One line: status, iterations, evaluations, cost.
  std::string briefReport() const;
  /// A few lines a person can read.
  std::string report() const;
};

std::string toString(CmaesSummary::Status status);

/// The objective: cost of x (n entries). A non-finite cost ranks last.
using Objective = std::function<double(const Eigen::VectorXd& x)>;

/// Minimizes `f` from the mean `x0`. Candidates x = m + sigma B D z, z ~ N(0, I); the mean moves
/// to the weighted mean of the best half; the covariance C = B D^2 B^T learns from the evolution
/// path (rank one) and from the selected steps (rank mu); sigma follows cumulative step-size
/// adaptation. The best candidate ever evaluated is returned in the summary.
/// \throws InputError for bad options or an empty x0.
CmaesSummary cmaes(const Objective& f, const Eigen::VectorXd& x0, const CmaesOptions& options);

/// The costs of a whole generation at once (so they can be computed in parallel): `X` holds one
/// candidate per column, `costs` gets one entry per column (resized by the caller).
using BatchObjective = std::function<void(const Eigen::MatrixXd& X, Eigen::VectorXd& costs)>;
/// Called after every generation with the summary so far.
using GenerationObserver = std::function<void(const CmaesSummary& summary)>;

/// cmaes() with the candidates of a generation handed over together; the same seed gives the same
/// candidates and result as cmaes() with the same objective.
CmaesSummary cmaesBatch(const BatchObjective& f, const Eigen::VectorXd& x0,
                        const CmaesOptions& options, const GenerationObserver& observe = {});

}  // namespace heft::excite
