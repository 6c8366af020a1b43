"""The cluster-profile form: what a user measured on their cluster, in the units tools
print (TFLOP/s, GB/s, GB, seconds); the API takes the same in SI units."""

import re

from django import forms

from simulation.calibrate import COLLECTIVE_KINDS
from simulation.checkpoint import TARGET_KINDS
from tierlab.api import name_form_field

GB = 1e9


class ProfileForm(forms.Form):
    name = name_form_field(label="Name",
                           help_text="e.g. our Selene partition")
    node = forms.ChoiceField(label="Node template", help_text="The cluster's nodes (catalog)")
    gemm_tflops = forms.FloatField(required=False, min_value=0, label="GEMM rate (TFLOP/s)",
                                   help_text="Dense 16-bit matmul of large shapes, one GPU")
    collective = forms.ChoiceField(choices=[(k, k) for k in COLLECTIVE_KINDS], label="nccl-tests collective")
    collective_size_mib = forms.FloatField(required=False, min_value=0, label="Message size (MiB)",
                                           help_text="nccl-tests “size”; large, e.g. 1024")
    collective_ranks = forms.IntegerField(required=False, min_value=2, label="Ranks (GPUs)")
    collective_busbw_gb_s = forms.FloatField(required=False, min_value=0, label="Bus bandwidth (GB/s)",
                                             help_text="nccl-tests “busbw”")
    checkpoint_target = forms.ChoiceField(choices=[(k, k) for k in TARGET_KINDS], initial="parallel_fs",
                                          label="Checkpoint target")
    checkpoint_size_gb = forms.FloatField(required=False, min_value=0, label="Checkpoint size (GB)")
    checkpoint_nodes = forms.IntegerField(required=False, min_value=1, label="Nodes writing it")
    checkpoint_write_s = forms.FloatField(required=False, min_value=0, label="Write time (s)")
    checkpoint_restart_s = forms.FloatField(required=False, min_value=0, label="Load time at restart (s)",
                                            help_text="Reading it back into the GPUs")
    step_scenario = forms.TypedChoiceField(coerce=int, required=False, empty_value=None,
                                           label="Measured configuration (a scenario)",
                                           help_text="One of your scenarios, as it ran on this cluster")
    step_s = forms.FloatField(required=False, min_value=0, label="Measured step time (s)")

    GROUPS = {"gemm": ["gemm_tflops"],
              "collectives": ["collective", "collective_size_mib", "collective_ranks", "collective_busbw_gb_s"],
              "checkpoints": ["checkpoint_target", "checkpoint_size_gb", "checkpoint_nodes",
                              "checkpoint_write_s", "checkpoint_restart_s"],
              "steps": ["step_scenario", "step_s"]}
    # An engine error's field -> the form field it belongs to.
    FIELD_FOR_ERROR = {
        "measurements.cluster": "node", "measurements.gemm.flops_per_s": "gemm_tflops",
        "collectives.collective": "collective", "collectives.size_bytes": "collective_size_mib",
        "collectives.ranks": "collective_ranks", "collectives.bus_bytes_per_s": "collective_busbw_gb_s",
        "collectives": "collective_busbw_gb_s",
        "checkpoints.target": "checkpoint_target", "checkpoints.size_bytes": "checkpoint_size_gb",
        "checkpoints.num_nodes": "checkpoint_nodes", "checkpoints.write_s": "checkpoint_write_s",
        "checkpoints.restart_s": "checkpoint_restart_s", "checkpoints": "checkpoint_write_s",
        "steps.step_s": "step_s", "steps.scenario": "step_scenario", "steps": "step_s",
    }

    def __init__(self, *args, nodes=(), scenarios=None, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["node"].choices = [(slug, name) for slug, name in nodes]
        self.scenarios = scenarios
        self.fields["step_scenario"].choices = [("", "— none —")] + [
            (s.pk, s.name) for s in (scenarios if scenarios is not None else [])]

    def clean(self):
        data = super().clean()
        need = {"collectives": ["collective_size_mib", "collective_ranks", "collective_busbw_gb_s"],
                "checkpoints": ["checkpoint_size_gb"], "steps": ["step_scenario", "step_s"]}
        for group, names in need.items():
            given = [n for n in names if data.get(n) is not None]
            if given and len(given) < len(names):
                for n in names:
                    if data.get(n) is None:
                        self.add_error(n, "is required with the other figures of this measurement")
        if data.get("checkpoint_size_gb") is not None and data.get("checkpoint_write_s") is None \
                and data.get("checkpoint_restart_s") is None:
            self.add_error("checkpoint_write_s", "give the write time or the load time")
        return data

    @classmethod
    def field_for_error(cls, key: str) -> str | None:
        """``measurements.steps[0].scenario.training.seq_len`` -> ``step_scenario``."""
        if key in cls.FIELD_FOR_ERROR:
            return cls.FIELD_FOR_ERROR[key]
        m = re.fullmatch(r"measurements\.(\w+)(?:\[\d+\])?(?:\.(\w+))?.*", key or "")
        if m:
            return cls.FIELD_FOR_ERROR.get(f"{m.group(1)}.{m.group(2)}") or cls.FIELD_FOR_ERROR.get(m.group(1))
        return None

    def measurements(self) -> dict:
        """The measurements in the engine's shape and SI units (after ``is_valid``)."""
        d = self.cleaned_data
        out: dict = {"cluster": {"node": d["node"]}}
        if d.get("gemm_tflops") is not None:
            out["gemm"] = {"flops_per_s": d["gemm_tflops"] * 1e12}
        if d.get("collective_busbw_gb_s") is not None:
            out["collectives"] = [{"collective": d["collective"], "size_bytes": d["collective_size_mib"] * 2**20,
                                   "ranks": d["collective_ranks"], "bus_bytes_per_s": d["collective_busbw_gb_s"] * GB}]
        if d.get("checkpoint_size_gb") is not None:
            ck = {"target": d["checkpoint_target"], "size_bytes": d["checkpoint_size_gb"] * GB}
            for key, name in (("num_nodes", "checkpoint_nodes"), ("write_s", "checkpoint_write_s"),
                              ("restart_s", "checkpoint_restart_s")):
                if d.get(name) is not None:
                    ck[key] = d[name]
            out["checkpoints"] = [ck]
        if d.get("step_scenario") is not None:
            scenario = self.scenarios.get(pk=d["step_scenario"])
            out["steps"] = [{"scenario": scenario.spec, "step_s": d["step_s"]}]
        return out

    @classmethod
    def initial_for(cls, measurements: dict) -> dict:
        """The form's fields from stored measurements (its first measurement of each kind)."""
        m, out = measurements or {}, {}
        out["node"] = (m.get("cluster") or {}).get("node")
        if m.get("gemm"):
            out["gemm_tflops"] = m["gemm"].get("flops_per_s", 0) / 1e12
        if m.get("collectives"):
            c = m["collectives"][0]
            out.update(collective=c.get("collective"), collective_size_mib=(c.get("size_bytes") or 0) / 2**20,
                       collective_ranks=c.get("ranks"), collective_busbw_gb_s=(c.get("bus_bytes_per_s") or 0) / GB)
        if m.get("checkpoints"):
            c = m["checkpoints"][0]
            out.update(checkpoint_target=c.get("target"), checkpoint_size_gb=(c.get("size_bytes") or 0) / GB,
                       checkpoint_nodes=c.get("num_nodes"), checkpoint_write_s=c.get("write_s"),
                       checkpoint_restart_s=c.get("restart_s"))
        if m.get("steps"):
            out["step_s"] = m["steps"][0].get("step_s")
        return {k: v for k, v in out.items() if v is not None}
