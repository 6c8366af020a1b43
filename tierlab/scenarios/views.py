"""Server-rendered pages; the front end mounts on the ids these templates provide."""

import json

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST

from simulation import ScenarioError
from tierlab.scenarios import services
from tierlab.scenarios.examples import examples
from tierlab.scenarios.models import Run, Scenario


@login_required
def scenario_form(request):
    return render(request, "scenarios/form.html", {"examples": examples()})


@login_required
def scenario_list(request):
    services.fail_stale_runs()
    scenarios = Scenario.objects.filter(owner=request.user)
    return render(request, "scenarios/list.html", {"scenarios": scenarios})


@login_required
def scenario_detail(request, pk):
    services.fail_stale_runs()
    scenario = get_object_or_404(Scenario, pk=pk, owner=request.user)
    return render(request, "scenarios/detail.html", {
        "scenario": scenario, "runs": scenario.runs.all()[:50],
        "spec_json": json.dumps(scenario.spec, indent=2, ensure_ascii=False)})


@login_required
@require_POST
def scenario_run(request, pk):
    """The "Run again" button."""
    scenario = get_object_or_404(Scenario, pk=pk, owner=request.user)
    try:
        run = services.start_run(scenario)
    except ScenarioError as exc:
        messages.error(request, f"“{scenario.name}” cannot run: {exc.field}: {exc.message}")
        return redirect("scenario-list")
    return redirect(run)


@login_required
def run_detail(request, pk):
    services.fail_stale_runs()
    run = get_object_or_404(Run.objects.select_related("scenario"), pk=pk,
                            scenario__owner=request.user)
    return render(request, "scenarios/run.html", {"run": run, "scenario": run.scenario})
