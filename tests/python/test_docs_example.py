"""docs/python.md's first example, run as written with the installed wheel (ctest python.docs_example),
then `heft identify` on the same config: every number of the two result.json files must agree to
1e-12, and robot.urdf and torques.csv must be the same bytes."""

import json
import math
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

SOURCE = Path(os.environ["HEFT_SOURCE_DIR"])
CLI = os.environ["HEFT_CLI"]
SCRATCH = Path(os.environ["HEFT_SCRATCH"])
TOLERANCE = 1e-12
# Keys whose values differ between two runs by nature: wall times, and where files were written
# (cli-id/robot.urdf against panda-id/robot.urdf).
NOT_COMPARED = {"time_s", "path"}


def numeric_differences(a, b, path=""):
    """(largest relative difference, mismatches) over the leaves of two JSON values."""
    if isinstance(a, dict) and isinstance(b, dict):
        if set(a) - NOT_COMPARED != set(b) - NOT_COMPARED:
            return math.inf, [f"{path}: keys {sorted(set(a) ^ set(b))}"]
        worst, bad = 0.0, []
        for key in a:
            if key in NOT_COMPARED:
                continue
            d, m = numeric_differences(a[key], b[key], f"{path}/{key}")
            worst, bad = max(worst, d), bad + m
        return worst, bad
    if isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            return math.inf, [f"{path}: lengths {len(a)} vs {len(b)}"]
        worst, bad = 0.0, []
        for i, (x, y) in enumerate(zip(a, b)):
            d, m = numeric_differences(x, y, f"{path}[{i}]")
            worst, bad = max(worst, d), bad + m
        return worst, bad
    if isinstance(a, (int, float)) and isinstance(b, (int, float)) and not isinstance(a, bool):
        d = abs(a - b) / max(1.0, abs(a), abs(b))
        return d, ([f"{path}: {a!r} vs {b!r}"] if d > TOLERANCE else [])
    return 0.0, ([] if a == b else [f"{path}: {a!r} vs {b!r}"])


def main():
    shutil.rmtree(SCRATCH, ignore_errors=True)
    SCRATCH.mkdir(parents=True)
    os.chdir(SCRATCH)
    blocks = re.findall(r"```python\n(.*?)```", (SOURCE / "docs" / "python.md").read_text(), re.S)
    example = blocks[0]
    print(f"docs/python.md example: {len(example.strip().splitlines())} lines")
    namespace = {"__name__": "__main__"}
    exec(compile(example, str(SOURCE / "docs" / "python.md"), "exec"), namespace)
    result, config = namespace["result"], namespace["config"]
    assert result.status in ("converged", "max-iterations"), result.status

    # The CLI on the same config (JSON is YAML), from a file in the same folder: same relative paths.
    Path("config.yaml").write_text(json.dumps(config, indent=1))
    subprocess.run([CLI, "identify", "config.yaml", "--out", "cli-id", "--quiet"], check=True,
                   stdout=subprocess.DEVNULL)
    cli = json.loads(Path("cli-id/result.json").read_text())
    python_written = json.loads(Path("panda-id/result.json").read_text())
    failures = []
    # to_dict() is the result before write() adds where the URDF went (the `urdf` entry) and what
    # the URDF writer warned about (appended to `warnings`).
    in_memory = result.to_dict()
    if cli["warnings"][:len(in_memory["warnings"])] != in_memory["warnings"]:
        failures.append("result.to_dict() warnings are not the first of result.json's")
    in_memory.update(urdf=cli["urdf"], warnings=cli["warnings"])
    for label, other in (("result.to_dict()", in_memory), ("panda-id/result.json", python_written)):
        worst, bad = numeric_differences(cli, other)
        print(f"CLI result.json vs {label}: largest relative difference {worst:.3g}")
        failures += [f"{label} {m}" for m in bad[:10]]
    for name in ("robot.urdf", "torques.csv"):
        same = Path("cli-id", name).read_bytes() == Path("panda-id", name).read_bytes()
        print(f"{name}: {'same bytes' if same else 'DIFFERENT'}")
        if not same:
            failures.append(f"{name} differs")
    if failures:
        print("\n".join(failures))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
