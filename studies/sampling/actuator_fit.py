"""The command-torque fit of docs/sampling.md: eq. 3, tau_log = gain kappa tanh(tau_cmd / kappa)
+ offset, fitted per go2 motor group to a log's commanded and measured joint torques alone
(Gauss-Newton in log gain and log kappa), with no offset, one offset per joint, or (several logs)
one per joint and log. It is no heft command: it shows what the logged torques say about kappa.

    build/bin/heft simulate go2-actuator --seed 1 --out a1.h5   # and seeds 2, 3
    .deps/venv-tools/bin/python studies/sampling/actuator_fit.py a1.h5
    # two recordings identified together (the active-exploration study's stage 2, whose logs
    # build/bin/test_exploration_long leaves in build/test-scratch/exploration_long/):
    .deps/venv-tools/bin/python studies/sampling/actuator_fit.py --together stage1_*.h5 active_*.h5
"""
import argparse

import h5py
import numpy as np

GROUPS = {g: [f"{leg}_{g}_joint" for leg in ("FL", "FR", "RL", "RR")]
          for g in ("hip", "thigh", "calf")}
TRUE_KAPPA = {"hip": 20.0, "thigh": 20.0, "calf": 15.0}  # src/sim/scenario.cpp, go2-actuator


def read(path, joints):
    with h5py.File(path, "r") as f:
        names = [n.decode() if isinstance(n, bytes) else n for n in f["joints/names"][()]]
        columns = [names.index(j) for j in joints]
        return f["joints/tau_cmd"][()][:, columns], f["joints/tau"][()][:, columns]


def fit(logs, offsets):
    """logs: [(u, tau)] with N x 4 arrays; offsets: "none", "shared" or "per-log".
    Returns gain, kappa and kappa's std (residual-scaled Gauss-Newton covariance)."""
    per_log = offsets == "per-log"
    count = 0 if offsets == "none" else 4 * (len(logs) if per_log else 1)
    x = np.concatenate([[0.0, np.log(25.0)], np.zeros(count)])
    for _ in range(300):
        gain, kappa = np.exp(x[0]), np.exp(x[1])
        rows, residuals = [], []
        for i, (u, tau) in enumerate(logs):
            bend = np.tanh(u / kappa)
            first = 2 + 4 * (i if per_log else 0)
            b = x[first:first + 4] if count else np.zeros(4)
            residuals.append((gain * kappa * bend + b - tau).ravel())
            columns = [(gain * kappa * bend).ravel(),
                       (gain * (kappa * bend - u * (1 - bend**2))).ravel()]
            for j in range(count):
                e = np.zeros_like(u)
                if j // 4 == (i if per_log else 0):
                    e[:, j % 4] = 1
                columns.append(e.ravel())
            rows.append(np.stack(columns, 1))
        J, r = np.vstack(rows), np.concatenate(residuals)
        step = np.clip(np.linalg.lstsq(J, -r, rcond=None)[0], -0.3, 0.3)  # damped far away
        x += step
        x[1] = min(x[1], np.log(400.0))
        if np.abs(step).max() < 1e-12:
            break
    sigma2 = r @ r / (len(r) - J.shape[1])
    kappa_std = np.sqrt(sigma2 * np.linalg.inv(J.T @ J)[1, 1]) * np.exp(x[1])
    return np.exp(x[0]), np.exp(x[1]), kappa_std


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("logs", nargs="+")
    parser.add_argument("--together", action="store_true",
                        help="fit the logs as one identification (shared and per-log offsets)")
    args = parser.parse_args()
    batches = [args.logs] if args.together else [[p] for p in args.logs]
    for paths in batches:
        modes = ("shared", "per-log") if args.together else ("none", "shared")
        for group, joints in GROUPS.items():
            logs = [read(p, joints) for p in paths]
            reach = max(np.abs(u).max() for u, _ in logs) / TRUE_KAPPA[group]
            for mode in modes:
                gain, kappa, std = fit(logs, mode)
                error = 100 * (kappa / TRUE_KAPPA[group] - 1)
                print(f"{' + '.join(paths)}  {group:5s}  reach {reach:.2f}  offsets {mode:7s}  "
                      f"gain {gain:.4f}  kappa {kappa:6.2f} N m ({error:+.1f} %, std {std:.2f})")


if __name__ == "__main__":
    main()
