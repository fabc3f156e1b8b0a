#include "heft/jobs/mjcf_export.hpp"

#include <filesystem>

#include <Eigen/Core>
#include <nlohmann/json.hpp>

#include "heft/common/error.hpp"
#include "heft/io/atomic_file.hpp"
#include "heft/model/model.hpp"
#include "heft/sim/sim_model.hpp"
#include "result_files.hpp"

namespace heft::jobs {

namespace fs = std::filesystem;

sim::MjcfPatch MjcfExport::readPatch(const std::string& path, std::vector<std::string>& notes) {
  const nlohmann::json j = readResultJson(path);
  sim::MjcfPatch patch;
  if (j.contains("parameters")) {
    for (const auto& [body, value] : j["parameters"].items()) {
      const std::string where = path + ": parameters." + body + ".pi";
      if (!value.contains("pi") || !value["pi"].is_array() || value["pi"].size() != 10)
        throw InputError(where + ": expected 10 numbers");
      Eigen::Matrix<double, 10, 1> pi;
      for (int i = 0; i < 10; ++i) pi[i] = resultNumber(value["pi"][i], where);
      require(pi[0] > 0, where, "a positive mass", std::to_string(pi[0]));
      patch.bodies.push_back({body, pinocchio::Inertia::FromDynamicParameters(pi)});
    }
  }
  auto joint = [&](const std::string& name) -> sim::MjcfPatch::Joint& {
    for (sim::MjcfPatch::Joint& existing : patch.joints)
      if (existing.name == name) return existing;
    patch.joints.push_back({name, {}, {}, {}});
    return patch.joints.back();
  };
  if (j.contains("friction")) {
    for (const auto& [name, value] : j["friction"].items()) {
      const std::string where = path + ": friction." + name;
      joint(name).frictionloss = resultMemberNumber(value, "coulomb", where);
      joint(name).damping = resultMemberNumber(value, "viscous", where);
      if (value.contains("gamma"))
        notes.push_back(name +
                        ": the full friction form's Stribeck terms have no MuJoCo field "
                        "(Coulomb and viscous written)");
    }
  }
  if (j.contains("armature"))
    for (const auto& [name, value] : j["armature"].items())
      joint(name).armature = resultNumber(value, path + ": armature." + name);
  if (j.contains("torque_offsets") && !j["torque_offsets"].empty())
    notes.push_back("torque offsets not written: they belong to the torque sensors, not the model");
  require(!patch.bodies.empty() || !patch.joints.empty(), path,
          "identified bodies, friction or armature", "none");
  return patch;
}

std::vector<std::string> MjcfExport::write(const std::string& result_json, const std::string& model,
                                           const std::string& out, const WriteOptions& options) {
  std::vector<std::string> notes;
  const sim::MjcfPatch patch = readPatch(result_json, notes);
  for (const std::string& input : {model, result_json}) {
    std::error_code same;
    require(!fs::exists(out) || !fs::equivalent(out, input, same), out,
            "an output path that is not an input", "the input " + input);
  }
  const std::string text = sim::patchMjcf(model, patch, notes);
  io::writeTextFileAtomically(out, text, options.overwrite);
  return notes;
}

std::vector<std::string> MjcfExport::writeSimulationModel(const std::string& robot,
                                                          const std::string& result_json,
                                                          const std::string& out,
                                                          const WriteOptions& options) {
  std::vector<std::string> notes;
  sim::MjcfPatch patch;
  if (!result_json.empty()) {
    patch = readPatch(result_json, notes);
    std::error_code same;
    require(!fs::exists(out) || !fs::equivalent(out, result_json, same), out,
            "an output path that is not an input", "the input " + result_json);
  }
  const sim::SimModel sim(model::loadRobot(robot));
  std::string text = sim.mjcf();
  if (!result_json.empty())
    text = sim::patchMjcfText(text, "heft's MuJoCo model of " + robot, patch, notes);
  io::writeTextFileAtomically(out, text, options.overwrite);
  return notes;
}

}  // namespace heft::jobs
