// heft.Log and its groups: every matrix is a numpy array (samples x channels). Reading a field
// gives a view into the log; assigning one copies the array in (any float64-convertible array).
#include <nanobind/eigen/dense.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "bindings.hpp"
#include "heft/io/log.hpp"
#include "heft/io/log_io.hpp"
#include "heft/io/validation.hpp"
#include "heft/model/model.hpp"

namespace heft::python {

namespace {

void bindGroups(nb::module_& m) {
  using namespace heft::io;
  nb::class_<Metadata>(m, "Metadata", "Root attributes of a log (docs/log-format.md).")
      .def(nb::init<>())
      .def_rw("robot", &Metadata::robot)
      .def_prop_rw(
          "base_type", [](const Metadata& meta) { return toString(meta.base_type); },
          [](Metadata& meta, const std::string& name) { meta.base_type = parseBaseType(name); },
          "'fixed' or 'free-flyer'")
      .def_rw("units", &Metadata::units)
      .def_rw("noise_profile", &Metadata::noise_profile)
      .def_rw("scenario", &Metadata::scenario)
      .def_rw("seed", &Metadata::seed);
  nb::class_<JointSeries>(m, "JointSeries", "joints/: N samples x nj joints.")
      .def(nb::init<>())
      .def_rw("time", &JointSeries::time)
      .def_rw("names", &JointSeries::names)
      .def_rw("q", &JointSeries::q)
      .def_rw("v", &JointSeries::v)
      .def_rw("tau", &JointSeries::tau)
      .def_rw("tau_cmd", &JointSeries::tau_cmd)
      .def_rw("base_pose", &JointSeries::base_pose)
      .def_rw("base_twist", &JointSeries::base_twist);
  nb::class_<ImuSeries>(m, "ImuSeries", "imu/: M samples.")
      .def(nb::init<>())
      .def_rw("frame", &ImuSeries::frame)
      .def_rw("time", &ImuSeries::time)
      .def_rw("gyro", &ImuSeries::gyro)
      .def_rw("accel", &ImuSeries::accel)
      .def_rw("orientation", &ImuSeries::orientation);
  nb::class_<MocapSeries>(m, "MocapSeries", "mocap/: K samples, dropouts are missing rows.")
      .def(nb::init<>())
      .def_rw("frame", &MocapSeries::frame)
      .def_rw("time", &MocapSeries::time)
      .def_rw("position", &MocapSeries::position)
      .def_rw("orientation", &MocapSeries::orientation);
  nb::class_<ContactSeries>(m, "ContactSeries", "contacts/: C samples x nc flags (1 = contact).")
      .def(nb::init<>())
      .def_rw("time", &ContactSeries::time)
      .def_rw("names", &ContactSeries::names)
      .def_rw("flags", &ContactSeries::flags)
      .def_rw("frames", &ContactSeries::frames)
      .def_rw("offsets", &ContactSeries::offsets);
  nb::class_<ForceTorqueSeries>(m, "ForceTorqueSeries",
                                "force_torque/: W samples x 6 ns wrenches [fx fy fz tx ty tz].")
      .def(nb::init<>())
      .def_rw("time", &ForceTorqueSeries::time)
      .def_rw("names", &ForceTorqueSeries::names)
      .def_rw("frames", &ForceTorqueSeries::frames)
      .def_rw("wrench", &ForceTorqueSeries::wrench);
  nb::class_<TruthSeries>(m, "TruthSeries",
                          "truth/ of a simulated log: for scoring only, never an input.")
      .def(nb::init<>())
      .def_rw("time", &TruthSeries::time)
      .def_rw("q", &TruthSeries::q)
      .def_rw("v", &TruthSeries::v)
      .def_rw("a", &TruthSeries::a)
      .def_rw("base_pose", &TruthSeries::base_pose)
      .def_rw("base_twist", &TruthSeries::base_twist)
      .def_rw("base_acceleration", &TruthSeries::base_acceleration)
      .def_rw("contact_names", &TruthSeries::contact_names)
      .def_rw("contact_forces", &TruthSeries::contact_forces)
      .def_rw("contact_flags", &TruthSeries::contact_flags)
      .def_rw("body_names", &TruthSeries::body_names)
      .def_rw("body_pi", &TruthSeries::body_pi)
      .def_rw("varying_body_names", &TruthSeries::varying_body_names)
      .def_rw("varying_body_pi", &TruthSeries::varying_body_pi);
  nb::class_<EstimateSeries>(m, "EstimateSeries", "estimates/: parameter estimates over time.")
      .def(nb::init<>())
      .def_rw("estimator", &EstimateSeries::estimator)
      .def_rw("time", &EstimateSeries::time)
      .def_rw("body_names", &EstimateSeries::body_names)
      .def_rw("body_pi", &EstimateSeries::body_pi)
      .def_rw("body_pi_std", &EstimateSeries::body_pi_std)
      .def_rw("nis", &EstimateSeries::nis)
      .def_rw("status", &EstimateSeries::status);
}

io::ValidationOptions validationOptions(double quaternion_tolerance) {
  io::ValidationOptions options;
  options.max_errors = 1000;
  options.quaternion_tolerance = quaternion_tolerance;
  return options;
}

}  // namespace

void bindLog(nb::module_& m) {
  using namespace heft::io;
  bindGroups(m);
  nb::class_<Log>(m, "Log",
                  "A heft log: metadata, joints and the optional groups (None when absent).")
      .def(nb::init<>())
      .def_rw("meta", &Log::meta)
      .def_rw("joints", &Log::joints)
      .def_rw("imu", &Log::imu, nb::arg("value").none())
      .def_rw("mocap", &Log::mocap, nb::arg("value").none())
      .def_rw("contacts", &Log::contacts, nb::arg("value").none())
      .def_rw("force_torque", &Log::force_torque, nb::arg("value").none())
      .def_rw("truth", &Log::truth, nb::arg("value").none())
      .def_rw("estimates", &Log::estimates, nb::arg("value").none())
      .def("first_difference", &firstDifference, nb::arg("other"),
           "'' when both logs hold the same values bit for bit, else the first difference.");

  m.def(
      "read_log",
      [](const std::string& path, bool check) {
        ReadOptions options;
        options.check_log = check;
        return readLog(path, options);
      },
      nb::arg("path"), nb::kw_only(), nb::arg("check") = true,
      "Reads an HDF5 log (.h5) or a CSV folder; check=True validates it first (InputError naming "
      "the field and row of the first problem).");
  m.def(
      "write_log",
      [](const Log& log, const std::string& path, bool overwrite) {
        WriteOptions options;
        options.overwrite = overwrite;
        writeLog(log, path, options);
      },
      nb::arg("log"), nb::arg("path"), nb::kw_only(), nb::arg("overwrite") = false,
      "Writes the log atomically (.h5 / .hdf5: HDF5, else a CSV folder) after validating it.");
  m.def(
      "validate_log",
      [](const Log& log, const model::RobotModel* robot, double quaternion_tolerance) {
        const ValidationOptions options = validationOptions(quaternion_tolerance);
        const ValidationReport report = robot != nullptr
                                            ? validateLog(log, robot->pinocchio(), options)
                                            : validateLog(log, options);
        return report.ok() ? std::string() : report.report();
      },
      nb::arg("log"), nb::arg("robot").none() = nb::none(), nb::kw_only(),
      nb::arg("quaternion_tolerance") = 1e-3,
      "'' when the log is valid (and agrees with the robot, when given), else one line per error.");
}

}  // namespace heft::python
