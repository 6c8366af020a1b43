"""Pages: comparisons, sweeps, plans, share links and the shared view. Each looks its object up,
calls one service and renders or redirects; the front end mounts on the template's ids.

One module per object (``comparisons``, ``sweeps``, ``plans``, ``sharing``, ``scenarios``;
``common`` for what they share); the views are re-exported here for ``urls``."""

from tierlab.dashboard.views.comparisons import compare_detail, compare_index
from tierlab.dashboard.views.plans import plan_cancel, plan_compare, plan_detail, plan_new, plan_save
from tierlab.dashboard.views.scenarios import scenario_duplicate, scenario_variants
from tierlab.dashboard.views.sharing import share_create, share_revoke, shared, shared_fork
from tierlab.dashboard.views.sweeps import sweep_cancel, sweep_detail, sweep_new

__all__ = [
    "compare_detail", "compare_index", "plan_cancel", "plan_compare", "plan_detail", "plan_new",
    "plan_save", "scenario_duplicate", "scenario_variants", "share_create", "share_revoke", "shared",
    "shared_fork", "sweep_cancel", "sweep_detail", "sweep_new",
]
