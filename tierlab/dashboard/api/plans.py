"""REST API of plans: list, detail, create (one Celery task per chunk of candidates), cancel,
save a ranked candidate as a scenario, compare the top three."""

from django_filters.rest_framework import DjangoFilterBackend
from drf_spectacular.utils import extend_schema, extend_schema_view
from rest_framework import exceptions, mixins, status, viewsets
from rest_framework.decorators import action
from rest_framework.response import Response

from simulation import ScenarioError
from tierlab.access import API_PERMISSIONS
from tierlab.api import reject_body
from tierlab.dashboard import plans, removal
from tierlab.dashboard.api.common import bad_request, schema_only
from tierlab.dashboard.comparisons import InputError
from tierlab.dashboard.filters import PlanFilter
from tierlab.dashboard.models import Plan
from tierlab.dashboard.serializers.comparisons import ComparisonSerializer
from tierlab.dashboard.serializers.plans import (PlanCreateSerializer, PlanListSerializer,
                                                 PlanSaveSerializer, PlanSerializer)
from tierlab.editing import RenameDeleteMixin, delete_schema, rename_schema
from tierlab.idempotency import IDEMPOTENCY_KEY, idempotent
from tierlab.scenarios.api import Pages
from tierlab.scenarios.serializers import ScenarioSerializer


@extend_schema_view(
    partial_update=rename_schema(PlanSerializer, "plan"),
    destroy=delete_schema("plan", "A queued or running plan is cancelled first: no chunk runs for it "
                          "afterwards. Scenarios saved from it stay."))
class PlanViewSet(RenameDeleteMixin, mixins.CreateModelMixin, viewsets.ReadOnlyModelViewSet):
    """Your plans and your team's: the planner's search for the best configuration of a model
    on a cluster. POST `{spec, name?}` queues one Celery task per chunk of the candidate space
    (202); GET follows progress (done, feasible, best so far) and, once finished, the ranked
    answer, the Pareto front and the rejected counts; POST cancel/ (its owner) stops it; POST
    save/ `{rank}` saves a ranked candidate as your scenario; POST compare/ compares the top three;
    PATCH `{name}` renames it and DELETE deletes it (its owner; a running one is cancelled first).
    Filter with `?status=`, `?q=`, `?owner=`."""

    pagination_class = Pages
    permission_classes = API_PERMISSIONS
    filter_backends = [DjangoFilterBackend]
    filterset_class = PlanFilter
    throttle_scopes = {"POST create": "plans"}       # tierlab.throttling

    def get_queryset(self):
        if schema_only(self):
            return Plan.objects.none()
        rows = Plan.objects.visible_to(self.request.user).select_related("owner")
        if self.action == "list":        # the list shows neither the spec nor the merged answer
            rows = rows.defer("spec", "result")
        return rows

    def get_serializer_class(self):
        if self.action == "create":
            return PlanCreateSerializer
        return PlanListSerializer if self.action == "list" else PlanSerializer

    @extend_schema(request=PlanCreateSerializer, responses={202: PlanSerializer}, parameters=[IDEMPOTENCY_KEY])
    @idempotent(lambda view, pk: PlanSerializer(Plan.objects.get(pk=pk)).data)
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
        """Stop a queued or running plan (its owner; no body, or `{}`); chunks already
        finished keep their results."""
        plan = self._own()
        reject_body(request)
        try:
            plan = plans.cancel_plan(plan)
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
        """Save the top three candidates as your scenarios and compare them, a run each (its
        owner; no body, or `{}`)."""
        plan = self.get_object()
        reject_body(request)
        try:
            comparison = plans.compare_top(request.user, plan)
        except (InputError, ScenarioError) as exc:
            raise bad_request(exc) from None
        return Response(ComparisonSerializer(comparison).data, status=status.HTTP_201_CREATED,
                        headers={"Location": f"/api/v1/comparisons/{comparison.pk}/"})

    def delete_object(self, obj):
        removal.delete_plan(obj)
