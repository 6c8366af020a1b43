"""Measure what PyTorch saves for backward in one Llama decoder layer under NeMo AutoModel's LoRA.

The hooks of ``scripts/measure_saved_tensors.py`` (``measure``: every tensor autograd
keeps, storage-deduplicated, the layer's parameters left out), on one bf16
``LlamaDecoderLayer`` built from a small config in code (random weights, nothing
downloaded), in two set-ups:

* ``frozen``: no parameter requires grad, the input does (the base under LoRA);
* ``automodel``: the frozen layer with each targeted ``nn.Linear`` patched by AutoModel's
  own ``nemo_automodel.components._peft.lora.patch_linear_module`` (``dim`` r, ``alpha``
  2r, ``dropout``, ``dropout_position``), so what the adapters add is AutoModel's forward.

``patch_linear_module`` is called with ``use_triton=False``: with Transformer Engine
installed (NVIDIA's containers, where AutoModel's benchmarks ran) it turns the Triton path
off itself (``if HAS_TE: ... use_triton = False``), so the plain ``LinearLoRA.forward``
ran. Its adapters take the base weight's dtype (``lora_dtype`` None) and there is no
autocast: the model is bf16 throughout, as AutoModel trains it.

Needs torch, transformers and nemo-automodel 0.2.0 (tierlab depends on none of them; its
``components/_peft/lora.py`` is the file at AutoModel commit 507bfb75, where the
performance table was measured, but for ``lora_A``'s initialiser), e.g.::

    pip install --no-deps --target /some/dir nemo-automodel==0.2.0
    PYTHONPATH=/some/dir python scripts/measure_saved_tensors_lora_automodel.py \
        --out tests/data/saved_tensors_lora_automodel.json

It is a tool, not a test: ``tests/engine/test_lora_automodel.py`` reads the JSON.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys

os.environ.setdefault("HF_HUB_OFFLINE", "1")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import nemo_automodel  # noqa: E402
import torch  # noqa: E402
import transformers  # noqa: E402
from nemo_automodel.components._peft.lora import patch_linear_module  # noqa: E402

import measure_saved_tensors as mst  # noqa: E402

MODULES = {"q": "self_attn.q_proj", "k": "self_attn.k_proj", "v": "self_attn.v_proj",
           "o": "self_attn.o_proj", "gate": "mlp.gate_proj", "up": "mlp.up_proj",
           "down": "mlp.down_proj"}


def run(p: dict) -> dict:
    torch.manual_seed(0)
    b, s, h = p["b"], p["s"], p["h"]
    mst.DTYPE = torch.bfloat16
    cfg, layer, rope = mst._llama_like("llama", dict(p, arch="llama", attn="eager"))
    with torch.no_grad():
        for w in layer.parameters():
            if w.dim() >= 2:
                w.normal_(0.0, 0.02)
    layer = layer.to(torch.bfloat16)
    for w in layer.parameters():
        w.requires_grad_(False)
    if p["mode"] == "automodel":
        for t in p["targets"]:
            patch_linear_module(layer.get_submodule(MODULES[t]), dim=p["r"], alpha=2 * p["r"],
                                dropout=p["dropout"], dropout_position=p["position"],
                                use_triton=False)
        for n, w in layer.named_parameters():
            w.requires_grad_("lora_" in n)
    layer.train()
    x = torch.randn(b, s, h, dtype=torch.bfloat16, requires_grad=True)
    pos = torch.arange(s).unsqueeze(0).expand(b, s)
    kwargs = {"attention_mask": mst._causal_mask(b, s), "position_ids": pos}
    adapters = {str(w.dtype).replace("torch.", "") for n, w in layer.named_parameters() if "lora_" in n}
    m = mst.measure(layer, x, lambda mod, t: mod(t, **kwargs))
    print(f"{p['id']:<56} {m['layer_bytes']:>9} B {m['layer_bytes'] / (b * s * h):6.2f} x sbh",
          file=sys.stderr)
    return {"id": p["id"], "config": p, "adapter_dtypes": sorted(adapters),
            "layer_bytes": m["layer_bytes"], "tensors": m["tensors"]}


def points() -> list[dict]:
    base = dict(b=2, s=64, h=128, a=4, kv=4, ffn=344)
    pts = [dict(base, mode="frozen")]
    for r, targets, dropout, position in ((8, ["q", "v"], 0.0, "post"),
                                          (16, ["q", "v"], 0.0, "post"),
                                          (8, list(MODULES), 0.0, "post"),
                                          (8, ["q", "v"], 0.1, "post"),
                                          (8, list(MODULES), 0.1, "post"),
                                          (8, list(MODULES), 0.1, "pre")):
        pts.append(dict(base, mode="automodel", r=r, targets=targets, dropout=dropout,
                        position=position))
    for p in pts:
        tag = "-".join(f"{k}{p[k]}" for k in ("b", "s", "h", "a", "kv", "ffn"))
        extra = (f"-r{p['r']}-{'+'.join(p['targets'])}-drop{p['dropout']:g}-{p['position']}"
                 if p["mode"] == "automodel" else "")
        p["id"] = f"llama-eager-{p['mode']}-{tag}{extra}"
    return pts


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    torch.set_num_threads(1)
    data = {"what": "bytes PyTorch saves for backward in one bf16 Llama decoder layer, a frozen "
                    "base vs NeMo AutoModel's LinearLoRA (saved_tensors_hooks, storage-"
                    "deduplicated, parameters excluded); see "
                    "scripts/measure_saved_tensors_lora_automodel.py",
            "versions": {"torch": torch.__version__, "transformers": transformers.__version__,
                         "nemo_automodel": nemo_automodel.__version__,
                         "python": platform.python_version()},
            "device": "cpu", "dtype": "bfloat16", "cases": [run(p) for p in points()]}
    with open(a.out, "w") as f:
        f.write(mst._dumps(data))


if __name__ == "__main__":
    main()
