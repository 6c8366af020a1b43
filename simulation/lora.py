"""LoRA adapters: a frozen base and a trainable low-rank update per targeted matrix.

LoRA (Hu et al. 2021, "LoRA: Low-Rank Adaptation of Large Language Models", Sec. 4.1)
keeps a pretrained weight ``W0`` (``d_out x d_in``) frozen and learns ``B A`` with
``A``: ``r x d_in``, ``B``: ``d_out x r``, so ``h = W0 x + (alpha / r) B A x``: each
targeted matrix adds ``r (d_in + d_out)`` trainable parameters. PEFT's forward
(``peft/tuners/lora/layer.py``, ``Linear.forward``) is
``result = base_layer(x) + lora_B(lora_A(dropout(x))) * scaling`` with ``dropout`` an
``nn.Dropout(lora_dropout)`` of the adapter (``nn.Identity`` when ``lora_dropout`` is 0);
``Embedding`` targets (``lora_embedding_A``: ``r x vocab``, ``lora_embedding_B``:
``h x r``) add ``r (vocab + h)`` once. Only the adapters have gradients and optimizer
states; the base keeps its dtype and has neither (Hu et al. Sec. 4.2: "we do not need to
calculate the gradients or maintain the optimizer states for most parameters").

The module names are Llama's (``q_proj`` ... ``down_proj``); ``gate`` needs a gated MLP.
A MoE model's ``gate``/``up``/``down`` are targeted in every expert.
"""

from __future__ import annotations

from dataclasses import dataclass

LORA_TARGETS = ("q", "k", "v", "o", "gate", "up", "down", "embeddings")
LAYER_TARGETS = LORA_TARGETS[:-1]


@dataclass(frozen=True)
class LoraSpec:
    """``training.lora``: ``rank`` (r), ``alpha`` (the update is scaled by alpha / r; no
    effect on memory or time), ``dropout`` (PEFT ``lora_dropout``), ``targets`` (of
    :data:`LORA_TARGETS`, in that order)."""
    rank: int = 8
    alpha: float | None = None
    dropout: float = 0.0
    targets: tuple = ("q", "v")


def target_shapes(m) -> dict:
    """``{target: (d_in, d_out, count per layer)}`` of one transformer block of ``m`` (a
    ``ModelSpec``; weights, elements). q: h -> heads x head_dim, k/v: h -> kv_heads x
    head_dim, o: heads x head_dim -> h, gate/up: h -> f, down: f -> h (one per expert)."""
    h = m.hidden_size
    d = m.attention_head_dim
    q = m.num_attention_heads * d
    kv = m.num_kv_heads * d
    f = m.expert_ffn_size if m.num_experts > 1 else m.ffn_hidden_size
    e = max(m.num_experts, 1)
    if m.uses_mla:                   # o_proj: heads x v_head_dim -> h (q/k/v are refused)
        q = m.num_attention_heads * m.v_head_dim
    return {"q": (h, q, 1), "k": (h, kv, 1), "v": (h, kv, 1), "o": (q, h, 1),
            "gate": (h, f, e), "up": (h, f, e), "down": (f, h, e)}


def adapter_params(m, lora: LoraSpec) -> dict:
    """Trainable adapter parameters (elements): ``per_layer`` (one block), ``embedding``
    and ``total`` (``num_layers x per_layer + embedding``).

    Llama-2-7B, r = 8, q and v: 32 x 2 x 8 x (4096 + 4096) = 4,194,304 (PEFT's
    ``print_trainable_parameters``: 0.0622 % of 6,742,609,920).
    """
    r = lora.rank
    shapes = target_shapes(m)
    per_layer = sum(r * (shapes[t][0] + shapes[t][1]) * shapes[t][2]
                    for t in lora.targets if t in shapes)
    emb = r * ((m.vocab_size or 0) + m.hidden_size) if "embeddings" in lora.targets else 0
    return {"per_layer": per_layer, "embedding": emb, "total": m.num_layers * per_layer + emb}


def adapter_activation_bytes(m, lora: LoraSpec, tokens: float, act_bytes: int,
                             tensor_parallel: int = 1) -> float:
    """Bytes one block's adapters save for backward, for ``tokens`` = b x s of one
    micro-batch.

    Per targeted matrix (PEFT ``Linear.forward``): ``lora_B`` saves its input, the
    ``r``-wide output of ``lora_A`` (``tokens x r x act_bytes``); ``lora_A`` saves its
    input, which is the base layer's own input ``x`` when ``lora_dropout`` is 0 (the
    ``nn.Identity`` returns the same tensor: nothing new), else the dropout output
    (``tokens x d_in x act_bytes``) and its 1-byte mask (``tokens x d_in``): every
    adapter has its own dropout, so q, k and v each keep their own copy. ``d_in`` is
    divided by ``tensor_parallel``.
    """
    shapes = target_shapes(m)
    total = 0.0
    for t in lora.targets:
        if t not in shapes:
            continue
        d_in, _, count = shapes[t]
        n = _tokens(m, t, tokens)
        per = n * lora.rank * act_bytes
        if lora.dropout > 0:
            per += n * d_in / tensor_parallel * (act_bytes + 1)
        total += count * per
    return total


def _tokens(m, target: str, tokens: float) -> float:
    """Tokens one copy of ``target`` sees: all of them, or for an expert's MLP matrix
    ``tokens x top_k / experts`` (balanced routing, as ``compute.layer_times``)."""
    if target in ("gate", "up", "down") and m.num_experts > 1:
        return tokens * max(m.moe_top_k, 1) / m.num_experts
    return tokens


def adapter_gemms(m, lora: LoraSpec, tokens: float, tensor_parallel: int = 1) -> list:
    """Forward GEMMs ``(M, N, K, count)`` of one block's adapters: ``x A^T``
    (tokens x r x d_in) and ``(x A^T) B^T`` (tokens x d_out x r) per target; ``d_in`` /
    ``d_out`` divided by ``tensor_parallel``. Adapters are trainable: their backward has
    a data- and a weight-gradient GEMM each, like any trainable matmul."""
    shapes = target_shapes(m)
    out = []
    r, t = lora.rank, tensor_parallel
    for name in lora.targets:
        if name not in shapes:
            continue
        d_in, d_out, count = shapes[name]
        n = _tokens(m, name, tokens)
        out += [(n, r, d_in / t, count), (n, d_out / t, r, count)]
    return out
