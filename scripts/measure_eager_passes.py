"""Count the bytes eager PyTorch's element-wise kernels move in a transformers Llama layer.

``scripts/dispatch_bytes.py``'s ``ByteCounter`` adds up, for the forward and for
``backward(grad)`` of each module, the bytes its element-wise aten ops read and write
(GEMMs, views and allocations left out; the autograd engine's gradient sums included):
the memory-bound work ``simulation/compute.py`` counts in ``PASSES["pytorch_eager"]``,
one GPU kernel per aten op. The modules are a bf16 ``LlamaDecoderLayer`` built from a
small config in code (random weights, eager attention, no dropout), each run on its own
with an input that requires grad: ``input_layernorm`` (trained and frozen weight),
``mlp``, ``self_attn`` (at two sequence lengths, so the s x s terms separate) and the
whole layer. Autograd's derivative formulas are the same aten ops on the CPU and on CUDA;
what CUDA fuses differently (dropout) is not in these modules.

Needs torch and transformers (tierlab depends on neither)::

    python scripts/measure_eager_passes.py --out tests/data/eager_passes_llama.json

and, with SDPA attention (transformers >= 4.48 in its own environment; recorded with 4.57.3)::

    python scripts/measure_eager_passes.py --attn sdpa --out tests/data/eager_passes_llama_sdpa.json

It is a tool, not a test: ``tests/engine/test_eager_passes.py`` reads the JSON.
"""

from __future__ import annotations

import os
import sys

os.environ.setdefault("HF_HUB_OFFLINE", "1")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import torch  # noqa: E402
import transformers  # noqa: E402

import measure_saved_tensors as mst  # noqa: E402
import dispatch_bytes  # noqa: E402
from dispatch_bytes import ByteCounter  # noqa: E402


def _count(module, x, kwargs) -> dict:
    for w in module.parameters():      # a fresh .grad: no accumulation into an earlier one
        w.grad = None
    with ByteCounter() as fwd:
        y = module(x, **kwargs)
    y = y[0] if isinstance(y, tuple) else y
    g = torch.randn_like(y)
    with ByteCounter() as bwd:
        y.backward(g)
    return {"forward_bytes": fwd.bytes, "backward_bytes": bwd.bytes,
            "forward_ops": fwd.ops, "backward_ops": bwd.ops}


def llama_parts(p: dict) -> tuple:
    """``(layer, [(name, module, kwargs)])``: a bf16 ``LlamaDecoderLayer`` of config ``p``
    (``attn`` eager or sdpa) in training mode, and the modules measured: its first norm, MLP,
    attention and the whole layer, each with the keyword arguments it takes."""
    b, s, h = p["b"], p["s"], p["h"]
    mst.DTYPE = torch.bfloat16
    attn = p.get("attn", "eager")
    cfg, layer, rope = mst._llama_like("llama", dict(p, arch="llama", attn=attn))
    layer = layer.to(torch.bfloat16).train()
    pos = torch.arange(s).unsqueeze(0).expand(b, s)
    attn_kw = {"attention_mask": mst._causal_mask(b, s) if attn == "eager" else None, "position_ids": pos}
    if rope is not None:            # transformers >= 4.48: the layer takes (cos, sin)
        with torch.no_grad():
            attn_kw["position_embeddings"] = rope(torch.zeros(b, s, h, dtype=torch.bfloat16), pos)
    return layer, [("rmsnorm", layer.input_layernorm, {}), ("mlp", layer.mlp, {}),
                   ("self_attn", layer.self_attn, attn_kw), ("layer", layer, attn_kw)]


def run(p: dict) -> dict:
    torch.manual_seed(0)
    b, s, h = p["b"], p["s"], p["h"]
    layer, parts = llama_parts(p)
    out = {"config": p, "parts": {}}
    for name, module, kw in parts:
        x = torch.randn(b, s, h, dtype=torch.bfloat16, requires_grad=True)
        out["parts"][name] = _count(module, x, kw)
    layer.input_layernorm.weight.requires_grad_(False)
    x = torch.randn(b, s, h, dtype=torch.bfloat16, requires_grad=True)
    out["parts"]["rmsnorm_frozen"] = _count(layer.input_layernorm, x, {})
    print(p, {k: (v["forward_bytes"], v["backward_bytes"]) for k, v in out["parts"].items()},
          file=sys.stderr)
    return out


def points(attn: str = "eager") -> list[dict]:
    base = dict(b=2, s=64, h=128, a=4, kv=4, ffn=344)
    if attn != "eager":
        base["attn"] = attn
    return [base, dict(base, s=128), dict(base, kv=2)]


WHAT = ("bytes read plus written by the element-wise aten ops (GEMMs, views and "
        "allocations left out) of a bf16 transformers LlamaDecoderLayer's modules, "
        "forward and backward; see scripts/measure_eager_passes.py")


def main():
    versions = {"torch": torch.__version__, "transformers": transformers.__version__}
    dispatch_bytes.main(__doc__, WHAT, versions, run, points)


if __name__ == "__main__":
    main()
