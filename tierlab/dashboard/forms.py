"""The sweep form: a base scenario and one or two axes, each a field and its values."""

import re

from django import forms

from tierlab.dashboard.sweeps import PARAMETERS, parse_values

_CHOICES = [(path, f"{label} — {path}") for path, label, _ in PARAMETERS]


class SweepForm(forms.Form):
    name = forms.CharField(max_length=200, required=False, label="Name",
                           help_text="Optional; default: the base scenario and the axes.")
    scenario = forms.TypedChoiceField(coerce=int, label="Base scenario")
    axis1_path = forms.ChoiceField(choices=_CHOICES, label="First axis: field")
    axis1_values = forms.CharField(label="First axis: values",
                                   help_text="Comma-separated, e.g. 1, 2, 4 or none, cpu, nvme")
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
            initial[f"axis{k}_values"] = ", ".join(str(v) for v in ax["values"])
            if ax.get("scales_global_batch"):
                initial["scale_global_batch"] = True
        return initial


class PlanForm(forms.Form):
    """The planner's form: a model, a node template and node counts, the batch, an objective."""

    OBJECTIVES = [("step_time", "Shortest step time"),
                  ("cost_per_million_tokens", "Lowest cost per million tokens"),
                  ("time_to_train", "Shortest time to train the total tokens (checkpoints and failures included)"),
                  ("cost_to_train", "Lowest cost to train the total tokens")]

    name = forms.CharField(max_length=200, required=False, label="Name",
                           help_text="Optional; default: the model, the node and the objective.")
    model = forms.ChoiceField(label="Model")
    node = forms.ChoiceField(label="Node template")
    min_nodes = forms.IntegerField(min_value=1, max_value=1_000_000, initial=1, label="Nodes: from")
    max_nodes = forms.IntegerField(min_value=1, max_value=1_000_000, initial=4, label="Nodes: up to")
    seq_len = forms.IntegerField(min_value=1, max_value=100_000_000, initial=4096, label="Sequence length",
                                 help_text="tokens")
    global_batch_size = forms.IntegerField(min_value=1, max_value=1_000_000_000, initial=512,
                                           label="Global batch size", help_text="sequences per step")
    total_tokens = forms.FloatField(min_value=1, required=False, label="Total tokens to train",
                                    help_text="e.g. 2e12; needed for time and cost to train")
    max_usd_per_hour = forms.FloatField(min_value=0, required=False, label="Budget (USD per hour)",
                                        help_text="Optional")
    memory_margin = forms.FloatField(min_value=0, max_value=0.9, initial=0.05, label="Memory margin",
                                     help_text="Fraction of each tier kept free, e.g. 0.05")
    objective = forms.ChoiceField(choices=OBJECTIVES, initial="step_time", label="Objective")

    # Where an engine error's field lands on this form.
    FIELD_FOR_ERROR = {"spec.model": "model", "spec.model.preset": "model", "spec.cluster.node": "node",
                       "spec.cluster.num_nodes.min": "min_nodes", "spec.cluster.num_nodes.max": "max_nodes",
                       "spec.training.seq_len": "seq_len", "spec.training.global_batch_size": "global_batch_size",
                       "spec.training.total_tokens": "total_tokens",
                       "spec.constraints.max_usd_per_hour": "max_usd_per_hour",
                       "spec.constraints.memory_margin": "memory_margin", "spec.objective": "objective"}

    def __init__(self, *args, models=(), nodes=(), **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["model"].choices = list(models)
        self.fields["node"].choices = list(nodes)

    @classmethod
    def field_for_error(cls, field: str):
        return cls.FIELD_FOR_ERROR.get(field)

    def spec(self) -> dict:
        d = self.cleaned_data
        training = {"seq_len": d["seq_len"], "global_batch_size": d["global_batch_size"], "flash_attention": True}
        if d.get("total_tokens"):
            training["total_tokens"] = d["total_tokens"]
        constraints = {"memory_margin": d["memory_margin"]}
        if d.get("max_usd_per_hour") is not None:
            constraints["max_usd_per_hour"] = d["max_usd_per_hour"]
        return {"model": d["model"],
                "cluster": {"node": d["node"], "num_nodes": {"min": d["min_nodes"], "max": d["max_nodes"]}},
                "training": training, "constraints": constraints, "objective": d["objective"]}
