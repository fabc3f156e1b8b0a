#!/usr/bin/env bash
# Regenerates studies/unseen/results.md: go2 payload cases no other study uses, 3 seeds each,
# nominal noise, `heft identify` (MAP) with the bundled go2 example config (only the log changed)
# and with the trunk declared a payload (identify.payload), and `heft estimate` with the bundled
# go2 estimate config (only the log changed).
#   bash studies/unseen/run.sh [build]
set -euo pipefail
build="${1:-build}"
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
heft="$root/$build/bin/heft"
work="$root/$build/studies/unseen"
mkdir -p "$work"
for scenario in go2-rear-4.7kg go2-belly-4.6kg go2-front-left-2.5kg; do
  for seed in 4242 7 11; do
    log="$work/${scenario}_$seed.h5"
    "$heft" simulate "$root/data/scenarios/$scenario.yaml" --seed "$seed" --noise nominal \
      --out "$log" --overwrite > /dev/null
    for variant in example payload; do
      config="$work/${scenario}_${seed}_$variant.yaml"
      sed -e "s#^log: .*#log: $log#" "$root/data/examples/go2_payload_identify.yaml" > "$config"
      if [ "$variant" = payload ]; then
        sed -i 's#^  bodies: \[base\]\(.*\)#  bodies: [base]\1\n  payload: [base]#' "$config"
      fi
      "$heft" identify "$config" --out "$work/out_${scenario}_${seed}_$variant" --overwrite \
        --quiet > /dev/null || true
    done
    config="$work/${scenario}_${seed}_estimate.yaml"
    sed -e "s#^log: .*#log: $log#" "$root/data/examples/go2_payload_estimate.yaml" > "$config"
    "$heft" estimate "$config" --out "$work/out_${scenario}_${seed}_estimate" --overwrite \
      --quiet > /dev/null || true
    # the same over 10 s of log: 1000 knots of 10 ms (docs/guide/estimate.md, window.stride)
    config="$work/${scenario}_${seed}_estimate-10s.yaml"
    sed -e "s#^log: .*#log: $log#" -e "s#^  knots: .*#  knots: 1000#" -e "s#^  stride: .*#  stride: 10#" \
      "$root/data/examples/go2_payload_estimate.yaml" > "$config"
    "$heft" estimate "$config" --out "$work/out_${scenario}_${seed}_estimate-10s" --overwrite \
      --quiet > /dev/null || true
  done
done
python3 "$root/studies/unseen/table.py" "$work" > "$root/studies/unseen/results.md"
cat "$root/studies/unseen/results.md"
