"""Query filters shared by the list endpoints (django-filter): ids in range, states, names.

A value that does not parse (``?status=nope``, ``?scenario=abc``) is a 400 naming the
parameter, like any other bad input; so is an empty id or state (``?status=``), which the
schema does not allow either: leave the parameter out to list everything.
"""

import django_filters
from django import forms
from django_filters.fields import ChoiceField
from drf_spectacular.utils import extend_schema_field

MAX_ID = 2**63 - 1     # the largest primary key a database column holds


class _NotEmpty:
    def clean(self, value):
        if value == "":            # present but empty; an absent parameter is None
            raise forms.ValidationError("must not be empty (leave the parameter out to list all)")
        return super().clean(value)


class _IdField(_NotEmpty, forms.IntegerField):
    pass


class _ChoiceField(_NotEmpty, ChoiceField):
    pass


@extend_schema_field({"type": "integer", "minimum": 1, "maximum": MAX_ID})
class IdFilter(django_filters.NumberFilter):
    """An object id: a whole number from 1 (a larger one than any key is a 400, not a 500)."""

    field_class = _IdField

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("min_value", 1)
        kwargs.setdefault("max_value", MAX_ID)
        super().__init__(*args, **kwargs)


class StatusFilter(django_filters.ChoiceFilter):
    """One of the model's states."""

    field_class = _ChoiceField


def name_search() -> django_filters.CharFilter:
    return django_filters.CharFilter(field_name="name", lookup_expr="icontains",
                                     label="Only those whose name contains this text (any case).")


def owner_filter() -> django_filters.CharFilter:
    return django_filters.CharFilter(field_name="owner__username",
                                     label="Only those of this user (you, or a member of your team).")
