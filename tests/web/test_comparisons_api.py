"""/api/v1/comparisons/: 2–8 of your scenarios side by side, one run each, best values marked."""

import pytest

from tests.web.dashboard_helpers import run_queued_runs, spec, strategies
from tierlab.dashboard import variants
from tierlab.dashboard.models import Comparison
from tierlab.scenarios import services
from tierlab.scenarios.examples import examples
from tierlab.scenarios.models import Run, Scenario

URL = "/api/v1/comparisons/"
pytestmark = pytest.mark.django_db


def create(client, ids, **extra):
    return client.post(URL, {"scenarios": ids, **extra}, format="json")


def test_it_requires_login(anon_api, owner):
    ids = [s.pk for s in strategies(owner)]
    assert anon_api.get(URL).status_code == 401
    assert create(anon_api, ids).status_code == 401


def test_it_compares_scenarios_in_the_given_order_and_starts_their_runs(owner_api, owner):
    a, b, c = strategies(owner)
    r = create(owner_api, [c.pk, a.pk, b.pk])
    assert r.status_code == 201, r.json()
    body = r.json()
    assert body["name"] == "7B fsdp_full_shard vs 7B zero2 vs 7B zero3"
    assert body["scenarios"] == [c.pk, a.pk, b.pk]
    assert [i["name"] for i in body["items"]] == ["7B fsdp_full_shard", "7B zero2", "7B zero3"]
    assert body["status"] == "running" and body["progress"] == 0.0
    assert all(i["status"] == "queued" and i["report"] is None for i in body["items"])
    assert Run.objects.count() == 3
    assert r["Location"] == f"/api/v1/comparisons/{body['id']}/"


def test_it_shows_reports_differences_and_best_values_once_the_runs_finish(owner_api, owner):
    ids = [s.pk for s in strategies(owner)]
    pk = create(owner_api, ids, name="sharding").json()["id"]
    run_queued_runs()
    body = owner_api.get(f"{URL}{pk}/").json()
    assert body["name"] == "sharding" and body["status"] == "succeeded" and body["progress"] == 1.0
    assert all(i["report"]["fits"] in (True, False) for i in body["items"])
    inputs = {row["key"]: row for row in body["table"]["inputs"]}
    assert inputs["strategy.kind"]["differs"] is True
    assert inputs["strategy.kind"]["values"] == ["zero2", "zero3", "fsdp_full_shard"]
    assert inputs["strategy.kind"]["labels"] == ["ZeRO-2", "ZeRO-3", "FSDP FULL_SHARD"]
    assert inputs["cluster.node"]["labels"] == ["NVIDIA DGX H100"] * 3
    assert "labels" not in inputs["cluster.num_nodes"]                  # numbers read as themselves
    assert "cluster.template_gpus_per_node" not in inputs
    assert inputs["cluster.num_nodes"]["differs"] is False
    assert body["table"]["inputs"][0]["differs"] is True              # differing rows first
    outputs = {row["key"]: row for row in body["table"]["outputs"]}
    hbm = outputs["memory.per_gpu.hbm.total_bytes"]
    assert hbm["unit"] == "bytes" and hbm["better"] == "min"
    # ZeRO-2 keeps whole parameters on every GPU: ZeRO-3 / FSDP FULL_SHARD need less HBM
    assert hbm["values"][0] > hbm["values"][1]
    assert 0 not in hbm["best"] and hbm["best"]
    assert [hbm["values"][i] for i in hbm["best"]] == [min(hbm["values"])] * len(hbm["best"])
    step = outputs["step.time_s"]
    assert step["values"] == [i["report"]["step"]["time_s"] for i in body["items"]]
    # each step time's error band, and whether the scenario was inside what was validated
    assert outputs["step.time_band_s.0"]["values"] == [i["report"]["step"]["time_band_s"][0] for i in body["items"]]
    assert outputs["step.time_band_s.1"]["values"] == [i["report"]["step"]["time_band_s"][1] for i in body["items"]]
    assert outputs["step.validated"]["values"] == [False] * 3          # H100 and ZeRO-2 / FSDP: not validated
    assert outputs["step.time_band_s.0"]["best"] == []
    assert outputs["cost.usd_per_million_tokens"]["unit"] == "usd_per_mtok"


def test_the_best_value_is_picked_among_the_scenarios_that_fit(owner_api, owner):
    fits = Scenario.objects.create(owner=owner, name="fits", spec=spec())
    big = Scenario.objects.create(owner=owner, name="ddp 70B", spec=spec(**{
        "model.preset": "llama2-70b", "strategy.kind": "ddp"}))
    pk = create(owner_api, [fits.pk, big.pk]).json()["id"]
    run_queued_runs()
    body = owner_api.get(f"{URL}{pk}/").json()
    assert [i["report"]["fits"] for i in body["items"]] == [True, False]
    outputs = {row["key"]: row for row in body["table"]["outputs"]}
    assert outputs["fit_state"]["best"] == [0]
    # whatever the numbers, the scenario that does not fit is never "best"
    for row in body["table"]["outputs"]:
        assert 1 not in row["best"], row["key"]
    # its step time and cost are marked: what it would take if it fit; its memory is not
    assert outputs["step.time_s"]["unfit"] == [1] and outputs["cost.usd_per_hour"]["unfit"] == [1]
    assert outputs["memory.per_gpu.hbm.total_bytes"]["unfit"] == [] == outputs["fit_state"]["unfit"]


def test_a_failed_run_leaves_its_column_empty(owner_api, owner):
    a, b = strategies(owner, ("zero2", "zero3"))
    pk = create(owner_api, [a.pk, b.pk]).json()["id"]
    run_queued_runs()
    Run.objects.filter(scenario=b).update(status=Run.Status.FAILED, error="engine error: boom", stored_result=None)
    body = owner_api.get(f"{URL}{pk}/").json()
    assert body["status"] == "failed"
    assert body["items"][1]["error"] == "engine error: boom" and body["items"][1]["report"] is None
    step = next(r for r in body["table"]["outputs"] if r["key"] == "step.time_s")
    assert step["values"][1] is None and step["best"] == []


@pytest.mark.parametrize("ids,field", [
    ([], "scenarios"), (["x", 1], "scenarios.0"), ([1], "scenarios"), (list(range(1, 10)), "scenarios"),
])
def test_it_refuses_a_bad_list_naming_the_field(owner_api, ids, field):
    r = create(owner_api, ids)
    assert r.status_code == 400 and field in r.json(), r.json()


def test_it_refuses_twice_the_same_scenario(owner_api, owner):
    a, _ = strategies(owner, ("zero2", "zero3"))
    r = create(owner_api, [a.pk, a.pk])
    assert r.status_code == 400 and "once" in r.json()["scenarios"][0]


def test_it_refuses_a_strangers_scenario_naming_its_position(owner_api, owner, stranger):
    mine = strategies(owner, ("zero2",))[0]
    theirs = strategies(stranger, ("zero3",))[0]
    r = create(owner_api, [mine.pk, theirs.pk])
    assert r.status_code == 400
    assert r.json() == {"scenarios.1": [f"you have no scenario {theirs.pk}"]}
    assert Comparison.objects.count() == 0 and Run.objects.count() == 0    # nothing saved


def test_a_missing_body_is_a_400_not_a_500(owner_api):
    r = owner_api.post(URL, "{not json", content_type="application/json")
    assert r.status_code == 400 and "body" in r.json()


def test_strangers_see_404_and_lists_are_own(owner_api, stranger_api, owner):
    pk = create(owner_api, [s.pk for s in strategies(owner, ("zero2", "zero3"))]).json()["id"]
    assert stranger_api.get(f"{URL}{pk}/").status_code == 404
    assert stranger_api.get(URL).json()["results"] == []
    assert [c["id"] for c in owner_api.get(URL).json()["results"]] == [pk]


def test_identical_inputs_reuse_stored_results(owner_api, owner):
    a, b = strategies(owner, ("zero2", "zero3"))
    create(owner_api, [a.pk, b.pk])
    run_queued_runs()
    body = create(owner_api, [b.pk, a.pk]).json()
    assert body["status"] == "succeeded"              # no new work: both runs reused
    assert all(i["report"] for i in body["items"])


@pytest.mark.parametrize("question,labels,key", [
    ("sharding", ["ZeRO-2", "ZeRO-3", "FSDP hybrid"], "strategy.kind"),
    ("offload", ["ZeRO-Infinity offload to CPU DDR", "ZeRO-Infinity offload to NVMe",
                 "ZeRO-Infinity offload to CXL (+ 256 GiB CXL expander, 1 module for the 126 GiB it needs)"],
     "strategy.offload_optimizer"),
    ("checkpoint", ["checkpoint to local NVMe", "checkpoint to remote DRAM", "checkpoint to parallel FS"],
     "checkpoint.target"),
])
def test_a_question_one_comparison_away(owner_api, owner, question, labels, key):
    base = Scenario.objects.create(owner=owner, name="7B", spec=spec())
    r = owner_api.post(f"/api/v1/scenarios/{base.pk}/variants/", {"question": question}, format="json")
    assert r.status_code == 201, r.json()
    assert [i["name"] for i in r.json()["items"]] == [f"7B · {label}" for label in labels]
    run_queued_runs()
    body = owner_api.get(f"{URL}{r.json()['id']}/").json()
    assert body["status"] == "succeeded"
    differs = [row["key"] for row in body["table"]["inputs"] if row["differs"]]
    assert key in differs
    if question == "offload":      # a DGX H100 has no CXL: its variant gets an expander sized to it
        assert [i["report"]["fits"] for i in body["items"]] == [True, True, True]
        cxl = body["items"][2]["report"]["memory"]["per_node"]["cxl"]
        assert cxl["present"] and cxl["total_bytes"] > 0 and cxl["capacity_bytes"] == 256 * 2**30
    assert Scenario.objects.get(pk=base.pk).spec == spec()                   # the base is unchanged


@pytest.mark.parametrize("name,modules,size,needed", [
    # the whole 70B model's states on one node's expander (ZeRO-Infinity on 1 node)
    ("Llama-2-70B · 1×DGX H100 · ZeRO-Infinity (NVMe)", 6, "1.50 TiB", "1.25 TiB"),
    ("Llama-2-70B · 2×DGX H100 · ZeRO-3", 3, "768 GiB", "642 GiB"),
])
def test_the_cxl_variant_of_a_70b_example_gets_the_expander_it_needs(owner, name, modules, size, needed):
    # The example build has 4 x 256 GiB: 1 TiB did not hold the 1-node 70B run's 1.25 TiB.
    example = next(e["scenario"] for e in examples() if e["name"] == name)
    base = Scenario.objects.create(owner=owner, name="70B", spec=example)
    comparison = variants.compare_variants(owner, base.pk, "offload")
    cxl_variant = comparison.items.order_by("position").last().scenario
    assert cxl_variant.name.endswith(f"offload to CXL (+ {size} CXL expander, {modules} modules "
                                     f"for the {needed} it needs)")
    expander = cxl_variant.spec["cluster"]["tiers"]["cxl"]
    assert expander["devices"] == modules and expander["capacity_bytes"] == modules * 256 * 2**30
    assert expander["read_bytes_per_s"] == modules * 36e9              # one PCIe 5.0 x8 link per module
    report = services.estimate(cxl_variant.spec)
    assert report["fits"] and report["fit_state"] == "fits", report["violations"]


def test_variants_need_a_known_question_and_your_scenario(owner_api, stranger_api, owner):
    base = Scenario.objects.create(owner=owner, name="7B", spec=spec())
    r = owner_api.post(f"/api/v1/scenarios/{base.pk}/variants/", {"question": "colour"}, format="json")
    assert r.status_code == 400 and "question" in r.json()
    assert stranger_api.post(f"/api/v1/scenarios/{base.pk}/variants/", {"question": "sharding"},
                             format="json").status_code == 404
    assert Comparison.objects.count() == 0


def test_it_shows_nested_lists_of_inputs_as_text():
    from tierlab.dashboard.table import input_rows
    rows = input_rows([{"recsys": {"tables": [{"rows": 10, "dim": 4}]}},
                       {"recsys": {"tables": [{"rows": 20, "dim": 4}]}}])
    (row,) = [r for r in rows if r["key"] == "recsys.tables"]
    assert row["values"] == ['[{"dim": 4, "rows": 10}]', '[{"dim": 4, "rows": 20}]']
    assert row["differs"] is True


def test_inputs_left_at_their_default_show_the_default():
    """A resolved scenario (Scenario.to_dict) leaves out context_parallel 1, expert_parallel 1
    and the other defaults; the table shows them (TrainingSpec's defaults: 1, 1, "1f1b")
    rather than a blank, and a leaf of a section a column does not have (LoRA) stays blank."""
    from simulation.scenario import Scenario as EngineScenario
    from tierlab.dashboard.table import input_rows
    base = {"model": {"preset": "mixtral-8x7b"}, "cluster": {"node": "dgx-h100", "num_nodes": 2},
            "training": {"micro_batch_size": 1, "seq_len": 4096, "global_batch_size": 64,
                         "flash_attention": True}}
    cp = {**base, "training": {**base["training"], "context_parallel": 2, "expert_parallel": 8,
                               "lora": {"rank": 16}}}
    a, b = (EngineScenario.from_dict(d).to_dict() for d in (base, cp))
    assert "context_parallel" not in a["training"] and "expert_parallel" not in a["training"]
    rows = {r["key"]: r for r in input_rows([a, b])}
    assert rows["training.context_parallel"]["values"] == [1, 2]
    assert rows["training.expert_parallel"]["values"] == [1, 8]
    assert rows["training.lora.rank"]["values"] == [None, 16]
    same = input_rows([a, EngineScenario.from_dict({**base, "training": {**base["training"],
                                                                          "expert_parallel": 8}}).to_dict()])
    assert {r["key"]: r for r in same}["training.expert_parallel"]["values"] == [1, 8]


def test_an_fp8_run_s_mfu_over_the_16_bit_peak_is_a_row_only_with_fp8():
    from tierlab.dashboard.table import output_rows
    bf = {"fits": True, "mfu": 0.40, "step": {"mfu_peak": {"precision": "16-bit", "flops_per_s": 989e12}}}
    fp8 = {"fits": True, "mfu": 0.30, "step": {"mfu_peak": {"precision": "fp8", "flops_per_s": 1979e12,
                                                            "mfu_16bit_peak": 0.60}}}
    rows = {r["key"]: r for r in output_rows([bf, fp8])}
    assert rows["mfu"]["values"] == [0.40, 0.30]
    assert rows["step.mfu_peak.mfu_16bit_peak"]["values"] == [None, 0.60]
    assert "step.mfu_peak.mfu_16bit_peak" not in {r["key"] for r in output_rows([bf, bf])}


def test_a_tier_the_node_lacks_is_not_a_best_zero():
    from tierlab.dashboard.table import output_rows

    def report(cxl_present, cxl_bytes):
        return {"fits": True, "memory": {"per_node": {"cxl": {"present": cxl_present, "total_bytes": cxl_bytes}}}}

    rows = {r["key"]: r for r in output_rows([report(False, 0), report(True, 6e11), report(True, 4e11)])}
    cxl = rows["memory.per_node.cxl.total_bytes"]
    assert cxl["values"] == [None, 6e11, 4e11]       # shown as none, not 0.0 GB
    assert cxl["best"] == [2]                          # not the node without CXL
    rows = output_rows([report(False, 0), report(False, 0)])
    assert "memory.per_node.cxl.total_bytes" not in {r["key"] for r in rows}


def test_values_that_read_the_same_are_ties_not_a_best():
    from tierlab.dashboard.table import best_indices
    # goodput 99.821% vs 99.823% (shown as 99.82% both): no best
    assert best_indices([0.99821, 0.99823, 0.99822], "max", [True] * 3) == []
    # 5.00 s vs 5.001 s (0.02% apart) tie for best against 6 s
    assert best_indices([5.0, 5.001, 6.0], "min", [True] * 3) == [0, 1]
    assert best_indices([5.0, 5.2, 6.0], "min", [True] * 3) == [0]


def test_the_bottleneck_is_in_words():
    from tierlab.dashboard.table import output_rows
    rows = {r["key"]: r for r in output_rows([{"verdict": {"bottleneck": "exposed_offload"}},
                                               {"verdict": {"bottleneck": "cpu_optimizer"}}])}
    assert rows["verdict.bottleneck"]["values"] == ["exposed offload I/O", "the CPU optimizer step"]


def test_the_worst_pipeline_stage_is_a_row_only_with_a_pipeline():
    from tierlab.dashboard.table import output_rows
    rows = {r["key"]: r for r in output_rows([{"memory": {"stage_index": 1}}, {"memory": {}}])}
    assert rows["memory.stage_index"]["values"] == [1, None]
    assert "memory.stage_index" not in {r["key"] for r in output_rows([{"memory": {}}])}


def test_sharding_variants_of_a_tensor_and_pipeline_parallel_scenario(owner_api, owner):
    # 13B on 8 GPUs with TP 2 x PP 2: data-parallel degree 2. A shard group of a whole node
    # (8) does not divide it; hybrid with 2 ranks would be one group (full shard), with 1 it
    # shards nothing: the hybrid variant is left out, said in the notes, the others made.
    # With the pipeline, ZeRO-2 and ZeRO-3 are left out too (DeepSpeed's pipeline engine runs
    # stage 0 or 1 only): ZeRO-1 and FSDP full shard instead.
    base = Scenario.objects.create(owner=owner, name="13B", spec={
        "model": {"preset": "llama2-13b"}, "cluster": {"node": "dgx-h100", "num_nodes": 1},
        "training": {"micro_batch_size": 1, "global_batch_size": 8, "seq_len": 2048,
                     "tensor_parallel": 2, "pipeline_parallel": 2, "recompute": "full"},
        "strategy": {"kind": "megatron_dist_opt"}})
    r = owner_api.post(f"/api/v1/scenarios/{base.pk}/variants/", {"question": "sharding"}, format="json")
    assert r.status_code == 201, r.json()
    body = r.json()
    assert [i["name"] for i in body["items"]] == ["13B · ZeRO-1", "13B · FSDP full shard"]
    assert len(body["notes"]) == 2 and body["notes"][0].startswith("ZeRO-2 and ZeRO-3 left out")
    assert "pipeline_parallel 2" in body["notes"][0]
    assert body["notes"][1].startswith("FSDP hybrid left out") and "data-parallel degree is 2" in body["notes"][1]
    from django.test import Client
    client = Client()
    client.force_login(owner)
    page = client.get(f"/compare/{body['id']}/")
    assert page.status_code == 200 and "FSDP hybrid left out" in page.content.decode()


@pytest.mark.parametrize("num_nodes,tp,group", [(1, 1, 4), (2, 1, 8), (2, 2, 4), (4, 4, 2)])
def test_the_hybrid_variant_gets_a_shard_group_that_divides_the_data_parallel_degree(
        owner, num_nodes, tp, group):
    # the largest divisor of the DP degree in one node leaving >= 2 replicas
    base = Scenario.objects.create(owner=owner, name="7B", spec=spec(**{
        "cluster.num_nodes": num_nodes, "training.tensor_parallel": tp,
        "training.global_batch_size": 8 * num_nodes}))
    comparison = variants.compare_variants(owner, base.pk, "sharding")
    hybrid = comparison.items.order_by("position").last().scenario
    assert hybrid.name == "7B · FSDP hybrid"
    assert hybrid.spec["strategy"]["shard_group_size"] == group
    assert services.estimate(hybrid.spec)["parallelism"]["replica_groups"] >= 2
    assert comparison.notes == []


def test_offload_variants_use_what_each_zero_stage_can_offload_to(owner):
    # NVMe swapping is ZeRO-3's: a ZeRO-Offload scenario's NVMe variant is ZeRO-Infinity with
    # the optimizer on NVMe; with a pipeline, ZeRO-1 offloads to host memory (no NVMe variant)
    base = Scenario.objects.create(owner=owner, name="7B", spec={
        "model": {"preset": "llama2-7b"}, "cluster": {"node": "dgx-h100-cxl", "num_nodes": 1},
        "training": {"micro_batch_size": 1, "global_batch_size": 8, "seq_len": 2048},
        "strategy": {"kind": "zero_offload"}})
    made = dict(variants.variants(base.spec, "offload"))
    kinds = {label: (s["strategy"]["kind"], s["strategy"]["offload_optimizer"],
                     s["strategy"].get("offload_params")) for label, s in made.items()}
    assert sorted(kinds.values()) == [("zero_infinity", "nvme", "none"), ("zero_offload", "cpu", None),
                                      ("zero_offload", "cxl", None)]
    piped = dict(base.spec, training=dict(base.spec["training"], pipeline_parallel=2),
                 strategy={"kind": "zero1", "offload_optimizer": "cpu"})
    notes = []
    made = variants.variants(piped, "offload", notes)
    assert [(s["strategy"]["kind"], s["strategy"]["offload_optimizer"]) for _, s in made] == \
        [("zero1", "cpu"), ("zero1", "cxl")]
    assert "ZeRO-1 with the optimizer offloaded" in notes[0]
