"""Cancelling a run (API and page; owner only) and identical input waiting for the run
already computing it. The task body runs in this process (``execute_run``); the same with a
real worker is in test_queue_faults.py."""

import pytest

from tierlab.scenarios import services
from tierlab.scenarios.models import Run, RunStopped, Scenario

pytestmark = pytest.mark.django_db


@pytest.fixture
def run(owner, example_spec):
    return services.start_run(Scenario.objects.create(owner=owner, name="mine", spec=example_spec))


def test_the_owner_cancels_a_queued_run_and_a_worker_that_gets_it_does_nothing(owner_api, run):
    response = owner_api.post(f"/api/v1/runs/{run.pk}/cancel/")
    assert response.status_code == 200
    body = response.json()
    assert body["status"] == "failed" and body["error"] == "cancelled by owner" and body["finished_at"]
    services.execute_run(run.pk, task_id=run.celery_task_id)
    run.refresh_from_db()
    assert run.status == "failed" and run.attempts == 0 and run.result is None
    assert owner_api.get("/api/v1/runs/?status=failed").json()["count"] == 1


def test_a_finished_run_cannot_be_cancelled(owner_api, run):
    services.execute_run(run.pk, task_id=run.celery_task_id)
    response = owner_api.post(f"/api/v1/runs/{run.pk}/cancel/")
    assert response.status_code == 400
    assert response.json() == {"status": ["the run has already succeeded; only a queued or running "
                                          "run can be cancelled"]}
    assert Run.objects.get(pk=run.pk).status == "succeeded"


def test_only_the_owner_cancels_a_teammate_gets_403_and_anyone_else_404(teammate_api, stranger_api, run):
    assert teammate_api.post(f"/api/v1/runs/{run.pk}/cancel/").status_code == 403
    assert stranger_api.post(f"/api/v1/runs/{run.pk}/cancel/").status_code == 404
    assert Run.objects.get(pk=run.pk).status == "queued"


def test_a_run_cancelled_while_it_runs_keeps_no_result(run):
    """The engine calls progress as it goes; the first call after the cancel stops it."""
    in_worker = Run.objects.get(pk=run.pk)
    in_worker.mark_running(run.celery_task_id)
    in_worker.set_progress(0.1)                           # still running: fine
    services.cancel_run(run, run.scenario.owner)
    with pytest.raises(RunStopped):
        in_worker.set_progress(0.2)
    assert in_worker.mark_succeeded({"fits": True}) is False
    run.refresh_from_db()
    assert run.status == "failed" and run.error == "cancelled by owner" and run.result is None


def test_the_run_page_has_a_cancel_button_for_its_owner_only(client, owner, teammate, run, vite_manifest):
    client.force_login(owner)
    page = client.get(f"/runs/{run.pk}/").content.decode()
    assert 'id="run-cancel"' in page
    response = client.post(f"/runs/{run.pk}/cancel/")
    assert response.status_code == 302 and response["Location"] == f"/runs/{run.pk}/"
    run.refresh_from_db()
    assert run.status == "failed" and run.error == "cancelled by owner"
    assert 'id="run-cancel"' not in client.get(f"/runs/{run.pk}/").content.decode()   # finished

    other = services.start_run(run.scenario)
    client.force_login(teammate)
    assert 'id="run-cancel"' not in client.get(f"/runs/{other.pk}/").content.decode()
    assert client.post(f"/runs/{other.pk}/cancel/").status_code == 403


# ---------------------------------------------------------------- identical input, once
def test_identical_input_started_while_the_first_is_queued_waits_for_its_result(owner, run, example_spec):
    twin = Scenario.objects.create(owner=owner, name="twin", spec=example_spec)
    second = services.start_run(twin)
    assert second.status == "queued" and second.reused_from_id == run.pk and second.celery_task_id == ""
    services.execute_run(run.pk, task_id=run.celery_task_id)
    second.refresh_from_db()
    run.refresh_from_db()
    assert second.status == "succeeded" and second.result == run.result and second.attempts == 0
    assert second.finished_at is not None


def test_when_the_run_waited_for_is_cancelled_the_waiting_one_is_computed_itself(
        owner, run, example_spec, django_capture_on_commit_callbacks):
    twin = Scenario.objects.create(owner=owner, name="twin", spec=example_spec)
    second, third = services.start_run(twin), services.start_run(twin)
    with django_capture_on_commit_callbacks(execute=True):
        services.cancel_run(run, owner)
    second.refresh_from_db()
    third.refresh_from_db()
    assert second.status == "queued" and second.reused_from_id is None and second.celery_task_id
    assert third.reused_from_id == second.pk
    services.execute_run(second.pk, task_id=second.celery_task_id)
    third.refresh_from_db()
    assert Run.objects.get(pk=second.pk).status == "succeeded" and third.status == "succeeded"


def test_a_run_left_running_by_an_earlier_worker_of_the_same_name_is_queued_again(run):
    run.mark_running(run.celery_task_id, worker="celery@host")
    assert services.recover_runs_of("other@host") == 0
    old_task = run.celery_task_id
    assert services.recover_runs_of("celery@host") == 1
    run.refresh_from_db()
    assert run.status == "queued" and run.celery_task_id != old_task and run.attempts == 1
    services.execute_run(run.pk, task_id=old_task)          # the old message, restored late
    assert Run.objects.get(pk=run.pk).status == "queued"
    services.execute_run(run.pk, task_id=run.celery_task_id)
    run.refresh_from_db()
    assert run.status == "succeeded" and run.attempts == 2


def test_a_run_the_new_worker_process_took_itself_is_not_queued_again(run):
    from django.utils import timezone

    booted = timezone.now()
    run.mark_running(run.celery_task_id, worker="celery@host")      # taken after it started
    assert services.recover_runs_of("celery@host", started_before=booted) == 0
    assert Run.objects.get(pk=run.pk).status == "running"
