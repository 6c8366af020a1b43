"""Catalog: engine presets (accelerators, node templates, models) and raw sourced hardware."""

from django.db import models
from django.utils.text import slugify

from tierlab.catalog.validators import slug_validator, validate_spec


class Preset(models.Model):
    """A named spec in the engine's vocabulary; `slug` is the id scenarios refer to."""

    slug = models.CharField(max_length=100, unique=True, validators=[slug_validator])
    name = models.CharField(max_length=200)
    spec = models.JSONField(default=dict, blank=True,
                            help_text="Engine fields, SI units in the key names (_bytes, _bytes_per_s, _flops).")
    source = models.TextField(blank=True, help_text="Where the figures come from.")
    notes = models.TextField(blank=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        abstract = True
        ordering = ["slug"]

    def __str__(self):
        return f"{self.name} ({self.slug})"

    def clean(self):
        validate_spec(self.spec)

    def engine_spec(self) -> dict:
        """The spec as the engine's preset table wants it (with name and source)."""
        return {**self.spec, "name": self.name, "source": self.source}


class Accelerator(Preset):
    pass


class NodeTemplate(Preset):
    pass


class ModelPreset(Preset):
    pass


class HardwareItem(models.Model):
    """One raw, sourced catalog item (a GPU, a DIMM, a drive, a link, a whole node...)."""

    KINDS = ["gpu", "cpu_memory", "node", "link", "network", "nvme", "storage", "cxl", "pmem"]

    slug = models.SlugField(max_length=120, unique=True, blank=True)
    kind = models.CharField(max_length=32, choices=[(k, k) for k in KINDS])
    name = models.CharField(max_length=200)
    vendor = models.CharField(max_length=100, blank=True)
    specs = models.JSONField(default=dict, blank=True,
                             help_text="Units in key names: _gb = 1e9 bytes, _gib = 2^30, _gbps = GB/s.")
    source = models.TextField(blank=True)
    notes = models.TextField(blank=True, help_text="Caveats: disagreeing sources, weak figures.")
    extra = models.JSONField(default=dict, blank=True,
                             help_text="Other sourced fields (extra_sources, cloud_prices).")
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["kind", "name"]
        constraints = [models.UniqueConstraint(fields=["kind", "name"], name="hardware_kind_name")]

    def __str__(self):
        return f"{self.name} [{self.kind}]"

    def save(self, *args, **kwargs):
        if not self.slug:
            self.slug = slugify(f"{self.kind}-{self.name}")[:120]
        super().save(*args, **kwargs)

    def clean(self):
        validate_spec(self.specs, field="specs")
