"""REST API of the dashboard's actions on one scenario: duplicate it, compare its variants."""

from drf_spectacular.utils import extend_schema
from rest_framework import status
from rest_framework.response import Response
from rest_framework.views import APIView

from tierlab.access import get_visible_or_404
from tierlab.dashboard import comparisons, variants
from tierlab.dashboard.api.common import bad_request
from tierlab.dashboard.comparisons import InputError
from tierlab.dashboard.serializers.comparisons import ComparisonSerializer
from tierlab.dashboard.serializers.scenarios import DuplicateSerializer, VariantsSerializer
from tierlab.scenarios.models import Scenario
from tierlab.scenarios.serializers import ScenarioSerializer


class DuplicateScenarioView(APIView):
    """Copy a scenario of yours or your team's into your account (a copy you can change):
    201 with the new scenario."""

    @extend_schema(request=DuplicateSerializer, responses={201: ScenarioSerializer})
    def post(self, request, pk):
        scenario = get_visible_or_404(Scenario, request.user, pk=pk)
        serializer = DuplicateSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        copy = comparisons.copy_scenario(scenario, request.user, serializer.validated_data["name"].strip() or None)
        return Response(ScenarioSerializer(copy).data, status=status.HTTP_201_CREATED,
                        headers={"Location": f"/api/v1/scenarios/{copy.pk}/"})


class VariantsView(APIView):
    """A question one comparison away: copies (in your account) of a scenario of yours or
    your team's that differ in one choice
    (`sharding`: ZeRO-2 / ZeRO-3 / FSDP hybrid; `offload`: CPU / NVMe / CXL; `checkpoint`:
    local NVMe / remote DRAM / parallel FS), saved and compared (201 with the comparison)."""

    @extend_schema(request=VariantsSerializer, responses={201: ComparisonSerializer})
    def post(self, request, pk):
        serializer = VariantsSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        get_visible_or_404(Scenario, request.user, pk=pk)
        try:
            comparison = variants.compare_variants(request.user, pk, serializer.validated_data["question"])
        except InputError as exc:
            raise bad_request(exc) from None
        return Response(ComparisonSerializer(comparison).data, status=status.HTTP_201_CREATED,
                        headers={"Location": f"/api/v1/comparisons/{comparison.pk}/"})
