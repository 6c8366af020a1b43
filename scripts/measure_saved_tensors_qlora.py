"""Measure what one QLoRA Llama decoder layer saves for backward with a 16-bit and an fp32
residual stream, with bitsandbytes' own 4-bit layers.

The standard Hugging Face QLoRA recipe (PEFT ``prepare_model_for_kbit_training``) leaves the
embeddings, norms and head in fp32, so every decoder layer's input is fp32
(``tests/data/qlora_residual_dtype.json``); bitsandbytes' ``Linear4bit.forward`` returns
``out.to(inp_dtype)``, so the frozen projections' outputs are fp32 as well, and so is what
the norms, rotary, SwiGLU and residual adds then save. With full recomputation, the layer
re-run in backward holds these: the recompute working set. This script measures that set
(what the layer saves without checkpointing) for the same layer with a bf16 input and bf16
norms (qlora.py's ``adapter_dtype`` bf16 recipe) and with an fp32 input and fp32 norms
(PEFT's default), each under ``torch.autocast("cpu", bfloat16)`` with fp32 adapters (HF
Trainer with ``bf16=True``), the base ``bnb.nn.Linear4bit`` (NF4, double quantisation,
compute dtype bf16) on q, k, v, o, gate, up and down, LoRA on all seven.

The hooks are ``scripts/measure_saved_tensors.py``'s (every tensor autograd keeps,
storage-deduplicated, parameters left out). bitsandbytes' ``MatMul4Bit`` keeps the
quantised weight on ``ctx.tensors``, not through ``save_for_backward``, so the hooks do
not see it; it is a parameter, left out anyway, and the input is not kept (the base is
frozen). Attention is SDPA without dropout: on the CPU PyTorch's flash kernel runs, which
keeps q, k, v and its output in 16 bits (autocast casts the fp32 q, k, v) and an fp32
logsumexp, as the CUDA kernels do; transformers' FlashAttention-2 path casts fp32 q, k, v to
the target dtype itself. SiLU and the product are not autocast ops on either device, so
their fp32 tensors are what a GPU keeps too.

Needs torch, transformers, peft and bitsandbytes >= 0.46 (its CPU backend; tierlab depends
on none of them), in a separate environment::

    HF_HUB_OFFLINE=1 ~/qlora-env/bin/python scripts/measure_saved_tensors_qlora.py \
        --out tests/data/saved_tensors_qlora_hf.json

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

import bitsandbytes as bnb  # noqa: E402
import peft  # noqa: E402
import torch  # noqa: E402
import transformers  # noqa: E402
from peft import LoraConfig  # noqa: E402
from peft.tuners.lora import LoraModel  # noqa: E402

import measure_saved_tensors as mst  # noqa: E402

TARGETS = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")


class _Holder(torch.nn.Module):
    """One decoder layer as a model of its own, for PEFT to wrap."""

    def __init__(self, layer):
        super().__init__()
        self.layer = layer

    def forward(self, x, **kw):
        return self.layer(x, **kw)


def _quantise(layer: torch.nn.Module) -> None:
    """Every ``nn.Linear`` of ``layer`` replaced by bitsandbytes' NF4 ``Linear4bit``
    (double quantisation, bf16 compute), as ``BitsAndBytesConfig(load_in_4bit=True,
    bnb_4bit_quant_type="nf4", bnb_4bit_use_double_quant=True,
    bnb_4bit_compute_dtype=torch.bfloat16)`` loads a model."""
    for parent in list(layer.modules()):
        for name, child in list(parent.named_children()):
            if isinstance(child, torch.nn.Linear):
                q = bnb.nn.Linear4bit(child.in_features, child.out_features, bias=child.bias is not None,
                                      compute_dtype=torch.bfloat16, compress_statistics=True,
                                      quant_type="nf4")
                q.weight = bnb.nn.Params4bit(child.weight.data.float(), requires_grad=False,
                                             compress_statistics=True, quant_type="nf4")
                q = q.to("cpu")          # quantises the weight (Params4bit._quantize)
                setattr(parent, name, q)


def run(p: dict) -> dict:
    torch.manual_seed(0)
    b, s, h = p["b"], p["s"], p["h"]
    cfg, layer, rope = mst._llama_like("llama", dict(p, arch="llama", attn=p["attn"]))
    with torch.no_grad():
        for w in layer.parameters():
            if w.dim() >= 2:
                w.normal_(0.0, 0.02)
    residual = torch.float32 if p["residual"] == "fp32" else torch.bfloat16
    layer = layer.to(torch.bfloat16)
    _quantise(layer)
    for m in layer.modules():        # the norms: fp32 after prepare_model_for_kbit_training
        if not isinstance(m, bnb.nn.Linear4bit):
            for w in m.parameters(recurse=False):
                w.data = w.data.to(residual)
    model = _Holder(layer)
    for w in model.parameters():
        w.requires_grad_(False)
    lc = LoraConfig(r=p["r"], lora_alpha=2 * p["r"], lora_dropout=p["dropout"],
                    target_modules=list(TARGETS), bias="none")
    model = LoraModel(model, lc, "default")
    for n, w in model.named_parameters():
        w.requires_grad_("lora_" in n)
        if "lora_" in n:
            w.data = w.data.float()      # PEFT's autocast_adapter_dtype
    model.train()
    x = torch.randn(b, s, h, dtype=residual, requires_grad=True)
    pos = torch.arange(s).unsqueeze(0).expand(b, s)
    kwargs = {"attention_mask": mst._causal_mask(b, s) if p["attn"] == "eager" else None,
              "position_ids": pos}
    shared: tuple = ()
    if rope is not None:
        with torch.no_grad():
            cos, sin = rope(x, pos)
        shared = (cos, sin)
        kwargs["position_embeddings"] = (cos, sin)

    def call(mod, t):
        with torch.autocast("cpu", dtype=torch.bfloat16):
            return mod(t, **kwargs)

    m = mst.measure(model, x, call, shared)
    with torch.no_grad():
        out = call(model, x)
    out_dtype = str((out[0] if isinstance(out, tuple) else out).dtype)
    print(f"{p['id']:<56} {m['layer_bytes']:>9} B {m['layer_bytes'] / (b * s * h):6.2f} x sbh",
          file=sys.stderr)
    return {"id": p["id"], "config": p, "layer_output_dtype": out_dtype.replace("torch.", ""),
            "layer_bytes": m["layer_bytes"], "tensors": m["tensors"]}


def points() -> list[dict]:
    base = dict(b=2, s=64, h=128, a=4, kv=4, ffn=344, r=8, dropout=0.0, attn="sdpa")
    pts = []
    for shape in (base, dict(base, ffn=688), dict(base, s=128), dict(base, h=256, a=8, kv=8)):
        for residual in ("bf16", "fp32"):
            pts.append(dict(shape, residual=residual))
    for p in pts:
        tag = "-".join(f"{k}{p[k]}" for k in ("b", "s", "h", "a", "kv", "ffn", "r"))
        p["id"] = f"llama-{p['attn']}-qlora-nf4-{tag}-residual-{p['residual']}"
    return pts


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    torch.set_num_threads(1)
    data = {"what": "bytes PyTorch saves for backward in one QLoRA Llama decoder layer (bitsandbytes "
                    "NF4 Linear4bit base, PEFT LoRA on all seven projections, fp32 adapters, bf16 "
                    "autocast) with a bf16 and an fp32 residual stream (saved_tensors_hooks, storage-"
                    "deduplicated, parameters excluded); see scripts/measure_saved_tensors_qlora.py",
            "versions": {"torch": torch.__version__, "transformers": transformers.__version__,
                         "peft": peft.__version__, "bitsandbytes": bnb.__version__,
                         "python": platform.python_version()},
            "device": "cpu", "cases": [run(p) for p in points()]}
    with open(a.out, "w") as f:
        f.write(mst._dumps(data))


if __name__ == "__main__":
    main()
