#!/usr/bin/env bash
# Regenerates studies/parametrization-curvature/examples.md: every bundled `heft estimate` example,
# and the TALOS and go2 estimate examples on logs of other scenarios and seeds (studies/unseen's
# cases), each run twice, with `solver.parametrization_curvature` off (the default) and on; only
# the log and that option changed.
#   bash studies/parametrization-curvature/examples.sh [build]
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../study.sh" parametrization-curvature "${1:-build}"

# simulate NAME SCENARIO [SEED]: a log into $work/NAME.h5 (the examples' own logs: the scenario's
# default seed and noise, as their comments say; other cases: nominal noise and the seed given)
simulate() {
  if [ $# -eq 2 ]; then
    "$heft" simulate "$2" --out "$work/$1.h5" --overwrite > /dev/null
  else
    "$heft" simulate "$root/data/scenarios/$2.yaml" --seed "$3" --noise nominal \
      --out "$work/$1.h5" --overwrite > /dev/null
  fi
}
# run CASE EXAMPLE LOG: the example with the log replaced, off and on
run() {
  local name=$1 example=$2 log=$3
  for curvature in off on; do
    local config="$work/${name}_$curvature.yaml"
    sed -e "s#^log: .*#log: $log#" "$root/data/examples/$example" > "$config"
    if [ "$curvature" = on ]; then
      if grep -q '^solver:' "$config"; then
        sed -i 's#^solver:#solver:\n  parametrization_curvature: true#' "$config"
      else
        printf 'solver:\n  parametrization_curvature: true\n' >> "$config"
      fi
    fi
    "$heft" estimate "$config" --out "$work/out_${name}_$curvature" --overwrite --quiet \
      > /dev/null || true
  done
}

fixtures="$root/data/fixtures"
run go2_payload_estimate go2_payload_estimate.yaml "$fixtures/sim_go2_payload_3kg_2s.h5"
run panda_friction_estimate panda_friction_estimate.yaml "$fixtures/sim_panda_friction_2s.h5"
simulate talos-torso-2.9kg talos-torso-2.9kg
run talos_torso_estimate talos_torso_estimate.yaml "$work/talos-torso-2.9kg.h5"
run talos_torso_implicit_estimate talos_torso_implicit_estimate.yaml "$work/talos-torso-2.9kg.h5"
simulate go2-belly-4.6kg go2-belly-4.6kg
run go2_hops_implicit_estimate go2_hops_implicit_estimate.yaml "$work/go2-belly-4.6kg.h5"
for seed in 4242 7 11; do
  for scenario in talos-backpack-4kg talos-torso-2.9kg; do
    simulate "${scenario}_$seed" "$scenario" "$seed"
    run "${scenario}_${seed}_talos_torso_estimate" talos_torso_estimate.yaml \
      "$work/${scenario}_$seed.h5"
  done
  for scenario in go2-belly-4.6kg go2-rear-4.7kg; do
    simulate "${scenario}_$seed" "$scenario" "$seed"
    run "${scenario}_${seed}_go2_payload_estimate" go2_payload_estimate.yaml \
      "$work/${scenario}_$seed.h5"
  done
done
python3 "$root/studies/parametrization-curvature/examples_table.py" "$work" \
  > "$root/studies/parametrization-curvature/examples.md"
