"""What the dashboard's pages share: the safe ``next`` redirect."""

from django.utils.http import url_has_allowed_host_and_scheme


def safe_next(request, fallback: str) -> str:
    """The request's ``next`` if it is a path on this site (no open redirect), else ``fallback``."""
    target = request.POST.get("next") or request.GET.get("next") or ""
    ok = url_has_allowed_host_and_scheme(target, allowed_hosts={request.get_host()},
                                         require_https=request.is_secure())
    return target if ok and target.startswith("/") else fallback
