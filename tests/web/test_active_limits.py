"""Per-user limits on active (queued or running) runs, sweeps and plans
(MAX_ACTIVE_*_PER_USER): one more is a 409 naming the limit, its setting and the active
jobs, nothing queued; other users are not affected; a finished or cancelled job frees its
place. (Nothing reads the queue here: the jobs stay queued.)"""

import pytest

from tests.web.dashboard_helpers import spec
from tests.web.test_plans_api import SPEC as PLAN_SPEC
from tierlab.dashboard.models import Plan, Sweep
from tierlab.scenarios.models import Run, Scenario

pytestmark = pytest.mark.django_db


def scenario_of(user, name="s", **changes):
    return Scenario.objects.create(owner=user, name=name, spec=spec(**changes))


def test_a_run_over_the_limit_is_a_409_naming_the_active_runs(settings, owner_api, stranger_api, owner,
                                                               stranger, queue):
    settings.TIERLAB_MAX_ACTIVE_RUNS = 2
    scenarios = [scenario_of(owner, f"s{n}", **{"training.seq_len": 1024 * (n + 1)}) for n in range(3)]
    first, second = (owner_api.post(f"/api/v1/scenarios/{s.pk}/runs/").json() for s in scenarios[:2])
    r = owner_api.post(f"/api/v1/scenarios/{scenarios[2].pk}/runs/")
    assert r.status_code == 409, r.json()
    body = r.json()
    assert body["limit"] == 2 and body["setting"] == "MAX_ACTIVE_RUNS_PER_USER"
    assert [a["id"] for a in body["active"]] == [first["id"], second["id"]]
    assert body["active"][0] == {"id": first["id"], "name": "s0", "status": "queued",
                                 "url": f"/api/v1/runs/{first['id']}/"}
    assert body["detail"].startswith(f"you have 2 runs queued or running (ids {first['id']}, {second['id']}); "
                                     "at most 2 may be at once (MAX_ACTIVE_RUNS_PER_USER). Wait for one")
    assert Run.objects.count() == 2
    # an identical input waits for the active run: it queues nothing and is not refused
    assert owner_api.post(f"/api/v1/scenarios/{scenarios[0].pk}/runs/").status_code == 202
    # another user has places of their own
    assert stranger_api.post(f"/api/v1/scenarios/{scenario_of(stranger).pk}/runs/").status_code == 202
    # a cancelled run frees its place (the second: the first's follower would take its place)
    assert owner_api.post(f"/api/v1/runs/{second['id']}/cancel/").status_code == 200
    assert owner_api.post(f"/api/v1/scenarios/{scenarios[2].pk}/runs/").status_code == 202


def test_a_sweep_over_the_limit_is_a_409_and_nothing_is_saved(settings, owner_api, owner, queue):
    settings.TIERLAB_MAX_ACTIVE_SWEEPS = 1
    base = scenario_of(owner)
    axes = [{"path": "cluster.num_nodes", "values": [1, 2]}]
    first = owner_api.post("/api/v1/sweeps/", {"scenario": base.pk, "axes": axes}, format="json")
    assert first.status_code == 202
    r = owner_api.post("/api/v1/sweeps/", {"scenario": base.pk, "axes": axes}, format="json")
    assert r.status_code == 409, r.json()
    assert r.json()["setting"] == "MAX_ACTIVE_SWEEPS_PER_USER" and r.json()["limit"] == 1
    assert [a["id"] for a in r.json()["active"]] == [first.json()["id"]]
    assert "POST /api/v1/sweeps/<id>/cancel/" in r.json()["detail"]
    assert Sweep.objects.count() == 1
    owner_api.post(f"/api/v1/sweeps/{first.json()['id']}/cancel/")
    assert owner_api.post("/api/v1/sweeps/", {"scenario": base.pk, "axes": axes},
                          format="json").status_code == 202


def test_a_plan_over_the_limit_is_a_409(settings, owner_api, queue):
    settings.TIERLAB_MAX_ACTIVE_PLANS, settings.TIERLAB_PLAN_CHUNKS = 1, 2
    assert owner_api.post("/api/v1/plans/", {"spec": PLAN_SPEC}, format="json").status_code == 202
    r = owner_api.post("/api/v1/plans/", {"spec": PLAN_SPEC}, format="json")
    assert r.status_code == 409, r.json()
    assert r.json()["setting"] == "MAX_ACTIVE_PLANS_PER_USER" and len(r.json()["active"]) == 1
    assert Plan.objects.count() == 1


def test_a_limit_of_zero_is_no_limit(settings, owner_api, owner, queue):
    settings.TIERLAB_MAX_ACTIVE_SWEEPS = 0
    base = scenario_of(owner)
    for n in range(4):
        assert owner_api.post("/api/v1/sweeps/", {"scenario": base.pk, "axes": [
            {"path": "cluster.num_nodes", "values": [1, n + 2]}]}, format="json").status_code == 202
