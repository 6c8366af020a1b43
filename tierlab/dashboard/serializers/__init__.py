"""API shapes for comparisons, sweeps, plans, share links and the actions on one scenario, one
module each (``comparisons``, ``sweeps``, ``plans``, ``sharing``, ``scenarios``); re-exported
here so ``tierlab.dashboard.serializers.X`` keeps working."""

from tierlab.dashboard.serializers.common import owner_field
from tierlab.dashboard.serializers.comparisons import (ComparisonCreateSerializer, ComparisonListSerializer,
                                                       ComparisonSerializer)
from tierlab.dashboard.serializers.plans import (PlanCreateSerializer, PlanListSerializer, PlanSaveSerializer,
                                                 PlanSerializer)
from tierlab.dashboard.serializers.scenarios import DuplicateSerializer, VariantsSerializer
from tierlab.dashboard.serializers.sharing import (ForkSerializer, ShareCreateSerializer, SharedSerializer,
                                                   ShareLinkSerializer)
from tierlab.dashboard.serializers.sweeps import (AxisSerializer, SweepCreateSerializer, SweepListSerializer,
                                                  SweepSerializer)

__all__ = [
    "AxisSerializer", "ComparisonCreateSerializer", "ComparisonListSerializer", "ComparisonSerializer",
    "DuplicateSerializer", "ForkSerializer", "PlanCreateSerializer", "PlanListSerializer",
    "PlanSaveSerializer", "PlanSerializer", "ShareCreateSerializer", "SharedSerializer",
    "ShareLinkSerializer", "SweepCreateSerializer", "SweepListSerializer", "SweepSerializer",
    "VariantsSerializer", "owner_field",
]
