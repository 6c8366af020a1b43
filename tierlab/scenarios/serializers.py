"""API shapes for scenarios, runs and the live estimate."""

from django.db.models import F, QuerySet
from django.db.models.functions import Coalesce
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from simulation import ScenarioError
from tierlab.api import RejectUnknownFields, StrictBooleanField, StrictTextModelSerializer, loads
from tierlab.scenarios.models import ClusterProfile, Run, Scenario


def scenario_error_detail(exc: ScenarioError) -> dict:
    """``{"scenario.<field>": [message], ...}``: the engine's fields (every one of a
    ``ScenarioErrors``), under the request's key."""
    out: dict = {}
    for e in getattr(exc, "errors", None) or [exc]:
        field = e.field if e.field and e.field != "scenario" else ""
        out.setdefault(f"scenario.{field}" if field else "scenario", []).append(e.message)
    return out


class ScenarioJSONField(serializers.JSONField):
    """A scenario object; a JSON string holding one is accepted too (the text of a file, in a JSON body)."""

    default_error_messages = {
        "malformed": "must be a JSON object (the scenario); this text is not JSON: {error}",
        "not_object": "must be a JSON object (the scenario), got {kind}",
    }

    def to_internal_value(self, data):
        if isinstance(data, str):
            try:
                data = loads(data)
            except ValueError as exc:
                self.fail("malformed", error=exc)
        data = super().to_internal_value(data)
        if not isinstance(data, dict):
            self.fail("not_object", kind=type(data).__name__ if data is not None else "null")
        return data


class LastRunSerializer(serializers.ModelSerializer):
    class Meta:
        model = Run
        fields = ["id", "status", "created_at"]


class ScenarioSerializer(RejectUnknownFields, StrictTextModelSerializer):
    scenario = ScenarioJSONField(source="spec")
    owner = serializers.SlugRelatedField(slug_field="username", read_only=True, allow_null=True,
                                         help_text="Username of its owner: you, or a member of your team.")
    last_run = LastRunSerializer(read_only=True, allow_null=True)

    # Only created (POST), never updated through it: a key it sets itself (id, owner, the
    # times, last_run) is as unknown as a misspelt one, as for sweeps and comparisons.
    writable_only = True

    class Meta:
        model = Scenario
        fields = ["id", "name", "owner", "scenario", "created_at", "updated_at", "last_run"]
        read_only_fields = ["id", "owner", "created_at", "updated_at", "last_run"]


def run_owner_field():
    return serializers.CharField(source="scenario.owner.username", read_only=True, allow_null=True,
                                 help_text="Username of its scenario's owner: you, or a member of your team.")


class RunSerializer(serializers.ModelSerializer):
    """A run with its full report (`result`) and resolved input."""

    scenario_name = serializers.CharField(source="scenario.name", read_only=True)
    owner = run_owner_field()
    # the run's own report, or the one of the run it reused (``reused_from``): Run.result
    result = serializers.JSONField(read_only=True, allow_null=True)

    class Meta:
        model = Run
        fields = ["id", "scenario", "scenario_name", "owner", "status", "progress", "result", "error",
                  "engine_version", "input", "input_hash", "reused_from", "worker", "attempts",
                  "created_at", "started_at", "finished_at"]
        read_only_fields = fields


# The summary a run list carries instead of the report: report path -> summary key (units in
# the names, as in the report). The database extracts these keys, so a list never loads a
# report (each is 30–150 kB) it would only drop.
SUMMARY_PATHS = {
    "fits": "fits",
    "fit_state": "fit_state",
    "hbm_per_gpu_bytes": "memory.per_gpu.hbm.total_bytes",
    "hbm_capacity_per_gpu_bytes": "memory.per_gpu.hbm.capacity_bytes",
    "step_time_s": "step.time_s",
    "step_time_band_s": "step.time_band_s",
    "step_validated": "step.validated",
    "tokens_per_s": "throughput.tokens_per_s",
    "bottleneck": "verdict.bottleneck",
    "usd_per_hour": "cost.usd_per_hour",
    "usd_per_million_tokens": "cost.usd_per_million_tokens",
    "violations": "violations",
}
_VIOLATION_KEYS = ("tier", "scope", "over_bytes")


class ViolationSummarySerializer(serializers.Serializer):
    tier = serializers.CharField(help_text="hbm | ddr | nvme | cxl")
    scope = serializers.CharField(help_text="per_gpu | per_node")
    over_bytes = serializers.FloatField(help_text="How much more the tier would need to hold.")


class RunSummarySerializer(serializers.Serializer):
    """The headline figures of a succeeded run's report; a figure the report lacks is null."""

    fits = serializers.BooleanField(allow_null=True, help_text="fit_state is fits or tight.")
    fit_state = serializers.CharField(allow_null=True, help_text="fits | tight (within the engine's "
                                      "memory error band) | does_not_fit; null for reports before 0.3")
    hbm_per_gpu_bytes = serializers.FloatField(allow_null=True, help_text="HBM used per GPU (peak over phases).")
    hbm_capacity_per_gpu_bytes = serializers.FloatField(allow_null=True)
    step_time_s = serializers.FloatField(allow_null=True, help_text="Simulated training step time.")
    step_time_band_s = serializers.ListField(
        child=serializers.FloatField(), min_length=2, max_length=2, allow_null=True,
        help_text="[lo, hi] s: where measured steps of this kind of scenario lay around the prediction "
                  "(the engine's error model, `python -m simulation validate`); null for reports before it. "
                  "It need not hold step_time_s: where every measured case of the kind was slower "
                  "than predicted it lies wholly above it (the prediction is low there).")
    step_validated = serializers.BooleanField(
        allow_null=True, help_text="false when the scenario lies outside what the band was validated on "
                                   "(GPU generation, strategy, GPUs, model size; reasons in the report's "
                                   "step.outside_validation).")
    tokens_per_s = serializers.FloatField(allow_null=True)
    bottleneck = serializers.CharField(allow_null=True, help_text="compute | communication | offload | ...")
    usd_per_hour = serializers.FloatField(allow_null=True)
    usd_per_million_tokens = serializers.FloatField(allow_null=True)
    violations = ViolationSummarySerializer(many=True, help_text="The tiers that overflow (empty when it fits).")


class RunListSerializer(serializers.ModelSerializer):
    """A run in a list: its state and a `summary` of its report, not the report itself
    (GET `/api/v1/runs/{id}/` has it) nor its resolved input."""

    # Serializes a queryset made by RunListSerializer.queryset (the summary's annotations).

    scenario_name = serializers.CharField(source="scenario.name", read_only=True)
    owner = run_owner_field()
    summary = serializers.SerializerMethodField(
        help_text="Headline figures of the report once the run succeeded; null before (or if it failed).")

    class Meta:
        model = Run
        fields = ["id", "scenario", "scenario_name", "owner", "status", "progress", "summary", "error",
                  "engine_version", "input_hash", "reused_from", "worker", "attempts",
                  "created_at", "started_at", "finished_at"]
        read_only_fields = fields

    @staticmethod
    def queryset(runs: QuerySet) -> QuerySet:
        """``runs`` without the report and the input (deferred), with the summary's figures
        extracted by the database (``summary_<key>``)."""
        # a run that reused an identical one reads the figures from that run's report
        return (runs.select_related("scenario__owner").defer("stored_result", "input", "scenario__spec")
                .annotate(**{f"summary_{key}": Coalesce(F("stored_result__" + path.replace(".", "__")),
                                                        F("reused_from__stored_result__" + path.replace(".", "__")))
                             for key, path in SUMMARY_PATHS.items()}))

    @extend_schema_field(RunSummarySerializer(allow_null=True))
    def get_summary(self, run) -> dict | None:
        if run.status != Run.Status.SUCCEEDED:
            return None
        summary = {key: getattr(run, f"summary_{key}") for key in SUMMARY_PATHS}
        for key in ("fits", "step_validated"):
            if summary[key] is not None:
                summary[key] = bool(summary[key])
        summary["violations"] = [{k: v.get(k) for k in _VIOLATION_KEYS}
                                 for v in summary["violations"] or [] if isinstance(v, dict)]
        return summary


class EstimateRequestSerializer(RejectUnknownFields, serializers.Serializer):
    """``{"scenario": {...}, "include_step": bool, "detail": bool}``; other keys are a 400
    (a typo such as ``includ_step`` would otherwise silently give the memory-only answer)."""
    scenario = ScenarioJSONField()
    include_step = StrictBooleanField(
        default=False, help_text="Also simulate the training step and checkpoint goodput (about 0.5 ms more); "
                  "default: memory only.")
    detail = StrictBooleanField(
        default=False, help_text="The step (implies include_step) with its timeline (every task, "
                                 "for a Gantt chart) and the checkpoint Monte-Carlo, as a run's "
                                 "report has them (a few ms more).")
    step_if_within_limit = StrictBooleanField(
        default=False, help_text="With include_step: when the step is more work than a request "
                                 "may do, answer the memory-only report (200) with `step_skipped` "
                                 "saying why, instead of a 413 (the live estimate uses it).")

    def to_internal_value(self, data):
        values = super().to_internal_value(data)
        if values.get("detail"):
            values["include_step"] = True
        return values


class MeasurementsJSONField(ScenarioJSONField):
    """The measurements object (shape: ``simulation.calibrate``); a JSON string holding one
    is accepted too."""

    default_error_messages = {
        "malformed": "must be a JSON object (the measurements); this text is not JSON: {error}",
        "not_object": "must be a JSON object (the measurements), got {kind}",
    }


class ClusterProfileSerializer(RejectUnknownFields, StrictTextModelSerializer):
    """A cluster profile: what was measured, and the figures fitted to it."""

    owner = serializers.SlugRelatedField(slug_field="username", read_only=True, allow_null=True,
                                         help_text="Username of its owner: you, or a member of your team.")
    measurements = MeasurementsJSONField(help_text=(
        '`{"cluster": {"node": ...}, "gemm": {"flops_per_s"}, "collectives": [{"collective", '
        '"size_bytes", "ranks", "bus_bytes_per_s"}], "checkpoints": [{"target", "size_bytes", '
        '"num_nodes", "write_s", "restart_s"}], "steps": [{"scenario", "step_s"}]}`; SI units, '
        "at most 8 of each list."))

    class Meta:
        model = ClusterProfile
        fields = ["id", "name", "owner", "measurements", "figures", "fits", "created_at", "updated_at"]
        read_only_fields = ["id", "owner", "figures", "fits", "created_at", "updated_at"]
