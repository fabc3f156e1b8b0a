// heft.Robot: a loaded robot (Pinocchio model plus heft's body naming), its bodies' parameters as
// numpy vectors pi = [m, mcx, mcy, mcz, Ixx, Ixy, Iyy, Ixz, Iyz, Izz] (Pinocchio's order).
#include <nanobind/eigen/dense.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "bindings.hpp"
#include "heft/common/error.hpp"
#include "heft/model/model.hpp"
#include "heft/model/robots.hpp"

namespace heft::python {

namespace {

std::vector<std::string> bodyNames(const model::RobotModel& robot) {
  std::vector<std::string> names;
  for (const model::Body& body : robot.bodies()) names.push_back(body.name);
  return names;
}

std::vector<std::string> jointNames(const model::RobotModel& robot) {
  std::vector<std::string> names;
  const pinocchio::Model& pin = robot.pinocchio();
  for (pinocchio::JointIndex j = 1; j < static_cast<pinocchio::JointIndex>(pin.njoints); ++j) {
    if (pin.joints[j].nv() == 1) names.push_back(pin.names[j]);
  }
  return names;
}

}  // namespace

void bindRobot(nb::module_& m) {
  using model::RobotModel;
  nb::class_<RobotModel>(m, "Robot", "A robot model: load one with heft.load_robot.")
      .def_prop_ro("name", &RobotModel::displayName)
      .def_prop_ro("source", &RobotModel::source, "the file it was loaded from")
      .def_prop_ro("has_free_flyer", &RobotModel::hasFreeFlyer)
      .def_prop_ro("nq", [](const RobotModel& r) { return r.pinocchio().nq; })
      .def_prop_ro("nv", [](const RobotModel& r) { return r.pinocchio().nv; })
      .def_prop_ro("body_names", &bodyNames, "bodies in joint order (what a config's bodies name)")
      .def_prop_ro("joint_names", &jointNames, "1-DoF joints in model order (a log's joints/names)")
      .def_prop_ro("contact_frames", &RobotModel::contactFrames)
      .def_prop_ro("warnings", &RobotModel::warnings)
      .def_prop_ro("total_mass", &RobotModel::totalMass, "[kg]")
      .def(
          "pi",
          [](const RobotModel& r, const std::string& body) { return Eigen::VectorXd(r.pi(body)); },
          nb::arg("body"), "the body's 10 inertial parameters, in its joint frame")
      .def(
          "set_pi",
          [](RobotModel& r, const std::string& body, const Eigen::VectorXd& pi) {
            if (pi.size() != 10)
              throw InputError("Robot.set_pi: pi has " + std::to_string(pi.size()) +
                               " entries; expected 10 [m, mcx, mcy, mcz, Ixx, Ixy, Iyy, Ixz, Iyz, "
                               "Izz]");
            r.setPi(r.bodyIndex(body), Vector10(pi));
          },
          nb::arg("body"), nb::arg("pi"))
      .def("__repr__", [](const RobotModel& r) {
        return "<heft.Robot " + r.displayName() + ": " + std::to_string(r.bodies().size()) +
               " bodies, nq " + std::to_string(r.pinocchio().nq) + ">";
      });

  m.def(
      "load_robot",
      [](const std::string& name_or_path, const std::string& base) {
        model::LoadOptions options;
        options.base = model::parseBaseType(base);
        return model::loadRobot(name_or_path, options);
      },
      nb::arg("name_or_path"), nb::kw_only(), nb::arg("base") = "default",
      "A robot by short name (heft.known_robots()) or from a URDF / MJCF file; base is 'default', "
      "'fixed' or 'free-flyer'.");
  m.def("known_robots", &model::knownRobotNames, "the short names, comma-separated");
}

}  // namespace heft::python
