"""bench/bench_api.py prints the machine's load beside its latency figures (it never passes
or fails on time; these tests check what it prints, not how fast anything is)."""

import importlib.util
import re
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def bench_module():
    spec = importlib.util.spec_from_file_location("bench_api", ROOT / "bench" / "bench_api.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def process_cpu_s(pid: int) -> float:
    import os

    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def test_host_load_counts_another_processs_cpu_as_elsewhere():
    """A process that is not the benchmark's (a busy loop) shows as cores busy elsewhere."""
    bench = bench_module()
    burner = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        time.sleep(0.3)                                   # past its start-up
        before = process_cpu_s(burner.pid)
        with bench.HostLoad() as load:
            started = time.perf_counter()
            time.sleep(1.5)
        burned = (process_cpu_s(burner.pid) - before) / (time.perf_counter() - started)
    finally:
        burner.kill()
        burner.wait()
    assert burned > 0.2                                   # it did get a CPU
    assert load.other_cores >= 0.8 * burned - 0.05, (load.other_cores, burned)
    assert load.cores >= 1 and load.load_before >= 0 and load.load_after >= 0
    assert "cores busy in other processes" in load.describe()


def test_host_load_leaves_the_benchmarks_own_cpu_out():
    """CPU the benchmark's own processes use (``ours``) is not counted as elsewhere."""
    bench = bench_module()
    own = []
    with bench.HostLoad(ours=lambda: sum(own)) as load:
        own.append(1000.0)                                # "ours" used more than the machine could
    assert load.other_cores == 0.0


def test_the_benchmark_prints_the_load_beside_the_quick_estimate_p99_and_the_sweeps():
    out = subprocess.run([sys.executable, "bench/bench_api.py", "--duration", "0.3", "--clients", "4",
                          "--round-trips", "1", "--sweep-points", "12"], cwd=ROOT, capture_output=True, text=True,
                         timeout=240)
    assert out.returncode == 0, out.stderr[-3000:]
    text = out.stdout
    assert re.search(r"before it started \(1 s\): load average \(1 min\) [\d.]+ -> [\d.]+ on \d+ cores; "
                     r"[\d.]+ cores busy in other processes", text), text
    header = next(line for line in text.splitlines() if line.startswith("phase"))
    assert header.split()[-3:] == ["load", "1m", "elsewhere"], header
    row = next(line for line in text.splitlines() if line.startswith("POST /api/v1/estimate/"))
    assert re.search(r"\d+\.\d -> *\d+\.\d +\d+\.\d\d$", row), row
    assert re.search(r"quick estimate, 4 clients: p50 [\d.]+ ms, p99 [\d.]+ ms \(goal: p99 < 50 ms\), "
                     r"\d+ errors; measured with load average \(1 min\) [\d.]+ -> [\d.]+ on \d+ cores; "
                     r"[\d.]+ cores busy in other processes, [\d.]+ stolen by the hypervisor", text), text
    # a sweep end to end beside the engine's own rate on the same points, with the load
    # the end is the sweep row's finished_at; the poll that saw it is printed beside it
    assert re.search(r"sweep of 12 points \(1 chunks, 12 evaluated, succeeded\): [\d.]+ s end to end, POST to "
                     r"finished_at \(POST \d+ ms; a client polling every 0.5 s saw it end at [\d.]+ s\), "
                     r"\d+ points/s through gunicorn \+ Celery with 2 worker processes; the engine alone \d+ "
                     r"points/s in one process on the same points \(12 in [\d.]+ s, [\d.]+ s CPU\): [\d.]+ of 2 x "
                     r"the engine's rate per worker process \(goal >= 0.80\)", text), text
    assert re.search(r"the engine alone in 2 processes at once, each on its share of the points: \d+ points/s "
                     r"\([\d.]+ s, [\d.]+ s CPU\): the sweep ran at [\d.]+ of that", text), text
    assert re.search(r"CPU per point: worker processes [\d.]+ ms, the engine alone [\d.]+ ms", text), text
    assert re.search(r"sweep measured with load average \(1 min\) [\d.]+ -> [\d.]+ on \d+ cores", text), text
    assert re.search(r"engine measured with load average \(1 min\) [\d.]+ -> [\d.]+ on \d+ cores", text), text


def test_a_sweep_grid_of_the_benchmark_has_the_points_asked_for():
    bench = bench_module()
    for points, shape in ((400, (20, 20)), (10_000, (100, 100)), (12, (3, 4)), (7, (1, 7))):
        axes = bench.sweep_axes(points)
        assert tuple(len(ax["values"]) for ax in axes) == shape
