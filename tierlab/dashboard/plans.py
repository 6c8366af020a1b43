"""Plans: the planner (``simulation.planner``) run in chunks by Celery.

A plan's candidate space is split into ``TIERLAB_PLAN_CHUNKS`` chunks, or more so that none has
over ``TIERLAB_PLAN_CHUNK_CANDIDATES`` candidates (a chunk must end well inside the task time
limit: a candidate that fits takes about 10 ms), ``plan_chunk(spec, k, n)`` one Celery task
each, so every worker takes part; the answer is the engine's
``merge`` of the chunks' results, the same whichever worker ran which chunk. A running chunk
writes its ``done``/``feasible`` counts and its best candidate every few candidates (the
progress bar), and stops there when the plan is cancelled. A chunk whose worker died is
sent again (at the worker's restart, or by the read-time check once it is past the time
limit), up to ``TIERLAB_RUN_MAX_ATTEMPTS`` starts: the search resumes where the chunks
that finished left it.

A cluster profile the spec names (``"cluster": {"profile": <id>}``, as in scenarios) is
checked against its owner's visibility and replaced by its fitted figures when the plan is
made (:func:`with_profile`): every candidate of every chunk uses the same figures whenever
it runs (a refit during the search changes nothing), the stored spec says which, and each
candidate's scenario carries them, so the runs of a saved candidate hash them
(``services.input_hash``).
"""

from __future__ import annotations

import logging
import uuid

from celery.exceptions import SoftTimeLimitExceeded
from django.conf import settings
from django.db import transaction
from django.utils import timezone

import simulation
from simulation import ScenarioError, ScenarioErrors
from simulation import planner
from tierlab import jobs
from tierlab.dashboard import comparisons
from tierlab.dashboard.comparisons import InputError, owned_for
from tierlab.dashboard.models import Plan, PlanChunk
from tierlab.scenarios import services
from tierlab.scenarios.models import Scenario

log = logging.getLogger(__name__)

DEFAULT_CHUNKS = 8
DEFAULT_CHUNK_CANDIDATES = 5000
PROGRESS_EVERY = 10          # candidates between progress writes (and cancel checks)


class _Cancelled(Exception):
    pass


def n_chunks(total: int) -> int:
    """Chunks for ``total`` candidates: the setting's count, more for a large space."""
    per = max(1, int(getattr(settings, "TIERLAB_PLAN_CHUNK_CANDIDATES", DEFAULT_CHUNK_CANDIDATES)))
    return max(1, int(getattr(settings, "TIERLAB_PLAN_CHUNKS", DEFAULT_CHUNKS)), -(-total // per))


def _profile_ref(spec):
    cluster = spec.get("cluster") if isinstance(spec, dict) else None
    return cluster.get("profile") if isinstance(cluster, dict) else None


def with_profile(spec, owner):
    """``spec`` with the cluster profile it names by id replaced by that profile's figures
    now (``ClusterProfile.engine_spec``: the figures, its id and name; a new dict), as a
    run's resolved input carries them. Figures given inline (an object) are kept; a spec
    without a profile is returned as it is. Raises InputError (``spec.cluster.profile``)
    for a profile ``owner`` cannot see (someone else's, not their team's) or none."""
    ref = _profile_ref(spec)
    if ref is None or isinstance(ref, dict):
        return spec
    from tierlab.scenarios.models import ClusterProfile
    from tierlab.scenarios.profiles import check_visible

    try:
        check_visible(spec, owner)
    except ScenarioError as exc:
        raise InputError(f"spec.{exc.field}", exc.message) from None
    profile = ClusterProfile.objects.filter(pk=int(ref)).first()
    if profile is None:           # deleted since the check
        raise InputError("spec.cluster.profile", f"unknown cluster profile {ref!r}")
    return {**spec, "cluster": {**spec["cluster"], "profile": profile.engine_spec()}}


def parse(spec) -> dict:
    """The plan spec checked by the engine with the catalog's presets. Raises InputError
    naming ``spec.<field>`` (``spec`` itself when it is not an object: the engine's
    ``plan``), or ScenarioErrors with one ``spec.<field>`` error per bad field when the
    engine names several. A ``cluster.profile`` must be figures by now (:func:`with_profile`)."""
    try:
        return planner.parse_spec(spec, **services.catalog_lookups())
    except ScenarioError as exc:
        errors = [ScenarioError(_spec_field(e.field), e.message)
                  for e in getattr(exc, "errors", None) or [exc]]
        if len(errors) > 1:
            raise ScenarioErrors(errors) from None
        raise InputError(errors[0].field, errors[0].message) from None


def _spec_field(field: str) -> str:
    """The request's name of an engine plan-spec field: ``spec.<field>``, or ``spec`` for
    the whole spec (the engine's ``plan``)."""
    return "spec" if field in ("", "plan") else f"spec.{field}"


def model_title(model) -> str:
    """How a plan's default name calls its model: the preset's slug, the architecture's
    ``name``, else a description from the engine: "a 13.0B-parameter model" (the engine's
    parameter count, :func:`simulation.params.count_params`), or "custom model (40 layers,
    hidden 5120)" when it cannot count them."""
    if isinstance(model, str):
        return model
    if not isinstance(model, dict):
        return "custom model"
    if isinstance(model.get("name"), str) and model["name"].strip() and model["name"] != "custom":
        return model["name"].strip()
    if isinstance(model.get("preset"), str) and model["preset"]:
        return model["preset"]
    try:
        from simulation.params import count_params
        from simulation.scenario import ModelSpec

        total = count_params(ModelSpec.from_dict(model)).total
    except (ScenarioError, TypeError, ValueError, KeyError):
        shape = [f"{model[k]} {w}" if w == "layers" else f"{w} {model[k]}"
                 for k, w in (("num_layers", "layers"), ("hidden_size", "hidden")) if model.get(k)]
        return f"custom model ({', '.join(shape)})" if shape else "custom model"
    if total >= 1e12:
        return f"a {total / 1e12:.2f}T-parameter model"
    if total >= 1e9:
        return f"a {total / 1e9:.1f}B-parameter model"
    return f"a {total / 1e6:.0f}M-parameter model"


@transaction.atomic
def create_plan(owner, spec, name: str = "") -> Plan:
    """A plan of ``spec`` owned by ``owner``, its chunks queued. Raises InputError naming
    the spec's field (``spec.space.tensor_parallel.1``), or TooManyActive at
    ``MAX_ACTIVE_PLANS_PER_USER``; nothing is saved then. A cluster
    profile named by id is stored as its figures now (:func:`with_profile`)."""
    spec = with_profile(spec, owner)
    parsed = parse(spec)
    model = model_title(spec["model"])
    node = spec["cluster"].get("node") or "cluster"
    default = f"Plan: {model} on {node}, {parsed['objective'].replace('_', ' ')}"
    jobs.check_active(owner, "plans", Plan.objects.filter(
        owner=owner, status__in=[Plan.Status.QUEUED, Plan.Status.RUNNING]))
    plan = Plan.objects.create(owner=owner, name=((name or "").strip() or default)[:200], spec=spec,
                               total_candidates=parsed["num_candidates"],
                               engine_version=simulation.ENGINE_VERSION)
    now = timezone.now()
    splits = planner.plan_chunks(parsed, n_chunks(parsed["num_candidates"]))
    chunks = []
    for k, n in splits:
        lo, hi = parsed["num_candidates"] * k // n, parsed["num_candidates"] * (k + 1) // n
        chunks.append(PlanChunk.objects.create(plan=plan, index=k, n_chunks=n, size=hi - lo,
                                               celery_task_id=str(uuid.uuid4()), enqueued_at=now))
    transaction.on_commit(lambda: [enqueue(c) for c in chunks])
    return plan


def enqueue(chunk: PlanChunk) -> None:
    """Send a chunk to the worker queue; a broker failure fails the chunk instead of hiding it."""
    from tierlab.dashboard.tasks import run_plan_chunk

    try:
        run_plan_chunk.apply_async(args=[chunk.pk], task_id=chunk.celery_task_id,
                                   queue=settings.TIERLAB_RUN_QUEUE, time_limit=None, soft_time_limit=None)
    except Exception as exc:  # broker down or misconfigured
        log.exception("could not queue plan chunk %s", chunk.pk)
        finish_chunk(chunk, None, PlanChunk.Status.FAILED,
                     f"could not queue the chunk: the task broker is unavailable ({exc})")


def send_again(chunk: PlanChunk, *, count_requeue: bool, expect_status: str) -> bool:
    return jobs.send_again(chunk, reset=dict(done=0, feasible=0, best=None), count_requeue=count_requeue,
                           expect_status=expect_status, enqueue=enqueue)


def recover_chunks_of(worker: str, started_before=None) -> int:
    """At a worker's start: its chunks left ``running`` by an earlier process are queued again."""
    return jobs.requeue_left_running(PlanChunk, worker, started_before, send_again, "plan chunk", log)


def cancel_plan(plan: Plan) -> Plan:
    """Stop the plan: queued chunks now (their messages taken out of the queue once this
    commits), running ones at their next progress write.
    Raises InputError (``status``) when it has already finished."""
    with transaction.atomic():
        plan = Plan.objects.select_for_update().get(pk=plan.pk)
        if plan.is_finished:
            raise InputError("status", f"the plan has already {'been ' if plan.status == 'cancelled' else ''}"
                                       f"{plan.status}; only a queued or running plan can be cancelled")
        now = timezone.now()
        plan.cancelled, plan.status, plan.finished_at = True, Plan.Status.CANCELLED, now
        plan.save(update_fields=["cancelled", "status", "finished_at"])
        queued = PlanChunk.objects.filter(plan=plan, status=PlanChunk.Status.QUEUED)
        jobs.remove_cancelled_messages(list(queued.values_list("celery_task_id", flat=True)))
        queued.update(status=PlanChunk.Status.CANCELLED, error="cancelled before it ran", finished_at=now)
        _settle(plan)
    return plan


# ---------------------------------------------------------------- a chunk, in the worker
def _settle(plan: Plan) -> None:
    """Once no chunk is queued or running: the merged answer of the chunks that finished,
    and the plan's status. The caller holds the plan's row (select_for_update)."""
    chunks = list(plan.chunks.all())
    if any(c.status in (PlanChunk.Status.QUEUED, PlanChunk.Status.RUNNING) for c in chunks):
        return
    done = [c for c in chunks if c.status == PlanChunk.Status.DONE]
    failed = [c for c in chunks if c.status == PlanChunk.Status.FAILED]
    fields = {}
    if done:
        fields["result"] = planner.merge(plan.spec, [c.result for c in done], **services.catalog_lookups())
    if not plan.is_finished:
        fields["status"] = Plan.Status.FAILED if failed else Plan.Status.SUCCEEDED
        fields["finished_at"] = timezone.now()
    if failed:
        fields["error"] = (f"{len(failed)} of {len(chunks)} chunks failed: "
                           + "; ".join(sorted({c.error for c in failed})))
    Plan.objects.filter(pk=plan.pk).update(**fields)


def finish_chunk(chunk: PlanChunk, result: dict | None, status: str, reason: str = "") -> None:
    with transaction.atomic():
        plan = Plan.objects.select_for_update().filter(pk=chunk.plan_id).first()
        if plan is None:               # deleted meanwhile (tierlab.dashboard.removal): nothing to write
            log.info("plan chunk %s: its plan %s was deleted; result dropped", chunk.pk, chunk.plan_id)
            return
        fields = dict(status=status, error=reason, finished_at=timezone.now())
        if result is not None:
            fields.update(result=result, done=result["done"], feasible=result["feasible"],
                          best=_best_of(result))
        PlanChunk.objects.filter(pk=chunk.pk).update(**fields)
        _settle(plan)


def _best_of(result: dict) -> dict | None:
    kept = result.get("kept") or []
    if not kept:
        return None
    best = min(kept, key=lambda r: (planner._rank_key(r), r["index"]))    # the engine's ranking
    return planner._brief(best)


def _cancel_requested(plan_id: int) -> bool:
    """The plan was cancelled, or deleted (a delete cancels it first)."""
    return not Plan.objects.filter(pk=plan_id, cancelled=False).exists()


def execute_chunk(chunk_id: int, task_id: str = "", worker: str = "") -> None:
    """Body of the Celery task: search the chunk's candidates and record the result.

    A redelivered chunk that already finished does nothing, nor does a superseded message;
    one left running by a dead worker starts over, unless it was started
    ``TIERLAB_RUN_MAX_ATTEMPTS`` times already (then it fails).
    """
    chunk = PlanChunk.objects.select_related("plan").filter(pk=chunk_id).first()
    if chunk is None or chunk.status in PlanChunk.FINISHED:
        return
    if task_id and chunk.celery_task_id and task_id != chunk.celery_task_id:
        log.info("plan chunk %s: task %s was superseded by %s", chunk_id, task_id, chunk.celery_task_id)
        return
    plan = chunk.plan
    if plan.cancelled:
        finish_chunk(chunk, None, PlanChunk.Status.CANCELLED, "cancelled before it ran")
        return
    max_attempts = getattr(settings, "TIERLAB_RUN_MAX_ATTEMPTS", 3)
    if chunk.attempts >= max_attempts:
        finish_chunk(chunk, None, PlanChunk.Status.FAILED,
                     f"worker lost: the chunk was started {chunk.attempts} times and its worker died "
                     "each time (killed, out of memory?); not trying again")
        return
    now = timezone.now()
    from django.db.models import F

    claimed = PlanChunk.objects.filter(
        pk=chunk.pk, status__in=[PlanChunk.Status.QUEUED, PlanChunk.Status.RUNNING]).update(
        status=PlanChunk.Status.RUNNING, started_at=now, done=0, feasible=0, best=None,
        attempts=F("attempts") + 1, celery_task_id=task_id or chunk.celery_task_id,
        worker=worker or chunk.worker)
    if not claimed:
        return
    Plan.objects.filter(pk=plan.pk, status=Plan.Status.QUEUED).update(status=Plan.Status.RUNNING, started_at=now)

    def progress(p: dict) -> None:
        best = None if jobs.unstorable(p["best"]) else p["best"]     # inf/NaN: jsonb refuses it
        PlanChunk.objects.filter(pk=chunk.pk).update(done=p["done"], feasible=p["feasible"], best=best)
        if _cancel_requested(plan.pk):
            raise _Cancelled

    result, status, reason = None, PlanChunk.Status.DONE, ""
    try:
        if settings.TIERLAB_TEST_TASK_SLEEP_S:
            services._test_sleep()
        if _cancel_requested(plan.pk):
            raise _Cancelled
        result = planner.plan_chunk(plan.spec, chunk.index, chunk.n_chunks, progress=progress,
                                    every=PROGRESS_EVERY, **services.catalog_lookups())
    except _Cancelled:
        status, reason = PlanChunk.Status.CANCELLED, "cancelled"
    except SoftTimeLimitExceeded:
        jobs.reconnect_after_interrupt()
        status, reason = PlanChunk.Status.FAILED, (
            jobs.limit_exceeded("the chunk ran", settings.CELERY_TASK_SOFT_TIME_LIMIT))
    except Exception as exc:
        log.exception("plan chunk %s failed", chunk_id)
        status, reason = PlanChunk.Status.FAILED, f"engine error: {type(exc).__name__}: {exc}"
    if result is not None and (unstorable := jobs.unstorable(result, "the chunk's result")):
        log.error("plan chunk %s: %s", chunk_id, unstorable)   # jsonb would refuse it: failed now
        result, status, reason = None, PlanChunk.Status.FAILED, unstorable
    finish_chunk(chunk, result, status, reason)


def fail_chunk_after_hard_limit(chunk_id: int, limit_s: float) -> None:
    """The worker killed the chunk's process at the hard time limit: record why."""
    jobs.fail_chunk_after_hard_limit(PlanChunk, chunk_id, limit_s, finish_chunk, None)


def check_chunks() -> int:
    """The read-time check: lost messages are sent again (at most ``RUN_MAX_REQUEUES``
    times), chunks whose worker died are sent again to resume the search (at most
    ``RUN_MAX_ATTEMPTS`` starts), else failed with the reason."""
    n = 0
    for chunk in jobs.lost_messages(PlanChunk.lost()):
        with transaction.atomic():
            if chunk.requeues < settings.TIERLAB_RUN_MAX_REQUEUES:
                n += send_again(chunk, count_requeue=True, expect_status=PlanChunk.Status.QUEUED)
                continue
        finish_chunk(chunk, None, PlanChunk.Status.FAILED,
                     f"not started: no worker took the chunk within {settings.TIERLAB_RUN_QUEUED_TIMEOUT_S} s")
        n += 1
    for chunk in PlanChunk.stale():
        if chunk.attempts < getattr(settings, "TIERLAB_RUN_MAX_ATTEMPTS", 3):
            with transaction.atomic():
                n += send_again(chunk, count_requeue=False, expect_status=PlanChunk.Status.RUNNING)
            continue
        finish_chunk(chunk, None, PlanChunk.Status.FAILED,
                     f"worker lost: the chunk was still running {settings.TIERLAB_RUN_STALE_AFTER_S} s "
                     "after it started (past the time limit)")
        n += 1
    return n


# ---------------------------------------------------------------- what the page reads
def plan_payload(plan: Plan) -> dict:
    check_chunks()
    plan.refresh_from_db()
    chunks = list(plan.chunks.all())
    done = sum(c.done for c in chunks)
    bests = [c.best for c in chunks if c.best]
    best = min(bests, key=lambda b: (planner._rank_key(b), b["index"])) if bests else None
    return {
        "id": plan.pk, "name": plan.name, "owner": plan.owner.get_username(), "spec": plan.spec,
        "status": plan.status, "cancelled": plan.cancelled,
        "progress": min(1.0, done / plan.total_candidates) if plan.total_candidates else 1.0,
        "done": done, "feasible": sum(c.feasible for c in chunks),
        "total_candidates": plan.total_candidates, "chunks": len(chunks),
        "workers": sorted({c.worker for c in chunks if c.worker}),
        "best_so_far": best, "result": plan.result, "error": plan.error,
        "engine_version": plan.engine_version, "url": plan.get_absolute_url(),
        "created_at": plan.created_at, "started_at": plan.started_at, "finished_at": plan.finished_at,
    }


def _row(plan: Plan, rank) -> dict:
    try:
        rank = int(rank)
    except (TypeError, ValueError):
        raise InputError("rank", f"must be a whole number, got {rank!r}") from None
    rows = (plan.result or {}).get("top") or []
    if not 1 <= rank <= len(rows):
        raise InputError("rank", f"the plan has {len(rows)} ranked candidate(s); got {rank}"
                         if plan.result else "the plan has no answer yet")
    return rows[rank - 1]


def _scenario_spec(owner, spec: dict) -> dict:
    """A candidate's scenario as ``owner`` saves it: a cluster profile whose figures are
    still the ones the plan used, and which ``owner`` can see, is named by its id (the
    scenario then follows the profile as one made in the form does); otherwise the plan's
    figures stay inline, so the scenario computes what the plan ranked."""
    prof = _profile_ref(spec)
    if not isinstance(prof, dict) or prof.get("id") is None:
        return spec
    from tierlab.scenarios.models import ClusterProfile

    current = ClusterProfile.objects.visible_to(owner).filter(pk=prof["id"]).first()
    if current is None or current.engine_spec() != prof:
        return spec
    return {**spec, "cluster": {**spec["cluster"], "profile": current.pk}}


def save_as_scenario(owner, plan: Plan, rank, name: str = "") -> Scenario:
    """Candidate ``rank`` (1 = best) of the plan as a new scenario of ``owner``."""
    row = _row(plan, rank)
    c = row["choices"]
    default = (f"{plan.name} #{row['rank']}: {c['num_nodes']} node(s), TP {c['tensor_parallel']} "
               f"PP {c['pipeline_parallel']} {c['strategy']}")
    return Scenario.objects.create(owner=owner, name=((name or "").strip() or default)[:200],
                                   spec=_scenario_spec(owner, row["scenario"]))


def compare_top(owner, plan: Plan, count: int = 3):
    """The plan's top ``count`` (at most 3 by default) saved as scenarios and compared."""
    plan = owned_for(Plan, owner, plan.pk, "plan", "compare")
    rows = (plan.result or {}).get("top") or []
    if len(rows) < 2:
        raise InputError("plan", "a comparison needs at least two ranked candidates"
                         if plan.result else "the plan has no answer yet")
    saved = [save_as_scenario(owner, plan, r["rank"]) for r in rows[:count]]
    return comparisons.create_comparison(owner, [s.pk for s in saved], f"{plan.name}: top {len(saved)}")
