"""Filters of the comparison, sweep and plan lists: ``?q=`` name search, ``?owner=``, ``?status=``."""

import django_filters

from tierlab.dashboard.models import Comparison, Plan, Sweep
from tierlab.filters import IdFilter, StatusFilter, name_search, owner_filter


class ComparisonFilter(django_filters.FilterSet):
    q = name_search()
    owner = owner_filter()
    scenario = IdFilter(field_name="items__scenario", distinct=True,
                        label="Only comparisons that include this scenario.")

    class Meta:
        model = Comparison
        fields = ["q", "owner", "scenario"]


class SweepFilter(django_filters.FilterSet):
    q = name_search()
    owner = owner_filter()
    status = StatusFilter(choices=Sweep.Status.choices, label="Only sweeps in this state.")
    scenario = IdFilter(field_name="base", label="Only sweeps of this base scenario.")

    class Meta:
        model = Sweep
        fields = ["q", "owner", "status", "scenario"]


class PlanFilter(django_filters.FilterSet):
    q = name_search()
    owner = owner_filter()
    status = StatusFilter(choices=Plan.Status.choices, label="Only plans in this state.")

    class Meta:
        model = Plan
        fields = ["q", "owner", "status"]
