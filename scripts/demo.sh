#!/usr/bin/env bash
# `make demo`: the main job on a bundled example. Grows with each capability heft gains.
set -euo pipefail
build="${1:-build}"
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
heft="$build/bin/heft"
echo "== heft info go2"
"$heft" info go2
