"""bench/bench_engine.py races the C scheduler against the same model written with SimPy;
the race means something only if both run the same task graph to the same schedule, which
these tests check (issue #17: the earlier SimPy port ignored pool order, stream order and
consumption weights, and ended 91.4 s and 54.4 s steps at 86.2 s and 37.0 s)."""

import importlib.util
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from simulation.scheduler import TaskGraph, simulate, simulate_reference
from tests.engine.test_scheduler import random_graph

pytest.importorskip("simpy")
ROOT = Path(__file__).resolve().parents[2]


def bench_module():
    spec = importlib.util.spec_from_file_location("bench_engine", ROOT / "bench" / "bench_engine.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


BENCH = bench_module()


def assert_same_schedule(a):
    ref = simulate_reference(a)
    start, end, makespan = BENCH.simpy_schedule(a)
    np.testing.assert_allclose(start, ref.start_s, rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(end, ref.end_s, rtol=1e-9, atol=1e-9)
    assert makespan == pytest.approx(ref.makespan_s, rel=1e-9, abs=1e-9)


@settings(max_examples=150, deadline=None)
@given(st.data())
def test_simpy_model_equals_the_reference_on_generated_graphs(data):
    """Pools, both streams, zero-length tasks, multi-link paths and consumption weights."""
    assert_same_schedule(random_graph(data.draw).arrays())


def test_the_lowest_ready_id_gets_the_freed_slot():
    """Hand-worked, one pool slot, link 10 B/s, streams gpu and cpu. t0 (10 B, takes the
    slot) runs 0-1, c0 (gpu, 1 s, releases it) 1-2. t3 has waited for the slot since 0 (its
    dependency z is zero-length); t1 becomes ready at 2. The rule: the lowest ready id,
    t1: t1 2-3, r1 (gpu, releases) 3-4, then after1 (cpu, 5 s) 4-9 while t3 4-5 and r3 5-6:
    9 s. First come, first served (SimPy's own Container, the earlier port) gives t3 the
    slot: t3 2-3, r3 3-4, t1 4-5, r1 5-6, after1 6-11: 11 s."""
    g = TaskGraph()
    g.add_link("l", 10)
    g.add_pool("p", 1)
    t0 = g.transfer("t0", 10, ["l"], acquire="p")
    c0 = g.compute("c0", "gpu", 1.0, deps=[t0], release="p")
    t1 = g.transfer("t1", 10, ["l"], deps=[c0], acquire="p")
    r1 = g.compute("r1", "gpu", 1.0, deps=[t1], release="p")
    g.compute("after1", "cpu", 5.0, deps=[r1])
    z = g.compute("z", "cpu", 0.0)
    t3 = g.transfer("t3", 10, ["l"], deps=[z], acquire="p")
    g.compute("r3", "gpu", 1.0, deps=[t3], release="p")
    a = g.arrays()
    start, end, makespan = BENCH.simpy_schedule(a)
    assert start[t1] == pytest.approx(2.0) and start[t3] == pytest.approx(4.0)
    assert makespan == pytest.approx(9.0)
    assert simulate(a, "c").makespan_s == pytest.approx(9.0)


def test_a_written_byte_weighs_on_the_drive():
    """test_scheduler's NVMe drive (6.9 GB/s read, 4.2 GB/s write, one link where a written
    byte weighs 6.9 / 4.2): read 6.9 GB and write 4.2 GB together end at 2.0 s; without the
    weight (the earlier port) at 11.1 / 6.9 = 1.609 s."""
    g = TaskGraph()
    g.add_link("nvme", 6.9)
    g.transfer("read", 6.9, ["nvme"])
    g.transfer("write", 4.2, ["nvme"], weights=[6.9 / 4.2])
    assert BENCH.simpy_schedule(g.arrays())[2] == pytest.approx(2.0, rel=1e-12)


def test_the_benchmark_steps_are_the_same_schedule_in_simpy():
    """Section 1's 80-layer ZeRO-Infinity step (parameters and optimizer on NVMe), built by
    the engine from its scenario: SimPy and the C scheduler agree task for task."""
    a = BENCH.step_arrays(80)
    start, end, makespan = BENCH.simpy_schedule(a)
    s = simulate(a, "c")
    np.testing.assert_allclose(end, s.end_s, rtol=1e-9, atol=1e-9)
    assert makespan == pytest.approx(s.makespan_s, rel=1e-9)
