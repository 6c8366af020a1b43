"""Sweeps: grid expansion, invalid points as results, progress, Pareto front."""

import pytest

from simulation import ScenarioError
from simulation.sweep import expand, pareto, run

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
    ([{"path": "a", "values": list(range(30))}, {"path": "b", "values": list(range(30))}], "axes"),
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
