"""Comparisons: 2–8 of your scenarios side by side, one run each.

Making a comparison starts a run of every scenario (an identical earlier result is reused
at once, see ``services.start_run``); the comparison shows those runs' reports. Nothing is
computed here but which inputs differ and which column is best (``table``).
"""

from __future__ import annotations

from django.db import transaction

from simulation import ScenarioError
from tierlab import jobs
from tierlab.dashboard.models import MAX_COMPARED, MIN_COMPARED, Comparison, ComparisonItem
from tierlab.dashboard.table import comparison_table
from tierlab.scenarios import services
from tierlab.scenarios.models import Run, Scenario


MAX_ID = 2**63 - 1     # the largest primary key a database column holds


def parse_id(value, field: str) -> int:
    """A primary key from user input. Raises InputError naming ``field``."""
    try:
        pk = int(value)
    except (TypeError, ValueError):
        raise InputError(field, f"must be an id (an integer), got {value!r}") from None
    if not 1 <= pk <= MAX_ID:
        raise InputError(field, f"no such id: {value!r}")
    return pk


class InputError(ValueError):
    """Bad input for a dashboard action: ``field`` names it (dotted), like ScenarioError."""

    def __init__(self, field: str, message: str):
        super().__init__(f"{field}: {message}")
        self.field, self.message = field, message


class NotYours(InputError):
    """``field`` names an object the user sees (their team's) but does not own, for a use
    that is its owner's (compare, sweep, share): a 403 in the API, not a 400."""


def owned_for(model, owner, value, field: str, use: str):
    """The owner's object with the id ``value`` (user input), to ``use`` ("compare").

    Raises InputError naming ``field`` when ``owner`` cannot see it (none, or a stranger's:
    its existence is not told), NotYours when it is a teammate's.
    """
    pk = parse_id(value, field)
    kind = model._meta.verbose_name
    obj = model.objects.visible_to(owner).select_related("owner").filter(pk=pk).first()
    if obj is None:
        raise InputError(field, f"you have no {kind} {value!r}")
    if obj.owner_id != owner.pk:
        raise NotYours(field, f"{kind} {pk} is {obj.owner.get_username()}'s: only its owner can {use} it; "
                              "duplicate it to use a copy of your own")
    return obj


def _owned_scenarios(owner, ids, field: str = "scenarios") -> list[Scenario]:
    """The owner's own scenarios (a comparison runs them: a teammate's must be duplicated first)."""
    if not isinstance(ids, (list, tuple)):
        raise InputError(field, "must be a list of scenario ids")
    clean = [parse_id(value, f"{field}.{i}") for i, value in enumerate(ids)]
    if not MIN_COMPARED <= len(clean) <= MAX_COMPARED:
        raise InputError(field, f"choose {MIN_COMPARED} to {MAX_COMPARED} scenarios, got {len(clean)}")
    if len(set(clean)) != len(clean):
        raise InputError(field, "each scenario may appear once")
    found = {s.pk: s for s in Scenario.objects.owned_by(owner).filter(pk__in=clean)}
    for i, pk in enumerate(clean):
        if pk not in found:
            owned_for(Scenario, owner, pk, f"{field}.{i}", "compare")   # raises: why it is not
    return [found[pk] for pk in clean]


def default_name(scenarios: list[Scenario]) -> str:
    name = " vs ".join(s.name for s in scenarios)
    return name if len(name) <= 200 else name[:199] + "…"


@transaction.atomic
def create_comparison(owner, scenario_ids, name: str = "", notes: list[str] | None = None) -> Comparison:
    """A comparison of the owner's scenarios, in the given order, each with a run started.

    Raises InputError (which scenarios; NotYours for a teammate's) or ScenarioError (a
    scenario cannot run: its field under ``scenarios.<i>``); nothing is saved then.
    """
    scenarios = _owned_scenarios(owner, scenario_ids)
    name = (name or "").strip()
    if len(name) > 200:          # the name column's length; the API's serializer says so first
        raise InputError("name", f"must be at most 200 characters, got {len(name)}")
    comparison = Comparison.objects.create(owner=owner, name=name or default_name(scenarios),
                                           notes=list(notes or []))
    for position, scenario in enumerate(scenarios):
        try:
            run = services.start_run(scenario)
        except jobs.TooManyActive:
            raise                   # a 409 naming the active runs, not this scenario's fault
        except ScenarioError as exc:
            raise InputError(f"scenarios.{position}",
                             f"“{scenario.name}” cannot run: {exc.field}: {exc.message}") from None
        ComparisonItem.objects.create(comparison=comparison, position=position, scenario=scenario, run=run)
    return comparison


def copy_scenario(scenario: Scenario, owner, name: str | None = None) -> Scenario:
    """A new scenario of ``owner`` with the same JSON (a fork or a duplicate); a cluster
    profile ``owner`` may not use is copied as its figures (``profiles.for_copy``)."""
    from tierlab.scenarios.profiles import for_copy

    name = name or f"Copy of {scenario.name}"
    return Scenario.objects.create(owner=owner, name=name[:200],
                                   spec=for_copy(scenario.spec, owner, scenario.owner))


# ---------------------------------------------------------------- what the page reads
def _status(runs: list[Run | None]) -> str:
    statuses = [r.status if r else Run.Status.FAILED for r in runs]
    if any(s in (Run.Status.QUEUED, Run.Status.RUNNING) for s in statuses):
        return "running"
    return "failed" if any(s == Run.Status.FAILED for s in statuses) else "succeeded"


def payload(entries: list[tuple[str, Scenario | None, Run | None]]) -> dict:
    """``{status, progress, items, table}`` for columns given as (name, scenario, run).

    An item has the scenario's name and id, its run's id, status, progress and error, and
    the run's report once it succeeded (else null).
    """
    runs = [run for _, _, run in entries]
    items = []
    for position, (name, scenario, run) in enumerate(entries):
        report = run.result if run and run.status == Run.Status.SUCCEEDED else None
        items.append({
            "position": position, "name": name, "scenario": scenario.pk if scenario else None,
            "run": run.pk if run else None,
            "status": run.status if run else "missing",
            "progress": run.progress if run else 0.0,
            "error": run.error if run else "no run of this scenario (never run, or deleted)",
            "report": report,
        })
    done = [r for r in runs if r]
    progress = sum(r.progress if not r.is_finished else 1.0 for r in done) / len(entries) if entries else 1.0
    inputs = [run.input if run else (scenario.spec if scenario else None) for _, scenario, run in entries]
    return {"status": _status(runs), "progress": progress, "items": items,
            "table": comparison_table(inputs, [i["report"] for i in items])}


def comparison_payload(comparison: Comparison) -> dict:
    services.fail_stale_runs()
    entries = [(item.scenario.name, item.scenario, item.run) for item in comparison.ordered_items()]
    return payload(entries)


def latest_run(scenario: Scenario) -> Run | None:
    """The scenario's latest succeeded run, else its latest run."""
    runs = scenario.runs.order_by("-created_at", "-id")
    return runs.filter(status=Run.Status.SUCCEEDED).first() or runs.first()


def scenario_payload(scenario: Scenario) -> dict:
    """A single scenario in the comparison's shape (the shared view draws both alike)."""
    services.fail_stale_runs()
    return payload([(scenario.name, scenario, latest_run(scenario))])
