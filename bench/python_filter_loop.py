"""The online filter driven from Python, one update() per sample, against the same filter's C++
replay in the same run (heft.filter's update_median_us): what a Python control loop pays for the
binding. Run with the interpreter of a venv that has the heft wheel (make test leaves one):
    build/python/venv/bin/python bench/python_filter_loop.py
Prints the median over 7 passes of the Python loop's time per sample, the C++ median, their ratio."""

import statistics
import sys
import time
from pathlib import Path

import heft

log_path = str(Path(__file__).resolve().parent.parent / "data" / "fixtures" / "sim_panda_friction_2s.h5")
config = {"robot": "panda", "log": log_path, "bodies": ["panda_link7"], "baseline": False}
joints = heft.read_log(log_path).joints
time_s, q, v, tau = joints.time, joints.q, joints.v, joints.tau
passes = []
cpp = []
for _ in range(7):
    cpp.append(heft.filter(config).traces[0].update_median_us)
    ekf = heft.inertial_ekf("panda", ["panda_link7"])
    start = time.perf_counter()
    for i in range(len(time_s)):
        ekf.update(time_s[i], q[i], v[i], tau[i])
    passes.append((time.perf_counter() - start) / len(time_s) * 1e6)
python_us, cpp_us = statistics.median(passes), statistics.median(cpp)
print(f"panda, 1 body, {len(time_s)} samples: Python loop {python_us:.2f} us per sample (median of "
      f"7 passes), C++ update {cpp_us:.2f} us (median), ratio {python_us / cpp_us:.2f}")
sys.exit(0)
