#include "heft/jobs/fuse_job.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <iomanip>
#include <sstream>
#include <tuple>

#include <Eigen/QR>

#include "heft/common/error.hpp"
#include "heft/common/format.hpp"
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
  require(job.options.method == Method::Map, identify + ": method",
          "map (information.json is the MAP's)", toString(job.options.method));
}

FuseJob::Config FuseJob::parse(const std::string& yaml_text, const std::string& source,
                               const std::string& base_dir) {
  const YAML::Node root =
      yaml::loadYamlMapping(yaml_text, source, "identify, runs, truth_log, outliers");
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
struct RunData {
  DataInformation marginal;  ///< torque offsets marginalized
  OffsetMap offsets;
  LinearSystem rows;  ///< whitenedRows(marginal): the run's cost above its minimum
};

RunData readRun(const std::string& folder, const FuseJob::Config& config,
                const std::vector<std::string>& set_bodies) {
  const std::string path = (fs::path(folder) / "information.json").string();
  if (!fs::exists(path))
    throw InputError(folder +
                     ": no information.json (heft identify writes it with method map, "
                     "coulomb-viscous friction and no robust loss)");
  const InformationFile file = readInformationFile(path);
  if (file.robot != config.job.robot)
    throw InputError(path + ": robot: expected " + config.job.robot + " (" + config.identify +
                     "'s), got " + file.robot);
  if (file.information.layout.body_names != set_bodies)
    throw InputError(path + ": identified bodies differ from " + config.identify +
                     "'s: another identified set");
  RunData run;
  run.marginal =
      marginalizeTorqueOffsets(file.information, file.torque_offset_prior_std, &run.offsets);
  run.rows = whitenedRows(run.marginal);
  return run;
}

// The shares of each used run's information along each base parameter: u_k = K^+ e_k moves base
// parameter k alone; run i brings u_k' D_i u_k of the used runs' sum.
void informationShares(const BaseParameters& base, const std::vector<RunData>& data,
                       std::vector<FuseJob::Run>& runs) {
  if (base.rank == 0) return;
  const Eigen::MatrixXd U = base.K.completeOrthogonalDecomposition().pseudoInverse();
  Eigen::VectorXd total = Eigen::VectorXd::Zero(base.rank);
  std::vector<Eigen::VectorXd> info(data.size());
  for (std::size_t i = 0; i < data.size(); ++i) {
    info[i] = (U.transpose() * data[i].marginal.matrix * U).diagonal();
    if (runs[i].used) total += info[i];
  }
  for (std::size_t i = 0; i < data.size(); ++i) {
    runs[i].information_share.resize(base.rank);
    for (int k = 0; k < base.rank; ++k)
      runs[i].information_share[k] = total[k] > 0 ? info[i][k] / total[k] : 0.0;
  }
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
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

  Result result;
  result.config = config;
  std::vector<RunData> data;
  std::vector<std::string> sources;
  for (const std::string& folder : config.runs) {
    data.push_back(readRun(folder, config, set_bodies));
    Run run;
    run.folder = folder;
    run.rows = data.back().marginal.rows;
    run.data_rank = static_cast<int>(data.back().rows.rows());
    result.runs.push_back(run);
    sources.push_back((fs::path(folder) / "information.json").string());
  }
  progress.say("read " + std::to_string(data.size()) + " runs");

  MapOptions map_options = job.options.map;
  map_options.constraints = IdentifyJob::mapConstraints(robot, set, job);
  const ProblemOptions& po = job.options.problem;
  const auto fuse = [&]() {
    std::vector<DataInformation> used;
    std::vector<std::string> used_sources;
    for (std::size_t i = 0; i < data.size(); ++i) {
      if (!result.runs[i].used) continue;
      used.push_back(data[i].marginal);
      used_sources.push_back(sources[i]);
    }
    DataInformation sum = sumInformation(used, used_sources);
    LinearSystem rows = whitenedRows(sum);
    MapResult map = solveMap(rows, set, po, map_options);
    return std::make_tuple(std::move(sum), std::move(rows), std::move(map));
  };
  // the cost of run i's data above its own minimum at the estimate l, per data direction
  const auto excessOf = [&](std::size_t i, const Eigen::VectorXd& l) {
    const Eigen::VectorXd r = data[i].rows.Phi * l - data[i].rows.y;
    return result.runs[i].data_rank > 0 ? r.squaredNorm() / result.runs[i].data_rank : 0.0;
  };
  // Outlier gate: how well each run's data are explained by the other runs' own estimates (the
  // median over them: robust while most runs are of this robot); a run far above the runs'
  // typical value is left out. Pairwise, because a fusion that includes an outlier explains the
  // good runs badly too.
  if (config.outlier_gate > 0 && data.size() >= 3) {
    std::vector<Eigen::VectorXd> own(data.size());
    for (std::size_t i = 0; i < data.size(); ++i)
      own[i] = solveMap(data[i].rows, set, po, map_options).linear;
    std::vector<double> scores;
    for (std::size_t j = 0; j < data.size(); ++j) {
      std::vector<double> e;
      for (std::size_t i = 0; i < data.size(); ++i)
        if (i != j) e.push_back(excessOf(j, own[i]));
      result.runs[j].excess_others = median(e);
      scores.push_back(result.runs[j].excess_others);
    }
    const double typical = median(scores);
    for (Run& run : result.runs) {
      if (!(run.excess_others > config.outlier_gate * typical)) continue;
      run.used = false;
      run.left_out_because =
          "excess at the other runs' estimates " + formatNumber(run.excess_others, 3) + " > gate " +
          formatNumber(config.outlier_gate, 3) + " x the runs' median " + formatNumber(typical, 3);
      progress.say("left out " + run.folder + ": " + run.left_out_because);
    }
  }
  auto [information, rows, map] = fuse();
  result.information = std::move(information);
  for (std::size_t i = 0; i < data.size(); ++i) result.runs[i].excess = excessOf(i, map.linear);
  progress.say("fused the runs: " + toString(map.status));

  IdentifyResult fused;
  fused.method = Method::Map;
  fused.status = map.status;
  fused.message = map.message;
  fused.layout = rows.layout;
  fused.names = rows.names;
  fused.nominal = nominalLinearVector(rows.layout, set, po);
  fused.estimate = map.linear;
  fused.covariance = map.linear_covariance;
  fused.stddev = fused.covariance.diagonal().cwiseMax(0.0).cwiseSqrt();
  const LeastSquaresResult ls = solveLeastSquares(rows, fused.nominal);
  fused.base = ls.base;
  fused.condition_number = ls.condition_number;
  fused.channel_names = map.channel_names;
  fused.channel_rms_before = map.channel_rms_before;
  fused.channel_rms_after = map.channel_rms_after;
  fused.iterations = map.iterations;
  fused.rows = result.information.rows;
  fused.samples = result.information.samples;
  fused.warnings = map.warnings;
  if (!read.logs.empty() && read.logs.front().truth && read.logs.front().truth->body_pi.rows() > 0)
    fused.truth = results::truthErrors(robot, read.logs.front(), fused.layout, fused.estimate,
                                       job.options.friction_truth);
  IdentifyJob::Config fused_config = job;
  fused_config.validation.clear();  // the runs' held-out ranges are theirs
  result.fused = IdentifyJob::fromIdentification(fused_config, set, fused);
  for (std::size_t i = 0; i < data.size(); ++i) {
    const OffsetMap& o = data[i].offsets;
    if (o.joints.empty()) continue;
    const Eigen::VectorXd offsets = o.mean - o.gain * result.fused.linear;
    for (std::size_t k = 0; k < o.joints.size(); ++k)
      result.runs[i].offsets.emplace_back(o.joints[k], offsets[static_cast<Eigen::Index>(k)]);
  }
  informationShares(fused.base, data, result.runs);
  result.fused.time_s = progress.seconds();
  return result;
}

std::string FuseJob::Result::report() const {
  std::ostringstream s;
  int used = 0;
  for (const Run& r : runs) used += r.used ? 1 : 0;
  s << "fused     " << used << " of " << runs.size() << " runs, " << information.rows
    << " data rows\n"
    << fused.report() << "\nruns (excess: 2 (cost at the fused estimate - own minimum) / rank; "
    << "share: of the information on the base parameters, min / median / max)\n";
  for (const Run& r : runs) {
    std::vector<double> share = r.information_share;
    std::sort(share.begin(), share.end());
    s << "  " << r.folder << "  rows " << r.rows << ", rank " << r.data_rank << ", excess "
      << formatNumber(r.excess, 3) << " (at the others' estimates "
      << formatNumber(r.excess_others, 3) << ")";
    if (!share.empty())
      s << ", share " << formatNumber(share.front(), 2) << " / " << formatNumber(median(share), 2)
        << " / " << formatNumber(share.back(), 2);
    s << (r.used ? "" : "  LEFT OUT: " + r.left_out_because) << "\n";
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
    list.push_back({{"folder", r.folder},
                    {"rows", r.rows},
                    {"data_rank", r.data_rank},
                    {"used", r.used},
                    {"left_out_because", r.left_out_because},
                    {"excess", r.excess},
                    {"excess_others", r.excess_others},
                    {"torque_offsets", offsets},
                    {"information_share", r.information_share}});
  }
  j["fusion"] = {{"identify_config", config.identify},
                 {"outlier_gate", config.outlier_gate},
                 {"rows", information.rows},
                 {"runs", list}};
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
  writeInformationFile(folder.path("information.json"), result.information, job.robot,
                       job.options.problem.torque_offset_prior_std, options.overwrite, written);
  throwIfUrdfRefused(json, json_out);
  return written;
}

}  // namespace heft::jobs
