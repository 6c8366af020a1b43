"""Instructions per quick estimate, counted with callgrind (load does not change them).

    python bench/count_instructions.py            # cold and warm
    python bench/count_instructions.py cold       # one workload

The scenarios are ``bench_engine.matched_configs()``'s 160 (llm-analysis must be installed
to pick them; they are built once, outside valgrind, and handed to the child as JSON).
For each workload, ``valgrind --tool=callgrind`` runs a child Python (GC off, hash seed 0,
one OpenBLAS thread: numpy's idle workers spin, and callgrind counts every thread) that
evaluates every scenario's quick estimate (``estimate_dict``: memory only) in 1 pass, then
another child that does 3 passes; the figure is the difference of the two totals over
2 x the number of scenarios, so import and set-up cancel. Workloads:

- ``cold``: ``memo.forget()`` before each call (every engine memo cleared: inputs never seen);
- ``warm``: no clearing (every pass after the first sees scenarios it has seen).

Prints ``workload: N instructions per call`` (millions). Needs valgrind on PATH.
"""

from __future__ import annotations

import gc
import json
import os
import re
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def child(path: str, workload: str, passes: int) -> None:
    gc.disable()
    sys.path.insert(0, ROOT)
    from simulation import estimate_dict
    from simulation.memo import forget
    with open(path) as f:
        scenarios = json.load(f)
    for _ in range(passes):
        for d in scenarios:
            if workload == "cold":
                forget()
            estimate_dict(d)


def total_ir(path: str, workload: str, passes: int, tmp: str) -> int:
    out = os.path.join(tmp, f"cg.{workload}.{passes}")
    # one BLAS thread: numpy's OpenBLAS workers spin while idle, and callgrind counts them
    env = dict(os.environ, PYTHONHASHSEED="0", OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1")
    subprocess.run(["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}",
                    sys.executable, os.path.abspath(__file__), "--child", path, workload,
                    str(passes)], check=True, env=env, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL)
    with open(out) as f:
        m = re.search(r"^(?:summary|totals): (\d+)", f.read(), re.M)
    return int(m.group(1))


def main(workloads: list[str]) -> None:
    sys.path.insert(0, ROOT)
    sys.path.insert(0, os.path.join(ROOT, "bench"))
    from bench_engine import matched_configs
    la = matched_configs()
    if la is None:
        sys.exit("llm-analysis is not installed: it picks the 160 configurations")
    scenarios = [d for _, d in la[1]]
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "scenarios.json")
        with open(path, "w") as f:
            json.dump(scenarios, f)
        for w in workloads:
            one, three = total_ir(path, w, 1, tmp), total_ir(path, w, 3, tmp)
            per = (three - one) / 2 / len(scenarios)
            print(f"{w}: {per / 1e6:.3f} M instructions per call ({len(scenarios)} scenarios)")


if __name__ == "__main__":
    if sys.argv[1:2] == ["--child"]:
        child(sys.argv[2], sys.argv[3], int(sys.argv[4]))
    else:
        main(sys.argv[1:] or ["cold", "warm"])
