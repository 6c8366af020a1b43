"""Pages: comparisons, sweeps, share links and the shared view. Each looks its object up,
calls one service and renders or redirects; the front end mounts on the template's ids."""

from urllib.parse import urlencode

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_POST

from simulation import ScenarioError
from tierlab.access import can_change, get_changeable_or_404, get_visible_or_404
from tierlab.dashboard import comparisons, plans, sharing, sweeps, variants
from tierlab.dashboard.comparisons import InputError, parse_id
from tierlab.dashboard.forms import PlanForm, SweepForm
from tierlab.dashboard.models import Comparison, Plan, ShareLink, Sweep
from tierlab.scenarios.examples import examples
from tierlab.scenarios.models import Scenario


def _next(request, fallback: str) -> str:
    target = request.POST.get("next") or request.GET.get("next") or ""
    ok = url_has_allowed_host_and_scheme(target, allowed_hosts={request.get_host()},
                                         require_https=request.is_secure())
    return target if ok and target.startswith("/") else fallback


# ---------------------------------------------------------------- duplicate
@login_required
def scenario_duplicate(request, pk):
    """The scenario builder holding a copy of a scenario of yours or your team's (saved as a
    new one of yours)."""
    source = get_visible_or_404(Scenario, request.user, pk=pk)
    copy = {"name": f"Copy of {source.name}"[:200], "scenario": source.spec}
    return render(request, "scenarios/form.html", {"examples": [copy, *examples()], "source": source})


@login_required
@require_POST
def scenario_variants(request, pk):
    """A "Compare" question button of the scenario page: its variants (copies of yours), compared."""
    scenario = get_visible_or_404(Scenario, request.user, pk=pk)
    try:
        comparison = variants.compare_variants(request.user, scenario.pk, request.POST.get("question", ""))
    except InputError as exc:
        messages.error(request, f"Could not compare: {exc.message}.")
        return redirect(scenario)
    return redirect(comparison)


# ---------------------------------------------------------------- comparisons
def _list_with_ticks(ids) -> str:
    """The scenario list, asked to tick ``ids`` again (its script reads ``?compare=``): a
    refused "Compare checked" keeps what the user ticked. Ids only, at most a page's worth."""
    digits = (v for v in ids if isinstance(v, str) and v.isascii() and v.isdigit() and len(v) <= 19)
    kept = list(dict.fromkeys(digits))[:100]
    url = reverse("scenario-list")
    return f"{url}?{urlencode({'compare': kept}, doseq=True)}" if kept else url


@login_required
def compare_index(request):
    """GET: your comparisons and sweeps and your team's. POST (the scenario list's Compare button): compare
    the checked scenarios."""
    if request.method == "POST":
        try:
            comparison = comparisons.create_comparison(request.user, request.POST.getlist("scenario"),
                                                       request.POST.get("name", ""))
        except InputError as exc:
            field = "the checked scenarios" if exc.field.startswith("scenarios") else exc.field
            messages.error(request, f"Could not compare {field}: {exc.message}.")
            return redirect(_list_with_ticks(request.POST.getlist("scenario")))
        return redirect(comparison)
    return render(request, "dashboard/index.html", {
        "comparisons": Comparison.objects.visible_to(request.user).select_related("owner")
                                         .prefetch_related("items__scenario")[:100],
        "sweeps": Sweep.objects.visible_to(request.user).select_related("owner")[:100],
    })


@login_required
def compare_detail(request, pk):
    comparison = get_visible_or_404(Comparison, request.user, pk=pk)
    return render(request, "dashboard/compare.html", {
        "comparison": comparison, "can_change": can_change(request.user, comparison), "items": comparison.ordered_items(),
        "api_url": f"/api/v1/comparisons/{comparison.pk}/",
        "csv_url": f"/api/v1/comparisons/{comparison.pk}/export.csv"})


# ---------------------------------------------------------------- sweeps
@login_required
def sweep_new(request):
    """The sweep form; ``?scenario=<id>`` picks the base (one of yours, else your latest),
    ``?preset=<slug>`` fills the axes with a ready-made grid fitted to that base."""
    scenarios = Scenario.objects.owned_by(request.user)
    try:
        wanted = request.POST.get("scenario") or request.GET.get("scenario")
        base = scenarios.filter(pk=parse_id(wanted, "scenario")).first()
    except InputError:
        base = None
    base = base or scenarios.first()
    if request.method == "POST":
        form = SweepForm(request.POST, scenarios=scenarios)
        if form.is_valid():
            try:
                sweep = sweeps.create_sweep(request.user, form.cleaned_data["scenario"], form.axes(),
                                            form.cleaned_data["name"])
            except (InputError, ScenarioError) as exc:
                for e in getattr(exc, "errors", None) or [exc]:      # every bad axis field
                    form.add_error(SweepForm.field_for_error(e.field), e.message)
            else:
                return redirect(sweep)
    presets = sweeps.presets_for(base.spec if base else None)
    preset = None
    if request.method != "POST":
        preset = next((p for p in presets if p["slug"] == request.GET.get("preset")), presets[0] if presets else None)
        initial = SweepForm.initial_for(preset["axes"]) if preset else {}
        if base is not None:
            initial["scenario"] = base.pk
        form = SweepForm(initial=initial, scenarios=scenarios)
    return render(request, "dashboard/sweep_form.html", {
        "form": form, "presets": presets, "preset": preset, "base": base, "parameters": sweeps.PARAMETERS,
        "has_scenarios": scenarios.exists(), "scenario_id": base.pk if base else ""})


@login_required
def sweep_detail(request, pk):
    sweep = get_visible_or_404(Sweep, request.user, pk=pk)
    mine = can_change(request.user, sweep)
    return render(request, "dashboard/sweep.html", {
        "sweep": sweep, "can_change": mine, "api_url": f"/api/v1/sweeps/{sweep.pk}/",
        "cancel_url": f"/api/v1/sweeps/{sweep.pk}/cancel/" if mine else ""})


@login_required
@require_POST
def sweep_cancel(request, pk):
    """The Cancel button without JavaScript (its owner's)."""
    sweep = get_changeable_or_404(Sweep, request.user, pk=pk)
    try:
        sweeps.cancel_sweep(sweep)
    except InputError as exc:
        messages.error(request, f"Not cancelled: {exc.message}.")
    return redirect(sweep)


# ---------------------------------------------------------------- plans
def _plan_choices() -> tuple[list, list]:
    """(models, nodes) as form choices: the catalog's, else the engine's built-ins."""
    import simulation.presets as builtin
    from tierlab.scenarios import services

    lookups = services.catalog_lookups()
    models = lookups.get("models") or builtin.MODELS
    nodes = lookups.get("nodes") or builtin.NODES
    return ([(k, v.get("name") or k) for k, v in sorted(models.items())],
            [(k, v.get("name") or k) for k, v in sorted(nodes.items())])


@login_required
def plan_new(request):
    """The planner's form; a valid one queues the plan and opens its page."""
    models, nodes = _plan_choices()
    initial = {"model": "llama2-70b" if any(k == "llama2-70b" for k, _ in models) else None,
               "node": "dgx-h100" if any(k == "dgx-h100" for k, _ in nodes) else None}
    form = PlanForm(request.POST or None, initial=initial, models=models, nodes=nodes)
    if request.method == "POST" and form.is_valid():
        try:
            plan = plans.create_plan(request.user, form.spec(), form.cleaned_data["name"])
        except (InputError, ScenarioError) as exc:
            form.add_error(PlanForm.field_for_error(exc.field), exc.message)
        else:
            return redirect(plan)
    return render(request, "dashboard/plan_form.html", {"form": form})


def _plan_context(plan: Plan, user, api_url: str, shared: bool = False) -> dict:
    """What ``_plan_body.html`` shows: progress, then the ranked table, front and reasons."""
    payload = plans.plan_payload(plan)
    result = payload["result"]
    rejected = []
    if result:
        rejected = [(k, v, result["examples"].get(k, "")) for k, v in result["rejected"].items() if v]
    labels = dict(PlanForm.OBJECTIVES)
    return {"plan": plan, "p": payload, "result": result, "rejected": rejected,
            "percent": round(100 * payload["progress"]),
            "can_change": not shared and can_change(user, plan), "shared": shared,
            "objective_label": labels.get((result or {}).get("objective"), "").lower(), "api_url": api_url}


@login_required
def plan_detail(request, pk):
    plan = get_visible_or_404(Plan, request.user, pk=pk)
    return render(request, "dashboard/plan.html", _plan_context(plan, request.user, f"/api/v1/plans/{plan.pk}/"))


@login_required
@require_POST
def plan_cancel(request, pk):
    plan = get_changeable_or_404(Plan, request.user, pk=pk)
    try:
        plans.cancel_plan(plan)
    except InputError as exc:
        messages.error(request, f"Not cancelled: {exc.message}.")
    return redirect(plan)


@login_required
@require_POST
def plan_save(request, pk):
    plan = get_visible_or_404(Plan, request.user, pk=pk)
    try:
        scenario = plans.save_as_scenario(request.user, plan, request.POST.get("rank"))
    except InputError as exc:
        messages.error(request, f"Not saved: {exc.message}.")
        return redirect(plan)
    messages.success(request, f"Saved as “{scenario.name}”.")
    return redirect(scenario)


@login_required
@require_POST
def plan_compare(request, pk):
    plan = get_visible_or_404(Plan, request.user, pk=pk)
    try:
        comparison = plans.compare_top(request.user, plan)
    except (InputError, ScenarioError) as exc:
        messages.error(request, f"Not compared: {exc.message}.")
        return redirect(plan)
    return redirect(comparison)


# ---------------------------------------------------------------- share links
@login_required
@require_POST
def share_create(request):
    kind, target_id = request.POST.get("kind", ""), request.POST.get("id", "")
    try:
        target = sharing.target_of(request.user, kind, target_id)
        sharing.create_share(request.user, kind, target_id)
    except InputError as exc:
        messages.error(request, f"No link made: {exc.message}.")
        return redirect(_next(request, "/scenarios/"))
    messages.success(request, f"Anyone with the new link can view “{target.name}” (read-only) until you revoke it.")
    return redirect(_next(request, target.get_absolute_url()) + "#share")


@login_required
@require_POST
def share_revoke(request, pk):
    link = get_object_or_404(ShareLink, pk=pk, owner=request.user)
    link.revoke()
    messages.success(request, "The link is revoked: it no longer opens anything.")
    return redirect(_next(request, link.target.get_absolute_url()) + "#share")


def _open_link(request, token):
    """(link, None) for a live token; (None, the 410 page) for a revoked one; 404 if unknown."""
    try:
        return sharing.open_link(token), None
    except ShareLink.DoesNotExist:
        raise Http404("No share link with this token.") from None
    except sharing.Revoked:
        return None, render(request, "dashboard/shared_gone.html", status=410)


def shared(request, token):
    """The read-only view of a share link, for anyone with the token."""
    link, gone = _open_link(request, token)
    if gone:
        return gone
    extra = {}
    if link.kind == "plan":
        extra = _plan_context(link.target, request.user, f"/api/v1/shared/{link.token}/", shared=True)
    return render(request, "dashboard/shared.html", {
        **extra, "link": link, "target": link.target, "kind": link.kind,
        "api_url": f"/api/v1/shared/{link.token}/",
        "files_url": f"/api/v1/shared/{link.token}/"})


@login_required
@require_POST
def shared_fork(request, token):
    link, gone = _open_link(request, token)
    if gone:
        return gone
    try:
        obj = sharing.fork(link, request.user)
    except (InputError, ScenarioError) as exc:
        messages.error(request, f"Could not fork it: {exc.message}.")
        return redirect(link)
    messages.success(request, f"“{obj.name}” is now yours to change.")
    return redirect(obj)
