#pragma once
/// \file The identified model written back into the robot's URDF.
#include <string>
#include <vector>

#include "heft/model/model.hpp"
#include "heft/results/body_estimate.hpp"

namespace heft::results {

/// Writes `urdf_out` atomically: the robot's URDF with the <inertial> of every body in `bodies`
/// replaced, every other link copied byte for byte (a nominal link that is not physically
/// consistent is the input's business: a warning, as `heft info` reports it). A lumped body's
/// change goes to its own link; when that link alone would fall below the project's margin
/// (inertia::kConsistencyMargin), the body's links share it: each a positive multiple of the body
/// (its nominal mass fraction), which keeps the body's relative margin, so no link becomes a
/// point or line mass (a warning then). The URDF's loop file (model::loopFilePath), if any, is
/// copied beside `urdf_out`. Returns "written", or why not (the robot does not come from a URDF).
/// \throws InputError when an identified body itself lacks the margin (naming the
/// link and the violated condition): the caller records it as refused.
std::string writeIdentifiedUrdf(const model::RobotModel& robot,
                                const std::vector<BodyEstimate>& bodies,
                                const std::string& urdf_out, bool overwrite,
                                std::vector<std::string>& warnings);

}  // namespace heft::results
