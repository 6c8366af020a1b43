"""Parameter counts of decoder-only transformers, from the architecture.

Counts every weight the model holds: token embedding, learned position embedding (if
any), per layer the attention projections (Q is h x (heads x head_dim) and O its
transpose, h x h when head_dim = h / heads; K and V are h x (kv_heads x head_dim) under
grouped-query attention), the MLP (two h x f matrices, three when gated as in SwiGLU; one
per expert plus an h x E router under MoE), the block's norms (``norms_per_block`` of
them, default 2; weight, plus a bias for LayerNorm), linear biases when the model has them
(``linear_bias``: every projection and MLP matrix; ``qkv_bias``: q, k and v only, as
Qwen2's ``Qwen2Attention``), the final norm, BLOOM's embedding LayerNorm
(``layer_family`` bloom) and the output head (shared with the embedding when tied).

Checked against the exact counts of Llama 2 (Touvron et al. 2023, released configs),
GPT-3 175B in GPT-2 style (Brown et al. 2020, Table 2.1) and Mixtral 8x7B (Jiang et al.
2024) in ``tests/engine/test_params.py``, and against transformers' own modules built on
the meta device (``scripts/count_params_meta.py``, recorded in
``tests/data/param_counts_hf.json``) in ``tests/engine/test_params_meta.py``.
"""

from __future__ import annotations

from dataclasses import dataclass

from .fields import frozen_new
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
    # Blocks differ when the first ones are dense (``first_dense_layers``): ``per_layer``
    # and ``per_layer_active`` are then the mean over blocks (so num_layers x per_layer +
    # embedding, head and final norm = total), ``first_layer`` block 0, ``largest_layer``
    # the biggest block (an expert block: one FSDP unit at its largest).
    first_layer: int = 0
    largest_layer: int = 0


def count_params(m: ModelSpec) -> ParamCount:
    """Count parameters of ``m``. With only ``num_params`` given, spread it evenly."""
    if not m.has_architecture:
        total = int(m.num_params)
        per_layer = total // max(m.num_layers, 1)
        return ParamCount(total=total, active=total, per_layer=per_layer,
                          per_layer_active=per_layer, embedding=0,
                          output_head=0, largest_module=per_layer, exact=False,
                          first_layer=per_layer, largest_layer=per_layer)

    h, v = m.hidden_size, m.vocab_size
    norm = 2 * h if m.norm == "layernorm" else h   # LayerNorm has a bias vector

    attn = attention_params(m)
    norms = m.block_norms * norm
    dense = attn + mlp_params(m, m.ffn_hidden_size) + norms
    if m.num_experts > 1:
        moe_total = attn + moe_params(m, active=False) + norms
        moe_active = attn + moe_params(m, active=True) + norms
    else:                       # moe_params is the dense MLP then
        moe_total = moe_active = dense
    n_moe = m.moe_layers
    n_dense = m.num_layers - n_moe
    if m.num_experts > 1 and n_moe == m.num_layers:
        first = moe_total
    else:
        first = dense

    token_emb = v * h
    pos_emb = (m.max_seq_len or 0) * h if m.position_embedding == "learned" else 0
    head = 0 if m.tied_embeddings else v * h
    # BLOOM's LayerNorm on the token embeddings (transformers BloomModel.__init__:
    # ``word_embeddings_layernorm``, weight and bias, h each); kept with the final norm
    # (not in ``embedding``, the token table's own elements)
    emb_norm = norm if m.layer_family == "bloom" else 0
    rest = token_emb + pos_emb + norm + emb_norm + head
    blocks = n_dense * dense + n_moe * moe_total
    blocks_active = n_dense * dense + n_moe * moe_active
    total = blocks + rest
    active = blocks_active + rest
    L = max(m.num_layers, 1)
    per_layer = blocks // L if blocks % L == 0 else blocks / L
    per_layer_active = blocks_active // L if blocks_active % L == 0 else blocks_active / L
    largest = max(token_emb, head, *weight_shapes_largest(m))
    if m.num_params is not None:          # an explicit count wins over the derived one
        total = active = int(m.num_params)
    return frozen_new(ParamCount, dict(
        total=total, active=active, per_layer=per_layer,
        per_layer_active=per_layer_active, embedding=token_emb + pos_emb, output_head=head,
        largest_module=largest, exact=m.num_params is None,
        first_layer=first, largest_layer=max(dense if n_dense else 0, moe_total if n_moe else 0)))


def attention_params(m: ModelSpec) -> int:
    """One block's attention weights and biases (elements).

    Multi-head attention (``ModelSpec.uses_mla`` false): q (h x heads*d), k and v
    (h x kv_heads*d each), o (heads*d x h); ``qkv_bias`` adds q, k and v's biases,
    ``linear_bias`` o's too. Multi-head latent attention (transformers 4.57
    ``DeepseekV3Attention.__init__`` / ``DeepseekV2Attention``): ``q_proj`` h x
    heads*(nope+rope) when q_lora_rank is None, else ``q_a_proj`` h x q_lora_rank,
    ``q_a_layernorm`` (q_lora_rank) and ``q_b_proj`` q_lora_rank x heads*(nope+rope);
    ``kv_a_proj_with_mqa`` h x (kv_lora_rank + rope), ``kv_a_layernorm`` (kv_lora_rank),
    ``kv_b_proj`` kv_lora_rank x heads*(nope + v), ``o_proj`` heads*v x h; with
    ``linear_bias`` (config ``attention_bias``) q_a, kv_a and o carry biases.
    """
    h, a = m.hidden_size, m.num_attention_heads
    bias = 1 if m.linear_bias else 0
    if m.uses_mla:
        qk, vd, r_kv, rope = m.qk_head_dim, m.v_head_dim, m.kv_lora_rank, m.qk_rope_head_dim
        if m.q_lora_rank is None:
            q = h * a * qk
        else:
            q = h * m.q_lora_rank + bias * m.q_lora_rank + m.q_lora_rank + m.q_lora_rank * a * qk
        kv = h * (r_kv + rope) + bias * (r_kv + rope) + r_kv + r_kv * a * (m.qk_nope_head_dim + vd)
        return q + kv + a * vd * h + bias * h
    head_dim = m.attention_head_dim
    q = a * head_dim                     # Q's output width = O's input width
    kv = m.num_kv_heads * head_dim
    qkv_bias = 1 if m.has_qkv_bias else 0
    return h * q + 2 * h * kv + q * h + qkv_bias * (q + 2 * kv) + bias * h


def mlp_params(m: ModelSpec, f: int) -> int:
    """One MLP of width ``f`` (elements): two h x f matrices, three when gated (SwiGLU's
    gate, up, down), biases with ``linear_bias``. A dense block's MLP, one routed expert
    (``f`` = expert_ffn_size) or the shared experts' MLP (transformers ``DeepseekV3MoE``
    builds the shared experts as one ``DeepseekV3MLP`` of moe_intermediate_size x
    n_shared_experts)."""
    if not f:
        return 0
    h = m.hidden_size
    n_mats = 3 if m.gated_mlp else 2
    bias = 1 if m.linear_bias else 0
    return n_mats * h * f + bias * ((n_mats - 1) * f + h)


def moe_params(m: ModelSpec, active: bool) -> int:
    """One expert block's MLP part (elements): the routed experts (all, or the top-k a
    token passes through when ``active``), the shared experts and the router (an h x E
    weight: Mixtral's ``gate`` ``nn.Linear``, DeepSeek's ``DeepseekV3TopkRouter.weight``;
    its ``e_score_correction_bias`` is a buffer, not a parameter). Without experts: the
    dense MLP."""
    if m.num_experts <= 1:
        return mlp_params(m, m.ffn_hidden_size)
    routed = (m.moe_top_k if active else m.num_experts) * mlp_params(m, m.expert_ffn_size)
    return routed + mlp_params(m, m.shared_expert_ffn_size) + m.hidden_size * m.num_experts


def weight_shapes_largest(m: ModelSpec) -> tuple:
    """Element counts of a block's big weight matrices (for the largest module)."""
    h, a = m.hidden_size, m.num_attention_heads
    mats = [h * m.ffn_hidden_size, h * (m.expert_ffn_size or 0), h * m.shared_expert_ffn_size]
    if m.uses_mla:
        qk = m.qk_head_dim
        mats += [h * a * qk if m.q_lora_rank is None else m.q_lora_rank * a * qk,
                 m.kv_lora_rank * a * (m.qk_nope_head_dim + m.v_head_dim), a * m.v_head_dim * h]
    else:
        mats.append(h * a * m.attention_head_dim)
    return tuple(mats)


model_params = ByIdentity(count_params)
"""``count_params`` remembered per (frozen, shared) model spec: what evaluations call."""
