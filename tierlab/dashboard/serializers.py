"""API shapes for comparisons, sweeps and share links."""

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from tierlab.dashboard import comparisons, plans, sweeps, variants
from tierlab.dashboard.comparisons import MAX_ID
from tierlab.dashboard.models import MAX_COMPARED, MIN_COMPARED, Comparison, Plan, ShareLink, Sweep


# ---------------------------------------------------------------- comparisons
class ComparisonCreateSerializer(serializers.Serializer):
    name = serializers.CharField(max_length=200, required=False, allow_blank=True, default="",
                                 help_text="Default: the scenarios' names joined by “vs”.")
    scenarios = serializers.ListField(
        child=serializers.IntegerField(min_value=1, max_value=MAX_ID), min_length=MIN_COMPARED, max_length=MAX_COMPARED,
        help_text=f"{MIN_COMPARED} to {MAX_COMPARED} ids of your scenarios, in column order.")


def owner_field():
    return serializers.SlugRelatedField(slug_field="username", read_only=True,
                                        help_text="Username of its owner: you, or a member of your team.")


class ComparisonListSerializer(serializers.ModelSerializer):
    owner = owner_field()
    scenarios = serializers.SerializerMethodField()
    url = serializers.CharField(source="get_absolute_url", read_only=True)

    class Meta:
        model = Comparison
        fields = ["id", "name", "owner", "scenarios", "url", "created_at"]

    @extend_schema_field(serializers.ListField(child=serializers.IntegerField()))
    def get_scenarios(self, obj) -> list:
        return [item.scenario_id for item in obj.items.all()]


class ComparisonSerializer(ComparisonListSerializer):
    """A comparison with its runs' reports and the table (inputs that differ, best outputs)."""

    status = serializers.CharField(read_only=True, help_text="running | succeeded | failed (a run failed)")
    progress = serializers.FloatField(read_only=True, help_text="0..1 over the runs")
    items = serializers.JSONField(read_only=True,
                                  help_text="One per column: name, scenario, run, status, error, report")
    table = serializers.JSONField(read_only=True, help_text=(
        "{inputs: [{key, values, differs, labels?}], outputs: [{key, label, unit, better, values, "
        "best, unfit}]}; unfit: the columns whose value is a step time or cost of a scenario that "
        "does not fit (as if it ran)"))

    class Meta(ComparisonListSerializer.Meta):
        fields = ComparisonListSerializer.Meta.fields + ["status", "progress", "items", "table"]

    def to_representation(self, instance):
        data = super().to_representation(instance)
        data.update(comparisons.comparison_payload(instance))
        return data


# ---------------------------------------------------------------- sweeps
class AxisSerializer(serializers.Serializer):
    path = serializers.CharField(help_text="A dotted scenario field, e.g. cluster.num_nodes")
    label = serializers.CharField(read_only=True, help_text="The field in words, e.g. Number of nodes")
    values = serializers.ListField(child=serializers.JSONField(), help_text="The values to try, e.g. [1, 2, 4]")
    scales_global_batch = serializers.BooleanField(
        required=False, help_text="A cluster.num_nodes axis only: each point's global batch is the "
                                  "base's x its nodes / the base's nodes (the per-GPU batch is kept)")
    value_labels = serializers.ListField(
        child=serializers.CharField(allow_null=True), read_only=True,
        help_text='How each value reads where it differs from itself, e.g. "NVIDIA DGX H100" for '
                  'dgx-h100 or "ZeRO-3" for zero3; null for a value that reads as itself')


class SweepCreateSerializer(serializers.Serializer):
    name = serializers.CharField(max_length=200, required=False, allow_blank=True, default="")
    scenario = serializers.IntegerField(min_value=1, max_value=MAX_ID, help_text="Id of your base scenario.")
    axes = serializers.JSONField(help_text='One or two axes: [{"path": "cluster.num_nodes", "values": [1, 2, 4]}]; '
                                           'a cluster.num_nodes axis may add "scales_global_batch": true')


class SweepListSerializer(serializers.ModelSerializer):
    owner = owner_field()
    url = serializers.CharField(source="get_absolute_url", read_only=True)
    status = serializers.CharField(read_only=True, help_text="queued | running | succeeded | failed | cancelled")
    progress = serializers.FloatField(read_only=True)
    # Declared: the model field's range depends on the database, and the schema must not.
    total_points = serializers.IntegerField(read_only=True)

    class Meta:
        model = Sweep
        fields = ["id", "name", "owner", "base", "axes", "status", "progress", "total_points", "url",
                  "created_at", "finished_at"]


class SweepSerializer(serializers.Serializer):
    """A sweep with every point (a result, or pending) and its Pareto front."""

    id = serializers.IntegerField(allow_null=True)
    name = serializers.CharField()
    owner = serializers.CharField(help_text="Username of its owner: you, or a member of your team.")
    base = serializers.JSONField(help_text="{id, name} of the base scenario, or null if deleted")
    axes = serializers.ListField(child=AxisSerializer())
    status = serializers.CharField(help_text="queued | running | succeeded | failed | cancelled")
    cancelled = serializers.BooleanField()
    progress = serializers.FloatField(help_text="0..1: points finished / total")
    done_points = serializers.IntegerField()
    total_points = serializers.IntegerField()
    chunks = serializers.IntegerField(help_text="Celery tasks the points were split into")
    points = serializers.JSONField(help_text="Per point: index, values, status (done | failed | cancelled | "
                                             "pending), valid, fits, step_time_s, usd_per_million_tokens, ...")
    pareto = serializers.ListField(child=serializers.IntegerField(),
                                   help_text="Indices of feasible points no other beats on both cost and step time")
    error = serializers.CharField()
    engine_version = serializers.CharField()
    created_at = serializers.DateTimeField()
    started_at = serializers.DateTimeField(allow_null=True)
    finished_at = serializers.DateTimeField(allow_null=True)

    def to_representation(self, instance):
        return super().to_representation(sweeps.sweep_payload(instance) if isinstance(instance, Sweep)
                                         else instance)


# ---------------------------------------------------------------- plans
class PlanCreateSerializer(serializers.Serializer):
    name = serializers.CharField(max_length=200, required=False, allow_blank=True, default="")
    spec = serializers.JSONField(help_text=(
        'The plan spec (simulation.planner): {"model": "llama2-70b", "cluster": {"node": "dgx-h100", '
        '"num_nodes": {"min": 1, "max": 4}}, "training": {"seq_len": 4096, "global_batch_size": 512}, '
        '"constraints": {...}, "space": {...}, "objective": "step_time"}'))


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
    best_so_far = serializers.JSONField(allow_null=True, help_text="{index, choices, objective, step_time_s, "
                                                                   "usd_per_million_tokens} or null")
    result = serializers.JSONField(allow_null=True, help_text=(
        "Once finished: {objective, candidates, feasible, rejected: {reason: count}, examples, dominated, "
        "top: [ranked rows with choices, scenario, step_time_s, usd_per_million_tokens, bottleneck_message], "
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


class PlanSaveSerializer(serializers.Serializer):
    rank = serializers.IntegerField(min_value=1, max_value=1000, default=1,
                                    help_text="Which ranked candidate to save (1 = best)")
    name = serializers.CharField(max_length=200, required=False, allow_blank=True, default="")


# ---------------------------------------------------------------- share links
class ShareCreateSerializer(serializers.Serializer):
    scenario = serializers.IntegerField(required=False, min_value=1, max_value=MAX_ID)
    comparison = serializers.IntegerField(required=False, min_value=1, max_value=MAX_ID)
    sweep = serializers.IntegerField(required=False, min_value=1, max_value=MAX_ID)
    plan = serializers.IntegerField(required=False, min_value=1, max_value=MAX_ID)

    def validate(self, attrs):
        given = [k for k in ShareLink.KINDS if attrs.get(k) is not None]
        if len(given) != 1:
            raise serializers.ValidationError(
                {"target": ["give exactly one of scenario, comparison, sweep or plan (an id of yours)"]})
        return {"kind": given[0], "id": attrs[given[0]]}


class ShareLinkSerializer(serializers.ModelSerializer):
    kind = serializers.CharField(read_only=True)
    target = serializers.IntegerField(source="target_id", read_only=True)
    name = serializers.SerializerMethodField()
    url = serializers.SerializerMethodField()
    active = serializers.BooleanField(source="is_active", read_only=True)

    class Meta:
        model = ShareLink
        fields = ["id", "token", "url", "kind", "target", "name", "active", "created_at", "revoked_at"]
        read_only_fields = fields

    def get_name(self, obj) -> str:
        return obj.target.name

    def get_url(self, obj) -> str:
        request = self.context.get("request")
        path = obj.get_absolute_url()
        return request.build_absolute_uri(path) if request else path


class SharedSerializer(serializers.Serializer):
    kind = serializers.ChoiceField(choices=[(k, k) for k in ShareLink.KINDS])
    token = serializers.CharField()
    name = serializers.CharField()
    owner = serializers.CharField(help_text="Username of who shared it")
    created_at = serializers.DateTimeField()
    data = serializers.JSONField(help_text="A comparison's, sweep's or plan's API shape; a scenario as a comparison of one")


class ForkSerializer(serializers.Serializer):
    kind = serializers.CharField()
    id = serializers.IntegerField()
    url = serializers.CharField(help_text="Its page in your account")


class DuplicateSerializer(serializers.Serializer):
    name = serializers.CharField(max_length=200, required=False, allow_blank=True, default="",
                                 help_text="Default: “Copy of <name>”.")



class VariantsSerializer(serializers.Serializer):
    question = serializers.ChoiceField(choices=list(variants.QUESTIONS.items()),
                                       help_text="sharding | offload | checkpoint")
