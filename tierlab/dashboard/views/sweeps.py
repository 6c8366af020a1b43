"""Pages of sweeps: the new-sweep form, one sweep, cancel."""

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from simulation import ScenarioError
from tierlab.access import can_change, get_changeable_or_404, get_visible_or_404
from tierlab.dashboard import sweeps
from tierlab.dashboard.comparisons import InputError, parse_id
from tierlab.dashboard.forms.sweeps import SweepForm
from tierlab.dashboard.models import Sweep
from tierlab.scenarios.models import Scenario


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
        "has_scenarios": scenarios.exists(), "scenario_id": base.pk if base else "",
        "max_points": f"{sweeps.engine_sweep.MAX_POINTS:,}"})


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
