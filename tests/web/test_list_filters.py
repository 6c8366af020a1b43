"""Lists: every list is paginated (`{count, next, previous, results}`, `page_size` up to 500)
and filtered: `?q=` and `?owner=` on scenarios, comparisons and sweeps; `?status=` on runs
and sweeps; `?scenario=` on runs, comparisons and sweeps. A bad value is a 400 naming it."""

import pytest

from tests.web.dashboard_helpers import run_chunks, spec, strategies
from tierlab.dashboard import comparisons, sweeps
from tierlab.scenarios import services
from tierlab.scenarios.models import Run, Scenario

pytestmark = pytest.mark.django_db


def results(api, url) -> list[dict]:
    r = api.get(url)
    assert r.status_code == 200, r.json()
    return r.json()["results"]


def names(api, url) -> list[str]:
    return [row["name"] for row in results(api, url)]


def test_lists_are_paginated(owner_api, owner):
    for i in range(5):
        Scenario.objects.create(owner=owner, name=f"s{i}", spec=spec())
    first = owner_api.get("/api/v1/scenarios/?page_size=2").json()
    assert set(first) == {"count", "next", "previous", "results"}
    assert first["count"] == 5 and len(first["results"]) == 2 and first["previous"] is None
    assert "page=2" in first["next"] and "page_size=2" in first["next"]
    last = owner_api.get("/api/v1/scenarios/?page_size=2&page=3").json()
    assert [s["name"] for s in last["results"]] == ["s0"] and last["next"] is None
    assert owner_api.get("/api/v1/scenarios/?page_size=2&page=4").status_code == 404
    assert owner_api.get("/api/v1/scenarios/?page_size=501").status_code == 400


def test_scenarios_by_name_and_owner(owner_api, owner, teammate):
    for name in ("Llama 70B ZeRO-3", "llama 7B offload", "GPT-3 FSDP"):
        Scenario.objects.create(owner=owner, name=name, spec=spec())
    Scenario.objects.create(owner=teammate, name="teammate's llama", spec=spec())
    assert sorted(names(owner_api, "/api/v1/scenarios/?q=LLAMA")) == [
        "Llama 70B ZeRO-3", "llama 7B offload", "teammate's llama"]
    assert names(owner_api, "/api/v1/scenarios/?q=llama&owner=teammate") == ["teammate's llama"]
    assert names(owner_api, "/api/v1/scenarios/?q=nothing like it") == []
    assert len(names(owner_api, "/api/v1/scenarios/?q=")) == 4                 # empty: no filter


def test_runs_by_status_and_scenario(owner_api, owner):
    a, b = strategies(owner, ("zero2", "zero3"))
    queued = services.start_run(a)
    done = services.start_run(b)
    services.execute_run(done.pk)
    ids = lambda url: [r["id"] for r in results(owner_api, url)]  # noqa: E731
    assert ids("/api/v1/runs/?status=queued") == [queued.pk]
    assert ids("/api/v1/runs/?status=succeeded") == [done.pk]
    assert ids("/api/v1/runs/?status=failed") == []
    assert ids(f"/api/v1/runs/?scenario={b.pk}") == [done.pk]
    assert ids(f"/api/v1/runs/?scenario={a.pk}&status=succeeded") == []
    # one scenario's runs: the same page shape and the same status filter
    assert ids(f"/api/v1/scenarios/{a.pk}/runs/?status=queued") == [queued.pk]
    assert ids(f"/api/v1/scenarios/{a.pk}/runs/?status=succeeded") == []
    assert owner_api.get(f"/api/v1/scenarios/{a.pk}/runs/?page_size=1").json()["count"] == 1


def test_comparisons_by_name_and_scenario(owner_api, owner):
    a, b, c = strategies(owner)
    comparisons.create_comparison(owner, [a.pk, b.pk], "sharding")
    comparisons.create_comparison(owner, [b.pk, c.pk], "offload")
    assert names(owner_api, "/api/v1/comparisons/?q=SHARD") == ["sharding"]
    assert names(owner_api, f"/api/v1/comparisons/?scenario={a.pk}") == ["sharding"]
    assert sorted(names(owner_api, f"/api/v1/comparisons/?scenario={b.pk}")) == ["offload", "sharding"]
    assert names(owner_api, "/api/v1/comparisons/?owner=someone") == []


def test_sweeps_by_status_name_and_scenario(owner_api, owner):
    a, b = strategies(owner, ("zero2", "zero3"))
    done = sweeps.create_sweep(owner, a.pk, [{"path": "cluster.num_nodes", "values": [1, 2]}], "nodes")
    run_chunks(done)
    sweeps.create_sweep(owner, b.pk, [{"path": "training.micro_batch_size", "values": [1, 2]}], "micro")
    assert names(owner_api, "/api/v1/sweeps/?status=succeeded") == ["nodes"]
    assert names(owner_api, "/api/v1/sweeps/?status=queued") == ["micro"]
    assert names(owner_api, f"/api/v1/sweeps/?scenario={b.pk}") == ["micro"]
    assert names(owner_api, "/api/v1/sweeps/?q=NOD&owner=owner") == ["nodes"]


@pytest.mark.parametrize("url, param", [
    ("/api/v1/runs/?status=done", "status"),
    ("/api/v1/sweeps/?status=finished", "status"),
    ("/api/v1/runs/?scenario=abc", "scenario"),
    ("/api/v1/runs/?scenario=0", "scenario"),
    ("/api/v1/runs/?scenario=1.5", "scenario"),
    ("/api/v1/comparisons/?scenario=99999999999999999999", "scenario"),
    ("/api/v1/sweeps/?scenario=-1", "scenario"),
    ("/api/v1/runs/?status=", "status"),           # empty: leave it out to list all
    ("/api/v1/sweeps/?scenario=", "scenario"),
])
def test_a_bad_filter_value_is_a_400_naming_it(owner_api, url, param):
    r = owner_api.get(url)
    assert r.status_code == 400 and list(r.json()) == [param], r.json()


def test_a_bad_status_on_one_scenarios_runs_is_a_400(owner_api, owner):
    s = Scenario.objects.create(owner=owner, name="s", spec=spec())
    for value in ("nope", ""):
        r = owner_api.get(f"/api/v1/scenarios/{s.pk}/runs/?status={value}")
        assert r.status_code == 400 and "status" in r.json()


def test_filters_never_widen_what_you_see(stranger_api, owner):
    s = Scenario.objects.create(owner=owner, name="secret", spec=spec())
    services.start_run(s)
    assert stranger_api.get("/api/v1/scenarios/?owner=owner").json()["count"] == 0
    assert stranger_api.get(f"/api/v1/runs/?scenario={s.pk}").json()["count"] == 0
    assert Run.objects.count() == 1


def test_the_schema_documents_the_filters(client):
    paths = client.get("/api/schema/?format=json").json()["paths"]

    def params(path, method="get"):
        return {p["name"]: p["schema"] for p in paths[path][method]["parameters"] if p["in"] == "query"}

    assert {"q", "owner", "page", "page_size"} <= set(params("/api/v1/scenarios/"))
    assert params("/api/v1/runs/")["status"]["enum"] == ["failed", "queued", "running", "succeeded"]
    assert params("/api/v1/runs/")["scenario"] == {"type": "integer", "minimum": 1, "maximum": 2**63 - 1}
    assert {"q", "owner", "scenario"} <= set(params("/api/v1/comparisons/"))
    assert {"q", "owner", "status", "scenario"} <= set(params("/api/v1/sweeps/"))
    assert {"status", "page", "page_size"} <= set(params("/api/v1/scenarios/{id}/runs/"))
    runs_post = paths["/api/v1/scenarios/{id}/runs/"]["post"]
    assert "Idempotency-Key" in {p["name"] for p in runs_post["parameters"] if p["in"] == "header"}
    assert "422" in runs_post["responses"]
