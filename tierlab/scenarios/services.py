"""What the API, pages and tasks do with scenarios and runs; views and tasks stay thin.

The engine (`simulation`) is called here and only here on the web side.
"""

import hashlib
import inspect
import json
import logging
import time
import uuid
from datetime import timedelta

from celery.exceptions import SoftTimeLimitExceeded
from django.conf import settings
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

import simulation
from simulation import ScenarioError
from tierlab import jobs
from tierlab.catalog.lookups import catalog_lookups, forget_catalog  # noqa: F401  (profiles.py uses both)
from tierlab.scenarios.models import Run, RunStopped, Scenario

log = logging.getLogger(__name__)


# ---------------------------------------------------------------- engine calls
class TooMuchWork(Exception):
    """A valid scenario whose evaluation is more work than a request may do.

    ``field`` is the scenario field that drives most of it (``checkpoint.monte_carlo_runs``),
    ``message`` says how much and what to do instead; ``bound`` is the engine's
    :class:`simulation.CostBound`. The API answers 413.
    """

    def __init__(self, field: str, message: str, bound):
        self.field, self.message, self.bound = field, message, bound
        super().__init__(f"{field}: {message}")


def lookups_for(user) -> dict:
    """The catalog's tables, with only the cluster profiles ``user`` may name (theirs and
    their team's; :class:`tierlab.scenarios.profiles.ProfileTable`, read by id when named)."""
    from tierlab.scenarios.profiles import ProfileTable

    return {**catalog_lookups(), "profiles": ProfileTable(user, restricted=True)}


def resolve(spec: dict, user=None, lookups: dict | None = None) -> dict:
    """Validate ``spec`` completely and return the resolved scenario JSON. With ``user``, a
    cluster profile named by id must be one they may see (else "unknown cluster profile").

    Raises ScenarioError (``ScenarioErrors`` when several fields are bad: it names them
    all). The engine's ``validate`` makes every check an evaluation would (batch
    divisibility, parallel degrees, the caps on work) without simulating, so saving a
    scenario or starting a run costs well under a millisecond whatever it describes.
    """
    if lookups is None:
        lookups = lookups_for(user) if user is not None else catalog_lookups()
    scenario = simulation.checked_scenario(spec, **lookups)
    return scenario.to_dict()


def estimate(spec: dict, include_step: bool = False, detail: bool = False,
             step_if_within_limit: bool = False, user=None) -> dict:
    """The engine's report for ``spec``, computed now. Raises ScenarioError, or TooMuchWork
    when the engine's cost bound for it is over ``ESTIMATE_MAX_WORK_UNITS``.

    By default memory only (the fast live estimate); ``include_step`` adds the simulated
    step (time, breakdown, links, verdict) and checkpoint goodput; ``detail`` with it adds
    the step's timeline and the checkpoint Monte-Carlo, as a run's report has them.
    With ``step_if_within_limit`` a step over the limit is left out instead: the memory-only
    report with ``step_skipped`` (the reason) is returned. With ``user``, a cluster
    profile the scenario names must be one they can see.
    """
    lookups = lookups_for(user) if user is not None else catalog_lookups()
    if user is not None:
        check_profile_visible(spec, user, lookups)     # the same table: one query for the profile
    scenario = simulation.checked_scenario(spec, **lookups)
    try:
        check_request_work(scenario, include_step, detail)
    except TooMuchWork as exc:
        if not (step_if_within_limit and include_step):
            raise
        check_request_work(scenario, False, False)
        report = simulation.evaluate(scenario, include_step=False).to_dict()
        report["step_skipped"] = {"field": exc.field, "reason": exc.message}
        return _storable(report)
    return _storable(simulation.evaluate(scenario, include_step=include_step, detail=detail).to_dict())


def _storable(report: dict) -> dict:
    """``report``, or ScenarioError (``scenario``) when it holds inf or NaN
    (:func:`tierlab.jobs.unstorable`): a 400, not the renderer's 500."""
    reason = jobs.unstorable(report)
    if reason:
        raise ScenarioError("scenario", reason)
    return report


def check_profile_visible(spec, user, lookups: dict | None = None) -> None:
    """ScenarioError (``cluster.profile``) unless the profile ``spec`` names is ``user``'s
    or their team's (:func:`tierlab.scenarios.profiles.check_visible`). ``lookups``: the
    request's :func:`lookups_for` ``user``, whose profiles table then reads it once."""
    from tierlab.scenarios.profiles import check_visible

    check_visible(spec, user, (lookups or {}).get("profiles"))


def check_request_work(scenario, include_step: bool, detail: bool) -> None:
    """Raise TooMuchWork when evaluating ``scenario`` so is over the request limit."""
    limit = settings.ESTIMATE_MAX_WORK_UNITS
    bound = simulation.cost_bound(scenario, include_step=include_step, detail=detail)
    if bound.work_units <= limit:
        return
    cheaper = ""
    if detail and simulation.cost_bound(scenario, include_step=True, detail=False).work_units <= limit:
        cheaper = ' Without "detail" it is under the limit.'
    elif include_step and simulation.cost_bound(scenario, include_step=False, detail=False).work_units <= limit:
        cheaper = ' The memory-only estimate (without "include_step" and "detail") is under the limit.'
    raise TooMuchWork(bound.driver, (
        f"evaluating this in a request would take about {bound.work_units:,.0f} work units "
        f"(~{bound.work_units / 1e6:.2g} s of engine time), most of it from this field; a request "
        f"may take at most {limit:,} (ESTIMATE_MAX_WORK_UNITS). Save the scenario and start a run: "
        f"the worker evaluates it.{cheaper}"), bound)


def _pinned_lookups(resolved: dict) -> dict:
    """Preset tables that accept exactly the ids named in a resolved scenario.

    A resolved scenario already carries every value; empty templates keep its preset
    labels valid even if a catalog entry was renamed or deleted since.
    """
    model, cluster = resolved.get("model") or {}, resolved.get("cluster") or {}
    accelerator = cluster.get("accelerator") or {}
    pick = lambda name: {name: {}} if isinstance(name, str) else {}  # noqa: E731
    # a resolved cluster.profile carries its figures: no profiles table is needed
    return {"models": pick(model.get("preset")), "nodes": pick(cluster.get("node")),
            "accelerators": pick(accelerator.get("preset"))}


def evaluate_resolved(resolved: dict, progress=None) -> dict:
    """Evaluate a stored, resolved scenario exactly as stored."""
    scenario = simulation.Scenario.from_dict(resolved, **_pinned_lookups(resolved))
    if progress is not None and "progress" in inspect.signature(simulation.evaluate).parameters:
        return simulation.evaluate(scenario, progress=progress).to_dict()
    return simulation.evaluate(scenario).to_dict()


def input_hash(resolved: dict, engine_version: str) -> str:
    """sha256 of the canonical JSON of the resolved scenario and the engine version."""
    canonical = json.dumps({"engine_version": engine_version, "scenario": resolved},
                           sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return hashlib.sha256(canonical.encode()).hexdigest()


# ---------------------------------------------------------------- scenarios and runs
def create_scenario(owner, name: str, spec: dict) -> Scenario:
    """Validate with the engine, then save. Raises ScenarioError; nothing saved then."""
    lookups = lookups_for(owner)
    check_profile_visible(spec, owner, lookups)
    resolve(spec, owner, lookups)
    return Scenario.objects.create(owner=owner, name=name, spec=spec)


@transaction.atomic
def start_run(scenario: Scenario) -> Run:
    """Create a run of the scenario as it is now.

    An identical input (same hash) that already succeeded is reused: the new run is
    created succeeded, pointing at that run (``reused_from``), whose report it serves
    (``Run.result``; no copy is stored). One that is queued or running now is
    waited for: the new run is created queued, pointing at it (``reused_from``), and gets
    its result when it finishes (``settle_followers``); nothing is computed twice.
    Otherwise the run is queued and sent to a Celery worker once this transaction
    commits, unless the owner has ``MAX_ACTIVE_RUNS_PER_USER`` queued or running already
    (:class:`tierlab.jobs.TooManyActive`). A cluster profile the scenario names is resolved into its input with its
    figures as they are now, so a refitted profile gives a new hash. Raises ScenarioError.
    """
    lookups = lookups_for(scenario.owner)
    check_profile_visible(scenario.spec, scenario.owner, lookups)
    resolved = resolve(scenario.spec, scenario.owner, lookups)
    version = simulation.ENGINE_VERSION
    digest = input_hash(resolved, version)
    # Originals only: every reuse is another succeeded row with the same hash, and sorting
    # all of them per request made run creation slower the more often an input was reused.
    done = (Run.objects.filter(input_hash=digest, status=Run.Status.SUCCEEDED, reused_from=None)
            .order_by("-finished_at").first())
    if done is not None:
        now = timezone.now()
        return Run.objects.create(
            scenario=scenario, status=Run.Status.SUCCEEDED, progress=1.0, input=resolved,
            input_hash=digest, engine_version=version, reused_from=done,
            started_at=now, finished_at=now)
    pending = (Run.objects.filter(input_hash=digest, reused_from=None,
                                  status__in=[Run.Status.QUEUED, Run.Status.RUNNING])
               .order_by("created_at", "id").first())
    if pending is not None:
        return Run.objects.create(scenario=scenario, input=resolved, input_hash=digest,
                                  engine_version=version, reused_from=pending)
    jobs.check_active(scenario.owner, "runs", Run.objects.filter(
        scenario__owner=scenario.owner, reused_from=None,
        status__in=[Run.Status.QUEUED, Run.Status.RUNNING]).select_related("scenario"))
    run = Run.objects.create(scenario=scenario, input=resolved, input_hash=digest,
                             engine_version=version, celery_task_id=str(uuid.uuid4()),
                             enqueued_at=timezone.now())
    transaction.on_commit(lambda: enqueue(run))
    return run


def enqueue(run: Run) -> None:
    """Send the run to the worker queue; a broker failure fails the run instead of hiding it."""
    from tierlab.scenarios.tasks import run_scenario

    try:
        # No time limits in the message: the worker's own (RUN_TIME_LIMIT_S) apply.
        run_scenario.apply_async(args=[run.pk], task_id=run.celery_task_id,
                                 queue=settings.TIERLAB_RUN_QUEUE,
                                 time_limit=None, soft_time_limit=None)
    except Exception as exc:  # broker down or misconfigured
        log.exception("could not queue run %s", run.pk)
        run.mark_failed(f"could not queue the run: the task broker is unavailable ({exc})")
        settle_followers(run)


def send_again(run: Run, *, count_requeue: bool, expect_status: str) -> bool:
    """Queue ``run`` again under a new task id (:func:`tierlab.jobs.send_again`)."""
    return jobs.send_again(run, reset=dict(progress=0.0), count_requeue=count_requeue,
                           expect_status=expect_status, enqueue=enqueue)


def cancel_run(run: Run, user) -> Run:
    """Stop a queued or running run: it reads back failed, "cancelled by <user>". A worker
    that picks it up does nothing; one running it stops at its next progress callback and
    stores nothing. Runs waiting for it (identical input) get one of them computed instead.

    Raises RunStateError (``status``) when the run has already finished.
    """
    with transaction.atomic():
        run = Run.objects.select_for_update().get(pk=run.pk)
        if run.is_finished:
            raise RunStateError("status", f"the run has already {run.status}; only a queued or "
                                          "running run can be cancelled")
        run.mark_failed(f"cancelled by {user.get_username()}")
        jobs.remove_cancelled_messages([run.celery_task_id])
        settle_followers(run)
    return run


class RunStateError(Exception):
    """A request that the run's state does not allow; ``field`` and ``message`` for a 400."""

    def __init__(self, field: str, message: str):
        super().__init__(message)
        self.field, self.message = field, message


def settle_followers(leader: Run | None = None) -> int:
    """Finish the queued runs that wait for an identical run (``reused_from``) that has
    finished: succeeded, serving its result (``Run.result`` reads the leader's; no copy),
    when it succeeded; when it failed (cancelled, worker lost, ...) the oldest waiting run
    is sent to the worker itself and the others wait for it. Only ``leader``'s followers, or
    (the read-time check) every such run."""
    followers = Run.objects.filter(status=Run.Status.QUEUED, reused_from__isnull=False,
                                   reused_from__status__in=[Run.Status.SUCCEEDED, Run.Status.FAILED])
    if leader is not None:
        followers = followers.filter(reused_from=leader)
    n = 0
    for leader_id in sorted(set(followers.values_list("reused_from", flat=True))):
        with transaction.atomic():
            lead = Run.objects.get(pk=leader_id)
            waiting = list(Run.objects.select_for_update().filter(
                reused_from=lead, status=Run.Status.QUEUED).order_by("created_at", "id"))
            if not waiting:
                continue
            now = timezone.now()
            if lead.status == Run.Status.SUCCEEDED:
                Run.objects.filter(pk__in=[r.pk for r in waiting]).update(
                    status=Run.Status.SUCCEEDED, progress=1.0,
                    started_at=now, finished_at=now)
            else:
                first, rest = waiting[0], waiting[1:]
                Run.objects.filter(pk__in=[r.pk for r in rest]).update(reused_from=first)
                first.reused_from, first.celery_task_id, first.enqueued_at = None, str(uuid.uuid4()), now
                first.save(update_fields=["reused_from", "celery_task_id", "enqueued_at"])
                log.info("run %s: the identical run %s it waited for failed; computing it itself",
                         first.pk, lead.pk)
                transaction.on_commit(lambda run=first: enqueue(run))
            n += len(waiting)
    return n


def requeue_lost_runs(now=None) -> int:
    """Runs still queued ``RUN_QUEUED_TIMEOUT_S`` after they were sent lost their message
    (a broker restarted without persistence, flushed, failed over), unless it is still in
    a queue workers are reading (:func:`tierlab.jobs.lost_messages`): each is sent again, at
    most ``RUN_MAX_REQUEUES`` times, then marked failed with the reason."""
    now = now or timezone.now()
    timeout_s = settings.TIERLAB_RUN_QUEUED_TIMEOUT_S
    cutoff = now - timedelta(seconds=timeout_s)
    lost = Run.objects.filter(status=Run.Status.QUEUED, reused_from=None).filter(
        Q(enqueued_at__lt=cutoff) | Q(enqueued_at=None, created_at__lt=cutoff)).only(
        "pk", "status", "requeues", "celery_task_id")   # checked on every list: no reports
    n = 0
    for run in jobs.lost_messages(lost, now):
        if run.requeues < settings.TIERLAB_RUN_MAX_REQUEUES:
            with transaction.atomic():
                if send_again(run, count_requeue=True, expect_status=Run.Status.QUEUED):
                    log.warning("run %s was still queued %s s after it was sent: sent again (%s)",
                                run.pk, timeout_s, run.requeues)
                    n += 1
        else:
            sent = 1 + run.requeues
            if Run.objects.filter(pk=run.pk, status=Run.Status.QUEUED,
                                  celery_task_id=run.celery_task_id).update(
                    status=Run.Status.FAILED, finished_at=now,
                    error=(f"not started: no worker took the run within {timeout_s} s, "
                           f"{sent} time{'s' if sent > 1 else ''} it was sent (its queue message "
                           "was lost, or no worker reads the queue); start it again")):
                n += 1
    return n


def recover_runs_of(worker: str, started_before=None) -> int:
    """At a worker's start: runs left ``running`` by an earlier process of the same name
    (stopped before it could hand its message back, e.g. Ctrl-C of ``scripts/start``) are
    queued again; the start that died counts as an attempt. ``started_before``: when this
    process started (a run it took itself since is left alone)."""
    return jobs.requeue_left_running(Run, worker, started_before, send_again, "run", log)


def _test_sleep(check=None) -> None:
    """Test-only: a slow run (TIERLAB_TEST_TASK_SLEEP_S). With TIERLAB_TEST_TASK_STUCK it
    ignores the soft time limit, as native code that never returns to Python would.
    ``check()`` is called every 0.2 s, as the engine's progress callback would be."""
    deadline = time.monotonic() + settings.TIERLAB_TEST_TASK_SLEEP_S
    while (left := deadline - time.monotonic()) > 0:
        try:
            time.sleep(min(left, 0.2))
            if check is not None:
                check()
        except SoftTimeLimitExceeded:
            if not settings.TIERLAB_TEST_TASK_STUCK:
                raise
            jobs.reconnect_after_interrupt()      # it may have landed inside check()'s query


def execute_run(run_id: int, task_id: str = "", worker: str = "") -> None:
    """Body of the Celery task: evaluate the run's stored input and record the outcome.

    Never leaves the run `running`: a ScenarioError, a time limit or any other error
    becomes `failed` with a reason. A redelivered task for a finished run does nothing, and
    so does a message superseded by a later send of the same run (another task id); one
    whose workers already died ``TIERLAB_RUN_MAX_ATTEMPTS`` times fails it instead of
    killing another worker. A run cancelled while it runs stops at its next progress
    callback. An identical input that succeeded meanwhile is copied, not computed.
    """
    run = Run.objects.filter(pk=run_id).first()
    if run is None:
        log.warning("run %s does not exist (deleted, or another database)", run_id)
        return
    if run.is_finished:
        log.info("run %s is already %s; nothing to do", run_id, run.status)
        return
    if task_id and run.celery_task_id and task_id != run.celery_task_id:
        log.info("run %s: task %s was superseded by %s; nothing to do", run_id, task_id, run.celery_task_id)
        return
    if run.reused_from_id is not None:
        log.info("run %s waits for run %s (identical input); nothing to do", run_id, run.reused_from_id)
        return
    if run.attempts >= settings.TIERLAB_RUN_MAX_ATTEMPTS:
        run.mark_failed(f"worker lost: the run was started {run.attempts} times and its worker "
                        "died each time (killed, out of memory?); not trying again")
        settle_followers(run)
        return
    done = (Run.objects.filter(input_hash=run.input_hash, status=Run.Status.SUCCEEDED, reused_from=None)
            .exclude(pk=run.pk).order_by("-finished_at").first())
    now = timezone.now()
    if done is not None and Run.objects.filter(pk=run.pk, status=Run.Status.QUEUED).update(
            status=Run.Status.SUCCEEDED, reused_from=done, progress=1.0,
            started_at=now, finished_at=now):     # two identical runs were queued at once
        log.info("run %s: identical run %s succeeded meanwhile; its result reused", run_id, done.pk)
        settle_followers(run)
        return
    if not run.mark_running(task_id, worker):
        log.info("run %s is already %s; nothing to do", run_id, run.status)
        return
    try:
        if settings.TIERLAB_TEST_TASK_SLEEP_S:
            _test_sleep(check=lambda: run.set_progress(0.0))
        result = evaluate_resolved(run.input, progress=run.set_progress)
    except RunStopped:
        if not Run.objects.filter(pk=run_id).exists():      # its scenario was deleted
            log.info("run %s stopped: it was deleted", run_id)
            return
        run.refresh_from_db()
        log.info("run %s stopped: %s", run_id, run.error or run.status)
    except ScenarioError as exc:
        run.mark_failed(f"{exc.field}: {exc.message}")
    except SoftTimeLimitExceeded:
        jobs.reconnect_after_interrupt()
        run.mark_failed(f"time limit exceeded: the run took longer than "
                        f"{settings.CELERY_TASK_SOFT_TIME_LIMIT} s (soft limit)")
    except Exception as exc:
        log.exception("run %s failed", run_id)
        run.mark_failed(f"engine error: {type(exc).__name__}: {exc}")
    else:
        reason = jobs.unstorable(result)
        if reason:
            # The same input gives the same report: runs waiting for this one fail with it
            # at once, none is sent to compute it again.
            log.error("run %s: %s", run_id, reason)
            if run.mark_failed(reason):
                fail_followers(run, reason)
        else:
            try:
                stored = run.mark_succeeded(result)
            except Exception as exc:        # a report the database refused: never left running
                log.exception("run %s: its result could not be stored", run_id)
                jobs.reconnect_after_interrupt()
                run.mark_failed(f"the result could not be stored: {type(exc).__name__}: {exc}")
            else:
                if not stored:
                    log.info("run %s finished but was already %s; result not stored", run_id, run.status)
    settle_followers(run)


def fail_followers(leader: Run, reason: str) -> int:
    """Fail the queued runs waiting for ``leader`` (identical input) with ``reason``: for a
    failure the input itself causes, which computing it again would only repeat."""
    return Run.objects.filter(reused_from=leader, status=Run.Status.QUEUED).update(
        status=Run.Status.FAILED, error=reason, finished_at=timezone.now())


def fail_after_hard_limit(run_id: int, limit_s: float) -> None:
    """The worker killed the run's process at the hard time limit: record why."""
    Run.objects.filter(pk=run_id, status__in=[Run.Status.QUEUED, Run.Status.RUNNING]).update(
        status=Run.Status.FAILED, finished_at=timezone.now(),
        error=jobs.limit_exceeded("the run took", limit_s, hard=True))
    settle_followers(Run(pk=run_id))


def fail_stale_runs() -> int:
    """The read-time check, run by every read of runs (API, pages): runs whose message was
    lost are sent again or failed, runs whose worker died are marked failed ("worker
    lost"), and runs that waited for an identical one that finished are settled."""
    return requeue_lost_runs() + Run.fail_stale() + settle_followers()
