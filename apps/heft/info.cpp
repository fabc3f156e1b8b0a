// heft info MODEL: a robot's bodies, masses, inertias and their physical consistency.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>
#include <string>

#include "command.hpp"
#include "heft/common/error.hpp"
#include "heft/inertia/inertia.hpp"
#include "heft/model/model.hpp"

namespace {

struct InfoArgs {
  std::string model;
  bool json = false;
  bool free_flyer = false;
  bool fixed_base = false;
  double tolerance = 0.0;
};

// JSON has no inf / nan: such margins (undefined when m <= 0) become null.
using Json = nlohmann::ordered_json;  // keys in the order written

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

int runInfo(const InfoArgs& args) {
  heft::model::LoadOptions options;
  if (args.free_flyer) options.base = heft::model::BaseType::FreeFlyer;
  if (args.fixed_base) options.base = heft::model::BaseType::Fixed;
  const heft::model::RobotModel robot = heft::model::loadRobot(args.model, options);
  const auto& model = robot.pinocchio();

  std::vector<BodyInfo> infos;
  int inconsistent = 0;
  for (const auto& body : robot.bodies()) {
    infos.push_back(describe(robot, body, args.tolerance));
    inconsistent += !infos.back().report.consistent;
  }

  if (args.json) {
    Json out;
    out["robot"] = robot.displayName();
    out["file"] = robot.source();
    out["base"] = robot.hasFreeFlyer() ? "free-flyer" : "fixed";
    out["nq"] = model.nq;
    out["nv"] = model.nv;
    out["total_mass"] = robot.totalMass();
    out["world_mass"] = robot.worldMass();
    out["world_links"] = robot.worldLinks();
    out["contact_frames"] = robot.contactFrames();
    out["inertia_reference"] =
        "about the COM, body-frame axes (about the body frame origin when mass <= 0)";
    out["tolerance"] = args.tolerance;
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
    std::cout << out.dump(2) << "\n";
    return 0;
  }

  std::cout << "robot     " << robot.displayName() << " (" << robot.source() << ")\n"
            << "base      " << (robot.hasFreeFlyer() ? "free-flyer" : "fixed") << ", nq "
            << model.nq << ", nv " << model.nv << ", " << infos.size() << " bodies\n"
            << "mass      " << fmt(robot.totalMass()) << " kg (pinocchio::computeTotalMass)";
  if (robot.worldMass() > 0)
    std::cout << "; " << fmt(robot.worldMass()) << " kg more welded to the world, not counted";
  std::cout << "\n";
  if (!robot.contactFrames().empty()) {
    std::cout << "contacts ";
    for (const auto& f : robot.contactFrames()) std::cout << " " << f;
    std::cout << "\n";
  }
  for (const auto& w : robot.warnings()) std::cout << "warning   parser: " << w << "\n";
  std::cout << "\ninertia about the COM in body-frame axes [kg m^2] (* = about the body origin, "
               "m <= 0); COM in the body frame [m]\n";
  size_t wb = 4, wj = 5;  // column widths: the longest body and joint names
  for (const auto& info : infos) {
    wb = std::max(wb, info.body->name.size());
    wj = std::max(wj, info.body->joint_name.size());
  }
  const int b = static_cast<int>(wb), jw = static_cast<int>(wj);
  std::printf("%-3s %-*s %-*s %10s %10s %10s %10s %11s %11s %11s %11s %11s %11s  %s\n", "#", b,
              "body", jw, "joint", "mass [kg]", "com x", "com y", "com z", "Ixx", "Iyy", "Izz",
              "Ixy", "Ixz", "Iyz", "consistent");
  for (const auto& info : infos) {
    const auto& I = info.inertia;
    const auto com = [&](int i) { return info.has_com ? fmt(info.com[i], "%.4g") : "-"; };
    std::printf(
        "%-3d %-*s %-*s %10.5g %10s %10s %10s %11.4g %11.4g %11.4g %11.4g %11.4g %11.4g%s %s\n",
        static_cast<int>(info.body->joint), b, info.body->name.c_str(), jw,
        info.body->joint_name.c_str(), info.pi[0], com(0).c_str(), com(1).c_str(), com(2).c_str(),
        I(0, 0), I(1, 1), I(2, 2), I(0, 1), I(0, 2), I(1, 2), info.has_com ? " " : "*",
        info.report.consistent ? "yes" : "NO");
  }
  std::cout << "\n"
            << inconsistent << " of " << infos.size()
            << " bodies not physically consistent (margins must exceed " << fmt(args.tolerance)
            << ")\n";
  for (const auto& info : infos)
    for (const auto& v : info.report.violations)
      std::cout << "  " << info.body->name << ": " << v.condition << " margin " << fmt(v.margin)
                << " (" << v.detail << ")\n";
  std::fflush(stdout);
  return 0;
}

std::function<int()> setupInfo(CLI::App& app) {
  auto args = std::make_shared<InfoArgs>();
  app.add_option("MODEL", args->model,
                 "robot short name (go2, talos, panda, ...) or path to a URDF / MJCF file")
      ->required();
  app.add_flag("--json", args->json, "print JSON instead of a table");
  auto* ff = app.add_flag("--free-flyer", args->free_flyer,
                          "free-flyer base (default for legged robots and unknown URDFs)");
  auto* fixed = app.add_flag("--fixed-base", args->fixed_base,
                             "root link welded to the world (default for arms)");
  ff->excludes(fixed);
  app.add_option("--tolerance", args->tolerance,
                 "consistency margins must exceed this (kg, kg m^2); default 0")
      ->check(CLI::Number);
  return [args]() { return runInfo(*args); };
}

const heft::cli::Registration registration{
    "info", "Print a robot's bodies, masses, inertias and physical-consistency violations",
    &setupInfo};

}  // namespace
