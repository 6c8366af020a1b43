"""Cluster profiles are read by id when a scenario names one, with the visibility check runs
have, everywhere a scenario is computed: sweeps (when made, and in the worker), downloads,
forks (a profile the forker may not use is copied as its figures); and one account keeps at
most ``MAX_PROFILES_PER_USER`` of them."""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from tests.web.dashboard_helpers import run_chunks, run_queued_runs, spec
from tierlab.catalog.lookups import catalog_lookups
from tierlab.dashboard import sweeps
from tierlab.dashboard.models import ShareLink, Sweep
from tierlab.scenarios import services
from tierlab.scenarios.models import ClusterProfile, Run, Scenario

pytestmark = pytest.mark.django_db

FIGURES = {"network_efficiency": 0.7}
AXES = [{"path": "cluster.num_nodes", "values": [1, 2]}]


def profile(owner, name="p", **figures):
    return ClusterProfile.objects.create(owner=owner, name=name, measurements={}, figures=figures or FIGURES)


def on(pk, **changes):
    return spec(**{"cluster.profile": pk, **changes})


def test_no_process_loads_every_profile(owner, stranger, settings):
    settings.CATALOG_CHECK_S = 0               # every call asks whether the tables changed
    for i in range(30):
        profile(stranger, f"s{i}")
    mine = profile(owner)
    services.estimate(on(mine.pk), user=owner)
    profile(stranger, "new")                   # a profile made elsewhere: nothing to reload
    with CaptureQueriesContext(connection) as queries:
        catalog_lookups()
        report = services.estimate(on(mine.pk), user=owner)
    assert report["memory"]
    table = ClusterProfile._meta.db_table
    reads = [q["sql"] for q in queries.captured_queries if f'FROM "{table}"' in q["sql"]]
    assert reads and all(f'"{table}"."id" = {mine.pk}' in sql for sql in reads), reads
    assert len(reads) == 1, reads          # the check and the engine share the request's table


def test_a_profile_made_or_refitted_is_used_at_once(owner):
    p = profile(owner)
    first = services.resolve(on(p.pk), owner)["cluster"]["profile"]
    ClusterProfile.objects.filter(pk=p.pk).update(figures={"network_efficiency": 0.5})
    assert first["network_efficiency"] == 0.7
    assert services.resolve(on(p.pk), owner)["cluster"]["profile"]["network_efficiency"] == 0.5


def test_an_account_keeps_at_most_the_settings_profiles(owner_api, owner, stranger, settings):
    from tests.web.test_cluster_profiles_api import create

    settings.TIERLAB_MAX_PROFILES_PER_USER = 2
    profile(owner, "a"), profile(owner, "b"), profile(stranger, "c"), profile(stranger, "d")
    r = create(owner_api)
    assert r.status_code == 400 and "MAX_PROFILES_PER_USER" in r.json()["name"][0], r.json()
    assert ClusterProfile.objects.filter(owner=owner).count() == 2
    ClusterProfile.objects.filter(owner=owner, name="a").delete()
    assert create(owner_api).status_code == 201


def test_a_sweep_of_a_scenario_naming_someone_elses_profile_is_refused(owner, stranger, stranger_api):
    theirs = profile(owner)
    # saved before the check existed, or by a fork: the stranger may not use it
    scenario = Scenario.objects.create(owner=stranger, name="x", spec=on(theirs.pk))
    r = stranger_api.post("/api/v1/sweeps/", {"scenario": scenario.pk, "axes": AXES}, format="json")
    assert r.status_code == 400 and "unknown cluster profile" in r.json()["scenario"][0], r.json()
    assert not Sweep.objects.exists()


def test_a_sweep_whose_owner_may_no_longer_use_the_profile_fails_its_points(owner, teammate):
    from django.contrib.auth.models import Group

    shared = profile(owner)
    scenario = Scenario.objects.create(owner=teammate, name="x", spec=on(shared.pk))
    sweep = sweeps.create_sweep(teammate, scenario.pk, AXES)          # the team may use it now
    Group.objects.get(name="team").user_set.remove(teammate)         # ... and no longer
    run_chunks(sweep)
    points = sweeps.sweep_payload(sweep)["points"]
    assert [p["status"] for p in points] == ["failed", "failed"]
    assert all("unknown cluster profile" in p["error"] for p in points), points


def test_downloads_check_the_profile_as_runs_do(owner, stranger, stranger_api, anon_api):
    theirs = profile(owner)
    scenario = Scenario.objects.create(owner=stranger, name="x", spec=on(theirs.pk))
    for name in ("deepspeed.json", "fsdp.py", "megatron.txt"):
        r = stranger_api.get(f"/api/v1/scenarios/{scenario.pk}/{name}")
        assert r.status_code == 400, (name, r.json())
        assert "unknown cluster profile" in r.json()["scenario.cluster.profile"][0]
    link = ShareLink.objects.create(owner=stranger, scenario=scenario)
    r = anon_api.get(f"/api/v1/shared/{link.token}/deepspeed.json")
    assert r.status_code == 400 and "scenario.cluster.profile" in r.json()


def test_a_fork_of_a_scenario_on_a_profile_the_forker_may_not_use_carries_its_figures(
        owner, owner_api, stranger, stranger_api, teammate_api):
    mine = profile(owner, "selene")
    scenario = Scenario.objects.create(owner=owner, name="on selene", spec=on(mine.pk))
    token = owner_api.post("/api/v1/shares/", {"scenario": scenario.pk}, format="json").json()["token"]
    r = stranger_api.post(f"/api/v1/shared/{token}/fork/")
    assert r.status_code == 201, r.json()
    fork = Scenario.objects.get(pk=r.json()["id"])
    assert fork.spec["cluster"]["profile"] == {**FIGURES, "id": mine.pk, "name": "selene"}
    # the team may use the profile: their fork keeps naming it (a refit reaches it)
    team_fork = Scenario.objects.get(pk=teammate_api.post(f"/api/v1/shared/{token}/fork/").json()["id"])
    assert team_fork.spec["cluster"]["profile"] == mine.pk
    ShareLink.objects.filter(token=token).update(revoked_at="2026-01-01T00:00Z")
    run = stranger_api.post(f"/api/v1/scenarios/{fork.pk}/runs/")
    assert run.status_code == 202, run.json()
    run_queued_runs()
    assert Run.objects.get(pk=run.json()["id"]).status == Run.Status.SUCCEEDED
    assert stranger_api.post("/api/v1/sweeps/", {"scenario": fork.pk, "axes": AXES},
                             format="json").status_code == 202
