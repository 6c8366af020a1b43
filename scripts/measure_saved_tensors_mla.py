"""Measure what PyTorch saves for backward in one DeepSeek-V3 decoder layer.

The same measurement as ``scripts/measure_saved_tensors.py`` (whose ``measure`` it uses:
``saved_tensors_hooks`` around one layer, tensors deduplicated by storage, parameters and
the shared cos/sin left out), for transformers' ``DeepseekV3DecoderLayer`` built from a
small ``DeepseekV3Config`` made in code: multi-head latent attention with and without q
compression (``q_lora_rank`` None), a dense first block (``layer_idx`` below
``first_k_dense_replace``) and an expert block with routed and shared experts, attention
"sdpa" and "eager". It needs transformers 4.57 or later (DeepseekV3 and its
``position_embeddings`` API), which tierlab does not depend on::

    python3 -m venv ~/torch-env && ~/torch-env/bin/pip install torch transformers
    HF_HUB_OFFLINE=1 ~/torch-env/bin/python scripts/measure_saved_tensors_mla.py \\
        --out tests/data/saved_tensors_hf_mla.json

It is a tool, not a test: ``tests/engine/test_activations_mla.py`` reads the JSON.
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
sys.path.insert(0, str(Path(__file__).parent))

import torch  # noqa: E402
import transformers  # noqa: E402
from transformers import DeepseekV3Config  # noqa: E402
from transformers.models.deepseek_v3.modeling_deepseek_v3 import (  # noqa: E402
    DeepseekV3DecoderLayer, DeepseekV3RotaryEmbedding)

import measure_saved_tensors as mst  # noqa: E402

DTYPE = torch.bfloat16


def run_point(p: dict) -> dict:
    torch.manual_seed(0)
    b, s, h = p["b"], p["s"], p["h"]
    cfg = DeepseekV3Config(
        hidden_size=h, intermediate_size=p["ffn"], moe_intermediate_size=p["moe_ffn"],
        num_hidden_layers=2, num_attention_heads=p["a"], num_key_value_heads=p["a"],
        n_shared_experts=p["shared"], n_routed_experts=p["experts"], num_experts_per_tok=p["top_k"],
        n_group=1, topk_group=1, first_k_dense_replace=1, q_lora_rank=p["q_lora"],
        kv_lora_rank=p["kv_lora"], qk_nope_head_dim=p["nope"], qk_rope_head_dim=p["rope"],
        v_head_dim=p["v"], vocab_size=128, max_position_embeddings=4 * s, attention_dropout=0.0)
    cfg._attn_implementation = p["attn"]
    layer = DeepseekV3DecoderLayer(cfg, layer_idx=0 if p["block"] == "dense" else 1)
    rope = DeepseekV3RotaryEmbedding(cfg)
    x = torch.randn(b, s, h, dtype=DTYPE, requires_grad=True)
    pos = torch.arange(s).unsqueeze(0).expand(b, s)
    with torch.no_grad():
        cos, sin = rope(x, pos)
        for w in layer.parameters():
            if w.dim() >= 2:
                w.normal_(0.0, 0.02)
    layer = layer.to(DTYPE).train()
    mask = mst._causal_mask(b, s) if p["attn"] == "eager" else None

    def call(layer, x):
        return layer(x, attention_mask=mask, position_ids=pos, position_embeddings=(cos, sin))

    m = mst.measure(layer, x, call, (cos, sin))
    print(f"{p['id']:<50} {m['layer_bytes']:>10} B", file=sys.stderr)
    return {"id": p["id"], "config": p, "layer_bytes": m["layer_bytes"],
            "shared_input_bytes": m["shared_input_bytes"], "tensors": m["tensors"]}


def points() -> list[dict]:
    base = dict(b=2, s=64, h=128, a=4, ffn=344, moe_ffn=96, experts=8, top_k=2, shared=1,
                q_lora=96, kv_lora=64, nope=32, rope=16, v=32)
    variants = [{}, dict(s=128), dict(q_lora=None), dict(kv_lora=128, v=48), dict(shared=2),
                dict(block="dense")]
    pts = []
    for attn in ("sdpa", "eager"):
        for v in variants:
            p = dict(base, attn=attn, **{"block": "moe", **v})
            p["id"] = f"deepseek_v3-{attn}-{p['block']}-" + "-".join(
                f"{k}{p[k]}" for k in ("s", "q_lora", "kv_lora", "v", "shared"))
            pts.append(p)
    return pts


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    torch.set_num_threads(1)
    mst.DTYPE = DTYPE
    cases = [run_point(p) for p in points()]
    data = {"what": "bytes PyTorch saves for backward in one DeepseekV3DecoderLayer "
                    "(saved_tensors_hooks), storage-deduplicated, parameters excluded; see "
                    "scripts/measure_saved_tensors_mla.py",
            "versions": {"torch": torch.__version__, "transformers": transformers.__version__,
                         "python": platform.python_version()},
            "device": "cpu", "dtype": "bfloat16", "cases": cases}
    with open(a.out, "w") as f:
        f.write(mst._dumps(data))


if __name__ == "__main__":
    main()
