"""Cluster profiles: fit a cluster's figures to measurements (the engine's
:mod:`simulation.calibrate`) and save them; views and the API stay thin."""

from collections.abc import Mapping

from django.conf import settings
from django.db.models import Q

import simulation
from simulation import ScenarioError, calibrate
from tierlab.scenarios import services
from tierlab.scenarios.models import ClusterProfile, Scenario


_MAX_PK = 2 ** 63 - 1        # a bigint: a larger id is no profile, not a database error


def profile_pk(ref) -> int | None:
    """The profile id a scenario's ``cluster.profile`` names (3 or "3"), else None."""
    if isinstance(ref, bool) or not isinstance(ref, (int, str)):
        return None
    try:
        pk = int(ref)
    except ValueError:
        return None
    return pk if 0 < pk <= _MAX_PK else None


class ProfileTable(Mapping):
    """The engine's ``profiles`` lookup table (id -> ``ClusterProfile.engine_spec()``), read
    one profile at a time when a scenario names it (one query each, kept for the life of
    this table: a request's or a worker task's lookups), never every profile into every
    process. With ``user``, only the profiles they may see (theirs and their team's): any
    other id is not in it, and the engine answers "unknown cluster profile" as a run does.
    Without, any profile (for input a visibility check already admitted)."""

    def __init__(self, user=None, *, restricted: bool = False):
        self.user, self.restricted, self._rows = user, restricted or user is not None, {}

    def _get(self, key):
        pk = profile_pk(key)
        if pk is None:
            return None
        if pk not in self._rows:
            rows = ClusterProfile.objects.all()
            if self.restricted:
                rows = rows.visible_to(self.user) if self.user is not None else rows.none()
            row = rows.filter(pk=pk).first()
            self._rows[pk] = row.engine_spec() if row is not None else None
        return self._rows[pk]

    def __contains__(self, key):
        return self._get(key) is not None

    def __getitem__(self, key):
        figures = self._get(key)
        if figures is None:
            raise KeyError(key)
        return figures

    def __iter__(self):      # the profiles read so far
        return iter([pk for pk, figures in self._rows.items() if figures is not None])

    def __len__(self):
        return sum(1 for _ in self)

    def __bool__(self):      # the engine's ``profiles or {}`` keeps it
        return True


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
    profile.save()                   # read by id when a scenario names it: no table to refresh
    return profile


def create_profile(owner, name: str, measurements: dict) -> ClusterProfile:
    """Fit, then save. Raises ScenarioError; nothing saved then. An owner who has
    ``TIERLAB_MAX_PROFILES_PER_USER`` profiles already (0: no limit) gets a ScenarioError
    (``name``) saying so, before anything is fitted."""
    cap = settings.TIERLAB_MAX_PROFILES_PER_USER
    if cap and owner is not None and ClusterProfile.objects.filter(owner=owner).count() >= cap:
        raise ScenarioError("name", f"you have {cap} cluster profiles, the most one account may keep "
                                    "(MAX_PROFILES_PER_USER); delete one you no longer use, or refit "
                                    "one (PUT /api/v1/cluster-profiles/<id>/) with the new measurements")
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
    table = {}                       # the scenarios name this profile only
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


def check_visible(spec, user, table: "ProfileTable | None" = None) -> None:
    """Raise ScenarioError (``cluster.profile``) when ``spec`` names a cluster profile by id
    that ``user`` cannot see (someone else's, not their team's) or that does not exist."""
    cluster = spec.get("cluster") if isinstance(spec, dict) else None
    ref = cluster.get("profile") if isinstance(cluster, dict) else None
    if ref is None or isinstance(ref, dict):
        return
    if table is None or not table.restricted or table.user is not user:
        table = ProfileTable(user, restricted=True)
    if ref not in table:
        raise ScenarioError("cluster.profile", f"unknown cluster profile {ref!r}; give the id of a "
                                               "profile you or your team own (GET /api/v1/cluster-profiles/)")


def for_copy(spec, owner, source_owner):
    """``spec`` as a copy of it for ``owner`` (a fork, a duplicate) carries it. A cluster
    profile named by id that ``owner`` may use stays an id (refits reach the copy); one only
    ``source_owner`` may use (another account's, shared by a link) is written in as its
    figures now (``ClusterProfile.engine_spec``, as a run's resolved input has them): the
    copy computes what its source did, and keeps doing so when the link is revoked or the
    profile refitted or deleted, without using the profile itself. Any other spec is
    returned as it is (a profile nobody may use stays the unknown id it was)."""
    cluster = spec.get("cluster") if isinstance(spec, dict) else None
    ref = cluster.get("profile") if isinstance(cluster, dict) else None
    if ref is None or isinstance(ref, dict) or ref in ProfileTable(owner, restricted=True):
        return spec
    source = ProfileTable(source_owner, restricted=True)
    if ref not in source:
        return spec
    return {**spec, "cluster": {**cluster, "profile": dict(source[ref])}}


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
