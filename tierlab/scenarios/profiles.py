"""Cluster profiles: fit a cluster's figures to measurements (the engine's
:mod:`simulation.calibrate`) and save them; views and the API stay thin."""

from django.conf import settings
from django.db.models import Q

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


def _store(profile: ClusterProfile, name: str, measurements: dict) -> ClusterProfile:
    out = fit(measurements, name)
    figures = {k: v for k, v in out["profile"].items() if k not in ("id", "name")}
    profile.name, profile.measurements, profile.figures, profile.fits = name, measurements, figures, out["fits"]
    profile.save()
    services.forget_catalog()        # this process resolves the new figures at once
    return profile


def create_profile(owner, name: str, measurements: dict) -> ClusterProfile:
    """Fit, then save. Raises ScenarioError; nothing saved then."""
    return _store(ClusterProfile(owner=owner), name, measurements)


def refit_profile(profile: ClusterProfile, name: str, measurements: dict) -> ClusterProfile:
    """Fit the new measurements and replace the figures; scenarios naming the profile use
    them from their next run on (a new input hash: no stored result is reused)."""
    return _store(profile, name, measurements)


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
    using = scenarios_using(profile)
    if not using.exists():
        return None
    shown = using.visible_to(user) if user is not None else using
    listed = [{"id": sc.pk, "name": sc.name} for sc in shown.only("pk", "name")]
    hidden = using.count() - len(listed)
    names = ", ".join(f"{sc['name']!r} (id {sc['id']})" for sc in listed)
    if hidden:
        names += (", and " if names else "") + f"{hidden} scenario{'s' if hidden > 1 else ''} of others"
    n = len(listed) + hidden
    return (f"cluster profile {profile.pk} is used by {n} saved scenario{'s' if n > 1 else ''}: {names}; "
            "they could no longer run. Point them at another profile (or none) first"), listed
