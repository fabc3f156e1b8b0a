#!/usr/bin/env bash
# Packs the Python module that `make build` compiled (BUILD_DIR/python/heft/_heft*.so) into a wheel
# with scikit-build-core, without compiling anything again:
#   scripts/python_wheel.sh [BUILD_DIR] [OUT_DIR]      (default: build, BUILD_DIR/python/dist)
# `pip install .` builds the same wheel from the sources instead (docs/python.md).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="$(cd "${1:-$root/build}" && pwd)"
out="${2:-$build/python/dist}"
shopt -s nullglob
modules=("$build"/python/heft/_heft*.so)
if ((${#modules[@]} != 1)); then
  echo "python_wheel: expected one $build/python/heft/_heft*.so (run make build), found ${#modules[@]}" >&2
  exit 2
fi
rm -rf "$out" "$build/python/wheel-build"
mkdir -p "$out"
"$root/.deps/venv-tools/bin/python" -m pip wheel "$root" -q --no-deps --no-build-isolation \
  --disable-pip-version-check -w "$out" \
  -C build-dir="$build/python/wheel-build" -C cmake.define.HEFT_PYTHON_PREBUILT="${modules[0]}"
ls "$out"/heft-*.whl
