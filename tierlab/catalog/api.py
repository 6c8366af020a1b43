"""Read-only catalog API: anyone may list; edits go through the admin. Also the config.json
import, which turns a Hugging Face model config into a model section."""

from drf_spectacular.utils import OpenApiParameter, extend_schema, extend_schema_view
from rest_framework import permissions, viewsets
from rest_framework.exceptions import ValidationError
from rest_framework.response import Response
from rest_framework.views import APIView

from simulation import ScenarioError
from simulation.hf_config import model_from_hf_config
from tierlab.api import engine_error_detail

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


class ModelFromHfConfigView(APIView):
    """Read a Hugging Face `config.json` (`{"config": {...}}`, pasted or uploaded; nothing
    is fetched from the Hub) and return the scenario's `model` section, the config keys it
    `ignored` and `notes` on what the engine models differently. Families read: llama,
    mistral, mixtral, qwen2, gemma, gemma2, phi3, falcon, deepseek_v3, deepseek_v2 (routed and
    shared experts, dense first layers, multi-head latent attention; sliding windows map to
    `sliding_window` / `sliding_window_layers`), bloom (ALiBi, `position_embedding` alibi).
    Bad values are a 400 naming every bad
    config key at once (`{"config.num_attention_heads": [...], "config.vocab_size": [...]}`)."""

    throttle_scopes = {"POST": "hf_import"}          # tierlab.throttling

    @extend_schema(request=serializers.HfConfigRequestSerializer,
                   responses={200: serializers.HfConfigResponseSerializer})
    def post(self, request):
        data = serializers.HfConfigRequestSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        try:
            model, ignored, notes = model_from_hf_config(data.validated_data["config"])
        except ScenarioError as exc:
            raise ValidationError(engine_error_detail(exc)) from None
        return Response({"model": model, "ignored": ignored, "notes": notes})
