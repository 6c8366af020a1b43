"""Load the shipped catalog: raw sourced hardware items and the engine's presets."""

import json
from pathlib import Path

from django.db import transaction

from tierlab.catalog.models import Accelerator, HardwareItem, ModelPreset, NodeTemplate

HARDWARE_FIXTURE = Path(__file__).resolve().parent / "fixtures" / "hardware_catalog.json"
_ITEM_FIELDS = {"kind", "name", "vendor", "specs", "source", "notes"}


def _save(model, lookup: dict, values: dict, keep_existing: bool) -> str:
    if keep_existing:
        _, created = model.objects.get_or_create(**lookup, defaults=values)
        return "created" if created else "kept"
    _, created = model.objects.update_or_create(**lookup, defaults=values)
    return "created" if created else "updated"


def load_hardware(keep_existing: bool = False) -> dict:
    counts = {"created": 0, "updated": 0, "kept": 0}
    for item in json.loads(HARDWARE_FIXTURE.read_text()):
        values = {
            "vendor": item.get("vendor") or "",
            "specs": item.get("specs") or {},
            "source": item.get("source") or "",
            "notes": item.get("notes") or "",
            "extra": {k: v for k, v in item.items() if k not in _ITEM_FIELDS},
        }
        counts[_save(HardwareItem, {"kind": item["kind"], "name": item["name"]}, values, keep_existing)] += 1
    return counts


def load_presets(keep_existing: bool = False) -> dict:
    from simulation import presets

    counts = {"created": 0, "updated": 0, "kept": 0}
    for model, table in ((ModelPreset, presets.MODELS), (NodeTemplate, presets.NODES),
                         (Accelerator, presets.ACCELERATORS)):
        for slug, spec in table.items():
            values = {
                "name": spec.get("name", slug),
                "source": spec.get("source", ""),
                "spec": {k: v for k, v in spec.items() if k not in ("name", "source")},
            }
            counts[_save(model, {"slug": slug}, values, keep_existing)] += 1
    return counts


@transaction.atomic
def load_catalog(keep_existing: bool = False) -> dict:
    """Create or refresh every shipped entry; ``keep_existing`` leaves edited rows alone."""
    return {"hardware": load_hardware(keep_existing), "presets": load_presets(keep_existing)}
