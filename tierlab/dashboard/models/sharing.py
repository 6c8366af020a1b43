"""Share links: an unguessable read-only token for a scenario, comparison, sweep or plan."""

import secrets

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils import timezone

from tierlab.dashboard.models.comparisons import Comparison
from tierlab.dashboard.models.sweeps import Sweep
from tierlab.scenarios.models import Scenario


def new_token() -> str:
    """32 random bytes, URL-safe: 43 characters, unguessable."""
    return secrets.token_urlsafe(32)


SHARE_KINDS = ("scenario", "comparison", "sweep", "plan")


def _exactly_one(kinds) -> Q:
    """Exactly one of the ``<kind>`` foreign keys is set."""
    out = Q()
    for k in kinds:
        out |= Q(**{f"{o}__isnull": o != k for o in kinds})
    return out


class ShareLink(models.Model):
    """A read-only link to one scenario, comparison, sweep or plan; works without an account."""

    KINDS = SHARE_KINDS

    token = models.CharField(max_length=64, unique=True, default=new_token, editable=False)
    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE,
                              related_name="share_links")
    scenario = models.ForeignKey(Scenario, null=True, blank=True, on_delete=models.CASCADE,
                                 related_name="share_links")
    comparison = models.ForeignKey(Comparison, null=True, blank=True, on_delete=models.CASCADE,
                                   related_name="share_links")
    sweep = models.ForeignKey(Sweep, null=True, blank=True, on_delete=models.CASCADE,
                              related_name="share_links")
    plan = models.ForeignKey("Plan", null=True, blank=True, on_delete=models.CASCADE,
                             related_name="share_links")
    created_at = models.DateTimeField(auto_now_add=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [models.CheckConstraint(condition=_exactly_one(SHARE_KINDS), name="share_link_one_target")]

    def __str__(self):
        return f"Share link to {self.kind} {self.target_id}"

    def get_absolute_url(self):
        return f"/s/{self.token}/"

    @property
    def kind(self) -> str:
        return next(k for k in self.KINDS if getattr(self, f"{k}_id") is not None)

    @property
    def target(self):
        return getattr(self, self.kind)

    @property
    def target_id(self) -> int:
        return getattr(self, f"{self.kind}_id")

    @property
    def is_active(self) -> bool:
        return self.revoked_at is None

    def revoke(self):
        if self.revoked_at is None:
            self.revoked_at = timezone.now()
            self.save(update_fields=["revoked_at"])
