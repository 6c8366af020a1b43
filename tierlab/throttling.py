"""API rate limits: DRF's own throttle classes, with their rates read from settings on each
request (``TIERLAB_THROTTLE_RATES``, from the ``THROTTLE_*`` environment variables) and a
429 that says what to do.

Every API request counts against ``user`` (per account) or ``anon`` (per client address);
the expensive endpoints count again against a scope of their own, named on the view by
``throttle_scopes``: ``{"POST": "estimate"}`` (any action of that method) or
``{"POST runs": "runs"}`` (one action). Counts live in Django's cache (``CACHES``: Redis
when ``CACHE_URL`` or a Redis broker is configured, so every web process shares them; the
process's own memory otherwise). A rate of None turns that limit off.
"""

import logging

from django.conf import settings
from rest_framework import exceptions, throttling

log = logging.getLogger(__name__)

# Environment variable that sets each scope's rate (tierlab/settings.py), for the 429's text.
RATE_SETTINGS = {
    "anon": "THROTTLE_ANON_RATE", "user": "THROTTLE_USER_RATE",
    "estimate": "THROTTLE_ESTIMATE_RATE", "runs": "THROTTLE_RUNS_RATE",
    "sweeps": "THROTTLE_SWEEPS_RATE", "plans": "THROTTLE_PLANS_RATE",
    "profile_fits": "THROTTLE_PROFILE_FITS_RATE", "hf_import": "THROTTLE_HF_IMPORT_RATE",
    "shared": "THROTTLE_SHARED_RATE",
}
_WHAT = {"anon": "API requests without an account", "user": "API requests",
         "estimate": "live estimates", "runs": "runs started", "sweeps": "sweeps created",
         "plans": "plans created", "profile_fits": "cluster-profile fits",
         "hf_import": "Hugging Face config imports", "shared": "share-link reads"}
_PERIOD = {"s": "second", "m": "minute", "h": "hour", "d": "day"}


class Throttled(exceptions.Throttled):
    """The 429: ``detail`` names the limit, its setting and when to try again; DRF's handler
    adds the ``Retry-After`` header (seconds)."""

    def __init__(self, wait: int, detail: str):
        super().__init__(wait=wait)
        self.detail = exceptions.ErrorDetail(detail, self.default_code)   # without DRF's "Expected available in"


class _SettingsRate:
    """Rates from ``settings.TIERLAB_THROTTLE_RATES`` at each request (DRF binds its
    ``DEFAULT_THROTTLE_RATES`` once, at import), keys prefixed by
    ``settings.TIERLAB_THROTTLE_KEY_PREFIX``, and a failure that raises the explained 429."""

    def get_rate(self):
        return settings.TIERLAB_THROTTLE_RATES.get(self.scope)

    def allow_request(self, request, view):
        try:
            return throttling.SimpleRateThrottle.allow_request(self, request, view)
        except Throttled:
            raise
        except Exception:       # the cache (Redis) is down: serve the request rather than refuse all
            log.exception("rate limit %s not checked: the cache is unavailable", self.scope)
            return True

    def get_cache_key(self, request, view):
        key = super().get_cache_key(request, view)
        return None if key is None else f"{settings.TIERLAB_THROTTLE_KEY_PREFIX}:{key}"

    def throttle_failure(self):
        wait = self.wait()
        rate = settings.TIERLAB_THROTTLE_RATES.get(self.scope) or ""
        count, _, period = rate.partition("/")
        retry = max(1, round(wait or 1))
        raise Throttled(wait=retry, detail=(
            f"Too many {_WHAT.get(self.scope, self.scope)}: at most {count} per "
            f"{_PERIOD.get(period[:1], period)} ({RATE_SETTINGS.get(self.scope, 'THROTTLE_RATES')}"
            f"={rate}). Nothing was done; try again in {retry} s (the Retry-After header)."))


class AnonThrottle(_SettingsRate, throttling.AnonRateThrottle):
    """Requests without an account, per client address."""


class UserThrottle(_SettingsRate, throttling.UserRateThrottle):
    """Requests per account (per client address without one: ``anon`` counts those)."""

    def get_cache_key(self, request, view):
        if not (request.user and request.user.is_authenticated):
            return None
        return super().get_cache_key(request, view)


def scope_of(request, view) -> str | None:
    """The view's scope for this request: ``throttle_scopes["<METHOD> <action>"]``, else
    ``throttle_scopes["<METHOD>"]``; None when it has none."""
    scopes = getattr(view, "throttle_scopes", None) or {}
    action = getattr(view, "action", None)
    return scopes.get(f"{request.method} {action}") or scopes.get(request.method)


class ScopedThrottle(_SettingsRate, throttling.ScopedRateThrottle):
    """The expensive endpoints' own limit, per account (per address without one)."""

    def allow_request(self, request, view):
        self.scope = scope_of(request, view)
        if not self.scope:
            return True
        self.rate = self.get_rate()
        if self.rate is None:
            return True
        self.num_requests, self.duration = self.parse_rate(self.rate)
        return _SettingsRate.allow_request(self, request, view)
