"""Downloads: a run's report (JSON), a comparison (CSV), a scenario's DeepSpeed config and
FSDP snippet; others' objects are 404, a run that has not succeeded a 400 naming why."""

import csv
import io
import json

import pytest

from tests.web.dashboard_helpers import run_queued_runs, spec, strategies
from tierlab.dashboard import comparisons
from tierlab.scenarios import services
from tierlab.scenarios.models import Scenario

pytestmark = pytest.mark.django_db


@pytest.fixture
def scenario(owner):
    return Scenario.objects.create(owner=owner, name="7B ZeRO-3 offload", spec=spec(**{
        "strategy.kind": "zero3", "strategy.offload_optimizer": "cpu"}))


def test_a_runs_report_as_json(owner_api, scenario):
    run = services.start_run(scenario)
    services.execute_run(run.pk)
    r = owner_api.get(f"/api/v1/runs/{run.pk}/report.json")
    assert r.status_code == 200 and r["Content-Type"].startswith("application/json")
    assert r["Content-Disposition"] == f'attachment; filename="7b-zero-3-offload-run-{run.pk}-report.json"'
    assert json.loads(r.content)["fits"] is True


def test_a_report_exists_once_the_run_succeeds(owner_api, scenario):
    run = services.start_run(scenario)
    r = owner_api.get(f"/api/v1/runs/{run.pk}/report.json")
    assert r.status_code == 400 and "queued" in r.json()["status"][0]


def test_deepspeed_config_for_the_strategy(owner_api, scenario):
    r = owner_api.get(f"/api/v1/scenarios/{scenario.pk}/deepspeed.json")
    assert r.status_code == 200
    cfg = json.loads(r.content)
    assert cfg["zero_optimization"]["stage"] == 3
    assert cfg["zero_optimization"]["offload_optimizer"]["device"] == "cpu"
    assert cfg["train_batch_size"] == 8 and cfg["bf16"]["enabled"] is True


def test_fsdp_snippet_for_the_strategy(owner_api, scenario):
    r = owner_api.get(f"/api/v1/scenarios/{scenario.pk}/fsdp.py")
    assert r.status_code == 200 and r["Content-Type"].startswith("text/x-python")
    text = r.content.decode()
    assert "ShardingStrategy.FULL_SHARD" in text and "CPUOffload(offload_params=True)" in text
    # optimizer-only offload is not expressible in FSDP, and the snippet says so
    assert "FSDP cannot offload the optimizer alone" in " ".join(text.split())
    assert "auto_wrap_policy=ModuleWrapPolicy({block_cls})" in text
    compile(text, "fsdp.py", "exec")       # it is valid Python (test_fsdp_snippet_runs.py runs it)


def test_a_scenario_the_catalog_no_longer_accepts_is_a_400(owner_api, owner):
    broken = Scenario.objects.create(owner=owner, name="broken", spec=spec(**{"training.global_batch_size": 7}))
    r = owner_api.get(f"/api/v1/scenarios/{broken.pk}/deepspeed.json")
    assert r.status_code == 400 and "scenario.training.global_batch_size" in r.json()


def test_comparison_csv_has_every_output_and_input_per_column(owner_api, owner):
    a, b = strategies(owner, ("zero2", "zero3"))
    comparison = comparisons.create_comparison(owner, [a.pk, b.pk], "ZeRO-2 vs 3")
    run_queued_runs()
    r = owner_api.get(f"/api/v1/comparisons/{comparison.pk}/export.csv")
    assert r.status_code == 200 and r["Content-Type"].startswith("text/csv")
    assert r["Content-Disposition"] == 'attachment; filename="zero-2-vs-3.csv"'
    rows = list(csv.reader(io.StringIO(r.content.decode())))
    assert rows[0] == ["section", "key", "label", "unit", "best_or_differs", "1. 7B zero2", "2. 7B zero3"]
    by_key = {row[1]: row for row in rows[1:]}
    hbm = by_key["memory.per_gpu.hbm.total_bytes"]
    assert hbm[0] == "output" and hbm[3] == "bytes" and hbm[4] == "2. 7B zero3"
    assert float(hbm[5]) > float(hbm[6])
    kind = by_key["strategy.kind"]
    assert kind[0] == "input" and kind[4] == "differs" and kind[5:] == ["zero2", "zero3"]
    assert by_key["cluster.num_nodes"][4] == ""


@pytest.mark.parametrize("path", ["/api/v1/scenarios/{s}/deepspeed.json", "/api/v1/scenarios/{s}/fsdp.py",
                                  "/api/v1/runs/{r}/report.json", "/api/v1/comparisons/{c}/export.csv"])
def test_exports_are_for_the_owner(stranger_api, anon_api, owner, path):
    a, b = strategies(owner, ("zero2", "zero3"))
    comparison = comparisons.create_comparison(owner, [a.pk, b.pk])
    run_queued_runs()
    url = path.format(s=a.pk, r=a.runs.first().pk, c=comparison.pk)
    assert stranger_api.get(url).status_code == 404
    assert anon_api.get(url).status_code == 401


def test_duplicate_copies_a_scenario(owner_api, owner, scenario):
    r = owner_api.post(f"/api/v1/scenarios/{scenario.pk}/duplicate/", {}, format="json")
    assert r.status_code == 201
    body = r.json()
    assert body["name"] == "Copy of 7B ZeRO-3 offload" and body["scenario"] == scenario.spec
    assert body["id"] != scenario.pk
    named = owner_api.post(f"/api/v1/scenarios/{scenario.pk}/duplicate/", {"name": "try NVMe"}, format="json")
    assert named.json()["name"] == "try NVMe"


def test_duplicate_is_for_the_owner(stranger_api, scenario):
    assert stranger_api.post(f"/api/v1/scenarios/{scenario.pk}/duplicate/", {}, format="json").status_code == 404


def test_the_schema_lists_the_dashboard_endpoints(client):
    paths = client.get("/api/schema/", HTTP_ACCEPT="application/json").json()["paths"]
    for p in ("/api/v1/comparisons/", "/api/v1/comparisons/{id}/", "/api/v1/comparisons/{id}/export.csv",
              "/api/v1/sweeps/", "/api/v1/sweeps/{id}/cancel/", "/api/v1/shares/", "/api/v1/shares/{id}/revoke/",
              "/api/v1/shared/{token}/", "/api/v1/shared/{token}/fork/", "/api/v1/runs/{id}/report.json",
              "/api/v1/scenarios/{id}/deepspeed.json", "/api/v1/scenarios/{id}/fsdp.py",
              "/api/v1/scenarios/{id}/duplicate/", "/api/v1/scenarios/{id}/variants/"):
        assert p in paths, p
    assert "security" in paths["/api/v1/comparisons/"]["get"]


def test_megatron_arguments_carry_the_layout_and_fp8(owner_api, owner):
    fp8 = Scenario.objects.create(owner=owner, name="7B FP8", spec=spec(**{
        "strategy.kind": "megatron_dist_opt", "training.tensor_parallel": 2,
        "training.sequence_parallel": True, "training.fp8": {"recipe": "delayed", "param": True}}))
    r = owner_api.get(f"/api/v1/scenarios/{fp8.pk}/megatron.txt")
    assert r.status_code == 200 and r["Content-Type"].startswith("text/plain")
    assert r["Content-Disposition"] == 'attachment; filename="7b-fp8-megatron.txt"'
    line = r.content.decode()
    assert "--tensor-model-parallel-size 2 " in line and "--use-distributed-optimizer" in line
    assert "--fp8-format hybrid --fp8-recipe delayed --fp8-amax-history-len 1024" in line
    assert "--fp8-param-gather" in line
    ds = json.loads(owner_api.get(f"/api/v1/scenarios/{fp8.pk}/deepspeed.json").content)
    assert any(n.startswith("FP8 is not part of this DeepSpeed config") for n in ds["_tierlab_notes"])


def test_deepspeed_config_carries_an_uneven_pipeline_as_megatron_arguments(owner, owner_api):
    s = spec(**{"strategy.kind": "zero1"})
    s["model"] = {"preset": "llama2-70b"}
    s["cluster"] = {"node": "dgx-h100", "num_nodes": 4}
    s["training"].update(tensor_parallel=8, pipeline_parallel=4, pipeline_layers=[18, 22, 22, 18],
                         global_batch_size=64)
    sc = Scenario.objects.create(owner=owner, name="70B PP4 uneven", spec=s)
    cfg = json.loads(owner_api.get(f"/api/v1/scenarios/{sc.pk}/deepspeed.json").content)
    assert "--pipeline-model-parallel-layout 'Et*18|t*22|t*22|t*18,L'" in cfg["_tierlab_megatron_args"]
    assert any("partition_method" in n for n in cfg["_tierlab_notes"])


def test_megatron_arguments_of_a_dualpipe_plan_are_one_shell_line_then_comments(owner_api, owner):
    # a '#' among the arguments would end the shell command there (found by a newcomer:
    # every argument after the DualPipe note was dropped)
    from tests.web.test_pretraining_comparisons import deepseek_v3
    sc = Scenario.objects.create(owner=owner, name="DeepSeek-V3 DualPipe", spec=deepseek_v3(16))
    text = owner_api.get(f"/api/v1/scenarios/{sc.pk}/megatron.txt").content.decode()
    first, *rest = text.splitlines()
    assert "#" not in first
    assert "--expert-model-parallel-size 16" in first and "--global-batch-size 15360" in first
    assert rest and all(line.startswith("# ") for line in rest) and "DualPipe" in rest[0]


def _numeric(cell: str) -> bool:
    try:
        float(cell)
    except ValueError:
        return False
    return True


def test_every_numeric_row_of_a_comparison_csv_has_a_unit(owner_api, owner):
    # a dense model, a MoE with LoRA and ZeRO-Infinity, and a pipelined, context-parallel FP8
    # run on the CXL build: most of the fields a scenario has
    specs = [
        spec(),
        {"model": {"preset": "mixtral-8x7b"}, "cluster": {"node": "dgx-h100", "num_nodes": 2},
         "training": {"micro_batch_size": 1, "global_batch_size": 16, "seq_len": 4096, "expert_parallel": 8,
                      "moe_capacity_factor": 1.25, "moe_routing_imbalance": 1.2, "recompute": "full",
                      "lora": {"rank": 16, "alpha": 32, "dropout": 0.05}},
         "strategy": {"kind": "zero_infinity", "prefetch_miss_rate": 0.1, "cpu_optimizer_cores_per_gpu": 4},
         "checkpoint": {"interval_s": 3600, "gpu_failure_rate_per_hour": 1e-5}},
        {"model": {"preset": "llama2-7b"}, "cluster": {"node": "dgx-h100-cxl", "num_nodes": 1},
         "training": {"micro_batch_size": 1, "global_batch_size": 8, "seq_len": 2048, "pipeline_parallel": 2,
                      "context_parallel": 2, "flash_attention": True, "fp8": {"recipe": "delayed"},
                      "recompute": "full", "recompute_layers": 2},
         "strategy": {"kind": "fsdp_hybrid_shard", "shard_group_size": 2},
         "checkpoint": {"mtbf_s": 36000, "quantize_bits": 8}},
    ]
    ids = [Scenario.objects.create(owner=owner, name=f"s{i}", spec=s).pk for i, s in enumerate(specs)]
    comparison = comparisons.create_comparison(owner, ids, "units")
    run_queued_runs()
    rows = list(csv.reader(io.StringIO(owner_api.get(f"/api/v1/comparisons/{comparison.pk}/export.csv")
                                       .content.decode())))
    numeric = [row for row in rows[1:] if row[0] in ("input", "output") and any(_numeric(c) for c in row[5:])]
    assert len(numeric) > 80
    assert [row[1] for row in numeric if not row[3]] == []
    units = {row[1]: row[3] for row in numeric}
    assert units["cluster.accelerator.peak_flops_bf16"] == "FLOP/s"
    assert units["training.seq_len"] == "tokens"
    assert units["cluster.accelerator.hbm_bytes_per_s"] == "bytes/s"
    assert units["cluster.price_usd_per_node_hour"] == "USD per node-hour"
    assert units["training.micro_batch_size"] == "sequences"
