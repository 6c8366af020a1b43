"""REST API for scenarios, runs and the live estimate.

Who sees and changes what is ``tierlab.access``: the owner and their team see a scenario
and its runs (others get 404); only the owner starts runs (a team member gets 403).
"""

from django_filters.rest_framework import DjangoFilterBackend
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema, extend_schema_view
from rest_framework import mixins, status, viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import ValidationError
from rest_framework.response import Response
from rest_framework.views import APIView

from simulation import ScenarioError
from tierlab import jobs
from tierlab.access import API_PERMISSIONS
from tierlab.api import StrictPageNumberPagination, engine_error_detail, reject_body
from tierlab.editing import RenameDeleteMixin, delete_schema, rename_schema
from tierlab.idempotency import IDEMPOTENCY_KEY, idempotent
from tierlab.scenarios import profiles, services
from tierlab.scenarios.filters import RunFilter, ScenarioFilter
from tierlab.scenarios.models import ClusterProfile, Run, Scenario
from tierlab.scenarios.serializers import (ClusterProfileSerializer, EstimateRequestSerializer, RunListSerializer, RunSerializer,
                                           ScenarioSerializer, scenario_error_detail)


class Pages(StrictPageNumberPagination):
    page_size = 50
    page_size_query_param = "page_size"
    max_page_size = 500


@extend_schema_view(
    partial_update=rename_schema(ScenarioSerializer, "scenario"),
    destroy=delete_schema("scenario", "Its runs go with it (a queued or running one is cancelled "
                          "first); a sweep made from it keeps its own copy.", in_use=(
                              "Saved comparisons use the scenario: `{\"detail\": \"...\", \"comparisons\": "
                              "[{\"id\", \"name\"}]}`; nothing is deleted. Delete those comparisons first.")))
class ScenarioViewSet(RenameDeleteMixin, mixins.CreateModelMixin, viewsets.ReadOnlyModelViewSet):
    """Your scenarios and your team's. POST `{name, scenario}`; the engine validates it first.
    PATCH `{name}` renames it and DELETE deletes it (its owner; the scenario itself and its
    results never change: duplicate it to change it). Filter with `?q=` (name contains) and
    `?owner=` (username)."""

    serializer_class = ScenarioSerializer
    pagination_class = Pages
    throttle_scopes = {"POST runs": "runs"}           # tierlab.throttling
    permission_classes = API_PERMISSIONS
    filter_backends = [DjangoFilterBackend]
    filterset_class = ScenarioFilter

    def get_queryset(self):
        if getattr(self, "swagger_fake_view", False):   # schema generation
            return Scenario.objects.none()
        return Scenario.objects.visible_to(self.request.user).select_related("owner")

    def perform_create(self, serializer):
        data = serializer.validated_data
        try:
            serializer.instance = services.create_scenario(self.request.user, data["name"], data["spec"])
        except ScenarioError as exc:
            raise ValidationError(scenario_error_detail(exc)) from None

    def delete_object(self, obj):
        from tierlab.dashboard import removal

        removal.delete_scenario(obj, self.request.user)

    @extend_schema(methods=["GET"], responses=RunListSerializer(many=True), filters=False, parameters=[
        OpenApiParameter("status", str, enum=Run.Status.values, description="Only runs in this state.")])
    @extend_schema(methods=["POST"], request=None, responses={202: RunSerializer}, parameters=[IDEMPOTENCY_KEY])
    @action(detail=True, methods=["get", "post"])
    @idempotent(lambda view, pk: RunSerializer(Run.objects.select_related("scenario__owner").get(pk=pk)).data)
    def runs(self, request, pk=None):
        """GET: this scenario's runs (paginated; `?status=`), each with a `summary` of its
        report (the report: GET `/api/v1/runs/{id}/`). POST (its owner; no body, or `{}`): start
        a run (202), or reuse an identical result; send `Idempotency-Key` to make retries safe."""
        scenario = self.get_object()
        if request.method == "GET":
            services.fail_stale_runs()
            runs = RunFilter({"status": request.query_params.get("status")},
                             queryset=RunListSerializer.queryset(scenario.runs.all()), request=request)
            if not runs.is_valid():
                raise ValidationError(runs.errors)
            page = self.paginate_queryset(runs.qs)
            return self.get_paginated_response(RunListSerializer(page, many=True).data)
        reject_body(request)
        try:
            run = services.start_run(scenario)
        except jobs.TooManyActive:
            raise                         # 409 (tierlab.api.exception_handler)
        except ScenarioError as exc:
            raise ValidationError(scenario_error_detail(exc)) from None
        return Response(RunSerializer(run).data, status=status.HTTP_202_ACCEPTED,
                        headers={"Location": f"/api/v1/runs/{run.pk}/"})


class RunViewSet(viewsets.ReadOnlyModelViewSet):
    """Runs of your scenarios and your team's. A run whose worker died reads back as failed;
    POST cancel/ (its owner) stops one. The list carries a `summary` of each report; a run's
    own URL has the report (`result`). Filter with `?status=` and `?scenario=`."""

    pagination_class = Pages
    permission_classes = API_PERMISSIONS
    filter_backends = [DjangoFilterBackend]
    filterset_class = RunFilter

    def get_queryset(self):
        if getattr(self, "swagger_fake_view", False):   # schema generation
            return Run.objects.none()
        services.fail_stale_runs()
        runs = Run.objects.visible_to(self.request.user)
        if self.action == "list":
            return RunListSerializer.queryset(runs)
        return runs.select_related("scenario__owner")

    def get_serializer_class(self):
        return RunListSerializer if self.action == "list" else RunSerializer

    @extend_schema(request=None, responses={200: RunSerializer})
    @action(detail=True, methods=["post"])
    def cancel(self, request, pk=None):
        """Stop a queued or running run (its owner; no body, or `{}`): it reads back `failed`
        with the error "cancelled by <user>"; a running one stops at its next progress step."""
        run = self.get_object()
        reject_body(request)
        try:
            run = services.cancel_run(run, request.user)
        except services.RunStateError as exc:
            raise ValidationError({exc.field: [exc.message]}) from None
        return Response(RunSerializer(run).data)


class EstimateView(APIView):
    """Evaluate `{"scenario": {...}}` now and return the engine's report (`fits`, memory per tier).

    Memory only unless `"include_step": true` (then also step time, breakdown, links, verdict
    and checkpoint goodput); `"detail": true` adds the step timeline and the checkpoint
    Monte-Carlo, as a run's report has them.

    Only what the engine's cost bound puts under `ESTIMATE_MAX_WORK_UNITS` is evaluated in
    the request; more is a 413 naming the field that drives the work (`{"scenario.<field>":
    [...]}`): save the scenario and start a run, which a worker evaluates.
    """

    throttle_scopes = {"POST": "estimate"}           # tierlab.throttling
    body_limit_setting = "ESTIMATE_MAX_BODY_BYTES"   # tierlab.api.body_limit

    @extend_schema(request=EstimateRequestSerializer, responses={
        200: OpenApiTypes.OBJECT,
        413: OpenApiResponse(OpenApiTypes.OBJECT, description=(
            "Request body over ESTIMATE_MAX_BODY_BYTES (`{\"body\": [...]}`), or a valid "
            "scenario whose evaluation is over ESTIMATE_MAX_WORK_UNITS (`{\"scenario.<field>\": "
            "[...]}`, the field that drives the work): save it and start a run."))})
    def post(self, request):
        serializer = EstimateRequestSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        try:
            data = serializer.validated_data
            report = services.estimate(data["scenario"], include_step=data["include_step"],
                                       detail=data["detail"],
                                       step_if_within_limit=data["step_if_within_limit"],
                                       user=request.user)
        except ScenarioError as exc:
            raise ValidationError(scenario_error_detail(exc)) from None
        except services.TooMuchWork as exc:
            return Response(scenario_error_detail(exc), status=status.HTTP_413_REQUEST_ENTITY_TOO_LARGE)
        return Response(report)


IN_USE_REFIT = OpenApiResponse(OpenApiTypes.OBJECT, description=(
    "Saved scenarios use the profile and the refit would leave them unable to run (another "
    "node or accelerator, or figures they fail with): `{\"detail\": \"...\", \"scenarios\": "
    "[{\"id\", \"name\"}]}` (yours and your team's); nothing is changed. Make a new profile."))


class ClusterProfileViewSet(viewsets.ModelViewSet):
    """Cluster profiles: your own and your team's. POST `{name, measurements}`: tierlab fits
    the cluster's figures to what you measured (`figures`, and per measurement `fits`) and
    saves them; a scenario uses them with `"cluster": {"profile": <id>}`. PUT/PATCH (its
    owner) refits; scenarios naming it get the new figures from their next run on (a refit
    that would leave them unable to run, e.g. on another node, is a 409 naming them). Bad
    measurements are a 400 naming every bad field at once (`measurements.steps[0].step_s`,
    `measurements.collectives[1].ranks`)."""

    serializer_class = ClusterProfileSerializer
    pagination_class = Pages
    throttle_scopes = {"POST": "profile_fits", "PUT": "profile_fits", "PATCH": "profile_fits"}
    permission_classes = API_PERMISSIONS

    def get_queryset(self):
        if getattr(self, "swagger_fake_view", False):   # schema generation
            return ClusterProfile.objects.none()
        return ClusterProfile.objects.visible_to(self.request.user).select_related("owner")

    def perform_create(self, serializer):
        data = serializer.validated_data
        try:
            serializer.instance = profiles.create_profile(self.request.user, data["name"], data["measurements"])
        except ScenarioError as exc:
            raise ValidationError(engine_error_detail(exc)) from None

    @extend_schema(responses={204: None, 409: OpenApiResponse(OpenApiTypes.OBJECT, description=(
        "Saved scenarios use the profile (`\"cluster\": {\"profile\": <id>}`): `{\"detail\": "
        "\"...\", \"scenarios\": [{\"id\", \"name\"}]}` (yours and your team's); nothing is deleted."))})
    def destroy(self, request, *args, **kwargs):
        """Delete the profile (its owner), unless a saved scenario uses it: then 409 naming
        them, since they could no longer run."""
        profile = self.get_object()
        refusal = profiles.in_use_message(profile, request.user)
        if refusal is not None:
            detail, listed = refusal
            return Response({"detail": detail, "scenarios": listed}, status=status.HTTP_409_CONFLICT)
        profile.delete()
        return Response(status=status.HTTP_204_NO_CONTENT)

    @extend_schema(responses={200: ClusterProfileSerializer, 409: IN_USE_REFIT})
    def update(self, request, *args, **kwargs):
        """Refit the profile (its owner). While saved scenarios use it, it keeps the cluster
        it was fitted on: measurements of another node or accelerator, or figures those
        scenarios could not run with, are a 409 naming them (make a new profile instead)."""
        try:
            return super().update(request, *args, **kwargs)
        except profiles.ProfileInUse as exc:
            return Response({"detail": exc.detail, "scenarios": exc.scenarios}, status=status.HTTP_409_CONFLICT)

    @extend_schema(responses={200: ClusterProfileSerializer, 409: IN_USE_REFIT})
    def partial_update(self, request, *args, **kwargs):
        """As PUT, with only the fields given."""
        return super().partial_update(request, *args, **kwargs)

    def perform_update(self, serializer):
        data, profile = serializer.validated_data, serializer.instance
        try:
            serializer.instance = profiles.refit_profile(
                profile, data.get("name", profile.name), data.get("measurements", profile.measurements),
                user=self.request.user)
        except ScenarioError as exc:
            raise ValidationError(engine_error_detail(exc)) from None
