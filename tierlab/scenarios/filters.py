"""Filters of the scenario and run lists: ``?q=`` name search, ``?owner=``, ``?status=``."""

import django_filters

from tierlab.filters import IdFilter, StatusFilter, name_search, owner_filter
from tierlab.scenarios.models import Run, Scenario


class ScenarioFilter(django_filters.FilterSet):
    q = name_search()
    owner = owner_filter()

    class Meta:
        model = Scenario
        fields = ["q", "owner"]


class RunFilter(django_filters.FilterSet):
    status = StatusFilter(choices=Run.Status.choices, label="Only runs in this state.")
    scenario = IdFilter(field_name="scenario", label="Only runs of this scenario.")

    class Meta:
        model = Run
        fields = ["status", "scenario"]
