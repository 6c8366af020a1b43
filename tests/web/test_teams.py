"""Who sees and changes what (tierlab.access), with named users: the owner, a teammate (in a
group with the owner), a stranger, and anonymous visitors with a share link.

Owner: reads and changes. Teammate: reads (API, pages, downloads) and copies, but every change
is 403. Stranger: 404 for everything, reads and changes alike. A share link: read-only for
anyone, 410 once revoked.
"""

import pytest
from django.contrib.auth.models import Group
from django.test import Client

from tests.web.dashboard_helpers import run_chunks, run_queued_runs, spec, strategies
from tierlab.dashboard import comparisons, sweeps
from tierlab.dashboard.models import Comparison, ShareLink, Sweep
from tierlab.scenarios import services
from tierlab.scenarios.models import Run, Scenario

pytestmark = pytest.mark.django_db


class Objects:
    """The owner's scenario (with a succeeded run), comparison and finished sweep."""

    def __init__(self, owner):
        self.scenario, other = strategies(owner, ("zero3", "zero2"))
        self.run = services.start_run(self.scenario)
        self.comparison = comparisons.create_comparison(owner, [self.scenario.pk, other.pk], "team comparison")
        run_queued_runs()
        self.run.refresh_from_db()
        self.sweep = sweeps.create_sweep(owner, self.scenario.pk, [{"path": "cluster.num_nodes", "values": [1, 2]}])
        run_chunks(self.sweep)

    def api_reads(self) -> list[str]:
        s, r, c, w = self.scenario.pk, self.run.pk, self.comparison.pk, self.sweep.pk
        return [f"/api/v1/scenarios/{s}/", f"/api/v1/scenarios/{s}/runs/", f"/api/v1/runs/{r}/",
                f"/api/v1/runs/{r}/report.json", f"/api/v1/scenarios/{s}/deepspeed.json",
                f"/api/v1/scenarios/{s}/fsdp.py", f"/api/v1/comparisons/{c}/",
                f"/api/v1/comparisons/{c}/export.csv", f"/api/v1/sweeps/{w}/"]

    def pages(self) -> list[str]:
        return [f"/scenarios/{self.scenario.pk}/", f"/runs/{self.run.pk}/", f"/compare/{self.comparison.pk}/",
                f"/sweeps/{self.sweep.pk}/", f"/scenarios/{self.scenario.pk}/duplicate/"]


@pytest.fixture
def objects(owner):
    return Objects(owner)


def browser(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


# ---------------------------------------------------------------- reading
def test_the_owner_reads_everything(owner_api, owner, objects, vite_manifest):
    assert objects.run.status == Run.Status.SUCCEEDED
    for url in objects.api_reads():
        assert owner_api.get(url).status_code == 200, url
    for url in objects.pages():
        assert browser(owner).get(url).status_code == 200, url


def test_a_teammate_reads_everything(teammate_api, teammate, objects, vite_manifest):
    for url in objects.api_reads():
        assert teammate_api.get(url).status_code == 200, url
    for url in objects.pages():
        assert browser(teammate).get(url).status_code == 200, url


def test_a_stranger_gets_404_not_403(stranger_api, stranger, objects, vite_manifest):
    for url in objects.api_reads():
        assert stranger_api.get(url).status_code == 404, url
    for url in objects.pages():
        assert browser(stranger).get(url).status_code == 404, url


def test_anonymous_visitors_must_log_in(anon_api, client, objects):
    for url in objects.api_reads():
        assert anon_api.get(url).status_code == 401, url
    for url in objects.pages():
        r = client.get(url)
        assert r.status_code == 302 and r["Location"].startswith("/accounts/login/"), url


def test_lists_hold_own_and_team_rows_with_their_owner(owner_api, teammate_api, stranger_api, teammate, objects):
    mine = Scenario.objects.create(owner=teammate, name="teammate's own", spec=spec())
    for url in ("/api/v1/scenarios/", "/api/v1/runs/", "/api/v1/comparisons/", "/api/v1/sweeps/"):
        assert stranger_api.get(url).json()["count"] == 0, url
        rows = teammate_api.get(url).json()["results"]
        assert rows, url
    names = {s["name"]: s["owner"] for s in teammate_api.get("/api/v1/scenarios/").json()["results"]}
    assert names["teammate's own"] == "teammate" and names[objects.scenario.name] == "owner"
    assert teammate_api.get("/api/v1/comparisons/").json()["results"][0]["owner"] == "owner"
    assert teammate_api.get("/api/v1/sweeps/").json()["results"][0]["owner"] == "owner"
    assert teammate_api.get(f"/api/v1/sweeps/{objects.sweep.pk}/").json()["owner"] == "owner"
    assert {r["owner"] for r in teammate_api.get("/api/v1/runs/").json()["results"]} == {"owner"}
    assert teammate_api.get(f"/api/v1/runs/{objects.run.pk}/").json()["owner"] == "owner"
    assert teammate_api.get(f"/api/v1/scenarios/{objects.scenario.pk}/runs/").json()["results"][0]["owner"] == "owner"
    # the team is both ways: the owner sees the teammate's scenario too
    assert owner_api.get(f"/api/v1/scenarios/{mine.pk}/").json()["owner"] == "teammate"


def test_the_list_pages_show_the_teams_rows_read_only(teammate, objects, vite_manifest):
    html = browser(teammate).get("/scenarios/").content.decode()
    team_table = html[html.index('id="team-scenarios"'):]
    assert objects.scenario.name in team_table and "<td>owner</td>" in team_table
    assert f'/scenarios/{objects.scenario.pk}/run/' not in html       # no Run button
    assert f'/scenarios/{objects.scenario.pk}/duplicate/' in team_table
    index = browser(teammate).get("/compare/").content.decode()
    assert objects.comparison.name in index and objects.sweep.name in index


def test_a_teammates_pages_have_no_owner_controls(owner, teammate, objects, vite_manifest):
    s = objects.scenario
    for user, mine in ((owner, True), (teammate, False)):
        page = browser(user).get(f"/scenarios/{s.pk}/").content.decode()
        assert (f'action="/scenarios/{s.pk}/run/"' in page) is mine
        assert ('id="share-create"' in page) is mine
        assert ('id="read-only-note"' in page) is not mine
        assert 'id="duplicate-scenario"' in page                     # copying is for both
        run_page = browser(user).get(f"/runs/{objects.run.pk}/").content.decode()
        assert ("Run again" in run_page) is mine
        sweep_page = browser(user).get(f"/sweeps/{objects.sweep.pk}/").content.decode()
        assert ('data-cancel-url=""' in sweep_page) is not mine
        assert ('id="share-create"' in browser(user).get(f"/compare/{objects.comparison.pk}/").content.decode()) is mine


# ---------------------------------------------------------------- changing
def test_only_the_owner_starts_a_run(owner_api, teammate_api, stranger_api, objects):
    url = f"/api/v1/scenarios/{objects.scenario.pk}/runs/"
    before = Run.objects.count()
    r = teammate_api.post(url)
    assert r.status_code == 403 and "owner" in r.json()["detail"]
    assert stranger_api.post(url).status_code == 404
    assert Run.objects.count() == before
    assert owner_api.post(url).status_code == 202


def test_only_the_owner_cancels_a_sweep(owner_api, teammate_api, stranger_api, owner, objects):
    sweep = sweeps.create_sweep(owner, objects.scenario.pk, [{"path": "cluster.num_nodes", "values": [1, 2]}])
    url = f"/api/v1/sweeps/{sweep.pk}/cancel/"
    assert teammate_api.post(url).status_code == 403
    assert stranger_api.post(url).status_code == 404
    assert Sweep.objects.get(pk=sweep.pk).status == Sweep.Status.QUEUED
    assert owner_api.post(url).status_code == 200


@pytest.mark.parametrize("method", ["put", "patch", "delete"])
def test_nobody_edits_a_run_or_replaces_an_object_through_the_api(owner_api, teammate_api, stranger_api, objects,
                                                                  method):
    """A run is the engine's record: read-only for all. The others are renamed (PATCH) and
    deleted by their owner only (tests/web/test_rename_delete.py); PUT replaces nothing."""
    urls = [f"/api/v1/runs/{objects.run.pk}/"]
    if method == "put":
        urls += [f"/api/v1/scenarios/{objects.scenario.pk}/", f"/api/v1/comparisons/{objects.comparison.pk}/",
                 f"/api/v1/sweeps/{objects.sweep.pk}/"]
    for url in urls:
        for api in (owner_api, teammate_api, stranger_api):
            assert getattr(api, method)(url, {}, format="json").status_code == 405, (url, method)


AXES = [{"path": "cluster.num_nodes", "values": [1, 2]}]


def test_a_teammate_cannot_share_compare_or_sweep_the_owners_scenario(teammate_api, teammate, owner, objects):
    """README: using a teammate's object is a change, 403; the body field is named in `detail`."""
    s = objects.scenario
    mine = Scenario.objects.create(owner=teammate, name="teammate's own", spec=spec())
    for url, body, field in (("/api/v1/shares/", {"scenario": s.pk}, "scenario"),
                             ("/api/v1/shares/", {"comparison": objects.comparison.pk}, "comparison"),
                             ("/api/v1/shares/", {"sweep": objects.sweep.pk}, "sweep"),
                             ("/api/v1/comparisons/", {"scenarios": [mine.pk, s.pk]}, "scenarios.1"),
                             ("/api/v1/sweeps/", {"scenario": s.pk, "axes": AXES}, "scenario")):
        r = teammate_api.post(url, body, format="json")
        assert r.status_code == 403, (url, body, r.content)
        detail = r.json()["detail"]
        assert detail.startswith(f"{field}: ") and "owner's" in detail and "duplicate" in detail, detail
    assert not ShareLink.objects.exists()
    assert Comparison.objects.count() == 1 and Sweep.objects.count() == 1


def test_a_strangers_or_missing_id_in_a_body_is_a_400_naming_the_field(stranger_api, stranger, objects):
    """What you cannot see is as if it did not exist: the same 400 as an id that has no row."""
    s = objects.scenario
    theirs = Scenario.objects.create(owner=stranger, name="stranger's own", spec=spec())
    missing = Scenario.objects.order_by("-pk").first().pk + 100
    for pk in (s.pk, missing):
        for url, body, field in (("/api/v1/shares/", {"scenario": pk}, "scenario"),
                                 ("/api/v1/comparisons/", {"scenarios": [theirs.pk, pk]}, "scenarios.1"),
                                 ("/api/v1/sweeps/", {"scenario": pk, "axes": AXES}, "scenario")):
            r = stranger_api.post(url, body, format="json")
            assert r.status_code == 400, (url, body, r.content)
            assert r.json() == {field: [f"you have no scenario {pk}"]}, r.json()
    assert not ShareLink.objects.exists()
    assert Comparison.objects.count() == 1 and Sweep.objects.count() == 1


def test_the_pages_refuse_a_teammates_changes_with_403(teammate, stranger, objects):
    for url in (f"/scenarios/{objects.scenario.pk}/run/", f"/sweeps/{objects.sweep.pk}/cancel/"):
        assert browser(teammate).post(url).status_code == 403, url
        assert browser(stranger).post(url).status_code == 404, url
    r = browser(teammate).post("/share/", {"kind": "scenario", "id": objects.scenario.pk})
    assert r.status_code == 302 and not ShareLink.objects.exists()


def test_a_teammate_copies_into_their_own_account(teammate_api, stranger_api, teammate, objects):
    s = objects.scenario
    r = teammate_api.post(f"/api/v1/scenarios/{s.pk}/duplicate/", {"name": "my copy"}, format="json")
    assert r.status_code == 201 and r.json()["owner"] == "teammate"
    copy = Scenario.objects.get(pk=r.json()["id"])
    assert copy.owner == teammate and copy.spec == s.spec
    assert teammate_api.post(f"/api/v1/scenarios/{copy.pk}/runs/").status_code == 202   # theirs now
    r = teammate_api.post(f"/api/v1/scenarios/{s.pk}/variants/", {"question": "sharding"}, format="json")
    assert r.status_code == 201
    assert Comparison.objects.get(pk=r.json()["id"]).owner == teammate
    assert stranger_api.post(f"/api/v1/scenarios/{s.pk}/duplicate/", {}, format="json").status_code == 404
    assert stranger_api.post(f"/api/v1/scenarios/{s.pk}/variants/", {"question": "sharding"},
                             format="json").status_code == 404


# ---------------------------------------------------------------- what a team is
def test_teams_are_not_transitive(teammate_api, stranger_api, teammate, stranger, objects):
    """The stranger shares another group with the teammate: they see each other's, not the owner's."""
    Group.objects.create(name="other team").user_set.add(teammate, stranger)
    theirs = Scenario.objects.create(owner=teammate, name="teammate's", spec=spec())
    assert stranger_api.get(f"/api/v1/scenarios/{theirs.pk}/").status_code == 200
    assert stranger_api.get(f"/api/v1/scenarios/{objects.scenario.pk}/").status_code == 404
    assert [s["name"] for s in stranger_api.get("/api/v1/scenarios/").json()["results"]] == ["teammate's"]
    assert teammate_api.get("/api/v1/scenarios/").json()["count"] == 3    # owner's two and their own


def test_leaving_the_team_hides_it_at_once(teammate_api, teammate, objects):
    url = f"/api/v1/scenarios/{objects.scenario.pk}/"
    assert teammate_api.get(url).status_code == 200
    teammate.groups.clear()
    assert teammate_api.get(url).status_code == 404
    assert teammate_api.get("/api/v1/runs/").json()["count"] == 0


# ---------------------------------------------------------------- share links
@pytest.mark.parametrize("kind", ["scenario", "comparison", "sweep"])
def test_a_share_link_is_read_only_for_anyone_and_gone_once_revoked(owner_api, anon_api, teammate_api, objects, kind):
    target = getattr(objects, kind)
    link = owner_api.post("/api/v1/shares/", {kind: target.pk}, format="json").json()
    shared = f"/api/v1/shared/{link['token']}/"
    r = anon_api.get(shared)
    assert r.status_code == 200 and r.json()["kind"] == kind and r.json()["owner"] == "owner"
    for method in ("post", "put", "patch", "delete"):
        assert getattr(anon_api, method)(shared, {}, format="json").status_code == 405, method
    assert anon_api.post(f"{shared}fork/").status_code == 401          # forking needs an account
    assert anon_api.get(objects.api_reads()[0]).status_code == 401     # the link opens only itself
    assert teammate_api.post(f"/api/v1/shares/{link['id']}/revoke/").status_code == 404   # not their link
    assert owner_api.post(f"/api/v1/shares/{link['id']}/revoke/").status_code == 200
    for api in (anon_api, teammate_api, owner_api):
        assert api.get(shared).status_code == 410
    assert Client().get(f"/s/{link['token']}/").status_code == 410


# ---------------------------------------------------------------- the catalog
@pytest.mark.parametrize("method", ["post", "put", "patch", "delete"])
def test_the_catalog_api_is_read_only_even_for_staff(method, anon_api, owner_api, user_admin, catalog):
    from rest_framework.test import APIClient

    staff = APIClient()
    staff.force_authenticate(user_admin)
    for api in (anon_api, owner_api, staff):
        for url in ("/api/v1/catalog/models/", "/api/v1/catalog/models/llama2-7b/"):
            assert getattr(api, method)(url, {"name": "x"}, format="json").status_code == 405, url


def test_staff_edit_the_catalog_in_the_admin(client, user_admin, owner, catalog):
    from tierlab.catalog.models import ModelPreset

    preset = ModelPreset.objects.get(slug="llama2-7b")
    client.force_login(owner)
    assert client.get(f"/admin/catalog/modelpreset/{preset.pk}/change/").status_code == 302
    client.force_login(user_admin)
    assert client.get(f"/admin/catalog/modelpreset/{preset.pk}/change/").status_code == 200
