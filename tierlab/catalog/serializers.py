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
