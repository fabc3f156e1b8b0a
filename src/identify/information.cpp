#include "heft/identify/information.hpp"

#include <algorithm>
#include <cmath>

#include <Eigen/Cholesky>
#include <Eigen/Eigenvalues>

#include "heft/common/error.hpp"

namespace heft::identify {

DataInformation dataInformation(const LinearSystem& system, const Eigen::VectorXd& weights) {
  require(weights.size() == system.rows(), "weights", "one per row",
          std::to_string(weights.size()));
  const Eigen::VectorXd w2 = weights.cwiseAbs2();
  DataInformation info;
  info.layout = system.layout;
  info.matrix.noalias() = system.Phi.transpose() * w2.asDiagonal() * system.Phi;
  info.vector.noalias() = system.Phi.transpose() * w2.cwiseProduct(system.y);
  info.scalar = w2.dot(system.y.cwiseAbs2());
  info.rows = system.rows();
  return info;
}

DataInformation marginalizeTorqueOffsets(const DataInformation& info, double offset_prior_std,
                                         OffsetMap* offset_map) {
  require(std::isfinite(offset_prior_std) && offset_prior_std > 0, "offset prior std",
          "a finite value > 0", std::to_string(offset_prior_std));
  const int no = info.layout.numTorqueOffsets(), nt = info.dimension() - no;
  DataInformation out = info;
  out.layout.torque_offset_joints.clear();
  out.layout.torque_offset_joint.clear();
  if (offset_map) *offset_map = OffsetMap{info.layout.torque_offset_joints, {}, {}};
  if (no == 0) return out;
  const Eigen::MatrixXd Dtt = info.matrix.topLeftCorner(nt, nt);
  const Eigen::MatrixXd Dto = info.matrix.topRightCorner(nt, no);
  Eigen::MatrixXd Doo = info.matrix.bottomRightCorner(no, no);
  Doo.diagonal().array() += 1.0 / (offset_prior_std * offset_prior_std);
  const Eigen::LLT<Eigen::MatrixXd> llt(Doo);  // positive definite: the prior alone is
  const Eigen::MatrixXd gain = llt.solve(Dto.transpose());
  const Eigen::VectorXd mean = llt.solve(info.vector.tail(no));
  out.matrix = Dtt - Dto * gain;
  out.matrix = 0.5 * (out.matrix + out.matrix.transpose()).eval();
  out.vector = info.vector.head(nt) - Dto * mean;
  out.scalar = info.scalar - info.vector.tail(no).dot(mean);
  if (offset_map) {
    offset_map->gain = gain;
    offset_map->mean = mean;
  }
  return out;
}

DataInformation sumInformation(const std::vector<DataInformation>& infos,
                               const std::vector<std::string>& sources) {
  require(!infos.empty(), "information", "at least one log", "none");
  require(sources.size() == infos.size(), "sources", "one per log", "other");
  DataInformation sum = infos.front();
  const std::vector<std::string> names = sum.layout.linearNames();
  for (std::size_t i = 1; i < infos.size(); ++i) {
    const std::vector<std::string> other = infos[i].layout.linearNames();
    if (other != names) {
      std::string first_difference;
      for (std::size_t k = 0; k < std::max(names.size(), other.size()); ++k) {
        const std::string a = k < names.size() ? names[k] : "(none)";
        const std::string b = k < other.size() ? other[k] : "(none)";
        if (a != b) {
          first_difference =
              "entry " + std::to_string(k) + " is " + b + " where " + sources.front() + " has " + a;
          break;
        }
      }
      throw InputError(sources[i] + ": parameters differ from " + sources.front() + "'s (" +
                       first_difference + "): another robot or identified set");
    }
    sum.matrix += infos[i].matrix;
    sum.vector += infos[i].vector;
    sum.scalar += infos[i].scalar;
    sum.rows += infos[i].rows;
    sum.samples += infos[i].samples;
  }
  return sum;
}

LinearSystem whitenedRows(const DataInformation& info) {
  const int n = info.dimension();
  LinearSystem sys;
  sys.layout = info.layout;
  sys.names = info.layout.linearNames();
  sys.channel_names = {"whitened"};
  const Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> eig(info.matrix);
  require(eig.info() == Eigen::Success && info.matrix.allFinite() && info.vector.allFinite(),
          "information matrix", "finite and symmetric", "other values");
  const Eigen::VectorXd& lambda = eig.eigenvalues();
  const double largest = n > 0 ? std::max(lambda.maxCoeff(), 0.0) : 0.0;
  std::vector<int> kept;
  for (int k = 0; k < n; ++k)
    if (largest > 0 && lambda[k] > 1e-13 * largest) kept.push_back(k);
  const int r = static_cast<int>(kept.size());
  sys.Phi.resize(r, n);
  sys.y.resize(r);
  for (int i = 0; i < r; ++i) {
    const int k = kept[i];
    const double s = std::sqrt(lambda[k]);
    sys.Phi.row(i) = s * eig.eigenvectors().col(k).transpose();
    sys.y[i] = eig.eigenvectors().col(k).dot(info.vector) / s;
  }
  sys.channel = Eigen::VectorXi::Zero(r);
  return sys;
}

}  // namespace heft::identify
