"""Expert parallelism through the API: the estimate carries the step's expert-parallel
figures and the per-rank expert memory, a bad degree is a 400 naming its field, and the
DeepSpeed export carries ep_size and the Megatron arguments."""

import json

import pytest

from tierlab.scenarios.models import Scenario

pytestmark = pytest.mark.django_db

URL = "/api/v1/estimate/"


def mixtral(**training) -> dict:
    return {"model": {"preset": "mixtral-8x7b"}, "cluster": {"node": "dgx-h100", "num_nodes": 1},
            "training": {"micro_batch_size": 1, "global_batch_size": 8, "seq_len": 4096,
                         "flash_attention": True, "recompute": "selective", **training},
            "strategy": {"kind": "megatron_dist_opt"}}


def test_the_estimate_shows_expert_parallelism(owner_api):
    r = owner_api.post(URL, {"scenario": mixtral(expert_parallel=8, moe_routing_imbalance=1.5),
                             "include_step": True}, format="json")
    assert r.status_code == 200
    report = r.json()
    ep = report["step"]["expert_parallel"]
    assert (ep["expert_parallel"], ep["experts_per_rank"], ep["token_factor"]) == (8, 1, 1.5)
    assert ep["alltoall_s"] > 0 and ep["link"] == "nvlink"
    assert report["parallelism"]["expert_parallel"] == 8
    names = [p["name"] for p in report["memory"]["per_gpu"]["hbm"]["parts"]]
    assert "routed tokens beyond the mean on the busiest EP rank" in names
    plain = owner_api.post(URL, {"scenario": mixtral()}, format="json").json()
    assert "expert_parallel" not in plain["parallelism"]
    assert report["memory"]["per_gpu"]["hbm"]["params_bytes"] < plain["memory"]["per_gpu"]["hbm"]["params_bytes"] / 4


def test_a_degree_that_does_not_divide_the_experts_is_a_400(owner_api):
    r = owner_api.post(URL, {"scenario": mixtral(expert_parallel=3)}, format="json")
    assert r.status_code == 400
    assert list(r.json()) == ["scenario.training.expert_parallel"]


def test_the_deepspeed_export_carries_ep_size(owner_api, owner):
    sc = Scenario.objects.create(owner=owner, name="Mixtral EP 8", spec=mixtral(expert_parallel=8))
    r = owner_api.get(f"/api/v1/scenarios/{sc.pk}/deepspeed.json")
    assert r.status_code == 200
    cfg = json.loads(r.content)
    assert cfg["_tierlab_moe"]["ep_size"] == 8
    assert "--expert-model-parallel-size 8" in cfg["_tierlab_megatron_args"]
