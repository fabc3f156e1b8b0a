#pragma once
/// \file `heft mjcf RESULT --model MODEL --out OUT.xml`: an identify or estimate result written
/// into a MuJoCo model: the identified bodies' inertials, each friction joint's Coulomb coefficient
/// as frictionloss and viscous one as damping, the armature (docs/guide/mjcf.md). URDF has no field
/// for armature or friction a simulator reads; MJCF has all three.
#include <string>
#include <vector>

#include "heft/jobs/job.hpp"
#include "heft/sim/mjcf.hpp"

namespace heft::jobs {

struct MjcfExport {
  /// What result.json identified, as a patch; notes says what MuJoCo has no field for (torque
  /// offsets: a sensor's, not the model's; the full friction form's Stribeck terms).
  /// \throws InputError naming the file and the field.
  static sim::MjcfPatch readPatch(const std::string& result_json, std::vector<std::string>& notes);
  /// Writes `out` atomically (refused when it exists without options.overwrite, or when it is
  /// the model or the result). Returns the notes.
  static std::vector<std::string> write(const std::string& result_json, const std::string& model,
                                        const std::string& out, const WriteOptions& options = {});
  /// Writes heft's own MuJoCo model of `robot` (a short name or a URDF path; the table's base),
  /// the model heft simulate and heft sample roll out, without payloads or joint friction; with
  /// `result_json` (may be empty) patched in as by write(). Returns the notes.
  static std::vector<std::string> writeSimulationModel(const std::string& robot,
                                                       const std::string& result_json,
                                                       const std::string& out,
                                                       const WriteOptions& options = {});
};

}  // namespace heft::jobs
