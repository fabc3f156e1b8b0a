#!/usr/bin/env bash
# Installs what heft needs on a fresh Debian 12 machine, idempotently:
#  - Debian -dev packages (only those missing),
#  - a virtual environment in .deps/venv with the pinned wheels of requirements.txt,
#  - .deps/venv-reference (Crocoddyl, requirements-reference.txt) and .deps/venv-tools (rosbags for
#    heft import, matplotlib for heft report, nanobind and scikit-build-core for the Python package:
#    requirements-tools.txt),
#  - .deps/wheelhouse: requirements.txt's wheels, for installing the Python package offline,
#  - .deps/paths.cmake, which tells CMake where the wheels put their CMake configs and libmujoco.
# A second run with nothing to do takes about a second.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

apt_packages=(
  build-essential cmake pkg-config python3-venv
  libhdf5-dev libyaml-cpp-dev nlohmann-json3-dev libcli11-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  chromium
)
missing=()
for p in "${apt_packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "bootstrap: installing Debian packages: ${missing[*]}"
  sudo_cmd=()
  if [ "$(id -u)" -ne 0 ]; then
    command -v sudo >/dev/null || { echo "bootstrap: need root or sudo to install: ${missing[*]}" >&2; exit 1; }
    sudo_cmd=(sudo)
  fi
  "${sudo_cmd[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# ensure_venv DIR REQUIREMENTS: (re)creates DIR with exactly REQUIREMENTS when the file changed.
ensure_venv() {
  local venv="$1" requirements="$2"
  local stamp="$venv/.requirements.sha256" want
  want="$(sha256sum "$requirements" | cut -d' ' -f1)"
  if [ ! -x "$venv/bin/python" ] || [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
    local python=${HEFT_PYTHON:-python3}
    echo "bootstrap: installing $requirements into $venv ($($python --version))"
    "$python" -m venv --clear "$venv"
    "$venv/bin/pip" install -q --disable-pip-version-check -r "$requirements"
    echo "$want" > "$stamp"
  fi
}
venv="$root/.deps/venv"
ensure_venv "$venv" requirements.txt
# Crocoddyl, the reference solver, with the Pinocchio its wheel was built against (docs/install.md).
ref_venv="$root/.deps/venv-reference"
ensure_venv "$ref_venv" requirements-reference.txt
# The Python tools of the CLI (heft import: rosbags; heft report: matplotlib), in a venv of their own.
ensure_venv "$root/.deps/venv-tools" requirements-tools.txt
# The wheels the Python package depends on (requirements.txt's), for the test that installs it into
# a fresh venv without reaching PyPI (tests/python/).
wheelhouse="$root/.deps/wheelhouse"
want_wheels="$(sha256sum requirements.txt | cut -d' ' -f1)"
if [ "$(cat "$wheelhouse/.requirements.sha256" 2>/dev/null)" != "$want_wheels" ]; then
  echo "bootstrap: downloading the Python package's dependencies into $wheelhouse"
  rm -rf "$wheelhouse"
  "$venv/bin/pip" download -q --disable-pip-version-check --only-binary=:all: -d "$wheelhouse" -r requirements.txt
  echo "$want_wheels" > "$wheelhouse/.requirements.sha256"
fi
# --peer: MuJoCo's own identification module for studies/peer, in a venv of its own.
if [ "${1:-}" = "--peer" ]; then
  ensure_venv "$root/.deps/venv-peer" requirements-peer.txt
fi

prefix="$("$venv/bin/python" -m cmeel cmake 2>/dev/null)"
ref_prefix="$("$ref_venv/bin/python" -m cmeel cmake 2>/dev/null)"
mujoco_dir="$("$venv/bin/python" -c 'import mujoco, os; print(os.path.dirname(mujoco.__file__))')"
paths="$root/.deps/paths.cmake"
nanobind_dir="$("$root/.deps/venv-tools/bin/python" -m nanobind --cmake_dir)"
new="$(printf 'set(HEFT_CMEEL_PREFIX "%s")\nset(HEFT_MUJOCO_DIR "%s")\nset(HEFT_REFERENCE_PREFIX "%s")\nset(HEFT_BINDINGS_PYTHON "%s")\nset(HEFT_NANOBIND_DIR "%s")\n' \
  "$prefix" "$mujoco_dir" "$ref_prefix" "$root/.deps/venv-tools/bin/python" "$nanobind_dir")"
if [ "$(cat "$paths" 2>/dev/null)" != "$new" ]; then echo "$new" > "$paths"; fi
