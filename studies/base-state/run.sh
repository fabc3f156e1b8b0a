#!/usr/bin/env bash
# Regenerates studies/base-state/results.md: `heft base-state` (contact-aided invariant EKF +
# RTS smoother, default options) on whole simulated scenarios, nominal and harsh noise, seed 4242,
# scored against each log's truth group (result.json "truth").
#   bash studies/base-state/run.sh [build]
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../study.sh" base-state "${1:-build}"
table="$work/table.md"
{
  echo "| scenario | noise | orientation RMSE [deg] | roll [deg] | pitch [deg] | yaw [deg] | velocity RMSE [m/s] | drift [m/min] | flight samples |"
  echo "|---|---|---|---|---|---|---|---|---|"
} > "$table"
for scenario in go2-stand go2-trot go2-belly-4.6kg talos-stand talos-step-mass-wave talos-forearm-step; do
  for noise in nominal harsh; do
    log="$work/${scenario}_${noise}.h5"
    out="$work/out_${scenario}_${noise}"
    "$heft" simulate "$root/data/scenarios/$scenario.yaml" --seed 4242 --noise "$noise" \
      --out "$log" --overwrite > /dev/null
    robot="${scenario%%-*}"
    if "$heft" base-state "$log" --robot "$robot" --out "$out/base.h5" --overwrite --quiet \
      > /dev/null; then
      python3 - "$out/result.json" "$scenario" "$noise" >> "$table" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
t, s = j["truth"], j["summary"]
print(f"| {sys.argv[2]} | {sys.argv[3]} | {t['orientation_rmse_deg']:.3f} | {t['roll_rmse_deg']:.3f} | "
      f"{t['pitch_rmse_deg']:.3f} | {t['yaw_rmse_deg']:.3f} | {t['velocity_rmse']:.4f} | "
      f"{t['position_drift_per_minute']:.3f} | {s['flight_samples']} |")
PY
    else
      echo "| $scenario | $noise | failed | | | | | | |" >> "$table"
    fi
  done
done
{
  echo "# Base state from the IMU, the legs and the contacts"
  echo
  echo "\`bash studies/base-state/run.sh\` (a built tree in \`build/\`): \`heft simulate\` (whole scenario, seed"
  echo "4242) then \`heft base-state\` with the default options (invariant EKF + RTS smoother), scored"
  echo "against the truth group. Yaw and position are unobservable: yaw starts from imu/orientation and"
  echo "drifts with the gyro's z bias; drift is the end-to-start displacement error per minute."
  echo
  cat "$table"
} > "$root/studies/base-state/results.md"
cat "$root/studies/base-state/results.md"
