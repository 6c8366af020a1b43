"""POST /api/v1/scenarios/{id}/runs/ and GET /api/v1/runs/: queue, reuse, worker lost, owners."""

from datetime import timedelta
from unittest import mock

import pytest
from django.utils import timezone

import simulation
from tierlab.scenarios import services
from tierlab.scenarios.models import Run, Scenario

pytestmark = pytest.mark.django_db


@pytest.fixture
def scenario(owner, example_spec):
    return Scenario.objects.create(owner=owner, name="mine", spec=example_spec)


def start(client, scenario):
    return client.post(f"/api/v1/scenarios/{scenario.pk}/runs/")


def test_it_queues_a_run(owner_api, scenario):
    r = start(owner_api, scenario)
    assert r.status_code == 202
    body = r.json()
    assert body["status"] == "queued" and body["progress"] == 0.0
    assert body["scenario"] == scenario.pk
    assert body["engine_version"] == simulation.ENGINE_VERSION
    assert body["input"]["model"]["num_layers"] == 32          # presets expanded
    assert len(body["input_hash"]) == 64
    assert r["Location"] == f"/api/v1/runs/{body['id']}/"
    keys = {"id", "scenario", "status", "progress", "result", "error", "engine_version",
            "created_at", "started_at", "finished_at"}
    assert keys <= set(owner_api.get(f"/api/v1/runs/{body['id']}/").json())


def test_it_sends_the_run_to_the_worker_queue_after_commit(owner_api, scenario, settings,
                                                           django_capture_on_commit_callbacks):
    with mock.patch("tierlab.scenarios.tasks.run_scenario.apply_async") as send:
        with django_capture_on_commit_callbacks(execute=True):
            body = start(owner_api, scenario).json()
    run = Run.objects.get(pk=body["id"])
    send.assert_called_once_with(args=[run.pk], task_id=run.celery_task_id,
                                 queue=settings.TIERLAB_RUN_QUEUE,
                                 time_limit=None, soft_time_limit=None)   # the worker's apply


def test_it_fails_the_run_when_the_broker_is_down(owner_api, scenario,
                                                  django_capture_on_commit_callbacks):
    with mock.patch("tierlab.scenarios.tasks.run_scenario.apply_async",
                    side_effect=ConnectionError("refused")):
        with django_capture_on_commit_callbacks(execute=True):
            body = start(owner_api, scenario).json()
    run = owner_api.get(f"/api/v1/runs/{body['id']}/").json()
    assert run["status"] == "failed"
    assert "broker" in run["error"]


def test_it_reuses_a_stored_result_for_identical_input(owner_api, owner, scenario, example_spec):
    first = start(owner_api, scenario).json()
    services.execute_run(first["id"])
    twin = Scenario.objects.create(owner=owner, name="same input", spec=example_spec)
    second = start(owner_api, twin).json()
    assert second["status"] == "succeeded" and second["progress"] == 1.0
    assert second["reused_from"] == first["id"]
    assert second["input_hash"] == first["input_hash"]
    assert second["result"] == Run.objects.get(pk=first["id"]).result
    third = start(owner_api, twin).json()             # a reuse points at the original run
    assert third["status"] == "succeeded" and third["reused_from"] == first["id"]


def test_it_does_not_reuse_for_different_input(owner_api, owner, scenario, example_spec):
    first = start(owner_api, scenario).json()
    services.execute_run(first["id"])
    example_spec["training"]["seq_len"] = 2048
    other = Scenario.objects.create(owner=owner, name="shorter", spec=example_spec)
    second = start(owner_api, other).json()
    assert second["status"] == "queued" and second["input_hash"] != first["input_hash"]


def test_it_does_not_reuse_a_failed_run(owner_api, scenario):
    first = Run.objects.get(pk=start(owner_api, scenario).json()["id"])
    first.mark_failed("boom")
    assert start(owner_api, scenario).json()["status"] == "queued"


def test_it_marks_a_run_whose_worker_died_as_failed(owner_api, scenario, settings):
    run = Run.objects.get(pk=start(owner_api, scenario).json()["id"])
    run.mark_running("task-1")
    Run.objects.filter(pk=run.pk).update(
        started_at=timezone.now() - timedelta(seconds=settings.TIERLAB_RUN_STALE_AFTER_S + 5))
    body = owner_api.get(f"/api/v1/runs/{run.pk}/").json()
    assert body["status"] == "failed"
    assert "worker lost" in body["error"]
    assert body["finished_at"] is not None


def test_it_leaves_a_recent_running_run_alone(owner_api, scenario):
    run = Run.objects.get(pk=start(owner_api, scenario).json()["id"])
    run.mark_running("task-1")
    assert owner_api.get(f"/api/v1/runs/{run.pk}/").json()["status"] == "running"


def test_it_hides_others_runs(owner_api, stranger_api, scenario):
    pk = start(owner_api, scenario).json()["id"]
    assert stranger_api.get(f"/api/v1/runs/{pk}/").status_code == 404
    assert stranger_api.get("/api/v1/runs/").json()["count"] == 0
    assert owner_api.get("/api/v1/runs/").json()["count"] == 1
    assert [r["id"] for r in owner_api.get(f"/api/v1/scenarios/{scenario.pk}/runs/").json()["results"]] == [pk]


def test_it_requires_login(anon_api, scenario):
    assert anon_api.post(f"/api/v1/scenarios/{scenario.pk}/runs/").status_code == 401
    assert anon_api.get("/api/v1/runs/").status_code == 401


def test_it_rejects_a_scenario_the_catalog_no_longer_resolves(owner_api, owner, catalog, example_spec):
    from tierlab.catalog.models import ModelPreset

    sc = Scenario.objects.create(owner=owner, name="old", spec=example_spec)
    ModelPreset.objects.filter(slug="llama2-7b").delete()
    r = start(owner_api, sc)
    assert r.status_code == 400
    assert "scenario.model.preset" in r.json()
    assert Run.objects.count() == 0
