"""Plans: a planner search split into chunks of its candidate space, one Celery task each."""

from datetime import timedelta

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils import timezone

from tierlab.access import OwnedQuerySet


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

    @property
    def objective_label(self) -> str:
        """The spec's objective as a reader sees it, "Step time (s)" (tierlab.catalog.labels)."""
        from tierlab.catalog.labels import objective_label
        return objective_label(self.spec.get("objective") if isinstance(self.spec, dict) else None)


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
