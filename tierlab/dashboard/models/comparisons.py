"""Comparisons: 2–8 scenarios side by side, one run per scenario."""

from django.conf import settings
from django.db import models

from tierlab.access import OwnedQuerySet
from tierlab.scenarios.models import Run, Scenario

MIN_COMPARED, MAX_COMPARED = 2, 8


class Comparison(models.Model):
    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE,
                              related_name="comparisons")
    name = models.CharField(max_length=200)
    created_at = models.DateTimeField(auto_now_add=True)
    # what the comparison leaves out and why (e.g. a variant that cannot run on this layout)
    notes = models.JSONField(default=list, blank=True)

    objects = OwnedQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self):
        return self.name

    def get_absolute_url(self):
        return f"/compare/{self.pk}/"

    def ordered_items(self):
        return self.items.select_related("scenario", "run").order_by("position")


class ComparisonItem(models.Model):
    """One column of a comparison: a scenario and the run whose report it shows."""

    comparison = models.ForeignKey(Comparison, on_delete=models.CASCADE, related_name="items")
    position = models.PositiveSmallIntegerField()
    scenario = models.ForeignKey(Scenario, on_delete=models.CASCADE, related_name="+")
    run = models.ForeignKey(Run, null=True, on_delete=models.SET_NULL, related_name="+")

    class Meta:
        ordering = ["position"]
        constraints = [models.UniqueConstraint(fields=["comparison", "position"],
                                               name="comparison_item_position_unique")]

    def __str__(self):
        return f"{self.comparison_id}[{self.position}] {self.scenario_id}"
