"""Pages of comparisons: the list (and making one from ticked scenarios) and one comparison."""

from urllib.parse import urlencode

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.shortcuts import redirect, render
from django.urls import reverse

from tierlab.access import can_change, get_visible_or_404
from tierlab.dashboard import comparisons
from tierlab.dashboard.comparisons import InputError
from tierlab.dashboard.models import Comparison, Plan, Sweep


def _list_with_ticks(ids) -> str:
    """The scenario list, asked to tick ``ids`` again (its script reads ``?compare=``): a
    refused "Compare checked" keeps what the user ticked. Ids only, at most a page's worth."""
    digits = (v for v in ids if isinstance(v, str) and v.isascii() and v.isdigit() and len(v) <= 19)
    kept = list(dict.fromkeys(digits))[:100]
    url = reverse("scenario-list")
    return f"{url}?{urlencode({'compare': kept}, doseq=True)}" if kept else url


@login_required
def compare_index(request):
    """GET: your comparisons, sweeps and plans and your team's. POST (the scenario list's Compare button): compare
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
        "plans": Plan.objects.visible_to(request.user).select_related("owner")[:100],
    })


@login_required
def compare_detail(request, pk):
    comparison = get_visible_or_404(Comparison, request.user, pk=pk)
    return render(request, "dashboard/compare.html", {
        "comparison": comparison, "can_change": can_change(request.user, comparison), "items": comparison.ordered_items(),
        "api_url": f"/api/v1/comparisons/{comparison.pk}/",
        "csv_url": f"/api/v1/comparisons/{comparison.pk}/export.csv"})
