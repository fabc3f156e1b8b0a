"""heft: physically consistent inertial, friction and actuator identification for robots.

The Python face of heft's C++ jobs (docs/python.md). Every job takes its config as a dict, as YAML
text or as the path of a YAML file (the same keys as the CLI's config files, docs/guide/) and
returns the job's result object; ``result.write(folder)`` writes what the CLI writes.

    import heft
    result = heft.identify({"robot": "panda", "log": "panda.h5", ...})
    print(result.report())

Bad input raises heft.InputError (a ValueError) naming the file, line or field; a computation that
cannot run raises heft.SolveError (a RuntimeError); a solve that stops without converging is a
result with that status.
"""

import json
import os
import sys
from pathlib import Path

_here = Path(__file__).resolve().parent

# An installed package uses the example-robot-data wheel beside it, and runs heft import's and
# heft report's tools (tools/) with this interpreter, unless the environment says otherwise.
_robots = _here.parent / "cmeel.prefix" / "share" / "example-robot-data" / "robots"
if _robots.is_dir():
    os.environ.setdefault("HEFT_ROBOTS_DIR", str(_robots))
if (_here / "tools").is_dir():
    os.environ.setdefault("HEFT_PYTHON", sys.executable)
    os.environ.setdefault("HEFT_PYTHON_DIR", str(_here / "tools"))

from ._heft import (  # noqa: E402  (the environment above must be set before the module loads)
    BaseStateResult,
    ContactSeries,
    EstimateResult,
    EstimateSeries,
    ExciteResult,
    ExploreResult,
    FilterResult,
    FilterTrace,
    ForceTorqueSeries,
    IdentifyResult,
    ImportResult,
    ImuSeries,
    InertialEkf,
    InertialEkfOptions,
    InputError,
    JointSeries,
    Log,
    Metadata,
    MocapSeries,
    PredictResult,
    Robot,
    SampleResult,
    SimulateResult,
    SolveError,
    TruthSeries,
    UpdateStatus,
    export_mjcf,
    export_simulation_model,
    known_robots,
    load_robot,
    read_log,
    scenarios,
    validate_log,
    write_log,
)
from . import _heft

__version__ = "0.1.0"

JOBS = ("identify", "estimate", "filter", "sample", "predict", "excite", "explore", "fuse")


def _plain(value):
    """numpy scalars and arrays (and paths) in a config dict, as JSON values."""
    if hasattr(value, "tolist"):
        return value.tolist()
    if isinstance(value, os.PathLike):
        return os.fspath(value)
    raise TypeError(f"config: a {type(value).__name__} has no YAML form")


def _config_source(config, base_dir):
    """(text, source, base_dir) of a dict, a YAML string or a path to a YAML file; None for a file
    (the C++ loader reads it, so that its errors name the file's lines)."""
    if isinstance(config, dict):
        # YAML reads JSON: a dict goes through the same parser and checks as a config file.
        text = json.dumps(config, indent=1, default=_plain)
        return text, "<dict>", str(base_dir or os.getcwd())
    if isinstance(config, os.PathLike):
        return None
    if isinstance(config, str) and "\n" not in config and (os.path.exists(config)
                                                         or ":" not in config):
        return None
    if isinstance(config, str):
        return config, "<yaml>", str(base_dir or os.getcwd())
    raise InputError(
        f"config: expected a dict, YAML text or a path to a YAML file, got {type(config).__name__}")


def _read_config_file(path, what):
    """(text, source, folder) of a YAML file, for the jobs whose C++ side takes text only."""
    path = Path(path)
    if not path.is_file():
        raise InputError(f"{path}: no such {what} file (expected a YAML file)")
    return path.read_text(), str(path), str(path.resolve().parent)


def run(job, config, *, base_dir=None, progress=None):
    """Runs the job `job` (one of heft.JOBS) on `config` (dict, YAML text or file path).

    Relative paths in a dict or YAML text are relative to base_dir (default: the working folder);
    in a file, to the file's folder. progress: a callable receiving each progress line (the CLI's
    stderr lines), or None for silence.
    """
    if job not in JOBS:
        raise InputError(f"job '{job}': expected one of {', '.join(JOBS)}")
    parsed = _config_source(config, base_dir)
    if parsed is None:
        return getattr(_heft, f"_{job}_file")(os.fspath(config), progress)
    text, source, folder = parsed
    return getattr(_heft, f"_{job}_text")(text, source, folder, progress)


def identify(config, **kwargs):
    """heft identify: inertial, friction and actuator parameters with their uncertainty."""
    return run("identify", config, **kwargs)


def estimate(config, **kwargs):
    """heft estimate: MAP estimation over a trajectory (multiple shooting, Riccati)."""
    return run("estimate", config, **kwargs)


def filter(config, **kwargs):  # noqa: A001  (the CLI's name for the job)
    """heft filter: the online EKF replayed over a log, sample by sample."""
    return run("filter", config, **kwargs)


def sample(config, **kwargs):
    """heft sample: CMA-ES over MuJoCo rollouts of log clips."""
    return run("sample", config, **kwargs)


def predict(config, **kwargs):
    """heft predict: held-out torque prediction of identified models."""
    return run("predict", config, **kwargs)


def fuse(config, **kwargs):
    """heft fuse: several identify runs of one robot (their information.json) in one estimate."""
    return run("fuse", config, **kwargs)


def excite(config, **kwargs):
    """heft excite: an exciting trajectory for a fixed-base arm."""
    return run("excite", config, **kwargs)


def explore(config, **kwargs):
    """heft explore: active exploration (sample, then excite the uncertain parameters)."""
    return run("explore", config, **kwargs)


def simulate(scenario, *, duration=None, seed=None, noise=None, force_torque=False, progress=None):
    """heft simulate: a built-in scenario by name (heft.scenarios()) or a scenario file, simulated
    in MuJoCo. Returns a SimulateResult: .ok, .log, .write("log.h5")."""
    is_file = isinstance(scenario, os.PathLike) or os.path.sep in str(scenario) or str(
        scenario).endswith((".yaml", ".yml"))
    return _heft._simulate(os.fspath(scenario), is_file, duration, seed, noise, force_torque,
                           progress)


def _require_tools(job, modules):
    """The tool of `job` runs in this interpreter (unless HEFT_PYTHON names another): say what to
    install rather than let the tool fail on an import."""
    if os.environ.get("HEFT_PYTHON") != sys.executable:
        return
    import importlib.util

    missing = [name for name in modules if importlib.util.find_spec(name) is None]
    if missing:
        raise SolveError(f"heft.{job} needs {', '.join(missing)}: pip install 'heft[tools]'")


def report(folders, out, *, overwrite=False):
    """heft report: one offline HTML page over result folders (identify, sample, estimate, filter)
    of one robot. Needs the 'tools' extra (matplotlib, h5py). Returns the page's path."""
    _require_tools("report", ("matplotlib", "h5py"))
    if isinstance(folders, (str, os.PathLike)):
        folders = [folders]
    return _heft.report([os.fspath(f) for f in folders], os.fspath(out), overwrite=overwrite)


def import_bag(bag, mapping, *, base_dir=None, progress=None):
    """heft import: a ROS 2 bag (sqlite3 or MCAP) read through `mapping` (dict, YAML text or file
    path; docs/guide/import.md). Needs the 'tools' extra (rosbags). Returns an ImportResult."""
    _require_tools("import_bag", ("rosbags",))
    parsed = _config_source(mapping, base_dir)
    text, source, folder = _read_config_file(mapping, "mapping") if parsed is None else parsed
    return _heft._import_bag(os.fspath(bag), text, source, folder, progress)


def estimate_base_state(robot, log, options=None, *, progress=None):
    """heft base-state: base pose and twist from the IMU and leg kinematics. `options`: dict, YAML
    text or file path (docs/guide/base-state.md) or None for the defaults."""
    text, source = "", "<defaults>"
    if options is not None:
        parsed = _config_source(options, None)
        text, source, _ = _read_config_file(options, "options") if parsed is None else parsed
    return _heft._base_state(os.fspath(robot), os.fspath(log), text, source, progress)


def inertial_ekf(robot, bodies, *, contacts=(), wrench_frames=(), stance_contacts=(), prior=None,
                 **options):
    """An InertialEkf on `robot` (a heft.Robot or a name / path) for the named bodies.

    contacts: (name, frame, offset) points whose world-frame forces update() receives;
    wrench_frames: frames of measured wrenches (force/torque sensors); stance_contacts:
    (name, frame, offset) points whose unknown forces are projected out while their frame stands
    (update()'s force input then holds one stance flag per frame, ekf.stance_frames). Keyword
    options are InertialEkfOptions fields (state='linear-pi', joint_torque_std=0.2, ...).
    """
    if not isinstance(robot, Robot):
        robot = load_robot(os.fspath(robot))
    opts = InertialEkfOptions()
    for key, value in options.items():
        if not hasattr(opts, key):
            raise InputError(f"inertial_ekf: unknown option '{key}'")
        setattr(opts, key, value)
    import numpy as np

    pi = np.zeros(0) if prior is None else np.asarray(prior, dtype=float)
    return InertialEkf(robot, list(bodies), contacts=list(contacts),
                       wrench_frames=list(wrench_frames), stance_contacts=list(stance_contacts),
                       prior=pi, options=opts)


__all__ = [
    "BaseStateResult",
    "ContactSeries",
    "EstimateResult",
    "EstimateSeries",
    "ExciteResult",
    "ExploreResult",
    "FilterResult",
    "FilterTrace",
    "ForceTorqueSeries",
    "IdentifyResult",
    "ImportResult",
    "ImuSeries",
    "InertialEkf",
    "InertialEkfOptions",
    "InputError",
    "JOBS",
    "JointSeries",
    "Log",
    "Metadata",
    "MocapSeries",
    "PredictResult",
    "Robot",
    "SampleResult",
    "SimulateResult",
    "SolveError",
    "TruthSeries",
    "UpdateStatus",
    "estimate",
    "estimate_base_state",
    "excite",
    "explore",
    "export_mjcf",
    "export_simulation_model",
    "filter",
    "identify",
    "import_bag",
    "inertial_ekf",
    "known_robots",
    "load_robot",
    "predict",
    "read_log",
    "report",
    "run",
    "sample",
    "scenarios",
    "simulate",
    "validate_log",
    "write_log",
]
