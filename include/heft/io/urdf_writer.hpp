#pragma once
/// \file Writing identified inertial parameters back into a URDF. Only the `<inertial>` elements of
/// the links given change (origin xyz / rpy, mass, inertia ixx..izz); every other byte of the file
/// is kept as it was (the text spans are edited, the XML is never re-serialized).
///
/// Parameters are per URDF link: pi of that link alone (not lumped over fixed joints), in Pinocchio
/// order, about the link frame origin, in link-frame axes. linkPiFromLumpedPi turns an identified
/// joint-lumped pi (what Pinocchio's model.inertias[joint] holds) into such a per-link pi.
#include <map>
#include <string>

#include <pinocchio/multibody/model.hpp>

#include "heft/common/types.hpp"

namespace heft::io {

/// A link's `<inertial>` as written in the URDF.
struct UrdfInertial {
  double mass = 0;
  Vector3 xyz = Vector3::Zero();      ///< inertial frame origin (COM) in the link frame [m]
  Vector3 rpy = Vector3::Zero();      ///< inertial frame orientation, URDF roll-pitch-yaw [rad]
  Matrix3 inertia = Matrix3::Zero();  ///< about the COM, in inertial-frame axes [kg m^2]
  /// pi of the link in the link frame (about its origin, link axes).
  Vector10 pi() const;
};

/// The `<inertial>` of every link that has one, by link name. Throws InputError naming the file and
/// line on malformed XML or inertial elements.
std::map<std::string, UrdfInertial> readUrdfInertials(const std::string& urdf_path);

struct UrdfWriteOptions {
  /// Replace an existing output file (never the input). Off by default.
  bool overwrite = false;
  void validate() const;
};

/// Copies `input_path` to `output_path` with the `<inertial>` of each link in `link_pi` replaced by
/// that pi (mass, COM as origin xyz, rotational inertia about the COM). The original rpy of each
/// inertial frame is kept and the inertia is expressed in it; a missing `<inertial>`, `<origin>` or
/// attribute is inserted. Throws InputError when a link is unknown, a pi fails
/// inertia::checkConsistencyMargin (naming the link and the violated condition), output_path is the
/// input or exists (and !overwrite). The output is written atomically.
void writeUrdfInertials(const std::string& input_path,
                        const std::map<std::string, Vector10>& link_pi,
                        const std::string& output_path, const UrdfWriteOptions& options = {});

/// New per-link pi of `link_name` (a link rigidly attached to joint j, typically j's child link)
/// such that the model's lumped body of j becomes `identified_lumped_pi`:
///   new_link = nominal_link_pi + X (identified_lumped_pi - model.inertias[j]),
/// where X re-expresses the difference from the joint frame in the link frame (pseudo-inertia
/// congruence). The other links lumped into j keep their parameters. `nominal_link_pi` is the
/// link's own pi (readUrdfInertials(...).at(link_name).pi(), zero if it has no inertial). Throws
/// InputError when `link_name` is not a body frame of `model`.
Vector10 linkPiFromLumpedPi(const pinocchio::Model& model, const std::string& link_name,
                            const Vector10& identified_lumped_pi, const Vector10& nominal_link_pi);

}  // namespace heft::io
