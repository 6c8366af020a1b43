"""GB200 NVL72 through the product (issue #15): the catalog API lists the tray template
with its 72-GPU NVLink domain and price, a scenario on it is saved, run and compared with
the same run on DGX B200 through the API, and the estimate API refuses a domain that does
not join whole trays, naming the field."""

import pytest

from tests.web.dashboard_helpers import run_queued_runs
from tierlab.scenarios.models import Scenario

pytestmark = pytest.mark.django_db

# Llama-2-70B, TP 8, on 144 GPUs: 36 GB200 trays (2 racks) or 18 DGX B200.
TRAINING = {"micro_batch_size": 1, "global_batch_size": 18, "seq_len": 4096,
            "recompute": "full", "tensor_parallel": 8, "sequence_parallel": True}


def _spec(cluster: dict) -> dict:
    return {"model": {"preset": "llama2-70b"}, "cluster": cluster, "training": dict(TRAINING),
            "strategy": {"kind": "zero1"}}


def test_the_catalog_lists_the_tray_template_with_its_domain_and_price(anon_api, catalog):
    nodes = {r["slug"]: r for r in anon_api.get("/api/v1/catalog/nodes/").json()}
    spec = nodes["gb200-nvl72"]["spec"]
    assert (spec["gpus_per_node"], spec["nvlink_domain_gpus"]) == (4, 72)
    assert spec["price_usd_per_node_hour"] == pytest.approx(42.0)      # a tray-hour, CoreWeave
    accs = {r["slug"]: r for r in anon_api.get("/api/v1/catalog/accelerators/").json()}
    # NVIDIA GB200 NVL72 page: 360 PFLOPS FP16/BF16 with sparsity -> 180 dense / 72 GPUs
    assert accs["b200-gb200-186gb"]["spec"]["peak_flops_bf16"] == pytest.approx(360e15 / 2 / 72)


def test_a_gb200_scenario_runs_and_compares_with_dgx_b200(owner_api, owner, catalog):
    nvl = Scenario.objects.create(owner=owner, name="70B GB200 NVL72",
                                  spec=_spec({"node": "gb200-nvl72", "num_nodes": 36}))
    dgx = Scenario.objects.create(owner=owner, name="70B DGX B200",
                                  spec=_spec({"node": "dgx-b200", "num_nodes": 18}))
    r = owner_api.post("/api/v1/comparisons/", {"scenarios": [nvl.pk, dgx.pk]}, format="json")
    assert r.status_code == 201, r.json()
    run_queued_runs()
    body = owner_api.get(f"/api/v1/comparisons/{r.json()['id']}/").json()
    assert body["status"] == "succeeded"
    a, b = (i["report"] for i in body["items"])
    # 36 trays x $42.00 = $1,512 an hour; 18 DGX B200 x 8 x $6.03 = $868.32
    assert a["cost"]["usd_per_hour"] == pytest.approx(36 * 42.0)
    assert b["cost"]["usd_per_hour"] == pytest.approx(18 * 8 * 6.03)
    # TP 8 spans two 4-GPU trays but stays on NVLink: the report says the domain joins hosts
    assert any("NVLink domain of 72 GPUs joins 18 hosts of 4" in n for n in a["notes"])
    # the GB200 GPU's 2.5 PFLOP/s and a rack-wide NVLink: the same step runs faster
    assert a["step"]["time_s"] < b["step"]["time_s"]
    inputs = {row["key"]: row for row in body["table"]["inputs"]}
    assert inputs["cluster.node"]["differs"] is True


def test_the_estimate_api_names_a_domain_that_splits_a_tray(owner_api, catalog):
    body = {"scenario": _spec({"node": "gb200-nvl72", "num_nodes": 36, "nvlink_domain_gpus": 70})}
    r = owner_api.post("/api/v1/estimate/", body, format="json")
    assert r.status_code == 400
    assert "cluster.nvlink_domain_gpus" in r.content.decode()
