#include "heft/jobs/explore_job.hpp"

#include <yaml-cpp/yaml.h>

#include <cmath>
#include <sstream>
#include <tuple>
#include <utility>

#include <mujoco/mujoco.h>

#include "heft/common/error.hpp"
#include "heft/common/format.hpp"
#include "heft/io/atomic_file.hpp"
#include "heft/jobs/simulate_job.hpp"
#include "heft/model/robots.hpp"
#include "heft/results/json.hpp"
#include "heft/sim/scenario.hpp"
#include "optimizer_section.hpp"
#include "result_files.hpp"
#include "yaml_section.hpp"

namespace heft::jobs {

namespace {

constexpr const char* kDocs = "docs/guide/explore.md";

std::string num(double x, int precision = 4) { return formatNumber(x, precision); }

const char* kChannelNames[6] = {"x", "y", "z", "roll", "pitch", "yaw"};

void readExploration(const YAML::Node& node, const std::string& source,
                     sampling::ExplorationOptions& o, std::uint64_t& random_seed) {
  yaml::YamlSection s(node, "exploration", source, kDocs);
  s.read("segments", o.segments, yaml::positiveCount);
  s.read("segment_duration", o.segment_duration, yaml::positive);
  s.read("degree", o.degree, [](int n) {
    if (n < 4 || n > 20)
      throw InputError("expected an integer in 4 .. 20, got " + std::to_string(n));
  });
  if (s.has("bounds")) {
    std::vector<double> b;
    s.read("bounds", b);
    if (b.size() != 6)
      s.fail(s.raw("bounds"), s.field("bounds"),
             "expected 6 numbers (x, y, z [m], roll, pitch, yaw [rad]), got " +
                 std::to_string(b.size()));
    for (int i = 0; i < 6; ++i) o.bounds[i] = b[i];
  }
  if (s.has("criterion"))
    o.criterion = yaml::located(s, "criterion", [](const std::string& name) {
      return sampling::informationCriterionFromName(name, "");
    });
  s.read("max_hop_flight", o.max_hop_flight, yaml::nonNegative);
  s.read("clip_horizon", o.clip_horizon, yaml::positive);
  s.read("step", o.step, yaml::positive);
  s.read("max_base_deviation", o.max_base_deviation, yaml::positive);
  s.read("max_tilt", o.max_tilt, yaml::positive);
  s.read("min_base_height", o.min_base_height, yaml::finite);
  s.read("torque_fraction", o.torque_fraction, yaml::positive);
  s.read("random_seed", random_seed);
  s.finish();
}

// The reference scenario with the designed motion: its model, controller and bounds.
std::string scenarioYaml(const ExploreJob::Config& config, const sampling::CommandDesign& design) {
  SimulateJob::Config sim_config;
  sim_config.scenario = sim::findScenario(config.reference_scenario);
  sim::Scenario& s = sim_config.scenario;
  s.name = config.reference_scenario + "-explore";
  s.description = "base commands designed by heft explore (" +
                  sampling::toString(config.exploration.criterion) + "), " +
                  num(design.duration, 4) + " s";
  s.stance = design.motion;
  s.duration = design.duration;
  return SimulateJob::toYaml(sim_config);
}

// t, the base pose (position, quaternion x y z w) and every joint's target angle and
// feed-forward torque at `rate`.
std::string referenceCsv(const sim::SimModel& sim, const sampling::CommandDesign& design,
                         double rate) {
  const double dt = sim.mujoco()->opt.timestep;
  const sim::Reference ref =
      sim::stanceReference(sim.nominal(), sim.contactNames(), sim.options().contact_radius,
                           design.motion, design.duration, dt);
  std::ostringstream out;
  out.precision(10);
  out << "t,base_x,base_y,base_z,base_qx,base_qy,base_qz,base_qw";
  for (const std::string& j : sim.jointNames()) out << "," << j;
  for (const std::string& j : sim.jointNames()) out << "," << j << "_tau_ff";
  out << "\n";
  const int n = static_cast<int>(std::floor(design.duration * rate + 1e-9)) + 1;
  const int nu = sim.nu();
  for (int i = 0; i < n; ++i) {
    const double t = i / rate;
    const int k = std::min(ref.samples() - 1, static_cast<int>(std::lround(t / dt)));
    out << t;
    for (int r = 0; r < 7; ++r) out << "," << ref.q(r, k);
    for (int j = 0; j < nu; ++j) out << "," << ref.q(ref.q.rows() - nu + j, k);
    for (int j = 0; j < nu; ++j) out << "," << ref.tau(j, k);
    out << "\n";
  }
  return out.str();
}

// The estimate (search units) and residual RMS per channel of a heft sample result.json, checked
// against the sample config's coordinates: another config's or a failed run's is bad input.
std::pair<Eigen::VectorXd, Eigen::VectorXd> readStage1(const nlohmann::json& j,
                                                       const std::string& path,
                                                       const sampling::ParameterSpace& space) {
  const std::string where = path + ": stage1_result";
  if (j.value("method", std::string()) != "sampling")
    throw InputError(where + ": expected the result.json of heft sample, got method \"" +
                     j.value("method", std::string()) + "\"");
  const std::string status =
      j.contains("summary") ? j["summary"].value("status", std::string()) : std::string();
  if (status != "converged" && status != "max_iterations")
    throw InputError(where + ": expected a usable stage 1 (status converged or max_iterations), " +
                     "got \"" + status + "\": nothing to design around");
  if (!j.contains("information") || !j["information"].is_object())
    throw InputError(where + ": holds no information block (the Fisher information at the " +
                     "estimate failed): run stage 1 again");
  const nlohmann::json& info = j["information"];
  std::vector<std::string> names;
  if (info.contains("names") && info["names"].is_array())
    for (const nlohmann::json& n : info["names"])
      names.push_back(n.is_string() ? n.get<std::string>() : n.dump());
  if (names != space.names()) {
    const auto list = [](const std::vector<std::string>& v) {
      std::string out;
      for (const std::string& n : v) out += (out.empty() ? "" : ", ") + n;
      return out;
    };
    throw InputError(where + ": expected the coordinates of the sample config (" +
                     list(space.names()) + "), got (" + list(names) +
                     "): a result of another config?");
  }
  const auto vector = [&](const nlohmann::json& array, const std::string& field,
                          Eigen::Index size) {
    if (!array.is_array() || static_cast<Eigen::Index>(array.size()) != size)
      throw InputError(where + ": " + field + ": expected " + std::to_string(size) + " numbers");
    Eigen::VectorXd v(size);
    for (Eigen::Index i = 0; i < size; ++i)
      v[i] = resultNumber(array[i], where + ": " + field + "[" + std::to_string(i) + "]");
    return v;
  };
  const nlohmann::json none;
  const nlohmann::json& sampling = j.contains("sampling") ? j["sampling"] : none;
  return {vector(sampling.is_object() && sampling.contains("best_x") ? sampling["best_x"] : none,
                 "sampling.best_x", space.dimension()),
          vector(info.contains("channel_rms") ? info["channel_rms"] : none,
                 "information.channel_rms", 6)};
}

}  // namespace

void ExploreJob::Config::validate() const {
  require(!sample_config.empty(), source + ": sample", "the stage-1 heft sample config", "nothing");
  sample.validate();
  exploration.validate();
  require(std::isfinite(csv_rate) && csv_rate > 0, source + ": csv_rate", "> 0 Hz", num(csv_rate));
  const sim::Scenario& reference = sim::findScenario(reference_scenario);
  require(reference.motion == sim::Motion::Stance, source + ": reference_scenario",
          "a scenario with a stance motion (the designed commands drive the stance controller)",
          reference_scenario);
  require(reference.robot == sample.robot, source + ": reference_scenario",
          "a scenario of the sample config's robot (" + sample.robot + ")",
          reference_scenario + " (" + reference.robot + ")");
  require(reference.kp == sample.kp && reference.kd == sample.kd, source + ": reference_scenario",
          "the gains of the sample config's replay (kp " + num(sample.kp) + ", kd " +
              num(sample.kd) + "): the design replays the commands through them",
          reference_scenario + " with kp " + num(reference.kp) + ", kd " + num(reference.kd));
  try {  // before stage 1: its estimate would otherwise be computed and dropped
    exploration.requireHopFits(reference.stance.hop_push);
  } catch (const InputError& e) {
    throw InputError(source + ": " + e.what());
  }
}

ExploreJob::Config ExploreJob::parse(const std::string& yaml_text, const std::string& source,
                                     const std::string& base_dir) {
  const YAML::Node root = yaml::loadYamlMapping(yaml_text, source, "sample, exploration, ...");
  Config config;
  config.source = source;
  yaml::YamlSection top(root, "", source, kDocs);
  if (!top.has("sample")) top.fail(root, "sample", "missing (the stage-1 heft sample config)");
  config.sample_config = yaml::resolveConfigPath(base_dir, top.string("sample"));
  config.sample = yaml::located(
      top, "sample", [&](const std::string&) { return SampleJob::load(config.sample_config); });
  if (top.has("reference_scenario"))
    config.reference_scenario = yaml::located(top, "reference_scenario", [](const std::string& n) {
      (void)sim::findScenario(n);
      return n;
    });
  readExploration(top.raw("exploration"), source, config.exploration, config.random_seed);
  yaml::readCmaesOptions(top.raw("optimizer"), source, kDocs, config.exploration.optimizer);
  top.read("threads", config.exploration.threads, yaml::nonNegativeCount);
  top.read("csv_rate", config.csv_rate, yaml::positive);
  if (top.has("stage1_result"))
    config.stage1_result = yaml::resolveConfigPath(base_dir, top.string("stage1_result"));
  top.finish();
  yaml::validateNamingSource(config, source);
  return config;
}

ExploreJob::Config ExploreJob::load(const std::string& path) {
  return parse(io::readTextFile(path), path, yaml::configFolder(path));
}

ExploreJob::Result ExploreJob::run(const Config& config, Progress& progress) {
  config.validate();
  progress.start();
  Result result;
  result.config = config;
  const SampleJob::Config& sample = config.sample;
  const model::RobotModel robot = model::loadRobot(sample.robot);
  sim::SimModelOptions sim_options;
  sim_options.contact_radius = sample.contact_radius;
  sim_options.floor_friction = sample.floor_friction;
  const sim::SimModel sim(robot, sim_options);
  sim::StanceMotionOptions base = sim::findScenario(config.reference_scenario).stance;
  base.roll_amplitude = base.pitch_amplitude = base.yaw_amplitude = base.squat_depth = 0;
  base.trot_height = base.hop_flight = 0;
  // limits that not even standing still satisfies leave nothing to design: bad input, found
  // before stage 1 so that no estimate is computed and then dropped
  const double standing = sampling::feedforwardRatio(
      robot.pinocchio(), sim::stanceReference(robot, sim.contactNames(), sample.contact_radius,
                                              base, base.settle + 1, sim.mujoco()->opt.timestep));
  if (standing > config.exploration.torque_fraction)
    throw InputError(config.source + ": exploration.torque_fraction: expected a share of the " +
                     "effort limits that standing still respects (it needs " +
                     num(100 * standing, 3) + " %), got " +
                     num(config.exploration.torque_fraction));
  const sampling::ParameterSpace space = SampleJob::space(sample, robot, sim);
  Eigen::VectorXd estimate, channel_rms;  // what the design needs of stage 1
  if (!config.stage1_result.empty()) {
    progress.say("stage 1: read from " + config.stage1_result);
    result.stage1_json = readResultJson(config.stage1_result);
    std::tie(estimate, channel_rms) = readStage1(result.stage1_json, config.stage1_result, space);
    result.names = space.names();
  } else {
    progress.say("stage 1: heft sample " + config.sample_config);
    SampleJob::Config stage1 = sample;
    if (config.exploration.threads > 0) stage1.sampling.threads = config.exploration.threads;
    result.stage1 = SampleJob::run(stage1, progress);
    result.names = result.stage1.names;
    if (!result.stage1.ok()) {
      result.design.status = sampling::ExplorationSummary::Status::Failed;
      result.design.message = "stage 1 failed: nothing to design around";
      return result;
    }
    estimate = result.stage1.summary.best_x;
    channel_rms = result.stage1.information.channel_rms;
  }
  result.steps = space.steps();
  sampling::Replay replay;
  replay.kp = Eigen::VectorXd::Constant(sim.nu(), sample.kp);
  replay.kd = Eigen::VectorXd::Constant(sim.nu(), sample.kd);
  sampling::ExplorationOptions exploration = config.exploration;
  exploration.torque_offsets = sample.sampling.weights.torque_offsets;
  const sampling::CommandExperiment experiment(sim, space, estimate, replay, channel_rms, base,
                                               exploration);
  progress.say("designing " + std::to_string(experiment.dimension()) +
               " control points for the information of " + std::to_string(space.dimension()) +
               " parameters");
  result.random = experiment.randomDesign(config.random_seed);
  result.design = sampling::designCommands(experiment);
  if (result.design.usable()) {
    result.scenario_yaml = scenarioYaml(config, result.design.best);
    result.csv = referenceCsv(sim, result.design.best, config.csv_rate);
  }
  return result;
}

std::string ExploreJob::Result::report() const {
  std::ostringstream s;
  if (!stage1_json.is_null())
    s << "stage 1: the estimate of " << config.stage1_result << " (not re-run)\n";
  else
    s << "stage 1 (heft sample " << config.sample_config << ")\n" << stage1.summary.report();
  s << design.report();
  if (random.feasible)
    s << "  a random design in the same bounds (seed " << config.random_seed << "): criterion "
      << num(random.criterion) << "\n";
  if (design.best.feasible) {
    s << "  predicted std at the stage-1 estimate (white-noise bound, docs/sampling.md):\n";
    const Eigen::VectorXd& std_x = design.best.information.std_x;
    for (std::size_t i = 0; i < names.size(); ++i) {
      s << "    " << names[i] << ": " << num(std_x[i] * steps[i], 3);
      if (random.feasible)
        s << " (random design: " << num(random.information.std_x[i] * steps[i], 3) << ")";
      s << "\n";
    }
  }
  return s.str();
}

nlohmann::json ExploreJob::Result::toJson() const {
  nlohmann::json j;
  j["schema_version"] = results::kResultSchemaVersion;
  j["method"] = "active_exploration";
  j["sample_config"] = config.sample_config;
  j["reference_scenario"] = config.reference_scenario;
  if (!stage1_json.is_null()) {
    j["stage1_result"] = config.stage1_result;
    j["stage1"] = stage1_json;
  } else {
    j["stage1"] = stage1.toJson();
  }
  nlohmann::json d;
  d["status"] = sampling::toString(design.status);
  d["message"] = design.message;
  d["criterion_name"] = sampling::toString(config.exploration.criterion);
  d["start_criterion"] = results::finiteOrNull(design.optimizer.initial_cost);
  d["criterion"] = results::finiteOrNull(design.best.criterion);
  d["random_criterion"] = results::finiteOrNull(random.criterion);
  d["generations"] = design.optimizer.iterations;
  d["designs"] = design.designs;
  d["infeasible"] = design.infeasible;
  d["seconds"] = design.seconds;
  if (design.best.feasible) {
    d["duration_s"] = design.best.duration;
    d["max_feedforward_ratio"] = design.best.max_feedforward_ratio;
    d["information_rank"] = design.best.information.rank;
    nlohmann::json predicted = nlohmann::json::object(), at_random = nlohmann::json::object();
    for (std::size_t i = 0; i < names.size(); ++i) {
      predicted[names[i]] = design.best.information.std_x[i] * steps[i];
      if (random.feasible) at_random[names[i]] = random.information.std_x[i] * steps[i];
    }
    d["predicted_std"] = predicted;
    if (random.feasible) d["random_predicted_std"] = at_random;
    const sim::BezierCommands& c = design.best.motion.commands;
    nlohmann::json points = nlohmann::json::object();
    for (int r = 0; r < 6; ++r) {
      std::vector<double> row(c.points.cols());
      for (Eigen::Index i = 0; i < c.points.cols(); ++i) row[i] = c.points(r, i);
      points[kChannelNames[r]] = row;
    }
    d["commands"] = {{"degree", c.degree},
                     {"segment_duration_s", c.segment_duration},
                     {"settle_s", design.best.motion.settle},
                     {"points", points}};
  } else {
    d["why"] = design.best.why;
  }
  j["design"] = d;
  j["status"] = ok() ? "designed" : "failed";
  return j;
}

std::vector<std::string> ExploreJob::write(const Result& result, const std::string& out_dir,
                                           const WriteOptions& options) {
  std::vector<std::string> inputs = {result.config.sample.log};
  inputs.insert(inputs.end(), result.config.sample.more_logs.begin(),
                result.config.sample.more_logs.end());
  if (!result.config.stage1_result.empty()) inputs.push_back(result.config.stage1_result);
  const OutputFolder folder(out_dir, {"result.json", "scenario.yaml", "reference.csv"}, inputs,
                            options);
  const std::vector<std::string> written =
      writeDesignFiles(folder, result.ok(),
                       {{"scenario.yaml", &result.scenario_yaml}, {"reference.csv", &result.csv}},
                       result.toJson(), options.overwrite);
  const std::string& json_out = written.back();
  if (!result.ok())
    throw SolveError("active exploration failed (" + result.design.message + "); " + json_out +
                     " says why, no scenario written");
  return written;
}

}  // namespace heft::jobs
