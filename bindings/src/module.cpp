// heft._heft: the compiled half of the Python package `heft` (docs/python.md). Errors keep the
// CLI's split: bad input raises heft.InputError (a ValueError), a failed computation
// heft.SolveError (a RuntimeError); a solve that ends without converging is a result, not an error.
#include <memory>

#include <nanobind/stl/string.h>

#include "bindings.hpp"
#include "heft/common/error.hpp"

namespace heft::python {

nb::object toPython(const nlohmann::json& value) {
  // Never destroyed: a static Python object must not outlive the interpreter.
  static nb::object* loads = new nb::object(nb::module_::import_("json").attr("loads"));
  return (*loads)(value.dump());
}

jobs::Progress progressTo(nb::object callback) {
  if (callback.is_none()) return jobs::Progress();
  // Shared so that copies of the sink own the reference; released with the GIL held.
  auto holder = std::shared_ptr<nb::object>(new nb::object(std::move(callback)), [](nb::object* p) {
    nb::gil_scoped_acquire gil;
    delete p;
  });
  return jobs::Progress([holder](const std::string& line) {
    nb::gil_scoped_acquire gil;
    (*holder)(line);
  });
}

}  // namespace heft::python

NB_MODULE(_heft, m) {
  using namespace heft::python;
  m.doc() = "heft: physically consistent inertial, friction and actuator identification";
  nb::exception<heft::InputError>(m, "InputError", PyExc_ValueError);
  nb::exception<heft::SolveError>(m, "SolveError", PyExc_RuntimeError);
  bindLog(m);
  bindRobot(m);
  bindJobs(m);
  bindFilter(m);
}
