#pragma once
// The pieces of the Python module heft._heft, one registration function per file.
#include <string>

#include <nanobind/nanobind.h>
#include <nlohmann/json.hpp>

#include "heft/jobs/job.hpp"

namespace heft::python {

namespace nb = nanobind;

void bindLog(nb::module_& m);     // log.cpp: heft::io::Log and its groups, read / write / validate
void bindRobot(nb::module_& m);   // robot.cpp: heft::model::RobotModel, load_robot
void bindJobs(nb::module_& m);    // jobs.cpp: every job, config in, result object out
void bindFilter(nb::module_& m);  // filter.cpp: the online EKF, one update per sample

/// A JSON value as the Python object json.loads would give.
nb::object toPython(const nlohmann::json& value);

/// Progress lines to a Python callable (None: silent). The callable runs with the GIL held, so a
/// job may run with the GIL released.
jobs::Progress progressTo(nb::object callback);

}  // namespace heft::python
