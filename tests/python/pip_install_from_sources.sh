#!/usr/bin/env bash
# `pip install .` as a user without a built tree runs it: scikit-build-core compiles the heft
# libraries and the module in pip's isolated build environment (its wheels from PyPI, pinned in
# pyproject.toml), into a fresh venv; then the bindings' tests run with that venv's interpreter.
# 908 s measured on 2 cores, and it needs PyPI: label `long`.
#   tests/python/pip_install_from_sources.sh BUILD_DIR
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
build="$(cd "$1" && pwd)"
venv="$build/python/venv-sources"
rm -rf "$venv"
"$root/.deps/venv-tools/bin/python" -m venv "$venv"
start=$(date +%s)
CMAKE_BUILD_PARALLEL_LEVEL="${CMAKE_BUILD_PARALLEL_LEVEL:-$(nproc)}" \
  "$venv/bin/pip" install -q --disable-pip-version-check "$root"
echo "pip install . took $(($(date +%s) - start)) s"
HEFT_SOURCE_DIR="$root" HEFT_SCRATCH="$build/python/scratch-sources" \
  "$venv/bin/python" -B "$root/tests/python/test_bindings.py"
