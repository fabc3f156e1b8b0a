#!/usr/bin/env bash
# `make demo`: the main job on a bundled example: identify the trunk of a go2 that carries an
# unknown 3 kg payload, from a short MuJoCo log (data/fixtures), without force sensors.
set -euo pipefail
build="${1:-build}"
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
heft="$build/bin/heft"
echo "== heft info go2 (the nominal model: base mass without the payload)"
"$heft" info go2 | head -8
echo
echo "== heft validate-log go2 data/fixtures/sim_go2_payload_3kg_2s.h5"
"$heft" validate-log go2 data/fixtures/sim_go2_payload_3kg_2s.h5
echo
echo "== heft identify data/examples/go2_payload_identify.yaml --out $build/demo/go2-payload"
"$heft" identify data/examples/go2_payload_identify.yaml --out "$build/demo/go2-payload" --overwrite
echo
echo "Outputs: $build/demo/go2-payload/{result.json,robot.urdf,torques.csv}"
echo
echo "== heft estimate data/examples/go2_payload_estimate.yaml: the same log, the whole trajectory and"
echo "   the trunk's inertia jointly (batch MAP, parametrized Riccati), without a base state estimator"
"$heft" estimate data/examples/go2_payload_estimate.yaml --out "$build/demo/go2-estimate" --overwrite \
  --quiet
echo
echo "Outputs: $build/demo/go2-estimate/{result.json,trajectory.h5,robot.urdf}"
echo
echo "== heft simulate go2-belly-4.6kg, then heft estimate data/examples/go2_hops_implicit_estimate.yaml:"
echo "   go2 pronking with an unknown 4.6 kg box under its belly, contact-implicit (no contact flags):"
echo "   the flights, touchdowns and contact forces come out of the estimate"
"$heft" simulate go2-belly-4.6kg --out "$build/demo/go2-belly-4.6kg.h5" --overwrite > /dev/null
"$heft" estimate data/examples/go2_hops_implicit_estimate.yaml --out "$build/demo/go2-hops" \
  --overwrite --quiet | sed -n '/errors against/,/^$/p;/reconstructed contact/,/^$/p'
echo
echo "== heft simulate talos-torso-2.9kg, then heft identify data/examples/talos_torso_identify.yaml:"
echo "   TALOS with an unknown 2.9 kg box on its torso; flat feet, base state estimated, no truth input"
"$heft" simulate talos-torso-2.9kg --out "$build/demo/talos-torso-2.9kg.h5" --overwrite > /dev/null
"$heft" identify data/examples/talos_torso_identify.yaml --out "$build/demo/talos-torso" --overwrite \
  --quiet | sed -n '/errors against/,/^$/p'
echo
echo "== heft simulate talos-forearm-step: TALOS curls its elbow; at 6 s a 5.4 kg payload appears"
"$heft" simulate talos-forearm-step --force-torque --out "$build/demo/talos-forearm-step.h5" \
  --overwrite
echo
echo "== heft filter data/examples/talos_forearm_filter.yaml: the online EKF replayed on that log"
"$heft" filter data/examples/talos_forearm_filter.yaml --log "$build/demo/talos-forearm-step.h5" \
  --out "$build/demo/forearm-filter" --overwrite --quiet
echo
echo "Outputs: $build/demo/forearm-filter/{estimates.h5,baseline.h5,summary.json}"
echo
echo "== heft identify data/examples/panda_friction_identify.yaml, then heft predict: does the"
echo "   identified panda predict torques better than the nominal one? (the example's paths assume"
echo "   the build folder 'build')"
"$heft" identify data/examples/panda_friction_identify.yaml --out build/demo/panda-id --overwrite \
  --quiet >/dev/null
"$heft" predict data/examples/panda_friction_predict.yaml --out build/demo/panda-predict \
  --overwrite --quiet
echo
echo "== heft simulate go2-rear-4.7kg, then heft sample data/examples/go2_rear_sample.yaml: go2 with"
echo "   an unknown 4.7 kg low at the rear, identified by CMA-ES over MuJoCo replays of log clips"
echo "   (base state estimated, no truth input; about a minute and a half on 2 cores)"
"$heft" simulate go2-rear-4.7kg --out build/demo/go2-rear-4.7kg.h5 --overwrite > /dev/null
"$heft" sample data/examples/go2_rear_sample.yaml --out build/demo/go2-rear-sample --overwrite \
  --quiet | sed -n '/held out/p;/errors against/,/^$/p'
echo
echo "== heft fleet: two simulated panda arms with different tools, three logs each, plus a broken"
echo "   log, a log of the other arm and a double pendulum's; every log identified on a local Dask"
echo "   cluster, each arm's good logs fused (studies/fleet/make_fleet.py; about ten seconds)"
rm -rf "$build/demo/fleet"
.deps/venv-tools/bin/python studies/fleet/make_fleet.py --heft "$heft" --out "$build/demo/fleet" \
  --robots 2 --logs 3
"$heft" fleet "$build/demo/fleet/manifest.yaml" --out "$build/demo/fleet/out" | grep -v ": identified$"
sed -n '/errors against/,/^$/p' "$build/demo/fleet/out/robots/arm0/report.txt" | head -3
echo
echo "== heft report: one self-contained HTML page per run above (torque fits with the held-out range,"
echo "   residuals, parameters, inertia boxes, correlations, trajectories, filter estimates; open them"
echo "   in a browser)"
"$heft" report "$build/demo/go2-payload" --out "$build/demo/go2-payload-report.html" --overwrite
"$heft" report build/demo/panda-id --out "$build/demo/panda-id-report.html" --overwrite
"$heft" report build/demo/go2-rear-sample --out "$build/demo/go2-rear-sample-report.html" --overwrite
"$heft" report "$build/demo/go2-estimate" --out "$build/demo/go2-estimate-report.html" --overwrite
"$heft" report "$build/demo/forearm-filter" --out "$build/demo/forearm-filter-report.html" --overwrite
echo
echo "== heft simulate go2-actuator, then heft explore data/examples/go2_actuator_explore.yaml:"
echo "   go2's motor gains and saturation from a stance log (stage 1), then base commands designed"
echo "   for the Fisher information of that estimate (active exploration; about four minutes)"
"$heft" simulate go2-actuator --out build/demo/go2-actuator.h5 --overwrite > /dev/null
"$heft" explore data/examples/go2_actuator_explore.yaml --out build/demo/go2-actuator-explore \
  --overwrite --quiet | sed -n '/active exploration/,$p'
