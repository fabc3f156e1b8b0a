#!/usr/bin/env bash
# Regenerates studies/offsets/results.md: panda-friction with per-joint torque-sensor offsets,
# fitted by heft identify and by heft estimate, each with and without the offset term; the
# offsets, and every model's held-out torque RMSE per joint by heft predict (about 15 min).
#   bash studies/offsets/run.sh [build]
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../study.sh" offsets "${1:-build}"
for seed in 1 2 3; do
  "$heft" simulate "$root/studies/offsets/scenario.yaml" --seed "$seed" --out "$work/log_$seed.h5" \
    --overwrite > /dev/null
  for variant in without with; do
    config="$work/identify_${variant}_$seed.yaml"
    sed -e "s#^log: .*#log: $work/log_$seed.h5#" \
        -e "s#^validation: .*#validation: [[15, 20]]#" \
        "$root/data/examples/panda_friction_identify.yaml" > "$config"
    if [ "$variant" = with ]; then
      sed -i 's#^  armature: \(.*\)#  armature: \1\n  torque_offsets: [panda_joint1, panda_joint2, panda_joint3, panda_joint4, panda_joint5, panda_joint6, panda_joint7]#' "$config"
    fi
    "$heft" identify "$config" --out "$work/out_${variant}_$seed" --overwrite --quiet > /dev/null || true
  done
  # heft estimate on the same fitted 15 s, with and without the offset term; then every model,
  # identify's too, predicted by heft predict on the held-out 5 s with identify's preparation.
  for variant in without with; do
    config="$work/estimate_${variant}_$seed.yaml"
    sed -e "s#^log: .*#log: $work/log_$seed.h5#" "$root/studies/offsets/estimate.yaml" > "$config"
    if [ "$variant" = without ]; then sed -i '/^  torque_offsets:/d' "$config"; fi
    "$heft" estimate "$config" --out "$work/est_${variant}_$seed" --overwrite --quiet > /dev/null || true
  done
  for fit in out est; do
    for variant in without with; do
      config="$work/predict_${fit}_${variant}_$seed.yaml"
      sed -e "s#^robot: .*#robot: $work/${fit}_${variant}_$seed/robot.urdf#" \
          -e "s#^result: .*#result: $work/${fit}_${variant}_$seed/result.json#" \
          -e "s#^log: .*#log: $work/log_$seed.h5#" "$root/studies/offsets/predict.yaml" > "$config"
      "$heft" predict "$config" --out "$work/predict_${fit}_${variant}_$seed" --overwrite \
        --quiet > /dev/null || true
    done
  done
done
python3 "$root/studies/offsets/table.py" "$work" "$root/studies/offsets/scenario.yaml" \
  > "$root/studies/offsets/results.md"
cat "$root/studies/offsets/results.md"
