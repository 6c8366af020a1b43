"""Catalog: engine presets (accelerators, node templates, models) and raw sourced hardware."""

from django.core.exceptions import ValidationError
from django.db import models
from django.utils.text import slugify

from simulation import ScenarioError, presets
from simulation.scenario import AcceleratorSpec, ClusterSpec, ModelSpec, resolve
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
        try:
            self.check_with_engine()
        except ScenarioError as e:      # the engine names the field; say it as a spec key
            raise ValidationError({"spec": f"{e.field}: {e.message}"}) from None

    def check_with_engine(self) -> None:
        """Parse the preset as a scenario would use it; raises ScenarioError on ``spec.<key>``."""

    def engine_spec(self) -> dict:
        """The spec as the engine's preset table wants it (with name and source)."""
        return {**self.spec, "name": self.name, "source": self.source}

    def as_used(self) -> dict:
        """The spec as a scenario naming this preset expands it."""
        return {**self.engine_spec(), "preset": self.slug}


class Accelerator(Preset):
    def check_with_engine(self) -> None:
        AcceleratorSpec.from_dict(self.as_used(), "spec")


class NodeTemplate(Preset):
    def check_with_engine(self) -> None:
        # the accelerator it names, from the rows as they are now (an import in progress
        # included), else the engine's built-ins
        accelerators = {a.slug: a.engine_spec() for a in Accelerator.objects.all()} or presets.ACCELERATORS
        try:
            cluster = resolve({"model": {}, "cluster": {"node": self.slug}},
                              nodes={self.slug: self.engine_spec()}, accelerators=accelerators)["cluster"]
            ClusterSpec.from_dict(cluster, "spec")
        except ScenarioError as e:
            if e.field.startswith("cluster."):
                raise ScenarioError("spec." + e.field.removeprefix("cluster."), e.message) from None
            raise


class ModelPreset(Preset):
    def check_with_engine(self) -> None:
        ModelSpec.from_dict(self.as_used(), "spec")


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
