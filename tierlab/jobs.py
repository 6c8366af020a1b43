"""What runs and sweep chunks share as Celery jobs: a task base that records the hard time
limit on the row, sending a job again under a new task id, and the per-user limits on
active (queued or running) jobs."""

import json
import math
import uuid
from datetime import timedelta

from celery import Task
from celery.worker.request import Request
from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import transaction
from django.utils import timezone

from simulation import ScenarioError


# ---------------------------------------------------------------- active jobs per user
# kind: (setting, what, API path). A user's queued and running jobs of each kind are at most
# the setting's value (0: no limit), so one account cannot fill the queue every user's work
# waits in.
ACTIVE_LIMITS = {
    "runs": ("TIERLAB_MAX_ACTIVE_RUNS", "MAX_ACTIVE_RUNS_PER_USER", "/api/v1/runs/"),
    "sweeps": ("TIERLAB_MAX_ACTIVE_SWEEPS", "MAX_ACTIVE_SWEEPS_PER_USER", "/api/v1/sweeps/"),
    "plans": ("TIERLAB_MAX_ACTIVE_PLANS", "MAX_ACTIVE_PLANS_PER_USER", "/api/v1/plans/"),
}


class TooManyActive(ScenarioError):
    """``owner`` has as many queued or running jobs of ``kind`` as they may: nothing was
    queued. ``field`` is ``active_<kind>``; ``limit``, ``setting`` (the environment variable)
    and ``active`` (``[{id, name, status, url}]``, oldest first) for the API's 409."""

    def __init__(self, kind: str, limit: int, active: list[dict]):
        self.kind, self.limit, self.active = kind, limit, active
        self.setting = ACTIVE_LIMITS[kind][1]
        ids = ", ".join(str(a["id"]) for a in active[:10]) + (", ..." if len(active) > 10 else "")
        super().__init__(f"active_{kind}", (
            f"you have {len(active)} {kind} queued or running (ids {ids}); at most {limit} may be "
            f"at once ({self.setting}). Wait for one to finish or cancel one "
            f"(POST {ACTIVE_LIMITS[kind][2]}<id>/cancel/), then try again."))


def check_active(owner, kind: str, active) -> None:
    """Raise TooManyActive when ``active`` (the owner's queued or running jobs of ``kind``,
    a queryset with ``name`` or ``scenario__name``) is at the limit. Call inside the
    transaction that queues the new job: the owner's row is locked, so two requests at once
    cannot both pass."""
    limit = getattr(settings, ACTIVE_LIMITS[kind][0])
    if not limit or owner is None or owner.pk is None:
        return
    get_user_model().objects.select_for_update().filter(pk=owner.pk).first()
    rows = list(active.order_by("created_at", "id")[:limit])
    if len(rows) < limit:
        return
    raise TooManyActive(kind, limit, [
        {"id": r.pk, "name": getattr(r, "name", None) or r.scenario.name, "status": r.status,
         "url": f"{ACTIVE_LIMITS[kind][2]}{r.pk}/"} for r in rows])


def limit_exceeded(subject: str, limit_s, hard: bool = False) -> str:
    """The error a job stopped at a Celery time limit records: ``subject`` is what ran
    ("the chunk ran"), ``limit_s`` the limit in seconds; ``hard``: the worker killed it."""
    if hard:
        return f"time limit exceeded: {subject} longer than {limit_s:g} s (hard limit; its process was killed)"
    return f"time limit exceeded: {subject} longer than {limit_s} s"


def _first_non_finite(value, path: str = ""):
    """``(path, value)`` of the first float in ``value`` (dicts and lists) that is inf or
    NaN, or None."""
    if isinstance(value, float) and not math.isfinite(value):
        return path or "(the report)", value
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, (list, tuple)) else ()
    for key, item in items:
        found = _first_non_finite(item, f"{path}[{key}]" if isinstance(key, int) else (f"{path}.{key}" if path else str(key)))
        if found:
            return found
    return None


def unstorable(value, what: str = "the engine's report") -> str | None:
    """Why ``value`` cannot be stored or sent as JSON, or None when it can.

    Strict JSON has no inf or NaN: PostgreSQL's jsonb rejects them (``DataError``), SQLite's
    ``JSON_VALID`` check too (``IntegrityError``) and DRF's renderer raises ``ValueError``
    ("Out of range float values are not JSON compliant"). A run whose report held one
    stayed ``running`` until the stale check, and the estimate answered 500; the engine
    rejects the inputs known to make one, and this keeps any other from doing so.
    """
    try:
        json.dumps(value, allow_nan=False)
    except (TypeError, ValueError) as exc:
        found = _first_non_finite(value)
        if found:
            return (f"{what} holds a number out of range ({found[0]} = {found[1]}), which JSON "
                    "cannot hold: an input value is probably extreme (a bandwidth, rate or size "
                    "far too small or large); check the scenario's numbers")
        return f"{what} cannot be stored as JSON: {exc}"
    return None


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


# ---------------------------------------------------------------- lost queue messages
def queue_served_since(since) -> bool:
    """Whether a worker started any run, sweep chunk or plan chunk since ``since``: the
    queue is being read, so work still in it is waiting its turn, not lost."""
    from tierlab.dashboard.models import PlanChunk, SweepChunk
    from tierlab.scenarios.models import Run

    return any(model.objects.filter(started_at__gte=since).exists() for model in (Run, SweepChunk, PlanChunk))


def lost_messages(rows, now=None) -> list:
    """Of ``rows`` (runs or chunks still queued ``RUN_QUEUED_TIMEOUT_S`` after they were
    sent), those whose message is lost. Age alone said so, and in a long queue (another
    user's 10,000-point sweeps ahead) work that was only waiting was sent to the back again
    and, after its requeues, failed "queue message was lost". Now a row whose message is
    still in the broker (:func:`tierlab.broker.waiting_task_ids`) while workers are taking
    work from the queue (:func:`queue_served_since`, within the timeout) keeps waiting. When
    no worker took anything (nothing reads the queue) or the broker cannot be read, age
    decides, as before: sent again, then failed with the reason."""
    rows = list(rows)
    if not rows:
        return rows
    from tierlab import broker

    now = now or timezone.now()
    if not queue_served_since(now - timedelta(seconds=settings.TIERLAB_RUN_QUEUED_TIMEOUT_S)):
        return rows
    waiting = broker.waiting_task_ids(settings.TIERLAB_RUN_QUEUE)
    if waiting is None:
        return rows
    return [row for row in rows if row.celery_task_id not in waiting]


def remove_cancelled_messages(task_ids) -> None:
    """Once the transaction commits: take cancelled jobs' waiting messages out of the queue
    (:func:`tierlab.broker.remove_messages`), so they no longer hold other users' work back
    (a worker that reaches one anyway finds the job cancelled and drops it at once)."""
    from tierlab import broker

    ids, queue = [t for t in task_ids if t], settings.TIERLAB_RUN_QUEUE
    if ids:
        transaction.on_commit(lambda: broker.remove_messages(queue, ids))
