"""Comparisons (2–8 scenarios side by side), sweeps (a grid of points run in chunks), plans
(a planner search run in chunks) and share links (an unguessable read-only token for any of
them or a scenario).

The rows are the truth: a comparison points at one run per scenario; a sweep's or plan's
progress and results live on its chunks, each written by one Celery task.

The models live in one module per object (``comparisons``, ``sweeps``, ``plans``, ``sharing``);
this package re-exports them all so ``tierlab.dashboard.models.X`` and the migrations
(``tierlab.dashboard.models.new_token``) keep working.
"""

from tierlab.dashboard.models.comparisons import MAX_COMPARED, MIN_COMPARED, Comparison, ComparisonItem
from tierlab.dashboard.models.plans import Plan, PlanChunk
from tierlab.dashboard.models.sharing import SHARE_KINDS, ShareLink, new_token
from tierlab.dashboard.models.sweeps import Sweep, SweepChunk

__all__ = [
    "MAX_COMPARED", "MIN_COMPARED", "SHARE_KINDS",
    "Comparison", "ComparisonItem", "Plan", "PlanChunk", "ShareLink", "Sweep", "SweepChunk",
    "new_token",
]
