"""REST API: comparisons, sweeps (with cancel), plans, share links, the shared view, forks and
exports. Owners and their team see a comparison or sweep (others get 404, see
``tierlab.access``); only the owner changes it (403 for the team); a bad request is a 400
naming the field, and an id in the body that is the team's, not yours (comparing, sweeping
or sharing a teammate's scenario) a 403 naming it; a share link needs no account.

One module per object (``comparisons``, ``sweeps``, ``plans``, ``sharing``, ``scenarios``,
``exports``; ``common`` for what they share); the views are re-exported here for ``urls``."""

from tierlab.dashboard.api.common import CSV, FILE, PYTHON, Gone, bad_request
from tierlab.dashboard.api.comparisons import ComparisonViewSet
from tierlab.dashboard.api.exports import (ComparisonCSVView, DeepSpeedConfigView, FSDPSnippetView,
                                           MegatronArgsView, RunReportView, SharedExportView, SweepCSVView)
from tierlab.dashboard.api.plans import PlanViewSet
from tierlab.dashboard.api.scenarios import DuplicateScenarioView, VariantsView
from tierlab.dashboard.api.sharing import ForkView, SharedView, ShareLinkViewSet, open_shared
from tierlab.dashboard.api.sweeps import SweepViewSet

__all__ = [
    "CSV", "FILE", "PYTHON", "ComparisonCSVView", "ComparisonViewSet", "DeepSpeedConfigView",
    "DuplicateScenarioView", "FSDPSnippetView", "ForkView", "Gone", "MegatronArgsView", "PlanViewSet",
    "RunReportView",
    "ShareLinkViewSet", "SharedExportView", "SharedView", "SweepCSVView", "SweepViewSet", "VariantsView",
    "bad_request", "open_shared",
]
