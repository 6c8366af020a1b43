"""The sweep form's ready-made grids, fitted to the base scenario they are offered with:
every point of every grid offered with an example scenario is one the engine accepts, and
"nodes × micro batch" keeps the per-GPU batch (with the global batch fixed, 3 of its 9
points were invalid on the flagship example and 4 nodes was never offered)."""

import re
from html import unescape

import pytest

from simulation import ScenarioError, evaluate_dict
from simulation import sweep as engine_sweep
from tierlab.dashboard import sweeps
from tierlab.scenarios.examples import examples
from tierlab.scenarios.models import Scenario

pytestmark = pytest.mark.django_db

EXAMPLES = {e["name"]: e["scenario"] for e in examples()}
FULL = {slug: axes for slug, _, axes in sweeps.PRESETS}


def invalid_points(base: dict, axes: list) -> list:
    bad = []
    for point in engine_sweep.expand(base, axes):
        try:
            evaluate_dict(point["scenario"], detail=False)
        except ScenarioError as exc:
            bad.append((point["values"], f"{exc.field}: {exc.message}"))
    return bad


@pytest.mark.parametrize("name", list(EXAMPLES))
def test_every_point_of_every_ready_made_grid_is_valid_on_the_examples(catalog, name):
    base = EXAMPLES[name]
    offered = sweeps.presets_for(base)
    assert offered, name
    for preset in offered:
        assert invalid_points(base, preset["axes"]) == [], (name, preset["slug"])
        assert len(engine_sweep.expand(base, preset["axes"])) >= 2
        # the ready-made values, in their order, less those left out
        for fitted, full in zip(preset["axes"], FULL[preset["slug"]], strict=True):
            dropped = next((d["values"] for d in preset["left_out"] if d["path"] == full["path"]), [])
            assert fitted["values"] == [v for v in full["values"] if v not in dropped]
    # nodes × micro batch is offered with every example whose shard group fits on 1-4 nodes
    # (GPT-3's HSDP shard groups span 8 nodes: none of its points would be valid)
    if base["strategy"].get("shard_group_size", 0) <= 8:
        assert "nodes-x-micro-batch" in [p["slug"] for p in offered]


def test_nodes_x_micro_batch_keeps_the_per_gpu_batch(catalog):
    # 32 sequences on 2 nodes of 8 GPUs: 2 per GPU. The global batch scales with the nodes
    # (16 on 1 node, 64 on 4), so every node count is valid; only a micro batch of 4, more
    # than the 2 sequences a GPU takes per step, is not.
    base = EXAMPLES["Llama-2-70B · 2×DGX H100 · ZeRO-3"]
    full = FULL["nodes-x-micro-batch"]
    batches = [p["scenario"]["training"]["global_batch_size"] for p in engine_sweep.expand(base, full)]
    assert batches == [16] * 3 + [32] * 3 + [64] * 3
    assert [values["training.micro_batch_size"] for values, _ in invalid_points(base, full)] == [4, 4, 4]
    preset = next(p for p in sweeps.presets_for(base) if p["slug"] == "nodes-x-micro-batch")
    assert preset["axes"] == [{"path": "cluster.num_nodes", "values": [1, 2, 4], "scales_global_batch": True},
                              {"path": "training.micro_batch_size", "values": [1, 2]}]
    assert preset["left_out"] == [
        {"path": "training.micro_batch_size", "label": "Micro batch size", "values": [4]}]
    assert preset["batch"] == ("The global batch scales with the nodes, keeping the base's per-GPU batch "
                               "(32 sequences on 2 nodes): 16 on 1, 32 on 2, 64 on 4 nodes; "
                               "accumulation steps = per-GPU batch / micro batch.")
    # the old grid, the global batch fixed at 32: 3 of 9 points invalid, as before
    fixed = [{k: v for k, v in ax.items() if k != "scales_global_batch"} for ax in full]
    assert len(invalid_points(base, fixed)) == 3
    assert sweeps.batch_rule(base, fixed).startswith("The global batch stays at 32 sequences")
    # a base whose global batch leaves room keeps the whole grid
    roomy = {**base, "training": {**base["training"], "global_batch_size": 128}}
    preset = next(p for p in sweeps.presets_for(roomy) if p["slug"] == "nodes-x-micro-batch")
    assert preset["axes"] == full and preset["left_out"] == []


def test_the_scaling_flag_is_for_a_node_axis_only(owner, catalog):
    base = Scenario.objects.create(owner=owner, name="70B", spec=EXAMPLES["Llama-2-70B · 2×DGX H100 · ZeRO-3"])
    with pytest.raises(ScenarioError) as exc:
        sweeps.create_sweep(owner, base.pk, [{"path": "training.micro_batch_size", "values": [1, 2],
                                              "scales_global_batch": True}])
    assert exc.value.field == "axes.0.scales_global_batch"
    sweep = sweeps.create_sweep(owner, base.pk, FULL["nodes-x-micro-batch"])
    assert sweep.axes[0]["scales_global_batch"] is True
    assert sweeps.sweep_payload(sweep)["axes"][0]["label"] == "Number of nodes (global batch scaled with it)"


def test_a_grid_with_no_valid_point_is_not_offered(catalog):
    # FSDP hybrid shard names a shard group size, which the other strategies refuse
    hybrid = EXAMPLES["GPT-3 175B · 16×DGX H100 · FSDP hybrid shard"]
    assert "sharding" not in [p["slug"] for p in sweeps.presets_for(hybrid)]
    # ZeRO-Offload must offload its optimizer: "none" is left out, and "nvme" too (NVMe
    # swapping is ZeRO-3's: DeepSpeed's stage 2 optimizer offloads to host memory only)
    offload = EXAMPLES["Llama-2-7B · 1×H100 · ZeRO-Offload (CPU)"]
    preset = next(p for p in sweeps.presets_for(offload) if p["slug"] == "offload-x-prefetch")
    assert preset["axes"][0]["values"] == ["cpu"]
    # no base, or one the engine rejects: the grids as they are
    assert [p["axes"] for p in sweeps.presets_for(None)] == [axes for _, _, axes in sweeps.PRESETS]
    assert len(sweeps.presets_for({"model": "no-such-model"})) == len(sweeps.PRESETS)


def test_fit_axes_keeps_the_largest_even_grid():
    axes = [{"path": "a", "values": [1, 2, 4]}, {"path": "b", "values": [1, 2, 4]}]

    def product_divides(n):
        return lambda spec: n % (spec["a"] * spec["b"]) == 0

    fit = lambda n: [ax["values"] for ax in sweeps.fit_axes({}, axes, is_valid=product_divides(n))]  # noqa: E731
    assert fit(16) == [[1, 2, 4], [1, 2, 4]]
    assert fit(8) == [[1, 2, 4], [1, 2]]      # 6 points; the first axis keeps more
    assert fit(4) == [[1, 2], [1, 2]]         # 4 points beat 3 (a 1, 2, 4 × b 1)
    assert fit(2) == [[1, 2], [1]]
    assert sweeps.fit_axes({}, axes, is_valid=lambda spec: False) is None
    one = [{"path": "a", "values": [1, 2, 3, 4]}]
    assert sweeps.fit_axes({}, one, is_valid=lambda spec: spec["a"] != 3) == [{"path": "a", "values": [1, 2, 4]}]


@pytest.mark.usefixtures("vite_manifest")
def test_the_sweep_form_fills_the_grid_fitted_to_the_base(client, owner, catalog):
    client.force_login(owner)
    base = Scenario.objects.create(owner=owner, name="70B on 2 nodes",
                                   spec=EXAMPLES["Llama-2-70B · 2×DGX H100 · ZeRO-3"])
    html = client.get(f"/sweeps/new/?scenario={base.pk}&preset=nodes-x-micro-batch").content.decode()
    assert re.search(r'<input [^>]*name="axis1_values" value="1, 2, 4"', html)
    assert re.search(r'<input [^>]*name="axis2_values" value="1, 2"', html)
    assert re.search(r'<input [^>]*name="scale_global_batch"[^>]* checked', html)
    text = unescape(" ".join(html.split()))
    assert "left out micro batch size 4" in text
    assert "The global batch scales with the nodes, keeping the base's per-GPU batch" in text
    # without ?scenario the form proposes your latest scenario, and fits the grid to it
    hybrid = Scenario.objects.create(owner=owner, name="hybrid",
                                     spec=EXAMPLES["GPT-3 175B · 16×DGX H100 · FSDP hybrid shard"])
    html = client.get("/sweeps/new/").content.decode()
    assert f'<option value="{hybrid.pk}" selected>hybrid</option>' in html
    assert 'data-preset="sharding"' not in html and 'data-preset="nodes-x-micro-batch"' not in html
    assert 'data-preset="offload-x-prefetch"' in html
    assert f'href="?preset=checkpoint-target&amp;scenario={hybrid.pk}"' in html
