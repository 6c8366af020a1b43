"""Page forms of the dashboard, one module per object (``sweeps``, ``plans``); re-exported here."""

from tierlab.dashboard.forms.plans import PlanForm
from tierlab.dashboard.forms.sweeps import SweepForm

__all__ = ["PlanForm", "SweepForm"]
