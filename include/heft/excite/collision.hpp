#pragma once
/// \file Self-collision check of a designed trajectory with Pinocchio's collision module (coal):
/// the URDF's <collision> meshes, every pair of bodies except those the SRDF disables (adjacent
/// links, pairs that never meet), checked at every sample. A final check, not an optimization
/// constraint (mesh distance at every sample of every candidate would dominate the design's cost).
#include <string>

#include <pinocchio/multibody/model.hpp>

#include "heft/excite/design.hpp"

namespace heft::excite {

struct SelfCollision {
  int pairs = 0;      ///< collision pairs checked
  int samples = 0;    ///< samples checked
  int colliding = 0;  ///< samples with at least one pair in contact
  std::string first;  ///< "link_a / link_b at t = ... s" of the first contact; empty if none
  bool free() const { return colliding == 0; }
};

/// Checks `samples` of `model` (built from `urdf`) against the meshes of `urdf`, mesh paths
/// resolved from `package_dir` (the folder that holds the package:// roots), pairs disabled by
/// `srdf` removed (empty: every pair but bodies on the same joint).
/// \throws InputError when the URDF, its meshes or the SRDF cannot be read.
SelfCollision selfCollision(const pinocchio::Model& model, const std::string& urdf,
                            const std::string& srdf, const std::string& package_dir,
                            const TrajectorySamples& samples);

}  // namespace heft::excite
