"""REST API of comparisons: list, detail, create (a run of each scenario)."""

from django_filters.rest_framework import DjangoFilterBackend
from drf_spectacular.utils import extend_schema, extend_schema_view
from rest_framework import mixins, status, viewsets
from rest_framework.response import Response

from tierlab.access import API_PERMISSIONS
from tierlab.dashboard import comparisons, removal
from tierlab.dashboard.api.common import bad_request, schema_only
from tierlab.dashboard.comparisons import InputError
from tierlab.dashboard.filters import ComparisonFilter
from tierlab.dashboard.models import Comparison
from tierlab.dashboard.serializers.comparisons import (ComparisonCreateSerializer, ComparisonListSerializer,
                                                       ComparisonSerializer)
from tierlab.editing import RenameDeleteMixin, delete_schema, rename_schema
from tierlab.idempotency import IDEMPOTENCY_KEY, idempotent
from tierlab.scenarios.api import Pages


@extend_schema_view(
    partial_update=rename_schema(ComparisonSerializer, "comparison"),
    destroy=delete_schema("comparison", "Its scenarios and their runs stay."))
class ComparisonViewSet(RenameDeleteMixin, mixins.CreateModelMixin, viewsets.ReadOnlyModelViewSet):
    """Your comparisons and your team's. POST `{scenarios: [ids], name?}` (2–8 of your
    scenarios) starts a run of each (identical inputs reuse a stored result) and returns 201;
    PATCH `{name}` renames one and DELETE deletes it (its owner). Filter with `?q=`,
    `?owner=`, `?scenario=`."""

    pagination_class = Pages
    permission_classes = API_PERMISSIONS
    filter_backends = [DjangoFilterBackend]
    filterset_class = ComparisonFilter

    def get_queryset(self):
        if schema_only(self):
            return Comparison.objects.none()
        return Comparison.objects.visible_to(self.request.user).select_related("owner").prefetch_related("items")

    def get_serializer_class(self):
        if self.action == "create":
            return ComparisonCreateSerializer
        return ComparisonListSerializer if self.action == "list" else ComparisonSerializer

    @extend_schema(request=ComparisonCreateSerializer, responses={201: ComparisonSerializer},
                   parameters=[IDEMPOTENCY_KEY])
    @idempotent(lambda view, pk: ComparisonSerializer(Comparison.objects.get(pk=pk)).data)
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

    def delete_object(self, obj):
        removal.delete_comparison(obj)
