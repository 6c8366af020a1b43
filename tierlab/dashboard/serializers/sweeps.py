"""API shapes of sweeps: axes, create, list, detail (every point and the Pareto front)."""

from rest_framework import serializers

from tierlab.api import RejectUnknownFields, StrictCharField, StrictIdField
from tierlab.dashboard import sweeps
from tierlab.dashboard.comparisons import MAX_ID
from tierlab.dashboard.models import Sweep
from tierlab.dashboard.serializers.common import owner_field


class AxisSerializer(serializers.Serializer):
    path = serializers.CharField(help_text="A dotted scenario field, e.g. cluster.num_nodes")
    label = serializers.CharField(read_only=True, help_text="The field in words, e.g. Number of nodes")
    values = serializers.ListField(child=serializers.JSONField(), help_text=(
        "The values to try, e.g. [1, 2, 4]; null is the field's null (training.fp8: FP8 off; a "
        "number: its default), refused where the field takes none"))
    scales_global_batch = serializers.BooleanField(
        required=False, help_text="A cluster.num_nodes axis only: each point's global batch is the "
                                  "base's x its nodes / the base's nodes (the per-GPU batch is kept)")
    value_labels = serializers.ListField(
        child=serializers.CharField(allow_null=True), read_only=True,
        help_text='How each value reads where it differs from itself, e.g. "NVIDIA DGX H100" for '
                  'dgx-h100, "ZeRO-3" for zero3, "off" for a null FP8 (a null number: "default"), '
                  '"recipe: delayed" for an object; null for a value that reads as itself')


class SweepCreateSerializer(RejectUnknownFields, serializers.Serializer):
    name = StrictCharField(max_length=200, required=False, allow_blank=True, default="")
    scenario = StrictIdField(min_value=1, max_value=MAX_ID, help_text="Id of your base scenario.")
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
    progress = serializers.FloatField(help_text="0..1: (done_points + failed_points) / total_points, the "
                                                "points finished (a cancelled sweep's stays below 1: its "
                                                "cancelled points never ran)")
    done_points = serializers.IntegerField(help_text="Points evaluated: a report, fitting or not (not the "
                                                     "failed or cancelled ones)")
    failed_points = serializers.IntegerField(help_text=(
        "Points that failed (status failed): the engine refused their scenario (valid false, e.g. a "
        "batch that does not divide), their evaluation raised, or their chunk failed (valid null)"))
    first_failure = serializers.JSONField(allow_null=True, help_text=(
        '{index, error} of the first failed point (the lowest index of those finished), the error '
        'naming the field ("training.global_batch_size: ..."); null when none failed'))
    cancelled_points = serializers.IntegerField(help_text="Points cancelled before they ran (not in done_points)")
    total_points = serializers.IntegerField()
    chunks = serializers.IntegerField(help_text="Celery tasks the points were split into")
    points = serializers.JSONField(required=False, help_text=(
        "Per point: index, values, status (done: evaluated | failed | cancelled | pending), valid (false: the "
        "engine refused the scenario; null: not judged), fits, fit_state "
        "(fits | tight | does_not_fit), step_time_s, usd_per_million_tokens, ... Every point on GET "
        "(or those ?points=start:stop selects); absent with ?points=none and in the POST's response"))
    points_url = serializers.CharField(required=False, help_text=(
        "Where the points are: this sweep's detail with ?points=all (the POST's response and the light "
        "detail, ?points=none, carry no points)"))
    pareto = serializers.ListField(child=serializers.IntegerField(),
                                   help_text="Indices of feasible points no other beats on both cost and step time")
    error = serializers.CharField()
    engine_version = serializers.CharField()
    created_at = serializers.DateTimeField()
    started_at = serializers.DateTimeField(allow_null=True)
    finished_at = serializers.DateTimeField(allow_null=True)

    def to_representation(self, instance):
        if isinstance(instance, Sweep):
            instance = sweeps.sweep_payload(instance, self.context.get("points", slice(None)))
        data = super().to_representation(instance)
        if "points" not in instance:
            data.pop("points", None)
        return data
