"""The C step-graph builder and attribution equal their Python specifications.

``stepgraph.build`` (task by task, in Python) is the specification of the graph; the C
builder must emit the same tasks in the same order with bit-identical sizes and
durations. ``step.attribute_reference`` is the specification of the idle-time split.
"""

import dataclasses

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from simulation.scheduler import GraphError, simulate
from simulation.step import attribute, attribute_reference
from simulation.stepgraph import RankModel, graph_arrays

pytest.importorskip("simulation._cstepgraph")

ALL_LINKS = {"pcie_h2d": 55e9, "pcie_d2h": 50e9, "nvlink": 360e9, "nic": 40e9, "ddr": 77e9,
             "nvme_read": 3e9, "nvme_write": 2e9, "cxl": 16e9, "nvme": 3e9, "cpu_adam": 20e9,
             "pcie_switch_up": 25e9, "pcie_switch_down": 25e9}
TIERS = ["none", "cpu", "nvme", "cxl"]


@st.composite
def rank_models(draw):
    gpn = draw(st.sampled_from([1, 2, 4, 8]))
    shard = draw(st.integers(1, 16))
    tp = draw(st.sampled_from([1, 1, 2, 4]))
    return RankModel(
        layers=draw(st.integers(0, 6)), fwd_s=draw(st.floats(1e-4, 0.1)),
        bwd_s=draw(st.floats(1e-4, 0.2)), head_s=draw(st.sampled_from([0.0, 0.003])),
        unit_params=draw(st.floats(1e6, 2e9)), params_per_rank=draw(st.floats(1e7, 3e10)),
        param_bytes=draw(st.sampled_from([2, 4])), grad_bytes=draw(st.sampled_from([2, 4])),
        optimizer_state_bytes=draw(st.sampled_from([8, 12, 16])), shard=shard,
        shard_link=draw(st.sampled_from(["nvlink", "nic"])), replicas=draw(st.integers(1, 3)),
        dp=draw(st.integers(1, 16)), dp_link=draw(st.sampled_from(["nvlink", "nic"])),
        gpus_per_node=gpn, stage=draw(st.integers(0, 3)), tp=tp,
        tp_bytes=draw(st.floats(1e6, 1e9)), bwd_allreduces=draw(st.sampled_from([2, 4])),
        act_ckpt_bytes=draw(st.floats(1e6, 1e9)),
        offload_params=draw(st.sampled_from(TIERS)), offload_optimizer=draw(st.sampled_from(TIERS)),
        offload_activations=draw(st.sampled_from(["none", "cpu"])),
        prefetch_depth=draw(st.integers(0, 3)), miss_rate=draw(st.sampled_from([0.0, 0.25, 1 / 3, 1.0])),
        hbm_bytes_per_s=3.35e12,
        shard_per_node=draw(st.integers(0, gpn)), dp_per_node=draw(st.integers(0, gpn)),
        units_per_layer=draw(st.sampled_from([1, 1, 2, 4, 7])), rs_per_layer=draw(st.integers(1, 4)),
        gather_latency_s=draw(latency), reduce_latency_s=draw(latency),
        dp_allreduce_latency_s=draw(latency), dp_allreduce_factor=draw(st.sampled_from([0.0, 1.9, 2.17])),
        dp_gather_latency_s=draw(latency), replica_latency_s=draw(latency),
        tp_latency_s=draw(latency), bwd_fetch_factor=draw(st.sampled_from([1.0, 1.0, 1.5, 1.75, 2.0])),
        sync_fetch=draw(st.booleans()),
        overlap_grad_reduce=draw(st.sampled_from([1, 1, 0])),
        overlap_param_gather=draw(st.sampled_from([0, 0, 1])),
        tp_comm_overlap=draw(st.sampled_from([0, 0, 1])),
        tp_allreduce_factor=draw(st.sampled_from([0.0, 0.0, 1.75 * 370 / 480])),
        fwd_contention_s=draw(contention), bwd_contention_s=draw(contention),
        fwd_contention_last_s=draw(contention), bwd_contention_last_s=draw(contention),
        nvme_write_weight=draw(st.sampled_from([1.0, 1.5, 6.9 / 4.2])),
        # DeepSpeed CPU-Adam or torch's for-loop AdamW (FSDP's CPU offload)
        cpu_optimizer_bytes_per_param=draw(st.sampled_from([30.0, 80.0])))


latency = st.sampled_from([0.0, 0.0, 2e-5, 7.3e-3])
contention = st.sampled_from([0.0, 0.0, 1.3e-5, 2.1e-3])


KEYS = ("n_streams", "gpu_stream", "links", "link_bw", "pool_cap", "kind", "stream", "duration",
        "size", "path_ptr", "path_links", "path_weight", "dep_ptr", "dep_idx", "acquire", "release",
        "label")


def assert_same_graph(a, b):
    for k in KEYS:
        x, y = a[k], b[k]
        if isinstance(x, np.ndarray):
            assert x.dtype == y.dtype, k
            np.testing.assert_array_equal(x, y, err_msg=k)      # bit-identical, not approx
        else:
            assert x == y, k


@settings(max_examples=300, deadline=None)
@given(r=rank_models(), last=st.booleans())
def test_c_builder_emits_the_python_graph(r, last):
    assert_same_graph(graph_arrays(r, ALL_LINKS, last, "c"), graph_arrays(r, ALL_LINKS, last, "python"))


@settings(max_examples=150, deadline=None)
@given(r=rank_models(), last=st.booleans())
def test_c_attribution_equals_the_reference(r, last):
    a = graph_arrays(r, ALL_LINKS, last, "c")
    s = simulate(a, "c")
    ref, fast = attribute_reference(a, s), attribute(a, s)
    assert ref.keys() == fast.keys()
    for k in ref:
        assert fast[k] == ref[k], k        # same additions in the same order
    # the split covers the makespan (Sec. "Exposed time" of step.py)
    assert sum(ref.values()) == pytest.approx(s.makespan_s, rel=1e-9, abs=1e-12)


@settings(max_examples=200, deadline=None)
@given(r=rank_models(), last=st.booleans(),
       dropped=st.sets(st.sampled_from(sorted(ALL_LINKS)), max_size=4))
def test_with_links_missing_both_build_the_same_graph_or_both_refuse(r, last, dropped):
    links = {k: v for k, v in ALL_LINKS.items() if k not in dropped}
    outcome = []
    for engine in ("c", "python"):
        try:
            outcome.append(graph_arrays(r, links, last, engine))
        except GraphError:
            outcome.append(None)
    if outcome[0] is None or outcome[1] is None:
        assert outcome[0] is None and outcome[1] is None
    else:
        assert_same_graph(*outcome)


def test_a_missing_link_is_a_graph_error_in_both():
    r = RankModel(layers=2, fwd_s=0.01, bwd_s=0.02, head_s=0.0, unit_params=1e8,
                  params_per_rank=2e8, param_bytes=2, grad_bytes=2, optimizer_state_bytes=12,
                  shard=8, shard_link="nvlink", replicas=1, dp=8, dp_link="nvlink",
                  gpus_per_node=8, stage=3, tp=1, tp_bytes=0.0, bwd_allreduces=2,
                  act_ckpt_bytes=0.0, offload_params="nvme", offload_optimizer="nvme",
                  offload_activations="none", prefetch_depth=2, miss_rate=0.0,
                  hbm_bytes_per_s=3.35e12)
    links = {k: v for k, v in ALL_LINKS.items() if not k.startswith("nvme")}
    for engine in ("c", "python"):
        with pytest.raises(GraphError, match="nvme_read"):
            graph_arrays(r, links, True, engine)
    ok = graph_arrays(dataclasses.replace(r, offload_params="cxl", offload_optimizer="cxl"), links, True, "c")
    assert len(ok["kind"]) > 0


def test_c_builder_rejects_out_of_range_models_without_crashing():
    from simulation import _cstepgraph
    with pytest.raises(ValueError, match="out of range"):
        _cstepgraph.build((1, 0, 1, 1, 8, 3, 1, 2, 2, 0, 0, 0, 0, 0, 0, 0, 1, 1, 0, 1, 0, 0, 1, 1), (0.0,) * 27, [0] * 12, True)
    with pytest.raises(ValueError, match="out of range"):     # no fetch unit in a layer
        _cstepgraph.build((1, 1, 1, 1, 8, 3, 1, 2, 2, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 1, 0, 0, 1, 1), (0.0,) * 27, [0] * 12, True)
    with pytest.raises(ValueError, match="out of range"):     # sync_fetch is a flag
        _cstepgraph.build((1, 1, 1, 1, 8, 3, 1, 2, 2, 0, 0, 0, 0, 0, 0, 0, 1, 1, 2, 1, 0, 0, 1, 1), (0.0,) * 27, [0] * 12, True)
    with pytest.raises(ValueError, match="out of range"):     # overlap_param_gather is a flag
        _cstepgraph.build((1, 1, 1, 1, 8, 1, 1, 2, 2, 0, 0, 0, 0, 0, 0, 0, 1, 1, 0, 1, 2, 0, 1, 1), (0.0,) * 27, [0] * 12, True)
    with pytest.raises(ValueError, match="out of range"):     # tp_comm_overlap is a flag
        _cstepgraph.build((1, 1, 1, 1, 8, 1, 2, 2, 2, 0, 0, 0, 0, 0, 0, 0, 1, 1, 0, 1, 0, 3, 1, 1), (0.0,) * 27, [0] * 12, True)
    with pytest.raises(ValueError, match="out of range"):     # the CPU optimizer's bytes a parameter
        _cstepgraph.build((1, 1, 1, 1, 8, 3, 1, 2, 2, 0, 0, 0, 0, 0, 0, 0, 1, 1, 0, 1, 0, 0, 1, 1),
                          (0.0,) * 26 + (-1.0,), [0] * 12, True)
    with pytest.raises(ValueError, match="12 indices"):
        _cstepgraph.build((1, 1, 1, 1, 8, 3, 1, 2, 2, 0, 0, 0, 0, 0, 0, 0, 1, 1, 0, 1, 0, 0, 1, 1), (0.0,) * 27, [0] * 3, True)
    with pytest.raises(TypeError):
        _cstepgraph.build("nonsense", (), [], True)


def test_c_attribution_rejects_bad_arrays_without_crashing():
    from simulation import _cstepgraph
    i32 = lambda *v: np.array(v, dtype=np.int32)       # noqa: E731
    f64 = lambda *v: np.array(v, dtype=np.float64)     # noqa: E731
    cat = i32(0, 1)
    with pytest.raises(ValueError, match="unknown task"):
        _cstepgraph.attribute(i32(0), i32(0), i32(0), i32(0, 1), i32(5), f64(0.0), f64(1.0),
                              1.0, 0, cat, 2, 1)
    with pytest.raises(ValueError, match="label"):
        _cstepgraph.attribute(i32(0), i32(0), i32(7), i32(0, 0), i32(), f64(0.0), f64(1.0),
                              1.0, 0, cat, 2, 1)
    with pytest.raises(TypeError, match="float64"):
        _cstepgraph.attribute(i32(0), i32(0), i32(0), i32(0, 0), i32(), i32(0), f64(1.0),
                              1.0, 0, cat, 2, 1)


def hand_graph(tasks):
    """Arrays for ``attribute``: tasks as (kind, stream, label, deps, start_s, end_s)."""
    from types import SimpleNamespace

    from simulation.scheduler import COMPUTE, TRANSFER
    from simulation.stepgraph import LABEL_CODE

    kinds = {"compute": COMPUTE, "transfer": TRANSFER}
    ptr, idx = [0], []
    for t in tasks:
        idx += t[3]
        ptr.append(len(idx))
    a = {"kind": np.array([kinds[t[0]] for t in tasks], np.int32),
         "stream": np.array([t[1] for t in tasks], np.int32),
         "label": np.array([LABEL_CODE[t[2]] for t in tasks], np.int32),
         "dep_ptr": np.array(ptr, np.int32), "dep_idx": np.array(idx, np.int32), "gpu_stream": 0}
    start, end = np.array([t[4] for t in tasks]), np.array([t[5] for t in tasks])
    return a, SimpleNamespace(start_s=start, end_s=end, makespan_s=float(end.max()))


@pytest.mark.parametrize("engine", ["python", "c"])
def test_an_idle_gap_is_split_along_the_chain_it_waited_for(engine):
    """ZeRO-Offload on one GPU, by hand (stream 0 = GPU, 1 = CPU):

        backward  0.0-1.0  GPU compute
        grads D2H 1.0-1.5  offload, after backward
        CPU Adam  1.5-3.5  cpu_optimizer, after the D2H copy
        params H2D 3.5-4.0 offload, after CPU Adam
        sync      4.0-4.0  a zero-length all-gather point (one GPU: nothing to gather)
        forward   4.0-5.0  GPU compute, after the sync

    The GPU is idle 1.0-4.0 s. Split along what the forward waited for: the sync 0 s
    (exposed_comm 0), the H2D copy 0.5 s and the D2H copy 0.5 s (exposed_offload 1.0 s),
    CPU Adam 2.0 s (cpu_optimizer). Compute 1 + 1 = 2 s; all of it sums to 5 s.
    """
    a, s = hand_graph([
        ("compute", 0, "compute", [], 0.0, 1.0),
        ("transfer", 2, "offload", [0], 1.0, 1.5),
        ("compute", 1, "cpu_optimizer", [1], 1.5, 3.5),
        ("transfer", 3, "offload", [2], 3.5, 4.0),
        ("compute", 4, "allgather", [3], 4.0, 4.0),
        ("compute", 0, "compute", [4], 4.0, 5.0),
    ])
    out = attribute_reference(a, s) if engine == "python" else attribute(a, s)
    assert out["compute"] == pytest.approx(2.0)
    assert out["cpu_optimizer"] == pytest.approx(2.0)
    assert out["exposed_offload"] == pytest.approx(1.0)
    assert out["exposed_comm"] == 0.0 and out["stall"] == 0.0
    assert sum(out.values()) == pytest.approx(5.0)


@pytest.mark.parametrize("engine", ["python", "c"])
def test_a_wait_to_start_is_charged_to_the_task_that_waited(engine):
    """A gradient copy ready at 1.0 s starts at 1.2 s (its link was busy): the GPU's idle
    1.0-2.0 s is the copy's wait and run, all exposed offload; then a tail after the GPU's
    last task (2.0-2.5 s, an all-reduce that ran 2.0-2.5) is exposed communication."""
    a, s = hand_graph([
        ("compute", 0, "compute", [], 0.0, 1.0),
        ("transfer", 2, "offload", [0], 1.2, 2.0),
        ("compute", 0, "compute", [1], 2.0, 2.0 + 0.0),   # a zero-length GPU task
        ("transfer", 3, "allreduce", [2], 2.0, 2.5),
    ])
    out = attribute_reference(a, s) if engine == "python" else attribute(a, s)
    assert out["exposed_offload"] == pytest.approx(1.0)
    assert out["exposed_comm"] == pytest.approx(0.5)
    assert sum(out.values()) == pytest.approx(2.5)


def test_c_builder_rejects_an_out_of_range_replica_link():
    from simulation import _cstepgraph
    with pytest.raises(ValueError, match="out of range"):     # replica_nic is a flag
        _cstepgraph.build((1, 1, 1, 1, 8, 3, 1, 2, 2, 0, 0, 0, 0, 0, 0, 0, 1, 1, 0, 1, 0, 0, 2, 1), (0.0,) * 27, [0] * 12, True)
