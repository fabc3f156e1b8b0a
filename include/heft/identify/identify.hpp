#pragma once
/// \file heft::identify: classical and physically consistent identification from logs
/// (docs/identify.md). Pipeline: prepareSamples (samples.hpp) -> buildProblem (problem.hpp) ->
/// one of solveLeastSquares on torqueSystem / energySystem (least_squares.hpp, methods 1-2),
/// solveMap (map.hpp, method 3); method 4 is buildProblem with a contact projection on a
/// free-flyer; truthErrors (truth.hpp) against a simulated log's truth.
#include "heft/identify/least_squares.hpp"
#include "heft/identify/map.hpp"
#include "heft/identify/problem.hpp"
#include "heft/identify/samples.hpp"
#include "heft/results/truth.hpp"

#include <optional>
#include <string>
#include <vector>

namespace heft::identify {

/// The method of a whole identification run (methods 1-3; method 4 is the projection
/// that ProblemOptions::projection selects, Auto = contact null space for a free-flyer).
enum class Method {
  LeastSquares,          ///< "ls": method 1, ordinary
  WeightedLeastSquares,  ///< "wls": method 1, per-channel weights
  Energy,                ///< "energy": method 2 (fixed base)
  Map,                   ///< "map": method 3
};
std::string toString(Method method);
Method parseMethod(const std::string& name);  ///< "ls", "wls", "energy", "map"

/// Everything a run needs besides the robot, the log and the identified set.
struct IdentifyOptions {
  Method method = Method::Map;
  PreparationOptions preparation;
  ProblemOptions problem;
  LeastSquaresOptions least_squares;  ///< methods 1-2 (weighted is set by Method)
  EnergyOptions energy;
  MapOptions map;
  /// True joint friction for truth errors (simulated logs; the log format has none yet).
  std::vector<results::JointFrictionTruth> friction_truth;
  /// \throws InputError naming the field.
  void validate() const;
};

/// One run's result, in the linear layout (pi_S, coulomb / viscous, armature) whatever the method.
struct IdentifyResult {
  Method method = Method::Map;
  Status status = Status::NotRun;
  std::string message;
  ParameterLayout layout;
  std::vector<std::string> names;  ///< linear layout
  Eigen::VectorXd nominal;         ///< prior means / nominal model
  Eigen::VectorXd estimate;
  Eigen::MatrixXd covariance;
  Eigen::VectorXd stddev;
  BaseParameters base;  ///< of the method's linear regressor (torque or energy rows)
  double condition_number = 0;
  std::vector<std::string> channel_names;
  Eigen::VectorXd channel_rms_before, channel_rms_after;
  int iterations = 0;
  int samples = 0, rows = 0;
  std::optional<results::TruthErrors> truth;        ///< when the log has truth bodies
  std::optional<LeastSquaresResult> least_squares;  ///< the method's own result
  std::optional<MapResult> map;
  std::vector<std::string> warnings;
  /// With ProblemOptions::estimate_base_tilt on a free-flyer: the tilt the samples were
  /// corrected by (PreparationOptions::base_tilt to prepare more samples the same way), and the
  /// last fit's separation (BaseTiltFit). Zero when not estimated or not identified.
  bool base_tilt_estimated = false;
  Eigen::Vector2d base_tilt = Eigen::Vector2d::Zero();
  double base_tilt_separation = 0;
  double time_s = 0;
  /// Parameters (nominal, estimate, std), residuals, condition, base parameters, warnings, truth.
  std::string report() const;
};

/// The IdentifyResult of a MAP solve on `system`'s rows: its estimate, covariance, residuals and
/// warnings, the base parameters of the rows (solveLeastSquares with `least_squares`), rows and
/// samples from map.information when it has one; `map` is kept in the result.
IdentifyResult resultOfMap(MapResult map, const LinearSystem& system,
                           const model::IdentifiedSet& set, const ProblemOptions& problem,
                           const LeastSquaresOptions& least_squares = {});

/// prepareSamples -> buildProblem / energySystem -> the method -> truth errors.
/// Throws InputError for bad input (log / robot mismatch, options); a failed solve is reported
/// in the status, never thrown.
IdentifyResult identify(const model::RobotModel& robot, const io::Log& log,
                        const model::IdentifiedSet& set, const IdentifyOptions& options = {});
/// Several recordings that share the parameters (each prepared on its own, then concatenated;
/// the preparation's time ranges apply to each). Truth errors against the first's truth group.
/// \throws InputError as above, and for the energy method with more than one recording (its
///   intervals would cross a join).
IdentifyResult identify(const model::RobotModel& robot, const std::vector<const io::Log*>& logs,
                        const model::IdentifiedSet& set, const IdentifyOptions& options = {});

}  // namespace heft::identify
