"""API shapes of plans: create, list, detail (progress, then the ranked answer), save a candidate."""

from rest_framework import serializers

from tierlab.api import RejectUnknownFields, StrictCharField, StrictIntegerField
from tierlab.dashboard import plans
from tierlab.dashboard.models import Plan
from tierlab.dashboard.serializers.common import owner_field


class PlanCreateSerializer(RejectUnknownFields, serializers.Serializer):
    name = StrictCharField(max_length=200, required=False, allow_blank=True, default="")
    spec = serializers.JSONField(help_text=(
        'The plan spec (simulation.planner): {"model": "llama2-70b", "cluster": {"node": "dgx-h100", '
        '"num_nodes": {"min": 1, "max": 4}}, "training": {"seq_len": 4096, "global_batch_size": 512}, '
        '"constraints": {...}, "space": {...}, "objective": "step_time"}. "cluster": {"profile": <id>} '
        '(GET /api/v1/cluster-profiles/: yours or your team\'s) applies that profile\'s fitted figures to '
        'every candidate, as in a scenario; the plan keeps the figures as they were when it was made.'))


class PlanListSerializer(serializers.ModelSerializer):
    owner = owner_field()
    url = serializers.CharField(source="get_absolute_url", read_only=True)
    status = serializers.CharField(read_only=True, help_text="queued | running | succeeded | failed | cancelled")
    total_candidates = serializers.IntegerField(read_only=True)

    class Meta:
        model = Plan
        fields = ["id", "name", "owner", "status", "total_candidates", "url", "created_at", "finished_at"]


class PlanSerializer(serializers.Serializer):
    """A plan: its progress while it runs, then the ranked answer."""

    id = serializers.IntegerField()
    name = serializers.CharField()
    owner = serializers.CharField(help_text="Username of its owner: you, or a member of your team.")
    spec = serializers.JSONField()
    status = serializers.CharField(help_text="queued | running | succeeded | failed | cancelled")
    cancelled = serializers.BooleanField()
    progress = serializers.FloatField(help_text="0..1: candidates done / total")
    done = serializers.IntegerField(help_text="Candidates done (any outcome)")
    feasible = serializers.IntegerField(help_text="Candidates that fit and meet the constraints so far")
    total_candidates = serializers.IntegerField()
    chunks = serializers.IntegerField(help_text="Celery tasks the space was split into")
    workers = serializers.ListField(child=serializers.CharField(), help_text="Workers that ran its chunks")
    best_so_far = serializers.JSONField(allow_null=True, help_text="{index, layout_index, choices, objective, "
                                                                   "step_time_s, usd_per_million_tokens} or null")
    result = serializers.JSONField(allow_null=True, help_text=(
        "Once finished: {objective, candidates, feasible, rejected: {reason: count}, examples, dominated, "
        "top: [ranked rows with choices, scenario, step_time_s, usd_per_million_tokens, bottleneck_message, "
        "alternatives: [{index, choices, name, hbm_total_bytes}] (candidates of the same layout at the same step "
        "time and cost, e.g. ZeRO stages at data-parallel degree 1), alternatives_message], "
        "pareto: [rows], best}"))
    error = serializers.CharField()
    engine_version = serializers.CharField()
    url = serializers.CharField()
    created_at = serializers.DateTimeField()
    started_at = serializers.DateTimeField(allow_null=True)
    finished_at = serializers.DateTimeField(allow_null=True)

    def to_representation(self, instance):
        return super().to_representation(plans.plan_payload(instance) if isinstance(instance, Plan)
                                         else instance)


class PlanSaveSerializer(RejectUnknownFields, serializers.Serializer):
    rank = StrictIntegerField(min_value=1, max_value=1000, default=1,
                                 help_text="Which ranked candidate to save (1 = best)")
    name = StrictCharField(max_length=200, required=False, allow_blank=True, default="")
