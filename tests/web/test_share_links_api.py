"""Share links: the owner makes and revokes them; anyone with the token reads (no account);
a revoked link is 410; a viewer with an account forks what it shows."""

import pytest

from tests.web.dashboard_helpers import run_chunks, run_queued_runs, spec, strategies
from tierlab.dashboard import comparisons, sweeps
from tierlab.dashboard.models import Comparison, ShareLink, Sweep
from tierlab.scenarios.models import Run, Scenario

pytestmark = pytest.mark.django_db


@pytest.fixture
def comparison(owner):
    c = comparisons.create_comparison(owner, [s.pk for s in strategies(owner, ("zero2", "zero3"))], "mine")
    run_queued_runs()
    return c


@pytest.fixture
def sweep(owner):
    base = Scenario.objects.create(owner=owner, name="base", spec=spec())
    s = sweeps.create_sweep(owner, base.pk, [{"path": "cluster.num_nodes", "values": [1, 2]}])
    run_chunks(s)
    return s


def share(client, **target):
    return client.post("/api/v1/shares/", target, format="json")


def test_the_owner_makes_an_unguessable_link(owner_api, comparison):
    r = share(owner_api, comparison=comparison.pk)
    assert r.status_code == 201, r.json()
    body = r.json()
    assert body["kind"] == "comparison" and body["target"] == comparison.pk and body["active"] is True
    assert len(body["token"]) >= 43                      # 32 random bytes, URL-safe
    assert body["url"] == f"http://testserver/s/{body['token']}/"
    second = share(owner_api, comparison=comparison.pk).json()
    assert second["token"] != body["token"]
    listed = owner_api.get(f"/api/v1/shares/?comparison={comparison.pk}").json()["results"]
    assert [link["id"] for link in listed] == [second["id"], body["id"]]


def test_anonymous_with_the_link_reads_a_comparison(owner_api, anon_api, comparison):
    token = share(owner_api, comparison=comparison.pk).json()["token"]
    r = anon_api.get(f"/api/v1/shared/{token}/")
    assert r.status_code == 200
    body = r.json()
    assert body["kind"] == "comparison" and body["name"] == "mine" and body["owner"] == "owner"
    data = body["data"]
    assert data["status"] == "succeeded" and len(data["items"]) == 2
    assert all(i["report"] for i in data["items"])
    assert data["id"] is None and all(i["scenario"] is None and i["run"] is None for i in data["items"])
    assert data["table"]["outputs"]


def test_anonymous_with_the_link_reads_a_scenario_and_its_files(owner_api, anon_api, owner):
    scenario = Scenario.objects.create(owner=owner, name="solo", spec=spec())
    token = share(owner_api, scenario=scenario.pk).json()["token"]
    assert Run.objects.filter(scenario=scenario).count() == 1       # sharing started a run
    run_queued_runs()
    body = anon_api.get(f"/api/v1/shared/{token}/").json()
    assert body["kind"] == "scenario"
    assert body["data"]["scenario"] == scenario.spec and body["data"]["items"][0]["report"]["fits"] is True
    for name in ("report.json", "deepspeed.json", "fsdp.py"):
        assert anon_api.get(f"/api/v1/shared/{token}/{name}").status_code == 200, name
    assert anon_api.get(f"/api/v1/shared/{token}/export.csv").status_code == 404   # not for a scenario


def test_anonymous_with_the_link_reads_a_sweep(owner_api, anon_api, sweep):
    token = share(owner_api, sweep=sweep.pk).json()["token"]
    body = anon_api.get(f"/api/v1/shared/{token}/").json()
    assert body["kind"] == "sweep"
    assert body["data"]["status"] == "succeeded" and len(body["data"]["points"]) == 2
    assert body["data"]["base"] == {"id": None, "name": "base"}


def test_a_shared_sweep_reads_light_without_its_points(owner_api, anon_api, sweep):
    """The shared page polls its link's light form, as the owner's page polls theirs: it
    read the whole sweep (every point, ~7 MB at 10,000) on every poll."""
    token = share(owner_api, sweep=sweep.pk).json()["token"]
    url = f"/api/v1/shared/{token}/"
    full = anon_api.get(url)
    light = anon_api.get(url, {"points": "none"})
    assert light.status_code == 200 and "points" not in light.json()["data"]
    assert {k: v for k, v in full.json()["data"].items() if k != "points"} == light.json()["data"]
    assert len(light.content) < len(full.content) - 200
    page = anon_api.get(url, {"points": "1:2"}).json()["data"]["points"]
    assert page == full.json()["data"]["points"][1:2]
    bad = anon_api.get(url, {"points": "some"})
    assert bad.status_code == 400 and list(bad.json()) == ["points"]


def test_a_shared_link_is_read_only(owner_api, anon_api, stranger_api, sweep):
    token = share(owner_api, sweep=sweep.pk).json()["token"]
    for client in (anon_api, stranger_api):
        assert client.post(f"/api/v1/shared/{token}/").status_code == 405
        assert client.delete(f"/api/v1/shared/{token}/").status_code == 405
    # the link gives no access to the owner's own endpoints
    assert stranger_api.get(f"/api/v1/sweeps/{sweep.pk}/").status_code == 404
    assert stranger_api.post(f"/api/v1/sweeps/{sweep.pk}/cancel/").status_code == 404


def test_an_unknown_token_is_404(anon_api):
    assert anon_api.get("/api/v1/shared/not-a-token/").status_code == 404


def test_a_revoked_link_is_410_for_everyone(owner_api, anon_api, comparison):
    link = share(owner_api, comparison=comparison.pk).json()
    r = owner_api.post(f"/api/v1/shares/{link['id']}/revoke/")
    assert r.status_code == 200 and r.json()["active"] is False and r.json()["revoked_at"]
    gone = anon_api.get(f"/api/v1/shared/{link['token']}/")
    assert gone.status_code == 410 and "revoked" in gone.json()["detail"]
    assert owner_api.get(f"/api/v1/shared/{link['token']}/").status_code == 410
    assert anon_api.get(f"/api/v1/shared/{link['token']}/export.csv").status_code == 410
    assert owner_api.post(f"/api/v1/shares/{link['id']}/revoke/").status_code == 200   # harmless twice


def test_strangers_cannot_share_or_revoke_what_is_not_theirs(owner_api, stranger_api, comparison):
    r = share(stranger_api, comparison=comparison.pk)
    assert r.status_code == 400 and r.json() == {"comparison": [f"you have no comparison {comparison.pk}"]}
    link = share(owner_api, comparison=comparison.pk).json()
    assert stranger_api.post(f"/api/v1/shares/{link['id']}/revoke/").status_code == 404
    assert stranger_api.get("/api/v1/shares/").json()["results"] == []
    assert ShareLink.objects.get(pk=link["id"]).is_active


@pytest.mark.parametrize("body", [{}, {"scenario": 1, "sweep": 1}, {"comparison": "x"}])
def test_a_link_needs_exactly_one_target(owner_api, body):
    r = owner_api.post("/api/v1/shares/", body, format="json")
    assert r.status_code == 400
    assert set(r.json()) <= {"target", "comparison"}


def test_anonymous_cannot_make_links(anon_api, comparison):
    assert share(anon_api, comparison=comparison.pk).status_code == 401


def test_a_viewer_forks_a_comparison_into_their_own_account(owner_api, stranger_api, stranger, comparison):
    token = share(owner_api, comparison=comparison.pk).json()["token"]
    r = stranger_api.post(f"/api/v1/shared/{token}/fork/")
    assert r.status_code == 201, r.json()
    fork = Comparison.objects.get(pk=r.json()["id"])
    assert r.json() == {"kind": "comparison", "id": fork.pk, "url": f"/compare/{fork.pk}/"}
    assert fork.owner == stranger and fork.name == "mine (fork)"
    copies = [item.scenario for item in fork.ordered_items()]
    assert all(s.owner == stranger for s in copies)
    assert [s.spec for s in copies] == [item.scenario.spec for item in comparison.ordered_items()]
    # identical inputs: the fork shows the stored results at once
    assert stranger_api.get(f"/api/v1/comparisons/{fork.pk}/").json()["status"] == "succeeded"


def test_a_viewer_forks_a_scenario_and_a_sweep(owner_api, stranger_api, stranger, owner, sweep):
    scenario = Scenario.objects.create(owner=owner, name="solo", spec=spec())
    token = share(owner_api, scenario=scenario.pk).json()["token"]
    r = stranger_api.post(f"/api/v1/shared/{token}/fork/").json()
    assert Scenario.objects.get(pk=r["id"]).owner == stranger and r["url"] == f"/scenarios/{r['id']}/"
    token = share(owner_api, sweep=sweep.pk).json()["token"]
    r = stranger_api.post(f"/api/v1/shared/{token}/fork/").json()
    forked = Sweep.objects.get(pk=r["id"])
    assert forked.owner == stranger and forked.axes == sweep.axes and forked.base.owner == stranger


def test_forking_needs_an_account_and_an_active_link(owner_api, anon_api, stranger_api, comparison):
    link = share(owner_api, comparison=comparison.pk).json()
    assert anon_api.post(f"/api/v1/shared/{link['token']}/fork/").status_code == 401
    owner_api.post(f"/api/v1/shares/{link['id']}/revoke/")
    assert stranger_api.post(f"/api/v1/shared/{link['token']}/fork/").status_code == 410


def test_deleting_the_target_deletes_its_links(owner_api, anon_api, comparison):
    token = share(owner_api, comparison=comparison.pk).json()["token"]
    comparison.delete()
    assert anon_api.get(f"/api/v1/shared/{token}/").status_code == 404
