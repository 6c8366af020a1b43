"""What the dashboard's serializers share: the owner field."""

from rest_framework import serializers


def owner_field():
    return serializers.SlugRelatedField(slug_field="username", read_only=True,
                                        help_text="Username of its owner: you, or a member of your team.")
