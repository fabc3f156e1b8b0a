"""mujoco.sysid (MuJoCo's own identification module) on a heft log: the peer row of studies/peer.

Used the way MuJoCo's documentation and tests show: the model as an MjSpec with motor actuators
and joint position / velocity sensors, the log cut into chunks that each start from the logged
state and replay the logged joint torques open loop, ParameterDict with box bounds (the
pseudo-inertia parametrization for bodies, damping / frictionloss / armature for joints), and
sysid.optimize (Gauss-Newton over rollouts, finite-difference Jacobians, no prior).

    python mujoco_sysid.py --model MODEL.xml --log LOG.h5 --out OUT.json \
        --bodies b1,b2 --joints j1,j2 [--chunk 0.5] [--max-iters 30] [--threads 2]

MODEL.xml is heft's simulation model of the robot (`heft mjcf --robot NAME`), with the start
inertials patched in. Reads the log's joints group (and, on a floating base, joints/base_pose and
joints/base_twist, which the caller fills from heft base-state: never the truth group). Writes
OUT.json: per body its pi (heft's layout: m, m c, Ixx Ixy Iyy Ixz Iyz Izz about the body frame),
per joint damping, frictionloss and armature, and the time the optimization took.
"""
import argparse
import json
import os
import sys
import time

import h5py
import mujoco
from mujoco import sysid
import numpy as np


def read_log(path):
    with h5py.File(path, "r") as f:
        j = f["joints"]
        log = {
            "time": np.asarray(j["time"], dtype=float),
            "names": [n.decode() if isinstance(n, bytes) else str(n) for n in j["names"][()]],
            "q": np.asarray(j["q"], dtype=float),
            "v": np.asarray(j["v"], dtype=float),
            "tau": np.asarray(j["tau"], dtype=float),
        }
        if "tau_cmd" in j:
            log["tau_cmd"] = np.asarray(j["tau_cmd"], dtype=float)
        if "base_pose" in j:
            log["base_pose"] = np.asarray(j["base_pose"], dtype=float)
            log["base_twist"] = np.asarray(j["base_twist"], dtype=float)
    return log


def add_actuators_and_sensors(spec, joints):
    """A motor per logged joint (ctrl = the logged torque) and its position and velocity sensors;
    the model's own sensors (heft's IMU) are removed: the residual compares these only. No base
    pose sensors: mujoco.sysid normalizes each residual column by the norm of its measured signal,
    and a base's x, y and quaternion x, y, z hover near zero (those columns would swamp the rest)."""
    for sensor in list(spec.sensors):
        spec.delete(sensor)
    for name in joints:
        act = spec.add_actuator(name=name + "_motor", target=name,
                                trntype=mujoco.mjtTrn.mjTRN_JOINT)
        act.gainprm[0] = 1.0
        act.ctrllimited = mujoco.mjtLimited.mjLIMITED_FALSE
    for name in joints:
        spec.add_sensor(name=name + "_pos", type=mujoco.mjtSensor.mjSENS_JOINTPOS,
                        objtype=mujoco.mjtObj.mjOBJ_JOINT, objname=name)
    for name in joints:
        spec.add_sensor(name=name + "_vel", type=mujoco.mjtSensor.mjSENS_JOINTVEL,
                        objtype=mujoco.mjtObj.mjOBJ_JOINT, objname=name)


def free_root(spec):
    """The name of the body with the free joint, or None (a fixed base)."""
    model = spec.compile()
    for j in range(model.njnt):
        if model.jnt_type[j] == mujoco.mjtJoint.mjJNT_FREE:
            return model.body(model.jnt_bodyid[j]).name
    return None


def free_joint(model):
    for j in range(model.njnt):
        if model.jnt_type[j] == mujoco.mjtJoint.mjJNT_FREE:
            return j
    return -1


def full_state(model, log, k):
    """qpos, qvel of sample k in MuJoCo's order (the free joint's twist: world linear velocity,
    body angular velocity, as MuJoCo's free joint takes them)."""
    qpos = np.array(model.qpos0)
    qvel = np.zeros(model.nv)
    fj = free_joint(model)
    if fj >= 0:
        pose = log["base_pose"][k]
        adr, dadr = model.jnt_qposadr[fj], model.jnt_dofadr[fj]
        qpos[adr:adr + 3] = pose[:3]
        qpos[adr + 3:adr + 7] = [pose[6], pose[3], pose[4], pose[5]]  # w x y z
        R = np.zeros(9)
        mujoco.mju_quat2Mat(R, qpos[adr + 3:adr + 7])
        twist = log["base_twist"][k]  # base frame
        qvel[dadr:dadr + 3] = R.reshape(3, 3) @ twist[:3]
        qvel[dadr + 3:dadr + 6] = twist[3:]
    for c, name in enumerate(log["names"]):
        jid = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_JOINT, name)
        qpos[model.jnt_qposadr[jid]] = log["q"][k, c]
        qvel[model.jnt_dofadr[jid]] = log["v"][k, c]
    return qpos, qvel


def chunks(log, model, chunk_s, control_key):
    t = log["time"]
    starts = np.arange(t[0], t[-1] - chunk_s + 1e-9, chunk_s)
    out = []
    for s in starts:
        idx = np.where((t >= s - 1e-12) & (t < s + chunk_s - 1e-12))[0]
        if idx.size < 3:
            continue
        k0 = idx[0]
        qpos, qvel = full_state(model, log, k0)
        state = sysid.create_initial_state(model, qpos, qvel)
        times = t[idx] - t[k0]
        control = sysid.TimeSeries(times, log[control_key][idx])
        sensors = np.hstack([log["q"][idx], log["v"][idx]])
        sensordata = sysid.TimeSeries.from_names(times, sensors, model)
        out.append((state, control, sensordata))
    return out


def ground_base(model, log):
    """The base heights shifted, sample by sample, so that the lowest foot sphere stands on the
    floor (z = 0): an estimated base state has no absolute height, and a chunk started above or
    inside the floor falls or bounces (heft sample grounds its clips the same way)."""
    spheres = [g for g in range(model.ngeom)
               if model.geom_type[g] == mujoco.mjtGeom.mjGEOM_SPHERE and model.geom_bodyid[g] > 0
               and (model.geom_contype[g] or model.geom_conaffinity[g])]
    if not spheres:
        return
    data = mujoco.MjData(model)
    for k in range(log["base_pose"].shape[0]):
        data.qpos[:], _ = full_state(model, log, k)
        mujoco.mj_kinematics(model, data)
        lowest = min(data.geom_xpos[g, 2] - model.geom_size[g, 0] for g in spheres)
        log["base_pose"][k, 2] -= lowest


def body_pi(model, name):
    b = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_BODY, name)
    m = float(model.body_mass[b])
    c = np.array(model.body_ipos[b])
    R = np.zeros(9)
    mujoco.mju_quat2Mat(R, model.body_iquat[b])
    R = R.reshape(3, 3)
    Ic = R @ np.diag(model.body_inertia[b]) @ R.T
    I = Ic + m * (c @ c * np.eye(3) - np.outer(c, c))
    return [m, *(m * c), I[0, 0], I[0, 1], I[1, 1], I[0, 2], I[1, 2], I[2, 2]]


def joint_setter(joint, field):
    def modify(spec, param):
        value = float(param.value[0])
        current = getattr(spec.joint(joint), field)
        if isinstance(current, np.ndarray):  # MuJoCo 3.8's damping: [linear, higher orders]
            current[0] = value
            setattr(spec.joint(joint), field, current)
        else:
            setattr(spec.joint(joint), field, value)
    return modify


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", required=True)
    ap.add_argument("--log", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--bodies", default="")
    ap.add_argument("--joints", default="")
    ap.add_argument("--chunk", type=float, default=0.5, help="seconds per replayed chunk")
    ap.add_argument("--max-iters", type=int, default=30)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--control", choices=["tau", "tau_cmd"], default="tau_cmd",
                    help="the torques replayed: the commanded ones (default, when the log has "
                         "them) or the measured ones")
    ap.add_argument("--damping", type=float, default=0.05, help="start viscous [N m s/rad]")
    ap.add_argument("--frictionloss", type=float, default=0.2, help="start Coulomb [N m]")
    ap.add_argument("--armature", type=float, default=0.01, help="start armature [kg m^2]")
    args = ap.parse_args()

    log = read_log(args.log)
    spec = mujoco.MjSpec.from_file(args.model)
    root = free_root(spec)
    add_actuators_and_sensors(spec, log["names"])
    model = spec.compile()
    if root and "base_pose" not in log:
        sys.exit(f"{args.log}: joints/base_pose: a floating base needs the base state "
                 "(heft base-state fills it)")

    bodies = [b for b in args.bodies.split(",") if b]
    joints = [j for j in args.joints.split(",") if j]
    params = sysid.ParameterDict()
    for b in bodies:
        params.add(sysid.body_inertia_param(spec, model, b, sysid.InertiaType.Pseudo))
    starts = {"damping": args.damping, "frictionloss": args.frictionloss,
              "armature": args.armature}
    upper = {"damping": 5.0, "frictionloss": 5.0, "armature": 0.5}
    for j in joints:
        for field in ("damping", "frictionloss", "armature"):
            params.add(sysid.Parameter(f"{j}_{field}", nominal=starts[field], min_value=0.0,
                                       max_value=upper[field],
                                       modifier=joint_setter(j, field)))
    start_model = sysid.apply_param_modifiers(params, spec.copy())

    control_key = args.control if args.control in log else "tau"
    if root:
        ground_base(start_model, log)
    data = chunks(log, start_model, args.chunk, control_key)
    ms = sysid.ModelSequences("peer", spec, [f"chunk{i}" for i in range(len(data))],
                              [d[0] for d in data], [d[1] for d in data],
                              [d[2] for d in data])
    residual_fn = sysid.build_residual_fn(models_sequences=[ms], n_threads=args.threads)
    x0 = params.as_vector()
    r0 = np.concatenate(residual_fn(x0, params.copy())[0])
    t0 = time.perf_counter()
    opt, result = sysid.optimize(initial_params=params, residual_fn=residual_fn,
                                 optimizer="mujoco", verbose=False, max_iters=args.max_iters)
    seconds = time.perf_counter() - t0
    r1 = np.concatenate(residual_fn(opt.as_vector(), opt.copy())[0])

    final = sysid.apply_param_modifiers(opt, spec.copy())
    out = {
        "method": "mujoco.sysid",
        "mujoco_version": mujoco.__version__,
        "optimizer": "mujoco",
        "control": control_key,
        "chunks": len(data),
        "chunk_s": args.chunk,
        "max_iters": args.max_iters,
        "threads": args.threads,
        "time_s": seconds,
        "cost_start": float(r0 @ r0),
        "cost_final": float(r1 @ r1),
        "bodies": {b: {"pi": body_pi(final, b)} for b in bodies},
        "joints": {},
    }
    for j in joints:
        jid = mujoco.mj_name2id(final, mujoco.mjtObj.mjOBJ_JOINT, j)
        out["joints"][j] = {
            "damping": float(final.dof_damping[final.jnt_dofadr[jid]]),
            "frictionloss": float(final.dof_frictionloss[final.jnt_dofadr[jid]]),
            "armature": float(final.dof_armature[final.jnt_dofadr[jid]]),
        }
    tmp = args.out + ".tmp"
    with open(tmp, "w") as f:
        json.dump(out, f, indent=1)
    os.replace(tmp, args.out)


if __name__ == "__main__":
    main()
