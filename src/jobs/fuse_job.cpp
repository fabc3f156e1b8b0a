#include "heft/jobs/fuse_job.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <iomanip>
#include <sstream>

#include "heft/common/error.hpp"
#include "heft/common/format.hpp"
#include "heft/common/statistics.hpp"
#include "heft/identify/information.hpp"
#include "heft/io/atomic_file.hpp"
#include "heft/results/json.hpp"
#include "information_file.hpp"
#include "locked_joints.hpp"
#include "result_files.hpp"
#include "yaml_section.hpp"

namespace heft::jobs {

namespace fs = std::filesystem;
using namespace heft::identify;

void FuseJob::Config::validate() const {
  require(!runs.empty(), "runs", "at least one heft identify output folder", "none");
  require(std::isfinite(outlier_gate) && outlier_gate >= 0, "outliers.gate",
          "a finite value >= 0 (0 keeps every run)", formatNumber(outlier_gate));
  require(std::isfinite(drift_gate) && drift_gate >= 0, "drift.gate",
          "a finite value >= 0 (0: no drift scan)", formatNumber(drift_gate));
  require(job.options.method == Method::Map, identify + ": method",
          "map (information.json is the MAP's)", toString(job.options.method));
}

FuseJob::Config FuseJob::parse(const std::string& yaml_text, const std::string& source,
                               const std::string& base_dir) {
  const YAML::Node root = yaml::loadYamlMapping(
      yaml_text, source, "identify, runs, truth_log, outliers, drift, dispersion");
  yaml::YamlSection top(root, "", source, "docs/guide/fuse.md");
  Config config;
  config.source = source;
  if (!top.has("identify"))
    top.fail(root, "identify", "missing (the heft identify config the runs used)");
  config.identify = yaml::resolveConfigPath(base_dir, top.string("identify"));
  if (!top.has("runs")) top.fail(root, "runs", "missing (a list of heft identify output folders)");
  std::vector<std::string> runs;
  top.read("runs", runs);
  for (const std::string& r : runs) config.runs.push_back(yaml::resolveConfigPath(base_dir, r));
  if (top.has("truth_log"))
    config.truth_log = yaml::resolveConfigPath(base_dir, top.string("truth_log"));
  yaml::YamlSection outliers(top.raw("outliers"), "outliers", source, "docs/guide/fuse.md");
  outliers.read("gate", config.outlier_gate);
  outliers.finish();
  yaml::YamlSection drift(top.raw("drift"), "drift", source, "docs/guide/fuse.md");
  drift.read("gate", config.drift_gate);
  drift.finish();
  yaml::YamlSection dispersion(top.raw("dispersion"), "dispersion", source, "docs/guide/fuse.md");
  dispersion.read("scale", config.scale_by_dispersion);
  dispersion.finish();
  top.finish();
  config.job = IdentifyJob::load(config.identify);
  yaml::validateNamingSource(config, source);
  return config;
}

FuseJob::Config FuseJob::load(const std::string& path) {
  return parse(io::readTextFile(path), path, yaml::configFolder(path));
}

namespace {

// One run's information read and checked against the identify config.
identify::LogInformation readRun(const std::string& folder, const FuseJob::Config& config,
                                 const std::vector<std::string>& set_bodies) {
  const std::string path = (fs::path(folder) / "information.json").string();
  if (!fs::exists(path))
    throw InputError(folder +
                     ": no information.json (heft identify writes it with method map, "
                     "coulomb-viscous friction and no robust loss)");
  InformationFile file = readInformationFile(path);
  if (file.robot != config.job.robot)
    throw InputError(path + ": robot: expected " + config.job.robot + " (" + config.identify +
                     "'s), got " + file.robot);
  if (file.information.layout.body_names != set_bodies)
    throw InputError(path + ": identified bodies differ from " + config.identify +
                     "'s: another identified set");
  return {path, std::move(file.information), file.torque_offset_prior_std};
}

JobLogs robotAndTruth(const FuseJob::Config& config, Progress& progress) {
  const IdentifyJob::Config& job = config.job;
  auto say = [&](const std::string& line) { progress.say(line); };
  if (!config.truth_log.empty())
    return readJobLogs(job.robot, job.base, job.locked_joints, {config.truth_log}, config.source,
                       say);
  model::LoadOptions load;
  load.base = job.base;
  const model::RobotModel full = model::loadRobot(job.robot, load);
  try {
    return {model::lockJoints(full, job.locked_joints), {}};
  } catch (const InputError& e) {
    throw InputError(config.identify + ": " + e.what());
  }
}

// What a detected change means for the user; empty when none was.
std::string driftMessage(const identify::DriftScan& drift, const FuseJob::Config& config) {
  using Sign = identify::DriftScan::Sign;
  if (drift.detected == Sign::None) return "";
  const std::string between = "the robot changed between runs " +
                              config.runs[static_cast<std::size_t>(drift.last_before)] + " and " +
                              config.runs[static_cast<std::size_t>(drift.first_after)];
  const std::string fix = "; fuse the later runs alone for the robot as it is now";
  if (drift.detected == Sign::Split)
    return between + ": the used runs before and after disagree (drift statistic " +
           formatNumber(drift.largest, 3) + " > gate " + formatNumber(config.drift_gate, 3) +
           " x " + formatNumber(drift.typical, 3) + "); this estimate mixes both" + fix;
  const std::string agree = ", and they agree with each other (median excess " +
                            formatNumber(drift.left_out_excess, 3) + ")";
  if (drift.detected == Sign::LeftOutTail)
    return between + ": the outlier gate left out every run from the second on" + agree +
           "; this estimate is the robot before" + fix;
  return between + ": the outlier gate left out every run up to the first" + agree +
         "; this estimate is the robot as it is now";
}

// The runs' dispersion and what it did to the covariance.
std::string dispersionLine(const identify::Dispersion& d, bool scaled) {
  std::string line = "dispersion ";
  if (d.degrees_of_freedom <= 0)
    return line + "not estimable (no degree of freedom: one used run, or runs that share no " +
           "direction); covariance as the data's";
  line += "S^2 " + formatNumber(d.ratio, 3) + " over " + std::to_string(d.degrees_of_freedom) +
          " degrees of freedom (about 1 when the runs scatter as their covariances say)";
  if (!scaled) return line + "; not applied (dispersion.scale: false)";
  if (d.scale > 1) return line + "; the data's covariance scaled by " + formatNumber(d.scale, 3);
  return line + "; not above 1: the data's covariance, never narrowed";
}

}  // namespace

FuseJob::Result FuseJob::run(const Config& config, Progress& progress) {
  config.validate();
  progress.start();
  const IdentifyJob::Config& job = config.job;
  const JobLogs read = robotAndTruth(config, progress);
  const model::RobotModel& robot = read.robot;
  const model::IdentifiedSet set = model::IdentifiedSet::build(robot, job.set);
  std::vector<std::string> set_bodies;
  for (const model::BodyBlock& b : set.bodies) set_bodies.push_back(b.name);

  std::vector<identify::LogInformation> logs;
  for (const std::string& folder : config.runs) logs.push_back(readRun(folder, config, set_bodies));
  progress.say("read " + std::to_string(logs.size()) + " runs");

  MapOptions map_options = job.options.map;
  map_options.constraints = IdentifyJob::mapConstraints(robot, set, job);
  identify::FusionOptions fusion_options;
  fusion_options.outlier_gate = config.outlier_gate;
  fusion_options.drift_gate = config.drift_gate;
  fusion_options.scale_by_dispersion = config.scale_by_dispersion;
  identify::FusionResult fusion =
      identify::fuse(logs, set, job.options.problem, map_options, fusion_options);

  Result result;
  result.config = config;
  result.runs = std::move(fusion.logs);
  for (std::size_t i = 0; i < result.runs.size(); ++i) {
    result.runs[i].source = config.runs[i];  // the run folder, as the config names it
    if (!result.runs[i].used)
      progress.say("left out " + config.runs[i] + ": " + result.runs[i].left_out_because);
  }
  result.drift = fusion.drift;
  result.dispersion = fusion.dispersion;
  const std::string drift = driftMessage(result.drift, config);
  if (!drift.empty()) progress.say("drift: " + drift);
  progress.say("fused the runs: " + toString(fusion.fused.status));
  IdentifyResult& fused = fusion.fused;
  if (!read.logs.empty() && read.logs.front().truth && read.logs.front().truth->body_pi.rows() > 0)
    fused.truth = results::truthErrors(robot, read.logs.front(), fused.layout, fused.estimate,
                                       job.options.friction_truth);
  IdentifyJob::Config fused_config = job;
  fused_config.validation.clear();  // the runs' held-out ranges are theirs
  result.fused = IdentifyJob::fromIdentification(fused_config, set, fused);
  if (!drift.empty()) result.fused.warnings.push_back(drift);
  result.fused.time_s = progress.seconds();
  return result;
}

std::string FuseJob::Result::report() const {
  std::ostringstream s;
  int used = 0;
  for (const Run& r : runs) used += r.used ? 1 : 0;
  s << "fused     " << used << " of " << runs.size() << " runs, " << fused.rows << " data rows\n"
    << fused.report() << "\nruns (excess: 2 (cost at the fused estimate - own minimum) / rank; "
    << "share: of the information on the base parameters, min / median / max)\n";
  for (const Run& r : runs) {
    std::vector<double> share = r.information_share;
    std::sort(share.begin(), share.end());
    s << "  " << r.source << "  rows " << r.rows << ", rank " << r.data_rank << ", excess "
      << formatNumber(r.excess, 3) << " (at the others' estimates "
      << formatNumber(r.excess_others, 3) << ")";
    if (!share.empty())
      s << ", share " << formatNumber(share.front(), 2) << " / " << formatNumber(median(share), 2)
        << " / " << formatNumber(share.back(), 2);
    s << (r.used ? "" : "  LEFT OUT: " + r.left_out_because) << "\n";
  }
  s << dispersionLine(dispersion, config.scale_by_dispersion) << "\n";
  if (drift.ran) {
    s << "drift     largest split statistic " << formatNumber(drift.largest, 3) << " (gate "
      << formatNumber(config.drift_gate, 3) << " x typical " << formatNumber(drift.typical, 3)
      << ")";
    const std::string message = driftMessage(drift, config);
    s << (message.empty() ? ": no change" : ": " + message) << "\n";
  }
  return s.str();
}

nlohmann::json FuseJob::Result::toJson() const {
  nlohmann::json j = fused.toJson();
  j["method"] = "fused-map";
  nlohmann::json list = nlohmann::json::array();
  for (const Run& r : runs) {
    nlohmann::json offsets = nlohmann::json::object();
    for (const auto& [joint, value] : r.offsets) offsets[joint] = value;
    list.push_back({{"folder", r.source},
                    {"rows", r.rows},
                    {"data_rank", r.data_rank},
                    {"used", r.used},
                    {"left_out_because", r.left_out_because},
                    {"excess", r.excess},
                    {"excess_others", r.excess_others},
                    {"torque_offsets", offsets},
                    {"information_share", r.information_share}});
  }
  nlohmann::json drift_json = {{"gate", config.drift_gate}, {"ran", drift.ran}};
  const auto folder = [&](int run) {
    return run >= 0 ? nlohmann::json(runs[static_cast<std::size_t>(run)].source) : nlohmann::json();
  };
  if (drift.ran)
    drift_json.update({{"statistic", drift.statistic},
                       {"shared_directions", drift.shared_directions},
                       {"largest", drift.largest},
                       {"typical", drift.typical},
                       {"left_out_excess", drift.left_out_excess},
                       {"detected", identify::toString(drift.detected)},
                       {"last_before", folder(drift.last_before)},
                       {"first_after", folder(drift.first_after)}});
  j["fusion"] = {{"identify_config", config.identify},
                 {"outlier_gate", config.outlier_gate},
                 {"rows", fused.rows},
                 {"runs", list},
                 {"drift", drift_json},
                 {"dispersion",
                  {{"ratio", dispersion.ratio},
                   {"degrees_of_freedom", dispersion.degrees_of_freedom},
                   {"scaled", config.scale_by_dispersion},
                   {"scale", dispersion.scale}}}};
  return j;
}

std::vector<std::string> FuseJob::write(const Result& result, const std::string& out_dir,
                                        const WriteOptions& options) {
  std::vector<std::string> inputs;
  if (!result.config.truth_log.empty()) inputs.push_back(result.config.truth_log);
  const OutputFolder folder(out_dir, {"result.json", "robot.urdf", "information.json"}, inputs,
                            options);
  const std::string json_out = folder.path("result.json");
  std::vector<std::string> written;
  nlohmann::json json = result.toJson();
  const IdentifyJob::Config& job = result.fused.config;
  const bool usable =
      result.fused.status == Status::Converged || result.fused.status == Status::MaxIterations;
  writeUrdf(json, job.robot, job.base, job.locked_joints, result.fused.bodies,
            urdfRefusal(result.writable(), usable), folder.path("robot.urdf"), options.overwrite,
            written);
  io::writeTextFileAtomically(json_out, json.dump(2) + "\n", options.overwrite);
  written.push_back(json_out);
  if (result.fused.information)
    writeInformationFile(folder.path("information.json"), *result.fused.information, job.robot,
                         job.options.problem.torque_offset_prior_std, options.overwrite, written);
  throwIfUrdfRefused(json, json_out);
  return written;
}

}  // namespace heft::jobs
