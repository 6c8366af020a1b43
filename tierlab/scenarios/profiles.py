"""Cluster profiles: fit a cluster's figures to measurements (the engine's
:mod:`simulation.calibrate`) and save them; views and the API stay thin."""

from django.conf import settings
from django.db.models import Q

import simulation
from simulation import ScenarioError, calibrate
from tierlab.scenarios import services
from tierlab.scenarios.models import ClusterProfile, Scenario


def fit(measurements: dict, name: str = "") -> dict:
    """``{"profile": figures, "fits": [...]}`` for ``measurements``, with the catalog's
    presets. Raises ScenarioError naming the field (``measurements.<...>``), also when the
    measured steps would take more than ``ESTIMATE_MAX_WORK_UNITS`` to fit."""
    lookups = {k: v for k, v in services.catalog_lookups().items() if k != "profiles"}
    return calibrate.fit_profile(measurements, lookups=lookups, name=name or None,
                                 max_work_units=settings.ESTIMATE_MAX_WORK_UNITS)


def _store(profile: ClusterProfile, name: str, measurements: dict, out: dict | None = None) -> ClusterProfile:
    out = out if out is not None else fit(measurements, name)
    figures = {k: v for k, v in out["profile"].items() if k not in ("id", "name")}
    profile.name, profile.measurements, profile.figures, profile.fits = name, measurements, figures, out["fits"]
    profile.save()
    services.forget_catalog()        # this process resolves the new figures at once
    return profile


def create_profile(owner, name: str, measurements: dict) -> ClusterProfile:
    """Fit, then save. Raises ScenarioError; nothing saved then."""
    return _store(ClusterProfile(owner=owner), name, measurements)


class ProfileInUse(Exception):
    """A refit that would leave saved scenarios naming the profile unable to run: ``detail``
    says which and what to do, ``scenarios`` lists ``[{id, name}]`` (those the user may
    see). The API answers 409, as for a delete."""

    def __init__(self, detail: str, scenarios: list[dict]):
        super().__init__(detail)
        self.detail, self.scenarios = detail, scenarios


def _node(measurements) -> object:
    cluster = measurements.get("cluster") if isinstance(measurements, dict) else None
    return cluster.get("node") if isinstance(cluster, dict) else None


def _using_text(profile: ClusterProfile, user) -> tuple[str, list[dict]]:
    """``("cluster profile 3 is used by 2 saved scenarios: 'a' (id 1), ...", [{id, name}])``."""
    using = scenarios_using(profile)
    shown = using.visible_to(user) if user is not None else using
    listed = [{"id": sc.pk, "name": sc.name} for sc in shown.only("pk", "name")]
    hidden = using.count() - len(listed)
    names = ", ".join(f"{sc['name']!r} (id {sc['id']})" for sc in listed)
    if hidden:
        names += (", and " if names else "") + f"{hidden} scenario{'s' if hidden > 1 else ''} of others"
    n = len(listed) + hidden
    return f"cluster profile {profile.pk} is used by {n} saved scenario{'s' if n > 1 else ''}: {names}", listed


def refit_profile(profile: ClusterProfile, name: str, measurements: dict, user=None) -> ClusterProfile:
    """Fit the new measurements and replace the figures; scenarios naming the profile use
    them from their next run on. That is safe for results: a resolved scenario carries the
    profile's figures, so the input hash that result reuse keys on changes with them and no
    stored result is replayed for the new figures.

    A profile saved scenarios use keeps the cluster it was fitted on: new measurements of
    another node or accelerator (``measurements.cluster``) raise :class:`ProfileInUse`, as
    does a refit on the same cluster whose figures any of those scenarios could not run with
    (``user``: whose view of the scenarios the message lists). Nothing is saved then. The
    figures describe that hardware; for another cluster, make a new profile."""
    if not scenarios_using(profile).exists():
        return _store(profile, name, measurements)
    out = fit(measurements, name)        # bad measurements are a 400 before anything else
    old_node, new_node = _node(profile.measurements), _node(measurements)
    if old_node != new_node:
        raise _other_cluster(profile, user, old_node or "its cluster", new_node or "another cluster")
    figures = {k: v for k, v in out["profile"].items() if k not in ("id", "name")}
    old_acc, new_acc = (profile.figures or {}).get("accelerator"), figures.get("accelerator")
    if old_acc != new_acc:
        raise _other_cluster(profile, user, old_acc or "its accelerator", new_acc or "another accelerator")
    broken = _broken_with(profile, name, figures)
    if broken:
        text, listed = _using_text(profile, user)
        seen = [pk for pk in broken if pk in {sc["id"] for sc in listed}]
        why = f" (scenario {seen[0]}: {broken[seen[0]][0]}: {broken[seen[0]][1]})" if seen else ""
        n = len(broken)
        raise ProfileInUse(
            f"{text}. With the new figures {n} of them could not run{why}. Make a new profile for "
            "these measurements (POST /api/v1/cluster-profiles/) instead; nothing was changed", listed)
    return _store(profile, name, measurements, out)


def _other_cluster(profile: ClusterProfile, user, was: str, new: str) -> ProfileInUse:
    text, listed = _using_text(profile, user)
    return ProfileInUse(
        f"{text}. It was fitted on {was} and they run there; refitting it on {new} would leave "
        f"them unable to run (its figures would describe other hardware). Make a new profile for "
        f"{new} (POST /api/v1/cluster-profiles/) and point scenarios at it; this one can be refitted "
        "with new measurements of the same cluster. Nothing was changed", listed)


def _broken_with(profile: ClusterProfile, name: str, figures: dict) -> dict:
    """``{scenario id: (field, message)}`` of the saved scenarios naming ``profile`` that the
    engine accepts with its figures now and refuses once it has ``figures`` (validated, not
    simulated: well under a millisecond each)."""
    lookups = dict(services.catalog_lookups())
    table = dict(lookups.get("profiles") or {})
    lookups["profiles"] = table

    def refusal(spec, figs):
        table[profile.pk] = {**figs, "id": profile.pk, "name": name}
        try:
            simulation.checked_scenario(spec, **lookups)
        except ScenarioError as exc:
            e = (getattr(exc, "errors", None) or [exc])[0]
            return e.field or "scenario", e.message
        return None

    broken = {}
    for sc in scenarios_using(profile).only("pk", "spec"):
        problem = refusal(sc.spec, figures)
        if problem and refusal(sc.spec, profile.figures or {}) is None:
            broken[sc.pk] = problem
    return broken


def check_visible(spec, user) -> None:
    """Raise ScenarioError (``cluster.profile``) when ``spec`` names a cluster profile by id
    that ``user`` cannot see (someone else's, not their team's) or that does not exist."""
    cluster = spec.get("cluster") if isinstance(spec, dict) else None
    ref = cluster.get("profile") if isinstance(cluster, dict) else None
    if ref is None or isinstance(ref, dict):
        return
    try:
        pk = int(ref) if not isinstance(ref, bool) else None
    except (TypeError, ValueError):
        pk = None
    if pk is None or user is None or not ClusterProfile.objects.visible_to(user).filter(pk=pk).exists():
        raise ScenarioError("cluster.profile", f"unknown cluster profile {ref!r}; give the id of a "
                                               "profile you or your team own (GET /api/v1/cluster-profiles/)")


def scenarios_using(profile: ClusterProfile):
    """The saved scenarios whose spec names ``profile`` (``"cluster": {"profile": <id>}``;
    an id given as text, "3", is one too, as :func:`check_visible` takes it)."""
    return Scenario.objects.filter(Q(spec__cluster__profile=profile.pk)
                                   | Q(spec__cluster__profile=str(profile.pk))).order_by("pk")


def in_use_message(profile: ClusterProfile, user=None) -> tuple[str, list[dict]] | None:
    """Why ``profile`` cannot be deleted, and ``[{id, name}]`` of the scenarios that use it
    that ``user`` may see (theirs and their team's; every one without ``user``); None when
    no scenario uses it. Deleting it left those scenarios unable to run ("unknown cluster
    profile")."""
    if not scenarios_using(profile).exists():
        return None
    text, listed = _using_text(profile, user)
    return f"{text}; they could no longer run. Point them at another profile (or none) first", listed
