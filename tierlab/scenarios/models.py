"""Scenarios (what the user asked) and runs (one engine evaluation each, the truth about it)."""

from datetime import timedelta

from django.conf import settings
from django.db import models
from django.utils import timezone

from tierlab.access import OwnedQuerySet, RunQuerySet
from tierlab.catalog import labels


class RunStopped(Exception):
    """The run stopped being ``running`` under its worker (cancelled, or marked failed)."""


class Scenario(models.Model):
    owner = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True,
                              on_delete=models.CASCADE, related_name="scenarios")
    name = models.CharField(max_length=200)
    spec = models.JSONField(help_text="The scenario JSON as the user gave it (presets unexpanded).")
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    objects = OwnedQuerySet.as_manager()

    class Meta:
        ordering = ["-updated_at", "-id"]

    def __str__(self):
        return self.name

    def get_absolute_url(self):
        return f"/scenarios/{self.pk}/"

    # Short labels for lists and headers, by display name; the spec may be partial or
    # hand-written (tierlab.catalog.labels never raises).
    @property
    def model_label(self) -> str:
        return labels.model_label(self.spec)

    @property
    def nodes_label(self) -> str:
        return labels.nodes_label(self.spec)

    @property
    def strategy_label(self) -> str:
        return labels.strategy_label(self.spec)

    @property
    def has_transformer(self) -> bool:
        """False for a recommendation-model (recsys, DLRM) scenario without a transformer:
        it has no framework configs (DeepSpeed, FSDP, Megatron: the export refuses them) and
        its strategy, offload and checkpoint choices change nothing the engine reports, so the
        pages offer neither."""
        spec = self.spec if isinstance(self.spec, dict) else {}
        return not ("recsys" in spec and not spec.get("model"))

    @property
    def last_run(self):
        """The latest run, without its report and input (lists show only its state)."""
        return self.runs.defer("stored_result", "input").order_by("-created_at", "-id").first()


def hand_on_result(collector, field, sub_objs, using):
    """``on_delete`` of ``Run.reused_from``: when a run whose result others reuse is deleted
    (its scenario was), the oldest reusing run that stays gets the result stored on its own
    row and becomes the one the others point at; they keep their report without a copy each.
    A deleted run that had not succeeded leaves its followers unlinked, as SET_NULL would
    (the read-time check then sends or fails them)."""
    deleted = {obj.pk for obj in collector.data.get(field.model, ())}
    followers = {}
    for run in sub_objs.order_by("created_at", "id").only("pk", "reused_from_id", "created_at"):
        if run.pk not in deleted:
            followers.setdefault(run.reused_from_id, []).append(run.pk)
    runs = field.model._base_manager.using(using)
    for leader_id, pks in followers.items():
        lead = runs.filter(pk=leader_id).values("status", "stored_result").first() or {}
        if lead.get("status") == Run.Status.SUCCEEDED and lead.get("stored_result") is not None:
            heir, rest = pks[0], pks[1:]
            runs.filter(pk=heir).update(stored_result=lead["stored_result"], reused_from=None)
            runs.filter(pk__in=rest).update(reused_from=heir)
        else:
            runs.filter(pk__in=pks).update(reused_from=None)


class Run(models.Model):
    class Status(models.TextChoices):
        QUEUED = "queued"
        RUNNING = "running"
        SUCCEEDED = "succeeded"
        FAILED = "failed"

    scenario = models.ForeignKey(Scenario, on_delete=models.CASCADE, related_name="runs")
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.QUEUED,
                              db_index=True)
    progress = models.FloatField(default=0.0, help_text="0..1")
    input = models.JSONField(help_text="The resolved scenario the engine runs (presets expanded).")
    input_hash = models.CharField(max_length=64, db_index=True,
                                  help_text="sha256 of canonical input JSON + engine version")
    # The engine's report, on the run that computed it; a run that reuses it (``reused_from``)
    # stores none and reads it from there (``result``): a report is 30–550 kB.
    stored_result = models.JSONField(null=True, blank=True, db_column="result")
    error = models.TextField(blank=True)
    engine_version = models.CharField(max_length=32)
    reused_from = models.ForeignKey("self", null=True, blank=True, on_delete=hand_on_result,
                                    related_name="+", help_text="The run whose stored result this serves.")
    celery_task_id = models.CharField(max_length=64, blank=True)
    worker = models.CharField(max_length=255, blank=True,
                              help_text="Hostname of the Celery worker that ran it last (name@host).")
    attempts = models.PositiveSmallIntegerField(
        default=0, help_text="How many times a worker started it (more than 1: redelivered).")
    enqueued_at = models.DateTimeField(
        null=True, blank=True, help_text="When its message was last sent to the worker queue.")
    requeues = models.PositiveSmallIntegerField(
        default=0, help_text="How many times it was sent again after its message was lost.")
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    objects = RunQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self):
        return f"Run {self.pk} of {self.scenario_id} ({self.status})"

    def get_absolute_url(self):
        return f"/runs/{self.pk}/"

    @property
    def result(self) -> dict | None:
        """The report: its own, or (a run that reused an identical one) that run's, read
        once per object (only that column)."""
        if self.stored_result is None and self.reused_from_id is not None and self.status == self.Status.SUCCEEDED:
            if getattr(self, "_reused_result_of", None) != self.reused_from_id:
                self._reused_result = (Run.objects.filter(pk=self.reused_from_id)
                                       .values_list("stored_result", flat=True).first())
                self._reused_result_of = self.reused_from_id
            return self._reused_result
        return self.stored_result

    @result.setter
    def result(self, value) -> None:
        self.stored_result = value

    @property
    def is_finished(self) -> bool:
        return self.status in (self.Status.SUCCEEDED, self.Status.FAILED)

    def mark_running(self, task_id: str = "", worker: str = "") -> bool:
        """Claim the run for a worker; False when it finished meanwhile (cancelled)."""
        return self._finish([self.Status.QUEUED, self.Status.RUNNING], status=self.Status.RUNNING,
                            started_at=timezone.now(), progress=0.0, error="", finished_at=None,
                            celery_task_id=task_id or self.celery_task_id,
                            worker=worker or self.worker, attempts=self.attempts + 1)

    def set_progress(self, fraction: float):
        """Record progress; raises RunStopped when the run is no longer running (cancelled,
        or failed by the read-time check), so a worker stops at its next progress callback."""
        self.progress = min(1.0, max(0.0, float(fraction)))
        if not Run.objects.filter(pk=self.pk, status=self.Status.RUNNING).update(progress=self.progress):
            raise RunStopped(self.pk)

    def _finish(self, allowed, **fields) -> bool:
        """Write these fields unless the run already has an outcome (a cancel, the stale check)
        or is gone (its scenario was deleted: then the object keeps what it had)."""
        updated = Run.objects.filter(pk=self.pk, status__in=allowed).update(**fields)
        if updated:
            for name, value in fields.items():
                setattr(self, name, value)
        elif Run.objects.filter(pk=self.pk).exists():
            self.refresh_from_db()
        return bool(updated)

    def mark_succeeded(self, result: dict) -> bool:
        return self._finish([self.Status.RUNNING], status=self.Status.SUCCEEDED, stored_result=result,
                            progress=1.0, error="", finished_at=timezone.now())

    def mark_failed(self, reason: str) -> bool:
        return self._finish([self.Status.QUEUED, self.Status.RUNNING], status=self.Status.FAILED,
                            error=reason, finished_at=timezone.now())

    @classmethod
    def fail_stale(cls, now=None) -> int:
        """Mark runs failed whose worker died: running past the hard time limit + margin."""
        now = now or timezone.now()
        cutoff = now - timedelta(seconds=settings.TIERLAB_RUN_STALE_AFTER_S)
        return cls.objects.filter(status=cls.Status.RUNNING, started_at__lt=cutoff).update(
            status=cls.Status.FAILED, finished_at=now,
            error=("worker lost: the run was still marked running "
                   f"{settings.TIERLAB_RUN_STALE_AFTER_S} s after it started "
                   "(past the time limit); start it again"))


class ClusterProfile(models.Model):
    """A cluster's efficiency figures, fitted to what its users measured on it.

    ``measurements`` is what the user entered (measured step times of known scenarios,
    nccl-tests bus bandwidths, a GEMM rate, checkpoint write and restart times; shape in
    :mod:`simulation.calibrate`); ``figures`` is what the engine fitted to them and applies
    to every scenario that names the profile (``"cluster": {"profile": <id>}``); ``fits``
    says, per measurement, what it gave and how far the defaults were off. The owner's
    team sees and uses it; only the owner refits or deletes it.
    """

    owner = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True,
                              on_delete=models.CASCADE, related_name="cluster_profiles")
    name = models.CharField(max_length=200)
    measurements = models.JSONField(help_text="What was measured on the cluster, as entered.")
    figures = models.JSONField(default=dict, help_text="The fitted figures the engine applies "
                               "(compute_efficiency, network_efficiency, gemm_flops, checkpoint_targets).")
    fits = models.JSONField(default=list, blank=True,
                            help_text="Per measurement: the figure it gave, the engine's value with the "
                                      "defaults and with the fitted profile.")
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    objects = OwnedQuerySet.as_manager()

    class Meta:
        ordering = ["-updated_at", "-id"]

    def __str__(self):
        return self.name

    def get_absolute_url(self):
        return f"/profiles/{self.pk}/"

    def engine_spec(self) -> dict:
        """The figures as a scenario's ``cluster.profile`` carries them once resolved."""
        return {**self.figures, "id": self.pk, "name": self.name}
