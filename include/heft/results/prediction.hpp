#pragma once
/// \file Held-out prediction: how well a model predicts the joint torques of samples it was not
/// fitted on. The figure users compare models by (the nominal model, an identified one, another
/// tool's), per channel: a joint (fixed base) or a contact-projected row (floating base).
#include <string>
#include <vector>

#include <Eigen/Core>

namespace heft::results {

struct TorquePrediction {
  std::string model;                  ///< what predicted: "nominal", "identified", a URDF path
  std::vector<std::string> channels;  ///< joints, or "projected[i]" rows
  Eigen::VectorXd rmse;               ///< per channel: RMS of measured - predicted [N m]
  Eigen::VectorXd rms_measured;       ///< per channel: RMS of the measured torque [N m]
  /// Per channel: rmse / rms_measured (0 where nothing was measured).
  Eigen::VectorXd relative;
  double rmse_all = 0;      ///< over every row
  double relative_all = 0;  ///< rmse_all / RMS of every measured row
  int samples = 0, rows = 0;
};

/// Fills a TorquePrediction from per-row errors (measured - predicted) and measured values, the
/// channel of each row and the channel names.
TorquePrediction torquePrediction(const std::string& model, const Eigen::VectorXd& error,
                                  const Eigen::VectorXd& measured, const Eigen::VectorXi& channel,
                                  const std::vector<std::string>& channels, int samples);

/// Side by side, one line per channel: "channel  rmse_a (rel_a)  rmse_b (rel_b) ...". Every
/// prediction must have the same channels.
std::string predictionReport(const std::vector<TorquePrediction>& predictions);

}  // namespace heft::results
