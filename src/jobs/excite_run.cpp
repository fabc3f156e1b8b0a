// ExciteJob::run and write: the design, the "before" reference, the scenario file, the CSV and
// result.json.
#include <cmath>
#include <filesystem>
#include <sstream>

#include "heft/common/error.hpp"
#include "heft/common/format.hpp"
#include "heft/jobs/excite_job.hpp"
#include "heft/jobs/simulate_job.hpp"
#include "heft/model/robots.hpp"
#include "heft/results/json.hpp"
#include "heft/sim/controller.hpp"
#include "heft/sim/scenario.hpp"
#include "result_files.hpp"

namespace heft::jobs {

namespace {

std::string num(double x, int precision = 6) { return formatNumber(x, precision); }

// The reference scenario's seeded excitation on the design grid.
excite::TrajectorySamples referenceSamples(const model::RobotModel& robot,
                                           const sim::Scenario& scenario,
                                           const excite::DesignOptions& d) {
  const sim::Reference ref =
      sim::fourierReference(robot, scenario.fourier, d.duration, d.duration / (d.samples - 1));
  excite::TrajectorySamples s;
  s.t = Eigen::VectorXd::LinSpaced(d.samples, 0, d.duration);
  s.q = ref.q.leftCols(d.samples);
  s.v = ref.v.leftCols(d.samples);
  s.a = ref.a.leftCols(d.samples);
  return s;
}

// The reference scenario with the designed motion: same robot model, controller and bounds.
std::string scenarioYaml(const ExciteJob::Config& config, const pinocchio::Model& model,
                         const excite::ExcitationTrajectory& trajectory) {
  SimulateJob::Config sim_config;
  sim_config.scenario = sim::findScenario(config.reference_scenario);
  sim::Scenario& s = sim_config.scenario;
  s.name = "excite-" + excite::toString(config.design.criterion);
  s.description = "Fourier excitation designed by heft excite (" +
                  excite::toString(config.design.criterion) + "), " +
                  num(config.design.duration, 4) + " s";
  s.duration = config.design.duration;
  s.fourier.coefficient_seed = sim::FourierExcitationOptions{}.coefficient_seed;  // unused
  s.fourier.harmonics = config.design.harmonics;
  s.fourier.base_frequency = config.design.base_frequency;
  s.fourier.ramp = config.design.ramp;  // > 0 (parse): the robot starts at rest
  for (pinocchio::JointIndex j = 1; j < model.joints.size(); ++j)
    s.fourier.series[model.names[j]] = trajectory.joints[model.joints[j].idx_v()];
  return SimulateJob::toYaml(sim_config);
}

// t, then q, qd, qdd of every joint (joint order of the model).
std::string trajectoryCsv(const pinocchio::Model& model, const excite::TrajectorySamples& s) {
  std::ostringstream out;
  out.precision(17);
  out << "t";
  for (const char* prefix : {"q_", "qd_", "qdd_"})
    for (pinocchio::JointIndex j = 1; j < model.joints.size(); ++j)
      out << "," << prefix << model.names[j];
  out << "\n";
  for (int k = 0; k < s.size(); ++k) {
    out << s.t[k];
    for (const Eigen::MatrixXd* m : {&s.q, &s.v, &s.a})
      for (int i = 0; i < m->rows(); ++i) out << "," << (*m)(i, k);
    out << "\n";
  }
  return out.str();
}

// The collision check of `robot` (a URDF): meshes from the folder above the robot's package
// (example-robot-data's package:// root) or, for other URDFs, two folders up; its SRDF when one
// lies in ../srdf/ with the same name.
excite::SelfCollision checkCollisions(const model::RobotModel& robot,
                                      const excite::TrajectorySamples& samples,
                                      const std::string& source) {
  namespace fs = std::filesystem;
  const std::string urdf = robot.source();
  const std::size_t erd = urdf.find("/example-robot-data/");
  const fs::path path(urdf);
  const std::string package_dir =
      erd != std::string::npos ? urdf.substr(0, erd) : path.parent_path().parent_path().string();
  const fs::path srdf =
      path.parent_path().parent_path() / "srdf" / (path.stem().string() + ".srdf");
  try {
    return excite::selfCollision(robot.pinocchio(), urdf, fs::exists(srdf) ? srdf.string() : "",
                                 package_dir, samples);
  } catch (const InputError& e) {
    throw InputError(source + ": self_collision: " + e.what() +
                     " (self_collision: false skips it)");
  }
}

nlohmann::json identifiabilityJson(const excite::Identifiability& id,
                                   const std::vector<std::string>& names) {
  nlohmann::json stds = nlohmann::json::object();
  for (std::size_t i = 0; i < names.size(); ++i) stds[names[i]] = results::finiteOrNull(id.std[i]);
  return {{"rows", id.rows},
          {"rank", id.rank},
          {"condition_number", results::finiteOrNull(id.condition)},
          {"log_det_information", results::finiteOrNull(id.log_det)},
          {"parameter_std", stds}};
}

nlohmann::json limitsJson(const excite::LimitUse& u) {
  return {{"position", u.position}, {"velocity", u.velocity}, {"acceleration", u.acceleration},
          {"torque", u.torque},     {"worst", u.worst},       {"satisfied", u.satisfied()}};
}

}  // namespace

ExciteJob::Result ExciteJob::run(const Config& config, Progress& progress) {
  config.validate();
  progress.start();
  const model::RobotModel robot = model::loadRobot(config.robot);
  const pinocchio::Model& model = robot.pinocchio();
  const sim::Scenario& reference = sim::findScenario(config.reference_scenario);
  require(model::loadRobot(reference.robot).displayName() == robot.displayName(),
          config.source + ": reference_scenario", "a scenario of " + robot.displayName(),
          config.reference_scenario + " (" + reference.robot + ")");
  Result result;
  result.config = config;
  excite::ExcitationDesign design(model, config.design);
  result.base_names = design.base().names;
  progress.say("robot " + robot.displayName() + ", " + std::to_string(design.base().rank()) +
               " base parameters, " + std::to_string(design.dimension()) + " coefficients");
  result.design = excite::designExcitation(design, config.optimizer);
  progress.say(result.design.summary.briefReport());
  result.after = result.design.identifiability;
  result.before = excite::identifiability(model, design.base(),
                                          referenceSamples(robot, reference, config.design),
                                          config.design.torque_noise_std);
  const int n = static_cast<int>(std::llround(config.design.duration * config.csv_rate)) + 1;
  const excite::TrajectorySamples fine =
      excite::sampleTrajectory(result.design.trajectory, config.design.duration, n);
  result.fine_limits = excite::limitUse(model, design.limits(), fine);
  if (config.self_collision) {
    result.collision = checkCollisions(robot, fine, config.source);
    progress.say("self-collision: " + std::to_string(result.collision.colliding) + " of " +
                 std::to_string(result.collision.samples) + " samples in contact (" +
                 std::to_string(result.collision.pairs) + " pairs)");
  }
  result.csv = trajectoryCsv(model, fine);
  result.scenario_yaml = scenarioYaml(config, model, result.design.trajectory);
  return result;
}

std::string ExciteJob::Result::report() const {
  std::ostringstream s;
  s << "excitation design (" << excite::toString(config.design.criterion) << ") for "
    << config.robot << ", " << num(config.design.duration, 4) << " s, " << base_names.size()
    << " base parameters\n"
    << "  " << design.summary.briefReport() << "\n"
    << "  condition number: " << num(before.condition, 5) << " (" << config.reference_scenario
    << " seeded excitation) -> " << num(after.condition, 5) << "\n"
    << "  log det information: " << num(before.log_det, 5) << " -> " << num(after.log_det, 5)
    << "\n"
    << "  largest limit use at " << num(config.csv_rate, 4) << " Hz: position "
    << num(fine_limits.position, 3) << ", velocity " << num(fine_limits.velocity, 3)
    << ", acceleration " << num(fine_limits.acceleration, 3) << ", torque "
    << num(fine_limits.torque, 3)
    << (fine_limits.satisfied() ? "" : " (VIOLATED: " + fine_limits.worst + ")") << "\n";
  if (config.self_collision)
    s << "  self-collision at " << num(config.csv_rate, 4) << " Hz: "
      << (collision.free()
              ? "none"
              : std::to_string(collision.colliding) + " samples, first " + collision.first)
      << " (" << collision.pairs << " pairs)\n";
  return s.str();
}

nlohmann::json ExciteJob::Result::toJson() const {
  const excite::DesignOptions& d = config.design;
  nlohmann::json j;
  j["schema_version"] = results::kResultSchemaVersion;
  j["robot"] = config.robot;
  j["design"] = {{"joints", d.joints},
                 {"harmonics", d.harmonics},
                 {"base_frequency_hz", d.base_frequency},
                 {"duration_s", d.duration},
                 {"ramp_s", d.ramp},
                 {"samples", d.samples},
                 {"criterion", excite::toString(d.criterion)},
                 {"torque_noise_std", d.torque_noise_std}};
  const excite::CmaesSummary& o = design.summary;
  j["optimizer"] = {{"status", excite::toString(o.status)},
                    {"message", o.message},
                    {"iterations", o.iterations},
                    {"evaluations", o.evaluations},
                    {"initial_cost", o.initial_cost},
                    {"best_cost", o.best_cost},
                    {"seconds", o.seconds}};
  j["base_parameters"] = base_names;
  j["before"] = identifiabilityJson(before, base_names);
  j["before"]["trajectory"] = config.reference_scenario + " scenario (seeded), same duration";
  j["after"] = identifiabilityJson(after, base_names);
  j["limits"] = {{"design_grid", limitsJson(design.limits)}, {"csv_grid", limitsJson(fine_limits)}};
  nlohmann::json coefficients = nlohmann::json::array();
  for (const excite::FourierSeries& s : design.trajectory.joints)
    coefficients.push_back({{"q0", s.q0},
                            {"base_frequency", s.base_frequency},
                            {"a", std::vector<double>(s.a.data(), s.a.data() + s.a.size())},
                            {"b", std::vector<double>(s.b.data(), s.b.data() + s.b.size())}});
  j["coefficients"] = coefficients;
  const excite::SelfCollision& c = collision;
  j["self_collision"] = {
      {"checked", config.self_collision}, {"pairs", c.pairs}, {"samples", c.samples},
      {"colliding_samples", c.colliding}, {"first", c.first}, {"free", c.free()}};
  j["ok"] = ok();
  return j;
}

std::vector<std::string> ExciteJob::write(const Result& result, const std::string& out_dir,
                                          const WriteOptions& options) {
  const OutputFolder folder(out_dir, {"result.json", "scenario.yaml", "trajectory.csv"}, {},
                            options);
  const std::vector<std::string> written =
      writeDesignFiles(folder, result.ok(),
                       {{"scenario.yaml", &result.scenario_yaml}, {"trajectory.csv", &result.csv}},
                       result.toJson(), options.overwrite);
  const std::string& json_out = written.back();
  if (!result.ok())
    throw SolveError("the design " +
                     (result.collision.free()
                          ? "violates a limit (" + result.fine_limits.worst + ")"
                          : "collides with itself (" + result.collision.first + ")") +
                     "; " + json_out + " holds it, no scenario written");
  return written;
}

}  // namespace heft::jobs
