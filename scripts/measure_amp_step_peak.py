"""What torch AMP holds at the end of a Hugging Face forward when the weights are fp32.

HF Trainer with ``bf16=True`` on a model loaded in fp32 runs the forward under
``torch.autocast``: every ``F.linear`` casts its fp32 weight to bf16, and autocast keeps
the casts of leaf tensors that require grad in its cache until the outermost autocast
region exits (``aten/src/ATen/autocast_mode.cpp``, ``cached_cast``: ``arg.requires_grad()
&& arg.is_leaf()``), so after the model's forward (which computes the loss inside the
region) a 16-bit copy of every trainable matrix is live. This script runs one step of a
small fp32 ``LlamaForCausalLM`` under ``torch.autocast("cpu", bfloat16)`` with and without
gradient checkpointing, under ``torch.profiler.profile(profile_memory=True)``, and records
the bytes allocated at the end of the forward (above the model) and the peak, for two
model widths so that the per-parameter part can be told from the per-token one.

Needs torch and transformers (a separate environment)::

    HF_HUB_OFFLINE=1 ~/torch-env/bin/python scripts/measure_amp_step_peak.py \\
        --out tests/data/amp_step_peak_hf.json

It is a tool, not a test: ``tests/engine/test_memory_terms.py`` reads the JSON.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys

os.environ.setdefault("HF_HUB_OFFLINE", "1")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import torch  # noqa: E402
import transformers  # noqa: E402
from transformers import LlamaConfig, LlamaForCausalLM  # noqa: E402

from measure_qlora_step_peak import profiled_step  # noqa: E402


def run(p: dict) -> dict:
    torch.manual_seed(0)
    cfg = LlamaConfig(vocab_size=p["vocab"], hidden_size=p["h"], intermediate_size=p["ffn"],
                      num_hidden_layers=p["layers"], num_attention_heads=p["a"],
                      num_key_value_heads=p["kv"], max_position_embeddings=4 * p["s"])
    cfg._attn_implementation = "sdpa"
    model = LlamaForCausalLM(cfg).float().train()
    if p["checkpointing"]:
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": True})
        model.config.use_cache = False
    linear = sum(m.weight.numel() for m in model.modules() if isinstance(m, torch.nn.Linear))
    ids = torch.randint(0, p["vocab"], (p["b"], p["s"]))
    m = profiled_step(model, input_ids=ids, labels=ids)
    print(f"{p['id']:<48} end of forward {m['forward_end_bytes']:>11} B  peak {m['peak_bytes']:>11} B "
          f"({m['peak_op']})", file=sys.stderr)
    return {"id": p["id"], "config": p, "linear_params": linear, "forward_end_bytes": m["forward_end_bytes"],
            "peak_bytes": m["peak_bytes"], "peak_op": m["peak_op"], "peak_phase": m["peak_phase"]}


def points() -> list[dict]:
    base = dict(b=1, s=128, h=128, a=4, kv=2, ffn=352, layers=2, vocab=2048)
    pts = []
    for ck in (False, True):
        for shape in (base, dict(base, h=256, ffn=704, a=8, kv=4), dict(base, s=256)):
            pts.append(dict(shape, checkpointing=ck))
    for p in pts:
        p["id"] = ("llama-amp-fp32-" + "-".join(f"{k}{p[k]}" for k in ("b", "s", "h", "ffn", "layers", "vocab"))
                   + ("-checkpointing" if p["checkpointing"] else ""))
    return pts


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    torch.set_num_threads(1)
    data = {"what": "bytes allocated at the end of the forward and at the peak (CPU allocator events) of one "
                    "step of an fp32 LlamaForCausalLM under bf16 autocast; see scripts/measure_amp_step_peak.py",
            "versions": {"torch": torch.__version__, "transformers": transformers.__version__,
                         "python": platform.python_version()},
            "device": "cpu", "cases": [run(p) for p in points()]}
    with open(a.out, "w") as f:
        json.dump(data, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
