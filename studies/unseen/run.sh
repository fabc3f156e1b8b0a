#!/usr/bin/env bash
# Regenerates studies/unseen/results.md: go2 and TALOS payload cases no other study uses, 3 seeds
# each, nominal noise, `heft identify` (MAP) with the bundled go2 and TALOS example configs (only the
# log changed; go2 also with the trunk declared a payload; both also with the truth base state),
# and `heft estimate` with the bundled go2 and TALOS estimate configs (only the log changed).
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
    for variant in example truth-base payload; do
      config="$work/${scenario}_${seed}_$variant.yaml"
      sed -e "s#^log: .*#log: $log#" "$root/data/examples/go2_payload_identify.yaml" > "$config"
      if [ "$variant" = payload ]; then
        sed -i 's#^  bodies: \[base\]\(.*\)#  bodies: [base]\1\n  payload: [base]#' "$config"
      fi
      if [ "$variant" = truth-base ]; then  # the price of no truth input, side by side
        sed -i 's#^  decimation: 10#  decimation: 10\n  base_state: truth#' "$config"
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
    # the same at the log's 1 kHz over 3 s: 3000 knots, 80 iterations (a longer window is the
    # first thing the guide suggests when the payload is large; docs/guide/estimate.md)
    config="$work/${scenario}_${seed}_estimate-3s.yaml"
    sed -e "s#^log: .*#log: $log#" -e "s#^  knots: .*#  knots: 3000#" \
      -e "s#^  max_iterations: .*#  max_iterations: 80#" \
      "$root/data/examples/go2_payload_estimate.yaml" > "$config"
    "$heft" estimate "$config" --out "$work/out_${scenario}_${seed}_estimate-3s" --overwrite \
      --quiet > /dev/null || true
  done
done
# TALOS: the torso example (flat feet, estimated base state), only the log changed; the same with
# the base state from the truth group (the price of no truth input), and with the level floor as a
# base-state measurement (preparation.level_ground); and heft estimate (about 2.5 min per run)
for scenario in talos-torso-2.9kg talos-backpack-4kg; do
  for seed in 4242 7 11; do
    log="$work/${scenario}_$seed.h5"
    "$heft" simulate "$root/data/scenarios/$scenario.yaml" --seed "$seed" --noise nominal \
      --out "$log" --overwrite > /dev/null
    for variant in example truth-base level-ground; do
      config="$work/${scenario}_${seed}_$variant.yaml"
      sed -e "s#^log: .*#log: $log#" "$root/data/examples/talos_torso_identify.yaml" > "$config"
      if [ "$variant" = truth-base ]; then
        sed -i 's#^  decimation: 10#  decimation: 10\n  base_state: truth#' "$config"
      fi
      if [ "$variant" = level-ground ]; then
        sed -i 's#^  decimation: 10#  decimation: 10\n  level_ground: true#' "$config"
      fi
      "$heft" identify "$config" --out "$work/out_${scenario}_${seed}_$variant" --overwrite \
        --quiet > /dev/null || true
    done
    # heft estimate with the bundled TALOS estimate config (IMU on the torso: gyro and
    # orientation rows, no accelerometer), only the log changed
    config="$work/${scenario}_${seed}_estimate.yaml"
    sed -e "s#^log: .*#log: $log#" "$root/data/examples/talos_torso_estimate.yaml" > "$config"
    "$heft" estimate "$config" --out "$work/out_${scenario}_${seed}_estimate" --overwrite \
      --quiet > /dev/null || true
  done
done
# TALOS forearm (5.4 kg in the hand while the elbow curls): the same two configs with the forearm as
# the body (identify with the level floor; estimate)
scenario=talos-forearm-5.4kg
for seed in 4242 7 11; do
  log="$work/${scenario}_$seed.h5"
  "$heft" simulate "$root/data/scenarios/$scenario.yaml" --seed "$seed" --noise nominal \
    --out "$log" --overwrite > /dev/null
  config="$work/${scenario}_${seed}_level-ground.yaml"
  sed -e "s#^log: .*#log: $log#" -e "s#torso_2_link\]#arm_left_4_link]#g" \
    -e 's#^  decimation: 10#  decimation: 10\n  level_ground: true#' \
    "$root/data/examples/talos_torso_identify.yaml" > "$config"
  "$heft" identify "$config" --out "$work/out_${scenario}_${seed}_level-ground" --overwrite \
    --quiet > /dev/null || true
  config="$work/${scenario}_${seed}_estimate.yaml"
  sed -e "s#^log: .*#log: $log#" -e "s#\[torso_2_link\]#[arm_left_4_link]#" \
    "$root/data/examples/talos_torso_estimate.yaml" > "$config"
  "$heft" estimate "$config" --out "$work/out_${scenario}_${seed}_estimate" --overwrite \
    --quiet > /dev/null || true
done
python3 "$root/studies/unseen/table.py" "$work" > "$root/studies/unseen/results.md"
cat "$root/studies/unseen/results.md"
