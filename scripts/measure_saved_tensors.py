"""Measure what PyTorch saves for backward in one Hugging Face decoder layer.

Builds single layers from transformers' own classes (LlamaDecoderLayer with attention
"sdpa" and "eager", GPT2Block, MixtralDecoderLayer) from small configs made in code
(random weights, nothing downloaded), runs one forward in training mode under
``torch.autograd.graph.saved_tensors_hooks`` and records every tensor autograd keeps:
its bytes, dtype, shape, the module and torch function that saved it, and the backward
node (``grad_fn``) that holds it. Tensors that share storage are counted once (a saved
view holds its whole storage); the layer's parameters are not activations and are left
out; RoPE's cos/sin are made once per model and shared by every layer, so they are
listed apart (``shared_input``) and not in the layer's bytes.

It is a tool, not a test: the engine's tests read the JSON it writes
(``tests/data/saved_tensors_hf.json``) and never run it. It needs torch and
transformers, which tierlab does not depend on; install them in a separate
environment, e.g.::

    python3 -m venv ~/torch-env && ~/torch-env/bin/pip install torch transformers
    HF_HUB_OFFLINE=1 ~/torch-env/bin/python scripts/measure_saved_tensors.py \
        --out tests/data/saved_tensors_hf.json
    HF_HUB_OFFLINE=1 ~/torch-env/bin/python scripts/measure_saved_tensors.py \
        --dtype float32 --out tests/data/saved_tensors_hf_fp32.json
    HF_HUB_OFFLINE=1 ~/torch-env/bin/python scripts/measure_saved_tensors.py \
        --set families --out tests/data/saved_tensors_hf_families.json

``--set bloom`` measures transformers' ``BloomBlock`` (ALiBi, fused ``query_key_value``
with a bias, LayerNorm, ``BloomGelu``, attention and hidden dropout; eager attention, the
only kind it has), recorded with torch 2.13.0 (CPU) and transformers 4.31.0 into
``tests/data/saved_tensors_hf_bloom.json``::

    HF_HUB_OFFLINE=1 ~/torch-env/bin/python scripts/measure_saved_tensors.py \
        --set bloom --out tests/data/saved_tensors_hf_bloom.json

``--set families`` measures the other families the engine reads (Qwen2, Gemma, Gemma 2,
Phi-3, Falcon decoder layers, SDPA and eager) and the output stage of one-layer Llama,
Gemma and Gemma 2 CausalLMs with labels (final norm, lm_head, Gemma 2's
``final_logit_softcapping``, the loss), each saved tensor named by its module; recorded
with torch 2.13.0 (CPU) and transformers 5.24.0.

Everything runs on the CPU in bf16 (every op these layers use has a bf16 CPU kernel), or
in fp32 with ``--dtype float32`` (fp32 training). It runs with old transformers too
(4.31 has GPT2Block and LlamaDecoderLayer, eager attention only, no Mixtral): the points
it cannot build there are left out, and the cos/sin that such versions make inside each
layer are listed as ``rope_table`` (``rope_table_bytes``), apart from the layer's bytes,
since newer versions make them once per model. Module buffers (GPT-2's causal-mask
``bias`` in old versions) are model state, listed as ``buffer`` and not counted.
What CPU does differently from CUDA is written down in ``simulation/activations.py``
(``CPU`` and ``CUDA`` kernel traits): dropout masks and the SDPA kernel choice. The
``full`` points use reentrant checkpointing (``ctx.save_for_backward`` of the inputs,
which the hooks see); non-reentrant checkpointing installs its own hooks for what the
region saves, and was said to hide its inputs too, but in torch 2.13
``_CheckpointFrame.save_inputs`` saves them as ``SavedTensor`` outside its own hooks, so
an outer hook sees the layer input (the ``checkpointnon_reentrant`` point records it).
Saved tensors are what backward needs, not a peak: peaks need the profiler's memory
events.
"""

from __future__ import annotations

import argparse
import inspect
import json
import os
import platform
import sys
from collections import Counter

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import torch  # noqa: E402
import transformers  # noqa: E402
from torch.overrides import TorchFunctionMode  # noqa: E402
from transformers import GPT2Config, LlamaConfig  # noqa: E402
from transformers.models.gpt2.modeling_gpt2 import GPT2Block  # noqa: E402
from transformers.models.llama.modeling_llama import (LlamaDecoderLayer,  # noqa: E402
                                                      LlamaRotaryEmbedding)

try:                      # Mixtral came with transformers 4.36
    from transformers import MixtralConfig
    from transformers.models.mixtral.modeling_mixtral import (MixtralDecoderLayer,
                                                              MixtralRotaryEmbedding)
except ImportError:
    MixtralConfig = MixtralDecoderLayer = MixtralRotaryEmbedding = None

# transformers before 4.48 computes RoPE's cos/sin inside each attention layer (4.31's
# ``LlamaAttention.forward``: ``self.rotary_emb`` then ``apply_rotary_pos_emb``, which
# indexes them by position, a copy per layer) and has neither SDPA for these classes nor
# Llama attention dropout; newer ones take ``position_embeddings`` made once per model.
NEW_API = "position_embeddings" in inspect.signature(LlamaDecoderLayer.forward).parameters

DTYPE = torch.bfloat16
DTYPES = {"bfloat16": torch.bfloat16, "float32": torch.float32}


class _FuncStack(TorchFunctionMode):
    """Keeps the torch function being called, so a pack hook can say who saved."""

    def __init__(self):
        super().__init__()
        self.stack: list[str] = []

    def __torch_function__(self, func, types, args=(), kwargs=None):
        name = getattr(func, "__name__", str(func))
        self.stack.append(name)
        try:
            return func(*args, **(kwargs or {}))
        finally:
            self.stack.pop()


def _storage(t: torch.Tensor) -> tuple[int, int]:
    st = t.untyped_storage()
    return st.data_ptr(), st.nbytes()


def measure(layer: torch.nn.Module, x: torch.Tensor, call, shared: tuple = ()) -> dict:
    """Run ``call(layer, x)`` under the hooks; return the saved tensors, deduplicated."""
    params = {_storage(p)[0] for p in layer.parameters()}
    buffers = {_storage(b)[0] for b in layer.buffers()}
    shared_ptrs = {_storage(t)[0] for t in shared}
    modules: list[str] = []
    names = {m: n for n, m in layer.named_modules()}
    handles = []
    for m in layer.modules():
        handles.append(m.register_forward_pre_hook(lambda m, a: modules.append(names[m] or "layer") and None))
        handles.append(m.register_forward_hook(lambda m, a, o: modules.pop() and None))
    funcs = _FuncStack()
    packed: list[dict] = []
    tensors: list[torch.Tensor] = []

    def pack(t):
        ptr, nbytes = _storage(t)
        packed.append({"storage": ptr, "storage_bytes": nbytes, "dtype": str(t.dtype).replace("torch.", ""),
                       "shape": list(t.shape), "module": modules[-1] if modules else "",
                       "function": funcs.stack[-1] if funcs.stack else "",
                       "kind": "parameter" if ptr in params else
                               "buffer" if ptr in buffers else
                               "shared_input" if ptr in shared_ptrs else
                               "rope_table" if _is_rope_table(t, x, modules) else
                               "layer_input" if ptr == _storage(x)[0] else "activation"})
        tensors.append(t)
        return len(packed) - 1

    where: list = [None]

    def unpack(i):
        packed[i].setdefault("grad_fn", where[0])
        return tensors[i]

    with torch.autograd.graph.saved_tensors_hooks(pack, unpack), funcs:
        out = call(layer, x)
    for h in handles:
        h.remove()
    out = out[0] if isinstance(out, tuple) else out
    # Name each saved tensor by the backward node that holds it (reading a saved
    # attribute unpacks it, which the unpack hook, kept with it since packing, records).
    # No hooks are active here: a non-reentrant checkpoint recomputes on unpack, and
    # what it saves then is not what the forward saved.
    seen, todo = set(), [out.grad_fn]
    while todo:
        node = todo.pop()
        if node is None or node in seen:
            continue
        seen.add(node)
        for attr in dir(node):
            if attr.startswith("_saved_") or attr == "saved_tensors":
                where[0] = f"{node.name()}.{attr}"
                try:
                    getattr(node, attr)
                except RuntimeError:
                    pass
        todo.extend(n for n, _ in node.next_functions)
    by_storage: dict[int, dict] = {}
    for p in packed:
        if p["storage"] not in by_storage:
            by_storage[p["storage"]] = dict(p, saved_by=[])
        by_storage[p["storage"]]["saved_by"].append(p.get("grad_fn") or p["function"])
    rows = []
    for r in by_storage.values():
        r.pop("grad_fn", None)
        r.pop("storage")
        rows.append(r)
    total = {k: sum(r["storage_bytes"] for r in rows if r["kind"] == k)
             for k in ("activation", "layer_input", "shared_input", "parameter")}
    out.float().sum().backward()     # the graph is whole: backward runs
    out = {"layer_bytes": total["activation"] + total["layer_input"],
           "shared_input_bytes": total["shared_input"], "tensors": rows}
    rope = sum(r["storage_bytes"] for r in rows if r["kind"] == "rope_table")
    if rope:
        out["rope_table_bytes"] = rope
    return out


def _is_rope_table(t: torch.Tensor, x: torch.Tensor, modules: list) -> bool:
    """Old transformers' per-layer cos/sin (``[b, 1, s, head_dim]``, kept by the ``mul``
    of ``apply_rotary_pos_emb``): what newer versions make once per model and share, so
    it is listed apart like ``shared_input`` and left out of the layer's bytes."""
    if NEW_API or x.dim() != 3:
        return False
    b, s, _ = x.shape
    return (t.dim() == 4 and t.shape[0] == b and t.shape[1] == 1
            and t.shape[2] == s and bool(modules) and modules[-1].endswith("self_attn"))


def _llama_like(kind: str, p: dict):
    common = dict(hidden_size=p["h"], num_attention_heads=p["a"], num_key_value_heads=p["kv"],
                  intermediate_size=p["ffn"], attention_dropout=p.get("attn_dropout", 0.0),
                  max_position_embeddings=4 * p["s"], num_hidden_layers=1, vocab_size=128)
    if kind == "mixtral":
        cfg = MixtralConfig(num_local_experts=p["experts"], num_experts_per_tok=p["top_k"],
                            router_jitter_noise=0.0, **common)
        cls, rope = MixtralDecoderLayer, MixtralRotaryEmbedding
    else:
        cfg = LlamaConfig(**common)
        cls, rope = LlamaDecoderLayer, LlamaRotaryEmbedding
    cfg._attn_implementation = p["attn"]
    if not NEW_API:
        return cfg, cls(cfg), None
    return cfg, cls(cfg, layer_idx=0), rope(cfg)


def run_point(p: dict) -> dict:
    torch.manual_seed(0)
    b, s, h = p["b"], p["s"], p["h"]
    x = torch.randn(b, s, h, dtype=DTYPE, requires_grad=True)
    shared: tuple = ()
    if p["arch"] == "gpt2":
        cfg = GPT2Config(n_embd=h, n_head=p["a"], n_inner=p["ffn"], n_positions=4 * s, n_layer=1,
                         attn_pdrop=p.get("attn_dropout", 0.0), resid_pdrop=p.get("hidden_dropout", 0.0),
                         embd_pdrop=0.0, activation_function=p.get("act", "gelu_new"))
        cfg._attn_implementation = p["attn"]
        layer = GPT2Block(cfg, layer_idx=0)
        mask = _causal_mask(b, s) if p["attn"] == "eager" else None
        kwargs = {"attention_mask": mask}
    else:
        cfg, layer, rope = _llama_like(p["arch"], p)
        pos = torch.arange(s).unsqueeze(0).expand(b, s)
        mask = _causal_mask(b, s) if p["attn"] == "eager" else None
        kwargs = {"attention_mask": mask, "position_ids": pos}
        if rope is not None:
            with torch.no_grad():
                cos, sin = rope(x, pos)
            shared = (cos, sin)
            kwargs["position_embeddings"] = (cos, sin)
    with torch.no_grad():
        # Some of transformers' modules leave weights to the model's init (MixtralExperts'
        # torch.empty): give every matrix seeded values so that routing is repeatable.
        for w in layer.parameters():
            if w.dim() >= 2:
                w.normal_(0.0, 0.02)
    layer = layer.to(DTYPE).train()

    def call(layer, x):
        if p.get("recompute") == "full":
            # Reentrant checkpointing saves its inputs with ctx.save_for_backward, which
            # the hooks see; the non-reentrant kind installs its own hooks and keeps the
            # inputs itself, so an outer hook sees nothing (the "non_reentrant" point).
            reentrant = p.get("checkpoint") != "non_reentrant"
            return torch.utils.checkpoint.checkpoint(lambda t: layer(t, **kwargs), x, use_reentrant=reentrant)
        return layer(x, **kwargs)

    m = measure(layer, x, call, shared)
    kinds = Counter(r["function"] for r in m["tensors"] if r["kind"] in ("activation", "layer_input"))
    print(f"{p['id']:<40} {m['layer_bytes']:>10} B  {m['layer_bytes'] / (b * s * h):7.2f} x sbh  "
          f"{dict(kinds)}", file=sys.stderr)
    extra = {"rope_table_bytes": m["rope_table_bytes"]} if "rope_table_bytes" in m else {}
    return {"id": p["id"], "config": p, "layer_bytes": m["layer_bytes"],
            "shared_input_bytes": m["shared_input_bytes"], **extra, "tensors": m["tensors"]}


def _causal_mask(b: int, s: int) -> torch.Tensor:
    """The additive float mask transformers builds for eager attention (0 or dtype min)."""
    m = torch.full((s, s), torch.finfo(DTYPE).min, dtype=DTYPE).triu(1)
    return m[None, None].expand(b, 1, s, s)


# ---------------------------------------------------------------- the other families
# The model types simulation/hf_config.py reads besides Llama, GPT-2 and Mixtral
# (``--set families``, tests/data/saved_tensors_hf_families.json): Qwen2 (q/k/v biases),
# Gemma (GeGLU, head_dim apart from hidden/heads, RMSNorm scaled by 1 + w in fp32),
# Gemma 2 (four norms a block, attention logit soft-capping in eager attention;
# Gemma2PreTrainedModel has ``_supports_sdpa = False`` and sdpa_attention_forward refuses
# ``softcap``, so its sdpa point is the layer with soft-capping off, what FlashAttention-2,
# which caps inside the kernel, saves as well), Phi-3 (fused qkv_proj and gate_up_proj) and
# Falcon (fused query_key_value, parallel attention and MLP, LayerNorm, GELU).
def _family(p: dict):
    """``(layer, rope or None, extra forward kwargs)`` of one family point."""
    import transformers.models as tm
    from importlib import import_module
    common = dict(hidden_size=p["h"], num_attention_heads=p["a"], intermediate_size=p["ffn"],
                  max_position_embeddings=4 * p["s"], num_hidden_layers=1, vocab_size=128,
                  attention_dropout=p.get("attn_dropout", 0.0))
    arch = p["arch"]
    if arch == "falcon":
        from transformers import FalconConfig
        from transformers.models.falcon.modeling_falcon import (FalconDecoderLayer,
                                                                FalconRotaryEmbedding)
        cfg = FalconConfig(hidden_size=p["h"], num_attention_heads=p["a"], num_kv_heads=p["kv"],
                           ffn_hidden_size=p["ffn"], num_hidden_layers=1, vocab_size=128,
                           multi_query=p["multi_query"], parallel_attn=p["parallel_attn"],
                           new_decoder_architecture=p["new_arch"], alibi=False, bias=False,
                           hidden_dropout=p.get("hidden_dropout", 0.0), attention_dropout=0.0,
                           max_position_embeddings=4 * p["s"])
        cfg._attn_implementation = p["attn"]
        return FalconDecoderLayer(cfg, layer_idx=0), FalconRotaryEmbedding(cfg), {"alibi": None}
    name = {"qwen2": "Qwen2", "gemma": "Gemma", "gemma2": "Gemma2", "phi3": "Phi3"}[arch]
    mod = import_module(f"transformers.models.{arch}.modeling_{arch}")
    conf = getattr(import_module("transformers"), f"{name}Config")
    extra = dict(num_key_value_heads=p["kv"])
    if "head_dim" in p:
        extra["head_dim"] = p["head_dim"]
    if arch == "gemma":
        extra["hidden_act"] = "gelu_pytorch_tanh"
    if arch == "gemma2":
        extra.update(hidden_activation="gelu_pytorch_tanh", attn_logit_softcapping=p.get("softcap"),
                     query_pre_attn_scalar=p.get("head_dim", p["h"] // p["a"]))
    if arch == "phi3":
        extra.update(resid_pdrop=p.get("hidden_dropout", 0.0), pad_token_id=0)
    cfg = conf(**common, **extra)
    cfg._attn_implementation = p["attn"]
    del tm
    return (getattr(mod, f"{name}DecoderLayer")(cfg, layer_idx=0),
            getattr(mod, f"{name}RotaryEmbedding")(cfg), {})


def family_points() -> list[dict]:
    """Per family, the shapes that separate its terms (base, s^2, GQA, FFN width, and the
    family's own switch: head_dim, soft-capping, residual dropout, Falcon's layouts)."""
    pts = []
    base = dict(b=2, s=64, h=128, a=4, kv=4, ffn=344)
    fams = {
        "qwen2": [{}, dict(s=128), dict(kv=2), dict(kv=1, a=8), dict(ffn=768)],
        # Gemma-7B: 16 heads x 256 > hidden 3072; Gemma-2B: one KV head
        "gemma": [dict(head_dim=64), dict(head_dim=64, s=128), dict(head_dim=64, kv=1),
                  dict(head_dim=64, kv=2, ffn=768), dict(head_dim=32)],
        "gemma2": [dict(head_dim=64, softcap=50.0), dict(head_dim=64, softcap=50.0, s=128),
                   dict(head_dim=64, softcap=50.0, kv=2), dict(head_dim=32, softcap=50.0, ffn=768),
                   dict(head_dim=64)],
        "phi3": [{}, dict(s=128), dict(kv=2), dict(kv=1, a=8), dict(ffn=768),
                 dict(hidden_dropout=0.1)],
        # Falcon-7B (multi-query, one input_layernorm), Falcon-40B (new architecture, KV
        # groups, ln_attn and ln_mlp), and a sequential block (parallel_attn false)
        "falcon": [dict(layout="7b"), dict(layout="7b", s=128), dict(layout="7b", ffn=768),
                   dict(layout="40b", kv=2), dict(layout="40b", kv=2, s=128),
                   dict(layout="sequential")],
    }
    for arch, variants in fams.items():
        for attn in ("sdpa", "eager"):
            for v in variants:
                if arch == "gemma2" and attn == "sdpa" and v.get("softcap"):
                    continue            # sdpa_attention_forward refuses softcap
                p = dict(base, arch=arch, attn=attn, **v)
                if arch == "falcon":
                    lay = p.pop("layout")
                    p["ffn"] = v.get("ffn", 4 * p["h"])
                    p.update(multi_query=lay == "7b", parallel_attn=lay != "sequential",
                             new_arch=lay == "40b", layout=lay)
                    if lay == "7b":
                        p["kv"] = 1
                tag = "-".join(f"{k}{p[k]}" for k in ("b", "s", "h", "a", "kv", "ffn"))
                extra = "-".join(f"{k}{v[k]}" for k in sorted(v) if k not in ("b", "s", "h", "a", "kv", "ffn"))
                p["id"] = f"{arch}-{attn}-{tag}" + (f"-{extra}" if extra else "")
                pts.append(p)
    return pts


def run_family_point(p: dict) -> dict:
    torch.manual_seed(0)
    b, s, h = p["b"], p["s"], p["h"]
    x = torch.randn(b, s, h, dtype=DTYPE, requires_grad=True)
    layer, rope, kwargs = _family(p)
    pos = torch.arange(s).unsqueeze(0).expand(b, s)
    with torch.no_grad():
        cos, sin = rope(x, pos)
        for w in layer.parameters():
            if w.dim() >= 2:
                w.normal_(0.0, 0.02)
    kwargs.update(attention_mask=_causal_mask(b, s) if p["attn"] == "eager" else None,
                  position_ids=pos, position_embeddings=(cos, sin))
    layer = layer.to(DTYPE).train()
    m = measure(layer, x, lambda layer, x: layer(x, **kwargs), (cos, sin))
    kinds = Counter(r["function"] for r in m["tensors"] if r["kind"] in ("activation", "layer_input"))
    print(f"{p['id']:<52} {m['layer_bytes']:>10} B  {m['layer_bytes'] / (b * s * h):7.2f} x sbh  "
          f"{dict(kinds)}", file=sys.stderr)
    return {"id": p["id"], "config": p, "layer_bytes": m["layer_bytes"],
            "shared_input_bytes": m["shared_input_bytes"], "tensors": m["tensors"]}


# ---------------------------------------------------------------- BLOOM
# ``--set bloom`` (tests/data/saved_tensors_hf_bloom.json): transformers' BloomBlock
# (bloom/modeling_bloom.py): LayerNorm, ``query_key_value`` fused with a bias, ALiBi as the
# ``input`` of ``alibi.baddbmm`` in its eager attention (the only attention BloomAttention
# has), the softmax in fp32 (``F.softmax(..., dtype=torch.float32).to(input_dtype)``),
# ``attention_dropout`` on the probabilities, ``BloomGelu`` (in training the autograd
# ``GeLUFunction``, which saves its input only) and ``dropout_add`` (hidden_dropout) on both
# residual branches. The mask (a [b, 1, s, s] bool, ``BloomModel._prepare_attn_mask``) and
# the ALiBi tensor (``build_alibi_tensor``: [b x heads, 1, s]) are made once per model and
# shared by every layer: ``shared_input``, not the layer's bytes.
def bloom_points() -> list[dict]:
    """The shapes that separate BloomBlock's terms: base, s^2 (vary s), heads (a), width
    (h), each dropout alone and both (the masks), and BloomConfig's two switches that
    change the block's code path."""
    base = dict(b=2, s=64, h=128, a=4)
    variants = [{}, dict(s=128), dict(a=8), dict(b=1, h=256, a=8), dict(attn_dropout=0.1),
                dict(hidden_dropout=0.1), dict(attn_dropout=0.1, hidden_dropout=0.1),
                dict(attn_dropout=0.1, hidden_dropout=0.1, s=128, a=8),
                # the residual taken after the norm (BloomBlock's
                # apply_residual_connection_post_layernorm) and the sliced out-projections of
                # slow_but_exact with pretraining_tp 2: what they save, if anything
                dict(post_ln_residual=True), dict(pretraining_tp=2, slow_but_exact=True)]
    pts = []
    for v in variants:
        p = dict(base, arch="bloom", attn="eager", **v)
        p["kv"], p["ffn"] = p["a"], 4 * p["h"]          # BloomMLP: dense_h_to_4h, 4 h
        tag = "-".join(f"{k}{p[k]}" for k in ("b", "s", "h", "a"))
        extra = "-".join(f"{k}{v[k]}" for k in sorted(v) if k not in ("b", "s", "h", "a"))
        p["id"] = f"bloom-eager-{tag}" + (f"-{extra}" if extra else "")
        pts.append(p)
    return pts


def run_bloom_point(p: dict) -> dict:
    from transformers import BloomConfig
    from transformers.models.bloom import modeling_bloom as mb
    torch.manual_seed(0)
    b, s, h = p["b"], p["s"], p["h"]
    x = torch.randn(b, s, h, dtype=DTYPE, requires_grad=True)
    cfg = BloomConfig(hidden_size=h, n_head=p["a"], n_layer=1, vocab_size=128,
                      hidden_dropout=p.get("hidden_dropout", 0.0),
                      attention_dropout=p.get("attn_dropout", 0.0),
                      apply_residual_connection_post_layernorm=p.get("post_ln_residual", False),
                      pretraining_tp=p.get("pretraining_tp", 1),
                      slow_but_exact=p.get("slow_but_exact", False))
    layer = mb.BloomBlock(cfg)
    with torch.no_grad():
        for w in layer.parameters():
            if w.dim() >= 2:
                w.normal_(0.0, 0.02)
    layer = layer.to(DTYPE).train()
    # what BloomModel.forward gives every block: the ALiBi tensor of an all-ones padding
    # mask and the causal mask combined with it (True: masked)
    pad = torch.ones(b, s, dtype=torch.long)
    alibi = mb.build_alibi_tensor(pad, p["a"], DTYPE)
    if not hasattr(mb, "_make_causal_mask"):
        # newer versions build the mask in BloomModel._update_causal_mask (a 4-d float
        # mask, other block arguments): this set was written against 4.31's BloomBlock
        raise SystemExit("--set bloom builds BloomModel._prepare_attn_mask's bool mask "
                         "(transformers 4.31); this transformers has no _make_causal_mask")
    mask = mb._expand_mask(pad, tgt_length=s) | mb._make_causal_mask((b, s), x.device, 0)
    m = measure(layer, x, lambda layer, x: layer(x, alibi=alibi, attention_mask=mask), (alibi, mask))
    kinds = Counter(r["function"] for r in m["tensors"] if r["kind"] in ("activation", "layer_input"))
    print(f"{p['id']:<52} {m['layer_bytes']:>10} B  {m['layer_bytes'] / (b * s * h):7.2f} x sbh  "
          f"{dict(kinds)}", file=sys.stderr)
    return {"id": p["id"], "config": p, "layer_bytes": m["layer_bytes"],
            "shared_input_bytes": m["shared_input_bytes"], "tensors": m["tensors"]}


# ---------------------------------------------------------------- the output stage
# A whole CausalLM of one layer with labels: what the final norm, the head, Gemma 2's
# final_logit_softcapping and the loss (ForCausalLMLoss: logits.float(), F.cross_entropy)
# save, split from the layer's by the module that saved them.
def output_points() -> list[dict]:
    base = dict(b=2, s=64, h=128, a=4, kv=4, ffn=344, vocab=4096)
    pts = [dict(base, arch="llama"), dict(base, arch="llama", vocab=8192),
           dict(base, arch="gemma", head_dim=64), dict(base, arch="gemma2", head_dim=64),
           dict(base, arch="gemma2", head_dim=64, final_softcap=None)]
    for p in pts:
        p["attn"] = "eager"
        p["id"] = (f"{p['arch']}-output-b{p['b']}-s{p['s']}-h{p['h']}-v{p['vocab']}"
                   + ("-nosoftcap" if "final_softcap" in p else ""))
    return pts


def run_output_point(p: dict) -> dict:
    from importlib import import_module
    torch.manual_seed(0)
    name = {"llama": "Llama", "gemma": "Gemma", "gemma2": "Gemma2"}[p["arch"]]
    tr = import_module("transformers")
    kw = dict(hidden_size=p["h"], num_attention_heads=p["a"], num_key_value_heads=p["kv"],
              intermediate_size=p["ffn"], vocab_size=p["vocab"], num_hidden_layers=1,
              max_position_embeddings=4 * p["s"], tie_word_embeddings=p["arch"] != "llama")
    if "head_dim" in p:
        kw["head_dim"] = p["head_dim"]
    if p["arch"] == "gemma2":
        kw["final_logit_softcapping"] = p.get("final_softcap", 30.0)
    cfg = getattr(tr, f"{name}Config")(**kw)
    cfg._attn_implementation = p["attn"]
    model = getattr(tr, f"{name}ForCausalLM")(cfg)
    with torch.no_grad():
        for w in model.parameters():
            if w.dim() >= 2:
                w.normal_(0.0, 0.02)
    model = model.to(DTYPE).train()
    b, s = p["b"], p["s"]
    ids = torch.randint(0, p["vocab"], (b, s))
    m = measure(model, ids, lambda model, ids: (model(input_ids=ids, labels=ids).loss,))
    stage = {"model.norm": "final norm", "lm_head": "lm_head input", "layer": "head and loss"}
    rows = [dict(r, stage=stage.get(r["module"], "layers and embedding")) for r in m["tensors"]
            if r["kind"] in ("activation", "layer_input")]
    by = {k: sum(r["storage_bytes"] for r in rows if r["stage"] == k) for k in set(stage.values())}
    out = by["final norm"] + by["lm_head input"] + by["head and loss"]
    print(f"{p['id']:<52} output stage {out:>10} B  {out / (b * s * p['vocab']):6.2f} x sbV  {by}",
          file=sys.stderr)
    return {"id": p["id"], "config": p, "output_stage_bytes": out, "by_stage": by, "tensors": rows}


def points() -> list[dict]:
    """Points that separate the formula's terms: s*b*h ones, s^2 ones (vary s), the
    GQA ones (vary kv), the FFN ones (vary ffn), dropout masks (on/off), experts."""
    pts = []
    base = dict(b=2, s=64, h=128, a=4, kv=4, ffn=344)
    for arch in ("llama", "gpt2", "mixtral"):
        if arch == "mixtral" and MixtralConfig is None:
            continue
        for attn in ("sdpa", "eager") if NEW_API else ("eager",):
            variants = [{}, dict(s=128), dict(b=1, h=256, a=8, kv=8, ffn=688), dict(ffn=768)]
            if arch != "gpt2":
                variants += [dict(kv=2), dict(kv=1, a=8)]
                if NEW_API:
                    variants += [dict(attn_dropout=0.1), dict(kv=2, attn_dropout=0.1, s=128)]
            else:
                variants += [dict(attn_dropout=0.1), dict(hidden_dropout=0.1),
                             dict(attn_dropout=0.1, hidden_dropout=0.1), dict(act="gelu_pytorch_tanh"),
                             dict(s=256, a=8, attn_dropout=0.1, hidden_dropout=0.1)]
            if arch == "mixtral":
                variants += [dict(experts=4, top_k=1), dict(experts=8, top_k=2, s=128)]
            variants += [dict(recompute="full")]
            if arch == "llama" and attn == "sdpa":
                variants += [dict(recompute="full", checkpoint="non_reentrant")]
            for v in variants:
                p = dict(base, arch=arch, attn=attn, **v)
                if arch == "mixtral":
                    p.setdefault("experts", 4)
                    p.setdefault("top_k", 2)
                if arch == "gpt2":
                    p["kv"] = p["a"]
                    p["ffn"] = 4 * p["h"] if "ffn" not in v else p["ffn"]
                tag = "-".join(f"{k}{p[k]}" for k in ("b", "s", "h", "a", "kv", "ffn"))
                extra = "-".join(f"{k}{v[k]}" for k in sorted(v) if k not in ("b", "s", "h", "a", "kv", "ffn"))
                p["id"] = f"{arch}-{attn}-{tag}" + (f"-{extra}" if extra else "")
                pts.append(p)
    return pts


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--only", help="run the points whose id contains this")
    ap.add_argument("--dtype", choices=sorted(DTYPES), default="bfloat16",
                    help="the layer's parameters and activations (float32: fp32 training)")
    ap.add_argument("--set", choices=("core", "families", "bloom"), default="core",
                    help="core: Llama, GPT-2, Mixtral layers; families: Qwen2, Gemma, Gemma 2, "
                         "Phi-3 and Falcon layers and the output stage of whole CausalLMs; "
                         "bloom: BloomBlock (ALiBi, fused qkv with bias, LayerNorm, BloomGelu)")
    a = ap.parse_args()
    global DTYPE
    DTYPE = DTYPES[a.dtype]
    torch.set_num_threads(1)
    if a.set == "families":
        cases = [run_family_point(p) for p in family_points() if not a.only or a.only in p["id"]]
        cases += [run_output_point(p) for p in output_points() if not a.only or a.only in p["id"]]
    elif a.set == "bloom":
        cases = [run_bloom_point(p) for p in bloom_points() if not a.only or a.only in p["id"]]
    else:
        cases = [run_point(p) for p in points() if not a.only or a.only in p["id"]]
    data = {"what": "bytes PyTorch saves for backward in one decoder layer (saved_tensors_hooks), "
                    "storage-deduplicated, parameters excluded; see scripts/measure_saved_tensors.py"
                    + (" (--set families; the output-stage cases: a whole one-layer CausalLM with "
                       "labels, what its final norm, lm_head and loss save)" if a.set == "families" else
                       " (--set bloom: transformers' BloomBlock; its ALiBi tensor and bool mask, made "
                       "once per model, are shared_input)" if a.set == "bloom" else ""),
            "versions": {"torch": torch.__version__, "transformers": transformers.__version__,
                         "python": platform.python_version()},
            "device": "cpu", "dtype": str(DTYPE).replace("torch.", ""), "cases": cases}
    with open(a.out, "w") as f:
        f.write(_dumps(data))


def _dumps(data: dict) -> str:
    """JSON with one line per case field and per saved tensor (diffs stay readable)."""
    head = {k: v for k, v in data.items() if k != "cases"}
    lines = ["{" + json.dumps(head)[1:-1] + ', "cases": [']
    for i, c in enumerate(data["cases"]):
        fields = [f'  {json.dumps(k)}: {json.dumps(v)}' for k, v in c.items() if k != "tensors"]
        rows = ",\n".join(f"    {json.dumps(t)}" for t in c["tensors"])
        end = "}" if i == len(data["cases"]) - 1 else "},"
        lines.append(" {" + ",\n ".join(fields) + ',\n   "tensors": [\n' + rows + "]" + end)
    return "\n".join(lines) + "]}\n"


if __name__ == "__main__":
    main()
