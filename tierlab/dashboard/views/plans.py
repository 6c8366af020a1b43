"""Pages of plans: the new-plan form, one plan, cancel, save a candidate, compare the top three."""

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from simulation import ScenarioError
from simulation.planner import REASON_LABELS
from tierlab.access import can_change, get_changeable_or_404, get_visible_or_404
from tierlab.catalog.labels import OBJECTIVE_CHOICES
from tierlab.dashboard import plans
from tierlab.dashboard.comparisons import InputError
from tierlab.dashboard.forms.plans import PlanForm
from tierlab.dashboard.models import Plan


def _profile_choices(user) -> list:
    """The cluster profiles ``user`` may pick (theirs and their team's), as form choices:
    "Selene (a100-sxm4-80gb) — owner"."""
    from tierlab.scenarios.models import ClusterProfile

    rows = ClusterProfile.objects.visible_to(user).select_related("owner")[:200]
    return [(p.pk, f"{p.name}" + (f" ({p.figures['accelerator']})" if p.figures.get("accelerator") else "")
             + (f" — {p.owner.get_username()}" if p.owner else "")) for p in rows]


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
    form = PlanForm(request.POST or None, initial=initial, models=models, nodes=nodes,
                    profiles=_profile_choices(request.user))
    if request.method == "POST" and form.is_valid():
        try:
            plan = plans.create_plan(request.user, form.spec(), form.cleaned_data["name"])
        except (InputError, ScenarioError) as exc:
            for e in getattr(exc, "errors", None) or [exc]:      # every field the engine named
                form.add_error(PlanForm.field_for_error(e.field), e.message)
        else:
            return redirect(plan)
    return render(request, "dashboard/plan_form.html", {"form": form})


def no_chart_reason(result: dict) -> str:
    """Why the plan page draws no Pareto chart, in words (its caption): no feasible candidate
    (with the planner's rejection counts, largest first), or a front without costs (the node
    has no price). Empty when there is a chart to draw."""
    front = result.get("pareto") or []
    if not result.get("feasible"):
        counts = sorted(((v, k) for k, v in (result.get("rejected") or {}).items() if v), key=lambda x: (-x[0], x[1]))
        why = "; ".join(f"{v} {REASON_LABELS.get(k, k)}" for v, k in counts)
        return ("No chart: no candidate was feasible" + (f" ({why})" if why else "")
                + "; see the rejected candidates below.")
    if not any(isinstance(r.get("usd_per_million_tokens"), (int, float)) for r in front):
        return "No chart: the front's candidates have no cost (the node has no price); see the list."
    return ""


def _pareto_chart(result: dict | None) -> dict | None:
    """What src/charts/plan_series.ts draws (embedded as JSON on the page): the Pareto
    front's candidates and the top-ranked one, with only the fields the chart shows, and
    ``empty_reason``: why there is no chart (:func:`no_chart_reason`), empty when there is."""
    if not result:
        return None
    keep = ("index", "choices", "data_parallel", "step_time_s", "usd_per_million_tokens")
    row = lambda r: {k: r.get(k) for k in keep}  # noqa: E731
    top = result.get("top") or []
    return {"front": [row(r) for r in result.get("pareto") or []], "top": row(top[0]) if top else None,
            "empty_reason": no_chart_reason(result)}


def plan_context(plan: Plan, user, api_url: str, shared: bool = False) -> dict:
    """What ``_plan_body.html`` shows: progress, then the ranked table, front and reasons."""
    payload = plans.plan_payload(plan)
    result = payload["result"]
    rejected = []
    if result:
        rejected = [(k, REASON_LABELS.get(k, k), v, result["examples"].get(k, ""))
                    for k, v in result["rejected"].items() if v]
    return {"plan": plan, "p": payload, "result": result, "rejected": rejected,
            "pareto_chart": _pareto_chart(result),
            # whole percent done, rounded down: 100 only once every candidate is done, and
            # the same figure src/dashboard/plan_progress.ts (planPercent) shows while polling
            "percent": (min(100, 100 * payload["done"] // payload["total_candidates"])
                        if payload["total_candidates"] else 100),
            "can_change": not shared and can_change(user, plan), "shared": shared,
            "objective_label": OBJECTIVE_CHOICES.get((result or {}).get("objective"), "").lower(), "api_url": api_url}


@login_required
def plan_detail(request, pk):
    plan = get_visible_or_404(Plan, request.user, pk=pk)
    return render(request, "dashboard/plan.html", plan_context(plan, request.user, f"/api/v1/plans/{plan.pk}/"))


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
