#include "heft/jobs/inspect_jobs.hpp"

#include <algorithm>
#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <sstream>

#include "heft/common/error.hpp"
#include "heft/inertia/inertia.hpp"
#include "heft/io/log_io.hpp"
#include "heft/results/json.hpp"

namespace heft::jobs {

namespace {

using Json = nlohmann::ordered_json;

// JSON has no inf / nan: such margins (undefined when m <= 0) become null.

Json number(double x) { return std::isfinite(x) ? Json(x) : Json(); }

Json matrix(const heft::Matrix3& M) {
  return {{M(0, 0), M(0, 1), M(0, 2)}, {M(1, 0), M(1, 1), M(1, 2)}, {M(2, 0), M(2, 1), M(2, 2)}};
}

std::string fmt(double x, const char* spec = "%.6g") {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, spec, x);
  return buffer;
}

// One body's row: mass, COM and inertia about the COM (undefined for m <= 0, then about the
// origin).
struct BodyInfo {
  const heft::model::Body* body;
  heft::Vector10 pi;
  heft::inertia::ConsistencyReport report;
  bool has_com;
  heft::Vector3 com;
  heft::Matrix3 inertia;  // about the COM if has_com, else about the body frame origin
};

BodyInfo describe(const heft::model::RobotModel& robot, const heft::model::Body& body,
                  double tolerance) {
  BodyInfo info{&body, robot.pi(body.joint),  {},
                false, heft::Vector3::Zero(), heft::Matrix3::Zero()};
  info.report = heft::inertia::checkConsistency(info.pi, tolerance);
  info.has_com = info.pi[0] > 0;
  if (info.has_com) {
    info.com = heft::inertia::centerOfMass(info.pi);
    info.inertia = heft::inertia::rotationalInertiaAtCom(info.pi);
  } else {
    info.inertia = heft::inertia::rotationalInertiaAtOrigin(info.pi);
  }
  return info;
}

// printf into a stream, for the table's fixed-width rows.
void appendf(std::ostringstream& out, const char* format, ...) {
  char buffer[1024];
  va_list args;
  va_start(args, format);
  std::vsnprintf(buffer, sizeof buffer, format, args);
  va_end(args);
  out << buffer;
}

}  // namespace

InfoJob::Result InfoJob::run(const Config& config) {
  heft::model::LoadOptions options;
  options.base = config.base;
  const heft::model::RobotModel robot = heft::model::loadRobot(config.model, options);
  const auto& model = robot.pinocchio();

  std::vector<BodyInfo> infos;
  int inconsistent = 0;
  for (const auto& body : robot.bodies()) {
    infos.push_back(describe(robot, body, config.tolerance));
    inconsistent += !infos.back().report.consistent;
  }

  Result result;
  result.bodies = static_cast<int>(infos.size());
  result.inconsistent_bodies = inconsistent;
  {
    Json& out = result.json;
    out["robot"] = robot.displayName();
    out["file"] = robot.source();
    out["base"] = robot.hasFreeFlyer() ? "free-flyer" : "fixed";
    out["nq"] = model.nq;
    out["nv"] = model.nv;
    out["total_mass"] = robot.totalMass();
    out["world_mass"] = robot.worldMass();
    out["world_links"] = robot.worldLinks();
    out["contact_frames"] = robot.contactFrames();
    out["loops"] = Json::array();
    for (const model::LoopClosure& l : robot.loops()) {
      std::vector<std::string> cycle;
      for (const pinocchio::JointIndex j : l.cycle) cycle.push_back(model.names[j]);
      out["loops"].push_back({{"name", l.name},
                              {"joint1", model.names[l.joint1]},
                              {"joint2", model.names[l.joint2]},
                              {"dimension", l.dimension},
                              {"cycle", cycle}});
    }
    out["inertia_reference"] =
        "about the COM, body-frame axes (about the body frame origin when mass <= 0)";
    out["tolerance"] = config.tolerance;
    out["inconsistent_bodies"] = inconsistent;
    out["bodies"] = Json::array();
    for (const auto& info : infos) {
      Json b;
      b["name"] = info.body->name;
      b["mass"] = info.pi[0];
      b["com"] = info.has_com ? Json{info.com[0], info.com[1], info.com[2]} : Json();
      b["inertia"] = matrix(info.inertia);
      b["consistent"] = info.report.consistent;
      b["violations"] = Json::array();
      for (const auto& v : info.report.violations)
        b["violations"].push_back(
            {{"condition", v.condition}, {"margin", number(v.margin)}, {"detail", v.detail}});
      b["inertia_about"] = info.has_com ? "com" : "origin";
      b["joint"] = info.body->joint_name;
      b["joint_index"] = info.body->joint;
      b["lumped_links"] = info.body->lumped_links;
      b["pi"] = std::vector<double>(info.pi.data(), info.pi.data() + 10);
      b["margins"] = {{"mass", number(info.report.mass_margin)},
                      {"inertia_positive_definite", number(info.report.inertia_margin)},
                      {"triangle_inequality", number(info.report.triangle_margin)},
                      {"pseudo_inertia", number(info.report.pseudo_inertia_margin)}};
      out["bodies"].push_back(b);
    }
    out["warnings"] = robot.warnings();
  }

  std::ostringstream text;

  text << "robot     " << robot.displayName() << " (" << robot.source() << ")\n"
       << "base      " << (robot.hasFreeFlyer() ? "free-flyer" : "fixed") << ", nq " << model.nq
       << ", nv " << model.nv << ", " << infos.size() << " bodies\n"
       << "mass      " << fmt(robot.totalMass()) << " kg (pinocchio::computeTotalMass)";
  if (robot.worldMass() > 0)
    text << "; " << fmt(robot.worldMass()) << " kg more welded to the world, not counted";
  text << "\n";
  if (!robot.contactFrames().empty()) {
    text << "contacts ";
    for (const auto& f : robot.contactFrames()) text << " " << f;
    text << "\n";
  }
  for (const model::LoopClosure& l : robot.loops()) {
    text << "loop      " << l.name << ": " << model.names[l.joint1] << " to "
         << model.names[l.joint2] << ", " << l.dimension << " constrained directions, joints";
    for (const pinocchio::JointIndex j : l.cycle) text << " " << model.names[j];
    text << "\n";
  }
  for (const auto& w : robot.warnings()) text << "warning   parser: " << w << "\n";
  text << "\ninertia about the COM in body-frame axes [kg m^2] (* = about the body origin, "
          "m <= 0); COM in the body frame [m]\n";
  size_t wb = 4, wj = 5;  // column widths: the longest body and joint names
  for (const auto& info : infos) {
    wb = std::max(wb, info.body->name.size());
    wj = std::max(wj, info.body->joint_name.size());
  }
  const int b = static_cast<int>(wb), jw = static_cast<int>(wj);
  appendf(text, "%-3s %-*s %-*s %10s %10s %10s %10s %11s %11s %11s %11s %11s %11s  %s\n", "#", b,
          "body", jw, "joint", "mass [kg]", "com x", "com y", "com z", "Ixx", "Iyy", "Izz", "Ixy",
          "Ixz", "Iyz", "consistent");
  for (const auto& info : infos) {
    const auto& I = info.inertia;
    const auto com = [&](int i) { return info.has_com ? fmt(info.com[i], "%.4g") : "-"; };
    appendf(text,
            "%-3d %-*s %-*s %10.5g %10s %10s %10s %11.4g %11.4g %11.4g %11.4g %11.4g %11.4g%s %s\n",
            static_cast<int>(info.body->joint), b, info.body->name.c_str(), jw,
            info.body->joint_name.c_str(), info.pi[0], com(0).c_str(), com(1).c_str(),
            com(2).c_str(), I(0, 0), I(1, 1), I(2, 2), I(0, 1), I(0, 2), I(1, 2),
            info.has_com ? " " : "*", info.report.consistent ? "yes" : "NO");
  }
  text << "\n"
       << inconsistent << " of " << infos.size()
       << " bodies not physically consistent (margins must exceed " << fmt(config.tolerance)
       << ")\n";
  for (const auto& info : infos)
    for (const auto& v : info.report.violations)
      text << "  " << info.body->name << ": " << v.condition << " margin " << fmt(v.margin) << " ("
           << v.detail << ")\n";
  result.table = text.str();
  return result;
}

void ValidateLogJob::Config::validate() const {
  validation.validate();
  summary.validate();
  data_quality.validate();
}

ValidateLogJob::Result ValidateLogJob::run(const Config& config) {
  config.validate();
  const model::RobotModel robot = model::loadRobot(config.model);
  io::ReadOptions read;
  read.check_log = false;
  const io::Log log = io::readLog(config.log, read);
  io::ValidationOptions validation = config.validation;
  validation.unlogged_joints = model::loopJointNames(robot);
  const io::ValidationReport report = io::validateLog(log, robot.pinocchio(), validation);
  Result result;
  result.robot = robot.displayName();
  result.ok = report.ok();
  result.total_errors = static_cast<int>(report.total_errors);
  nlohmann::json& j = result.json;
  j["log"] = config.log;
  j["robot"] = result.robot;
  j["valid"] = result.ok;
  j["total_errors"] = result.total_errors;
  j["errors"] = nlohmann::json::array();
  for (const io::ValidationIssue& e : report.errors)
    j["errors"].push_back({{"field", e.field}, {"row", e.row}, {"message", e.message}});
  if (!result.ok) {
    result.report = report.report();
    j["groups"] = nlohmann::json::array();
    j["data_quality"] = nullptr;
    return result;
  }
  const io::LogSummary summary = io::summarize(log, config.summary);
  result.data_quality = io::assessDataQuality(log, robot.pinocchio(), config.data_quality);
  result.report = summary.report() + "\n" + result.data_quality->report();
  j["groups"] = nlohmann::json::array();
  for (const io::GroupSummary& g : summary.groups) {
    j["groups"].push_back({{"name", g.name},
                           {"samples", g.samples},
                           {"start", g.start},
                           {"end", g.end},
                           {"median_rate", g.median_rate},
                           {"largest_gap", g.largest_gap},
                           {"largest_gap_at", g.largest_gap_at},
                           {"dropouts", g.dropouts},
                           {"dropout_time", g.dropout_time},
                           {"channels", g.channels}});
  }
  j["data_quality"] = results::dataQualityJson(*result.data_quality);
  return result;
}

}  // namespace heft::jobs
