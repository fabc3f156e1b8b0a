#pragma once
/// \file The data of one log in information form, to fuse logs without their samples
/// (docs/identify.md, "Fusing logs"). For the torque rows of method 3 with Coulomb + viscous
/// friction and no robust loss, the data cost is exactly quadratic in the linear vector l
/// (pi_S, friction, armature, offsets):
/// \f[ \tfrac12 \|W(\Phi l - y)\|^2 = \tfrac12 l^T D l - b^T l + \tfrac12 c,\quad
///     D = \Phi^T W^2 \Phi,\ b = \Phi^T W^2 y,\ c = y^T W^2 y, \f]
/// so the sum of several logs' (D, b, c) is the likelihood of all of them at once, and the MAP
/// over that sum is the joint MAP of the logs with the weights each log's own fit chose.
#include <string>
#include <vector>

#include <Eigen/Core>

#include "heft/identify/problem.hpp"

namespace heft::identify {

struct DataInformation {
  ParameterLayout layout;
  Eigen::MatrixXd matrix;  ///< D = Phi' W^2 Phi (linearDimension square)
  Eigen::VectorXd vector;  ///< b = Phi' W^2 y
  double scalar = 0;       ///< c = y' W^2 y
  int rows = 0;            ///< data rows behind it
  int samples = 0;         ///< prepared samples behind them
  int dimension() const { return static_cast<int>(vector.size()); }
};

/// (D, b, c) of a linear system whose row r has weight weights[r] (1 / its channel's std).
DataInformation dataInformation(const LinearSystem& system, const Eigen::VectorXd& weights);

/// Per-log nuisance: the torque offsets of `info` (a sensor is zeroed anew in every recording)
/// marginalized with their N(0, offset_prior_std^2) prior, i.e. the Schur complement
/// D_tt - D_to (D_oo + I / s^2)^-1 D_ot (and b, c likewise). The layout loses its offsets.
/// `offset_map`, when given, receives (gain G, mean g) with o*(l) = g - G l: the offsets that
/// maximize the log's posterior at given remaining parameters l.
struct OffsetMap {
  std::vector<std::string> joints;
  Eigen::MatrixXd gain;  ///< no x (dimension - no)
  Eigen::VectorXd mean;  ///< no
};
DataInformation marginalizeTorqueOffsets(const DataInformation& info, double offset_prior_std,
                                         OffsetMap* offset_map = nullptr);

/// The sum of several logs' information. \throws InputError naming `sources[i]` when its
/// parameter names differ from the first's.
DataInformation sumInformation(const std::vector<DataInformation>& infos,
                               const std::vector<std::string>& sources);

/// Rows (R, z) with R^T R = D and R^T z = b (eigen-decomposition; directions whose eigenvalue is
/// below 1e-13 of the largest carry no data and are dropped): a LinearSystem with unit weights
/// and one channel, whose least squares and MAP equal those of the logs behind `info`.
LinearSystem whitenedRows(const DataInformation& info);

}  // namespace heft::identify
