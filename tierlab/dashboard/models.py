"""Comparisons (2–8 scenarios side by side), sweeps (a grid of points run in chunks) and
share links (an unguessable read-only token for any of the three).

The rows are the truth: a comparison points at one run per scenario; a sweep's progress
and results live on its chunks, each written by one Celery task.
"""

import secrets
from datetime import timedelta

from django.conf import settings
from django.db import models
from django.db.models import Q, Sum
from django.utils import timezone

from tierlab.access import OwnedQuerySet
from tierlab.scenarios.models import Run, Scenario

MIN_COMPARED, MAX_COMPARED = 2, 8


class Comparison(models.Model):
    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE,
                              related_name="comparisons")
    name = models.CharField(max_length=200)
    created_at = models.DateTimeField(auto_now_add=True)

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


class Sweep(models.Model):
    class Status(models.TextChoices):
        QUEUED = "queued"
        RUNNING = "running"
        SUCCEEDED = "succeeded"
        FAILED = "failed"
        CANCELLED = "cancelled"

    FINISHED = (Status.SUCCEEDED, Status.FAILED, Status.CANCELLED)

    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE,
                              related_name="sweeps")
    name = models.CharField(max_length=200)
    base = models.ForeignKey(Scenario, null=True, blank=True, on_delete=models.SET_NULL,
                             related_name="sweeps", help_text="The scenario the grid varies.")
    base_spec = models.JSONField(help_text="The base scenario's JSON when the sweep was made.")
    axes = models.JSONField(help_text='[{"path": "cluster.num_nodes", "values": [1, 2, 4]}, ...]')
    total_points = models.PositiveIntegerField()
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.QUEUED,
                              db_index=True)
    cancelled = models.BooleanField(default=False, help_text="Cancel requested: remaining chunks stop.")
    pareto = models.JSONField(default=list, blank=True,
                              help_text="Indices of points on the cost / step-time front.")
    error = models.TextField(blank=True)
    engine_version = models.CharField(max_length=32)
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    objects = OwnedQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self):
        return self.name

    def get_absolute_url(self):
        return f"/sweeps/{self.pk}/"

    @property
    def is_finished(self) -> bool:
        return self.status in self.FINISHED

    @property
    def done_points(self) -> int:
        return self.chunks.aggregate(n=Sum("done"))["n"] or 0

    @property
    def progress(self) -> float:
        return min(1.0, self.done_points / self.total_points) if self.total_points else 1.0

    @property
    def axes_label(self) -> str:
        return " × ".join(str(ax.get("path")) for ax in self.axes or [])


class SweepChunk(models.Model):
    """Points ``start`` .. ``stop - 1`` of a sweep: one Celery task."""

    class Status(models.TextChoices):
        QUEUED = "queued"
        RUNNING = "running"
        DONE = "done"
        FAILED = "failed"
        CANCELLED = "cancelled"

    FINISHED = (Status.DONE, Status.FAILED, Status.CANCELLED)

    sweep = models.ForeignKey(Sweep, on_delete=models.CASCADE, related_name="chunks")
    start = models.PositiveIntegerField()
    stop = models.PositiveIntegerField()
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.QUEUED,
                              db_index=True)
    done = models.PositiveIntegerField(default=0, help_text="Points finished (any outcome).")
    attempts = models.PositiveSmallIntegerField(default=0, help_text="Times a worker started it.")
    results = models.JSONField(default=list, blank=True, help_text="One summary per point, in order.")
    error = models.TextField(blank=True)
    celery_task_id = models.CharField(max_length=64, blank=True)
    worker = models.CharField(max_length=255, blank=True,
                              help_text="Hostname of the Celery worker that ran it last (name@host).")
    enqueued_at = models.DateTimeField(
        null=True, blank=True, help_text="When its message was last sent to the worker queue.")
    requeues = models.PositiveSmallIntegerField(
        default=0, help_text="How many times it was sent again after its message was lost.")
    created_at = models.DateTimeField(default=timezone.now)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["sweep", "start"]

    def __str__(self):
        return f"Sweep {self.sweep_id} points {self.start}..{self.stop - 1} ({self.status})"

    @property
    def size(self) -> int:
        return self.stop - self.start

    @classmethod
    def stale(cls, now=None):
        """Chunks still `running` past the hard time limit + margin: their worker died."""
        now = now or timezone.now()
        cutoff = now - timedelta(seconds=settings.TIERLAB_RUN_STALE_AFTER_S)
        return cls.objects.filter(status=cls.Status.RUNNING, started_at__lt=cutoff)

    @classmethod
    def lost(cls, now=None):
        """Chunks still `queued` ``RUN_QUEUED_TIMEOUT_S`` after they were sent: their message was lost."""
        now = now or timezone.now()
        cutoff = now - timedelta(seconds=settings.TIERLAB_RUN_QUEUED_TIMEOUT_S)
        return cls.objects.filter(status=cls.Status.QUEUED).filter(
            Q(enqueued_at__lt=cutoff) | Q(enqueued_at=None, created_at__lt=cutoff))


class Plan(models.Model):
    """A planner search (``simulation.planner``): a plan spec, split into chunks of its
    candidate space, one Celery task each; the merged answer is written when the last ends."""

    class Status(models.TextChoices):
        QUEUED = "queued"
        RUNNING = "running"
        SUCCEEDED = "succeeded"
        FAILED = "failed"
        CANCELLED = "cancelled"

    FINISHED = (Status.SUCCEEDED, Status.FAILED, Status.CANCELLED)

    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE,
                              related_name="plans")
    name = models.CharField(max_length=200)
    spec = models.JSONField(help_text="The plan spec as given (simulation.planner).")
    total_candidates = models.PositiveIntegerField()
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.QUEUED,
                              db_index=True)
    cancelled = models.BooleanField(default=False, help_text="Cancel requested: remaining chunks stop.")
    result = models.JSONField(null=True, blank=True,
                              help_text="simulation.planner.merge of the chunks, once all ended.")
    error = models.TextField(blank=True)
    engine_version = models.CharField(max_length=32)
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    objects = OwnedQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self):
        return self.name

    def get_absolute_url(self):
        return f"/plans/{self.pk}/"

    @property
    def is_finished(self) -> bool:
        return self.status in self.FINISHED


class PlanChunk(models.Model):
    """Chunk ``index`` of ``n_chunks`` of a plan's candidates: one Celery task."""

    class Status(models.TextChoices):
        QUEUED = "queued"
        RUNNING = "running"
        DONE = "done"
        FAILED = "failed"
        CANCELLED = "cancelled"

    FINISHED = (Status.DONE, Status.FAILED, Status.CANCELLED)

    plan = models.ForeignKey(Plan, on_delete=models.CASCADE, related_name="chunks")
    index = models.PositiveIntegerField()
    n_chunks = models.PositiveIntegerField()
    size = models.PositiveIntegerField(help_text="Candidates in this chunk.")
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.QUEUED,
                              db_index=True)
    done = models.PositiveIntegerField(default=0, help_text="Candidates finished (any outcome).")
    feasible = models.PositiveIntegerField(default=0)
    best = models.JSONField(null=True, blank=True, help_text="Best candidate so far in this chunk.")
    result = models.JSONField(null=True, blank=True, help_text="simulation.planner.plan_chunk's result.")
    attempts = models.PositiveSmallIntegerField(default=0, help_text="Times a worker started it.")
    error = models.TextField(blank=True)
    celery_task_id = models.CharField(max_length=64, blank=True)
    worker = models.CharField(max_length=255, blank=True)
    enqueued_at = models.DateTimeField(null=True, blank=True)
    requeues = models.PositiveSmallIntegerField(default=0)
    created_at = models.DateTimeField(default=timezone.now)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["plan", "index"]
        constraints = [models.UniqueConstraint(fields=["plan", "index"], name="plan_chunk_index_unique")]

    def __str__(self):
        return f"Plan {self.plan_id} chunk {self.index}/{self.n_chunks} ({self.status})"

    @classmethod
    def stale(cls, now=None):
        """Chunks still `running` past the hard time limit + margin: their worker died."""
        now = now or timezone.now()
        cutoff = now - timedelta(seconds=settings.TIERLAB_RUN_STALE_AFTER_S)
        return cls.objects.filter(status=cls.Status.RUNNING, started_at__lt=cutoff)

    @classmethod
    def lost(cls, now=None):
        """Chunks still `queued` ``RUN_QUEUED_TIMEOUT_S`` after they were sent."""
        now = now or timezone.now()
        cutoff = now - timedelta(seconds=settings.TIERLAB_RUN_QUEUED_TIMEOUT_S)
        return cls.objects.filter(status=cls.Status.QUEUED).filter(
            Q(enqueued_at__lt=cutoff) | Q(enqueued_at=None, created_at__lt=cutoff))


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

