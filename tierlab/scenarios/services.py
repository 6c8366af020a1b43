"""What the API, pages and tasks do with scenarios and runs; views and tasks stay thin.

The engine (`simulation`) is called here and only here on the web side.
"""

import hashlib
import inspect
import json
import logging
import time
import uuid

from celery.exceptions import SoftTimeLimitExceeded
from django.conf import settings
from django.db import connection, transaction
from django.utils import timezone

import simulation
from simulation import ScenarioError
from tierlab.catalog.models import Accelerator, ModelPreset, NodeTemplate
from tierlab.scenarios.models import Run, Scenario

log = logging.getLogger(__name__)


# ---------------------------------------------------------------- engine calls
_PRESET_TABLES = (("models", ModelPreset), ("nodes", NodeTemplate), ("accelerators", Accelerator))
_catalog_cache: tuple = (None, None)       # (version, tables), per process
_catalog_checked_at = float("-inf")         # time.monotonic() of the last version query


def forget_catalog() -> None:
    """Make the next ``catalog_lookups`` ask the database (a preset row changed here)."""
    global _catalog_checked_at
    _catalog_checked_at = float("-inf")


def _catalog_version() -> tuple:
    """Row count and last edit of each preset table, in one query (cheap to ask per request)."""
    sql = " UNION ALL ".join(
        f"SELECT {i}, COUNT(*), MAX(updated_at) FROM {connection.ops.quote_name(model._meta.db_table)}"
        for i, (_, model) in enumerate(_PRESET_TABLES))
    with connection.cursor() as cursor:
        cursor.execute(sql)
        return tuple(sorted(tuple(row) for row in cursor.fetchall()))


def catalog_lookups() -> dict:
    """Preset tables for the engine, from the database so admin edits take effect.

    A table with no rows yet (catalog not loaded) falls back to the engine's built-ins.
    Rebuilt when a preset row is added, removed or saved (the version query, asked at most
    every ``CATALOG_CHECK_S`` seconds; at once after an edit in this process); the engine
    only reads these tables, so one copy per process serves every request.
    """
    global _catalog_cache, _catalog_checked_at
    cached_version, tables = _catalog_cache
    now = time.monotonic()
    if tables is not None and now - _catalog_checked_at < settings.CATALOG_CHECK_S:
        return dict(tables)
    version = _catalog_version()
    _catalog_checked_at = now
    if version != cached_version:
        tables = {}
        for key, model in _PRESET_TABLES:
            rows = {row.slug: row.engine_spec() for row in model.objects.all()}
            tables[key] = rows or None
        _catalog_cache = (version, tables)
    return dict(tables)


class TooMuchWork(Exception):
    """A valid scenario whose evaluation is more work than a request may do.

    ``field`` is the scenario field that drives most of it (``checkpoint.monte_carlo_runs``),
    ``message`` says how much and what to do instead; ``bound`` is the engine's
    :class:`simulation.CostBound`. The API answers 413.
    """

    def __init__(self, field: str, message: str, bound):
        self.field, self.message, self.bound = field, message, bound
        super().__init__(f"{field}: {message}")


def resolve(spec: dict) -> dict:
    """Validate ``spec`` completely and return the resolved scenario JSON.

    Raises ScenarioError. The engine's ``validate`` makes every check an evaluation would
    (batch divisibility, parallel degrees, the caps on work) without simulating, so saving
    a scenario or starting a run costs well under a millisecond whatever it describes.
    """
    scenario = simulation.Scenario.from_dict(spec, **catalog_lookups())
    simulation.validate(scenario)
    return scenario.to_dict()


def estimate(spec: dict, include_step: bool = False, detail: bool = False) -> dict:
    """The engine's report for ``spec``, computed now. Raises ScenarioError, or TooMuchWork
    when the engine's cost bound for it is over ``ESTIMATE_MAX_WORK_UNITS``.

    By default memory only (the fast live estimate); ``include_step`` adds the simulated
    step (time, breakdown, links, verdict) and checkpoint goodput; ``detail`` with it adds
    the step's timeline and the checkpoint Monte-Carlo, as a run's report has them.
    """
    scenario = simulation.Scenario.from_dict(spec, **catalog_lookups())
    simulation.validate(scenario)
    check_request_work(scenario, include_step, detail)
    return simulation.evaluate(scenario, include_step=include_step, detail=detail).to_dict()


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
    resolve(spec)
    return Scenario.objects.create(owner=owner, name=name, spec=spec)


@transaction.atomic
def start_run(scenario: Scenario) -> Run:
    """Create a run of the scenario as it is now.

    An identical input (same hash) that already succeeded is reused: the new run is
    created succeeded with a copy of that result. Otherwise the run is queued and
    sent to a Celery worker once this transaction commits. Raises ScenarioError.
    """
    resolved = resolve(scenario.spec)
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
            input_hash=digest, result=done.result, engine_version=version, reused_from=done,
            started_at=now, finished_at=now)
    run = Run.objects.create(scenario=scenario, input=resolved, input_hash=digest,
                             engine_version=version, celery_task_id=str(uuid.uuid4()))
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


def _test_sleep() -> None:
    """Test-only: a slow run (TIERLAB_TEST_TASK_SLEEP_S). With TIERLAB_TEST_TASK_STUCK it
    ignores the soft time limit, as native code that never returns to Python would."""
    deadline = time.monotonic() + settings.TIERLAB_TEST_TASK_SLEEP_S
    while (left := deadline - time.monotonic()) > 0:
        try:
            time.sleep(left)
        except SoftTimeLimitExceeded:
            if not settings.TIERLAB_TEST_TASK_STUCK:
                raise


def execute_run(run_id: int, task_id: str = "", worker: str = "") -> None:
    """Body of the Celery task: evaluate the run's stored input and record the outcome.

    Never leaves the run `running`: a ScenarioError, a time limit or any other error
    becomes `failed` with a reason. A redelivered task for a finished run does nothing; one
    whose workers already died ``TIERLAB_RUN_MAX_ATTEMPTS`` times fails it instead of
    killing another worker.
    """
    run = Run.objects.filter(pk=run_id).first()
    if run is None:
        log.warning("run %s does not exist (deleted, or another database)", run_id)
        return
    if run.is_finished:
        log.info("run %s is already %s; nothing to do", run_id, run.status)
        return
    if run.attempts >= settings.TIERLAB_RUN_MAX_ATTEMPTS:
        run.mark_failed(f"worker lost: the run was started {run.attempts} times and its worker "
                        "died each time (killed, out of memory?); not trying again")
        return
    run.mark_running(task_id, worker)
    try:
        if settings.TIERLAB_TEST_TASK_SLEEP_S:
            _test_sleep()
        result = evaluate_resolved(run.input, progress=run.set_progress)
    except ScenarioError as exc:
        run.mark_failed(f"{exc.field}: {exc.message}")
    except SoftTimeLimitExceeded:
        run.mark_failed(f"time limit exceeded: the run took longer than "
                        f"{settings.CELERY_TASK_SOFT_TIME_LIMIT} s (soft limit)")
    except Exception as exc:
        log.exception("run %s failed", run_id)
        run.mark_failed(f"engine error: {type(exc).__name__}: {exc}")
    else:
        run.mark_succeeded(result)


def fail_after_hard_limit(run_id: int, limit_s: float) -> None:
    """The worker killed the run's process at the hard time limit: record why."""
    Run.objects.filter(pk=run_id, status__in=[Run.Status.QUEUED, Run.Status.RUNNING]).update(
        status=Run.Status.FAILED, finished_at=timezone.now(),
        error=f"time limit exceeded: the run took longer than {limit_s:g} s (hard limit; its "
              "process was killed)")


def fail_stale_runs() -> int:
    """The read-time sweep: runs whose worker died are marked failed ("worker lost")."""
    return Run.fail_stale()
