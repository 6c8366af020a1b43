"""Server-rendered pages; the front end mounts on the ids these templates provide."""

import json

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from simulation import ScenarioError, presets
from tierlab.access import can_change, get_changeable_or_404, get_visible_or_404
from tierlab.scenarios import profiles, services
from tierlab.scenarios.examples import examples
from tierlab.scenarios.forms import ProfileForm
from tierlab.scenarios.models import ClusterProfile, Run, Scenario


@login_required
def scenario_form(request):
    return render(request, "scenarios/form.html", {"examples": examples()})


@login_required
def scenario_list(request):
    """Your scenarios (to run, compare, sweep), then your team's (to view or duplicate)."""
    services.fail_stale_runs()
    visible = Scenario.objects.visible_to(request.user)
    return render(request, "scenarios/list.html", {
        "scenarios": visible.filter(owner=request.user),
        "team_scenarios": visible.exclude(owner=request.user).select_related("owner")[:200]})


@login_required
def scenario_detail(request, pk):
    services.fail_stale_runs()
    scenario = get_visible_or_404(Scenario, request.user, pk=pk)
    return render(request, "scenarios/detail.html", {
        "scenario": scenario, "runs": scenario.runs.all()[:50], "can_change": can_change(request.user, scenario),
        "spec_json": json.dumps(scenario.spec, indent=2, ensure_ascii=False)})


@login_required
@require_POST
def scenario_run(request, pk):
    """The "Run again" button (its owner's)."""
    scenario = get_changeable_or_404(Scenario, request.user, pk=pk)
    try:
        run = services.start_run(scenario)
    except ScenarioError as exc:
        messages.error(request, f"“{scenario.name}” cannot run: {exc.field}: {exc.message}")
        return redirect("scenario-list")
    return redirect(run)


@login_required
def run_detail(request, pk):
    services.fail_stale_runs()
    run = get_visible_or_404(Run.objects.select_related("scenario"), request.user, pk=pk)
    return render(request, "scenarios/run.html", {"run": run, "scenario": run.scenario,
                                                  "can_change": can_change(request.user, run)})


@login_required
@require_POST
def run_cancel(request, pk):
    """The run page's Cancel button (its owner's)."""
    run = get_changeable_or_404(Run.objects.select_related("scenario"), request.user, pk=pk)
    try:
        services.cancel_run(run, request.user)
    except services.RunStateError as exc:
        messages.error(request, f"Not cancelled: {exc.message}.")
    return redirect(run)


def _node_choices() -> list[tuple[str, str]]:
    nodes = services.catalog_lookups().get("nodes") or presets.NODES
    return sorted((slug, f"{spec.get('name') or slug} ({slug})") for slug, spec in nodes.items())


@login_required
def profile_list(request):
    """Cluster profiles (yours and your team's) and the form that fits a new one."""
    scenarios = Scenario.objects.owned_by(request.user)
    form = ProfileForm(request.POST or None, nodes=_node_choices(), scenarios=scenarios,
                       initial={"node": "dgx-a100-80gb", "checkpoint_target": "parallel_fs"})
    if request.method == "POST" and form.is_valid():
        try:
            profile = profiles.create_profile(request.user, form.cleaned_data["name"], form.measurements())
        except ScenarioError as exc:
            for e in getattr(exc, "errors", None) or [exc]:      # every bad field at once
                target = ProfileForm.field_for_error(e.field)
                form.add_error(target, e.message if target else f"{e.field}: {e.message}")
        else:
            return redirect(profile)
    visible = ClusterProfile.objects.visible_to(request.user).select_related("owner")
    return render(request, "scenarios/profiles.html", {"form": form, "profiles": visible[:200]},
                  status=400 if form.errors else 200)


@login_required
def profile_detail(request, pk):
    """A profile's fitted figures, and per measurement what it gave."""
    profile = get_visible_or_404(ClusterProfile.objects.select_related("owner"), request.user, pk=pk)
    return render(request, "scenarios/profile.html", {
        "profile": profile, "can_change": can_change(request.user, profile),
        "figures_json": json.dumps(profile.figures, indent=2),
        # a step fitted on the work model gives the GEMM rate (simulation.calibrate.fit_step)
        "step_fits_gemm": any(f.get("kind") == "step" and f.get("gemm_flops") for f in profile.fits or []),
        "api_url": f"/api/v1/cluster-profiles/{profile.pk}/"})
