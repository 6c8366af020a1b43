"""API shapes of the dashboard's actions on one scenario: duplicate it, compare its variants."""

from rest_framework import serializers

from tierlab.api import RejectUnknownFields, StrictCharField
from tierlab.dashboard import variants


class DuplicateSerializer(RejectUnknownFields, serializers.Serializer):
    name = StrictCharField(max_length=200, required=False, allow_blank=True, default="",
                           help_text="Default: “Copy of <name>”.")


class VariantsSerializer(RejectUnknownFields, serializers.Serializer):
    question = serializers.ChoiceField(choices=list(variants.QUESTIONS.items()),
                                       help_text="sharding | offload | checkpoint")
