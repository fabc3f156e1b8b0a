#pragma once
/// \file The identified model written back into the robot's URDF.
#include <string>
#include <vector>

#include "heft/model/model.hpp"
#include "heft/results/body_estimate.hpp"

namespace heft::results {

/// Writes `urdf_out` atomically: the robot's URDF with the <inertial> of every body in `bodies`
/// replaced (a lumped body's change goes to its own link, or is shared by its links when that
/// link alone would be inconsistent: a warning then). The caller checks that every body is
/// consistent. Returns "written", or why not (the robot does not come from a URDF).
std::string writeIdentifiedUrdf(const model::RobotModel& robot,
                                const std::vector<BodyEstimate>& bodies,
                                const std::string& urdf_out, bool overwrite,
                                std::vector<std::string>& warnings);

}  // namespace heft::results
