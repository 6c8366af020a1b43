"""API shapes for scenarios, runs and the live estimate."""

from rest_framework import serializers

from simulation import ScenarioError
from tierlab.api import StrictBooleanField, loads
from tierlab.scenarios.models import Run, Scenario


def scenario_error_detail(exc: ScenarioError) -> dict:
    """``{"scenario.<field>": [message]}``: the engine's field, under the request's key."""
    field = exc.field if exc.field and exc.field != "scenario" else ""
    return {f"scenario.{field}" if field else "scenario": [exc.message]}


class ScenarioJSONField(serializers.JSONField):
    """A scenario object; a JSON string holding one is accepted too (e.g. from a form)."""

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


class ScenarioSerializer(serializers.ModelSerializer):
    scenario = ScenarioJSONField(source="spec")
    owner = serializers.SlugRelatedField(slug_field="username", read_only=True, allow_null=True,
                                         help_text="Username of its owner: you, or a member of your team.")
    last_run = LastRunSerializer(read_only=True, allow_null=True)

    class Meta:
        model = Scenario
        fields = ["id", "name", "owner", "scenario", "created_at", "updated_at", "last_run"]
        read_only_fields = ["id", "owner", "created_at", "updated_at", "last_run"]


class RunSerializer(serializers.ModelSerializer):
    scenario_name = serializers.CharField(source="scenario.name", read_only=True)

    class Meta:
        model = Run
        fields = ["id", "scenario", "scenario_name", "status", "progress", "result", "error",
                  "engine_version", "input", "input_hash", "reused_from", "worker", "attempts",
                  "created_at", "started_at", "finished_at"]
        read_only_fields = fields


class EstimateRequestSerializer(serializers.Serializer):
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

    def to_internal_value(self, data):
        if isinstance(data, dict):
            unknown = sorted(set(data) - set(self.fields))
            if unknown:
                known = ", ".join(self.fields)
                raise serializers.ValidationError(
                    {key: [f"unknown field; known fields: {known}"] for key in unknown})
        values = super().to_internal_value(data)
        if values.get("detail"):
            values["include_step"] = True
        return values
