"""The Python package heft, installed from its wheel into a fresh venv (install_wheel.sh), against
the C++ jobs and the CLI built beside it. Run by ctest (python.bindings) with that venv's python;
every test_* function is one case, and the script fails if any case fails."""

import json
import os
import shutil
import sys
import traceback
from pathlib import Path

import numpy as np

import heft

SOURCE = Path(os.environ["HEFT_SOURCE_DIR"])
SCRATCH = Path(os.environ["HEFT_SCRATCH"])
PANDA_LOG = SOURCE / "data" / "fixtures" / "sim_panda_friction_2s.h5"
PANDA_LINKS = [f"panda_link{i}" for i in range(1, 8)]


def expect_error(error_type, fragment, call):
    """call() raises error_type whose message contains fragment."""
    try:
        call()
    except error_type as error:
        assert fragment in str(error), f"'{fragment}' not in the message: {error}"
        return str(error)
    raise AssertionError(f"expected {error_type.__name__} containing '{fragment}'")


def test_the_package_runs_on_the_wheels_of_its_own_venv():
    # Pinocchio and MuJoCo come from this venv's wheels (the module's $ORIGIN RPATH), not from the
    # build tree's .deps; the robots from its example-robot-data.
    maps = Path("/proc/self/maps").read_text().splitlines()
    loaded = {line.split()[-1] for line in maps if "libpinocchio_default" in line or "libmujoco" in line}
    assert len(loaded) == 2, loaded
    for path in loaded:
        assert path.startswith(sys.prefix), f"{path} is not under {sys.prefix}"
    assert os.environ["HEFT_ROBOTS_DIR"].startswith(sys.prefix)
    assert Path(heft.__file__).resolve().is_relative_to(Path(sys.prefix).resolve())


def test_robot_loads_by_name_and_its_parameters_round_trip():
    robot = heft.load_robot("panda")
    assert not robot.has_free_flyer
    assert robot.joint_names[:7] == [f"panda_joint{i}" for i in range(1, 8)], robot.joint_names
    assert all(link in robot.body_names for link in PANDA_LINKS)
    pi = robot.pi("panda_link7")
    assert pi.shape == (10,) and pi[0] > 0
    robot.set_pi("panda_link7", pi * 1.5)
    assert np.allclose(robot.pi("panda_link7"), pi * 1.5, rtol=0, atol=1e-15)
    go2 = heft.load_robot("go2")
    assert go2.has_free_flyer and go2.nq == go2.nv + 1
    expect_error(heft.InputError, "panda", lambda: heft.load_robot("no-such-robot"))
    expect_error(heft.InputError, "expected 10", lambda: robot.set_pi("panda_link7", np.zeros(3)))


def test_a_log_made_from_numpy_round_trips_through_hdf5_and_csv():
    rng = np.random.default_rng(3)
    n = 50
    log = heft.Log()
    log.meta.robot = "panda"
    log.meta.base_type = "fixed"
    joints = heft.JointSeries()
    joints.time = np.arange(n) * 0.002
    panda = heft.load_robot("panda")
    joints.names = panda.joint_names  # seven arm joints and two fingers
    nj = len(joints.names)
    joints.q = rng.normal(size=(n, nj))
    joints.v = rng.normal(size=(n, nj))
    joints.tau = rng.normal(size=(n, nj))
    log.joints = joints
    imu = heft.ImuSeries()
    imu.time = np.arange(n // 2) * 0.004
    imu.gyro = rng.normal(size=(n // 2, 3))
    imu.accel = rng.normal(size=(n // 2, 3))
    log.imu = imu
    assert heft.validate_log(log) == ""
    assert heft.validate_log(log, panda) == ""
    for name in ("numpy.h5", "numpy-csv"):
        path = SCRATCH / name
        heft.write_log(log, str(path))
        back = heft.read_log(str(path))
        assert back.first_difference(log) == "", back.first_difference(log)
        assert np.array_equal(back.joints.q, joints.q)
        assert back.imu is not None and np.array_equal(back.imu.gyro, imu.gyro)
        assert back.mocap is None and back.truth is None
        # An existing output is never replaced silently.
        expect_error(heft.InputError, name, lambda: heft.write_log(log, str(path)))
    # A field read from a log is a view: writing into it changes the log.
    log.joints.q[0, 0] = 42.0
    assert log.joints.q[0, 0] == 42.0
    # Bad input names the field.
    log.joints.v = np.zeros((n - 1, nj))
    assert "joints/v" in heft.validate_log(log)
    expect_error(heft.InputError, "joints/v", lambda: heft.write_log(log, str(SCRATCH / "bad.h5")))
    expect_error(heft.InputError, "missing.h5", lambda: heft.read_log(str(SCRATCH / "missing.h5")))


def test_a_job_reads_a_dict_yaml_text_and_a_file_alike():
    config = {"robot": "panda", "log": str(PANDA_LOG), "method": "wls",
              "identify": {"bodies": PANDA_LINKS}}
    from_dict = heft.identify(config)
    yaml_text = "\n".join(["robot: panda", f"log: {PANDA_LOG}", "method: wls",
                           "identify:", f"  bodies: [{', '.join(PANDA_LINKS)}]"])
    from_text = heft.identify(yaml_text)
    path = SCRATCH / "identify.yaml"
    path.write_text(yaml_text + "\n")
    lines = []
    from_file = heft.run("identify", path, progress=lines.append)
    assert lines and all(isinstance(line, str) for line in lines)
    for other in (from_text, from_file):
        assert np.array_equal(from_dict.linear, other.linear)
        assert np.array_equal(from_dict.covariance, other.covariance)
    assert from_dict.status == from_dict.to_dict()["summary"]["status"] == "converged"
    assert from_dict.linear.shape == (70,) and len(from_dict.names) == 70
    # Least squares leaves what the data cannot see at std 0 (link1 of a fixed base: all but Izz).
    std = from_dict.std
    assert np.all(np.isfinite(std)) and np.all(std >= 0)
    assert np.count_nonzero(std) >= from_dict.rank > 0, (np.count_nonzero(std), from_dict.rank)
    written = from_dict.write(str(SCRATCH / "wls"))
    assert any(p.endswith("result.json") for p in written), written
    # Bad input: one error naming the field; a wrong type of config.
    bad = dict(config, methd="map")
    expect_error(heft.InputError, "methd", lambda: heft.identify(bad))
    expect_error(heft.InputError, "expected one of", lambda: heft.run("identfy", config))
    expect_error(heft.InputError, "expected a dict", lambda: heft.identify(42))


def test_the_filter_updated_per_sample_from_python_equals_heft_filter():
    log = heft.read_log(str(PANDA_LOG))
    job = heft.filter({"robot": "panda", "log": str(PANDA_LOG), "bodies": ["panda_link7"],
                       "baseline": False})
    series = job.traces[0].series
    ekf = heft.inertial_ekf("panda", ["panda_link7"])
    estimates, times = [], []
    j = log.joints
    for i in range(len(j.time)):
        status = ekf.update(j.time[i], j.q[i], j.v[i], j.tau[i])
        if status in (heft.UpdateStatus.Filling, heft.UpdateStatus.RejectedInput):
            continue
        times.append(ekf.estimate_time)
        estimates.append(ekf.estimate.copy())
    assert len(estimates) == len(series.time) > 100, (len(estimates), len(series.time))
    assert np.array_equal(np.array(times), series.time)
    assert np.array_equal(np.array(estimates), series.body_pi)
    # A bad option is an error naming it; bad samples are a status, never an exception.
    expect_error(heft.InputError, "joint_torque_std",
                 lambda: heft.inertial_ekf("panda", ["panda_link7"], joint_torque_std=-1.0))
    nan = np.full(j.q.shape[1], np.nan)
    assert ekf.update(j.time[-1] + 1.0, nan, nan, nan) == heft.UpdateStatus.RejectedInput
    short = np.zeros(3)  # the wrong size is a rejected sample too
    assert ekf.update(j.time[-1] + 2.0, short, short, short) == heft.UpdateStatus.RejectedInput


def test_a_legged_filter_projecting_contacts_per_sample_equals_heft_filter():
    # go2 with its base state estimated by heft (no truth input), the feet's unknown forces
    # projected out while they stand: the loop a legged robot's controller would run.
    path = SCRATCH / "legged" / "go2.h5"  # with result.json beside it
    heft.estimate_base_state("go2", SOURCE / "data" / "fixtures" / "sim_go2_payload_3kg_2s.h5",
                             {"smooth": False}).write(str(path))
    feet = ["FL_foot", "FR_foot", "RL_foot", "RR_foot"]
    points = [(foot, foot, np.zeros(3)) for foot in feet]
    job = heft.filter({"robot": "go2", "log": str(path), "bodies": ["base"], "baseline": False,
                       "base_state": "log", "contact_forces": "projected",
                       "contacts": [{"name": f, "frame": f, "offset": [0, 0, 0]} for f in feet]})
    series = job.traces[0].series
    robot = heft.load_robot("go2")
    ekf = heft.inertial_ekf(robot, ["base"], stance_contacts=points)
    assert ekf.stance_frames == feet and ekf.force_input_size == 4
    log = heft.read_log(str(path))
    j, c = log.joints, log.contacts
    assert np.array_equal(c.time, j.time)
    columns = [j.names.index(name) for name in robot.joint_names]
    stance = np.stack([c.flags[:, c.names.index(f)] for f in feet], axis=1).astype(float)
    q = np.hstack([j.base_pose, j.q[:, columns]])
    v = np.hstack([j.base_twist, j.v[:, columns]])
    tau = np.hstack([np.zeros((len(j.time), 6)), j.tau[:, columns]])
    estimates = []
    for i in range(len(j.time)):
        status = ekf.update(j.time[i], q[i], v[i], tau[i], stance[i])
        if status not in (heft.UpdateStatus.Filling, heft.UpdateStatus.RejectedInput):
            estimates.append(ekf.estimate.copy())
    assert len(estimates) == len(series.time) > 100, (len(estimates), len(series.time))
    # heft filter normalizes the logged base quaternions again (their norms are 1 within 2.2e-16):
    # the two runs differ by that rounding only (3.6e-15 kg measured on a 7 kg estimate).
    gap = np.abs(np.array(estimates) - series.body_pi).max()
    assert gap <= 1e-12 * np.abs(series.body_pi).max(), gap


def test_simulate_gives_a_log_with_progress_and_writes_it():
    lines = []
    sim = heft.simulate("panda-friction", duration=1.0, seed=5, progress=lines.append)
    assert sim.ok, sim.report()
    assert sim.log.truth is not None and sim.log.joints.q.shape[1] == 9
    out = SCRATCH / "sim.h5"
    sim.write(str(out))
    assert heft.read_log(str(out)).first_difference(sim.log) == ""
    expect_error(heft.InputError, "no-such-scenario", lambda: heft.simulate("no-such-scenario"))


def test_base_state_predict_and_a_scenario_file_run_from_python():
    go2_log = SOURCE / "data" / "fixtures" / "sim_go2_payload_3kg_2s.h5"
    base = heft.estimate_base_state("go2", go2_log, {"smooth": True})
    pose = base.log.joints.base_pose
    assert pose.shape == (len(base.log.joints.time), 7) and np.all(np.isfinite(pose))
    assert "base" in base.report().lower()
    written = base.write(str(SCRATCH / "base-state" / "go2.h5"))
    assert heft.read_log(written[0]).first_difference(base.log) == ""
    expect_error(heft.InputError, "smoth", lambda: heft.estimate_base_state("go2", go2_log,
                                                                           {"smoth": True}))
    expect_error(heft.InputError, "no such options file",
                 lambda: heft.estimate_base_state("go2", go2_log, SCRATCH / "missing.yaml"))
    # predict: the identified model of a fit against the nominal one, on the same log.
    # seven links on a 2 s log leave a flat valley: LM runs to its step tolerance in both the fit
    # and the fusion below, so the two are compared at their minimum, not where the default
    # relative-cost tolerance happens to stop each
    config = {"robot": "panda", "log": str(PANDA_LOG), "method": "map",
              "identify": {"bodies": PANDA_LINKS},
              "map": {"function_tolerance": 1e-13, "max_iterations": 2000}}
    fit = heft.identify(config)
    assert fit.writable, fit.refusal
    fit.write(str(SCRATCH / "fit"))
    # fuse: the fit's information.json alone, fused, is the fit again
    job = SCRATCH / "fit.yaml"
    job.write_text(json.dumps(config))
    fused = heft.fuse({"identify": str(job), "runs": [str(SCRATCH / "fit")]})
    assert fused.to_dict()["method"] == "fused-map", fused.report()
    for body, p in fit.to_dict()["parameters"].items():
        assert abs(fused.to_dict()["parameters"][body]["mass"] - p["mass"]) < 1e-3 * p["mass"]
    prediction = heft.predict({"robot": str(SCRATCH / "fit" / "robot.urdf"), "base": "fixed",
                               "result": str(SCRATCH / "fit" / "result.json"), "nominal": "panda",
                               "log": str(PANDA_LOG), "ranges": [[1.4, 1.9]]})
    assert prediction.status == "completed" and prediction.to_dict()
    assert any(p.endswith("result.json") for p in prediction.write(str(SCRATCH / "predict")))
    # heft's MuJoCo model of the panda with the fit's inertials in it (heft mjcf --robot).
    model = SCRATCH / "panda-identified.xml"
    heft.export_simulation_model("panda", str(model), result_json=str(SCRATCH / "fit" / "result.json"))
    assert "<mujoco" in model.read_text()
    expect_error(heft.InputError, "exists",
                 lambda: heft.export_simulation_model("panda", str(model)))
    # A scenario file runs like a built-in scenario.
    scenario = SOURCE / "data" / "scenarios" / "double-pendulum.yaml"
    sim = heft.simulate(scenario, duration=0.5, seed=2)
    assert sim.ok and sim.log.joints.q.shape[1] == 2, sim.report()


def test_the_tools_say_what_they_need():
    # heft.report needs matplotlib (the 'tools' extra), which this venv does not have.
    expect_error(heft.SolveError, "heft[tools]",
                 lambda: heft.report([str(SCRATCH / "wls")], str(SCRATCH / "report.html")))


def main():
    shutil.rmtree(SCRATCH, ignore_errors=True)
    SCRATCH.mkdir(parents=True)
    cases = [(name, f) for name, f in globals().items() if name.startswith("test_")]
    failed = []
    for name, case in cases:
        try:
            case()
            print(f"[ ok ] {name}")
        except Exception:  # noqa: BLE001 (report every case, then fail)
            failed.append(name)
            print(f"[FAIL] {name}\n{traceback.format_exc()}")
    print(f"{len(cases) - len(failed)} of {len(cases)} passed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
