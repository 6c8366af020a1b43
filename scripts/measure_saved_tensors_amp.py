"""Measure what one Llama decoder layer saves for backward under torch AMP on fp32 weights.

HF Trainer with ``bf16=True`` on a model loaded in fp32 runs every layer under
``torch.autocast``: the weights and the residual stream are fp32, each ``F.linear`` casts
its input and weight to bf16 and keeps both casts for backward. The hooks are
``scripts/measure_saved_tensors.py``'s (every tensor autograd keeps, storage-deduplicated,
the layer's parameters left out: autocast's 16-bit weight copies are not parameters and are
listed, ``kind`` ``weight_copy``). For each shape the same layer is measured in bf16
(weights and input bf16, no autocast) and in fp32 under ``torch.autocast("cpu",
bfloat16)``; SDPA without dropout (the CPU's flash kernel, which keeps 16-bit q, k, v, as
the CUDA kernels do). ``linear`` and ``mul`` are autocast's lower-precision and
pass-through ops on both devices, so the CPU keeps what a GPU keeps.

Needs torch and transformers (a separate environment)::

    HF_HUB_OFFLINE=1 ~/torch-env/bin/python scripts/measure_saved_tensors_amp.py \\
        --out tests/data/saved_tensors_amp_hf.json

It is a tool, not a test: ``tests/engine/test_memory_terms.py`` reads the JSON.
"""

from __future__ import annotations

import argparse
import os
import platform
import sys

os.environ.setdefault("HF_HUB_OFFLINE", "1")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import torch  # noqa: E402
import transformers  # noqa: E402

import measure_saved_tensors as mst  # noqa: E402


def run(p: dict) -> dict:
    torch.manual_seed(0)
    amp = p["mode"] == "amp_fp32"
    dtype = torch.float32 if amp else torch.bfloat16
    cfg, layer, rope = mst._llama_like("llama", dict(p, arch="llama", attn="sdpa"))
    with torch.no_grad():
        for w in layer.parameters():
            if w.dim() >= 2:
                w.normal_(0.0, 0.02)
    layer = layer.to(dtype).train()
    b, s, h = p["b"], p["s"], p["h"]
    x = torch.randn(b, s, h, dtype=dtype, requires_grad=True)
    pos = torch.arange(s).unsqueeze(0).expand(b, s)
    with torch.no_grad():
        cos, sin = rope(x, pos)
    kwargs = {"attention_mask": None, "position_ids": pos, "position_embeddings": (cos, sin)}

    def call(mod, t):
        if amp:
            with torch.autocast("cpu", dtype=torch.bfloat16):
                return mod(t, **kwargs)
        return mod(t, **kwargs)

    m = mst.measure(layer, x, call, (cos, sin))
    copies = 0
    for r in m["tensors"]:
        # F.linear's backward keeps its (cast) weight as mm's mat2, its input as self
        if amp and r["kind"] == "activation" and r["dtype"] == "bfloat16" and "linear" in r["function"] \
                and r["saved_by"] and all(x.endswith("_saved_mat2") for x in r["saved_by"]):
            r["kind"] = "weight_copy"
            copies += r["storage_bytes"]
    linear = sum(w.numel() for w in layer.parameters() if w.dim() == 2)
    layer_bytes = m["layer_bytes"] - copies
    print(f"{p['id']:<44} {layer_bytes:>9} B {layer_bytes / (b * s * h):6.2f} x sbh, "
          f"weight copies {copies} B", file=sys.stderr)
    return {"id": p["id"], "config": p, "layer_bytes": layer_bytes, "weight_copy_bytes": copies,
            "linear_params": linear, "tensors": m["tensors"]}


def points() -> list[dict]:
    base = dict(b=2, s=64, a=4, kv=4, h=128, ffn=344)
    pts = []
    for shape in (base, dict(base, ffn=688), dict(base, s=128), dict(base, h=256, a=8, kv=2)):
        for mode in ("bf16", "amp_fp32"):
            pts.append(dict(shape, mode=mode))
    for p in pts:
        p["id"] = f"llama-sdpa-{p['mode']}-" + "-".join(f"{k}{p[k]}" for k in ("b", "s", "h", "a", "kv", "ffn"))
    return pts


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    torch.set_num_threads(1)
    data = {"what": "bytes PyTorch saves for backward in one Llama decoder layer in bf16 and in fp32 under "
                    "bf16 autocast (saved_tensors_hooks, storage-deduplicated, parameters excluded; "
                    "autocast's weight copies apart); see scripts/measure_saved_tensors_amp.py",
            "versions": {"torch": torch.__version__, "transformers": transformers.__version__,
                         "python": platform.python_version()},
            "device": "cpu", "cases": [run(p) for p in points()]}
    with open(a.out, "w") as f:
        f.write(mst._dumps(data))


if __name__ == "__main__":
    main()
