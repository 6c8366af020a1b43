"""Pages of the dashboard's actions on one scenario: duplicate it, compare its variants."""

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from tierlab.access import get_visible_or_404
from tierlab.dashboard import variants
from tierlab.dashboard.comparisons import InputError
from tierlab.scenarios.examples import examples
from tierlab.scenarios.models import Scenario


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
