"""Peak memory of one Hugging Face QLoRA training step, from the profiler's allocation events.

Saved tensors are not peaks: what a step holds at its peak also counts the temporaries
of the loss, the logits and the gradients as they flow. This script runs one step of a
small ``LlamaForCausalLM`` set up the way the standard QLoRA recipe sets up a model
(bitsandbytes NF4 ``Linear4bit`` in every decoder ``nn.Linear``, the head left in 16 bits as
``BitsAndBytesConfig``'s default ``llm_int8_skip_modules`` does, PEFT's
``prepare_model_for_kbit_training`` (fp32 embeddings, norms and head; gradient
checkpointing, reentrant), ``get_peft_model`` with LoRA r 32 on q, k, v, o, gate, up and
down, then the forward under ``torch.autocast(bfloat16)`` as HF Trainer with ``bf16=True``
runs it, ``loss.backward()``) under ``torch.profiler.profile(profile_memory=True)``, and
sums the CPU allocator's events over time: the peak above what was allocated before the
forward, the operator running at the peak, and the live bytes at the end of the forward.

Two sequence lengths give the per-token slope (the model's fixed part cancels), which is
what a maximum-context table measures. The CPU runs SDPA, not FlashAttention-2 (CUDA
only): the attention core is small beside the logits at a 128k vocabulary either way.

Needs torch, transformers, peft and bitsandbytes >= 0.46 (CPU backend) in a separate
environment (tierlab depends on none of them)::

    HF_HUB_OFFLINE=1 ~/qlora-env/bin/python scripts/measure_qlora_step_peak.py \\
        --out tests/data/qlora_step_peak_hf.json

It is a tool, not a test: ``tests/engine/test_qlora.py`` reads the JSON.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import bitsandbytes as bnb  # noqa: E402
import peft  # noqa: E402
import torch  # noqa: E402
import transformers  # noqa: E402
from peft import LoraConfig, get_peft_model, prepare_model_for_kbit_training  # noqa: E402
from transformers import LlamaConfig, LlamaForCausalLM  # noqa: E402

TARGETS = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]


def _quantise(model: torch.nn.Module) -> None:
    """Every decoder ``nn.Linear`` as bitsandbytes' NF4 ``Linear4bit`` (double quantisation,
    bf16 compute), the head left alone, as ``from_pretrained(quantization_config=
    BitsAndBytesConfig(load_in_4bit=True, bnb_4bit_quant_type="nf4",
    bnb_4bit_use_double_quant=True, bnb_4bit_compute_dtype=torch.bfloat16))`` loads it."""
    for parent in list(model.model.layers.modules()):
        for name, child in list(parent.named_children()):
            if isinstance(child, torch.nn.Linear):
                q = bnb.nn.Linear4bit(child.in_features, child.out_features, bias=child.bias is not None,
                                      compute_dtype=torch.bfloat16, compress_statistics=True,
                                      quant_type="nf4")
                q.weight = bnb.nn.Params4bit(child.weight.data.float(), requires_grad=False,
                                             compress_statistics=True, quant_type="nf4")
                setattr(parent, name, q.to("cpu"))
    model.is_loaded_in_4bit = True       # what prepare_model_for_kbit_training looks for
    model.is_quantized = True


def _events(prof) -> tuple[list, list]:
    """``(memory, ops)``: the allocator's events ``(start_ns, bytes)`` (negative: freed) and
    the operators ``(start_ns, end_ns, name)``, from the profiler's kineto results."""
    mem, ops = [], []
    for e in prof.profiler.kineto_results.events():
        if e.name() == "[memory]":
            if str(e.device_type()).endswith("CPU"):
                mem.append((e.start_ns(), e.nbytes()))
        else:
            ops.append((e.start_ns(), e.start_ns() + e.duration_ns(), e.name()))
    return sorted(mem), sorted(ops)


def _op_at(ops: list, t: int) -> str:
    """The innermost operator running at ``t`` (the latest-starting one that spans it)."""
    name = ""
    for s0, s1, n in ops:
        if s0 > t:
            break
        if s1 >= t and n not in ("forward", "backward"):
            name = n
    return name


def profiled_step(model, **inputs) -> dict:
    """One forward (under ``torch.autocast("cpu", bfloat16)``) and backward of ``model`` on
    ``inputs`` under the profiler's memory events: ``peak_bytes`` (allocated above what was
    before), ``peak_op``, ``peak_phase`` (forward or backward), ``forward_end_bytes`` and the
    ``loss``."""
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU],
                                profile_memory=True, record_shapes=False) as prof:
        with torch.profiler.record_function("forward"):
            with torch.autocast("cpu", dtype=torch.bfloat16):
                loss = model(**inputs).loss
        with torch.profiler.record_function("backward"):
            loss.backward()
    mem, ops = _events(prof)
    fwd_end = max(s1 for _, s1, n in ops if n == "forward")
    live, peak, peak_t, at_fwd_end = 0, 0, 0, 0
    for t, nbytes in mem:
        live += nbytes
        if live > peak:
            peak, peak_t = live, t
        if t <= fwd_end:
            at_fwd_end = live
    return {"peak_bytes": peak, "peak_op": _op_at(ops, peak_t),
            "peak_phase": "forward" if peak_t <= fwd_end else "backward",
            "forward_end_bytes": at_fwd_end, "loss": loss}


def run(p: dict) -> dict:
    torch.manual_seed(0)
    cfg = LlamaConfig(vocab_size=p["vocab"], hidden_size=p["h"], intermediate_size=p["ffn"],
                      num_hidden_layers=p["layers"], num_attention_heads=p["a"],
                      num_key_value_heads=p["kv"], max_position_embeddings=4 * p["s"],
                      torch_dtype=torch.bfloat16)
    cfg._attn_implementation = "sdpa"
    model = LlamaForCausalLM(cfg).to(torch.bfloat16)
    _quantise(model)
    model = prepare_model_for_kbit_training(model, use_gradient_checkpointing=True)
    model = get_peft_model(model, LoraConfig(r=p["r"], lora_alpha=2 * p["r"], lora_dropout=0.0,
                                             target_modules=TARGETS, bias="none",
                                             task_type="CAUSAL_LM"))
    model.train()
    ids = torch.randint(0, p["vocab"], (p["b"], p["s"]))
    mask = torch.ones_like(ids)
    m = profiled_step(model, input_ids=ids, attention_mask=mask, labels=ids)
    print(f"{p['id']:<44} peak {m['peak_bytes']:>12} B in {m['peak_phase']} ({m['peak_op']}); "
          f"end of forward {m['forward_end_bytes']:>12} B", file=sys.stderr)
    return {"id": p["id"], "config": p, "peak_bytes": m["peak_bytes"], "peak_phase": m["peak_phase"],
            "peak_op": m["peak_op"], "forward_end_bytes": m["forward_end_bytes"],
            "loss_dtype": str(m["loss"].dtype).replace("torch.", "")}


def points() -> list[dict]:
    base = dict(b=1, h=64, a=4, kv=2, ffn=224, layers=2, vocab=32000, r=32)
    pts = [dict(base, s=256), dict(base, s=512), dict(base, s=512, vocab=64000)]
    for p in pts:
        p["id"] = "llama-qlora-nf4-" + "-".join(f"{k}{p[k]}" for k in ("b", "s", "h", "layers", "vocab", "r"))
    return pts


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    torch.set_num_threads(1)
    data = {"what": "peak bytes above the model (CPU allocator events, torch.profiler profile_memory) of one "
                    "HF QLoRA training step of a small LlamaForCausalLM; see scripts/measure_qlora_step_peak.py",
            "versions": {"torch": torch.__version__, "transformers": transformers.__version__,
                         "peft": peft.__version__, "bitsandbytes": bnb.__version__,
                         "python": platform.python_version()},
            "device": "cpu", "cases": [run(p) for p in points()]}
    with open(a.out, "w") as f:
        json.dump(data, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
