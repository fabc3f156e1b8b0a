#include "heft/state/contacts.hpp"

#include <cmath>

#include <pinocchio/algorithm/frames.hpp>
#include <pinocchio/algorithm/kinematics.hpp>

#include "heft/common/error.hpp"
#include "heft/common/format.hpp"

namespace heft::state {

void ContactDetectionOptions::validate() const {
  const auto num = [](double x) { return formatNumber(x, 6); };
  require(std::isfinite(ground_height), "contact.ground_height", "a finite value",
          num(ground_height));
  requirePositive(height, "contact.height");
  requirePositive(speed, "contact.speed");
}

std::vector<std::uint8_t> detectContacts(const pinocchio::Model& model, pinocchio::Data& data,
                                         const std::vector<pinocchio::FrameIndex>& frames,
                                         const Eigen::VectorXd& q, const Eigen::VectorXd& v,
                                         const ContactDetectionOptions& options) {
  pinocchio::forwardKinematics(model, data, q, v);
  pinocchio::updateFramePlacements(model, data);
  std::vector<std::uint8_t> flags(frames.size());
  for (std::size_t c = 0; c < frames.size(); ++c) {
    const double h = data.oMf[frames[c]].translation().z() - options.ground_height;
    const double speed =
        pinocchio::getFrameVelocity(model, data, frames[c], pinocchio::LOCAL_WORLD_ALIGNED)
            .linear()
            .norm();
    flags[c] = h < options.height && speed < options.speed ? 1 : 0;
  }
  return flags;
}

}  // namespace heft::state
