#include "heft/results/prediction.hpp"

#include <cmath>
#include <iomanip>
#include <sstream>

#include "heft/common/error.hpp"
#include "heft/common/format.hpp"

namespace heft::results {

TorquePrediction torquePrediction(const std::string& model, const Eigen::VectorXd& error,
                                  const Eigen::VectorXd& measured, const Eigen::VectorXi& channel,
                                  const std::vector<std::string>& channels, int samples) {
  require(error.size() == measured.size() && error.size() == channel.size(), "prediction rows",
          "errors, measurements and channels of one size", "other sizes");
  const int nc = static_cast<int>(channels.size());
  TorquePrediction p;
  p.model = model;
  p.channels = channels;
  p.samples = samples;
  p.rows = static_cast<int>(error.size());
  Eigen::VectorXd se = Eigen::VectorXd::Zero(nc), sm = Eigen::VectorXd::Zero(nc);
  Eigen::VectorXi count = Eigen::VectorXi::Zero(nc);
  for (int r = 0; r < p.rows; ++r) {
    se[channel[r]] += error[r] * error[r];
    sm[channel[r]] += measured[r] * measured[r];
    ++count[channel[r]];
  }
  p.rmse.setZero(nc);
  p.rms_measured.setZero(nc);
  p.relative.setZero(nc);
  for (int c = 0; c < nc; ++c) {
    if (count[c] == 0) continue;
    p.rmse[c] = std::sqrt(se[c] / count[c]);
    p.rms_measured[c] = std::sqrt(sm[c] / count[c]);
    p.relative[c] = p.rms_measured[c] > 0 ? p.rmse[c] / p.rms_measured[c] : 0.0;
  }
  if (p.rows > 0) {
    p.rmse_all = std::sqrt(se.sum() / p.rows);
    const double all = std::sqrt(sm.sum() / p.rows);
    p.relative_all = all > 0 ? p.rmse_all / all : 0.0;
  }
  return p;
}

std::string predictionReport(const std::vector<TorquePrediction>& predictions) {
  if (predictions.empty()) return "";
  std::ostringstream s;
  s << std::left << std::setw(24) << "channel" << std::right;
  for (const TorquePrediction& p : predictions) s << std::setw(26) << ("RMSE " + p.model);
  s << "   [N m] (relative)\n";
  const auto row = [&](const std::string& name, auto&& value) {
    s << "  " << std::left << std::setw(22) << name << std::right;
    for (const TorquePrediction& p : predictions) {
      const auto [rmse, relative] = value(p);
      s << std::setw(14) << formatNumber(rmse, 4) << " (" << std::setw(8)
        << formatNumber(100 * relative, 3) << " %)";
    }
    s << "\n";
  };
  for (size_t c = 0; c < predictions.front().channels.size(); ++c)
    row(predictions.front().channels[c], [c](const TorquePrediction& p) {
      return std::pair<double, double>(p.rmse[c], p.relative[c]);
    });
  row("all", [](const TorquePrediction& p) {
    return std::pair<double, double>(p.rmse_all, p.relative_all);
  });
  return s.str();
}

}  // namespace heft::results
