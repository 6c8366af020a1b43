"""REST API of sweeps: list, detail, create (one Celery task per chunk of points), cancel."""

from django_filters.rest_framework import DjangoFilterBackend
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema, extend_schema_view
from rest_framework import mixins, serializers, status, viewsets
from rest_framework.decorators import action
from rest_framework.response import Response

from simulation import ScenarioError
from tierlab.access import API_PERMISSIONS
from tierlab.api import reject_body
from tierlab.dashboard import removal, sweeps
from tierlab.dashboard.api.common import bad_request, schema_only
from tierlab.dashboard.comparisons import InputError
from tierlab.dashboard.filters import SweepFilter
from tierlab.dashboard.models import Sweep
from tierlab.dashboard.serializers.sweeps import SweepCreateSerializer, SweepListSerializer, SweepSerializer
from tierlab.editing import RenameDeleteMixin, delete_schema, rename_schema
from tierlab.idempotency import IDEMPOTENCY_KEY, idempotent
from tierlab.scenarios.api import Pages


POINTS_PARAMETER = OpenApiParameter(
    "points", OpenApiTypes.STR, OpenApiParameter.QUERY, required=False,
    description="Which points the detail carries: `all` (the default: every point), `none` (the light "
                "form a progress poll reads: a 10,000-point sweep's detail is about 7 MB with them), or "
                "`start:stop` (grid indices start <= index < stop, a page of them).")


def points_selection(raw: str | None) -> slice | None:
    """``?points=``: all (or absent) -> every point, none -> None, start:stop -> that slice.
    Raises ValidationError naming ``points``."""
    if raw is None or raw == "all":
        return slice(None)
    if raw == "none":
        return None
    start, sep, stop = raw.partition(":")
    if sep and start.isdigit() and stop.isdigit() and int(start) <= int(stop) and len(raw) <= 16:
        return slice(int(start), int(stop))
    raise serializers.ValidationError({"points": [f"must be all, none or start:stop (grid indices, "
                                                  f"start <= stop), got {raw[:40]!r}"]})


def with_points_url(data: dict, pk: int) -> dict:
    return dict(data, points_url=f"/api/v1/sweeps/{pk}/?points=all")


@extend_schema_view(
    partial_update=rename_schema(SweepSerializer, "sweep"),
    destroy=delete_schema("sweep", "A queued or running sweep is cancelled first: no chunk runs for it "
                          "afterwards."))
class SweepViewSet(RenameDeleteMixin, mixins.CreateModelMixin, viewsets.ReadOnlyModelViewSet):
    """Your sweeps and your team's. POST `{scenario: id, axes: [{path, values}], name?}` queues
    one Celery task per chunk of points (202; the response carries no points, `points_url`
    says where they are); GET follows progress and results (`?points=none` without the
    points, for a poll; `?points=start:stop` a page of them); POST cancel/ (its owner) stops
    it; PATCH `{name}` renames it and DELETE deletes it (its owner; a running one is cancelled
    first). Filter with `?status=`, `?q=`, `?owner=`, `?scenario=`."""

    pagination_class = Pages
    permission_classes = API_PERMISSIONS
    filter_backends = [DjangoFilterBackend]
    filterset_class = SweepFilter
    throttle_scopes = {"POST create": "sweeps"}      # tierlab.throttling

    def get_queryset(self):
        if schema_only(self):
            return Sweep.objects.none()
        rows = Sweep.objects.visible_to(self.request.user)
        if self.action == "list":        # a page in one query: no per-row progress sum, no JSON it never shows
            return rows.select_related("owner").defer("base_spec", "pareto").annotate(
                summed_finished=Sweep.finished_points_subquery())
        return rows.select_related("base", "owner")

    def get_serializer_class(self):
        if self.action == "create":
            return SweepCreateSerializer
        return SweepListSerializer if self.action == "list" else SweepSerializer

    @extend_schema(request=SweepCreateSerializer, responses={202: SweepSerializer}, parameters=[IDEMPOTENCY_KEY])
    @idempotent(lambda view, pk: view.renamed(Sweep.objects.get(pk=pk)))      # the light form, as made
    def create(self, request, *args, **kwargs):
        serializer = SweepCreateSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        try:
            sweep = sweeps.create_sweep(request.user, data["scenario"], data["axes"], data["name"])
        except (InputError, ScenarioError) as exc:
            raise bad_request(exc) from None
        data = SweepSerializer(sweep, context={"points": None}).data
        return Response(with_points_url(data, sweep.pk), status=status.HTTP_202_ACCEPTED,
                        headers={"Location": f"/api/v1/sweeps/{sweep.pk}/"})

    @extend_schema(parameters=[POINTS_PARAMETER], responses={200: SweepSerializer})
    def retrieve(self, request, *args, **kwargs):
        selection = points_selection(request.query_params.get("points"))
        sweep = self.get_object()
        return Response(with_points_url(SweepSerializer(sweep, context={"points": selection}).data, sweep.pk))

    @extend_schema(request=None, responses={200: SweepSerializer})
    @action(detail=True, methods=["post"])
    def cancel(self, request, pk=None):
        """Stop a queued or running sweep (its owner; no body, or `{}`); points already
        evaluated keep their results."""
        sweep = self.get_object()
        reject_body(request)
        try:
            sweep = sweeps.cancel_sweep(sweep)
        except InputError as exc:
            raise bad_request(exc) from None
        return Response(SweepSerializer(sweep).data)

    def delete_object(self, obj):
        removal.delete_sweep(obj)

    def renamed(self, obj):
        """The sweep without its points (they are at ``points_url``): after a rename, and a
        replayed create."""
        return with_points_url(SweepSerializer(obj, context={"points": None}).data, obj.pk)
