#include "heft/identify/identify.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <iomanip>
#include <optional>
#include <sstream>

#include "heft/common/error.hpp"
#include "heft/common/format.hpp"

namespace heft::identify {
namespace {

std::string num(double x, int precision = 5) { return formatNumber(x, precision); }

}  // namespace

std::string toString(Method method) {
  switch (method) {
    case Method::LeastSquares:
      return "ls";
    case Method::WeightedLeastSquares:
      return "wls";
    case Method::Energy:
      return "energy";
    case Method::Map:
      return "map";
  }
  return "?";
}

Method parseMethod(const std::string& name) {
  for (auto m : {Method::LeastSquares, Method::WeightedLeastSquares, Method::Energy, Method::Map}) {
    if (toString(m) == name) return m;
  }
  throw InputError("method: expected ls, wls, energy or map, got \"" + name + "\"");
}

void IdentifyOptions::validate() const {
  preparation.validate();
  problem.validate();
  least_squares.validate();
  energy.validate();
  map.validate();
}

namespace {

// Two rounds of fitBaseTilt, each followed by the correction of the samples: the tilt columns use
// the nominal model's mass matrix, so the first round's tilt is off by the payload's share of the
// robot's mass; the second round sees the corrected gravity and removes most of the rest.
struct BaseTiltCorrection {
  Eigen::Vector2d tilt = Eigen::Vector2d::Zero();
  double separation = 0;
  std::vector<std::string> warnings;
};

BaseTiltCorrection estimateBaseTilt(const model::RobotModel& robot, const model::IdentifiedSet& set,
                                    const ProblemOptions& problem, Samples& samples) {
  BaseTiltCorrection res;
  constexpr int kRounds = 2;
  for (int round = 0; round < kRounds; ++round) {
    const BaseTiltFit fit = fitBaseTilt(buildProblem(robot, samples, set, problem));
    res.separation = fit.separation;
    if (!fit.identified) {
      res.warnings.push_back(
          "base tilt not identified (separation " + formatNumber(fit.separation, 3) +
          " below 1e-3: the identified parameters explain what a tilt would); the base state is "
          "used as it is" +
          (round > 0 ? " after the first round's correction" : std::string()));
      break;
    }
    tiltBase(fit.tilt, samples);
    res.tilt += fit.tilt;
  }
  if (res.tilt.isZero()) return res;
  const double deg = 180.0 / M_PI;
  res.warnings.push_back("base tilt: the base-state estimate rotated by " +
                         formatNumber(res.tilt[0] * deg, 3) + " deg about the base's x axis, " +
                         formatNumber(res.tilt[1] * deg, 3) +
                         " deg about its y axis, fitted to the torques (problem.base_tilt)");
  return res;
}

}  // namespace

IdentifyResult identify(const model::RobotModel& robot, const io::Log& log,
                        const model::IdentifiedSet& set, const IdentifyOptions& options) {
  return identify(robot, std::vector<const io::Log*>{&log}, set, options);
}

IdentifyResult identify(const model::RobotModel& robot, const std::vector<const io::Log*>& logs,
                        const model::IdentifiedSet& set, const IdentifyOptions& options) {
  options.validate();
  require(!logs.empty(), "logs", "at least one", "none");
  require(logs.size() == 1 || options.method != Method::Energy, "method energy",
          "one recording (its intervals would cross a join)",
          std::to_string(logs.size()) + " recordings");
  const io::Log& log = *logs.front();
  const auto start = std::chrono::steady_clock::now();
  IdentifyResult res;
  res.method = options.method;
  std::vector<Samples> parts;
  for (const io::Log* l : logs) parts.push_back(prepareSamples(robot, *l, options.preparation));
  Samples samples = concatenate(parts);
  res.samples = samples.size();
  res.warnings = samples.warnings;
  std::optional<BaseTiltCorrection> tilt;
  if (options.problem.estimate_base_tilt && samples.free_flyer &&
      options.method != Method::Energy) {
    tilt = estimateBaseTilt(robot, set, options.problem, samples);
    for (const auto& w : tilt->warnings) res.warnings.push_back(w);
  }

  LinearSystem system;
  if (options.method == Method::Energy) {
    system = energySystem(robot, samples, set, options.problem, options.energy);
  } else {
    const StackedProblem problem = buildProblem(robot, samples, set, options.problem);
    for (const auto& w : problem.warnings) res.warnings.push_back(w);
    system = torqueSystem(problem);
    if (options.method == Method::Map) {
      LeastSquaresOptions lo = options.least_squares;
      lo.weighted = false;
      std::vector<std::string> warnings = std::move(res.warnings);
      res = resultOfMap(solveMap(problem, set, options.problem, options.map), system, set,
                        options.problem, lo);
      // solveMap repeats the problem's warnings for its own callers: each once here
      for (const auto& w : res.warnings)
        if (std::find(warnings.begin(), warnings.end(), w) == warnings.end()) warnings.push_back(w);
      res.warnings = std::move(warnings);
    }
  }
  if (options.method != Method::Map) {
    res.layout = system.layout;
    res.names = system.names;
    res.rows = system.rows();
    res.nominal = nominalLinearVector(system.layout, set, options.problem);
    LeastSquaresOptions lo = options.least_squares;
    lo.weighted = options.method == Method::WeightedLeastSquares;
    LeastSquaresResult ls = solveLeastSquares(system, res.nominal, lo);
    res.base = ls.base;
    res.condition_number = ls.condition_number;
    res.status = ls.status;
    res.message = ls.message;
    res.estimate = ls.x;
    res.covariance = ls.covariance;
    res.channel_names = ls.channel_names;
    res.channel_rms_before = ls.channel_rms_before;
    res.channel_rms_after = ls.channel_rms_after;
    for (const auto& w : ls.warnings) res.warnings.push_back(w);
    res.least_squares = std::move(ls);
    res.stddev = res.covariance.diagonal().cwiseMax(0.0).cwiseSqrt();
  }
  res.method = options.method;
  res.samples = samples.size();
  if (tilt) {
    res.base_tilt_estimated = true;
    res.base_tilt = tilt->tilt;
    res.base_tilt_separation = tilt->separation;
  }
  if (log.truth && log.truth->body_pi.rows() > 0) {
    res.truth = results::truthErrors(robot, log, res.layout, res.estimate, options.friction_truth);
  }
  res.time_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return res;
}

IdentifyResult resultOfMap(MapResult map, const LinearSystem& system,
                           const model::IdentifiedSet& set, const ProblemOptions& problem,
                           const LeastSquaresOptions& least_squares) {
  IdentifyResult res;
  res.method = Method::Map;
  res.status = map.status;
  res.message = map.message;
  res.layout = system.layout;
  res.names = system.names;
  res.nominal = nominalLinearVector(system.layout, set, problem);
  res.estimate = map.linear;
  res.covariance = map.linear_covariance;
  res.stddev = res.covariance.diagonal().cwiseMax(0.0).cwiseSqrt();
  res.iterations = map.iterations;
  res.channel_names = map.channel_names;
  res.channel_rms_before = map.channel_rms_before;
  res.channel_rms_after = map.channel_rms_after;
  res.rows = map.information ? map.information->rows : system.rows();
  res.samples = map.information ? map.information->samples : 0;
  res.warnings = map.warnings;
  LeastSquaresResult ls = solveLeastSquares(system, res.nominal, least_squares);
  res.base = ls.base;
  res.condition_number = ls.condition_number;
  res.least_squares = std::move(ls);
  res.map = std::move(map);
  return res;
}

std::string IdentifyResult::report() const {
  std::ostringstream s;
  s << "method      " << toString(method) << ": " << toString(status)
    << (message.empty() ? "" : " (" + message + ")") << "\n"
    << "data        " << samples << " samples, " << rows << " rows";
  if (iterations > 0) s << ", " << iterations << " iterations";
  s << "\n"
    << "condition   " << num(condition_number, 4) << ", " << base.rank << " of " << names.size()
    << " directions identifiable\n"
    << "residual RMS per channel, before -> after:\n";
  for (std::size_t c = 0; c < channel_names.size(); ++c) {
    s << "  " << std::left << std::setw(24) << channel_names[c] << num(channel_rms_before[c], 4)
      << " -> " << num(channel_rms_after[c], 4) << "\n";
  }
  s << "parameters  name, prior, estimate, std:\n";
  for (std::size_t i = 0; i < names.size(); ++i) {
    s << "  " << std::left << std::setw(30) << names[i] << std::setw(14) << num(nominal[i])
      << std::setw(14) << num(estimate[i]) << num(stddev[i], 3) << "\n";
  }
  s << "base parameters:\n";
  for (const auto& e : base.expressions) s << "  " << e << "\n";
  if (base.rank < static_cast<int>(names.size())) {
    s << "unseen directions: " << names.size() - base.rank << "\n";
  }
  for (const auto& w : warnings) s << "warning: " << w << "\n";
  if (truth) s << "truth errors:\n" << truth->report();
  s << "time        " << num(time_s, 3) << " s\n";
  return s.str();
}

}  // namespace heft::identify
