"""The fleet study (docs/fleet.md): a simulated fleet of panda arms (make_fleet.py) through
`heft fleet`; per robot the fused estimate against truth and against its best single log, the
fused covariance against the errors (normalized estimation error squared, NEES), on three fleets
of arms and five go2 logs; the fleet's job (smoothed velocities, window 161) beside the job with
logged velocities and window 121 and the smoothing-window sweep 161 was chosen from, and
diagnoses with the truth group's velocities and accelerations (why the fused covariance of
the logged job is too small), the scaling from 1 to 2
workers on 40 logs (three runs), the engine's overhead per task, a task and a worker killed
mid-task, and robots whose tool changed mid-fleet (the drift scan). Writes
studies/fleet/results.md. The truth group scores here; the fleet's job never reads it (the
diagnoses do, each to isolate one error source, and say so).

    python run_study.py --heft build/bin/heft --work build/studies/fleet [--robots 3] [--logs 20]
"""

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

import h5py
import numpy as np

HERE = Path(__file__).resolve().parent
HEFT = "heft"  # the executable, set by main()
# the identified body and its truth-group name: the panda's tool link (go2: the trunk)
BODY, TRUTH_BODY = "panda_link7", "panda_joint7"


def run(cmd, env=None):
    start = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env)
    return proc, time.perf_counter() - start


def truth_pi(log):
    with h5py.File(log) as f:
        names = [n.decode() for n in f["truth/bodies/names"][:]]
        return np.array(f["truth/bodies/pi"][names.index(TRUTH_BODY)])


def errors(result):
    e = result["truth_errors"]["bodies"][BODY]
    return e["mass_relative"], e["com_error_m"], e["inertia_relative"]


def nees(result, log):
    """(pi - pi_true)' Cov^+ (pi - pi_true) over the body's 10 parameters."""
    names = result["covariance"]["names"]
    idx = [names.index(f"{k}[{BODY}]") for k in
           ("m", "hx", "hy", "hz", "Ixx", "Ixy", "Iyy", "Ixz", "Iyz", "Izz")]
    cov = np.array(result["covariance"]["matrix"])[np.ix_(idx, idx)]
    e = np.array(result["parameters"][BODY]["pi"]) - truth_pi(log)
    # pseudo-inverse: a single log's estimate on the consistency boundary has a singular
    # covariance (the log-Cholesky map's Jacobian degenerates there)
    return float(e @ np.linalg.pinv(cov, rcond=1e-12, hermitian=True) @ e)


def distance(result, log):
    """|(pi - pi_true) / prior std|: the whole body's error in units of its prior."""
    p = result["parameters"][BODY]
    return float(np.linalg.norm((np.array(p["pi"]) - truth_pi(log)) / np.array(p["prior_std"])))


def unscaled(out, robot):
    """The robot's fusion again with `dispersion: {scale: false}`: the data's own covariance,
    before heft fuse scales it by the logs' dispersion (the diagnosis tables read it)."""
    import yaml  # in the tools venv, as heft fleet's

    folder = out / "unscaled" / robot["id"]
    folder.mkdir(parents=True, exist_ok=True)
    config = yaml.safe_load((out / "robots" / robot["id"] / "fuse.yaml").read_text())
    config["dispersion"] = {"scale": False}
    (folder / "fuse.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    proc, _ = run([HEFT, "fuse", str(folder / "fuse.yaml"), "--out", str(folder), "--overwrite",
                   "--quiet"])
    if not (folder / "result.json").is_file():
        sys.exit(f"heft fuse without scaling ({robot['id']}) exited {proc.returncode}: "
                 f"{proc.stderr}")
    return json.loads((folder / "result.json").read_text())


def evaluate(out, joint_identify=True):
    """Per robot: fused and single-log truth errors, distances, NEES (and one identify over the
    used logs unless joint_identify is false)."""
    fleet = json.loads((out / "fleet.json").read_text())
    rows = []
    for robot in fleet["robots"]:
        fused = json.loads((out / robot["fusion"]["result"]).read_text())
        used = [r for r in robot["logs"] if r.get("used_in_fusion")]
        truth_log = used[0]["log"]
        # Ixx, Iyy, Izz (pi[4], pi[6], pi[9]) relative to truth: all below it is the sign of
        # regressors with noise (errors in variables shrink what they multiply)
        t_pi = truth_pi(truth_log)
        diag = [(fused["parameters"][BODY]["pi"][i] - t_pi[i]) / t_pi[i] for i in (4, 6, 9)]
        single = []
        for r in used:
            res = json.loads((Path(r["run"]) / "result.json").read_text())
            single.append({"errors": errors(res), "distance": distance(res, r["log"]),
                           "nees": nees(res, r["log"])})
        best = min(single, key=lambda s: s["distance"])
        row = {
            "robot": robot["id"], "used": len(used),
            "left_out": sum(1 for r in robot["logs"]
                            if r["status"] == "identified" and not r.get("used_in_fusion")),
            "failed": sum(1 for r in robot["logs"] if r["status"] != "identified"),
            "fused": errors(fused), "fused_distance": distance(fused, truth_log),
            "fused_nees": nees(fused, truth_log), "best": best,
            "fused_nees_data": nees(unscaled(out, robot), truth_log),
            "dispersion": fused["fusion"]["dispersion"]["ratio"],
            "median_distance": statistics.median(s["distance"] for s in single),
            "single_nees": statistics.median(s["nees"] for s in single), "diagonal": diag,
            "drift": fused["fusion"]["drift"]}
        rows.append(row)
        if not joint_identify:
            continue
        # one heft identify over all the used logs: theta shared, but one offset per joint and one
        # noise std per channel for all of them (no per-log nuisance)
        joint_dir = out / "joint-identify" / robot["id"]
        shutil.rmtree(joint_dir, ignore_errors=True)
        cmd = [HEFT, "identify", robot["job"], "--out", str(joint_dir), "--quiet", "--log"]
        proc, t_joint = run(cmd + [r["log"] for r in used])
        joint = json.loads((joint_dir / "result.json").read_text())
        row.update({"joint_distance": distance(joint, truth_log), "joint_errors": errors(joint),
                    "joint_time": t_joint})
    return rows


def drift_cell(d):
    """The drift scan's largest split statistic against its limit (gate x typical)."""
    cell = f"{d['largest']:.3g} / {d['gate'] * d['typical']:.3g}"
    return cell + ("" if d["detected"] == "none" else f" **{d['detected']}**")


def table(rows):
    lines = ["| robot | used / left out / failed logs | distance to truth: fused | best single "
             "log | median single | one identify over the used logs | fused mass err | COM err "
             "[mm] | inertia err | best single log's mass / COM / inertia err | NEES fused "
             "(unscaled; median single) | drift: largest / limit |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        m, c, i = r["fused"]
        bm, bc, bi = r["best"]["errors"]
        lines.append(f"| {r['robot']} | {r['used']} / {r['left_out']} / {r['failed']} | "
                     f"{r['fused_distance']:.3f} | {r['best']['distance']:.3f} | "
                     f"{r['median_distance']:.3f} | {r['joint_distance']:.3f} | {abs(m):.3%} | "
                     f"{c * 1e3:.3f} | {i:.2%} | "
                     f"{abs(bm):.3%} / {bc * 1e3:.3f} / {bi:.2%} | {r['fused_nees']:.1f} "
                     f"({r['fused_nees_data']:.1f}; {r['single_nees']:.1f}) | "
                     f"{drift_cell(r['drift'])} |")
    return lines


def make_fleet(work, name, robots, logs, seed, duration=8, change=()):
    proc, _ = run([sys.executable, str(HERE / "make_fleet.py"), "--heft", HEFT, "--out",
                   str(work / name), "--robots", str(robots), "--logs", str(logs), "--seed",
                   str(seed), "--duration", str(duration)]
                  + (["--change-at", str(change[0]), "--change-mass", str(change[1])]
                     if change else []))
    if proc.returncode != 0:
        sys.exit(proc.stderr)
    return work / name


def fleet(manifest, out, workers=2, env=None, report=False, scheduler=None):
    cmd = [HEFT, "fleet", str(manifest), "--out", str(out), "--workers", str(workers)]
    cmd += ["--scheduler", scheduler] if scheduler else []
    proc, wall = run(cmd + ([] if report else ["--no-report"]), env=env)
    return proc, wall


def go2_study(work):
    """Five go2-payload-3kg logs (seeds 1-5, 8 s) with the go2 example's identify job (contact
    null-space projection, base state estimated by heft): the same fusion on a quadruped."""
    global BODY, TRUTH_BODY
    folder = work / "go2"
    folder.mkdir(parents=True)
    for seed in range(1, 6):
        proc, _ = run([HEFT, "simulate", "go2-payload-3kg", "--out", str(folder / f"{seed}.h5"),
                       "--seed", str(seed), "--duration", "8", "--quiet"])
        if proc.returncode != 0:
            sys.exit(proc.stderr)
    job = (HERE.parent.parent / "data" / "examples" / "go2_payload_identify.yaml").read_text()
    (folder / "identify.yaml").write_text(
        job.replace("log: ../fixtures/sim_go2_payload_3kg_2s.h5", "log: 1.h5"))
    (folder / "manifest.yaml").write_text("job: identify.yaml\nrobots:\n  - id: go2\n    logs: ["
                                          + ", ".join(f"{s}.h5" for s in range(1, 6)) + "]\n")
    proc, _ = fleet(folder / "manifest.yaml", work / "go2-out")
    if proc.returncode != 0:
        sys.exit(f"go2 fleet exited {proc.returncode}: {proc.stderr}")
    BODY, TRUTH_BODY = "base", "root_joint"
    rows = evaluate(work / "go2-out")
    BODY, TRUTH_BODY = "panda_link7", "panda_joint7"
    return rows


def variant(folder, out, tag, changes, manifest="manifest.yaml", joint=True):
    """The fleet's logs through a changed job: identify-TAG.yaml, manifest-TAG.yaml. changes:
    (old, new) text replacements of the fleet's identify.yaml, in order."""
    job = (folder / "identify.yaml").read_text()
    for old, new in changes:
        assert old in job, old
        job = job.replace(old, new)
    (folder / f"identify-{tag}.yaml").write_text(job)
    (folder / f"manifest-{tag}.yaml").write_text(
        (folder / manifest).read_text().replace("job: identify.yaml",
                                                f"job: identify-{tag}.yaml"))
    return fleet_rows(folder / f"manifest-{tag}.yaml", out, tag, joint)


def fleet_rows(manifest, out, tag, joint=True):
    """evaluate() of one heft fleet run; the study stops if the run failed."""
    proc, _ = fleet(manifest, out)
    if proc.returncode != 0:
        sys.exit(f"heft fleet ({tag}) exited {proc.returncode}: {proc.stderr}")
    return evaluate(out, joint)


TRUE_ACCELERATION = ("  order: 3\n", "  order: 3\n  acceleration: truth\n")
# the fleet's job (make_fleet.py, docs/guide/fleet.md's recommendation): smoothed velocities and a
# window wider than one log's best, chosen on the first fleet from the sweep, with truth; the
# second and third fleets check it
JOB_WINDOW = 161


def smoothing(window):
    """The job's preparation lines with smoothed velocities and the given window."""
    return f"  window: {window}\n  order: 3\n  smooth_velocity: true\n"


JOB_SMOOTHING = smoothing(JOB_WINDOW)
# logged velocities and window 121: the fleet's job before, which the diagnoses of the
# regressor's signals (true accelerations, true velocities, min_speed) vary
LOGGED_WINDOW = 121
LOGGED = (JOB_SMOOTHING, f"  window: {LOGGED_WINDOW}\n  order: 3\n")
WINDOW_SWEEP = (81, 121, 161, 201, 241)
NEES_DIM = 10  # the body's parameters: a calibrated covariance's NEES is chi-square(10)


def smooth_window(window):
    """The fleet's job with another smoothing window."""
    return (JOB_SMOOTHING, smoothing(window))


SMOOTH_LOGGED_WINDOW = smooth_window(LOGGED_WINDOW)


def nees_consistent(rows):
    """The mean fused NEES within three of its standard deviations of the dimension, as the
    mean of len(rows) chi-square(10) draws would be (std sqrt(2 x 10 / n))."""
    return abs(mean_nees(rows) - NEES_DIM) <= 3 * (2 * NEES_DIM / len(rows)) ** 0.5


def closer_than_best(rows):
    """Every robot's fused estimate closer to truth than its best single log."""
    return all(r["fused_distance"] < r["best"]["distance"] for r in rows)


def logs_with_truth(folder, mode):
    """The fleet's logs that have a truth time series, opened in `mode`, in name order; the
    fleet's truncated log does not open and is passed over (it stays broken)."""
    for log in sorted((folder / "logs").rglob("*.h5")):
        try:
            f = h5py.File(log, mode)
        except OSError:
            continue
        with f:
            if "truth" in f and "time" in f["truth"]:
                assert np.array_equal(f["truth/time"][:], f["joints/time"][:]), log
                yield f


def with_true_velocity(folder, name):
    """A copy of a fleet whose logs carry the truth group's velocities as joints/v (a diagnosis
    that isolates the logged velocity's error: the backward difference of the encoders)."""
    copy = folder.parent / name
    shutil.copytree(folder, copy)
    for f in logs_with_truth(copy, "r+"):
        f["joints/v"][...] = f["truth/v"][:]
    return copy


def velocity_error(folder):
    """The logged velocity against the truth's over a fleet's logs, arm joints only: the median
    std of the difference [rad/s] and its largest slope on the true acceleration [ms] (a lag)."""
    stds, slopes = [], []
    for f in logs_with_truth(folder, "r"):
        names = [n.decode() for n in f["joints/names"][:]]
        arm = [i for i, n in enumerate(names) if "finger" not in n]
        e = f["joints/v"][:][:, arm] - f["truth/v"][:][:, arm]
        a = f["truth/a"][:][:, arm]
        stds += list(e.std(axis=0))
        slopes += list(-(e * a).sum(axis=0) / (a * a).sum(axis=0))
    return {"std": statistics.median(stds), "lag_ms": max(abs(s) for s in slopes) * 1e3,
            "joints": len(stds)}


def fusion_study(work, args):
    """The fleet's job; the same logs with logged velocities and window 121, with smoothed
    velocities and window 121, the window sweep 161 was chosen from, and diagnoses of the logged
    job that read the truth group to isolate one error source each (true accelerations, true
    velocities, both: no job of the fleet reads it); a second fleet nothing was chosen on."""
    main_fleet = make_fleet(work, "fleet", args.robots, args.logs, 2026)
    proc, t_fleet = fleet(main_fleet / "manifest.yaml", work / "out", report=True)
    if proc.returncode != 0:
        sys.exit(f"heft fleet exited {proc.returncode}: {proc.stderr}")
    rows = evaluate(work / "out")
    rows_logged = variant(main_fleet, work / "out-logged", "logged", [LOGGED])
    rows_smooth = variant(main_fleet, work / "out-smooth-121", "smooth-121",
                          [SMOOTH_LOGGED_WINDOW])
    rows_truth = variant(main_fleet, work / "out-truth-acceleration", "truth-acceleration",
                         [LOGGED, TRUE_ACCELERATION])
    true_v = with_true_velocity(main_fleet, "fleet-true-velocity")
    rows_true_v = variant(true_v, work / "out-true-velocity", "logged", [LOGGED])
    rows_min_speed = variant(main_fleet, work / "out-min-speed", "min-speed",
                             [LOGGED, ("  min_speed: 0.05\n", "  min_speed: 0.3\n")])
    rows_true_va = variant(true_v, work / "out-true-velocity-acceleration", "truth-acceleration",
                           [LOGGED, TRUE_ACCELERATION])
    check = make_fleet(work, "check", args.robots, max(3, args.logs // 2), 7)
    rows_check = fleet_rows(check / "manifest.yaml", work / "check-out", "second fleet")
    rows_check_logged = variant(check, work / "check-out-logged", "logged", [LOGGED])
    rows_check_smooth = variant(check, work / "check-out-smooth-121", "smooth-121",
                                [SMOOTH_LOGGED_WINDOW])
    # the windows the job's was chosen from (smoothed velocities, order 3; 161 and 121 are the
    # rows above)
    sweep = {JOB_WINDOW: rows, LOGGED_WINDOW: rows_smooth}
    for window in WINDOW_SWEEP:
        if window not in sweep:
            sweep[window] = variant(main_fleet, work / f"out-window-{window}", f"window-{window}",
                                    [smooth_window(window)], joint=False)
    return {"t_fleet": t_fleet, "rows": rows, "rows_logged": rows_logged,
            "rows_smooth": rows_smooth, "rows_truth": rows_truth,
            "sweep": dict(sorted(sweep.items())),
            "rows_true_v": rows_true_v, "rows_true_va": rows_true_va, "rows_check": rows_check,
            "rows_check_logged": rows_check_logged, "rows_check_smooth": rows_check_smooth,
            "rows_min_speed": rows_min_speed, "velocity_error": velocity_error(main_fleet)}


def manifest_of(folder, name):
    """The first two arms' logs 00-89 (no broken ones): 40 logs for 20 per arm."""
    text = "job: identify.yaml\nrobots:\n"
    for r in (0, 1):
        logs = sorted((folder / "logs" / f"arm{r}").glob("[0-8]*.h5"))
        text += f"  - id: arm{r}\n    logs: [" + ", ".join(str(p) for p in logs) + "]\n"
    (folder / name).write_text(text)
    return folder / name


SCALING_RUNS = 3  # timings move by several percent from run to run: medians of three


def scaling_study(work):
    def scale(manifest, tag, run):
        result = {}
        for workers in (1, 2):
            o = work / (f"scale-{tag}-{workers}" + (f"-{run}" if run else ""))
            proc, wall = fleet(manifest, o, workers)
            if proc.returncode != 0:
                sys.exit(f"scaling run exited {proc.returncode}: {proc.stderr}")
            result[workers] = {"wall": wall, **json.loads((o / "timing.json").read_text())}
        return result

    manifests = {"fleet": manifest_of(work / "fleet", "manifest40.yaml"),
                 "long": manifest_of(make_fleet(work, "long-logs", 2, 20, 11, duration=30),
                                     "manifest40.yaml")}  # the 30 s logs: also a fusion check
    runs = {"fleet": [], "long": []}
    for run in range(SCALING_RUNS):
        for tag, manifest in manifests.items():
            runs[tag].append(scale(manifest, tag, run))
    return {"manifest40": manifests["fleet"], **runs}


def fault_study(work, manifest40):
    """A task's heft process killed mid-run under the local cluster, and a worker process killed
    mid-task on a cluster of two worker processes (--scheduler): the same fused estimates as the
    clean two-worker run."""
    import logging

    from dask.distributed import LocalCluster

    victim = sorted((work / "fleet" / "logs" / "arm0").glob("0*.h5"))[3].name
    env = dict(os.environ, HEFT_FLEET_FAULT=f"kill-task:{victim}")
    exits = {"task": fleet(manifest40, work / "killed-task", env=env)[0].returncode}
    os.environ["HEFT_FLEET_FAULT"] = f"kill-worker:{victim}"  # read by the worker processes
    cluster = LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                           dashboard_address=None, silence_logs=logging.CRITICAL)
    del os.environ["HEFT_FLEET_FAULT"]
    try:
        exits["worker"] = fleet(manifest40, work / "killed-worker",
                                scheduler=cluster.scheduler_address)[0].returncode
    finally:
        cluster.close()
    results = {"victim": victim}
    for case in ("task", "worker"):
        killed = json.loads((work / f"killed-{case}" / "fleet.json").read_text())
        same = True
        for robot in ("arm0", "arm1"):
            a = json.loads((work / "scale-fleet-2" / "robots" / robot / "result.json").read_text())
            b = json.loads((work / f"killed-{case}" / "robots" / robot / "result.json").read_text())
            same &= a["parameters"] == b["parameters"] and a["friction"] == b["friction"]
        results[case] = {"exit": exits[case], "same": same, "attempts": max(
            r["attempts"] for rb in killed["robots"] for r in rb["logs"])}
    return results


DRIFT_CASES = [  # (seed, first log with the heavier tool, added mass [kg]); 20 logs of 8 s
    (13, 12, 0.0), (13, 12, 0.01), (13, 12, 0.02), (13, 12, 0.05), (13, 12, 0.2),
    (17, 5, 0.02), (17, 5, 0.2)]


def drift_study(work):
    """One arm (tool 1.2 kg), 20 logs, its tool heavier from one log on: does the fused result say
    that the robot changed, and where; and the logs after the change fused alone."""
    rows = []
    for seed, at, added in DRIFT_CASES:
        name = f"drift-{seed}-{at}-{added:g}"
        folder = make_fleet(work, name, 1, 20, seed, change=(at, added))
        logs = [folder / "logs" / "arm0" / f"{i:02d}.h5" for i in range(20)]
        (folder / "drift.yaml").write_text(
            "job: identify.yaml\nrobots:\n  - id: arm0\n    logs: ["
            + ", ".join(str(p) for p in logs) + "]\n")
        proc, _ = fleet(folder / "drift.yaml", work / f"{name}-out")
        if proc.returncode != 0:
            sys.exit(f"heft fleet ({name}) exited {proc.returncode}: {proc.stderr}")
        robot = json.loads((work / f"{name}-out" / "fleet.json").read_text())["robots"][0]
        d = robot["fusion"]["drift"]
        fused = json.loads((work / f"{name}-out" / robot["fusion"]["result"]).read_text())
        row = {"seed": seed, "at": at, "added": added, "drift": d,
               "left_out": sum(1 for r in robot["logs"] if not r.get("used_in_fusion")),
               "fused_mass": fused["parameters"][BODY]["pi"][0],
               "mass_before": truth_pi(logs[0])[0], "mass_after": truth_pi(logs[-1])[0]}
        if d["detected"] != "none":
            # what the warning tells the user to do: the runs after the last used one before it
            after = int(Path(d["last_before"]).stem) + 1
            runs = [r["run"] for r in robot["logs"][after:] if r["status"] == "identified"]
            cfg = folder / "after.yaml"
            cfg.write_text(f"identify: {folder / 'identify.yaml'}\nruns: [{', '.join(runs)}]\n"
                           f"truth_log: {logs[-1]}\n")
            proc, _ = run([HEFT, "fuse", str(cfg), "--out", str(folder / "after-out"), "--quiet"])
            later = json.loads((folder / "after-out" / "result.json").read_text())
            row["after_runs"] = len(runs)
            row["after_errors"] = errors(later)
        rows.append(row)
    return rows


def two_arms_as_one(work):
    """The first fleet's arm0 logs 00-09 then arm1's 10-19 (another tool and friction) filed as
    one robot: the gate's typical excess (all pairs) against the drift scan's (within sides)."""
    import yaml

    runs = [yaml.safe_load((work / "out" / "robots" / arm / "fuse.yaml").read_text())["runs"]
            for arm in ("arm0", "arm1")]
    cfg = work / "two-arms.yaml"
    cfg.write_text(f"identify: {work / 'fleet' / 'identify.yaml'}\nruns: ["
                   + ", ".join(runs[0][:10] + runs[1][10:20]) + "]\n")
    proc, _ = run([HEFT, "fuse", str(cfg), "--out", str(work / "two-arms-out"), "--quiet"])
    result = json.loads((work / "two-arms-out" / "result.json").read_text())["fusion"]
    return {"gate_typical": statistics.median(r["excess_others"] for r in result["runs"]),
            "left_out": sum(1 for r in result["runs"] if not r["used"]),
            "drift": result["drift"]}


def drift_lines(rows):
    lines = ["| seed | tool heavier from log | by [kg] | detected | between logs | largest / "
             "limit | left out by the gate | fused mass [kg] (true before / after) | the logs "
             "after the change fused alone: mass / COM [mm] / inertia err |",
             "|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        d = r["drift"]
        between = f"{d['last_before']} - {d['first_after']}" if d["detected"] != "none" else ""
        alone = ""
        if "after_errors" in r:
            m, c, i = r["after_errors"]
            alone = f"{r['after_runs']} logs: {abs(m):.3%} / {c * 1e3:.3f} / {i:.2%}"
        lines.append(f"| {r['seed']} | {r['at']:02d} | {r['added']:g} | {d['detected']} | "
                     f"{between} | {d['largest']:.3g} / {d['gate'] * d['typical']:.3g} | "
                     f"{r['left_out']} | {r['fused_mass']:.4f} ({r['mass_before']:.4f} / "
                     f"{r['mass_after']:.4f}) | {alone} |")
    return lines


def noop_task_s():
    """The engine alone: 1000 no-op tasks on heft fleet's local cluster of two worker threads."""
    import logging

    from dask.distributed import Client, LocalCluster

    cluster = LocalCluster(n_workers=1, threads_per_worker=2, processes=False,
                           dashboard_address=None, silence_logs=logging.CRITICAL)
    client = Client(cluster)
    client.gather(client.map(abs, range(50)))  # warm
    start = time.perf_counter()
    client.gather([client.submit(abs, -i, pure=False) for i in range(1000)])
    noop = (time.perf_counter() - start) / 1000
    client.close()
    cluster.close()
    return noop


def mean_nees(rows, key="fused_nees"):
    """Mean fused NEES: heft fuse's (scaled by the dispersion) or key="fused_nees_data"."""
    return statistics.mean(r[key] for r in rows)


def dispersion_lines(fusion):
    """heft fuse's covariance scaling: the logs' dispersion S^2 about their common estimate (no
    truth) and the fused NEES with the data's covariance and with heft fuse's, scaled by it."""
    cases = [(f"the fleet's job (smoothed, window {JOB_WINDOW})",
              ("rows", "rows_check", "rows_long")),
             (f"logged velocities, window {LOGGED_WINDOW} (the fleet's job before)",
              ("rows_logged", "rows_check_logged", "rows_long_logged"))]
    lines = ["## The logs' dispersion: heft fuse's covariance", "",
             "S^2 = min_l sum_i |R_i l - z_i|^2 / (sum_i rank_i - rank): the used logs' costs "
             "above their own minima at the data's joint minimum, per degree of freedom (the "
             "Birge ratio; about 1 when the logs scatter as their covariances say; fused "
             "result.json `fusion.dispersion`). It needs no truth. heft fuse divides the data's "
             "information in the fused covariance by max(1, S^2), the estimate unchanged "
             "(`dispersion.scale`, default true); the unscaled column is the same fusion with "
             "`dispersion: {scale: false}`.", "",
             "| job | S^2 per arm (the fleet; second; 30 s) | NEES per arm, heft fuse | mean NEES "
             "over the 8 arms, unscaled | mean NEES, heft fuse |", "|---|---|---|---|---|"]
    for name, keys in cases:
        rows = [r for k in keys for r in fusion[k]]
        lines.append(
            f"| {name} | " + "; ".join(" / ".join(f"{r['dispersion']:.2f}" for r in fusion[k])
                                      for k in keys)
            + " | " + "; ".join(" / ".join(f"{r['fused_nees']:.1f}" for r in fusion[k])
                                for k in keys)
            + f" | {mean_nees(rows, 'fused_nees_data'):.1f} | **{mean_nees(rows):.1f}** |")
    g = fusion["go2"][0]
    lines += ["", f"go2 (5 logs, the go2 example's job): S^2 **{g['dispersion']:.1f}**, NEES "
              f"{g['fused_nees_data']:.0f} unscaled, **{g['fused_nees']:.1f}** heft fuse's.", ""]
    return lines


def nees_by_signal(fusion):
    """The fused NEES per arm by where the regressor's velocities and accelerations come from,
    and how often the fused diagonal inertia lies below truth."""
    def cell(key):
        return (" / ".join(f"{r['fused_nees_data']:.1f}" for r in fusion[key]) if key
                else "not run")

    def below(keys):
        d = [x for k in keys for r in fusion[k] for x in r["diagonal"]]
        return f"{sum(1 for x in d if x < 0)} of {len(d)}"

    lines = ["## Why the fused covariance is too small", "",
             "Fused NEES per arm with the data's covariance (heft fuse's before the dispersion "
             "scale; 10 for a calibrated covariance) by the regressor's velocity and "
             "acceleration; the last column counts the fused Ixx, Iyy, Izz of panda_link7 below "
             "truth over the arms of the row. Rows marked diagnosis read the truth group.", "",
             "| velocity / acceleration | the fleet | the second fleet | the 30 s fleet | mean "
             "over the row's arms of the 8 s fleets | mean over all the row's arms | diagonal "
             "inertia below truth |",
             "|---|---|---|---|---|---|---|"]
    for name, keys in (
            (f"logged / filter, window {LOGGED_WINDOW} (the fleet's job before)",
             ("rows_logged", "rows_check_logged", "rows_long_logged")),
            (f"smoothed / filter, window {LOGGED_WINDOW} (`smooth_velocity`)",
             ("rows_smooth", "rows_check_smooth", "rows_long_smooth")),
            (f"smoothed / filter, window {JOB_WINDOW} (the fleet's job: `smooth_velocity`, "
             f"`window: {JOB_WINDOW}`)", ("rows", "rows_check", "rows_long")),
            (f"logged / filter, window {LOGGED_WINDOW}, rows slower than 0.3 rad/s dropped "
             "(`min_speed`, the job's: 0.05)", ("rows_min_speed", None, None)),
            (f"logged / true, window {LOGGED_WINDOW} (diagnosis)", ("rows_truth", None, None)),
            (f"true / filter, window {LOGGED_WINDOW} (diagnosis)", ("rows_true_v", None, None)),
            (f"true / true, window {LOGGED_WINDOW} (diagnosis)", ("rows_true_va", None, None))):
        eight = [r for k in keys[:2] if k for r in fusion[k]]
        every = [r for k in keys if k for r in fusion[k]]
        lines.append(f"| {name} | " + " | ".join(cell(k) for k in keys)
                     + f" | {mean_nees(eight, 'fused_nees_data'):.1f} | "
                     f"{mean_nees(every, 'fused_nees_data'):.1f} | "
                     f"{below([k for k in keys if k])} |")
    v = fusion["velocity_error"]
    lines += ["", "The smoothing window on the first fleet (`smooth_velocity: true`, order 3; "
              f"the fleet's job's window, {JOB_WINDOW}, was chosen from this sweep, with "
              "truth). A wider window takes more noise "
              "out of the regressor's accelerations and velocities (less shrinkage: the fused "
              "Ixx, Iyy, Izz move up to truth), and puts more of the filter's own bias in:", "",
              "| window | fused NEES per arm | mean | fused distance to truth per arm | fused "
              "Ixx, Iyy, Izz against truth, per arm [%] |", "|---|---|---|---|---|"]
    for window, rows in fusion["sweep"].items():
        lines.append(f"| {window} | "
                     + " / ".join(f"{r['fused_nees_data']:.1f}" for r in rows)
                     + f" | {mean_nees(rows, 'fused_nees_data'):.1f} | "
                     + " / ".join(f"{r['fused_distance']:.3f}" for r in rows) + " | "
                     + " ; ".join(", ".join(f"{100 * x:+.2f}" for x in r["diagonal"])
                                  for r in rows) + " |")
    return lines + ["", f"The logged velocity (the encoders' backward difference) against the "
                    f"truth's on the fleet's logs ({v['joints']} series of an arm joint in a log): "
                    f"std of the difference {v['std']:.4f} rad/s (median), its slope on the true "
                    f"acceleration at most {v['lag_ms']:.3f} ms: no lag (a velocity half a sample "
                    "late would show 0.5 ms).", ""]


def markdown(args, fusion, scaling, fault, noop, drift):
    panda, logged = fusion["panda"], fusion["logged"]
    lines = ["# Fleet: fusion, scaling, faults", "",
             "Regenerate (about 15 to 25 minutes): `ctest -R Studies.Fleet` in build/, or",
             "`.deps/venv-tools/bin/python studies/fleet/run_study.py --heft build/bin/heft "
             "--work build/studies/fleet`.", "",
             f"Fleet: {args.robots} simulated panda arms x {args.logs} logs (make_fleet.py, seed "
             "2026: each arm its own tool on panda_link7 and joint-friction wear, each log its own "
             "excitation, noise seed, torque-sensor offsets and length 6-10 s), plus per arm a "
             "log cut in half, a log of its neighbour (another tool) and on arm0 a "
             "double-pendulum log. Job: the identify.yaml make_fleet.py writes (panda_link7 with a "
             "payload prior, friction, armature, per-log torque offsets; velocities from the "
             f"acceleration's fit, Savitzky-Golay window {JOB_WINDOW}: docs/guide/fleet.md's "
             "recommendation for fleets). `heft fleet --workers 2` "
             f"took {fusion['t_fleet']:.1f} s.", "",
             "Distance to truth: |(pi - pi_true) / prior std| over panda_link7's ten parameters "
             "(tool included); the best single log is the one with the smallest distance. NEES: "
             "(pi - pi_true)' Cov^-1 (pi - pi_true), 10 for a calibrated covariance. \"One "
             "identify over the used logs\": `heft identify --log ...` with every log the fusion "
             "used, one job: theta shared, but one torque offset per joint for all logs and one "
             "noise std per channel (no per-log nuisance). The truth group scores here; the "
             "fleet's job never reads it (the diagnoses below do, and say so).", "",
             "## Fused against single logs", "",
             f"The fleet's job (smoothed velocities, window {JOB_WINDOW}: chosen on this fleet, "
             "with truth, from the sweep below; the second and third fleets check it):", ""]
    lines += table(fusion["rows"])
    logged_job = f"logged velocities and window {LOGGED_WINDOW}"
    for caption, rows in (
            (f"The same logs with {logged_job} (the fleet's job before; the diagnoses below "
             "vary it):", fusion["rows_logged"]),
            (f"The same logs with smoothed velocities and window {LOGGED_WINDOW}:",
             fusion["rows_smooth"]),
            (f"The same logs with {logged_job} and the truth group's accelerations "
             "(`acceleration: truth`): a diagnosis that removes the acceleration filter's error "
             "and nothing else; it reads the truth group, which no job of the fleet does:",
             fusion["rows_truth"]),
            ("The same logs with the truth group's velocities written into joints/v, run with "
             f"window {LOGGED_WINDOW} and without smoothing (a diagnosis "
             "that removes the logged velocity's error, the "
             "encoders' backward difference, and nothing else; the accelerations are the "
             "filter's on them):", fusion["rows_true_v"]),
            ("The same true-velocity logs with the truth group's accelerations (a diagnosis: "
             "the regressor's signals without their errors, the torques as logged):",
             fusion["rows_true_va"]),
            (f"A second fleet (seed 7, {max(3, args.logs // 2)} logs per arm), the fleet's job, "
             "nothing chosen on it:", fusion["rows_check"]),
            (f"The second fleet with {logged_job}:", fusion["rows_check_logged"]),
            (f"The second fleet with smoothed velocities and window {LOGGED_WINDOW}:",
             fusion["rows_check_smooth"]),
            ("A third fleet (seed 11, 2 arms x 20 logs of 22-38 s: the scaling study's), the "
             "fleet's job, nothing chosen on it:", fusion["rows_long"]),
            (f"The third fleet with {logged_job}:", fusion["rows_long_logged"]),
            (f"The third fleet with smoothed velocities and window {LOGGED_WINDOW}:",
             fusion["rows_long_smooth"]),
            ("go2-payload-3kg, seeds 1-5, 8 s each, with the go2 example's identify job (the "
             "trunk; contact null-space projection, base state estimated by heft from IMU, legs "
             "and contacts; no outlier among them):", fusion["go2"])):
        lines += ["", caption, ""] + table(rows)
    unchosen = fusion["rows_check"] + fusion["rows_long"]
    lines += ["", "Fused closer to truth than the best single log, every robot: "
              + ", ".join(f"{name} **{'yes' if ok else 'no'}**"
                          for name, ok in fusion["better"].items())
              + ". NEES of the fused estimates (heft fuse's covariance, scaled by the logs' "
              "dispersion; in parentheses the data's, unscaled), mean over the three panda "
              f"fleets' {len(panda)} arms: **{mean_nees(panda):.1f}** "
              f"({mean_nees(panda, 'fused_nees_data'):.1f}) for {NEES_DIM} parameters; a "
              f"calibrated covariance gives {NEES_DIM} with a std of "
              f"{(2 * NEES_DIM / len(panda)) ** 0.5:.1f} for the mean of {len(panda)} arms: "
              f"consistent (within three stds) **{'yes' if nees_consistent(panda) else 'no'}**. "
              f"Over the {len(unchosen)} arms of the fleets nothing was chosen on: "
              f"**{mean_nees(unchosen):.1f}** ({mean_nees(unchosen, 'fused_nees_data'):.1f}). "
              f"go2: **{fusion['go2'][0]['fused_nees']:.1f}** "
              f"({fusion['go2'][0]['fused_nees_data']:.0f}: the estimated base state's errors are "
              "not in the rows' noise; the logs' dispersion shows them).",
              "", f"With {logged_job} (the fleet's job before) on the three panda fleets: fused "
              "closer to truth than the best single log, every arm: "
              f"**{'yes' if closer_than_best(logged) else 'no'}**; NEES mean over the "
              f"{len(logged)} arms: **{mean_nees(logged):.1f}** "
              f"({mean_nees(logged, 'fused_nees_data'):.1f} unscaled).", ""]
    lines += nees_by_signal(fusion)
    lines += dispersion_lines(fusion)
    lines += ["## Scaling and overhead (40 logs, nothing cached)", "",
              "| logs | workers | wall [s] | cluster start [s] | task phase [s] | fusion [s] | "
              "median task [s] | wall ratio | task-phase ratio |",
              "|---|---|---|---|---|---|---|---|---|"]
    medians = []
    for name, tag in (("the fleet's (6-10 s)", "fleet"), ("30 s", "long")):
        for sc in scaling[tag]:
            for w in (1, 2):
                t = sc[w]
                lines.append(
                    f"| {name} | {w} | {t['wall']:.2f} | {t['cluster_start_s']:.2f} | "
                    f"{t['task_phase_s']:.2f} | {t['fusion_s']:.2f} | "
                    f"{statistics.median(t['task_s']):.3f} | "
                    + (f"{sc[1]['wall'] / sc[2]['wall']:.2f} | "
                       f"{sc[1]['task_phase_s'] / sc[2]['task_phase_s']:.2f} |" if w == 2
                       else " | |"))
        wall = statistics.median(sc[1]["wall"] / sc[2]["wall"] for sc in scaling[tag])
        phase = statistics.median(sc[1]["task_phase_s"] / sc[2]["task_phase_s"]
                                  for sc in scaling[tag])
        medians.append(f"{name}: wall ratio **{wall:.2f}**, task-phase ratio {phase:.2f}")
    lines += ["", f"Medians over the {SCALING_RUNS} runs (1 and 2 workers alternating): "
              + "; ".join(medians) + "."]
    overhead = statistics.median(sc[2]["overhead_per_task_s"] for sc in scaling["fleet"])
    fixed = [sc[w]["wall"] - sc[w]["task_phase_s"]
             for tag in ("fleet", "long") for sc in scaling[tag] for w in (1, 2)]
    lines += ["", f"This machine has {os.cpu_count()} cores. Engine overhead per task (2 x task "
              f"phase - busy time, over the tasks, fleet logs, median of the runs): "
              f"{overhead * 1e3:.1f} ms; a no-op "
              f"Dask task: {noop * 1e3:.2f} ms. The wall time also holds the interpreter, the "
              "cluster's start, hashing the inputs and the fusions: "
              f"{min(fixed):.1f}-{max(fixed):.1f} s (wall - task phase) that a second worker "
              "does not halve.", "",
              "## A task or a worker killed mid-task", "",
              "The 40 logs with two workers, a fault in the first attempt of "
              f"{fault['victim']}'s task:", "",
              "| fault | the run's exit | most attempts of a task | fused parameters and "
              "friction identical to the clean run's |", "|---|---|---|---|"]
    for case, what in (("task", "HEFT_FLEET_FAULT=kill-task: its heft process killed "
                                "mid-run (the local cluster)"),
                       ("worker", "HEFT_FLEET_FAULT=kill-worker: its worker process killed "
                                  "(a cluster of two worker processes, --scheduler)")):
        f = fault[case]
        lines.append(f"| {what} | {f['exit']} | {f['attempts']} | "
                     f"**{'yes' if f['same'] else 'no'}** |")
    lines += ["",
              "## Drift: the tool changed mid-fleet", "",
              "One arm (make_fleet.py, tool 1.2 kg), 20 logs of 6-10 s in order, its tool "
              "heavier from one log on (a gripper or battery swapped), the fleet's job. The "
              "drift scan (docs/fleet.md) runs on every fusion; the tables above show it on "
              "fleets without a change (last column). Its limit is the drift gate (10) times "
              "the logs' typical pairwise excess within the two parts. The last column is what "
              "the warning tells the user to do: fuse the logs after the change alone (truth "
              "errors against the heavier tool).", ""]
    lines += drift_lines(drift["rows"])
    two = drift["two_arms"]
    d = two["drift"]
    lines += ["", "The first fleet's arm0 logs 00-09 followed by arm1's 10-19 (another tool and "
              f"friction) filed as one robot: the gate left out {two['left_out']}; its typical "
              f"excess over all pairs {two['gate_typical']:.4g}; the drift scan: {d['detected']} "
              f"between {Path(d['last_before']).name} and {Path(d['first_after']).name}, "
              f"statistic {d['largest']:.4g} against a limit of {d['gate']} x "
              f"{d['typical']:.3g} (pairs within the sides).", ""]
    return lines


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--heft", required=True)
    parser.add_argument("--work", required=True)
    parser.add_argument("--robots", type=int, default=3)
    parser.add_argument("--logs", type=int, default=20)
    parser.add_argument("--results", default=str(HERE / "results.md"))
    args = parser.parse_args()
    global HEFT
    HEFT = str(Path(args.heft).resolve())
    work = Path(args.work).resolve()
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    fusion = fusion_study(work, args)
    fusion["go2"] = go2_study(work)
    scaling = scaling_study(work)
    fusion["rows_long"] = evaluate(work / "scale-long-2")
    fusion["rows_long_logged"] = variant(work / "long-logs", work / "long-out-logged", "logged",
                                         [LOGGED], manifest="manifest40.yaml")
    fusion["rows_long_smooth"] = variant(work / "long-logs", work / "long-out-smooth-121",
                                         "smooth-121", [SMOOTH_LOGGED_WINDOW],
                                         manifest="manifest40.yaml")
    fleets = {"the fleet": fusion["rows"], "the second fleet": fusion["rows_check"],
              "the 30 s fleet": fusion["rows_long"], "go2": fusion["go2"]}
    fusion["better"] = {name: closer_than_best(rows) for name, rows in fleets.items()}
    # the three panda fleets with the fleet's job, and with the job before
    fusion["panda"] = fusion["rows"] + fusion["rows_check"] + fusion["rows_long"]
    fusion["logged"] = (fusion["rows_logged"] + fusion["rows_check_logged"]
                        + fusion["rows_long_logged"])
    fault = fault_study(work, scaling["manifest40"])
    drift = {"rows": drift_study(work), "two_arms": two_arms_as_one(work)}
    lines = markdown(args, fusion, scaling, fault, noop_task_s(), drift)
    Path(args.results).write_text("\n".join(lines))
    print("\n".join(lines))
    # no change reported on the fleets without one; every change of 20 g or more found where it
    # happened (the logs the gate left out between the two named ones may be on either side)
    quiet = all(r["drift"]["detected"] == "none" for rows in fleets.values() for r in rows)
    found = all(r["drift"]["detected"] != "none"
                and int(Path(r["drift"]["last_before"]).stem) < r["at"]
                <= int(Path(r["drift"]["first_after"]).stem)
                for r in drift["rows"] if r["added"] >= 0.02)
    no_false = all(r["drift"]["detected"] == "none" for r in drift["rows"] if r["added"] == 0)
    ok = (all(fusion["better"].values()) and nees_consistent(fusion["panda"]) and quiet
          and found and no_false
          and all(fault[c]["same"] and fault[c]["exit"] == 0 and fault[c]["attempts"] >= 2
                  for c in ("task", "worker")))
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
