"""API shapes of comparisons: create, list, detail (runs' reports and the table)."""

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from tierlab.api import RejectUnknownFields, StrictCharField, StrictIdField
from tierlab.dashboard import comparisons
from tierlab.dashboard.comparisons import MAX_ID
from tierlab.dashboard.models import MAX_COMPARED, MIN_COMPARED, Comparison
from tierlab.dashboard.serializers.common import owner_field


class ComparisonCreateSerializer(RejectUnknownFields, serializers.Serializer):
    name = StrictCharField(max_length=200, required=False, allow_blank=True, default="",
                           help_text="Default: the scenarios' names joined by “vs”.")
    scenarios = serializers.ListField(
        child=StrictIdField(min_value=1, max_value=MAX_ID), min_length=MIN_COMPARED, max_length=MAX_COMPARED,
        help_text=f"{MIN_COMPARED} to {MAX_COMPARED} ids of your scenarios, in column order.")


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
        "best, unfit, labels?}]}; unfit: the columns whose value is a step time or cost of a scenario "
        "that does not fit (as if it ran); labels (the fit_state row): each verdict in words"))

    notes = serializers.ListField(child=serializers.CharField(), read_only=True, help_text=(
        "What the comparison leaves out and why, e.g. a one-click variant that makes no sense on "
        "the scenario's layout (FSDP hybrid with a data-parallel degree of 1)"))

    class Meta(ComparisonListSerializer.Meta):
        fields = ComparisonListSerializer.Meta.fields + ["status", "progress", "items", "table", "notes"]

    def to_representation(self, instance):
        data = super().to_representation(instance)
        data.update(comparisons.comparison_payload(instance))
        return data
