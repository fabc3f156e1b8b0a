"""heft fleet on a running cluster of worker processes (--scheduler), the way a cluster of
machines runs it: a worker process killed in the middle of a task is replaced, the task runs
again, and the fused estimates are the same as the local cluster's.

Usage: python fleet_cluster_test.py --heft build/bin/heft --scratch DIR (exit 0: passed)."""

import argparse
import json
import logging
import os
import shutil
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
FAULT = "HEFT_FLEET_FAULT"


def fleet(heft, manifest, out, *extra):
    proc = subprocess.run([heft, "fleet", str(manifest), "--out", str(out), "--no-report", *extra],
                          capture_output=True, text=True)
    return proc


def without_times(value):
    if isinstance(value, dict):
        return {k: without_times(v) for k, v in value.items() if k != "time_s"}
    if isinstance(value, list):
        return [without_times(v) for v in value]
    return value


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--heft", required=True)
    parser.add_argument("--scratch", required=True)
    args = parser.parse_args()
    heft = str(Path(args.heft).resolve())
    scratch = Path(args.scratch).resolve()
    shutil.rmtree(scratch, ignore_errors=True)
    scratch.mkdir(parents=True)
    made = subprocess.run([sys.executable, str(HERE.parent / "studies" / "fleet" / "make_fleet.py"),
                           "--heft", heft, "--out", str(scratch / "fleet"), "--robots", "2",
                           "--logs", "3", "--duration", "6"], capture_output=True, text=True)
    assert made.returncode == 0, made.stderr
    manifest = scratch / "fleet" / "manifest.yaml"
    failures = []

    local = fleet(heft, manifest, scratch / "local", "--workers", "2")
    assert local.returncode == 0, local.stdout + local.stderr

    # the hook kills a worker process only where workers are processes: refused locally
    refused = subprocess.run([heft, "fleet", str(manifest), "--out", str(scratch / "refused")],
                             capture_output=True, text=True,
                             env=dict(os.environ, **{FAULT: "kill-worker:01.h5"}))
    if refused.returncode != 2 or "--scheduler" not in refused.stderr:
        failures.append(f"kill-worker with the local cluster: exit {refused.returncode}, "
                        f"{refused.stderr!r} (expected exit 2 naming --scheduler)")

    from dask.distributed import LocalCluster

    # the workers read the hook from their own environment, as on a cluster of machines
    os.environ[FAULT] = "kill-worker:01.h5"
    cluster = LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                           dashboard_address=None, silence_logs=logging.CRITICAL)
    del os.environ[FAULT]
    try:
        remote = fleet(heft, manifest, scratch / "cluster", "--scheduler",
                       cluster.scheduler_address)
    finally:
        cluster.close()
    if remote.returncode != 0:
        failures.append(f"heft fleet --scheduler exited {remote.returncode}: {remote.stderr}")
    else:
        result = json.loads((scratch / "cluster" / "fleet.json").read_text())
        attempts = {(r["id"], Path(l["log"]).name): l["attempts"]
                    for r in result["robots"] for l in r["logs"]}
        if max(attempts.values()) < 2:
            failures.append(f"no log ran twice: {attempts}")
        if not (scratch / "cluster" / ".state" / "kill-worker-01.h5").is_file():
            failures.append("the hook did not fire")
        timing = json.loads((scratch / "cluster" / "timing.json").read_text())
        if timing["workers"] != 2:
            failures.append(f"timing.json workers {timing['workers']}, expected the cluster's 2")
        for robot in ("arm0", "arm1"):
            a = json.loads((scratch / "local" / "robots" / robot / "result.json").read_text())
            b = json.loads((scratch / "cluster" / "robots" / robot / "result.json").read_text())
            for key in ("parameters", "friction"):
                if without_times(a[key]) != without_times(b[key]):
                    failures.append(f"{robot}: fused {key} differ from the local cluster's")
    for f in failures:
        print(f"FAILED: {f}")
    print("passed" if not failures else f"{len(failures)} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
