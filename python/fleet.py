"""heft fleet MANIFEST --out DIR: every log of a fleet identified on a Dask cluster, one fused
estimate per robot, a report (docs/guide/fleet.md).

`heft fleet` runs this with .deps/venv-tools' Python and passes its own path as --heft. Each log is
one task: `heft identify JOB --log LOG` into a folder keyed by the hashes of the log, the job
config and the heft binary, renamed into place when the task ends, so a rerun skips what is done
and a killed task leaves nothing half written. Then `heft fuse` per robot over the runs that
succeeded, in manifest order (the same manifest gives the same fusion whichever worker finished
first). Exit 2: a bad manifest; exit 1: a robot without a fused estimate; 0 otherwise (failed logs
are reported in fleet.json and the report, never fatal).
"""

import argparse
import base64
import collections.abc
import hashlib
import html
import io
import json
import logging
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import yaml

SCHEMA_VERSION = 1
ID_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
# Test hooks, documented in docs/fleet.md: "kill-task:<log file name>" kills the first heft process
# of that log's task mid-run (a task lost under the local cluster); "kill-worker:<log file name>"
# makes the first attempt kill its own worker process (a worker lost on a cluster of worker
# processes, --scheduler).
FAULT_ENV = "HEFT_FLEET_FAULT"
# A heft process ended by a signal (the kernel's OOM killer, a kill) runs again this many times.
SIGNAL_RETRIES = 1


class ManifestError(Exception):
    pass


# ---- manifest -------------------------------------------------------------------------------------


class _UniqueKeyLoader(yaml.SafeLoader):
    """PyYAML keeps the last of two equal keys without a word; a manifest that names one twice is
    bad input, as in heft's other configs."""

    def construct_mapping(self, node, deep=False):
        seen = set()
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=deep)
            if not isinstance(key, collections.abc.Hashable):
                continue  # the base class names an unhashable key
            if key in seen:
                raise ManifestError(f"{self.name}:{key_node.start_mark.line + 1}: {key!r} is given "
                                    "twice in the same mapping")
            seen.add(key)
        return super().construct_mapping(node, deep=deep)


def _expect(condition, where, expected, got):
    if not condition:
        raise ManifestError(f"{where}: expected {expected}, got {got!r}")


def _mapping_keys(node, where, allowed):
    _expect(isinstance(node, dict), where, "a mapping", type(node).__name__)
    for key in node:
        if key not in allowed:
            raise ManifestError(
                f"{where}: unknown key {key!r} (expected one of {', '.join(sorted(allowed))};"
                " docs/guide/fleet.md)")


def _logs_of(node, where, base):
    """A list of log paths, or a folder whose *.h5 files (sorted by name) are the logs."""
    if isinstance(node, str):
        folder = (base / node).resolve()
        if not folder.is_dir():
            raise ManifestError(f"{where}: expected a list of logs or a folder, got {node!r} "
                                "(no such folder)")
        logs = sorted(p for p in folder.iterdir() if p.suffix == ".h5")
        if not logs:
            raise ManifestError(f"{where}: the folder {node!r} holds no .h5 log")
        return logs
    _expect(isinstance(node, list) and node and all(isinstance(p, str) for p in node), where,
            "a non-empty list of log paths or a folder", node)
    return [(base / p).resolve() for p in node]


def load_manifest(path):
    path = Path(path)
    try:
        text = path.read_text()
    except OSError as e:
        raise ManifestError(f"{path}: cannot read ({e.strerror})")
    try:
        loader = _UniqueKeyLoader(text)
        loader.name = str(path)
        try:
            data = loader.get_single_data()
        finally:
            loader.dispose()
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        line = f":{mark.line + 1}" if mark is not None else ""
        raise ManifestError(f"{path}{line}: not valid YAML ({getattr(e, 'problem', e)})")
    where = str(path)
    _mapping_keys(data, where, {"job", "robots", "workers", "fuse", "task_timeout_s"})
    base = path.resolve().parent
    _expect("job" in data and isinstance(data["job"], str), f"{where}: job",
            "the heft identify config every log runs with", data.get("job"))
    job = (base / data["job"]).resolve()
    if not job.is_file():
        raise ManifestError(f"{where}: job: no such file {data['job']!r}")
    workers = data.get("workers")
    _expect(workers is None or (isinstance(workers, int) and workers >= 1), f"{where}: workers",
            "an integer >= 1", workers)
    timeout = data.get("task_timeout_s")
    _expect(timeout is None or (isinstance(timeout, (int, float)) and timeout > 0),
            f"{where}: task_timeout_s", "a number of seconds > 0", timeout)
    fuse = data.get("fuse") or {}
    _mapping_keys(fuse, f"{where}: fuse", {"outlier_gate", "drift_gate", "scale_by_dispersion"})
    gate = fuse.get("outlier_gate", 10)
    _expect(isinstance(gate, (int, float)) and gate >= 0, f"{where}: fuse.outlier_gate",
            "a number >= 0", gate)
    drift_gate = fuse.get("drift_gate", 10)
    _expect(isinstance(drift_gate, (int, float)) and drift_gate >= 0,
            f"{where}: fuse.drift_gate", "a number >= 0", drift_gate)
    scale = fuse.get("scale_by_dispersion", True)
    _expect(isinstance(scale, bool), f"{where}: fuse.scale_by_dispersion", "true or false", scale)
    robots = data.get("robots")
    _expect(isinstance(robots, list) and robots, f"{where}: robots",
            "a non-empty list of {id, logs}", robots)
    seen = set()
    out = []
    for i, robot in enumerate(robots):
        rw = f"{where}: robots[{i}]"
        _mapping_keys(robot, rw, {"id", "logs", "job"})
        rid = robot.get("id")
        _expect(isinstance(rid, str) and ID_PATTERN.match(rid), f"{rw}.id",
                "a name of letters, digits, '.', '_', '-'", rid)
        if rid in seen:
            raise ManifestError(f"{rw}.id: {rid!r} is used twice")
        seen.add(rid)
        _expect("logs" in robot, f"{rw}.logs", "a list of logs or a folder", None)
        robot_job = job
        if "job" in robot:
            _expect(isinstance(robot["job"], str), f"{rw}.job", "a path", robot["job"])
            robot_job = (base / robot["job"]).resolve()
            if not robot_job.is_file():
                raise ManifestError(f"{rw}.job: no such file {robot['job']!r}")
        out.append({"id": rid, "job": robot_job, "logs": _logs_of(robot["logs"], f"{rw}.logs",
                                                                   base)})
    return {"path": path.resolve(), "workers": workers, "outlier_gate": float(gate),
            "drift_gate": float(drift_gate), "scale_by_dispersion": scale,
            "task_timeout_s": timeout, "robots": out}


# ---- tasks ----------------------------------------------------------------------------------------


def _hash_path(h, path):
    path = Path(path)
    if path.is_dir():
        for p in sorted(path.rglob("*")):
            if p.is_file():
                h.update(str(p.relative_to(path)).encode())
                _hash_path(h, p)
    elif path.is_file():
        with open(path, "rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                h.update(block)
    else:
        h.update(b"<missing>" + str(path).encode())


def task_key(heft_digest, job, log):
    h = hashlib.sha256()
    h.update(heft_digest.encode())
    _hash_path(h, job)
    h.update(b"\0")
    _hash_path(h, log)
    return h.hexdigest()


def _write_json_atomically(path, data):
    path = Path(path)
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    tmp.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n")
    os.replace(tmp, path)


def _last_line(text):
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return lines[-1] if lines else ""


def _task_env():
    """heft's environment on a worker. Dask sets MALLOC_TRIM_THRESHOLD_ for its Python worker
    processes; heft's allocator runs 10 % slower with it (docs/fleet.md). One OpenMP thread per
    task: a fleet gives each core its own task (the local cluster's worker threads inherit no
    OMP_NUM_THREADS from Dask, and two heft processes with two spinning OpenMP threads each ran
    seven times slower)."""
    env = {k: v for k, v in os.environ.items() if k != "MALLOC_TRIM_THRESHOLD_"}
    env["OMP_NUM_THREADS"] = "1"
    return env


def _first_attempt(state_dir, fault, log):
    """True once per log for the fault hook `fault` (a marker file in state_dir)."""
    if os.environ.get(FAULT_ENV, "") != f"{fault}:{Path(log).name}":
        return False
    marker = Path(state_dir) / f"{fault}-{Path(log).name}"
    if marker.exists():
        return False
    marker.parent.mkdir(parents=True, exist_ok=True)
    marker.write_text(f"the first attempt ran with the fault hook {fault}\n")
    return True


def _run_heft(cmd, timeout, kill_first):
    """One heft process: (exit code, stdout, stderr); a negative code is the signal that ended
    it. `kill_first` kills it mid-run (the kill-task hook)."""
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=_task_env())
    if kill_first:
        time.sleep(0.05)
        proc.kill()
    try:
        stdout, stderr = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        raise
    return proc.returncode, stdout, stderr


def identify_task(heft, job, log, run_dir, state_dir, timeout=None):
    """Runs on a worker: heft identify into a scratch folder, renamed to run_dir when done. Each
    attempt leaves a file in state_dir/attempts (a task or worker lost mid-task shows as a second
    one). A heft process ended by a signal runs again (SIGNAL_RETRIES); a worker process lost
    mid-task is the scheduler's to retry."""
    run_dir = Path(run_dir)
    attempts = Path(state_dir) / "attempts"
    attempts.mkdir(parents=True, exist_ok=True)

    def new_attempt():
        (attempts / f"{run_dir.parent.name}-{run_dir.name}-{os.getpid()}-{time.time_ns()}").touch()

    new_attempt()
    if _first_attempt(state_dir, "kill-worker", log):
        os.kill(os.getpid(), signal.SIGKILL)
    kill_first = _first_attempt(state_dir, "kill-task", log)
    scratch = run_dir.parent / f".{run_dir.name}.tmp-{os.getpid()}-{time.time_ns()}"
    scratch.mkdir(parents=True)
    cmd = [heft, "identify", str(job), "--log", str(log), "--out", str(scratch / "out"), "--quiet"]
    start = time.perf_counter()
    try:
        code, stdout, stderr = _run_heft(cmd, timeout, kill_first)
        for _ in range(SIGNAL_RETRIES):
            if code >= 0:
                break
            new_attempt()
            shutil.rmtree(scratch / "out", ignore_errors=True)
            code, stdout, stderr = _run_heft(cmd, timeout, False)
        status = {0: "identified", 1: "failed", 2: "bad input"}.get(code, "crashed")
        message = "" if code == 0 else _last_line(stderr) or (
            f"heft identify ended by signal {-code}" if code < 0 else f"exit {code}")
    except subprocess.TimeoutExpired:
        code, stdout, status = None, "", "timed out"
        message = f"heft identify ran longer than task_timeout_s = {timeout} s and was stopped"
    elapsed = time.perf_counter() - start
    record = {"log": str(log), "exit_code": code, "status": status, "message": message,
              "task_s": elapsed}
    out = scratch / "out"
    out.mkdir(exist_ok=True)
    (out / "report.txt").write_text(stdout)
    _write_json_atomically(out / "task.json", {k: v for k, v in record.items() if k != "task_s"})
    if run_dir.exists():
        shutil.rmtree(run_dir)  # an earlier attempt that did not finish
    os.replace(out, run_dir)
    shutil.rmtree(scratch, ignore_errors=True)
    return record


def _done(run_dir):
    """A finished task leaves task.json (the exit of a deterministic program: not rerun); one
    stopped by task_timeout_s runs again (the limit may have changed)."""
    task = Path(run_dir) / "task.json"
    return task.is_file() and json.loads(task.read_text())["status"] != "timed out"


def start_cluster(workers, scheduler=None):
    """A local cluster of `workers` threads in this process, or the running cluster at
    `scheduler` (tcp://host:8786; docs/fleet.md: its workers must see the same files at the same
    paths). A task is a heft process; the threads only wait for it. Worker processes beside
    this one took two cores' time from the tasks: 1 vs 2 workers' wall ratio 1.72 against 1.86
    with threads, the cluster's start 0.72 against 0.29 s (docs/fleet.md)."""
    try:
        from dask.distributed import Client, LocalCluster
    except ImportError as e:
        raise SystemExit(f"heft fleet: failed: {e.name} is missing from {sys.prefix}: `make deps` "
                         "installs requirements-tools.txt there (or set HEFT_PYTHON)")

    if scheduler:
        client = Client(scheduler, timeout=30)
        return client, None
    cluster = LocalCluster(n_workers=1, threads_per_worker=workers, processes=False,
                           dashboard_address=None, silence_logs=logging.CRITICAL)
    return Client(cluster), cluster


def run_tasks(client, todo, heft, workers, out, timeout):
    """The identify tasks not done yet, on the cluster. Returns their timing."""
    from dask.distributed import as_completed
    from distributed.scheduler import KilledWorker

    start = time.perf_counter()
    futures = {}
    for t in todo:
        future = client.submit(identify_task, heft, str(t["job"]), str(t["log"]),
                               str(t["run_dir"]), str(out / ".state"), timeout,
                               key=f"identify-{t['robot']}-{t['key']}", pure=False)
        futures[future] = t
    task_s = []
    for future in as_completed(list(futures)):
        t = futures[future]
        try:
            record = future.result()
            task_s.append(record["task_s"])
            print(f"heft fleet: {t['robot']} {Path(t['log']).name}: {record['status']}"
                  + (f" ({record['message']})" if record["message"] else ""), flush=True)
        except KilledWorker as e:
            # the scheduler gave up after the workers running it died repeatedly: reported, and
            # left without task.json so that a rerun tries again
            t["lost"] = f"lost: its workers died ({e})"
            print(f"heft fleet: {t['robot']} {Path(t['log']).name}: {t['lost']}", flush=True)
    end = time.perf_counter()
    timing = {"task_phase_s": end - start, "task_s": task_s}
    if task_s:
        timing["overhead_per_task_s"] = max(0.0, (end - start) * workers - sum(task_s)) / len(
            task_s)
    return timing


# ---- fusion ---------------------------------------------------------------------------------------


def fuse_robot(robot_id, job, runs, heft, out, gate, drift_gate, scale_by_dispersion):
    """heft fuse over the robot's identified runs (manifest order), in robots/<id>/. Returns the
    summary and, per run folder, what the fusion made of it."""
    folder = out / "robots" / robot_id
    folder.mkdir(parents=True, exist_ok=True)
    for name in ("result.json", "robot.urdf", "information.json", "report.txt"):
        (folder / name).unlink(missing_ok=True)  # never report an earlier run's fusion
    usable = [r for r in runs if r["status"] == "identified"
              and (Path(r["run"]) / "information.json").is_file()]
    summary = {"folder": str(folder.relative_to(out)), "runs": len(usable)}
    if not usable:
        summary.update({"status": "not fused", "message": "no log of this robot was identified"})
        return summary, {}
    config = {"identify": str(job), "runs": [r["run"] for r in usable],
              "truth_log": usable[0]["log"], "outliers": {"gate": gate},
              "drift": {"gate": drift_gate}, "dispersion": {"scale": scale_by_dispersion}}
    (folder / "fuse.yaml").write_text(
        "# written by heft fleet: the runs of this robot that were identified\n"
        + yaml.safe_dump(config, sort_keys=False))
    proc = subprocess.run([heft, "fuse", str(folder / "fuse.yaml"), "--out", str(folder),
                           "--overwrite", "--quiet"], capture_output=True, text=True,
                          env=_task_env())
    (folder / "report.txt").write_text(proc.stdout)
    summary["exit_code"] = proc.returncode
    if not (folder / "result.json").is_file():
        summary.update({"status": "not fused", "message": _last_line(proc.stderr)})
        return summary, {}
    result = json.loads((folder / "result.json").read_text())
    summary["status"] = "fused" if proc.returncode == 0 else "fused, not written"
    summary["message"] = result["summary"]["message"] if proc.returncode == 0 else _last_line(
        proc.stderr)
    summary["result"] = str((folder / "result.json").relative_to(out))
    summary["unseen"] = [w for w in result.get("warnings", []) if "not seen by the data" in w]
    summary["dispersion"] = result["fusion"]["dispersion"]
    drift = result["fusion"].get("drift", {})
    if drift.get("ran"):
        log_of = {str(Path(r["run"]).resolve()): r["log"] for r in usable}
        name = lambda run: Path(log_of.get(str(Path(run).resolve()), run)).name if run else None
        summary["drift"] = {"detected": drift["detected"], "largest": drift["largest"],
                            "typical": drift["typical"], "gate": drift["gate"],
                            "last_before": name(drift["last_before"]),
                            "first_after": name(drift["first_after"])}
    updates = {}
    for f in result["fusion"]["runs"]:
        update = {"used_in_fusion": f["used"], "excess": f["excess"]}
        if not f["used"]:
            update["left_out_because"] = f["left_out_because"]
        updates[str(Path(f["folder"]).resolve())] = update
    return summary, updates


# ---- report ---------------------------------------------------------------------------------------


def _figure_png(robot, runs, fused):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    bodies = list(fused["parameters"]) if fused else []
    if not bodies:
        return None
    quantities = [("mass", "mass [kg]", None)] + [("com", f"COM {a} [m]", i)
                                                 for i, a in enumerate("xyz")]
    fig, axes = plt.subplots(len(bodies), 4, figsize=(13, 2.6 * len(bodies)), squeeze=False)
    for b, body in enumerate(bodies):
        for q, (key, label, index) in enumerate(quantities):
            ax = axes[b][q]
            xs, ys, es, colors = [], [], [], []
            for i, r in enumerate(runs):
                res = r.get("result_json")
                if not res or body not in res.get("parameters", {}):
                    continue
                p = res["parameters"][body]
                xs.append(i)
                ys.append(p[key] if index is None else p[key][index])
                es.append(p["std"][key] if index is None else p["std"][key][index])
                colors.append("C0" if r.get("used_in_fusion", False) else "C3")
            ax.errorbar(xs, ys, yerr=es, fmt="none", ecolor="0.6", lw=1)
            ax.scatter(xs, ys, c=colors, s=14, zorder=3)
            p = fused["parameters"][body]
            value = p[key] if index is None else p[key][index]
            std = p["std"][key] if index is None else p["std"][key][index]
            ax.axhspan(value - std, value + std, color="C2", alpha=0.25, lw=0)
            ax.axhline(value, color="C2", lw=1.2, label="fused")
            ax.set_title(f"{body}: {label}", fontsize=9)
            ax.set_xlabel("log (manifest order)", fontsize=8)
            ax.tick_params(labelsize=7)
    fig.tight_layout()
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=90)
    plt.close(fig)
    return base64.b64encode(buffer.getvalue()).decode()


def write_report(out, fleet):
    parts = ["<!doctype html><meta charset='utf-8'><title>heft fleet</title>",
             "<style>body{font-family:sans-serif;max-width:1300px;margin:auto}"
             "td,th{padding:2px 8px;text-align:left;font-size:13px}"
             ".bad{color:#b00}.out{color:#c60}</style>",
             f"<h1>heft fleet: {html.escape(Path(fleet['manifest']).name)}</h1>",
             "<p>Per robot: each log's estimate (blue: used in the fusion, red: left out) with its "
             "one-sigma bar, the fused estimate and its one-sigma band (green). Logs in manifest "
             "order: a drift (a battery change, a worn gear) shows as a trend.</p>"]
    for robot in fleet["robots"]:
        fused = None
        if robot["fusion"].get("result"):
            fused = json.loads((out / robot["fusion"]["result"]).read_text())
        for r in robot["logs"]:
            path = Path(r["run"]) / "result.json"
            r["result_json"] = json.loads(path.read_text()) if path.is_file() else None
        parts.append(f"<h2>{html.escape(robot['id'])}</h2>")
        f = robot["fusion"]
        parts.append(f"<p>fusion: <b>{html.escape(f['status'])}</b> "
                     f"({html.escape(str(f.get('message', '')))}), "
                     f"{f['runs']} identified log(s)</p>")
        if fused and "truth_errors" in fused:
            rows = "".join(
                f"<tr><td>{html.escape(b)}</td><td>{e['mass_relative']:.4%}</td>"
                f"<td>{e['com_error_m'] * 1e3:.3f}</td><td>{e['inertia_relative']:.2%}</td></tr>"
                for b, e in fused["truth_errors"]["bodies"].items())
            parts.append("<table><tr><th>fused vs truth</th><th>mass</th><th>COM [mm]</th>"
                         f"<th>inertia</th></tr>{rows}</table>")
        png = _figure_png(robot["id"], robot["logs"], fused)
        if png:
            parts.append(f"<img src='data:image/png;base64,{png}' style='width:100%'>")
        rows = []
        for r in robot["logs"]:
            cls = "bad" if r["status"] != "identified" else (
                "out" if not r.get("used_in_fusion", True) else "")
            note = r.get("message") or r.get("left_out_because", "")
            excess = f"{r['excess']:.3g}" if "excess" in r else ""
            rows.append(f"<tr class='{cls}'><td>{html.escape(Path(r['log']).name)}</td>"
                        f"<td>{html.escape(r['status'])}</td><td>{excess}</td>"
                        f"<td>{html.escape(note)}</td></tr>")
        parts.append("<table><tr><th>log</th><th>status</th><th>excess</th><th>note</th></tr>"
                     + "".join(rows) + "</table>")
        drift = f.get("drift")
        if drift:
            parts.append("<p>drift: " + (
                "no change between consecutive logs" if drift["detected"] == "none" else
                f"<b>the robot changed between {html.escape(drift['last_before'])} and "
                f"{html.escape(drift['first_after'])}</b> ({html.escape(drift['detected'])}); "
                + ("the fused estimate is the robot after the change"
                   if drift["detected"] == "left-out head" else
                   "the fused estimate does not describe the robot as it is now: fuse the logs "
                   "after the change alone")) + "</p>")
        d = f.get("dispersion")
        if d and d["degrees_of_freedom"] > 0:
            parts.append(f"<p>dispersion of the used logs about their common estimate: S² "
                         f"{d['ratio']:.3g} over {d['degrees_of_freedom']} degrees of freedom "
                         "(about 1 when they scatter as their covariances say); "
                         + (f"the fused covariance is scaled by {d['scale']:.3g}"
                            if d["scale"] > 1 else "the fused covariance is the data's")
                         + "</p>")
        unseen = f.get("unseen", [])
        parts.append("<p>unidentified: " + (html.escape("; ".join(unseen)) if unseen else
                                             "every parameter direction is seen by the data")
                     + "</p>")
        for r in robot["logs"]:
            r.pop("result_json", None)
    page = out / "fleet.html"
    tmp = page.with_name(f".fleet.html.tmp-{os.getpid()}")
    tmp.write_text("\n".join(parts) + "\n")
    os.replace(tmp, page)


# ---- main -----------------------------------------------------------------------------------------


def main(argv=None):
    parser = argparse.ArgumentParser(prog="heft fleet")
    parser.add_argument("manifest")
    parser.add_argument("--out", required=True)
    parser.add_argument("--heft", required=True, help="the heft executable")
    parser.add_argument("--workers", type=int, default=0, help="0: the manifest's, else the cores")
    parser.add_argument("--no-report", action="store_true")
    parser.add_argument("--scheduler", default="", help="a running Dask scheduler's address")
    args = parser.parse_args(argv)
    try:
        manifest = load_manifest(args.manifest)
    except ManifestError as e:
        print(f"heft fleet: error: {e}", file=sys.stderr)
        return 2
    # a bad job config is the manifest's bad input: refused before any task runs
    for job in dict.fromkeys(robot["job"] for robot in manifest["robots"]):
        proc = subprocess.run([args.heft, "identify", str(job), "--check"], capture_output=True,
                              text=True)
        if proc.returncode != 0:
            message = _last_line(proc.stderr).removeprefix("heft identify: error: ")
            print(f"heft fleet: error: {args.manifest}: job: {message}", file=sys.stderr)
            return 2 if proc.returncode == 2 else 1
    if os.environ.get(FAULT_ENV, "").startswith("kill-worker:") and not args.scheduler:
        print(f"heft fleet: error: {FAULT_ENV}=kill-worker needs a cluster of worker processes "
              "(--scheduler): the local cluster's workers are threads of heft fleet itself",
              file=sys.stderr)
        return 2
    workers = args.workers or manifest["workers"] or os.cpu_count() or 1
    out = Path(args.out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    h = hashlib.sha256()
    _hash_path(h, args.heft)
    heft_digest = h.hexdigest()

    keys = []
    for robot in manifest["robots"]:
        keys += [(robot, log) for log in robot["logs"]]
    with ThreadPoolExecutor(max_workers=workers) as pool:  # hashing releases the GIL
        digests = list(pool.map(lambda rl: task_key(heft_digest, rl[0]["job"], rl[1]), keys))
    tasks = []
    first_with = {}  # (robot, key) -> the log that first had these bytes and job
    for (robot, log), key in zip(keys, digests):
        run_dir = out / "runs" / robot["id"] / f"{Path(log).stem}-{key[:16]}"
        task = {"robot": robot["id"], "job": robot["job"], "log": log, "key": key,
                "run_dir": run_dir}
        # the same recording twice would count its information twice in the fusion
        task["duplicate_of"] = first_with.setdefault((robot["id"], key), log)
        tasks.append(task)
    todo = [t for t in tasks if t["duplicate_of"] == t["log"] and not _done(t["run_dir"])]
    timing = {"workers": workers, "tasks_run": len(todo), "tasks_skipped": len(tasks) - len(todo)}
    client = cluster = None
    if todo:
        started = time.perf_counter()
        try:
            client, cluster = start_cluster(workers, args.scheduler)
        except ValueError as e:  # Dask's parse of the address
            print(f"heft fleet: error: --scheduler: {e}", file=sys.stderr)
            return 2
        except OSError as e:  # nothing answered there: maybe down, maybe the wrong address
            print(f"heft fleet: failed: --scheduler {args.scheduler}: no Dask scheduler answered "
                  f"({e}); nothing was run", file=sys.stderr)
            return 1
        timing["cluster_start_s"] = time.perf_counter() - started
        if args.scheduler:
            workers = timing["workers"] = len(client.scheduler_info()["workers"])
        timing.update(run_tasks(client, todo, args.heft, workers, out,
                                manifest["task_timeout_s"]))

    runs_of = {}
    for robot in manifest["robots"]:
        runs = []
        for t in (t for t in tasks if t["robot"] == robot["id"]):
            entry = {"log": str(t["log"]), "run": str(t["run_dir"])}
            task_file = t["run_dir"] / "task.json"
            if t["duplicate_of"] != t["log"]:
                entry.update({"status": "duplicate", "exit_code": None,
                              "message": f"the same bytes as {Path(t['duplicate_of']).name}: not "
                                         "run, not fused (its information would count twice)"})
            elif task_file.is_file():
                record = json.loads(task_file.read_text())
                entry.update({"status": record["status"], "exit_code": record["exit_code"],
                              "message": record["message"]})
            else:
                entry.update({"status": "lost", "exit_code": None,
                              "message": t.get("lost", "the task did not finish")})
            prefix = f"{t['run_dir'].parent.name}-{t['run_dir'].name}-"
            attempts = out / ".state" / "attempts"
            entry["attempts"] = sum(1 for p in attempts.glob(prefix + "*")) if attempts.is_dir() \
                else 0
            runs.append(entry)
        runs_of[robot["id"]] = runs

    # one heft fuse per robot: on the cluster when there is one (robots in parallel)
    started = time.perf_counter()
    calls = [(robot["id"], robot["job"], runs_of[robot["id"]], args.heft, out,
              manifest["outlier_gate"], manifest["drift_gate"], manifest["scale_by_dispersion"])
             for robot in manifest["robots"]]
    if client is not None:
        fusions = client.gather([client.submit(fuse_robot, *c, pure=False) for c in calls])
        client.close()
        if cluster is not None:
            cluster.close()
    else:
        fusions = [fuse_robot(*c) for c in calls]
    timing["fusion_s"] = time.perf_counter() - started

    fleet = {"schema_version": SCHEMA_VERSION, "manifest": str(manifest["path"]),
             "outlier_gate": manifest["outlier_gate"], "drift_gate": manifest["drift_gate"],
             "scale_by_dispersion": manifest["scale_by_dispersion"],
             "robots": []}
    exit_code = 0
    for robot, (fusion, updates) in zip(manifest["robots"], fusions):
        runs = runs_of[robot["id"]]
        for r in runs:
            r.update(updates.get(str(Path(r["run"]).resolve()), {}))
        if fusion["status"] != "fused":
            exit_code = 1
        print(f"heft fleet: {robot['id']}: {fusion['status']}"
              + (f" ({fusion['message']})" if fusion.get("message") else ""), flush=True)
        drift = fusion.get("drift", {})
        if drift.get("detected", "none") != "none":
            print(f"heft fleet: {robot['id']}: the robot changed between {drift['last_before']} "
                  f"and {drift['first_after']} ({drift['detected']})", flush=True)
        for r in runs:
            if r.get("left_out_because"):
                print(f"heft fleet: {robot['id']}: left out {Path(r['log']).name}: "
                      f"{r['left_out_because']}", flush=True)
        fleet["robots"].append({"id": robot["id"], "job": str(robot["job"]), "logs": runs,
                                "fusion": fusion})
    _write_json_atomically(out / "fleet.json", fleet)
    _write_json_atomically(out / "timing.json", timing)
    if not args.no_report:
        write_report(out, fleet)
    print(f"heft fleet: wrote {out / 'fleet.json'}" +
          ("" if args.no_report else f" and {out / 'fleet.html'}"), flush=True)
    return exit_code


if __name__ == "__main__":
    sys.exit(main())
