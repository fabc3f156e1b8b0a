#!/usr/bin/env bash
# Regenerates studies/contact-implicit/results.md: heft estimate with contact-implicit dynamics
# (`contacts.source: implicit`, PRIME's smoothed contact step) against the fixed-schedule estimator
# (contact phases from the log's flags, rigid contacts, an impulse at each touchdown) on the same
# windows of the same logs, with the bundled estimate configs and only the log, the window and the
# contact settings changed. go2 at nominal noise, seeds 1, 2, 3: the log's 1 kHz and PRIME's
# dt = 0.01 s (stride 10, a 10 s horizon); kappa 100 / 500 / 2000 on go2-payload-3kg. TALOS with
# four-corner feet, seed 1, dt = 0.01 s: talos-torso-2.9kg, talos-step-mass-wave and this study's
# talos-step-2.9kg.yaml (the stepping with a constant torso payload).
#   bash studies/contact-implicit/run.sh [build] [seeds]
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../study.sh" contact-implicit "${1:-build}"
seeds="${2:-1 2 3}"
simulate() {  # simulate SCENARIO SEED: the log, once (a bundled scenario or this study's file)
  local log="$work/${1}_$2.h5" file="$root/data/scenarios/$1.yaml"
  [ -f "$file" ] || file="$root/studies/contact-implicit/$1.yaml"
  [ -f "$log" ] || "$heft" simulate "$file" --seed "$2" --noise nominal --out "$log" > /dev/null
  echo "$log"
}
run() {  # run NAME EXAMPLE LOG [sed expressions...]: the example with the log and the edits
  local name="$1" example="$2" log="$3"
  shift 3
  local config="$work/$name.yaml"
  sed -e "s#^log: .*#log: $log#" "$@" "$example" > "$config"
  "$heft" estimate "$config" --out "$work/out_$name" --overwrite --quiet > /dev/null || true
}
# window START KNOTS STRIDE and implicit RADIUS set the sed edits W and I
window() { W=(-e "s#^  start_time: .*#  start_time: $1#" -e "s#^  knots: .*#  knots: $2#"
              -e "s#^  stride: .*#  stride: $3#"); }
implicit() { I=(-e "\$a contacts:\n  source: implicit\n  radius: $1"); }
# compliant RADIUS COMPLIANCE sets C: implicit with a compliant floor (contacts.compliance [m/N])
compliant() { C=(-e "\$a contacts:\n  source: implicit\n  radius: $1\n  compliance: $2"); }
go2="$root/data/examples/go2_payload_estimate.yaml"
for scenario in go2-payload-3kg go2-com-shift go2-belly-4.6kg go2-trot; do
  # go2-belly-4.6kg: windows over its pronking hops (flights near 13.9, 14.5 and 15.1 s)
  if [ "$scenario" = go2-belly-4.6kg ]; then fine="13.6 1600 1" coarse="5.9 1000 10"
  else fine="1.0 500 1" coarse="1.0 1000 10"; fi
  for seed in $seeds; do
    log=$(simulate "$scenario" "$seed")
    implicit 0.022
    window $fine
    run "${scenario}_${seed}_flags" "$go2" "$log" "${W[@]}"
    run "${scenario}_${seed}_implicit" "$go2" "$log" "${W[@]}" "${I[@]}"
    compliant 0.022 3.7e-5
    run "${scenario}_${seed}_compliant" "$go2" "$log" "${W[@]}" "${C[@]}"
    window $coarse
    run "${scenario}_${seed}_flags-10ms" "$go2" "$log" "${W[@]}"
    run "${scenario}_${seed}_implicit-10ms" "$go2" "$log" "${W[@]}" "${I[@]}"
    run "${scenario}_${seed}_compliant-10ms" "$go2" "$log" "${W[@]}" "${C[@]}"
  done
done
# the compliance on either side of the simulated feet's (go2-payload-3kg, 1 kHz)
for compliance in 1e-5 1e-4; do
  for seed in $seeds; do
    window 1.0 500 1
    compliant 0.022 $compliance
    run "go2-payload-3kg_${seed}_compliant-$compliance" "$go2" "$work/go2-payload-3kg_$seed.h5" \
      "${W[@]}" "${C[@]}"
  done
done
for kappa in 100 2000; do
  for seed in $seeds; do
    window 1.0 500 1
    implicit 0.022
    run "go2-payload-3kg_${seed}_implicit-kappa$kappa" "$go2" "$work/go2-payload-3kg_$seed.h5" \
      "${W[@]}" "${I[@]}" -e "\$a\\  kappa: $kappa"
  done
done
# kappa continuation (kappa_start 50, three solves of at most 10 iterations raising kappa to 500)
# where the 1 kHz implicit solve stalls: go2-trot
for seed in $seeds; do
  window 1.0 500 1
  implicit 0.022
  run "go2-trot_${seed}_implicit-continuation" "$go2" "$work/go2-trot_$seed.h5" \
    "${W[@]}" "${I[@]}" -e "\$a\\  kappa_start: 50"
done
talos="$root/data/examples/talos_torso_estimate.yaml"
for scenario in talos-torso-2.9kg talos-step-2.9kg talos-step-mass-wave; do
  log=$(simulate "$scenario" 1)
  window 1.0 1000 10
  implicit 0.01
  run "${scenario}_1_flags-10ms" "$talos" "$log" "${W[@]}"
  run "${scenario}_1_implicit-10ms" "$talos" "$log" "${W[@]}" "${I[@]}"
  for compliance in 5e-6 1e-5; do
    compliant 0.01 $compliance
    run "${scenario}_1_compliant-$compliance-10ms" "$talos" "$log" "${W[@]}" "${C[@]}"
  done
done
python3 "$root/studies/contact-implicit/table.py" "$work" "$seeds" > "$root/studies/contact-implicit/results.md"
