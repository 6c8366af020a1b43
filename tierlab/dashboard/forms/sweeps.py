"""The sweep form: a base scenario and one or two axes, each a field and its values."""

import re

from django import forms

from tierlab.api import name_form_field
from tierlab.dashboard.sweeps import PARAMETERS, parse_values

_CHOICES = [(path, f"{label} — {path}") for path, label, _ in PARAMETERS]


class SweepForm(forms.Form):
    name = name_form_field(required=False, label="Name",
                           help_text="Optional; default: the base scenario and the axes.")
    scenario = forms.TypedChoiceField(coerce=int, label="Base scenario")
    axis1_path = forms.ChoiceField(choices=_CHOICES, label="First axis: field")
    axis1_values = forms.CharField(label="First axis: values",
                                   help_text="Comma-separated, e.g. 1, 2, 4 or none, cpu, nvme; "
                                             "null is the field's null (FP8 recipe: FP8 off)")
    axis2_path = forms.ChoiceField(choices=[("", "— none (one axis) —")] + _CHOICES, required=False,
                                   label="Second axis: field")
    axis2_values = forms.CharField(required=False, label="Second axis: values",
                                   help_text="Comma-separated; leave empty for a one-axis sweep")
    scale_global_batch = forms.BooleanField(
        required=False, label="Keep the per-GPU batch (the global batch scales with the nodes)",
        help_text="For a Number of nodes axis: each point's global batch is the base's × its "
                  "nodes / the base's nodes. Unticked, the global batch stays as the base has it.")

    # Where an engine error's field lands on this form.
    FIELD_FOR_ERROR = {"scenario": "scenario", "axes": "axis1_values",
                       "axes.0.path": "axis1_path", "axes.0.values": "axis1_values",
                       "axes.1.path": "axis2_path", "axes.1.values": "axis2_values",
                       "axes.0.scales_global_batch": "scale_global_batch",
                       "axes.1.scales_global_batch": "scale_global_batch"}

    @classmethod
    def field_for_error(cls, key: str | None) -> str | None:
        """The form field an engine error key belongs to (``axes.0.values.3`` -> axis1_values)."""
        match = re.fullmatch(r"(axes\.\d+\.values)\.\d+", key or "")
        return cls.FIELD_FOR_ERROR.get(match.group(1) if match else key)

    def __init__(self, *args, scenarios=(), **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["scenario"].choices = [(s.pk, s.name) for s in scenarios]

    def clean(self):
        data = super().clean()
        if data.get("axis2_path") and not (data.get("axis2_values") or "").strip():
            self.add_error("axis2_values", "Give the values of the second axis, or choose no second axis.")
        if not data.get("axis2_path") and (data.get("axis2_values") or "").strip():
            self.add_error("axis2_path", "Choose the field these values are for.")
        if data.get("scale_global_batch") and "cluster.num_nodes" not in (data.get("axis1_path"),
                                                                         data.get("axis2_path")):
            self.add_error("scale_global_batch", "Applies to a Number of nodes axis: choose "
                                                 "cluster.num_nodes for one axis, or untick it.")
        return data

    def axes(self) -> list[dict]:
        d = self.cleaned_data
        axes = [{"path": d["axis1_path"], "values": parse_values(d["axis1_values"])}]
        if d.get("axis2_path"):
            axes.append({"path": d["axis2_path"], "values": parse_values(d["axis2_values"])})
        if d.get("scale_global_batch"):
            for ax in axes:
                if ax["path"] == "cluster.num_nodes":
                    ax["scales_global_batch"] = True
        return axes

    @staticmethod
    def initial_for(axes: list[dict]) -> dict:
        """Form values that make these axes (for presets and "sweep again")."""
        initial = {}
        for k, ax in enumerate(axes[:2], start=1):
            initial[f"axis{k}_path"] = ax["path"]
            initial[f"axis{k}_values"] = ", ".join("null" if v is None else str(v) for v in ax["values"])
            if ax.get("scales_global_batch"):
                initial["scale_global_batch"] = True
        return initial
