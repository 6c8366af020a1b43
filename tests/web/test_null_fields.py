"""A null where a number belongs means "the default" (as an absent field), and a list or
object where a name belongs is a 400 naming the field: never a 500 (found by a newcomer:
``training.context_parallel: null`` reached ``None > 1``; ``cluster.node: []`` a dict
lookup)."""

import copy

import pytest

pytestmark = pytest.mark.django_db
URL = "/api/v1/estimate/"
BASE = {"model": {"preset": "llama2-7b"}, "cluster": {"node": "dgx-h100", "num_nodes": 1},
        "training": {"flash_attention": True},
        "strategy": {"kind": "zero3"}}

NULLABLE = [("training", k) for k in (
    "context_parallel", "expert_parallel", "tensor_parallel", "pipeline_parallel",
    "micro_batch_size", "seq_len", "moe_routing_imbalance", "moe_router_group_topk", "network_efficiency",
    "recompute_layers", "first_pipeline_layers")] + [
    ("strategy", "prefetch_miss_rate"), ("strategy", "prefetch_depth"),
    ("runtime", "runtime_bytes"), ("checkpoint", "detect_s"), ("checkpoint", "warmup_s"),
    ("checkpoint", "run_length_s"), ("checkpoint", "differential_fraction")]


@pytest.mark.parametrize("section,key", NULLABLE, ids=[f"{s}.{k}" for s, k in NULLABLE])
def test_a_null_number_is_its_default(owner_api, section, key):
    spec = copy.deepcopy(BASE)
    spec.setdefault(section, {})[key] = None
    r = owner_api.post(URL, {"scenario": spec}, format="json")
    plain = owner_api.post(URL, {"scenario": BASE}, format="json")
    assert r.status_code == 200, r.content[:300]
    assert r.json()["memory"]["per_gpu"]["hbm"]["total_bytes"] == \
        plain.json()["memory"]["per_gpu"]["hbm"]["total_bytes"]


@pytest.mark.parametrize("path,value", [("cluster.node", []), ("cluster.node", {}), ("model.preset", []),
                                        ("model.preset", {"a": 1})])
def test_a_list_or_object_for_a_name_is_a_400_naming_it(owner_api, path, value):
    spec = copy.deepcopy(BASE)
    section, key = path.split(".")
    spec[section][key] = value
    r = owner_api.post(URL, {"scenario": spec}, format="json")
    assert r.status_code == 400, r.content[:300]
    assert list(r.json()) == [f"scenario.{path}"]


def test_a_saved_scenario_and_a_sweep_axis_take_null_too(owner_api):
    spec = copy.deepcopy(BASE)
    spec["training"]["context_parallel"] = None
    r = owner_api.post("/api/v1/scenarios/", {"name": "null cp", "scenario": spec}, format="json")
    assert r.status_code == 201, r.content[:300]
