"""Query filters shared by the list endpoints (django-filter): ids in range, name search.

A value that does not parse (``?status=nope``, ``?scenario=abc``) is a 400 naming the
parameter, like any other bad input.
"""

import django_filters
from django import forms
from drf_spectacular.utils import extend_schema_field

MAX_ID = 2**63 - 1     # the largest primary key a database column holds


@extend_schema_field({"type": "integer", "minimum": 1, "maximum": MAX_ID})
class IdFilter(django_filters.NumberFilter):
    """An object id: a whole number from 1 (a larger one than any key is a 400, not a 500)."""

    field_class = forms.IntegerField

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("min_value", 1)
        kwargs.setdefault("max_value", MAX_ID)
        super().__init__(*args, **kwargs)


def name_search(help_text: str = "Only those whose name contains this text (any case).") -> django_filters.CharFilter:
    return django_filters.CharFilter(field_name="name", lookup_expr="icontains", label=help_text)


def owner_filter() -> django_filters.CharFilter:
    return django_filters.CharFilter(field_name="owner__username",
                                     label="Only those of this user (you, or a member of your team).")
