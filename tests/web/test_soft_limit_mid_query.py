"""A soft time limit that lands inside a database query (issue #18, nothing stuck): Celery
raises SoftTimeLimitExceeded from a signal handler, so it can interrupt psycopg between
sending a query and reading its answer. The connection is then mid-protocol ("another
command is already in progress"): a run, sweep chunk or plan chunk must still record its
failure, not stay `running` until the stale check. Seen with a real worker in
tests/web/test_reliability.py::test_a_run_over_its_time_limit_is_failed on a loaded host;
here the interruption is placed exactly: a query is sent at the protocol level and never
read, then the limit is raised."""

import pytest
from celery.exceptions import SoftTimeLimitExceeded
from django.db import connection

from tests.processes import new_run
from tests.web.dashboard_helpers import spec
from tierlab.dashboard import plans, sweeps
from tierlab.dashboard.models import PlanChunk, SweepChunk
from tierlab.scenarios import services
from tierlab.scenarios.models import Run, Scenario

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
def postgres_only():
    if connection.vendor != "postgresql":
        pytest.skip("the interrupted-query state is psycopg's (DATABASE_URL=postgres://...)")


def interrupted_mid_query(*args, **kwargs):
    connection.ensure_connection()
    connection.connection.pgconn.send_query(b"SELECT pg_sleep(0.2)")   # sent, its answer never read
    raise SoftTimeLimitExceeded()


def test_a_run_interrupted_inside_a_query_is_failed_with_the_reason(owner, example_spec, queue, monkeypatch):
    run = new_run(owner, example_spec)
    monkeypatch.setattr(services, "evaluate_resolved", interrupted_mid_query)
    services.execute_run(run.pk, task_id=run.celery_task_id)
    run = Run.objects.get(pk=run.pk)
    assert run.status == "failed" and run.error.endswith("(soft limit)"), run.error


def test_a_sweep_chunk_interrupted_inside_a_query_is_failed_with_the_reason(owner, queue, monkeypatch, settings):
    settings.TIERLAB_SWEEP_CHUNK_POINTS = 0
    base = Scenario.objects.create(owner=owner, name="7B", spec=spec())
    sweep = sweeps.create_sweep(owner, base.pk, [{"path": "training.seq_len", "values": [1024, 2048]}])
    (chunk,) = sweep.chunks.all()
    monkeypatch.setattr(sweeps.engine_sweep, "summarize", interrupted_mid_query)
    sweeps.execute_chunk(chunk.pk, task_id=chunk.celery_task_id)
    chunk = SweepChunk.objects.get(pk=chunk.pk)
    assert chunk.status == "failed" and chunk.error.startswith("time limit exceeded"), chunk.error
    sweep.refresh_from_db()
    assert sweep.status == "failed"


def test_a_plan_chunk_interrupted_inside_a_query_is_failed_with_the_reason(owner, queue, monkeypatch, settings):
    from tests.web.test_plans_api import SPEC

    settings.TIERLAB_PLAN_CHUNKS = 1
    plan = plans.create_plan(owner, SPEC, "interrupted")
    (chunk,) = plan.chunks.all()
    monkeypatch.setattr(plans.planner, "plan_chunk", interrupted_mid_query)
    plans.execute_chunk(chunk.pk, task_id=chunk.celery_task_id)
    chunk = PlanChunk.objects.get(pk=chunk.pk)
    assert chunk.status == "failed" and chunk.error.startswith("time limit exceeded"), chunk.error
