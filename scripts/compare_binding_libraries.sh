#!/usr/bin/env bash
# The measurement behind the choice of nanobind over pybind11 (docs/python.md, "Design"): the same
# filter-shaped method (a 40-vector state, three 12-vectors in, the state out as a view) bound with
# each, built with the same compiler and flags; prints compile time, module size and the median
# cost of one update call from Python. Needs network access to PyPI for the two pinned packages.
#   bash scripts/compare_binding_libraries.sh [WORK_DIR]
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
work="${1:-$(mktemp -d)}"
mkdir -p "$work" && cd "$work"
"$root/.deps/venv/bin/python" -m venv --clear v >/dev/null
v/bin/pip install -q --disable-pip-version-check nanobind==3.1.0 pybind11==3.1.0 numpy==2.4.6
filter_struct='struct Filter { Eigen::VectorXd x = Eigen::VectorXd::Zero(40);
  const Eigen::VectorXd& update(double, const Eigen::Ref<const Eigen::VectorXd>& q,
      const Eigen::Ref<const Eigen::VectorXd>& v, const Eigen::Ref<const Eigen::VectorXd>& tau) {
    x.head(q.size()) += 1e-3 * (q + v + tau); return x; } };'
cat > nb.cpp <<CPP
#include <nanobind/nanobind.h>
#include <nanobind/eigen/dense.h>
$filter_struct
NB_MODULE(trial_nb, m) { nanobind::class_<Filter>(m, "Filter").def(nanobind::init<>())
  .def("update", &Filter::update, nanobind::rv_policy::reference_internal); }
CPP
cat > pb.cpp <<CPP
#include <pybind11/pybind11.h>
#include <pybind11/eigen.h>
$filter_struct
PYBIND11_MODULE(trial_pb, m) { pybind11::class_<Filter>(m, "Filter").def(pybind11::init<>())
  .def("update", &Filter::update, pybind11::return_value_policy::reference_internal); }
CPP
cat > CMakeLists.txt <<'CMAKE'
cmake_minimum_required(VERSION 3.22)
project(binding_choice CXX)
set(CMAKE_CXX_STANDARD 17)
find_package(Python 3.11 COMPONENTS Interpreter Development.Module REQUIRED)
find_package(Eigen3 REQUIRED NO_MODULE)
find_package(nanobind CONFIG REQUIRED)
find_package(pybind11 CONFIG REQUIRED)
nanobind_add_module(trial_nb NB_STATIC nb.cpp)
target_link_libraries(trial_nb PRIVATE Eigen3::Eigen)
pybind11_add_module(trial_pb pb.cpp)
target_link_libraries(trial_pb PRIVATE Eigen3::Eigen)
CMAKE
prefix="$("$root/.deps/venv/bin/python" -m cmeel cmake)"
cmake -S . -B b -DCMAKE_BUILD_TYPE=Release -DPython_EXECUTABLE="$work/v/bin/python" \
  -DCMAKE_PREFIX_PATH="$prefix;$(v/bin/python -m nanobind --cmake_dir);$(v/bin/python -m pybind11 --cmakedir)" >/dev/null
cmake --build b --target nanobind-static -j2 >/dev/null  # nanobind's own library, built once
for target in trial_nb trial_pb; do
  start=$(date +%s.%N)
  cmake --build b --target $target -j1 >/dev/null
  echo "$target: compile $(echo "$(date +%s.%N) - $start" | bc) s, $(stat -c %s b/$target*.so) bytes"
done
cd b && ../v/bin/python - <<'PY'
import timeit, numpy as np, trial_nb, trial_pb
q = v = tau = np.zeros(12)
for name, mod in (("nanobind", trial_nb), ("pybind11", trial_pb)):
    f = mod.Filter()
    runs = sorted(timeit.repeat(lambda: f.update(0.0, q, v, tau), number=20000, repeat=7))
    print(f"{name}: median {runs[3] / 20000 * 1e6:.2f} us per update call")
PY
