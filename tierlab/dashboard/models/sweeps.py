"""Sweeps: a grid of points over a base scenario, run in chunks; progress and results
live on the chunks, each written by one Celery task."""

from datetime import timedelta

from django.conf import settings
from django.db import models
from django.db.models import F, OuterRef, Q, Subquery, Sum
from django.utils import timezone

from tierlab.access import OwnedQuerySet
from tierlab.scenarios.models import Scenario


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
        """Points evaluated (a report: fitting or not; not those that failed,
        :attr:`failed_points`, nor those cancelled before they ran, :attr:`cancelled_points`):
        the chunks' ``done`` summed."""
        return self.chunks.aggregate(n=Sum("done"))["n"] or 0

    @property
    def failed_points(self) -> int:
        """Points that failed: the engine refused their scenario (invalid), their evaluation
        raised, or their chunk failed before it reached them (the chunks' ``failed`` summed)."""
        return self.chunks.aggregate(n=Sum("failed"))["n"] or 0

    @staticmethod
    def finished_points_subquery():
        """The chunks' points evaluated or failed (``done + failed``) summed per sweep, as a
        subquery to annotate a list with (``summed_finished``, what :attr:`progress` reads)."""
        per_sweep = SweepChunk.objects.filter(sweep=OuterRef("pk")).order_by().values("sweep")
        return Subquery(per_sweep.annotate(n=Sum(F("done") + F("failed"))).values("n")[:1])

    @property
    def cancelled_points(self) -> int:
        """Points cancelled before they ran (the chunks' ``cancelled`` summed)."""
        return self.chunks.aggregate(n=Sum("cancelled"))["n"] or 0

    @property
    def progress(self) -> float:
        """0..1: the points finished, evaluated or failed, of the total (a cancelled sweep's
        stays below 1); the list's annotation ``summed_finished`` when the row carries it."""
        if "summed_finished" in self.__dict__:
            finished = self.summed_finished or 0
        else:
            finished = self.chunks.aggregate(n=Sum(F("done") + F("failed")))["n"] or 0
        return min(1.0, finished / self.total_points) if self.total_points else 1.0

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
    done = models.PositiveIntegerField(default=0, help_text="Points evaluated: a report, fitting or not "
                                       "(a point that failed or was cancelled before it ran is not one).")
    failed = models.PositiveIntegerField(default=0, help_text="Points that failed: an invalid scenario, an "
                                         "evaluation that raised, or the chunk failed before it reached them.")
    first_failure = models.JSONField(null=True, blank=True, help_text='{"index", "error"} of its first '
                                     "failed point, so a progress poll says why without reading the results.")
    cancelled = models.PositiveIntegerField(default=0, help_text="Points cancelled before they ran.")
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
