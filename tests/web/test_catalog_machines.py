"""The machines of issues #14 and #15 reach the product: the catalog API lists them (the
catalog fills from simulation.presets via load_catalog, no migration), each row validates
with the engine, the estimate API evaluates a scenario on them, and the forms offer them
(the scenario form fills its node select from /api/v1/catalog/nodes/; the plan and
cluster-profile forms render theirs from the catalog)."""

import pytest

from tests.engine.test_presets_machines import NEW_ACCELERATORS, NEW_NODES
from tierlab.catalog.models import Accelerator, NodeTemplate

pytestmark = pytest.mark.django_db


def test_the_catalog_api_lists_the_new_machines_and_each_row_validates(anon_api, catalog):
    nodes = {r["slug"]: r for r in anon_api.get("/api/v1/catalog/nodes/").json()}
    accs = {r["slug"]: r for r in anon_api.get("/api/v1/catalog/accelerators/").json()}
    assert set(NEW_NODES) <= set(nodes) and set(NEW_ACCELERATORS) <= set(accs)
    # Ada whitepaper, RTX 4090 table: 165.2 TFLOP/s bf16 with FP32 accumulate (half of 330.3)
    assert accs["rtx4090-24gb"]["spec"]["peak_flops_bf16"] == pytest.approx(165.2e12)
    assert nodes["rtx4090-workstation"]["spec"]["gpus_per_node"] == 1
    assert nodes["dgx-b200"]["spec"]["price_usd_per_node_hour"] == pytest.approx(8 * 6.03)
    for row in NodeTemplate.objects.filter(slug__in=NEW_NODES):
        row.full_clean()
    for row in Accelerator.objects.filter(slug__in=NEW_ACCELERATORS):
        row.full_clean()


@pytest.mark.parametrize("node", ["rtx4090-workstation", "rtx3090-nvlink-pair", "mi325x-8gpu"])
def test_the_estimate_api_evaluates_a_scenario_on_them(owner_api, catalog, node):
    body = {"scenario": {"model": {"preset": "llama3.2-1b"}, "cluster": {"node": node},
                         "training": {"global_batch_size": 8, "seq_len": 1024,
                                      "recompute": "full"},
                         "strategy": {"kind": "zero3"}},
            "include_step": True}
    r = owner_api.post("/api/v1/estimate/", body, format="json")
    assert r.status_code == 200, r.content
    out = r.json()
    assert out["fits"] is True and out["step"]["time_s"] > 0


def test_the_plan_and_profile_forms_offer_them(client, owner, catalog):
    client.force_login(owner)
    plan = client.get("/plans/new/").content.decode()
    profiles = client.get("/profiles/").content.decode()
    for slug in NEW_NODES:
        assert f'value="{slug}"' in plan and f'value="{slug}"' in profiles


def test_the_catalog_page_shows_them(client, catalog):
    html = client.get("/catalog/").content.decode()
    for name in ("Workstation, 1x RTX 4090", "NVIDIA GeForce RTX 4090", "8x AMD Instinct MI325X platform",
                 "NVIDIA H800 SXM5 80GB", "NVIDIA DGX-2 (16x V100 32GB)"):
        assert name in html, name
