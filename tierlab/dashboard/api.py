"""REST API: comparisons, sweeps (with cancel), share links, the shared view, forks and
exports. Owners and their team see a comparison or sweep (others get 404, see
``tierlab.access``); only the owner changes it (403 for the team); a bad request is a 400
naming the field, and an id in the body that is the team's, not yours (comparing, sweeping
or sharing a teammate's scenario) a 403 naming it; a share link needs no account."""

from django.http import Http404
from django_filters.rest_framework import DjangoFilterBackend
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import exceptions, mixins, permissions, status, viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import ValidationError
from rest_framework.response import Response
from rest_framework.views import APIView

from simulation import ScenarioError
from tierlab.access import API_PERMISSIONS, get_visible_or_404
from tierlab.dashboard import comparisons, exports, plans, sharing, sweeps, variants
from tierlab.dashboard.comparisons import InputError, NotYours
from tierlab.dashboard.filters import ComparisonFilter, PlanFilter, SweepFilter
from tierlab.dashboard.models import Comparison, Plan, ShareLink, Sweep
from tierlab.dashboard.serializers import (ComparisonCreateSerializer, ComparisonListSerializer,
                                           ComparisonSerializer, DuplicateSerializer, ForkSerializer,
                                           PlanCreateSerializer, PlanListSerializer, PlanSaveSerializer,
                                           PlanSerializer,
                                           ShareCreateSerializer, ShareLinkSerializer, SharedSerializer,
                                           SweepCreateSerializer, SweepListSerializer, SweepSerializer,
                                           VariantsSerializer)
from tierlab.scenarios.api import Pages
from tierlab.idempotency import IDEMPOTENCY_KEY, idempotent
from tierlab.scenarios.models import Run, Scenario
from tierlab.scenarios.serializers import ScenarioSerializer, scenario_error_detail


def bad_request(exc) -> exceptions.APIException:
    """A 400 ``{field: [message], ...}`` from an InputError or a ScenarioError(s); a 403
    ``{"detail": "<field>: <message>"}`` from NotYours (a teammate's object, read-only)."""
    if isinstance(exc, NotYours):
        return exceptions.PermissionDenied(f"{exc.field}: {exc.message}")
    detail: dict = {}
    for e in getattr(exc, "errors", None) or [exc]:          # every field of a ScenarioErrors
        detail.setdefault(e.field or "body", []).append(e.message)
    return ValidationError(detail)


class Gone(exceptions.APIException):
    status_code = status.HTTP_410_GONE
    default_detail = "This share link was revoked by its owner."
    default_code = "revoked"


def _fake(view) -> bool:
    return getattr(view, "swagger_fake_view", False)   # schema generation


FILE = {(200, "application/json"): OpenApiTypes.OBJECT}
CSV = {(200, "text/csv"): OpenApiTypes.STR}
PYTHON = {(200, "text/x-python"): OpenApiTypes.STR}


# ---------------------------------------------------------------- comparisons
class ComparisonViewSet(mixins.CreateModelMixin, viewsets.ReadOnlyModelViewSet):
    """Your comparisons and your team's. POST `{scenarios: [ids], name?}` (2–8 of your
    scenarios) starts a run of each (identical inputs reuse a stored result) and returns 201.
    Filter with `?q=`, `?owner=`, `?scenario=`."""

    pagination_class = Pages
    permission_classes = API_PERMISSIONS
    filter_backends = [DjangoFilterBackend]
    filterset_class = ComparisonFilter

    def get_queryset(self):
        if _fake(self):
            return Comparison.objects.none()
        return Comparison.objects.visible_to(self.request.user).select_related("owner").prefetch_related("items")

    def get_serializer_class(self):
        if self.action == "create":
            return ComparisonCreateSerializer
        return ComparisonListSerializer if self.action == "list" else ComparisonSerializer

    @extend_schema(request=ComparisonCreateSerializer, responses={201: ComparisonSerializer},
                   parameters=[IDEMPOTENCY_KEY])
    @idempotent
    def create(self, request, *args, **kwargs):
        serializer = ComparisonCreateSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        try:
            comparison = comparisons.create_comparison(request.user, serializer.validated_data["scenarios"],
                                                       serializer.validated_data["name"])
        except InputError as exc:
            raise bad_request(exc) from None
        return Response(ComparisonSerializer(comparison).data, status=status.HTTP_201_CREATED,
                        headers={"Location": f"/api/v1/comparisons/{comparison.pk}/"})


# ---------------------------------------------------------------- sweeps
class SweepViewSet(mixins.CreateModelMixin, viewsets.ReadOnlyModelViewSet):
    """Your sweeps and your team's. POST `{scenario: id, axes: [{path, values}], name?}` queues
    one Celery task per chunk of points (202); GET follows progress and results; POST cancel/
    (its owner) stops it. Filter with `?status=`, `?q=`, `?owner=`, `?scenario=`."""

    pagination_class = Pages
    permission_classes = API_PERMISSIONS
    filter_backends = [DjangoFilterBackend]
    filterset_class = SweepFilter

    def get_queryset(self):
        if _fake(self):
            return Sweep.objects.none()
        return Sweep.objects.visible_to(self.request.user).select_related("base", "owner")

    def get_serializer_class(self):
        if self.action == "create":
            return SweepCreateSerializer
        return SweepListSerializer if self.action == "list" else SweepSerializer

    @extend_schema(request=SweepCreateSerializer, responses={202: SweepSerializer}, parameters=[IDEMPOTENCY_KEY])
    @idempotent
    def create(self, request, *args, **kwargs):
        serializer = SweepCreateSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        try:
            sweep = sweeps.create_sweep(request.user, data["scenario"], data["axes"], data["name"])
        except (InputError, ScenarioError) as exc:
            raise bad_request(exc) from None
        return Response(SweepSerializer(sweep).data, status=status.HTTP_202_ACCEPTED,
                        headers={"Location": f"/api/v1/sweeps/{sweep.pk}/"})

    @extend_schema(request=None, responses={200: SweepSerializer})
    @action(detail=True, methods=["post"])
    def cancel(self, request, pk=None):
        """Stop a queued or running sweep; points already evaluated keep their results."""
        try:
            sweep = sweeps.cancel_sweep(self.get_object())
        except InputError as exc:
            raise bad_request(exc) from None
        return Response(SweepSerializer(sweep).data)


# ---------------------------------------------------------------- plans
class PlanViewSet(mixins.CreateModelMixin, viewsets.ReadOnlyModelViewSet):
    """Your plans and your team's: the planner's search for the best configuration of a model
    on a cluster. POST `{spec, name?}` queues one Celery task per chunk of the candidate space
    (202); GET follows progress (done, feasible, best so far) and, once finished, the ranked
    answer, the Pareto front and the rejected counts; POST cancel/ (its owner) stops it; POST
    save/ `{rank}` saves a ranked candidate as your scenario; POST compare/ compares the top three.
    Filter with `?status=`, `?q=`, `?owner=`."""

    pagination_class = Pages
    permission_classes = API_PERMISSIONS
    filter_backends = [DjangoFilterBackend]
    filterset_class = PlanFilter

    def get_queryset(self):
        if _fake(self):
            return Plan.objects.none()
        return Plan.objects.visible_to(self.request.user).select_related("owner")

    def get_serializer_class(self):
        if self.action == "create":
            return PlanCreateSerializer
        return PlanListSerializer if self.action == "list" else PlanSerializer

    @extend_schema(request=PlanCreateSerializer, responses={202: PlanSerializer}, parameters=[IDEMPOTENCY_KEY])
    @idempotent
    def create(self, request, *args, **kwargs):
        serializer = PlanCreateSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        try:
            plan = plans.create_plan(request.user, data["spec"], data["name"])
        except (InputError, ScenarioError) as exc:
            raise bad_request(exc) from None
        return Response(PlanSerializer(plan).data, status=status.HTTP_202_ACCEPTED,
                        headers={"Location": f"/api/v1/plans/{plan.pk}/"})

    def _own(self):
        plan = self.get_object()
        if plan.owner_id != self.request.user.pk:
            raise exceptions.PermissionDenied(f"plan {plan.pk} is {plan.owner.get_username()}'s: only its owner can change it")
        return plan

    @extend_schema(request=None, responses={200: PlanSerializer})
    @action(detail=True, methods=["post"])
    def cancel(self, request, pk=None):
        """Stop a queued or running plan; chunks already finished keep their results."""
        try:
            plan = plans.cancel_plan(self._own())
        except InputError as exc:
            raise bad_request(exc) from None
        return Response(PlanSerializer(plan).data)

    @extend_schema(request=PlanSaveSerializer, responses={201: ScenarioSerializer})
    @action(detail=True, methods=["post"])
    def save(self, request, pk=None):
        """Save ranked candidate `rank` (1 = best) as a new scenario of yours."""
        serializer = PlanSaveSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        try:
            sc = plans.save_as_scenario(request.user, self.get_object(), serializer.validated_data["rank"],
                                        serializer.validated_data["name"])
        except InputError as exc:
            raise bad_request(exc) from None
        return Response(ScenarioSerializer(sc, context={"request": request}).data, status=status.HTTP_201_CREATED,
                        headers={"Location": f"/api/v1/scenarios/{sc.pk}/"})

    @extend_schema(request=None, responses={201: ComparisonSerializer})
    @action(detail=True, methods=["post"])
    def compare(self, request, pk=None):
        """Save the top three candidates as your scenarios and compare them (a run each)."""
        try:
            comparison = plans.compare_top(request.user, self.get_object())
        except (InputError, ScenarioError) as exc:
            raise bad_request(exc) from None
        return Response(ComparisonSerializer(comparison).data, status=status.HTTP_201_CREATED,
                        headers={"Location": f"/api/v1/comparisons/{comparison.pk}/"})


# ---------------------------------------------------------------- share links
class ShareLinkViewSet(mixins.CreateModelMixin, viewsets.ReadOnlyModelViewSet):
    """Your share links. POST `{scenario: id}` (or `comparison`, `sweep`) makes a new
    read-only link; POST revoke/ ends it. Filter with `?scenario=`, `?comparison=`, `?sweep=`."""

    serializer_class = ShareLinkSerializer
    pagination_class = Pages

    def get_queryset(self):
        if _fake(self):
            return ShareLink.objects.none()
        qs = ShareLink.objects.filter(owner=self.request.user).select_related("scenario", "comparison", "sweep",
                                                                              "plan")
        for kind in ShareLink.KINDS:
            value = self.request.query_params.get(kind)
            if value is not None:
                try:
                    qs = qs.filter(**{f"{kind}_id": comparisons.parse_id(value, kind)})
                except InputError as exc:
                    raise bad_request(exc) from None
        return qs

    @extend_schema(parameters=[OpenApiParameter(k, int, description=f"only links to this {k}")
                               for k in ShareLink.KINDS])
    def list(self, request, *args, **kwargs):
        return super().list(request, *args, **kwargs)

    @extend_schema(request=ShareCreateSerializer, responses={201: ShareLinkSerializer})
    def create(self, request, *args, **kwargs):
        serializer = ShareCreateSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        try:
            link = sharing.create_share(request.user, serializer.validated_data["kind"],
                                        serializer.validated_data["id"])
        except InputError as exc:
            raise bad_request(exc) from None
        return Response(ShareLinkSerializer(link, context={"request": request}).data,
                        status=status.HTTP_201_CREATED)

    @extend_schema(request=None, responses={200: ShareLinkSerializer})
    @action(detail=True, methods=["post"])
    def revoke(self, request, pk=None):
        """End the link: from now on it answers 410 Gone. Revoking twice is harmless."""
        link = self.get_object()
        link.revoke()
        return Response(ShareLinkSerializer(link, context={"request": request}).data)


def open_shared(token: str) -> ShareLink:
    """The active link, or 404 (no such token) / 410 (revoked)."""
    try:
        return sharing.open_link(token)
    except ShareLink.DoesNotExist:
        raise exceptions.NotFound("No share link with this token.") from None
    except sharing.Revoked:
        raise Gone() from None


class SharedView(APIView):
    """What a share link shows, read-only, to anyone who has the token (no login)."""

    permission_classes = [permissions.AllowAny]

    @extend_schema(responses={200: SharedSerializer})   # 404 and 410: tierlab.schema
    def get(self, request, token):
        return Response(SharedSerializer(sharing.shared_payload(open_shared(token))).data)


class ForkView(APIView):
    """Copy what a share link shows into your account (login required): 201 `{kind, id, url}`."""

    @extend_schema(request=None, responses={201: ForkSerializer})
    def post(self, request, token):
        link = open_shared(token)
        try:
            obj = sharing.fork(link, request.user)
        except (InputError, ScenarioError) as exc:
            raise bad_request(exc) from None
        return Response({"kind": link.kind, "id": obj.pk, "url": obj.get_absolute_url()},
                        status=status.HTTP_201_CREATED)


# ---------------------------------------------------------------- scenarios: duplicate, exports
def _scenario_export(spec: dict, name: str, what: str):
    try:
        if what == "deepspeed.json":
            return exports.json_download(exports.deepspeed_config(spec), exports.filename(f"{name}-deepspeed", "json"))
        return exports.download(exports.fsdp_snippet(spec), "text/x-python; charset=utf-8",
                                exports.filename(f"{name}-fsdp", "py"))
    except ScenarioError as exc:
        raise ValidationError(scenario_error_detail(exc)) from None


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


class DeepSpeedConfigView(APIView):
    """A DeepSpeed config JSON for the scenario's strategy (download)."""

    @extend_schema(responses=FILE)
    def get(self, request, pk):
        scenario = get_visible_or_404(Scenario, request.user, pk=pk)
        return _scenario_export(scenario.spec, scenario.name, "deepspeed.json")


class FSDPSnippetView(APIView):
    """A PyTorch FSDP wrapping snippet for the scenario's strategy (download)."""

    @extend_schema(responses=PYTHON)
    def get(self, request, pk):
        scenario = get_visible_or_404(Scenario, request.user, pk=pk)
        return _scenario_export(scenario.spec, scenario.name, "fsdp.py")


def _report(run: Run | None):
    if run is None:
        raise ValidationError({"run": ["there is no run of this scenario yet"]})
    if run.status != Run.Status.SUCCEEDED or not run.result:
        raise ValidationError({"status": [f"run {run.pk} is {run.status}; its report exists once it succeeds"]})
    return exports.json_download(run.result, exports.filename(f"{run.scenario.name}-run-{run.pk}-report", "json"))


class RunReportView(APIView):
    """The engine's report of a run of yours or your team's, as a JSON download."""

    @extend_schema(responses=FILE)
    def get(self, request, pk):
        return _report(get_visible_or_404(Run.objects.select_related("scenario"), request.user, pk=pk))


class ComparisonCSVView(APIView):
    """The comparison table as CSV: outputs (with the best column named), then inputs."""

    @extend_schema(responses=CSV)
    def get(self, request, pk):
        comparison = get_visible_or_404(Comparison, request.user, pk=pk)
        return exports.download(exports.comparison_csv(comparisons.comparison_payload(comparison)),
                                "text/csv; charset=utf-8", exports.filename(comparison.name, "csv"))


class SharedExportView(APIView):
    """Downloads of a shared object, without login: `export.csv` (comparison);
    `report.json`, `deepspeed.json`, `fsdp.py` (scenario)."""

    permission_classes = [permissions.AllowAny]
    FILES = {"comparison": ("export.csv",), "scenario": ("report.json", "deepspeed.json", "fsdp.py"),
             "sweep": ()}

    @extend_schema(operation_id="v1_shared_file_retrieve", responses={**FILE, **CSV, **PYTHON})
    def get(self, request, token, filename):
        link = open_shared(token)
        if filename not in self.FILES[link.kind]:
            raise Http404
        target = link.target
        if filename == "export.csv":
            return exports.download(exports.comparison_csv(comparisons.comparison_payload(target)),
                                    "text/csv; charset=utf-8", exports.filename(target.name, "csv"))
        if filename == "report.json":
            return _report(comparisons.latest_run(target))
        return _scenario_export(target.spec, target.name, filename)
