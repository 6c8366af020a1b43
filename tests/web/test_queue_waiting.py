"""Work waiting in a long queue is not "lost", and cancelled work leaves the queue, against
the test settings' real broker (Redis, or the filesystem broker's folder).

Before: a run still queued RUN_QUEUED_TIMEOUT_S after it was sent was declared lost by its
age alone, even with its message in a queue the workers were busy reading (another user's
big sweeps ahead), sent to the back and, after its requeues, failed "queue message was
lost"; and a cancelled sweep's or plan's chunks kept their places in the queue.
"""

from datetime import timedelta
from pathlib import Path

import pytest
from django.conf import settings as django_settings
from django.utils import timezone

from tests.processes import new_run
from tests.web.dashboard_helpers import spec
from tests.web.test_plans_api import SPEC as PLAN_SPEC
from tierlab import broker
from tierlab.scenarios.models import Run, Scenario

pytestmark = pytest.mark.django_db


def waiting(queue: str) -> int:
    """Messages waiting in ``queue``, read from the broker itself."""
    url = django_settings.CELERY_BROKER_URL
    if url.startswith("redis"):
        import redis

        return redis.Redis.from_url(url).llen(queue)
    return len(list(Path(django_settings.CELERY_BROKER_TRANSPORT_OPTIONS["data_folder_in"]).glob(f"*.{queue}.msg")))


def drop_queue(queue: str) -> None:
    """The broker forgets the queue (a restart without persistence, a flush)."""
    url = django_settings.CELERY_BROKER_URL
    if url.startswith("redis"):
        import redis

        redis.Redis.from_url(url).delete(queue)
    else:
        for path in Path(django_settings.CELERY_BROKER_TRANSPORT_OPTIONS["data_folder_in"]).glob(f"*.{queue}.msg"):
            path.unlink()
    broker.forget()


@pytest.fixture
def busy_worker(stranger, example_spec):
    """Another user's run that a worker started just now: the queue is being read."""
    run = new_run(stranger, dict(example_spec, training=dict(example_spec["training"], seq_len=1024)))
    Run.objects.filter(pk=run.pk).update(status=Run.Status.RUNNING, started_at=timezone.now())
    return run


def test_a_run_waiting_in_a_busy_queue_is_not_sent_again_by_its_age(
        owner, owner_api, example_spec, queue, settings, busy_worker, django_capture_on_commit_callbacks):
    settings.TIERLAB_RUN_QUEUED_TIMEOUT_S, settings.TIERLAB_RUN_MAX_REQUEUES = 60, 1
    with django_capture_on_commit_callbacks(execute=True):
        run = new_run(owner, example_spec)
    assert waiting(queue) == 1
    task = run.celery_task_id
    long_ago = timezone.now() - timedelta(seconds=3600)
    Run.objects.filter(pk=run.pk).update(enqueued_at=long_ago)
    for _ in range(3):                                  # reads past the timeout: it keeps waiting
        with django_capture_on_commit_callbacks(execute=True):
            assert owner_api.get(f"/api/v1/runs/{run.pk}/").json()["status"] == "queued"
    run.refresh_from_db()
    assert (run.requeues, run.celery_task_id, waiting(queue)) == (0, task, 1)

    drop_queue(queue)                                   # now its message is gone: lost, sent again
    with django_capture_on_commit_callbacks(execute=True):
        assert owner_api.get(f"/api/v1/runs/{run.pk}/").json()["status"] == "queued"
    run.refresh_from_db()
    assert run.requeues == 1 and run.celery_task_id != task and waiting(queue) == 1


def test_sweep_and_plan_chunks_waiting_in_a_busy_queue_are_not_sent_again(
        owner, owner_api, queue, settings, busy_worker, django_capture_on_commit_callbacks):
    from tierlab.dashboard.models import PlanChunk, SweepChunk

    settings.TIERLAB_RUN_QUEUED_TIMEOUT_S, settings.TIERLAB_PLAN_CHUNKS = 60, 2
    base = Scenario.objects.create(owner=owner, name="base", spec=spec())
    with django_capture_on_commit_callbacks(execute=True):
        sweep = owner_api.post("/api/v1/sweeps/", {"scenario": base.pk, "axes": [
            {"path": "cluster.num_nodes", "values": [1, 2]}]}, format="json").json()
        plan = owner_api.post("/api/v1/plans/", {"spec": PLAN_SPEC}, format="json").json()
    sent = waiting(queue)
    assert sent >= 3
    long_ago = timezone.now() - timedelta(seconds=3600)
    SweepChunk.objects.update(enqueued_at=long_ago)
    PlanChunk.objects.update(enqueued_at=long_ago)
    with django_capture_on_commit_callbacks(execute=True):
        assert owner_api.get(f"/api/v1/sweeps/{sweep['id']}/?points=none").json()["status"] == "queued"
        assert owner_api.get(f"/api/v1/plans/{plan['id']}/").json()["status"] == "queued"
    assert not SweepChunk.objects.exclude(requeues=0).exists()
    assert not PlanChunk.objects.exclude(requeues=0).exists()
    assert waiting(queue) == sent


def test_with_no_worker_reading_the_queue_age_still_decides(owner, owner_api, example_spec, queue, settings,
                                                            django_capture_on_commit_callbacks):
    """Nothing started within the timeout (no worker reads the queue): sent again by age,
    as before (tests/web/test_queue_faults.py checks the requeues end in a failure)."""
    settings.TIERLAB_RUN_QUEUED_TIMEOUT_S = 60
    with django_capture_on_commit_callbacks(execute=True):
        run = new_run(owner, example_spec)
    Run.objects.filter(pk=run.pk).update(enqueued_at=timezone.now() - timedelta(seconds=61))
    with django_capture_on_commit_callbacks(execute=True):
        owner_api.get(f"/api/v1/runs/{run.pk}/")
    run.refresh_from_db()
    assert run.requeues == 1


def test_cancelling_takes_the_messages_out_of_the_queue(owner, owner_api, example_spec, queue, settings,
                                                        django_capture_on_commit_callbacks):
    """A cancelled sweep's, plan's or run's messages no longer wait ahead of other work."""
    settings.TIERLAB_PLAN_CHUNKS = 3
    base = Scenario.objects.create(owner=owner, name="base", spec=spec())
    with django_capture_on_commit_callbacks(execute=True):
        kept = owner_api.post("/api/v1/sweeps/", {"scenario": base.pk, "axes": [
            {"path": "cluster.num_nodes", "values": [1, 2]}]}, format="json").json()
    others = waiting(queue)
    assert others >= 1
    with django_capture_on_commit_callbacks(execute=True):
        sweep = owner_api.post("/api/v1/sweeps/", {"scenario": base.pk, "axes": [
            {"path": "cluster.num_nodes", "values": [1, 4]}]}, format="json").json()
        plan = owner_api.post("/api/v1/plans/", {"spec": PLAN_SPEC}, format="json").json()
        run = owner_api.post(f"/api/v1/scenarios/{Scenario.objects.create(owner=owner, name='r', spec=example_spec).pk}"
                             "/runs/").json()
    assert waiting(queue) > others + 3
    with django_capture_on_commit_callbacks(execute=True):
        assert owner_api.post(f"/api/v1/sweeps/{sweep['id']}/cancel/").status_code == 200
        assert owner_api.post(f"/api/v1/plans/{plan['id']}/cancel/").status_code == 200
        assert owner_api.post(f"/api/v1/runs/{run['id']}/cancel/").status_code == 200
    assert waiting(queue) == others                     # the first sweep's chunks are still there
    assert owner_api.get(f"/api/v1/sweeps/{kept['id']}/?points=none").json()["status"] == "queued"
