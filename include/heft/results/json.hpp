#pragma once
/// \file result.json: the pieces every job writes in one schema (docs/guide/result-schema.md).
/// Non-finite numbers are written as 0 (JSON has no infinity), except where a field documents -1.
#include <vector>

#include <Eigen/Core>
#include <nlohmann/json.hpp>

#include "heft/io/data_quality.hpp"
#include "heft/results/body_estimate.hpp"
#include "heft/results/prediction.hpp"
#include "heft/results/truth.hpp"

namespace heft::results {

/// The version of result.json's schema, written as "schema_version". Raised whenever a field
/// changes meaning or disappears; new fields do not raise it.
constexpr int kResultSchemaVersion = 1;

nlohmann::json jsonArray(const Eigen::VectorXd& v);
/// x, or null when x is not finite (JSON has no infinity).
nlohmann::json finiteOrNull(double x);
/// Row by row.
nlohmann::json jsonArray(const Eigen::MatrixXd& m);

/// result.json's "parameters" object: one entry per body.
nlohmann::json parametersJson(const std::vector<BodyEstimate>& bodies);
/// result.json's "friction" object: one entry per joint.
nlohmann::json frictionJson(const std::vector<JointFrictionEstimate>& friction);
/// result.json's "armature" object: joint name -> armature [kg m^2] (heft predict reads it).
nlohmann::json armatureJson(const std::vector<JointScalarEstimate>& armature);
/// result.json's "armature_std" object: joint name -> its standard deviation [kg m^2].
nlohmann::json armatureStdJson(const std::vector<JointScalarEstimate>& armature);
/// result.json's "torque_offsets" object: joint name -> {"offset", "std"} [N m].
nlohmann::json torqueOffsetsJson(const std::vector<JointScalarEstimate>& torque_offsets);
/// result.json's "truth_errors" object.
nlohmann::json truthErrorsJson(const TruthErrors& truth);
/// One model's held-out prediction: {"model", "samples", "rows", "rmse_all", "relative_all",
/// "channels": {name: {"rmse", "rms_measured", "relative"}}}.
nlohmann::json predictionJson(const TorquePrediction& prediction);
/// The "trajectory_errors" object of an estimated trajectory.
nlohmann::json trajectoryErrorsJson(const TrajectoryErrors& errors);
nlohmann::json contactForceErrorsJson(const ContactForceErrors& errors);

/// The "data_quality" object of a job's result (io::assessDataQuality of its log); a number that
/// could not be computed (a clock factor without motion) is null.
nlohmann::json dataQualityJson(const io::DataQualityReport& report);

}  // namespace heft::results
