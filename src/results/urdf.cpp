#include "heft/results/urdf.hpp"

#include <algorithm>
#include <filesystem>
#include <map>

#include <pinocchio/multibody/model.hpp>

#include "heft/common/error.hpp"
#include "heft/inertia/inertia.hpp"
#include "heft/io/atomic_file.hpp"
#include "heft/io/urdf_writer.hpp"

namespace heft::results {

namespace fs = std::filesystem;

std::string writeIdentifiedUrdf(const model::RobotModel& robot,
                                const std::vector<BodyEstimate>& bodies,
                                const std::string& urdf_out, bool overwrite,
                                std::vector<std::string>& warnings) {
  const std::string source = robot.source();
  if (fs::path(source).extension() != ".urdf")
    return "not written: the robot does not come from a URDF (" + source + ")";
  const auto inertials = io::readUrdfInertials(source);
  auto nominalOf = [&](const std::string& link) {
    const auto it = inertials.find(link);
    return it == inertials.end() ? Vector10::Zero() : it->second.pi();
  };
  std::map<std::string, Vector10> link_pi;
  for (const BodyEstimate& b : bodies) {
    const model::Body& body = robot.body(robot.bodyIndex(b.name));
    const inertia::ConsistencyReport margin = inertia::checkConsistencyMargin(b.pi);
    if (!margin.consistent) {
      const inertia::Violation& v = margin.violations.front();
      throw InputError("body " + b.name + ": the estimate lacks the consistency margin: violates " +
                       v.condition + " (" + v.detail + ")");
    }
    // First choice: the links rigidly attached to the body keep their URDF values and the body's
    // own link takes the whole change.
    const Vector10 own = io::linkPiFromLumpedPi(robot.pinocchio(), b.name, b.pi, nominalOf(b.name));
    if (inertia::checkConsistencyMargin(own).consistent || body.lumped_links.empty()) {
      link_pi[b.name] = own;
      continue;
    }
    // That link alone cannot carry the change. The data see only the lumped body, so split it:
    // each link gets w_i * pi_body (w_i its nominal mass fraction), a positive multiple of the
    // body with the body's relative margin, summing to pi_body. Massless links stay as they are.
    std::vector<std::pair<std::string, double>> links{{b.name, nominalOf(b.name)[0]}};
    for (const std::string& l : body.lumped_links) links.emplace_back(l, nominalOf(l)[0]);
    double total = 0;
    for (const auto& [l, m] : links) total += std::max(m, 0.0);
    const pinocchio::Model& pin = robot.pinocchio();
    const Vector10 lumped_nominal = pin.inertias[body.joint].toDynamicParameters();
    for (const auto& [l, m] : links) {
      const double w = total > 0 ? std::max(m, 0.0) / total : (l == b.name ? 1.0 : 0.0);
      if (w == 0) continue;
      link_pi[l] = io::linkPiFromLumpedPi(pin, l, w * b.pi + lumped_nominal, Vector10::Zero());
    }
    warnings.push_back("body " + b.name + ": link " + b.name +
                       " alone cannot carry the identified change consistently; the body's "
                       "links share it in proportion to their nominal masses");
  }
  // Links nobody identified are copied unchanged; their consistency is the input's business.
  for (const auto& [link, inertial] : inertials) {
    if (link_pi.count(link)) continue;
    const Vector10 pi = inertial.pi();
    if (!pi.allFinite() || pi.isZero(0)) continue;  // a massless frame (imu, sensor mounts)
    const inertia::ConsistencyReport report = inertia::checkConsistency(pi, 0.0);
    if (!report.consistent)
      warnings.push_back("link " + link +
                         " (not identified, copied unchanged): its URDF inertial is not "
                         "physically consistent: " +
                         report.violations.front().condition + " (" +
                         report.violations.front().detail + "), as heft info reports it");
  }
  io::UrdfWriteOptions options;
  options.overwrite = overwrite;
  io::writeUrdfInertials(source, link_pi, urdf_out, options);
  // The URDF's loop file goes beside the written URDF too, so that it loads the same mechanism.
  const std::string loops = model::loopFilePath(source);
  if (fs::exists(loops))
    io::writeTextFileAtomically(model::loopFilePath(urdf_out), io::readTextFile(loops), overwrite);
  return "written";
}

}  // namespace heft::results
