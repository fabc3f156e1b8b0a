# The common start of every study script, sourced as
#   source "$(dirname "${BASH_SOURCE[0]}")/../study.sh" WORK [BUILD]
# root: the repository; build: BUILD (a built tree under root, default build); heft: its binary;
# work: $root/$build/studies/WORK, created, where the study keeps its logs and runs.
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${2:-build}"
heft="$root/$build/bin/heft"
work="$root/$build/studies/$1"
mkdir -p "$work"
