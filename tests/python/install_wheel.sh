#!/usr/bin/env bash
# The Python package as a user gets it: the wheel (scripts/python_wheel.sh) installed into a fresh
# venv with pip, its dependencies from .deps/wheelhouse (requirements.txt's wheels) and nothing
# from PyPI:  tests/python/install_wheel.sh BUILD_DIR  -> BUILD_DIR/python/venv
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
build="$(cd "$1" && pwd)"
wheel="$(bash "$root/scripts/python_wheel.sh" "$build" | tail -1)"
venv="$build/python/venv"
rm -rf "$venv"
"$root/.deps/venv-tools/bin/python" -m venv "$venv"
"$venv/bin/pip" install -q --disable-pip-version-check --no-index \
  --find-links "$root/.deps/wheelhouse" "$wheel"
"$venv/bin/python" -c 'import heft; print("installed heft", heft.__version__, "from", heft.__file__)'
