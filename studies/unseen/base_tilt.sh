#!/usr/bin/env bash
# Regenerates studies/unseen/base-tilt.md: heft identify on the cases of studies/unseen (3 seeds,
# nominal noise, no truth input) with and without `problem.base_tilt: true` (go2 also with the
# torque offsets identified), beside the truth base state. About 2 min on one core.
#   bash studies/unseen/base_tilt.sh [build]
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../study.sh" unseen-base-tilt "${1:-build}"
export OMP_NUM_THREADS=1

# run NAME EXAMPLE [sed -e EXPR ...]: the bundled example with the log replaced (and the edits
# given), run into $work/out_NAME; a failed run is in the table
run() {
  local name=$1 example=$2
  shift 2
  sed -e "s#^log: .*#log: $log#" "$@" "$root/data/examples/$example" > "$work/$name.yaml"
  "$heft" identify "$work/$name.yaml" --out "$work/out_$name" --overwrite --quiet > /dev/null || true
}
tilt='s#^  projection: contact\(.*\)#  projection: contact\1\n  base_tilt: true#'
truth_base='s#^  decimation: 10#  decimation: 10\n  base_state: truth#'
level_ground='s#^  decimation: 10#  decimation: 10\n  level_ground: true#'
forearm='s#torso_2_link\]#arm_left_4_link]#g'
offsets='s#^  parametrization: log-cholesky#  parametrization: log-cholesky\n  torque_offsets: true#'

for scenario in go2-rear-4.7kg go2-belly-4.6kg go2-front-left-2.5kg talos-torso-2.9kg \
                talos-backpack-4kg talos-forearm-5.4kg; do
  for seed in 4242 7 11; do
    log="$work/${scenario}_$seed.h5"
    "$heft" simulate "$root/data/scenarios/$scenario.yaml" --seed "$seed" --noise nominal \
      --out "$log" --overwrite > /dev/null
    case="${scenario}_$seed"
    case "$scenario" in
      go2-*)
        run "${case}_example" go2_payload_identify.yaml
        run "${case}_tilt" go2_payload_identify.yaml -e "$tilt"
        # torque-sensor offsets free too: on a standing go2 they look like a tilt
        run "${case}_offsets" go2_payload_identify.yaml -e "$offsets"
        run "${case}_offsets-tilt" go2_payload_identify.yaml -e "$offsets" -e "$tilt"
        run "${case}_truth-base" go2_payload_identify.yaml -e "$truth_base" ;;
      *)
        edits=()
        [[ "$scenario" == talos-forearm-5.4kg ]] && edits=(-e "$forearm")
        run "${case}_example" talos_torso_identify.yaml "${edits[@]}"
        run "${case}_tilt" talos_torso_identify.yaml "${edits[@]}" -e "$tilt"
        run "${case}_level-ground" talos_torso_identify.yaml "${edits[@]}" -e "$level_ground"
        run "${case}_level-ground-tilt" talos_torso_identify.yaml "${edits[@]}" \
          -e "$level_ground" -e "$tilt"
        run "${case}_truth-base" talos_torso_identify.yaml "${edits[@]}" -e "$truth_base" ;;
    esac
  done
done
python3 "$root/studies/unseen/base_tilt_table.py" "$work" > "$root/studies/unseen/base-tilt.md"
cat "$root/studies/unseen/base-tilt.md"
