"""REST API for scenarios, runs and the live estimate. Owners see only their own rows."""

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema
from rest_framework import mixins, status, viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import ValidationError
from rest_framework.response import Response
from rest_framework.views import APIView

from simulation import ScenarioError
from tierlab.api import StrictPageNumberPagination
from tierlab.scenarios import services
from tierlab.scenarios.models import Run, Scenario
from tierlab.scenarios.serializers import (EstimateRequestSerializer, RunSerializer,
                                           ScenarioSerializer, scenario_error_detail)


class Pages(StrictPageNumberPagination):
    page_size = 50
    page_size_query_param = "page_size"
    max_page_size = 500


class ScenarioViewSet(mixins.CreateModelMixin, viewsets.ReadOnlyModelViewSet):
    """Your saved scenarios. POST `{name, scenario}`; the engine validates it first."""

    serializer_class = ScenarioSerializer
    pagination_class = Pages

    def get_queryset(self):
        if getattr(self, "swagger_fake_view", False):   # schema generation
            return Scenario.objects.none()
        return Scenario.objects.filter(owner=self.request.user)

    def perform_create(self, serializer):
        data = serializer.validated_data
        try:
            serializer.instance = services.create_scenario(self.request.user, data["name"], data["spec"])
        except ScenarioError as exc:
            raise ValidationError(scenario_error_detail(exc)) from None

    @extend_schema(request=None, responses={202: RunSerializer, 200: RunSerializer(many=True)})
    @action(detail=True, methods=["get", "post"])
    def runs(self, request, pk=None):
        """GET: this scenario's runs. POST: start a run (202), or reuse an identical result."""
        scenario = self.get_object()
        if request.method == "GET":
            services.fail_stale_runs()
            return Response(RunSerializer(scenario.runs.all(), many=True).data)
        try:
            run = services.start_run(scenario)
        except ScenarioError as exc:
            raise ValidationError(scenario_error_detail(exc)) from None
        return Response(RunSerializer(run).data, status=status.HTTP_202_ACCEPTED,
                        headers={"Location": f"/api/v1/runs/{run.pk}/"})


class RunViewSet(viewsets.ReadOnlyModelViewSet):
    """Runs of your scenarios. A run whose worker died reads back as failed."""

    serializer_class = RunSerializer
    pagination_class = Pages

    def get_queryset(self):
        if getattr(self, "swagger_fake_view", False):   # schema generation
            return Run.objects.none()
        services.fail_stale_runs()
        return Run.objects.filter(scenario__owner=self.request.user).select_related("scenario")


class EstimateView(APIView):
    """Evaluate `{"scenario": {...}}` now and return the engine's report (`fits`, memory per tier).

    Memory only unless `"include_step": true` (then also step time, links and timeline).
    """

    @extend_schema(request=EstimateRequestSerializer, responses={200: OpenApiTypes.OBJECT})
    def post(self, request):
        serializer = EstimateRequestSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        try:
            data = serializer.validated_data
            report = services.estimate(data["scenario"], include_step=data["include_step"])
        except ScenarioError as exc:
            raise ValidationError(scenario_error_detail(exc)) from None
        return Response(report)
