// heft.InertialEkf: the online EKF (online EKF paper) for a control loop written in Python: one
// update() per sample, numpy in, the estimate as a numpy view out. update() runs the C++ filter as
// is (no allocation, no throw); bench/python_filter_loop.py measures what the call adds.
#include <nanobind/eigen/dense.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include "bindings.hpp"
#include "heft/common/error.hpp"
#include "heft/filter/inertial_ekf.hpp"
#include "heft/model/contact_points.hpp"
#include "heft/model/model.hpp"

namespace heft::python {

namespace {

using filter::InertialEkf;
using filter::InertialEkfOptions;
using Vec = Eigen::Ref<const Eigen::VectorXd>;
using PointTuple = std::tuple<std::string, std::string, Eigen::Vector3d>;  // name, frame, offset

std::vector<filter::ContactPoint> contactPoints(const std::vector<PointTuple>& tuples) {
  std::vector<filter::ContactPoint> points;
  for (const auto& [name, frame, offset] : tuples)
    points.push_back(filter::ContactPoint{name, frame, offset});
  return points;
}

/// The filter with the robot it was built on (the filter keeps its own copy of what it needs; the
/// robot is kept for the body names).
struct PythonEkf {
  PythonEkf(const model::RobotModel& robot_in, const std::vector<std::string>& body_names,
            const std::vector<filter::ContactPoint>& contacts, const filter::ExternalInputs& inputs,
            const Eigen::VectorXd& prior, const InertialEkfOptions& options)
      : robot(robot_in),
        bodies(body_names),
        ekf(robot.pinocchio(), indices(robot, body_names), contacts, inputs,
            prior.size() > 0 ? prior : nominal(robot, body_names), options),
        no_forces(Eigen::VectorXd::Zero(ekf.measurementModel().numForceInputs())) {}

  static std::vector<pinocchio::JointIndex> indices(const model::RobotModel& robot,
                                                    const std::vector<std::string>& names) {
    std::vector<pinocchio::JointIndex> out;
    for (const std::string& name : names) out.push_back(robot.bodyIndex(name));
    return out;
  }
  static Eigen::VectorXd nominal(const model::RobotModel& robot,
                                 const std::vector<std::string>& names) {
    Eigen::VectorXd pi(10 * Eigen::Index(names.size()));
    for (std::size_t k = 0; k < names.size(); ++k)
      pi.segment<10>(10 * Eigen::Index(k)) = robot.pi(names[k]);
    return pi;
  }

  model::RobotModel robot;
  std::vector<std::string> bodies;
  InertialEkf ekf;
  Eigen::VectorXd no_forces;
};

void bindOptions(nb::module_& m) {
  nb::enum_<filter::UpdateStatus>(m, "UpdateStatus", "what one InertialEkf.update did")
      .value("Filling", filter::UpdateStatus::Filling)
      .value("Calibrating", filter::UpdateStatus::Calibrating)
      .value("Updated", filter::UpdateStatus::Updated)
      .value("Gated", filter::UpdateStatus::Gated)
      .value("GateOverride", filter::UpdateStatus::GateOverride)
      .value("RejectedInput", filter::UpdateStatus::RejectedInput)
      .value("NumericalFailure", filter::UpdateStatus::NumericalFailure)
      .value("NoInformation", filter::UpdateStatus::NoInformation);
  nb::class_<InertialEkfOptions>(m, "InertialEkfOptions",
                                 "the filter's options (docs/guide/filter.md explains each)")
      .def(nb::init<>())
      .def_prop_rw(
          "state", [](const InertialEkfOptions& o) { return filter::toString(o.state); },
          [](InertialEkfOptions& o, const std::string& name) {
            o.state = filter::parseState(name);
          },
          "'log-cholesky' (the paper's EKF) or 'linear-pi' (the baseline KF)")
      .def_rw("difference_half_width", &InertialEkfOptions::difference_half_width)
      .def_rw("max_sample_gap", &InertialEkfOptions::max_sample_gap)
      .def_rw("calibration_duration", &InertialEkfOptions::calibration_duration)
      .def_rw("prior_std_log", &InertialEkfOptions::prior_std_log)
      .def_rw("prior_std_length", &InertialEkfOptions::prior_std_length)
      .def_rw("process_std_log", &InertialEkfOptions::process_std_log)
      .def_rw("process_std_length", &InertialEkfOptions::process_std_length)
      .def_rw("joint_torque_std", &InertialEkfOptions::joint_torque_std)
      .def_rw("base_force_std", &InertialEkfOptions::base_force_std)
      .def_rw("base_moment_std", &InertialEkfOptions::base_moment_std)
      .def_rw("gating", &InertialEkfOptions::gating)
      .def_rw("gate_probability", &InertialEkfOptions::gate_probability)
      .def_rw("gate_threshold", &InertialEkfOptions::gate_threshold)
      .def_rw("gate_max_consecutive", &InertialEkfOptions::gate_max_consecutive)
      .def_rw("max_mass_rate", &InertialEkfOptions::max_mass_rate)
      .def_rw("rate_limit_always", &InertialEkfOptions::rate_limit_always)
      .def("validate", &InertialEkfOptions::validate);
}

}  // namespace

void bindFilter(nb::module_& m) {
  bindOptions(m);
  nb::class_<PythonEkf>(m, "InertialEkf",
                        "online estimation of a few bodies' inertial parameters, one sample at a "
                        "time")
      .def(
          "__init__",
          [](PythonEkf* self, const model::RobotModel& robot,
             const std::vector<std::string>& bodies, const std::vector<PointTuple>& contacts,
             const std::vector<std::string>& wrench_frames,
             const std::vector<PointTuple>& stance_contacts, const Eigen::VectorXd& prior,
             const InertialEkfOptions& options) {
            options.validate();
            filter::ExternalInputs inputs;
            inputs.wrench_frames = wrench_frames;
            inputs.stance_frames = model::groupContactFrames(contactPoints(stance_contacts));
            new (self) PythonEkf(robot, bodies, contactPoints(contacts), inputs, prior, options);
          },
          nb::arg("robot"), nb::arg("bodies"), nb::kw_only(),
          nb::arg("contacts") = std::vector<PointTuple>(),
          nb::arg("wrench_frames") = std::vector<std::string>(),
          nb::arg("stance_contacts") = std::vector<PointTuple>(),
          nb::arg("prior") = Eigen::VectorXd(), nb::arg("options") = InertialEkfOptions(),
          "bodies: names of the estimated bodies; contacts: (name, frame, offset) points whose "
          "world-frame forces update() receives; wrench_frames: frames of measured wrenches "
          "(force/torque sensors); stance_contacts: (name, frame, offset) points whose unknown "
          "forces are projected out while their frame is in stance (grouped by frame: "
          "stance_frames); prior: the bodies' 10 parameters each (default: the robot's)")
      .def(
          "update",
          [](PythonEkf& f, double time, const Vec& q, const Vec& v, const Vec& tau,
             const Vec& contact_forces) { return f.ekf.update(time, q, v, tau, contact_forces); },
          nb::arg("time"), nb::arg("q"), nb::arg("v"), nb::arg("tau"), nb::arg("contact_forces"),
          "one sample: time [s], q (nq), v (nv), generalized forces tau (nv: joint torques, 0 on "
          "free-flyer rows), force input (force_input_size: 3 per contact point [N, world "
          "frame], 6 per wrench frame [f; t in the frame], 1 per stance frame, > 0 in stance); "
          "never raises: bad input is a status")
      .def(
          "update",
          [](PythonEkf& f, double time, const Vec& q, const Vec& v, const Vec& tau) {
            return f.ekf.update(time, q, v, tau, f.no_forces);
          },
          nb::arg("time"), nb::arg("q"), nb::arg("v"), nb::arg("tau"),
          "one sample of a filter without contact points")
      .def("reset", [](PythonEkf& f) { f.ekf.reset(); })
      .def_ro("bodies", &PythonEkf::bodies)
      .def_prop_ro(
          "force_input_size",
          [](const PythonEkf& f) { return f.ekf.measurementModel().numForceInputs(); },
          "length of update()'s force input")
      .def_prop_ro(
          "stance_frames",
          [](const PythonEkf& f) {
            std::vector<std::string> frames;
            for (const auto& frame : f.ekf.measurementModel().stanceFrames())
              frames.push_back(frame.frame);
            return frames;
          },
          "the stance frames in force-input order (after the contact points and wrench frames)")
      .def_prop_ro(
          "estimate", [](const PythonEkf& f) -> const Eigen::VectorXd& { return f.ekf.estimate(); },
          nb::rv_policy::reference_internal, "pi of the bodies (10 each), rate-limited output")
      .def_prop_ro(
          "std", [](const PythonEkf& f) { return f.ekf.piStandardDeviation(); },
          "one-sigma of pi (linearized)")
      .def_prop_ro(
          "estimate_time", [](const PythonEkf& f) { return f.ekf.estimateTime(); },
          "the time the estimate refers to (the difference window's centre)")
      .def_prop_ro("nis", [](const PythonEkf& f) { return f.ekf.lastNis(); })
      .def_prop_ro("gate_threshold", [](const PythonEkf& f) { return f.ekf.gateThreshold(); });
}

}  // namespace heft::python
