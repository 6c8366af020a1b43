"""Share links: an unguessable token that shows one scenario, comparison, sweep or plan read-only
to anyone who has it, until its owner revokes it; a viewer with an account can fork it."""

from __future__ import annotations

from django.db import transaction

from simulation import ScenarioError
from tierlab.dashboard import comparisons, plans, sweeps
from tierlab.dashboard.comparisons import InputError, owned_for
from tierlab.dashboard.models import Comparison, Plan, ShareLink, Sweep
from tierlab.scenarios import services
from tierlab.scenarios.profiles import for_copy
from tierlab.scenarios.models import Run, Scenario

MODELS = {"scenario": Scenario, "comparison": Comparison, "sweep": Sweep, "plan": Plan}


class Revoked(Exception):
    """The link existed and its owner revoked it."""


def target_of(owner, kind: str, target_id):
    """The owner's object of ``kind`` with ``target_id`` (only its owner shares it, not their
    team). Raises InputError naming the field (NotYours for a teammate's object)."""
    if kind not in MODELS:
        raise InputError("kind", f"must be one of {', '.join(MODELS)}")
    return owned_for(MODELS[kind], owner, target_id, kind, "share")


@transaction.atomic
def create_share(owner, kind: str, target_id) -> ShareLink:
    """A new link to the owner's object. A scenario never run successfully gets a run, so
    the link has a report to show."""
    target = target_of(owner, kind, target_id)
    if kind == "scenario" and not target.runs.filter(status=Run.Status.SUCCEEDED).exists() \
            and not target.runs.exclude(status=Run.Status.FAILED).exists():
        try:
            services.start_run(target)
        except ScenarioError:
            pass   # the link still shows the scenario; its page says it has no report
    return ShareLink.objects.create(owner=owner, **{kind: target})


def links_of(owner, kind: str, target) -> list[ShareLink]:
    return list(ShareLink.objects.filter(owner=owner, **{kind: target}))


def open_link(token: str) -> ShareLink:
    """The link for ``token``. Raises ShareLink.DoesNotExist, or Revoked."""
    link = ShareLink.objects.select_related("scenario", "comparison", "sweep", "plan").get(token=token)
    if link.revoked_at is not None:
        raise Revoked(token)
    return link


def title(link: ShareLink) -> str:
    return link.target.name


def shared_payload(link: ShareLink, points_slice: slice | None = slice(None)) -> dict:
    """What a viewer of the link sees: ``{kind, token, name, owner, created_at, data}``.

    ``data`` has the shape of the owner's own API for a comparison or a sweep; a scenario
    is shown as a comparison of one (plus its JSON). ``points_slice``: a sweep's points to
    include, as :func:`tierlab.dashboard.sweeps.sweep_payload` takes it (None: the light
    form a poll reads).
    """
    target = link.target
    if link.kind == "comparison":
        data = dict(comparisons.comparison_payload(target), id=target.pk, name=target.name)
    elif link.kind == "sweep":
        data = sweeps.sweep_payload(target, points_slice)
        data["base"] = {"id": None, "name": data["base"]["name"]} if data["base"] else None
    elif link.kind == "plan":
        data = dict(plans.plan_payload(target), url=None)
    else:
        data = dict(comparisons.scenario_payload(target), id=target.pk, name=target.name,
                    scenario=target.spec)
    for item in data.get("items", []):
        item["scenario"] = item["run"] = None      # ids of another account mean nothing here
    data["id"] = None
    return {"kind": link.kind, "token": link.token, "name": target.name,
            "owner": link.owner.get_username(), "created_at": link.created_at, "data": data}


@transaction.atomic
def fork(link: ShareLink, user):
    """Copy the shared object into ``user``'s account; returns the new object.

    A scenario is copied; a comparison's scenarios are copied and compared (identical
    inputs reuse the stored results at once); a sweep's base scenario is copied and the
    same grid is swept again; a plan is planned again from its spec. A cluster profile of
    the link owner's that ``user`` may not use is copied as its figures (a plan's spec
    already holds them): the fork computes what the link shows, and keeps doing so after
    the link is revoked (``profiles.for_copy``).
    """
    target = link.target
    if link.kind == "plan":
        return plans.create_plan(user, target.spec, f"{target.name} (fork)")
    if link.kind == "scenario":
        return comparisons.copy_scenario(target, user, f"{target.name} (fork)")
    if link.kind == "comparison":
        copies = [comparisons.copy_scenario(item.scenario, user, f"{item.scenario.name} (fork)")
                  for item in target.ordered_items()]
        return comparisons.create_comparison(user, [c.pk for c in copies], f"{target.name} (fork)")
    base = Scenario.objects.create(owner=user, name=f"{target.base.name if target.base else target.name} (fork)"[:200],
                                   spec=for_copy(target.base_spec, user, target.owner))
    return sweeps.create_sweep(user, base.pk, target.axes, f"{target.name} (fork)")
