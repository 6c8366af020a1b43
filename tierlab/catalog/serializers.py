import json

from rest_framework import serializers

from tierlab.catalog.models import HardwareItem


class PresetSerializer(serializers.Serializer):
    slug = serializers.CharField(read_only=True)
    name = serializers.CharField(read_only=True)
    spec = serializers.JSONField(read_only=True)
    source = serializers.CharField(read_only=True)
    notes = serializers.CharField(read_only=True)


class HardwareItemSerializer(serializers.ModelSerializer):
    spec = serializers.JSONField(source="specs", read_only=True)

    class Meta:
        model = HardwareItem
        fields = ["slug", "kind", "name", "vendor", "spec", "source", "notes", "extra"]
        read_only_fields = fields


# A config.json is a few kilobytes (Phi-3's, with its auto_map, about 1.5 KB); a pasted
# object past this is not one.
HF_CONFIG_MAX_CHARS = 65_536


class HfConfigField(serializers.JSONField):
    """A Hugging Face config.json object; the file's text (a JSON string) is accepted too."""

    default_error_messages = {
        "malformed": "must be a JSON object (the config.json); this text is not JSON: {error}",
        "not_object": "must be a JSON object (the config.json), got {kind}",
        "too_long": "must be at most {limit:,} characters of JSON (a config.json is a few KB), got {n:,}",
    }

    def to_internal_value(self, data):
        text = data if isinstance(data, str) else None
        if text is not None:
            if len(text) > HF_CONFIG_MAX_CHARS:
                self.fail("too_long", limit=HF_CONFIG_MAX_CHARS, n=len(text))
            try:
                data = json.loads(text)
            except ValueError as exc:
                self.fail("malformed", error=exc)
        data = super().to_internal_value(data)
        if not isinstance(data, dict):
            self.fail("not_object", kind=type(data).__name__ if data is not None else "null")
        if text is None and (n := len(json.dumps(data))) > HF_CONFIG_MAX_CHARS:
            self.fail("too_long", limit=HF_CONFIG_MAX_CHARS, n=n)
        return data


class HfConfigRequestSerializer(serializers.Serializer):
    """``{"config": {...}}``: the config.json (object or its text); other keys are a 400."""
    config = HfConfigField(help_text="The model's config.json from the Hugging Face Hub, as an "
                                     "object or as its text. Nothing is fetched from the Hub.")

    def to_internal_value(self, data):
        if isinstance(data, dict):
            unknown = sorted(set(data) - set(self.fields))
            if unknown:
                raise serializers.ValidationError(
                    {key: [f"unknown field; known fields: {', '.join(self.fields)}"] for key in unknown})
        return super().to_internal_value(data)


class HfConfigResponseSerializer(serializers.Serializer):
    model = serializers.JSONField(help_text="The scenario's model section (explicit architecture), "
                                            "for `{\"model\": ...}` in a scenario.")
    ignored = serializers.ListField(child=serializers.CharField(), help_text=(
        "The config.json keys that set nothing in the model section (token ids, dtypes, RoPE "
        "settings...), sorted."))
    notes = serializers.ListField(child=serializers.CharField(), help_text=(
        "What the engine models differently from the config (soft-capping, a bias it cannot "
        "hold, a layer pattern it cannot hold, a multi-token-prediction module left out)."))
