"""The run_scenario task body: outcomes are written on the Run row, never stuck running."""

import pytest

from tierlab.catalog.models import ModelPreset
from tierlab.scenarios import services, tasks
from tierlab.scenarios.models import Run, Scenario

pytestmark = pytest.mark.django_db


@pytest.fixture
def run(owner, example_spec):
    scenario = Scenario.objects.create(owner=owner, name="mine", spec=example_spec)
    return services.start_run(scenario)


def test_it_evaluates_the_stored_input(run):
    tasks.run_scenario.apply(args=[run.pk], task_id=run.celery_task_id)   # the task, in this process
    run.refresh_from_db()
    assert run.status == "succeeded" and run.progress == 1.0
    assert run.started_at and run.finished_at and run.started_at <= run.finished_at
    assert run.result["fits"] is True
    assert run.result == services.estimate(run.scenario.spec, include_step=True, detail=True)
    quick = services.estimate(run.scenario.spec, include_step=True)   # no timeline, same step
    assert quick["step"] == run.result["step"] and quick["timeline"] == {}
    assert run.result["step"]


def test_it_fails_with_the_engine_message(run):
    run.input["training"]["global_batch_size"] = 3
    run.input["cluster"]["gpus_per_node"] = 2
    run.save()
    services.execute_run(run.pk)
    run.refresh_from_db()
    assert run.status == "failed"
    assert run.error.startswith("training.global_batch_size: must be a multiple")


def test_it_fails_with_a_reason_on_any_other_error(run, monkeypatch):
    def boom(*args, **kwargs):
        raise RuntimeError("boom")

    monkeypatch.setattr(services, "evaluate_resolved", boom)
    services.execute_run(run.pk)
    run.refresh_from_db()
    assert run.status == "failed" and run.error == "engine error: RuntimeError: boom"
    assert run.finished_at is not None


def test_it_ignores_a_redelivered_finished_run(run):
    run.mark_failed("worker lost")
    services.execute_run(run.pk)
    run.refresh_from_db()
    assert run.status == "failed" and run.error == "worker lost"


def test_it_reruns_a_redelivered_running_run(run):
    run.mark_running(run.celery_task_id)
    services.execute_run(run.pk, task_id=run.celery_task_id, worker="w2@host")
    run.refresh_from_db()
    assert run.status == "succeeded" and run.attempts == 2 and run.worker == "w2@host"


def test_a_message_superseded_by_a_later_send_does_nothing(run):
    """A run sent again (its message was thought lost) has a new task id: the old message,
    if it turns up after all, must not compute the run a second time."""
    services.execute_run(run.pk, task_id="an-older-message")
    run.refresh_from_db()
    assert run.status == "queued" and run.attempts == 0


def test_it_ignores_a_missing_run():
    services.execute_run(999999)


def test_it_evaluates_stored_input_even_after_the_preset_is_gone(run, catalog):
    expected = services.estimate(run.scenario.spec, include_step=True, detail=True)
    ModelPreset.objects.all().delete()
    services.execute_run(run.pk)
    run.refresh_from_db()
    assert run.status == "succeeded" and run.result == expected


def test_the_hash_covers_input_and_engine_version():
    a = services.input_hash({"x": 1, "y": [1, 2]}, "1")
    assert a == services.input_hash({"y": [1, 2], "x": 1}, "1")
    assert a != services.input_hash({"x": 1, "y": [1, 2]}, "2")
    assert a != services.input_hash({"x": 2, "y": [1, 2]}, "1")


def _report_with(value):
    """A report whose step time is ``value`` (the engine now rejects the inputs that made
    one infinite, e.g. a NIC of 1e-300 B/s; this stands in for any other)."""
    return {"fits": True, "memory": {}, "step": {"time_s": value, "breakdown": [1.0, value]}}


@pytest.mark.parametrize("value", [float("inf"), float("nan")])
def test_a_report_json_cannot_hold_fails_the_run_and_its_followers_at_once(run, monkeypatch, value):
    """Strict JSON has no inf or NaN (RFC 8259 section 6: "Numeric values that cannot be
    represented in the grammar below (such as Infinity and NaN) are not permitted"), nor has
    PostgreSQL's jsonb: storing such a report raised DataError in the task, and the run
    stayed running until the stale check (360 s), its followers (identical input) waiting."""
    follower = services.start_run(run.scenario)
    assert follower.reused_from_id == run.pk and follower.status == "queued"
    monkeypatch.setattr(services, "evaluate_resolved", lambda *a, **k: _report_with(value))
    tasks.run_scenario.apply(args=[run.pk], task_id=run.celery_task_id)
    run.refresh_from_db()
    follower.refresh_from_db()
    assert run.status == "failed" and run.result is None and run.finished_at is not None
    assert "step.time_s = " in run.error and "JSON" in run.error
    assert follower.status == "failed" and follower.error == run.error
    assert services.settle_followers() == 0            # nobody is sent to compute it again
