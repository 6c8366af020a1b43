"""A run that reuses an identical run's result points at it and stores no copy of the report;
the API and the pages show the same report as before, and deleting the run that computed it
hands the report on to a run that reused it."""

import pytest

from tests.web.dashboard_helpers import spec
from tierlab.scenarios import services
from tierlab.scenarios.models import Run, Scenario

pytestmark = pytest.mark.django_db


def scenarios(owner, n=3):
    return [Scenario.objects.create(owner=owner, name=f"s{i}", spec=spec()) for i in range(n)]


def test_a_reused_run_stores_no_copy_and_serves_the_same_report(owner, owner_api):
    a, b, c = scenarios(owner)
    first = services.start_run(a)
    services.execute_run(first.pk)
    again = owner_api.post(f"/api/v1/scenarios/{b.pk}/runs/").json()
    assert again["reused_from"] == first.pk and again["status"] == "succeeded"
    assert Run.objects.filter(pk=again["id"]).values_list("stored_result", flat=True).get() is None
    report = Run.objects.get(pk=first.pk).result
    assert again["result"] == report
    assert owner_api.get(f"/api/v1/runs/{again['id']}/").json()["result"] == report
    summary = owner_api.get(f"/api/v1/runs/?scenario={b.pk}").json()["results"][0]["summary"]
    assert summary == owner_api.get(f"/api/v1/runs/?scenario={a.pk}").json()["results"][0]["summary"]
    assert summary["step_time_s"] is None or summary["fits"] is not None
    assert summary["hbm_per_gpu_bytes"] == report["memory"]["per_gpu"]["hbm"]["total_bytes"]
    r = owner_api.get(f"/api/v1/runs/{again['id']}/report.json")
    assert r.status_code == 200 and r.json() == report


def test_a_follower_of_a_running_run_stores_no_copy_either(owner):
    a, b, _ = scenarios(owner)
    leader = services.start_run(a)
    follower = services.start_run(b)
    assert follower.reused_from_id == leader.pk and follower.status == Run.Status.QUEUED
    services.execute_run(leader.pk)
    follower.refresh_from_db()
    assert follower.status == Run.Status.SUCCEEDED and follower.stored_result is None
    assert follower.result == Run.objects.get(pk=leader.pk).result


def test_deleting_the_run_that_computed_it_hands_the_report_on(owner):
    from tierlab.dashboard import removal

    a, b, c = scenarios(owner)
    first = services.start_run(a)
    services.execute_run(first.pk)
    report = Run.objects.get(pk=first.pk).result
    second, third = services.start_run(b), services.start_run(c)
    removal.delete_scenario(a, owner)
    second.refresh_from_db(), third.refresh_from_db()
    assert second.reused_from_id is None and second.stored_result == report
    assert third.reused_from_id == second.pk and third.stored_result is None and third.result == report
    assert services.start_run(c).reused_from_id == second.pk       # the one that holds it now
