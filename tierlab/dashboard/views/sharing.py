"""Pages of share links: make and revoke one, the read-only view for anyone with the token,
and a fork of it into your account."""

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST

from simulation import ScenarioError
from tierlab.dashboard import sharing
from tierlab.dashboard.comparisons import InputError
from tierlab.dashboard.models import ShareLink
from tierlab.dashboard.views.common import safe_next
from tierlab.dashboard.views.plans import plan_context


@login_required
@require_POST
def share_create(request):
    kind, target_id = request.POST.get("kind", ""), request.POST.get("id", "")
    try:
        target = sharing.target_of(request.user, kind, target_id)
        sharing.create_share(request.user, kind, target_id)
    except InputError as exc:
        messages.error(request, f"No link made: {exc.message}.")
        return redirect(safe_next(request, "/scenarios/"))
    messages.success(request, f"Anyone with the new link can view “{target.name}” (read-only) until you revoke it.")
    return redirect(safe_next(request, target.get_absolute_url()) + "#share")


@login_required
@require_POST
def share_revoke(request, pk):
    link = get_object_or_404(ShareLink, pk=pk, owner=request.user)
    link.revoke()
    messages.success(request, "The link is revoked: it no longer opens anything.")
    return redirect(safe_next(request, link.target.get_absolute_url()) + "#share")


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
        extra = plan_context(link.target, request.user, f"/api/v1/shared/{link.token}/", shared=True)
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
