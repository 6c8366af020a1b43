"""Measure what PyTorch saves for backward in one Llama decoder layer under LoRA.

The same hooks as ``scripts/measure_saved_tensors.py`` (``measure``: every tensor
autograd keeps, storage-deduplicated, the layer's parameters left out), on one
``LlamaDecoderLayer`` built from a small config in code (random weights, nothing
downloaded), in three set-ups:

* ``trained``: every parameter requires grad (full fine-tuning), the reference;
* ``frozen``: no parameter requires grad, the input does (the base under LoRA): a
  frozen ``F.linear`` saves its weight for the input gradient, not its input;
* ``lora``: the frozen layer with PEFT's ``LoraModel`` adapters (``r``, targets,
  ``lora_dropout``), so what the adapters add is PEFT's own forward.

Needs torch, transformers and peft (tierlab depends on none of them); e.g. in a
separate environment::

    HF_HUB_OFFLINE=1 ~/torch-env/bin/python scripts/measure_saved_tensors_lora.py \
        --out tests/data/saved_tensors_lora_hf.json

The ``autocast`` points run the forward under ``torch.autocast("cpu", bfloat16)`` with
fp32 adapters, as HF Trainer (``bf16=True``) runs PEFT's default (``autocast_adapter_dtype``
upcasts the adapters to fp32). Recorded with peft 0.4.0 (its ``Linear.forward`` does
``x = x.to(self.lora_A[...].weight.dtype)`` before ``lora_A(dropout(x))``, as peft
0.20's ``self._cast_input_dtype(x, lora_A.weight.dtype)`` does), transformers 4.31 and
torch 2.13 on the CPU; peft went in with ``pip install --no-deps --target`` beside the
environment's torch and transformers.

It is a tool, not a test: ``tests/engine/test_qlora.py`` reads the JSON.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys

os.environ.setdefault("HF_HUB_OFFLINE", "1")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import peft  # noqa: E402
import torch  # noqa: E402
import transformers  # noqa: E402
from peft import LoraConfig  # noqa: E402
from peft.tuners.lora import LoraModel  # noqa: E402

import measure_saved_tensors as mst  # noqa: E402

MODULES = {"q": "q_proj", "k": "k_proj", "v": "v_proj", "o": "o_proj", "gate": "gate_proj",
           "up": "up_proj", "down": "down_proj"}


class _Holder(torch.nn.Module):
    """One decoder layer as a model of its own, for PEFT to wrap."""

    def __init__(self, layer):
        super().__init__()
        self.layer = layer

    def forward(self, x, **kw):
        return self.layer(x, **kw)


def run(p: dict) -> dict:
    torch.manual_seed(0)
    b, s, h = p["b"], p["s"], p["h"]
    mst.DTYPE = torch.bfloat16
    cfg, layer, rope = mst._llama_like("llama", dict(p, arch="llama", attn="eager"))
    with torch.no_grad():
        for w in layer.parameters():
            if w.dim() >= 2:
                w.normal_(0.0, 0.02)
    model = _Holder(layer.to(torch.bfloat16).train())
    if p["mode"] != "trained":
        for w in model.parameters():
            w.requires_grad_(False)
    if p["mode"] == "lora":
        lc = LoraConfig(r=p["r"], lora_alpha=2 * p["r"], lora_dropout=p["dropout"],
                        target_modules=[MODULES[t] for t in p["targets"]], bias="none")
        try:                                 # peft >= 0.5 takes the config itself
            model = LoraModel(model, lc, "default")
        except TypeError:                    # peft 0.4: {adapter_name: config}
            model = LoraModel(model, {"default": lc}, "default")
        for n, w in model.named_parameters():
            w.requires_grad_("lora_" in n)
    model.train()
    x = torch.randn(b, s, h, dtype=torch.bfloat16, requires_grad=True)
    pos = torch.arange(s).unsqueeze(0).expand(b, s)
    kwargs = {"attention_mask": mst._causal_mask(b, s), "position_ids": pos}
    adapters = {str(w.dtype).replace("torch.", "") for n, w in model.named_parameters() if "lora_" in n}
    if p.get("autocast"):
        # HF Trainer with bf16=True: the forward under torch.autocast; PEFT keeps the
        # adapters in fp32 (autocast_adapter_dtype) and casts x to their dtype, then
        # autocast casts it back to bf16 for lora_A's matmul: a bf16 copy per adapter.
        for n, w in model.named_parameters():
            if "lora_" in n:
                w.data = w.data.float()

        def call(mod, t):
            with torch.autocast("cpu", dtype=torch.bfloat16):
                return mod(t, **kwargs)
    else:
        def call(mod, t):
            return mod(t, **kwargs)
    m = mst.measure(model, x, call)
    print(f"{p['id']:<48} {m['layer_bytes']:>9} B {m['layer_bytes'] / (b * s * h):6.2f} x sbh",
          file=sys.stderr)
    return {"id": p["id"], "config": p, "adapter_dtypes": sorted(adapters),
            "layer_bytes": m["layer_bytes"], "tensors": m["tensors"]}


def points() -> list[dict]:
    base = dict(b=2, s=64, h=128, a=4, kv=4, ffn=344)
    pts = [dict(base, mode="trained"), dict(base, mode="frozen"), dict(base, mode="frozen", s=128),
           dict(base, mode="frozen", ffn=768)]
    pts += [dict(base, mode="frozen", autocast=True)]
    for r, targets, dropout in ((8, ["q", "v"], 0.0), (16, ["q", "v"], 0.0),
                                (8, ["q", "k", "v", "o", "gate", "up", "down"], 0.0),
                                (8, ["q", "v"], 0.1),
                                (8, ["q", "k", "v", "o", "gate", "up", "down"], 0.1)):
        pts.append(dict(base, mode="lora", r=r, targets=targets, dropout=dropout))
        pts.append(dict(base, mode="lora", r=r, targets=targets, dropout=dropout, autocast=True))
    for p in pts:
        tag = "-".join(f"{k}{p[k]}" for k in ("b", "s", "h", "a", "kv", "ffn"))
        extra = (f"-r{p['r']}-{'+'.join(p['targets'])}-drop{p['dropout']:g}"
                 if p["mode"] == "lora" else "")
        p["id"] = f"llama-eager-{p['mode']}-{tag}{extra}" + ("-autocast" if p.get("autocast") else "")
    return pts


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    torch.set_num_threads(1)
    data = {"what": "bytes PyTorch saves for backward in one Llama decoder layer, full "
                    "fine-tuning vs a frozen base vs PEFT LoRA (saved_tensors_hooks, storage-"
                    "deduplicated, parameters excluded); see scripts/measure_saved_tensors_lora.py",
            "versions": {"torch": torch.__version__, "transformers": transformers.__version__,
                         "peft": peft.__version__, "python": platform.python_version()},
            "device": "cpu", "dtype": "bfloat16", "cases": [run(p) for p in points()]}
    with open(a.out, "w") as f:
        f.write(mst._dumps(data))


if __name__ == "__main__":
    main()
