"""Deleting what a user saved: a scenario, comparison, sweep or plan (its owner; the API's
DELETE). Each is one transaction: nothing is half deleted.

- A **scenario** that saved comparisons use is refused (``InUse``, a 409 naming them), as a
  cluster profile in use is: deleting it would take a column out of each of them. Its runs
  still queued or running are cancelled first (``services.cancel_run``: a run of another
  scenario waiting for one of them, identical input, is computed itself instead); its
  finished runs go with it. A sweep made from it keeps its own copy of the scenario
  (``Sweep.base_spec``) and loses only the link (``base``: null). Runs of other scenarios
  that reused one of its results keep it: the oldest gets the report stored on its row, the
  others point at that one (``Run.reused_from``'s ``hand_on_result``).
- A **comparison** goes with its columns; the runs it shows are its scenarios' and stay.
- A **sweep** or **plan** still queued or running is cancelled first (``cancel_sweep``,
  ``cancel_plan``), so no chunk is started for it again; a worker in the middle of a chunk
  finds the row gone at its next progress check and stops, storing nothing
  (``sweeps.execute_chunk``, ``plans.execute_chunk``).

Share links to what is deleted go with it (their URL then answers 404).
"""

from django.db import transaction

from tierlab.dashboard import plans, sweeps
from tierlab.dashboard.models import Comparison, ComparisonItem, Plan, Sweep
from tierlab.editing import InUse
from tierlab.scenarios import services
from tierlab.scenarios.models import Run, Scenario


def comparisons_using(scenario: Scenario):
    """The comparisons with a column of ``scenario``."""
    return Comparison.objects.filter(
        pk__in=ComparisonItem.objects.filter(scenario=scenario).values("comparison")).order_by("pk")


def _in_use(scenario: Scenario, user) -> InUse | None:
    using = comparisons_using(scenario)
    total = using.count()
    if not total:
        return None
    listed = [{"id": c.pk, "name": c.name} for c in using.visible_to(user).only("pk", "name")]
    hidden = total - len(listed)
    names = ", ".join(f"{c['name']!r} (id {c['id']})" for c in listed)
    if hidden:
        names += (", and " if names else "") + f"{hidden} comparison{'s' if hidden > 1 else ''} of others"
    return InUse(f"scenario {scenario.pk} is used by {total} saved comparison{'s' if total > 1 else ''}: "
                 f"{names}; deleting it would take a column out of each. Delete those comparisons "
                 "first; nothing was deleted", {"comparisons": listed})


def delete_scenario(scenario: Scenario, user) -> None:
    """Delete ``scenario`` and its runs, cancelling those still queued or running. Raises
    InUse when saved comparisons use it (nothing is deleted then)."""
    with transaction.atomic():
        scenario = Scenario.objects.select_for_update().get(pk=scenario.pk)
        refusal = _in_use(scenario, user)
        if refusal is not None:
            raise refusal
        for run in scenario.runs.filter(status__in=[Run.Status.QUEUED, Run.Status.RUNNING]):
            services.cancel_run(run, user)
        scenario.delete()


def delete_comparison(comparison: Comparison) -> None:
    """Delete ``comparison`` and its columns; its scenarios and their runs stay."""
    with transaction.atomic():
        Comparison.objects.filter(pk=comparison.pk).delete()


def delete_sweep(sweep: Sweep) -> None:
    """Cancel ``sweep`` if it is queued or running, then delete it with its chunks."""
    with transaction.atomic():
        sweep = Sweep.objects.select_for_update().get(pk=sweep.pk)
        if not sweep.is_finished:
            sweeps.cancel_sweep(sweep)
        sweep.delete()


def delete_plan(plan: Plan) -> None:
    """Cancel ``plan`` if it is queued or running, then delete it with its chunks."""
    with transaction.atomic():
        plan = Plan.objects.select_for_update().get(pk=plan.pk)
        if not plan.is_finished:
            plans.cancel_plan(plan)
        plan.delete()
