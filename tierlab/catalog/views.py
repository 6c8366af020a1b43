"""The catalog browser page (public)."""

from django.shortcuts import render

from tierlab.catalog.models import Accelerator, HardwareItem, ModelPreset, NodeTemplate


def catalog(request):
    sections = [
        {"id": "models", "title": "Models", "rows": ModelPreset.objects.all(),
         "hint": 'Name one in a scenario as {"model": {"preset": "<id>"}}.'},
        {"id": "nodes", "title": "Nodes", "rows": NodeTemplate.objects.all(),
         "hint": 'Name one as {"cluster": {"node": "<id>", "num_nodes": 2}}; tiers are per node.'},
        {"id": "accelerators", "title": "Accelerators", "rows": Accelerator.objects.all(),
         "hint": 'Override a node\'s GPU with {"cluster": {"accelerator": "<id>"}}.'},
    ]
    return render(request, "catalog/catalog.html",
                  {"sections": sections, "hardware": HardwareItem.objects.all()})
