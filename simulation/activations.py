"""Activation memory of transformer training, after Korthikanti et al. 2022.

Source: V. Korthikanti et al., "Reducing Activation Recomputation in Large Transformer
Models" (arXiv 2205.05198), Sec. 4, Table 2 and Eq. 5-6. Per layer, with 16-bit
activations and 1-byte dropout masks (s = sequence, b = micro batch, h = hidden,
a = heads, t = tensor-parallel degree)::

    no parallelism            s*b*h*(34 + 5*a*s/h)
    tensor parallel           s*b*h*(10 + 24/t + 5*a*s/(h*t))
    tensor + sequence par.    s*b*h*(34 + 5*a*s/h)/t
    selective recomputation   drops the 5*a*s/h attention-score term
    full recomputation        2*s*b*h  (only the layer input is kept)

The 34 is 11 (attention: QKV input 2, Q and K 4, V 2, output-projection input 2, dropout
mask 1) + 19 (MLP: input 2, GeLU input 8, GeLU output 8, mask 1) + 4 (two LayerNorm
inputs); 5*a*s/h is softmax output 2, its dropout mask 1, dropout output 2. This module
builds the sum term by term so that grouped-query attention (K and V shrink by
kv_heads/heads), gated MLPs (SwiGLU keeps gate, up, SiLU and product: 8*s*b*f), MoE
(top-k experts per token), FlashAttention (no s^2 terms) and models without dropout
follow from the same parts; with the paper's GPT settings it is exactly Table 2.

The first pipeline stage of a 1F1B schedule holds p micro batches of L/p layers, i.e.
L layers' worth (Eq. 5), times 1 + (p-1)/(p*m) with m interleaved stages; fewer micro
batches than stages hold fewer. Embedding and output-layer extras (Sec. 4.3: s*b*h*p/t
for the embedding dropout, and 4*s*b*h*(1 + v/h)/t for the output layer when p = 1) are
returned separately, since the paper's totals leave them out.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ActivationShape:
    seq_len: int
    micro_batch: int
    hidden: int
    heads: int
    kv_heads: int | None = None
    ffn: int | None = None          # default 4h
    gated_mlp: bool = False
    top_k: int = 1                  # MoE experts per token
    dropout: bool = True
    flash_attention: bool = False
    tensor_parallel: int = 1
    sequence_parallel: bool = False
    recompute: str = "none"         # none | selective | full


def layer_bytes(x: ActivationShape) -> float:
    """Activation bytes one transformer layer keeps for backward (per GPU)."""
    s, b, h, a, t = x.seq_len, x.micro_batch, x.hidden, x.heads, x.tensor_parallel
    sbh = s * b * h
    if x.recompute == "full":
        return 2.0 * sbh
    r = (x.kv_heads or a) / a
    f = x.ffn or 4 * h
    mask = 1 if x.dropout else 0

    # Replicated on every TP rank unless sequence parallelism splits them.
    replicated = (4 * sbh            # two LayerNorm inputs
                  + 2 * sbh          # QKV projection input
                  + 2 * sbh          # MLP input
                  + 2 * mask * sbh)  # dropout masks after attention and MLP
    # Split over the TP ranks.
    attn = (2 * sbh + 2 * r * sbh    # Q and K for Q K^T
            + 2 * r * sbh            # V
            + 2 * sbh)               # output-projection input
    mlp = (8 if x.gated_mlp else 4) * s * b * f * x.top_k
    scores = 0.0
    if not x.flash_attention and x.recompute != "selective":
        # softmax output 2, dropout mask 1, dropout output 2 (without dropout: softmax only)
        scores = (5 if x.dropout else 2) * a * s * s * b
    split = attn + mlp + scores
    if x.sequence_parallel:
        return (replicated + split) / t
    return replicated + split / t


@dataclass(frozen=True)
class StageActivations:
    per_layer_bytes: float
    layers_held: float              # layer-equivalents held by the first stage
    layers_bytes: float             # per_layer_bytes * layers_held
    extras_bytes: float             # embedding dropout + output layer (Sec. 4.3)
    interleave_factor: float

    @property
    def total_bytes(self) -> float:
        return self.layers_bytes + self.extras_bytes


def first_stage(x: ActivationShape, num_layers: int, pipeline_parallel: int = 1,
                num_microbatches: int = 1, interleave_stages: int | None = None,
                vocab: int | None = None) -> StageActivations:
    """Activations held by the busiest (first) pipeline stage, Eq. 5-6 of the paper."""
    p = pipeline_parallel
    per = layer_bytes(x)
    in_flight = min(p, max(num_microbatches, 1))
    layers_held = num_layers / p * in_flight
    factor = 1.0
    if interleave_stages and interleave_stages > 1 and p > 1:
        factor = 1 + (p - 1) / (p * interleave_stages)
    t = x.tensor_parallel
    sbh = x.seq_len * x.micro_batch * x.hidden
    extras = (sbh * p / t) if x.dropout else 0.0
    if p == 1 and vocab:
        extras += 4 * sbh / t * (1 + vocab / x.hidden)
    return StageActivations(per_layer_bytes=per, layers_held=layers_held,
                            layers_bytes=per * layers_held * factor, extras_bytes=extras,
                            interleave_factor=factor)
