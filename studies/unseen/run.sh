#!/usr/bin/env bash
# Regenerates studies/unseen/results.md: go2 and TALOS payload cases no other study uses, 3 seeds
# each, nominal noise, `heft identify` (MAP) with the bundled go2 and TALOS example configs (only the
# log changed; go2 also with the trunk declared a payload; both also with the truth base state),
# and `heft estimate` with the bundled go2 and TALOS estimate configs (only the log changed).
#   bash studies/unseen/run.sh [build]
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../study.sh" unseen "${1:-build}"

# simulate SCENARIO SEED: the log of one case into $log
simulate() {
  log="$work/${1}_$2.h5"
  "$heft" simulate "$root/data/scenarios/$1.yaml" --seed "$2" --noise nominal \
    --out "$log" --overwrite > /dev/null
}
# run JOB NAME EXAMPLE [sed -e EXPR ...]: the bundled example with the log replaced (and the edits
# given), written to $work/NAME.yaml and run into $work/out_NAME; a failed run is in the table
run() {
  local job=$1 name=$2 example=$3
  shift 3
  sed -e "s#^log: .*#log: $log#" "$@" "$root/data/examples/$example" > "$work/$name.yaml"
  "$heft" "$job" "$work/$name.yaml" --out "$work/out_$name" --overwrite --quiet > /dev/null || true
}
truth_base='s#^  decimation: 10#  decimation: 10\n  base_state: truth#'
level_ground='s#^  decimation: 10#  decimation: 10\n  level_ground: true#'
forearm='s#torso_2_link\]#arm_left_4_link]#g'  # the TALOS configs with the forearm as the body

# TALOS estimate over 3 s (a full elbow curl) at 2 ms steps: 1500 knots, stride 2
talos_3s=(-e "s#^  knots: .*#  knots: 1500#" -e "s#^  stride: .*#  stride: 2#")

# go2, then the TALOS forearm (one core)
go2_and_forearm() {
  for scenario in go2-rear-4.7kg go2-belly-4.6kg go2-front-left-2.5kg; do
    for seed in 4242 7 11; do
      simulate "$scenario" "$seed"
      case="${scenario}_$seed"
      run identify "${case}_example" go2_payload_identify.yaml
      # the price of no truth input, side by side
      run identify "${case}_truth-base" go2_payload_identify.yaml -e "$truth_base"
      run identify "${case}_payload" go2_payload_identify.yaml \
        -e 's#^  bodies: \[base\]\(.*\)#  bodies: [base]\1\n  payload: [base]#'
      run estimate "${case}_estimate" go2_payload_estimate.yaml
      # the same over 10 s of log: 1000 knots of 10 ms (docs/guide/estimate.md, window.stride)
      run estimate "${case}_estimate-10s" go2_payload_estimate.yaml \
        -e "s#^  knots: .*#  knots: 1000#" -e "s#^  stride: .*#  stride: 10#"
      # the same at the log's 1 kHz over 3 s: 3000 knots, 80 iterations (a longer window is the
      # first thing the guide suggests when the payload is large; docs/guide/estimate.md)
      run estimate "${case}_estimate-3s" go2_payload_estimate.yaml \
        -e "s#^  knots: .*#  knots: 3000#" -e "s#^  max_iterations: .*#  max_iterations: 80#"
    done
  done
  # TALOS forearm (5.4 kg in the hand while the elbow curls): both TALOS configs with the forearm
  # as the body; identify as the example, with the level floor and with the truth base state
  for seed in 4242 7 11; do
    simulate talos-forearm-5.4kg "$seed"
    case="talos-forearm-5.4kg_$seed"
    run identify "${case}_example" talos_torso_identify.yaml -e "$forearm"
    run identify "${case}_level-ground" talos_torso_identify.yaml -e "$forearm" -e "$level_ground"
    run identify "${case}_truth-base" talos_torso_identify.yaml -e "$forearm" -e "$truth_base"
    run estimate "${case}_estimate" talos_torso_estimate.yaml -e "$forearm"
    run estimate "${case}_estimate-3s" talos_torso_estimate.yaml -e "$forearm" "${talos_3s[@]}"
  done
}
# TALOS: the torso example (flat feet, estimated base state), only the log changed; the same with
# the base state from the truth group (the price of no truth input), and with the level floor as a
# base-state measurement (preparation.level_ground); and heft estimate (about 2.5 min per run) with
# the bundled TALOS estimate config (IMU on the torso: gyro and orientation rows, no
# accelerometer), only the log changed, and over 3 s (the other core)
talos_torso() {
  for scenario in talos-torso-2.9kg talos-backpack-4kg; do
    for seed in 4242 7 11; do
      simulate "$scenario" "$seed"
      case="${scenario}_$seed"
      run identify "${case}_example" talos_torso_identify.yaml
      run identify "${case}_truth-base" talos_torso_identify.yaml -e "$truth_base"
      run identify "${case}_level-ground" talos_torso_identify.yaml -e "$level_ground"
      run estimate "${case}_estimate" talos_torso_estimate.yaml
      run estimate "${case}_estimate-3s" talos_torso_estimate.yaml "${talos_3s[@]}"
    done
  done
}
# heft estimate is single-threaded: the two halves run side by side (71 min measured on 2 cores,
# on a host whose load varied)
go2_and_forearm &
first=$!
talos_torso
wait "$first"
python3 "$root/studies/unseen/table.py" "$work" > "$root/studies/unseen/results.md"
cat "$root/studies/unseen/results.md"
