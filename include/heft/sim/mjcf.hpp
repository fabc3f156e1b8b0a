#pragma once
/// \file Identified parameters written into a MuJoCo model: a user's MJCF (or a URDF MuJoCo reads)
/// with the identified bodies' inertials and the joints' armature, damping (viscous friction) and
/// frictionloss (Coulomb friction) replaced, everything else as it was (docs/guide/mjcf.md).
///
/// The bodies are matched by name and must have the frames the estimate is expressed in: the
/// URDF links' frames (an MJCF compiled from the same URDF, or written with the same body frames).
/// A heft body lumps the link with the links welded to it (no joint between them): the estimate
/// goes into the body with the joint and the welded bodies become massless (their geometry stays),
/// so that their masses are not counted twice.
#include <optional>
#include <string>
#include <vector>

#include <pinocchio/spatial/inertia.hpp>

namespace heft::sim {

struct MjcfPatch {
  struct Body {
    std::string name;
    pinocchio::Inertia inertia;  ///< about the body frame, body axes
  };
  struct Joint {
    std::string name;
    std::optional<double> armature;      ///< [kg m^2]
    std::optional<double> damping;       ///< viscous friction [N m s/rad]
    std::optional<double> frictionloss;  ///< Coulomb friction [N m]
  };
  std::vector<Body> bodies;
  std::vector<Joint> joints;
};

/// The model at `model_path` with `patch` applied, compiled (so that MuJoCo accepts it) and saved
/// as MJCF text. Mesh and texture folders are made absolute, so the text may be written anywhere.
/// `notes` gains a line per welded body made massless.
/// \throws InputError naming the file and the body or joint the model lacks, or a model that takes
/// every inertia from its geoms; SolveError when the patched model does not compile.
std::string patchMjcf(const std::string& model_path, const MjcfPatch& patch,
                      std::vector<std::string>& notes);
/// The same for MJCF text (asset folders as the text gives them); `source` names it in errors.
std::string patchMjcfText(const std::string& xml, const std::string& source, const MjcfPatch& patch,
                          std::vector<std::string>& notes);

}  // namespace heft::sim
