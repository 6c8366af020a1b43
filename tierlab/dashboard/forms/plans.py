"""The plan form: a model, a node template and node counts, the batch, an objective (a planner spec)."""

from django import forms

from simulation.planner import DEFAULT_STRATEGIES
from simulation.scenario import OFFLOAD_TARGETS, STRATEGY_KINDS
from tierlab.api import name_form_field
from tierlab.catalog.labels import OBJECTIVE_CHOICES


class PlanForm(forms.Form):
    """The planner's form: a model, a node template and node counts (or a GPU count), the
    batch (or tokens per step), the
    constraints (margin, budget, minimum batch, allowed strategies and offload tiers), an
    objective. A list left empty is the engine's default (``simulation.planner.parse_spec``)."""

    OBJECTIVES = list(OBJECTIVE_CHOICES.items())      # tierlab.catalog.labels: one source

    name = name_form_field(required=False, label="Name",
                           help_text="Optional; default: the model, the node and the objective.")
    model = forms.ChoiceField(label="Model")
    node = forms.ChoiceField(label="Node template")
    profile = forms.TypedChoiceField(coerce=int, empty_value=None, required=False, label="Cluster profile",
                                     help_text="Optional: the figures fitted to what was measured on your "
                                               "cluster (the Cluster profiles page), used for every candidate; none: "
                                               "the engine's defaults")
    min_nodes = forms.IntegerField(min_value=1, max_value=1_000_000, initial=1, label="Nodes: from")
    max_nodes = forms.IntegerField(min_value=1, max_value=1_000_000, initial=4, label="Nodes: up to")
    num_gpus = forms.IntegerField(min_value=1, max_value=1_000_000, required=False, label="Or a GPU count",
                                  help_text="Optional, instead of the node counts: fewer than a node's GPUs, "
                                            "or a multiple of them")
    seq_len = forms.IntegerField(min_value=1, max_value=100_000_000, initial=4096, label="Sequence length",
                                 help_text="tokens")
    global_batch_size = forms.IntegerField(min_value=1, max_value=1_000_000_000, initial=512, required=False,
                                           label="Global batch size", help_text="sequences per step")
    tokens_per_step = forms.IntegerField(min_value=1, max_value=10**12, required=False, label="Or tokens per step",
                                         help_text="Optional, instead of the global batch: a multiple of the "
                                                   "sequence length")
    total_tokens = forms.FloatField(min_value=1, required=False, label="Total tokens to train",
                                    help_text="e.g. 2e12; needed for time and cost to train")
    max_usd_per_hour = forms.FloatField(min_value=0, required=False, label="Budget (USD per hour)",
                                        help_text="Optional")
    memory_margin = forms.FloatField(min_value=0, max_value=0.9, initial=0.05, label="Memory margin",
                                     help_text="Fraction of each tier kept free, e.g. 0.05")
    max_days_to_train = forms.FloatField(min_value=0.001, max_value=100_000, required=False,
                                         label="Deadline (days to train)",
                                         help_text="Optional; needs the total tokens: a candidate that takes "
                                                   "longer is refused")
    min_global_batch_size = forms.IntegerField(min_value=1, max_value=1_000_000_000, required=False,
                                               label="Minimum global batch",
                                               help_text="Optional; sequences per step")
    strategies = forms.MultipleChoiceField(choices=[(k, k) for k in STRATEGY_KINDS], initial=list(DEFAULT_STRATEGIES),
                                           required=False, label="Allowed strategies",
                                           help_text="None picked: " + ", ".join(DEFAULT_STRATEGIES))
    offload_optimizer = forms.MultipleChoiceField(choices=[(k, k) for k in OFFLOAD_TARGETS], initial=["none"],
                                                  required=False, label="Optimizer offload tiers",
                                                  help_text="None picked: none (kept on the GPU)")
    offload_params = forms.MultipleChoiceField(choices=[(k, k) for k in OFFLOAD_TARGETS], initial=["none"],
                                               required=False, label="Parameter offload tiers",
                                               help_text="None picked: none (kept on the GPU)")
    objective = forms.ChoiceField(choices=OBJECTIVES, initial="step_time", label="Objective")

    # Where an engine error's field lands on this form.
    FIELD_FOR_ERROR = {"spec.model": "model", "spec.model.preset": "model", "spec.cluster.node": "node",
                       "spec.cluster.profile": "profile",
                       "spec.cluster.num_gpus": "num_gpus", "spec.training.tokens_per_step": "tokens_per_step",
                       "spec.cluster.num_nodes.min": "min_nodes", "spec.cluster.num_nodes.max": "max_nodes",
                       "spec.training.seq_len": "seq_len", "spec.training.global_batch_size": "global_batch_size",
                       "spec.training.total_tokens": "total_tokens",
                       "spec.constraints.max_usd_per_hour": "max_usd_per_hour",
                       "spec.constraints.memory_margin": "memory_margin",
                       "spec.constraints.min_global_batch_size": "min_global_batch_size",
                       "spec.constraints.max_time_to_train_s": "max_days_to_train",
                       "spec.objective": "objective"}

    @classmethod
    def _space_field(cls, field: str):
        """``spec.space.strategies.2`` -> ``strategies`` (a list's item lands on its list)."""
        for name in ("strategies", "offload_optimizer", "offload_params"):
            if field == f"spec.space.{name}" or field.startswith(f"spec.space.{name}."):
                return name
        return None

    def __init__(self, *args, models=(), nodes=(), profiles=(), **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["model"].choices = list(models)
        self.fields["node"].choices = list(nodes)
        self.fields["profile"].choices = [("", "none: the engine's default efficiencies")] + list(profiles)

    def clean(self):
        d = super().clean()
        if d.get("global_batch_size") is None and d.get("tokens_per_step") is None \
                and "global_batch_size" not in self.errors and "tokens_per_step" not in self.errors:
            self.add_error("global_batch_size", "Give a global batch size or tokens per step.")
        return d

    @classmethod
    def field_for_error(cls, field: str):
        return cls.FIELD_FOR_ERROR.get(field) or cls._space_field(field)

    def spec(self) -> dict:
        d = self.cleaned_data
        training = {"seq_len": d["seq_len"], "flash_attention": True}
        if d.get("tokens_per_step") is not None:
            training["tokens_per_step"] = d["tokens_per_step"]
        else:
            training["global_batch_size"] = d["global_batch_size"]
        if d.get("total_tokens"):
            training["total_tokens"] = d["total_tokens"]
        constraints = {"memory_margin": d["memory_margin"]}
        if d.get("max_usd_per_hour") is not None:
            constraints["max_usd_per_hour"] = d["max_usd_per_hour"]
        if d.get("min_global_batch_size") is not None:
            constraints["min_global_batch_size"] = d["min_global_batch_size"]
        if d.get("max_days_to_train") is not None:
            constraints["max_time_to_train_s"] = d["max_days_to_train"] * 86400
        space = {k: list(d[k]) for k in ("strategies", "offload_optimizer", "offload_params") if d.get(k)}
        cluster = {"node": d["node"]}
        if d.get("num_gpus") is not None:
            cluster["num_gpus"] = d["num_gpus"]
        else:
            cluster["num_nodes"] = {"min": d["min_nodes"], "max": d["max_nodes"]}
        if d.get("profile") is not None:
            cluster["profile"] = d["profile"]
        out = {"model": d["model"], "cluster": cluster,
               "training": training, "constraints": constraints, "objective": d["objective"]}
        if space:
            out["space"] = space
        return out
