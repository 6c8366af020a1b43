"""Parameter counts of decoder-only transformers, from the architecture.

Counts every weight the model holds: token embedding, learned position embedding (if
any), per layer the attention projections (Q is h x (heads x head_dim) and O its
transpose, h x h when head_dim = h / heads; K and V are h x (kv_heads x head_dim) under
grouped-query attention), the MLP (two h x f matrices, three when gated as in SwiGLU; one
per expert plus an h x E router under MoE), the block's norms (``norms_per_block`` of
them, default 2; weight, plus a bias for LayerNorm), linear biases when the model has them
(``linear_bias``: every projection and MLP matrix; ``qkv_bias``: q, k and v only, as
Qwen2's ``Qwen2Attention``), the final norm and the output head (shared with the
embedding when tied).

Checked against the exact counts of Llama 2 (Touvron et al. 2023, released configs),
GPT-3 175B in GPT-2 style (Brown et al. 2020, Table 2.1) and Mixtral 8x7B (Jiang et al.
2024) in ``tests/engine/test_params.py``, and against transformers' own modules built on
the meta device (``scripts/count_params_meta.py``, recorded in
``tests/data/param_counts_hf.json``) in ``tests/engine/test_params_meta.py``.
"""

from __future__ import annotations

from dataclasses import dataclass

from .memo import ByIdentity
from .scenario import ModelSpec


@dataclass(frozen=True)
class ParamCount:
    """Parameter counts (elements, not bytes)."""
    total: int              # every parameter the model stores
    active: int             # touched per token (MoE: top-k experts only)
    per_layer: int          # one transformer block (all experts)
    per_layer_active: int   # one block as a token sees it (top-k experts)
    embedding: int          # token embedding (+ learned positions)
    output_head: int        # 0 when tied to the embedding
    largest_module: int     # biggest single weight tensor (DeepSpeed's "largest layer")
    exact: bool             # False when only num_params was given


def count_params(m: ModelSpec) -> ParamCount:
    """Count parameters of ``m``. With only ``num_params`` given, spread it evenly."""
    if not m.has_architecture:
        total = int(m.num_params)
        per_layer = total // max(m.num_layers, 1)
        return ParamCount(total=total, active=total, per_layer=per_layer,
                          per_layer_active=per_layer, embedding=0,
                          output_head=0, largest_module=per_layer, exact=False)

    h, f, v = m.hidden_size, m.ffn_hidden_size, m.vocab_size
    head_dim = m.attention_head_dim
    q = m.num_attention_heads * head_dim          # Q's output width = O's input width
    kv = m.num_kv_heads * head_dim
    bias = 1 if m.linear_bias else 0
    qkv_bias = 1 if m.has_qkv_bias else 0
    norm = 2 * h if m.norm == "layernorm" else h   # LayerNorm has a bias vector

    attn = h * q + 2 * h * kv + q * h + qkv_bias * (q + 2 * kv) + bias * h
    n_mats = 3 if m.gated_mlp else 2
    expert = n_mats * h * f + bias * ((n_mats - 1) * f + h)
    router = h * m.num_experts if m.num_experts > 1 else 0
    norms = m.block_norms * norm
    per_layer = attn + m.num_experts * expert + router + norms
    per_layer_active = attn + m.moe_top_k * expert + router + norms

    token_emb = v * h
    pos_emb = (m.max_seq_len or 0) * h if m.position_embedding == "learned" else 0
    head = 0 if m.tied_embeddings else v * h
    rest = token_emb + pos_emb + norm + head
    total = m.num_layers * per_layer + rest
    active = m.num_layers * per_layer_active + rest
    largest = max(token_emb, head, h * f, h * q)
    if m.num_params is not None:          # an explicit count wins over the derived one
        total = active = int(m.num_params)
    return ParamCount(total=total, active=active, per_layer=per_layer,
                      per_layer_active=per_layer_active, embedding=token_emb + pos_emb, output_head=head,
                      largest_module=largest, exact=m.num_params is None)


model_params = ByIdentity(count_params)
"""``count_params`` remembered per (frozen, shared) model spec: what evaluations call."""
