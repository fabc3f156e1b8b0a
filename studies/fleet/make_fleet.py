"""A simulated fleet to run `heft fleet` on (docs/guide/fleet.md): panda arms, each with its own
tool (mass, COM, box) and joint friction, each log with its own excitation (Fourier coefficient
seed), noise seed, torque-sensor offsets (drawn per log: a sensor zeroed anew at every boot) and
length; per robot one broken log (an HDF5 file cut in half) and one log of its neighbour (same
model, other tool: a log filed under the wrong robot); robot 0 also gets a double-pendulum log
(another model). With --change-at K, every robot's tool is CHANGE_MASS kg heavier from its log K
on (a gripper or battery swapped: drift). Writes DIR/scenarios/, DIR/logs/<robot>/,
DIR/identify.yaml, DIR/manifest.yaml.

    python make_fleet.py --heft build/bin/heft --out DIR [--robots 3] [--logs 20] [--duration 8]
        [--change-at K --change-mass KG]
"""

import argparse
import random
import shutil
import subprocess
from pathlib import Path

TOOLS = [  # mass [kg], COM [m], box [m]: what each robot carries on panda_link7
    (1.2, (0.02, 0.0, 0.12), (0.08, 0.06, 0.10)),
    (0.7, (-0.03, 0.02, 0.08), (0.06, 0.06, 0.06)),
    (1.8, (0.0, -0.03, 0.15), (0.10, 0.08, 0.12)),
    (0.9, (0.04, 0.03, 0.10), (0.07, 0.05, 0.08)),
]
FRICTION = {"panda_joint1": (0.3, 0.5, 0.05), "panda_joint2": (0.3, 0.5, 0.05),
            "panda_joint3": (0.3, 0.5, 0.05), "panda_joint4": (0.3, 0.5, 0.05),
            "panda_joint5": (0.1, 0.2, 0.02), "panda_joint6": (0.1, 0.2, 0.02),
            "panda_joint7": (0.1, 0.2, 0.02)}

IDENTIFY = """# The heft identify config every log of the fleet runs with (heft fleet replaces `log`).
robot: panda
log: logs/placeholder.h5
method: map
identify:
  bodies: [panda_link7]     # the tool's link: its parameters include the tool
  payload: [panda_link7]    # wide prior: the tool is unknown
  friction: all
  armature: all
  torque_offsets: all       # per log: heft fuse marginalizes them run by run
preparation:
  # the job docs/guide/fleet.md recommends for fleets: velocities from the acceleration's fit and
  # a window wider than a single log's best (81, docs/identify.md). Fusion averages the logs'
  # noise out but keeps what they share, the errors in the regressor's velocities and
  # accelerations (studies/fleet/results.md, "Why the fused covariance is too small")
  window: 161
  order: 3
  smooth_velocity: true
  decimation: 5
problem:
  min_speed: 0.05
"""


def scenario(robot, duration, rng, added_mass=0.0):
    mass, com, box = TOOLS[robot % len(TOOLS)]
    mass = round(mass + added_mass, 6)
    wear = 1.0 + 0.15 * robot  # each arm's joints wear differently
    lines = [f"name: fleet-arm{robot}", "robot: panda", f"duration: {duration}",
             "noise: {base: nominal, torque_bias: 0.3}", "model:", "  joint_friction:"]
    for joint, (damping, loss, armature) in FRICTION.items():
        lines.append(f"    {joint}: {{damping: {damping * wear:.3f}, frictionloss: {loss}, "
                     f"armature: {armature}}}")
    lines += ["  payloads:",
              f"    - {{name: tool, body: panda_link7, mass: {mass}, com: {list(com)}, "
              f"box: {list(box)}}}",
              "motion:", "  type: fourier", f"  coefficient_seed: {rng.randrange(1, 10**6)}",
              "bounds:", "  max_tracking_error: 0.2"]
    return "\n".join(lines) + "\n"


def simulate(heft, scenario_file, log, seed):
    """True when the run stayed within the scenario's bounds (exit 1: it lost tracking)."""
    proc = subprocess.run([heft, "simulate", str(scenario_file), "--out", str(log), "--seed",
                           str(seed), "--quiet", "--overwrite"], capture_output=True, text=True)
    if proc.returncode not in (0, 1):
        raise SystemExit(proc.stderr)
    return proc.returncode == 0


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--heft", required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--robots", type=int, default=3)
    parser.add_argument("--logs", type=int, default=20)
    parser.add_argument("--duration", type=float, default=8)
    parser.add_argument("--seed", type=int, default=2026)
    parser.add_argument("--change-at", type=int, default=-1, help="first log with the changed tool")
    parser.add_argument("--change-mass", type=float, default=0.0, help="added tool mass [kg]")
    args = parser.parse_args()
    out = Path(args.out)
    rng = random.Random(args.seed)
    (out / "scenarios").mkdir(parents=True, exist_ok=True)
    for robot in range(args.robots):
        folder = out / "logs" / f"arm{robot}"
        folder.mkdir(parents=True, exist_ok=True)
        for i in range(args.logs):
            # lengths vary: a real fleet's recordings do
            duration = round(args.duration * rng.uniform(0.75, 1.25), 2)
            file = out / "scenarios" / f"arm{robot}-{i:02d}.yaml"
            # an excitation the arm cannot track with its tool is not recorded: draw another
            for _ in range(10):
                added = args.change_mass if 0 <= args.change_at <= i else 0.0
                file.write_text(scenario(robot, duration, rng, added))
                if simulate(args.heft, file, folder / f"{i:02d}.h5", rng.randrange(1, 10**6)):
                    break
            else:
                raise SystemExit(f"{file}: ten excitations in a row lost tracking")
    for robot in range(args.robots):
        folder = out / "logs" / f"arm{robot}"
        data = (folder / "00.h5").read_bytes()
        (folder / "90-broken.h5").write_bytes(data[: len(data) // 2])
        neighbour = out / "logs" / f"arm{(robot + 1) % args.robots}" / "01.h5"
        shutil.copyfile(neighbour, folder / "91-neighbour.h5")
    subprocess.run([args.heft, "simulate", "double-pendulum", "--out",
                    str(out / "logs" / "arm0" / "92-other-model.h5"), "--duration", "3",
                    "--quiet", "--overwrite"], check=True)
    (out / "identify.yaml").write_text(IDENTIFY)
    manifest = ["# The simulated fleet: one entry per arm, its logs a folder (every .h5 in it).",
                "job: identify.yaml", "robots:"]
    for robot in range(args.robots):
        manifest += [f"  - id: arm{robot}", f"    logs: logs/arm{robot}"]
    (out / "manifest.yaml").write_text("\n".join(manifest) + "\n")


if __name__ == "__main__":
    main()
