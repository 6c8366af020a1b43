"""Context parallelism through the API: the estimate's report shows the K/V exchange, a
comparison of CP 1 against CP 2 shows it side by side, a bad CP layout is a 400 naming
the field, and the DeepSpeed export says what it leaves out."""

import csv
import io
import json

import pytest

from tests.web.dashboard_helpers import run_queued_runs, spec
from tierlab.dashboard import comparisons
from tierlab.scenarios.models import Scenario

pytestmark = pytest.mark.django_db


def cp_spec(cp: int) -> dict:
    # Llama-2-7B on 8 H100 at 8,192 tokens: TP 2 x CP cp, the rest data parallel
    changes = {"training.seq_len": 8192, "training.tensor_parallel": 2,
               "training.sequence_parallel": True, "training.recompute": "selective",
               "strategy.kind": "megatron_dist_opt"}
    if cp > 1:
        changes["training.context_parallel"] = cp
    return spec(**changes)


def test_the_estimate_reports_the_kv_exchange(owner_api):
    r = owner_api.post("/api/v1/estimate/", {"scenario": cp_spec(2), "include_step": True}, format="json")
    assert r.status_code == 200
    report = r.json()
    assert report["parallelism"]["context_parallel"] == 2
    assert report["parallelism"]["data_parallel"] == 2            # 8 / (TP 2 x CP 2)
    cp = report["step"]["context_parallel"]
    assert cp["link"] == "nvlink" and cp["degree"] == 2 and cp["bytes"] > 0
    names = [p["name"] for p in report["memory"]["per_gpu"]["hbm"]["parts"]]
    assert any(n.startswith("context-parallel K/V ring buffers") for n in names)


def test_a_cp_layout_that_does_not_divide_is_a_400_naming_the_field(owner_api):
    bad = cp_spec(2)
    bad["training"]["seq_len"] = 8194              # not a multiple of 2 x 2
    r = owner_api.post("/api/v1/estimate/", {"scenario": bad}, format="json")
    assert r.status_code == 400 and list(r.json()) == ["scenario.training.context_parallel"]


def test_a_comparison_of_cp_1_and_2_side_by_side(owner_api, owner):
    a = Scenario.objects.create(owner=owner, name="CP 1", spec=cp_spec(1))
    b = Scenario.objects.create(owner=owner, name="CP 2", spec=cp_spec(2))
    comparison = comparisons.create_comparison(owner, [a.pk, b.pk], "CP 1 vs 2")
    run_queued_runs()
    r = owner_api.get(f"/api/v1/comparisons/{comparison.pk}/export.csv")
    rows = {row[1]: row for row in csv.reader(io.StringIO(r.content.decode()))}
    # CP 1: the default, which the resolved scenario leaves out, read as 1
    assert rows["training.context_parallel"][5:] == ["1", "2"]
    assert rows["training.context_parallel"][4] == "differs"
    exposed = rows["step.context_parallel.exposed_per_step_s"]
    assert exposed[5] == "" and float(exposed[6]) >= 0
    # CP 2 holds half the tokens a GPU: less activation memory, so less HBM
    hbm = rows["memory.per_gpu.hbm.total_bytes"]
    assert float(hbm[6]) < float(hbm[5])


def test_deepspeed_export_says_it_leaves_context_parallelism_out(owner_api, owner):
    s = Scenario.objects.create(owner=owner, name="CP 2", spec=cp_spec(2))
    cfg = json.loads(owner_api.get(f"/api/v1/scenarios/{s.pk}/deepspeed.json").content)
    note = " ".join(cfg["_tierlab_notes"])
    assert "--context-parallel-size 2" in note and "Ulysses" in note
