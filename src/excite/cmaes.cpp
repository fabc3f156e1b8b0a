#include "heft/excite/cmaes.hpp"

#include <Eigen/Eigenvalues>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <numeric>
#include <random>
#include <sstream>

#include "heft/common/error.hpp"
#include "heft/common/format.hpp"

namespace heft::excite {

void CmaesOptions::validate() const {
  require(population == 0 || population >= 2, "population", "0 (automatic) or >= 2",
          std::to_string(population));
  require(max_iterations >= 1, "max_iterations", ">= 1", std::to_string(max_iterations));
  requirePositive(sigma0, "sigma0");
  requireNonNegative(x_tolerance, "x_tolerance");
  requireNonNegative(f_tolerance, "f_tolerance");
}

std::string toString(CmaesSummary::Status status) {
  switch (status) {
    case CmaesSummary::Status::NotRun:
      return "not run";
    case CmaesSummary::Status::XTolerance:
      return "converged (x tolerance)";
    case CmaesSummary::Status::FTolerance:
      return "converged (cost tolerance)";
    case CmaesSummary::Status::MaxIterations:
      return "iteration limit";
    case CmaesSummary::Status::Failed:
      return "failed";
  }
  return "?";
}

std::string CmaesSummary::briefReport() const {
  return "CMA-ES: " + toString(status) + ", " + std::to_string(iterations) + " generations, " +
         std::to_string(evaluations) + " evaluations, cost " + formatNumber(initial_cost, 6) +
         " -> " + formatNumber(best_cost, 6);
}

std::string CmaesSummary::report() const {
  std::ostringstream s;
  s << briefReport() << "\n";
  if (!message.empty()) s << "  " << message << "\n";
  s << "  final sigma " << formatNumber(final_sigma, 4) << ", " << formatNumber(seconds, 3)
    << " s\n";
  return s.str();
}

namespace {

// Standard normal samples: Box-Muller on a 64-bit Mersenne twister (the same numbers on every
// platform, unlike std::normal_distribution).
class Normal {
 public:
  explicit Normal(std::uint64_t seed) : engine_(seed) {}
  double operator()() {
    if (has_spare_) {
      has_spare_ = false;
      return spare_;
    }
    const double u1 = (static_cast<double>(engine_() >> 11) + 1.0) * 0x1.0p-53;  // (0, 1]
    const double u2 = static_cast<double>(engine_() >> 11) * 0x1.0p-53;          // [0, 1)
    const double r = std::sqrt(-2 * std::log(u1));
    spare_ = r * std::sin(2 * M_PI * u2);
    has_spare_ = true;
    return r * std::cos(2 * M_PI * u2);
  }

 private:
  std::mt19937_64 engine_;
  double spare_ = 0;
  bool has_spare_ = false;
};

// The strategy parameters of the tutorial (its Table 1), from n and lambda.
struct Strategy {
  int n = 0, lambda = 0, mu = 0;
  Eigen::VectorXd weights;  // mu positive weights summing to 1
  double mu_eff = 0, c_sigma = 0, d_sigma = 0, c_c = 0, c_1 = 0, c_mu = 0, chi_n = 0;

  Strategy(int dimension, int population) : n(dimension) {
    lambda = population > 0 ? population : 4 + static_cast<int>(std::floor(3 * std::log(n)));
    mu = lambda / 2;
    weights.resize(mu);
    for (int i = 0; i < mu; ++i) weights[i] = std::log((lambda + 1) / 2.0) - std::log(i + 1.0);
    weights /= weights.sum();
    mu_eff = 1 / weights.squaredNorm();
    const double nd = n;
    c_sigma = (mu_eff + 2) / (nd + mu_eff + 5);
    d_sigma = 1 + 2 * std::max(0.0, std::sqrt((mu_eff - 1) / (nd + 1)) - 1) + c_sigma;
    c_c = (4 + mu_eff / nd) / (nd + 4 + 2 * mu_eff / nd);
    c_1 = 2 / ((nd + 1.3) * (nd + 1.3) + mu_eff);
    c_mu = std::min(1 - c_1, 2 * (mu_eff - 2 + 1 / mu_eff) / ((nd + 2) * (nd + 2) + mu_eff));
    chi_n = std::sqrt(nd) * (1 - 1 / (4 * nd) + 1 / (21 * nd * nd));
  }
};

// The state of the search: mean, step size, covariance and its factors, evolution paths, and the
// buffers of one generation (allocated once).
struct State {
  Eigen::VectorXd mean, p_sigma, p_c, D;
  Eigen::MatrixXd C, B, Z, Y, X;  // Z, Y, X: n x lambda samples, steps and candidates
  Eigen::VectorXd costs, y_w;
  std::vector<int> order;
  double sigma = 0;
  Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> eigen;

  State(const Strategy& s, const Eigen::VectorXd& x0, double sigma0)
      : mean(x0),
        p_sigma(Eigen::VectorXd::Zero(s.n)),
        p_c(Eigen::VectorXd::Zero(s.n)),
        D(Eigen::VectorXd::Ones(s.n)),
        C(Eigen::MatrixXd::Identity(s.n, s.n)),
        B(Eigen::MatrixXd::Identity(s.n, s.n)),
        Z(s.n, s.lambda),
        Y(s.n, s.lambda),
        X(s.n, s.lambda),
        costs(s.lambda),
        y_w(s.n),
        order(s.lambda),
        sigma(sigma0),
        eigen(s.n) {}
};

// Samples and evaluates one generation; sorts `order` by cost (non-finite last).
void sampleGeneration(const BatchObjective& f, const Strategy& s, Normal& normal, State& st,
                      CmaesSummary& summary) {
  for (int k = 0; k < s.lambda; ++k) {
    for (int i = 0; i < s.n; ++i) st.Z(i, k) = normal();
    st.Y.col(k) = st.B * st.D.asDiagonal() * st.Z.col(k);
    st.X.col(k) = st.mean + st.sigma * st.Y.col(k);
  }
  st.costs.setConstant(std::numeric_limits<double>::quiet_NaN());
  f(st.X, st.costs);
  summary.evaluations += s.lambda;
  for (int k = 0; k < s.lambda; ++k) {
    if (!std::isfinite(st.costs[k])) st.costs[k] = std::numeric_limits<double>::infinity();
  }
  std::iota(st.order.begin(), st.order.end(), 0);
  std::stable_sort(st.order.begin(), st.order.end(),
                   [&](int i, int j) { return st.costs[i] < st.costs[j]; });
}

// Moves the mean and updates the paths, the covariance and the step size (tutorial eqs. 39-47).
void adapt(const Strategy& s, int generation, State& st) {
  st.y_w.setZero();
  for (int i = 0; i < s.mu; ++i) st.y_w += s.weights[i] * st.Y.col(st.order[i]);
  st.mean += st.sigma * st.y_w;
  // C^{-1/2} y_w = B D^-1 B^T y_w
  const Eigen::VectorXd whitened = st.B * (st.B.transpose() * st.y_w).cwiseQuotient(st.D);
  st.p_sigma =
      (1 - s.c_sigma) * st.p_sigma + std::sqrt(s.c_sigma * (2 - s.c_sigma) * s.mu_eff) * whitened;
  const double norm = st.p_sigma.norm();
  const double decay = std::sqrt(1 - std::pow(1 - s.c_sigma, 2.0 * (generation + 1)));
  const bool h_sigma = norm / decay < (1.4 + 2.0 / (s.n + 1)) * s.chi_n;
  st.p_c =
      (1 - s.c_c) * st.p_c + (h_sigma ? std::sqrt(s.c_c * (2 - s.c_c) * s.mu_eff) : 0.0) * st.y_w;
  const double correction = h_sigma ? 0.0 : s.c_c * (2 - s.c_c);
  st.C *= 1 - s.c_1 - s.c_mu + s.c_1 * correction;
  st.C.noalias() += s.c_1 * st.p_c * st.p_c.transpose();
  for (int i = 0; i < s.mu; ++i) {
    const auto y = st.Y.col(st.order[i]);
    st.C.noalias() += s.c_mu * s.weights[i] * y * y.transpose();
  }
  st.sigma *= std::exp(s.c_sigma / s.d_sigma * (norm / s.chi_n - 1));
  // factor C = B D^2 B^T (symmetrized against round-off)
  st.C = 0.5 * (st.C + st.C.transpose()).eval();
  st.eigen.compute(st.C);
  st.B = st.eigen.eigenvectors();
  st.D = st.eigen.eigenvalues().cwiseMax(1e-300).cwiseSqrt();
}

// Whether a stopping rule holds after generation g (sets status and message).
bool converged(const CmaesOptions& o, const Strategy& s, const State& st, CmaesSummary& summary) {
  const double spread = st.sigma * st.D.maxCoeff();
  if (spread < o.x_tolerance) {
    summary.status = CmaesSummary::Status::XTolerance;
    summary.message = "search spread " + formatNumber(spread, 3) + " < x_tolerance";
    return true;
  }
  const int window = 10 + static_cast<int>(std::ceil(30.0 * s.n / s.lambda));
  const auto& h = summary.cost_history;
  if (static_cast<int>(h.size()) > window) {
    const auto begin = h.end() - window;
    const double range = *std::max_element(begin, h.end()) - *std::min_element(begin, h.end());
    if (range < o.f_tolerance) {
      summary.status = CmaesSummary::Status::FTolerance;
      summary.message = "best cost varied by " + formatNumber(range, 3) + " over " +
                        std::to_string(window) + " generations";
      return true;
    }
  }
  return false;
}

}  // namespace

CmaesSummary cmaes(const Objective& f, const Eigen::VectorXd& x0, const CmaesOptions& options) {
  return cmaesBatch(
      [&f](const Eigen::MatrixXd& X, Eigen::VectorXd& costs) {
        for (Eigen::Index k = 0; k < X.cols(); ++k) costs[k] = f(X.col(k));
      },
      x0, options);
}

CmaesSummary cmaesBatch(const BatchObjective& f, const Eigen::VectorXd& x0,
                        const CmaesOptions& options, const GenerationObserver& observe) {
  options.validate();
  require(x0.size() >= 1 && x0.allFinite(), "x0", "at least one finite value",
          std::to_string(x0.size()) + " values");
  const auto start = std::chrono::steady_clock::now();
  const Strategy s(static_cast<int>(x0.size()), options.population);
  State st(s, x0, options.sigma0);
  Normal normal(options.seed);
  CmaesSummary summary;
  Eigen::VectorXd initial(1);
  initial[0] = std::numeric_limits<double>::quiet_NaN();
  f(x0, initial);
  summary.initial_cost = initial[0];
  summary.evaluations = 1;
  summary.best_cost = summary.initial_cost;
  summary.best_x = x0;
  summary.status = CmaesSummary::Status::MaxIterations;
  for (int g = 0; g < options.max_iterations; ++g) {
    sampleGeneration(f, s, normal, st, summary);
    const int best = st.order[0];
    summary.iterations = g + 1;
    if (!std::isfinite(st.costs[best])) {
      summary.status = CmaesSummary::Status::Failed;
      summary.message =
          "every candidate of generation " + std::to_string(g) + " had a non-finite cost";
      break;
    }
    summary.cost_history.push_back(st.costs[best]);
    if (!(st.costs[best] >= summary.best_cost)) {
      summary.best_cost = st.costs[best];
      summary.best_x = st.X.col(best);
    }
    adapt(s, g, st);
    const bool done = converged(options, s, st, summary);
    if (observe) observe(summary);
    if (done) break;
  }
  summary.final_sigma = st.sigma;
  summary.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return summary;
}

}  // namespace heft::excite
