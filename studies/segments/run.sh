#!/usr/bin/env bash
# Regenerates studies/segments/results.md: heft estimate on two recordings of the same go2
# (go2-rear-4.7kg, seeds 4242 and 7, nominal noise) one at a time and joined into one problem
# (`log` as a list), and one recording cut by an excluded range; the bundled estimate config with
# 1500 knots per window and 80 iterations.
#   bash studies/segments/run.sh [build]
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../study.sh" segments "${1:-build}"
example="$root/data/examples/go2_payload_estimate.yaml"
for seed in 4242 7; do
  "$heft" simulate "$root/data/scenarios/go2-rear-4.7kg.yaml" --seed "$seed" --noise nominal \
    --out "$work/rear_$seed.h5" --overwrite > /dev/null
done
run() {  # name, log line, extra sed expression
  sed -e "s#^log: .*#log: $2#" -e "s#^  knots: .*#  knots: 1500$3#" \
    -e "s#^  max_iterations: .*#  max_iterations: 80#" "$example" > "$work/$1.yaml"
  "$heft" estimate "$work/$1.yaml" --out "$work/out_$1" --overwrite --quiet > /dev/null || true
}
run seed-4242 "$work/rear_4242.h5" ""
run seed-7 "$work/rear_7.h5" ""
run both "[$work/rear_4242.h5, $work/rear_7.h5]" ""
# one recording, 3000 knots from t = 1 s with 2.5-3.5 s excluded: two segments of one log
run seed-4242-cut "$work/rear_4242.h5" "\n  exclude: [[2.4995, 3.4995]]"
sed -i "s#^  knots: 1500#  knots: 3000#" "$work/seed-4242-cut.yaml"
"$heft" estimate "$work/seed-4242-cut.yaml" --out "$work/out_seed-4242-cut" --overwrite --quiet \
  > /dev/null || true
python3 "$root/studies/segments/table.py" "$work" > "$root/studies/segments/results.md"
cat "$root/studies/segments/results.md"
