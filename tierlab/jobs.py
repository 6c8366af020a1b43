"""What runs and sweep chunks share as Celery jobs: a task base that records the hard time
limit on the row, and sending a job again under a new task id."""

import uuid

from celery import Task
from celery.worker.request import Request
from django.db import transaction
from django.utils import timezone


def limit_exceeded(subject: str, limit_s, hard: bool = False) -> str:
    """The error a job stopped at a Celery time limit records: ``subject`` is what ran
    ("the chunk ran"), ``limit_s`` the limit in seconds; ``hard``: the worker killed it."""
    if hard:
        return f"time limit exceeded: {subject} longer than {limit_s:g} s (hard limit; its process was killed)"
    return f"time limit exceeded: {subject} longer than {limit_s} s"


def reconnect_after_interrupt() -> None:
    """Close this process's database connection after a job was interrupted by its soft time
    limit, before it records why.

    Celery raises ``SoftTimeLimitExceeded`` from a signal handler (billiard/pool.py
    ``soft_timeout_sighandler``), wherever the job is: landing inside a query it leaves the
    connection mid-protocol (psycopg: "sending query failed: another command is already in
    progress"), so the job's own ``mark_failed`` failed and the run stayed ``running`` until
    the stale check, minutes later. Django opens a new connection at the next query.
    """
    from django.db import connection

    connection.close()


def fail_chunk_after_hard_limit(model, chunk_id: int, limit_s: float, finish_chunk, empty_result) -> None:
    """A sweep or plan chunk (``model``) whose process the worker killed at the hard time
    limit: finish it as failed with ``empty_result`` and the reason, unless it had ended."""
    chunk = model.objects.filter(pk=chunk_id).first()
    if chunk is not None and chunk.status not in model.FINISHED:
        finish_chunk(chunk, empty_result, model.Status.FAILED, limit_exceeded("the chunk ran", limit_s, hard=True))


def hard_limit_task_base(record, name: str) -> type:
    """A Celery ``Task`` base whose requests call ``record(pk, limit_s)`` when the pool kills
    the job's process at the hard time limit (the task body never learns it; the message is
    then acknowledged). ``pk`` is the task's first argument."""

    class HardLimitRequest(Request):
        def on_timeout(self, soft, timeout):
            super().on_timeout(soft, timeout)
            if not soft:
                record(self.args[0], timeout)

    HardLimitRequest.__name__ = HardLimitRequest.__qualname__ = f"{name}Request"
    return type(f"{name}Task", (Task,), {"Request": HardLimitRequest})


def send_again(row, *, reset: dict, count_requeue: bool, expect_status: str, enqueue) -> bool:
    """Queue ``row`` (a Run or SweepChunk) again under a new task id, so that a late copy of
    its old message (if it was not lost after all) is recognised as superseded and does
    nothing; ``reset`` are the fields a new start clears. False when the row changed
    meanwhile (another process got there first)."""
    fields = dict(reset, status="queued", celery_task_id=str(uuid.uuid4()),
                  enqueued_at=timezone.now(), started_at=None)
    if count_requeue:
        fields["requeues"] = row.requeues + 1
    if not type(row).objects.filter(pk=row.pk, status=expect_status,
                                    celery_task_id=row.celery_task_id).update(**fields):
        return False
    row.refresh_from_db()
    transaction.on_commit(lambda: enqueue(row))
    return True


def requeue_left_running(model, worker: str, started_before, resend, what: str, log) -> int:
    """At a worker's start: rows of ``model`` left ``running`` by an earlier process of the
    same name (started before ``started_before``, when given) are sent again with
    ``resend(row, count_requeue=False, expect_status="running")``; returns how many."""
    n = 0
    left = model.objects.filter(status="running", worker=worker)
    if started_before is not None:
        left = left.filter(started_at__lt=started_before)
    for row in left:
        with transaction.atomic():
            if resend(row, count_requeue=False, expect_status="running"):
                log.warning("%s %s was left running by %s when it stopped: queued again",
                            what, row.pk, worker)
                n += 1
    return n
