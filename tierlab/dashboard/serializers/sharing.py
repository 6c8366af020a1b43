"""API shapes of share links: create, the link, what it shows, a fork of it."""

from rest_framework import serializers

from tierlab.api import RejectUnknownFields, StrictIdField
from tierlab.dashboard.comparisons import MAX_ID
from tierlab.dashboard.models import ShareLink


class ShareCreateSerializer(RejectUnknownFields, serializers.Serializer):
    scenario = StrictIdField(required=False, min_value=1, max_value=MAX_ID)
    comparison = StrictIdField(required=False, min_value=1, max_value=MAX_ID)
    sweep = StrictIdField(required=False, min_value=1, max_value=MAX_ID)
    plan = StrictIdField(required=False, min_value=1, max_value=MAX_ID)

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


class ForkSerializer(RejectUnknownFields, serializers.Serializer):
    kind = serializers.CharField()
    id = serializers.IntegerField()
    url = serializers.CharField(help_text="Its page in your account")
