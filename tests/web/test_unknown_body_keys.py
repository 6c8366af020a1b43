"""Every API endpoint that takes a JSON body refuses a key it does not know, naming it (DRF
drops them: a misspelt "nmae" created a comparison with the default name), and creates
nothing. Read-only fields echoed back from a GET are fields, not unknown keys."""

import pytest

from tierlab.dashboard.models import Comparison, Plan, ShareLink, Sweep
from tierlab.scenarios.models import ClusterProfile, Scenario


@pytest.fixture
def two(owner, example_spec):
    return [Scenario.objects.create(owner=owner, name=f"s{i}", spec=example_spec).pk for i in range(2)]


def bodies(two):
    a, b = two
    plan = {"model": "llama2-7b", "cluster": {"node": "dgx-h100", "num_nodes": 1},
            "training": {"seq_len": 2048, "global_batch_size": 8}}
    return [
        ("/api/v1/comparisons/", {"scenarios": [a, b], "nmae": "mine"}, Comparison),
        ("/api/v1/sweeps/", {"scenario": a, "axes": [{"path": "cluster.num_nodes", "values": [1, 2]}],
                             "bogus": 1}, Sweep),
        ("/api/v1/plans/", {"spec": plan, "bogus": 1}, Plan),
        ("/api/v1/cluster-profiles/", {"name": "x", "measurements": {"cluster": {"node": "dgx-h100"},
                                                                     "gemm": {"flops_per_s": 6e14}},
                                       "bogus": 1}, ClusterProfile),
        (f"/api/v1/scenarios/{a}/duplicate/", {"name": "copy", "bogus": 1}, Scenario),
        ("/api/v1/shares/", {"scenario": a, "bogus": 1}, ShareLink),
    ]


def test_a_misspelt_key_is_a_400_naming_it_and_nothing_is_created(owner_api, two):
    for url, body, model in bodies(two):
        before = model.objects.count()
        r = owner_api.post(url, body, format="json")
        bad = "nmae" if "nmae" in body else "bogus"
        assert r.status_code == 400, (url, r.status_code, r.content[:200])
        assert bad in r.json() and r.json()[bad][0].startswith("unknown field; known fields:"), (url, r.json())
        assert model.objects.count() == before, url
        # the same body without the bad key is accepted
        del body[bad]
        r = owner_api.post(url, body, format="json")
        assert r.status_code in (200, 201, 202), (url, r.status_code, r.content[:300])
