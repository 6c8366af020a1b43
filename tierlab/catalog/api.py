"""Read-only catalog API: anyone may list; edits go through the admin."""

from drf_spectacular.utils import OpenApiParameter, extend_schema, extend_schema_view
from rest_framework import permissions, viewsets
from rest_framework.exceptions import ValidationError

from tierlab.catalog import models, serializers


class CatalogViewSet(viewsets.ReadOnlyModelViewSet):
    permission_classes = [permissions.AllowAny]
    serializer_class = serializers.PresetSerializer
    lookup_field = "slug"
    lookup_value_regex = "[^/]+"


class ModelPresetViewSet(CatalogViewSet):
    """Model architectures (`model.preset` in a scenario)."""
    queryset = models.ModelPreset.objects.all()


class NodeTemplateViewSet(CatalogViewSet):
    """Node templates (`cluster.node` in a scenario)."""
    queryset = models.NodeTemplate.objects.all()


class AcceleratorViewSet(CatalogViewSet):
    """Accelerators (`cluster.accelerator` in a scenario)."""
    queryset = models.Accelerator.objects.all()


@extend_schema_view(list=extend_schema(parameters=[
    OpenApiParameter("kind", str, enum=models.HardwareItem.KINDS, description="only items of this kind")]))
class HardwareItemViewSet(CatalogViewSet):
    """Raw sourced hardware items; filter with ?kind=gpu."""
    serializer_class = serializers.HardwareItemSerializer

    def get_queryset(self):
        qs = models.HardwareItem.objects.all()
        kind = self.request.query_params.get("kind")
        if kind is not None and kind not in models.HardwareItem.KINDS:
            raise ValidationError({"kind": [f"must be one of {', '.join(models.HardwareItem.KINDS)}"]})
        return qs.filter(kind=kind) if kind else qs
