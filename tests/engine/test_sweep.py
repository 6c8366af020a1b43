"""Sweeps: grid expansion, invalid points as results, progress, Pareto front."""

import time

import pytest
from hypothesis import given, strategies as st

from simulation import ScenarioError
from simulation.sweep import MAX_POINTS, expand, grid_size, null_label, pareto, point_at, run

BASE = {"model": "llama2-13b", "cluster": {"node": "dgx-h100", "num_nodes": 1},
        "training": {"recompute": "full"}, "strategy": {"kind": "zero3"}}


def test_two_axes_make_a_grid():
    pts = expand(BASE, [{"path": "cluster.num_nodes", "values": [1, 2]},
                        {"path": "strategy.offload_optimizer", "values": ["none", "cpu", "nvme"]}])
    assert len(pts) == 6
    assert pts[4]["values"] == {"cluster.num_nodes": 2, "strategy.offload_optimizer": "cpu"}
    assert pts[4]["scenario"]["strategy"]["offload_optimizer"] == "cpu"
    assert BASE["strategy"] == {"kind": "zero3"}            # the base is not modified


def test_preset_string_model_can_be_swept():
    pts = expand(BASE, [{"path": "model.preset", "values": ["llama2-7b", "llama2-70b"]}])
    assert pts[1]["scenario"]["model"] == {"preset": "llama2-70b"}


@pytest.mark.parametrize("axes,field", [
    ([], "axes"), ([{"path": "", "values": [1]}], "axes.0.path"),
    ([{"path": "cluster.num_nodes", "values": []}], "axes.0.values"),
    ([{"path": "a", "values": list(range(101))}, {"path": "b", "values": list(range(100))}], "axes"),
])
def test_bad_axes_name_the_field(axes, field):
    with pytest.raises(ScenarioError) as e:
        expand(BASE, axes)
    assert e.value.field == field


def test_invalid_and_infeasible_points_are_results_and_progress_reaches_one():
    seen = []
    pts = expand(BASE, [{"path": "training.global_batch_size", "values": [8, 7]},
                        {"path": "strategy.kind", "values": ["zero3", "ddp"]}])
    res = run(pts, progress=seen.append)
    assert seen[-1] == 1.0 and len(seen) == 4
    by = {(r["values"]["training.global_batch_size"], r["values"]["strategy.kind"]): r for r in res}
    assert by[(7, "zero3")]["valid"] is False and "global_batch_size" in by[(7, "zero3")]["error"]
    assert by[(8, "ddp")]["fits"] is False          # 13B with DDP: 18 B/param on one GPU
    assert by[(8, "zero3")]["fits"] is True and by[(8, "zero3")]["step_time_s"] > 0


def test_pareto_front_by_hand():
    rs = [dict(index=0, fits=True, step_time_s=1.0, usd_per_million_tokens=5.0),
          dict(index=1, fits=True, step_time_s=2.0, usd_per_million_tokens=4.0),
          dict(index=2, fits=True, step_time_s=2.5, usd_per_million_tokens=4.5),   # beaten by 1
          dict(index=3, fits=False, step_time_s=0.5, usd_per_million_tokens=1.0),  # infeasible
          dict(index=4, fits=True, step_time_s=3.0, usd_per_million_tokens=3.0)]
    assert pareto(rs) == [0, 1, 4]


def beaten(p: dict, q: dict) -> bool:
    """The front's definition: ``q`` matches or betters ``p`` on cost and time and betters one."""
    c, t, c2, t2 = p["usd_per_million_tokens"], p["step_time_s"], q["usd_per_million_tokens"], q["step_time_s"]
    return c2 <= c and t2 <= t and (c2 < c or t2 < t)


@given(st.lists(st.tuples(st.integers(1, 6), st.integers(1, 6), st.booleans()), max_size=40))
def test_the_front_is_every_feasible_point_no_other_beats(cells):
    """Against the definition applied pair by pair; small integers make ties common (equal
    cost, equal time, both: all kept, neither beats the other)."""
    rs = [dict(index=i, fits=fits, step_time_s=float(t), usd_per_million_tokens=float(c))
          for i, (c, t, fits) in enumerate(cells)]
    feasible = [r for r in rs if r["fits"]]
    assert pareto(rs) == [p["index"] for p in feasible if not any(beaten(p, q) for q in feasible)]


def test_the_front_of_ties_keeps_them_all():
    rs = [dict(index=i, fits=True, step_time_s=t, usd_per_million_tokens=c)
          for i, (c, t) in enumerate([(2, 2), (2, 2), (1, 3), (1, 3), (2, 1), (3, 1)])]
    # (2,2) is beaten by (2,1): same cost, faster; (3,1) by (2,1); the (1,3) pair are equal
    assert pareto(rs) == [2, 3, 4]


def test_the_front_of_ten_thousand_points_is_not_quadratic():
    """A 10,000-point sweep that all fits on one diagonal (every point on the front): the
    pairwise definition is 10^8 comparisons (tens of seconds in Python), this a sort."""
    rs = [dict(index=i, fits=True, step_time_s=1.0 + i, usd_per_million_tokens=1e4 - i) for i in range(10_000)]
    started = time.process_time()
    assert pareto(rs) == list(range(10_000))
    assert time.process_time() - started < 1.0


def test_a_sweep_may_have_ten_thousand_points_not_more():
    axes = [{"path": "training.seq_len", "values": list(range(100))},
            {"path": "training.global_batch_size", "values": list(range(100))}]
    assert MAX_POINTS == 10_000 and grid_size(axes) == 10_000
    with pytest.raises(ScenarioError, match="10001 points; at most 10,000 per sweep"):
        grid_size([{"path": "training.seq_len", "values": list(range(10_001))}])


def test_a_slice_of_the_grid_is_built_alone_and_equals_the_whole_grids():
    axes = [{"path": "cluster.num_nodes", "values": [1, 2, 4], "scales_global_batch": True},
            {"path": "training.micro_batch_size", "values": [1, 2, 4, 8]}]
    base = dict(BASE, training={"recompute": "full", "global_batch_size": 16})
    whole = expand(base, axes)
    assert expand(base, axes, 5, 9) == whole[5:9] and [p["index"] for p in whole[5:9]] == [5, 6, 7, 8]
    assert expand(base, axes, 10, 99) == whole[10:] and expand(base, axes, 12) == []
    assert [point_at(base, axes, i) for i in range(12)] == whole
    with pytest.raises(IndexError):
        point_at(base, axes, 12)


def test_fp8_and_16_bit_points_carry_an_mfu_that_compares():
    """A point's ``mfu`` is over its GEMMs' peak (FP8 for an FP8 run), so a sweep over
    ``training.fp8`` would rank the faster FP8 point below the 16-bit one; ``mfu_16bit_peak``
    puts every point over the dense 16-bit peak. On an H100 SXM the FP8 dense peak is twice
    the BF16 one (1,979 vs 989.5 TFLOP/s, NVIDIA H100 datasheet), so an FP8 point's
    mfu_16bit_peak is 2 x its mfu; a 16-bit point's is its mfu."""
    pts = expand({**BASE, "model": "llama2-7b", "training": {"recompute": "full", "framework": "megatron"}},
                 [{"path": "training.fp8", "values": [None, {"recipe": "delayed"}]}])
    bf16, fp8 = run(pts)
    assert bf16["mfu_peak_precision"] == "16-bit" and bf16["mfu_16bit_peak"] == bf16["mfu"]
    assert fp8["mfu_peak_precision"] == "fp8"
    assert fp8["mfu_16bit_peak"] == pytest.approx(2 * fp8["mfu"], rel=1e-3)
    assert fp8["step_time_s"] < bf16["step_time_s"]
    assert fp8["mfu"] < bf16["mfu"] < fp8["mfu_16bit_peak"]     # the raw column misorders them


FP8_BASE = {**BASE, "model": "llama2-7b",
            "training": {"recompute": "full", "framework": "megatron", "fp8": {"recipe": "delayed"}}}


@pytest.mark.parametrize("path", ["training.fp8", "training.fp8.recipe"])
def test_a_null_axis_value_is_the_fields_null_not_the_bases_value(path):
    """With FP8 on in the base, a null of ``training.fp8`` (or of its recipe, as the scenario
    form's blank recipe) is FP8 off at that point: a 16-bit point beside the FP8 one."""
    other = {"recipe": "tensorwise"} if path == "training.fp8" else "tensorwise"
    off, on = expand(FP8_BASE, [{"path": path, "values": [None, other]}])
    assert off["values"] == {path: None}
    assert off["scenario"]["training"]["fp8"] is None
    assert on["scenario"]["training"]["fp8"] == {"recipe": "tensorwise"}
    assert FP8_BASE["training"]["fp8"] == {"recipe": "delayed"}        # the base is not modified
    a, b = run([off, on])
    assert a["valid"] and b["valid"], (a.get("error"), b.get("error"))
    assert a["mfu_peak_precision"] == "16-bit" and b["mfu_peak_precision"] == "fp8"
    assert a["step_time_s"] > b["step_time_s"]


def test_a_null_under_a_section_the_base_lacks_leaves_it_out():
    """A null LoRA base dtype on a base without LoRA is no LoRA, not LoRA at rank 8 with the
    default base dtype: the null point is the base itself."""
    null, nf4 = expand(BASE, [{"path": "training.lora.base_dtype", "values": [None, "nf4"]}])
    assert "lora" not in null["scenario"]["training"]
    assert null["scenario"] == BASE
    assert nf4["scenario"]["training"]["lora"] == {"base_dtype": "nf4"}
    plain, = run(expand(BASE, [{"path": "cluster.num_nodes", "values": [1]}]))
    assert run([null])[0]["hbm_total_bytes"] == plain["hbm_total_bytes"]


def test_a_null_reads_as_its_meaning():
    assert null_label("training.fp8") == "off" and null_label("training.fp8.recipe") == "off"
    assert null_label("training.lora") == "off"
    assert null_label("training.tensor_parallel") == "default"
