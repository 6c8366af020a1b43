"""Activation memory of transformer training: what autograd saves for backward, per layer.

Two stacks, chosen by ``ActivationShape.framework``, count different tensors because
their kernels save different ones:

``megatron`` (Megatron-LM, fused kernels): V. Korthikanti et al., "Reducing Activation
Recomputation in Large Transformer Models" (arXiv 2205.05198), Sec. 4, Table 2 and
Eq. 5-6. Per layer, with 16-bit activations and 1-byte dropout masks (s = sequence,
b = micro batch, h = hidden, a = heads, t = tensor-parallel degree)::

    no parallelism            s*b*h*(34 + 5*a*s/h)
    tensor parallel           s*b*h*(10 + 24/t + 5*a*s/(h*t))
    tensor + sequence par.    s*b*h*(34 + 5*a*s/h)/t
    selective recomputation   drops the 5*a*s/h attention-score term
    full recomputation        2*s*b*h  (only the layer input is kept)

The 34 is 11 (attention: QKV input 2, Q and K 4, V 2, output-projection input 2, dropout
mask 1) + 19 (MLP: input 2, GeLU input 8, GeLU output 8, mask 1) + 4 (two LayerNorm
inputs); 5*a*s/h is softmax output 2, its dropout mask 1, dropout output 2. The sum is
built term by term so that grouped-query attention (K and V shrink by kv_heads/heads),
gated MLPs, MoE (top-k experts per token), FlashAttention (no s^2 terms) and the two
dropouts (attention probabilities; the two residual branches) follow from the same
parts; with the paper's GPT settings it is exactly Table 2. Megatron fuses SwiGLU
(``megatron/core/fusions/fused_bias_swiglu.py``: ``SwiGLUFunction`` saves only its input,
gate and up, 4*s*b*f; fc2 keeps the product, 2*s*b*f).

``huggingface`` (transformers' eager PyTorch modules): what
``torch.autograd.graph.saved_tensors_hooks`` sees in one ``LlamaDecoderLayer``,
``GPT2Block`` or ``MixtralDecoderLayer`` (transformers 5.24, torch 2.13), term by term in
:func:`layer_terms`; ``scripts/measure_saved_tensors.py`` measures it and
``tests/data/saved_tensors_hf.json`` holds the measurements that the tests hold these
terms to (within 5 %). Where the stacks differ: RMSNorm keeps an fp32 copy of its input
(4*s*b*h) and its normalised 16-bit value (2*s*b*h); eager attention keeps K and V
repeated to every head (``repeat_kv``) and Llama's softmax in fp32 beside its 16-bit copy;
SwiGLU is unfused (gate, SiLU, up and product: 8*s*b*f); GPT-2's ``gelu_new`` is five
element-wise ops (10*s*b*f); MoE keeps router probabilities and, per routed token, the
gathered input, the expert's MLP, its output and the scatter's source. fp32 training
(``activation_bytes`` 4) makes every 16-bit tensor fp32 and drops the fp32 copies that
16-bit layers add (``tests/data/saved_tensors_hf_fp32.json``, measured with transformers
4.31: Llama and GPT-2 eager layers match term by term). The other families that
``simulation/hf_config.py`` reads (``tests/data/saved_tensors_hf_families.json``, the same
script with ``--set families``): Qwen2's layer is Llama's (its q/k/v biases save nothing);
Gemma's RMSNorm scales in fp32 and its heads are ``head_dim`` wide; Gemma 2 has four norms
and soft-caps eager attention's scores; Phi-3's fused ``qkv_proj`` leaves V a view of the
whole qkv output under SDPA; Falcon's block has one norm (7B) or two on one input (the
new architecture), GELU, and a multi-query SDPA call that runs the fp32 math kernel
(:data:`FAMILY_TRAITS`, :func:`family_traits`). BLOOM's ``BloomBlock``
(``tests/data/saved_tensors_hf_bloom.json``, ``--set bloom``, transformers 4.31) is a
GPT-2-style LayerNorm block with an fp32 softmax and a GELU that keeps its input only; its
ALiBi biases and bool mask are made once per model. The final norm and, for Gemma 2, the
soft-capped logits are the output stage's (:func:`final_norm_bytes`,
``simulation/loss.py``).

Kernel traits that differ between devices are :data:`CUDA` (the default, what a training
run uses) and :data:`CPU` (what the measurements ran on; tests pass it):
dropout masks are ``bool`` (1 byte) from CUDA's fused ``native_dropout`` but a tensor of
the input's dtype from the CPU path (``_dropout_impl`` in ATen ``Dropout.cpp``: input *
noise); SDPA with attention dropout runs FlashAttention on CUDA (it regenerates the mask
from the saved Philox seed, so it saves what it saves without dropout) but falls back on
CPU to the math kernel, which upcasts 16-bit inputs to fp32 and keeps Q, K, V, the
scores, the mask and the dropped scores in fp32; ``layer_norm`` keeps mean and rstd in
fp32 on CUDA, in the input dtype on CPU. Full recomputation keeps the layer input, with
reentrant checkpointing (``save_for_backward``) and non-reentrant alike (torch 2.13's
``_CheckpointFrame.save_inputs``; its own hooks take what the region saves, so an outer
hook sees only the input).
Saved tensors are not peaks: a peak adds the working set of the op running (the
profiler's memory events see it; this module does not).

The first pipeline stage of a 1F1B schedule holds p micro batches of L/p layers, i.e.
L layers' worth (Eq. 5), times 1 + (p-1)/(p*m) with m interleaved stages; fewer micro
batches than stages hold fewer. Embedding and output-layer extras (Sec. 4.3: s*b*h*p/t
for the embedding dropout, and 4*s*b*h*(1 + v/h)/t for the output layer when p = 1) are
returned separately, since the paper's totals leave them out.
"""

from __future__ import annotations

from dataclasses import MISSING, dataclass, fields

from .fields import frozen_new

FRAMEWORKS = ("huggingface", "megatron")
SOURCES = {"megatron": "Korthikanti et al. 2022",
           "huggingface": "what PyTorch saves in transformers' layers"}
NORMS = ("rmsnorm", "layernorm")
# Megatron-Core ``--recompute-modules`` (megatron/core/transformer/transformer_config.py
# ``recompute_modules``, core 0.20 at d98e8a6) that change what a layer keeps:
# ``core_attn`` (the default: the attention core is checkpointed, its s^2 scores not kept),
# ``layernorm`` (input_layernorm and pre_mlp_layernorm run under ``CheckpointWithoutOutput``:
# their outputs are freed after use and rebuilt in backward; the consumers are told to
# keep that 16-bit output, ``set_save_original_input``, not an FP8 cast of it),
# ``mla_up_proj`` (multi_latent_attention.py: the q/kv up-projections and RoPE under
# ``CheckpointWithoutOutput``: Q, K, V are freed once the attention core ran and rebuilt
# from the latents in backward) and ``moe_act`` (moe/experts.py: the experts' activation
# output is freed and rebuilt; fc2 keeps the original input, i.e. nothing of its own).
RECOMPUTE_MODULES = ("core_attn", "layernorm", "mla_up_proj", "moe_act")
ACT = 2                             # bytes of a 16-bit activation
FP32 = 4
INDEX = 8                           # int64


@dataclass(frozen=True)
class Kernels:
    """What a device's kernels save where CPU and CUDA differ (see the module docstring).

    ``dropout_mask_bytes``: bytes per element of a dropout mask (CUDA ``native_dropout``:
    bool, 1; CPU ``_dropout_impl``: the input's dtype). ``sdpa_dropout_math_fp32``: SDPA
    with attention dropout falls back to the math kernel in fp32 (CPU) instead of running
    FlashAttention (CUDA). ``norm_stat_bytes``: ``native_layer_norm``'s mean and rstd.
    ``in_input_dtype``: the mask and the norm statistics take the input's dtype (CPU), so
    with fp32 activations they are 4 bytes; the two figures above are for 16-bit ones.
    """
    name: str
    dropout_mask_bytes: int
    sdpa_dropout_math_fp32: bool
    norm_stat_bytes: int
    in_input_dtype: bool = False
    # SDPA with a value head narrower than the q/k head (latent attention: 192 vs 128):
    # the CPU's flash kernel needs equal widths and the math kernel runs in fp32; CUDA's
    # memory-efficient kernel takes unequal widths and saves Q, K, V, output, logsumexp.
    sdpa_unequal_heads_math_fp32: bool = False

    def mask_bytes(self, act: int) -> int:
        """Bytes per element of a dropout mask with ``act``-byte activations."""
        return act if self.in_input_dtype else self.dropout_mask_bytes

    def stat_bytes(self, act: int) -> int:
        """Bytes of one ``layer_norm`` mean or rstd value with ``act``-byte activations."""
        return act if self.in_input_dtype else self.norm_stat_bytes


CUDA = Kernels("cuda", dropout_mask_bytes=1, sdpa_dropout_math_fp32=False, norm_stat_bytes=FP32)
CPU = Kernels("cpu", dropout_mask_bytes=ACT, sdpa_dropout_math_fp32=True, norm_stat_bytes=ACT,
              in_input_dtype=True, sdpa_unequal_heads_math_fp32=True)


@dataclass(frozen=True)
class ActivationShape:
    """One layer's shape and the choices that decide what it saves.

    ``attention_dropout`` / ``hidden_dropout`` (dropout on attention probabilities / on
    the two residual branches) default to ``dropout``; ``fused_mlp_activation`` defaults
    to the stack's own kernel (Megatron fused, transformers unfused);
    ``eager_softmax_fp32`` (transformers' eager attention upcasts the softmax to fp32, as
    Llama-family models do, ``modeling_llama.eager_attention_forward``; GPT-2's does not)
    defaults to ``norm == "rmsnorm"``. ``flash_attention``: FlashAttention or SDPA's
    flash/efficient kernel, no s^2 terms; otherwise eager (transformers) or Megatron's
    unfused core attention. ``activation_bytes``: bytes of one activation element, 2 for
    bf16/fp16 training, 4 for fp32 training (every 16-bit term doubles; the fp32 copies
    that a 16-bit layer adds, RMSNorm's input and eager attention's softmax, are then the
    tensors themselves and no longer come on top: :func:`_huggingface`).
    """
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
    recompute: str = "none"         # none | selective | full | selective_ops
    framework: str = "megatron"     # megatron | huggingface
    attention_dropout: bool | None = None
    hidden_dropout: bool | None = None
    fused_mlp_activation: bool | None = None
    num_experts: int = 1
    norm: str = "layernorm"         # layernorm | rmsnorm
    eager_softmax_fp32: bool | None = None
    activation_bytes: int = ACT
    # Expert layout (ModelSpec.expert_ffn_size, shared_expert_ffn_size): a routed expert's
    # MLP width (None: ffn), the shared experts' MLP width (0: none), and the share of the
    # held layers that are dense (first_dense_layers; their MLP is ffn wide, no router).
    moe_ffn: int | None = None
    shared_ffn: int = 0
    dense_share: float = 0.0
    # Multi-head latent attention (ModelSpec.uses_mla): kv_lora_rank set turns it on.
    q_lora_rank: int | None = None
    kv_lora_rank: int | None = None
    qk_head_dim: int | None = None       # nope + rope
    qk_rope_head_dim: int | None = None
    v_head_dim: int | None = None
    # Transformer Engine FP8 GEMMs (simulation/fp8.py, megatron stack only): each FP8
    # Linear saves its input as a 1-byte FP8 cast instead of the 16-bit tensor.
    fp8_linear_inputs: bool = False
    frozen: bool = False            # every weight frozen (LoRA's base): see _frozen_note
    # Megatron-Core selective recomputation (``recompute: selective``): the modules of
    # ``--recompute-modules`` (None: its default, ``core_attn``); see :data:`RECOMPUTE_MODULES`.
    recompute_modules: tuple | None = None
    # Megatron-Core ``activation_func_fp8_input_store``: fused SwiGLU keeps its input as
    # an FP8 (E4M3) cast, 1 B an element (megatron/core/fusions/fused_bias_swiglu.py).
    activation_fp8_input_store: bool = False
    # Per-family traits of transformers' decoder layers (``huggingface`` stack), measured in
    # tests/data/saved_tensors_hf_families.json; :data:`FAMILY_TRAITS` sets them from a
    # model's ``layer_family``. ``head_dim``: one head's width (Gemma: 16 x 256 > hidden
    # 3072), None is hidden / heads. ``norms``: norm modules per block (Gemma 2: 4; Falcon-7B:
    # 1, whose output feeds attention and MLP alike, so one block input is kept).
    # ``norm_fp32_scale``: Gemma's RMSNorm scales by (1 + w) in fp32 (:func:`_norm_bytes`).
    # ``attn_softcap``: Gemma 2's eager attention soft-caps the scores (+1 tensor of scores).
    # ``qkv_view_value``: V is a view of a fused qkv output, so attention keeps that whole
    # storage (Phi-3; :func:`_hf_attention`); ``sdpa_output_copy``: o_proj's input is a copy
    # of SDPA's output (Phi-3). ``sdpa_kv_broadcast``: the layer calls SDPA with fewer K/V
    # heads and no ``enable_gqa`` (Falcon's multi-query): the fp32 math kernel runs.
    # ``kv_repeated``: K and V are expanded to every head before attention (Falcon's new
    # architecture), whose ``ln_attn`` and ``ln_mlp`` both normalise the block input
    # (``norm_input_shared``: one input kept, two sets of statistics).
    # ``single_op_activation``: a plain MLP whose activation is one op
    # (``nn.GELU``: keeps its input only, 4 B per f as a fused kernel), not gelu_new's five.
    head_dim: int | None = None
    norms: int = 2
    norm_fp32_scale: bool = False
    # ``fused_norm``: a fused RMSNorm kernel on the huggingface stack (Liger's
    # ``LigerRMSNorm``, as NeMo AutoModel patches transformers' models): :func:`_norm_bytes`.
    fused_norm: bool = False
    attn_softcap: bool = False
    qkv_view_value: bool = False
    sdpa_output_copy: bool = False
    sdpa_kv_broadcast: bool = False
    kv_repeated: bool = False
    norm_input_shared: bool = False
    single_op_activation: bool = False

    def __post_init__(self):
        if self.framework not in FRAMEWORKS:
            raise ValueError(f"framework must be one of {', '.join(FRAMEWORKS)}, got {self.framework!r}")
        if self.norm not in NORMS:
            raise ValueError(f"norm must be one of {', '.join(NORMS)}, got {self.norm!r}")

    def recomputes(self, module: str) -> bool:
        """Whether Megatron's selective recomputation re-runs ``module`` (one of
        :data:`RECOMPUTE_MODULES`); ``core_attn`` alone unless ``recompute_modules`` says."""
        if self.recompute != "selective":
            return False
        return module in (self.recompute_modules or ("core_attn",))

    @classmethod
    def made(cls, values: dict) -> "ActivationShape":
        """``ActivationShape(**values)`` made without the frozen ``__init__``, which sets
        each of the 30 fields through ``object.__setattr__`` (7 us against 0.4 us; a
        quick estimate makes one or two), then checked by ``__post_init__``. An unknown
        or a missing field goes to the ``__init__`` (its ``TypeError``); the result
        equals the ``__init__``'s (``tests/engine/test_stage_parts_fast.py``)."""
        if not (_SHAPE_REQUIRED <= values.keys() and values.keys() <= _SHAPE_DEFAULTS.keys()):
            return cls(**values)
        x = object.__new__(cls)
        d = x.__dict__
        d.update(_SHAPE_DEFAULTS)
        d.update(values)
        x.__post_init__()
        return x

    def replaced(self, **changes) -> "ActivationShape":
        """``dataclasses.replace(self, **changes)`` by :meth:`made`."""
        return ActivationShape.made({**{k: self.__dict__[k] for k in _SHAPE_DEFAULTS}, **changes})

    @property
    def attn_dropout(self) -> bool:
        return self.dropout if self.attention_dropout is None else self.attention_dropout

    @property
    def resid_dropout(self) -> bool:
        return self.dropout if self.hidden_dropout is None else self.hidden_dropout

    @property
    def fused(self) -> bool:
        if self.single_op_activation and not self.gated_mlp:
            return True
        if self.fused_mlp_activation is None:
            return self.framework == "megatron"
        return self.fused_mlp_activation

    @property
    def q_width(self) -> int:
        """Q's (and the attention output's) width, heads x head_dim: hidden unless head_dim."""
        return self.hidden if self.head_dim is None else self.heads * self.head_dim

    @property
    def kv_ratio(self) -> float:
        """K's (and V's) width over hidden: kv_heads x head_dim / hidden (kv_heads / heads
        when head_dim is hidden / heads)."""
        kv = self.heads if self.kv_repeated else (self.kv_heads or self.heads)
        return kv / self.heads * self.q_width / self.hidden


# transformers' decoder-layer traits per ``model_type`` (ModelSpec.layer_family), each
# measured in tests/data/saved_tensors_hf_families.json (transformers 5.24, torch 2.13):
# gemma/modeling_gemma.py ``GemmaRMSNorm`` and gemma2/modeling_gemma2.py ``Gemma2RMSNorm``
# (``output * (1.0 + self.weight.float())`` in fp32; Gemma 2's four norms and soft-capping
# are the model's ``norms_per_block`` and ``attn_logit_softcapping``);
# phi3/modeling_phi3.py ``Phi3Attention.forward`` (value_states a slice of ``qkv_proj``'s
# output; ``apply_rotary_pos_emb`` ends in ``torch.cat``); falcon/modeling_falcon.py
# ``FalconAttention`` (``F.scaled_dot_product_attention`` without ``enable_gqa``;
# ``_split_heads`` broadcasts K and V to every head in the new architecture) and
# ``FalconMLP`` (``nn.GELU``). Qwen2, Llama, Mistral and Mixtral layers need none.
# bloom/modeling_bloom.py ``BloomBlock`` (measured apart, tests/data/saved_tensors_hf_bloom.json,
# transformers 4.31, torch 2.13): ``BloomAttention.forward`` takes the scores to
# ``F.softmax(..., dtype=torch.float32).to(input_dtype)`` (an fp32 softmax output beside its
# 16-bit copy, although the norm is a LayerNorm: ``eager_softmax_fp32``) and ``BloomMLP``'s
# ``BloomGelu`` runs the autograd ``GeLUFunction`` in training, which saves its input only
# (``single_op_activation``: 4 B per f with fc2's input). Nothing else differs from a
# GPT-2-style LayerNorm block: q, k and v leave ``_split_heads`` as views and are copied by
# the ``transpose(...).reshape`` of ``baddbmm``'s and ``bmm``'s operands (three 16-bit
# tensors, as eager ``repeat_kv`` gives); ``alibi.baddbmm`` keeps only q and k (its
# ``input``, the ALiBi tensor, needs no gradient), ``masked_fill`` the bool mask and the
# ``dropout_add`` its mask; ALiBi and the mask are made once per model (``BloomModel``) and
# shared by every block: not per layer. transformers' BloomAttention has no SDPA or
# FlashAttention path: a ``bloom`` layer under ``flash_attention`` is counted as a
# FlashAttention kernel with ALiBi slopes would save (Q, K, V, output, logsumexp), which
# transformers' own class does not do.
FAMILY_TRAITS = {
    "gemma": dict(norm_fp32_scale=True),
    "gemma2": dict(norm_fp32_scale=True),
    "phi3": dict(qkv_view_value=True, sdpa_output_copy=True),
    "falcon": dict(single_op_activation=True),
    "bloom": dict(single_op_activation=True, eager_softmax_fp32=True),
}


def family_traits(family: str | None, norms: int, kv_heads: int, heads: int) -> dict:
    """The :class:`ActivationShape` traits of a ``layer_family`` with ``norms`` norm
    modules per block and ``kv_heads`` of ``heads``: :data:`FAMILY_TRAITS`, and for Falcon
    the attention its layout implies (``FalconAttention._split_heads``): one K/V head is
    ``multi_query`` (Falcon-7B; its SDPA call sees one K/V head: ``sdpa_kv_broadcast``);
    K/V groups are the new architecture (Falcon-40B/180B: K and V broadcast to every head,
    and its two norms, ``ln_attn`` and ``ln_mlp``, share the input); as many K/V heads as
    heads is the old architecture without multi-query, whose q, k, v are views of the
    fused ``query_key_value`` output (V keeps all of it)."""
    out = dict(FAMILY_TRAITS.get(family or "", {}))
    if family == "falcon":
        if kv_heads == 1 and heads > 1:
            out["sdpa_kv_broadcast"] = True
        elif kv_heads < heads:
            out.update(kv_repeated=True, norm_input_shared=norms == 2)
        else:
            out["qkv_view_value"] = True
    return out


# every field with its default (MISSING for the four required ones), in field order
_SHAPE_DEFAULTS = {f.name: f.default for f in fields(ActivationShape)}
_SHAPE_REQUIRED = frozenset(k for k, v in _SHAPE_DEFAULTS.items() if v is MISSING)


def layer_bytes(x: ActivationShape, kernels: Kernels = CUDA) -> float:
    """Activation bytes one transformer layer keeps for backward, per GPU, with the
    ``kernels`` of a device (CUDA unless told; :data:`CPU` is for holding the terms to
    CPU measurements). The sum of :func:`layer_terms`."""
    return sum(layer_terms(x, kernels).values())


def layer_terms(x: ActivationShape, kernels: Kernels = CUDA) -> dict[str, float]:
    """The bytes of each tensor group one layer saves for backward, per GPU.

    Terms that every tensor-parallel rank holds whole (norms, block inputs, residual
    dropout masks, the router) are divided by t only with sequence parallelism; the
    attention and MLP terms are split over the t ranks. ``full`` recomputation keeps the
    layer's 16-bit input only (``torch.utils.checkpoint`` / Megatron's full recompute).
    """
    t = x.tensor_parallel
    if x.recompute == "full":
        return {"layer input (checkpoint)": x.activation_bytes * x.seq_len * x.micro_batch * x.hidden}
    if x.recompute == "selective_ops":
        return _op_sac_terms(x)
    if x.num_experts > 1 and x.dense_share > 0:
        return _mixed_terms(x, kernels)
    if x.framework == "megatron":
        replicated, split = _megatron(x, kernels)
    else:
        replicated, split = _huggingface(x, kernels)
    whole = {}
    if x.kv_lora_rank is not None:
        whole, attn = _mla_attention(x, kernels)
        split = {k: v for k, v in split.items() if k not in _MHA_KEYS} | attn
    rep_div = t if x.sequence_parallel else 1
    terms = {k: v / rep_div for k, v in replicated.items()}
    terms.update({k: v / t for k, v in split.items()})
    terms.update(whole)
    if x.framework == "megatron" and x.num_experts > 1:
        terms.update(_megatron_moe_routing(x))
    return {k: v for k, v in terms.items() if v}


def _mixed_terms(x: ActivationShape, kernels: Kernels) -> dict[str, float]:
    """The mean layer where a share ``dense_share`` of the held layers is dense (DeepSeek's
    first_k_dense_replace blocks: an MLP of ``ffn``, no experts) and the rest have experts:
    each term weighed by its layers."""
    w = x.dense_share
    dense = layer_terms(x.replaced(num_experts=1, top_k=1, moe_ffn=None, shared_ffn=0,
                                   dense_share=0.0), kernels)
    moe = layer_terms(x.replaced(dense_share=0.0), kernels)
    out = {k: (1 - w) * v for k, v in moe.items()}
    for k, v in dense.items():
        out[k] = out.get(k, 0.0) + w * v
    return {k: v for k, v in out.items() if v}


# the multi-head attention terms that _mla_attention replaces
_MHA_KEYS = ("Q, K (Q K^T inputs)", "V", "attention output (out-projection input)",
             "attention scores (softmax, dropout)", "Q, K, V", "logsumexp (fp32)",
             "Q, K, V (K and V repeated to every head)", "Q, K, V (fp32, math kernel)",
             "attention scores (fp32 softmax, mask, dropout)")


def _mla_attention(x: ActivationShape, k: Kernels) -> tuple[dict, dict]:
    """What multi-head latent attention saves, per GPU: ``(whole, split)`` bytes.

    Read in transformers 4.57 ``DeepseekV3Attention.forward`` (DeepseekV2 alike): the
    block input feeds q_a_proj (or q_proj) and kv_a_proj_with_mqa (counted with the block
    inputs); ``q_a_layernorm`` and ``kv_a_layernorm`` are RMSNorms on the compressed
    latents (q_lora_rank and kv_lora_rank wide), each keeping what the block's RMSNorm
    keeps (transformers: the fp32 input, the normalised 16-bit value and the fp32 rsqrt
    per token; Megatron: its 16-bit input), and q_b_proj / kv_b_proj keep the normalised
    latent (their input). These are whole on every tensor-parallel rank (the down-
    projections are not split: DeepSeek-V3 inference/model.py ``wq_a``/``wkv_a``). The
    up-projections give Q and K of heads x (qk_nope + qk_rope) (the rope part of K, one
    head wide, is rotated and expanded: ``expand`` and ``cat`` keep nothing; rotary's
    products keep only cos and sin) and V of heads x v_head_dim, split over the ranks:
    SDPA/FlashAttention keep Q, K, V, the output and the fp32 logsumexp (on the CPU, with
    v narrower than q/k, the fp32 math kernel instead: ``Kernels``); eager attention
    keeps Q, K (the QK^T inputs), the scores as for multi-head attention and V; the
    o_proj keeps its heads x v_head_dim input. Shapes: s*b tokens, a heads.
    """
    if x.framework == "megatron":
        return _megatron_mla(x)
    s, b, a = x.seq_len, x.micro_batch, x.heads
    sb, A = s * b, x.activation_bytes
    qk, vd = x.qk_head_dim, x.v_head_dim
    latents = x.kv_lora_rank + (x.q_lora_rank or 0)
    n_norms = 1 if x.q_lora_rank is None else 2
    if x.framework == "megatron":
        norm = A * latents * sb
    else:
        norm = ((FP32 + A) * latents + FP32 * n_norms) * sb
    whole = {"latent RMSNorms (kv_a_layernorm, q_a_layernorm)": norm,
             "normalised latents (kv_b_proj, q_b_proj inputs)": A * latents * sb}
    split = {"attention output (out-projection input)": A * a * vd * sb}
    math_fp32 = x.flash_attention and x.framework == "huggingface" and (
        (x.attn_dropout and k.sdpa_dropout_math_fp32) or (qk != vd and k.sdpa_unequal_heads_math_fp32))
    if math_fp32:
        split["Q, K, V (fp32, math kernel)"] = FP32 * a * (2 * qk + vd) * sb
        if not x.recomputes("core_attn"):
            per = 3 * FP32 if x.attn_dropout else FP32      # scores (mask, dropped scores)
            split["attention scores (fp32 softmax, mask, dropout)"] = per * a * s * s * b
        return whole, split
    if x.flash_attention:
        # V is a view of kv_b_proj's output (torch.split), so the kernel keeps that whole
        # storage, heads x (qk_nope + v); the kernel's output and o_proj's input are two
        # tensors (sdpa_attention_forward's transpose(1, 2).contiguous() copies: measured,
        # transformers 4.57 / torch 2.14). FlashAttention-2 through transformers pads V to
        # qk_head_dim (DeepseekV3Attention.forward): not counted.
        split["Q, K, V"] = A * a * (2 * qk + x.qk_head_dim - x.qk_rope_head_dim + vd) * sb
        split["logsumexp (fp32)"] = FP32 * a * sb
        if x.framework == "huggingface":
            split["attention kernel output"] = A * a * vd * sb
        return whole, split
    split["Q, K, V"] = A * a * (2 * qk + vd) * sb
    if not x.recomputes("core_attn"):
        mask = k.mask_bytes(A)
        if x.framework == "megatron":
            per = (A + mask + A) if x.attn_dropout else A
        else:
            upcast = (x.norm == "rmsnorm" if x.eager_softmax_fp32 is None else x.eager_softmax_fp32) and A < FP32
            softmax = FP32 if upcast else A
            per = softmax + mask + A if x.attn_dropout else softmax + (A if upcast else 0)
        split["attention scores (softmax, dropout)"] = per * a * s * s * b
    return whole, split


def _megatron_mla(x: ActivationShape) -> tuple[dict, dict]:
    """What Megatron-Core's ``MLASelfAttention`` keeps, per GPU: ``(whole, split)`` bytes
    (megatron/core/transformer/multi_latent_attention.py and gpt_layer_specs.py, core 0.20
    at d98e8a6; Transformer Engine layers, FlashAttention-style fused core attention).

    * The latents: ``linear_q_down_proj`` gives q_lora_rank, ``linear_kv_down_proj``
      kv_lora_rank + qk_rope_head_dim, split (views) into the kv latent and the shared
      rope key. The latent norms are fused into the up-projections
      (``TELayerNormColumnParallelLinear``), which keep the norm's 16-bit input (the
      latent: the split view keeps the whole kv_lora_rank + rope storage alive) and their
      own normalised input (``ln_out``: 1 B with FP8, the FP8 cast kept for wgrad).
    * ``qkv_up_proj_and_rope_apply``: Q is ``cat([q_nope, q_rope])`` and K
      ``cat([k_nope, k_rope expanded])``, heads x (qk_nope + qk_rope) each, V
      ``value.contiguous()`` of heads x v_head_dim (a copy: the up-projection's output
      itself is not kept). The fused core attention keeps Q, K, V, its output and the
      fp32 logsumexp; ``linear_proj`` keeps the output (with FP8 and a non-delayed recipe
      it is told to keep that 16-bit tensor, ``set_save_original_input``).
    * ``mla_up_proj`` recomputation (``CheckpointWithoutOutput``): Q, K, V are freed
      after the core attention ran and the checkpoint keeps its inputs, the latents (the
      norms fused into the up-projections are re-run with them): the normalised latents
      and Q, K, V go.
    Shapes: s*b tokens, a heads; the up-projections and attention split over t ranks.
    """
    s, b, a = x.seq_len, x.micro_batch, x.heads
    sb, A = s * b, x.activation_bytes
    qk, vd = x.qk_head_dim, x.v_head_dim
    up = x.recomputes("mla_up_proj")
    stored = (x.q_lora_rank or 0) + x.kv_lora_rank + (x.qk_rope_head_dim or 0)
    normalised = (1 if x.fp8_linear_inputs else A) * (x.kv_lora_rank + (x.q_lora_rank or 0))
    whole = {"latents (up-projection norm inputs)": A * stored * sb,
             "normalised latents (up-projection inputs)"
             + (" (FP8)" if x.fp8_linear_inputs else ""): 0 if up else normalised * sb}
    split = {"attention output (out-projection input)": A * a * vd * sb,
             "Q, K, V": 0 if up else A * a * (2 * qk + vd) * sb,
             "logsumexp (fp32)": FP32 * a * sb}
    return whole, split


def _megatron_moe_routing(x: ActivationShape) -> dict[str, float]:
    """What Megatron-Core's MoE layer saves beyond the experts' MLPs, per GPU (bytes).

    Read in megatron-core 0.19 (``megatron/core/transformer/moe/``), for the default
    unfused path (``moe_router_fusion`` and ``moe_permute_fusion`` off, top-k softmax
    routing, the all-to-all dispatcher, GroupedMLP with ``bias_activation_fusion``):

    * router (``moe_utils.topk_routing_with_score_function``): ``torch.topk`` on the
      logits keeps its int64 indices (8*k per token), ``torch.softmax(scores,
      dtype=float32)`` its fp32 output (4*k); the scatter into dense routing probs keeps
      the same indices. The load-balancing loss (``compute_routing_scores_for_aux_loss``)
      keeps a full fp32 softmax over the E experts (4*E per token). The gating linear's
      input is the MLP input of the dense formula, not counted again.
    * ``moe_utils.permute``: ``tokens.index_select(0, sorted_indices)`` keeps only its
      int64 indices and the probs' ``[flat_sorted]`` indexing its own (2 x 8 B per routed
      token); ``unpermute``'s ``scatter_add_`` keeps the first indices again (a view).
    * the permuted copy of every routed token, the experts' fc1 input (``experts.py``
      ``TEGroupedMLP.forward``): 16-bit h per routed token, and the permuted probs that
      ``weighted_bias_swiglu_impl`` keeps (16-bit, ``type_as(logits)``, 1 per routed token).
      The experts' MLP itself is the ``MLP activations`` term (x top-k); their outputs
      are not kept (``unpermute`` is called without probs and ``scatter_add_``'s backward
      needs only the index).

    With tensor parallelism Megatron requires sequence parallelism for MoE; the router
    sees s*b/t tokens, and the dispatcher all-gathers the permuted tokens over the t
    ranks (expert tensor parallelism splits f, not the tokens), so the fc1 copy and its
    probs are whole on each rank. With FP8 (``fp8_linear_inputs``) the experts'
    ``GroupedLinear`` keeps the fc1 input as its 1-byte FP8 cast. Shapes: s*b tokens of width h, E experts, k per token.
    """
    t = x.tensor_parallel
    sb, h, e, k = x.seq_len * x.micro_batch, x.hidden, x.num_experts, x.top_k
    local = sb / t                       # tokens this rank routes (sequence parallel)
    A = x.activation_bytes
    return {
        "router (top-k indices, fp32 top-k probabilities, fp32 aux-loss scores)":
            (INDEX * k + FP32 * k + FP32 * e) * local,
        "permutation indices (int64)": 2 * INDEX * k * local,
        "permuted tokens (expert fc1 input) and their probs":
            ((1 if x.fp8_linear_inputs else A) * h + A) * k * sb,
    }


def _op_sac_terms(x: ActivationShape) -> dict[str, float]:
    """``selective_ops``: what torchtitan's op-level selective checkpointing keeps of a
    block (parallelize_llama.py ``_apply_ac_to_transformer_block`` at 9dec370): the block's
    input (the checkpoint's), the outputs of the ops it must save, i.e. the odd-numbered
    ``aten.mm`` calls of the block (wq, wv, then w1 and w2 of a SwiGLU MLP: counted wq 1,
    wk 2, wv 3, wo 4, w1 5, w3 6, w2 7; a plain MLP's up 5 and down 6 keep the up
    projection), and SDPA's output with its fp32 logsumexp. Everything else is recomputed.
    Split over t like the attention and MLP terms; the input whole unless sequence parallel."""
    s, b, h, a, t = x.seq_len, x.micro_batch, x.hidden, x.heads, x.tensor_parallel
    sb, sbh = s * b, s * b * h
    ACT = x.activation_bytes      # 16-bit, or 4 in fp32 training
    r = (x.kv_heads or a) / a
    f = _routed_ffn(x) * x.top_k + (x.shared_ffn if x.num_experts > 1 else 0)
    mlp = ACT * sb * f + ACT * sbh if x.gated_mlp else ACT * sb * f
    terms = {"block input (checkpoint)": ACT * sbh / (t if x.sequence_parallel else 1),
             "saved matmul outputs (wq, wv, MLP)": (ACT * sbh * (1 + r) + mlp) / t,
             "SDPA output and logsumexp (fp32)": (ACT * sbh + FP32 * a * sb) / t}
    return terms


_frozen_note = """A frozen weight (LoRA's base, ``requires_grad=False``) needs no weight
gradient, and autograd then does not save what only that gradient needs: ``F.linear``
(``mm`` / ``addmm``) saves its input only if the weight requires grad, ``weight * x``
(RMSNorm's scale) saves ``x`` only for the weight's gradient. What goes: the inputs of
every projection (q/k/v's shared input, the out-projection's, the MLP's input and fc2's
input, i.e. the activation's output), RMSNorm's 16-bit normalised value and a routed
token's gathered expert input; what stays is what the input gradient needs (RMSNorm's
fp32 input and rstd, LayerNorm's input and statistics, Q, K, V, the scores, the
activation's inputs, a fused attention kernel's own output). Measured on a frozen
``LlamaDecoderLayer`` (``tests/data/saved_tensors_lora_hf.json``,
``scripts/measure_saved_tensors_lora.py``): the ``frozen`` points equal these terms.
Not measured: GPT-2's Conv1D (``addmm``, the same rule), Mixtral's experts (transformers
4.31 has no Mixtral) and Megatron's stack (Transformer Engine's linears are assumed to
follow the same rule)."""


def _mlp_per_token(x: ActivationShape) -> float:
    """Bytes one token's MLP keeps past its input, per unit of f.

    Gated (SwiGLU): unfused keeps gate, SiLU(gate), up and the product (8 B per f;
    transformers ``LlamaMLP.forward``: ``silu`` saves its input, ``mul`` both operands,
    ``down_proj`` the product); fused keeps gate and up plus the product (6 B; Megatron
    ``SwiGLUFunction``, Liger's ``LigerSiLUMulFunction``). Plain GeLU: fused (``F.gelu``,
    Megatron's bias-GeLU) keeps its input and fc2 its output (4 B); unfused is
    transformers' ``NewGELUActivation`` (GPT-2's ``gelu_new``: ``pow`` saves x, the two
    ``mul`` 0.5*x and 1 + tanh, ``tanh`` its output, fc2 the product: 10 B). With fp32
    activations (``activation_bytes`` 4) each of these tensors is fp32: twice the bytes.
    """
    scale = x.activation_bytes / ACT
    fc2_input = 2 if x.frozen else 0       # a frozen fc2 does not keep its input
    if x.gated_mlp:
        return ((6 if x.fused else 8) - fc2_input) * scale
    return ((4 if x.fused else 10) - fc2_input) * scale


def _megatron(x: ActivationShape, k: Kernels) -> tuple[dict, dict]:
    """Korthikanti et al. 2022, Sec. 4.1 (the 34 + 5*a*s/h of Table 2), term by term."""
    s, b, h, a = x.seq_len, x.micro_batch, x.hidden, x.heads
    sbh = s * b * h
    r = (x.kv_heads or a) / a
    f = x.ffn or 4 * h
    A = x.activation_bytes
    mask = k.mask_bytes(A)
    fz = 0 if x.frozen else 1                 # frozen projections keep no input (_frozen_note)
    # FP8 (Transformer Engine, simulation/fp8.py): the QKV, out-projection, fc1 and fc2
    # inputs are saved as their 1-byte FP8 casts; FlashAttention still keeps its own
    # 16-bit output for its backward beside the out-projection's FP8 copy; fc2's input
    # (the activation's output) is 1 byte of the MLP's per-f bytes.
    lin = 1 if x.fp8_linear_inputs else A
    out_proj = (A + 1 if x.flash_attention else 1) if x.fp8_linear_inputs else A
    mlp = _mlp_per_token(x) - ((A - 1) if x.fp8_linear_inputs else 0)
    moe = x.num_experts > 1
    routed_mlp = shared_mlp = mlp
    if x.gated_mlp and x.fused and not x.frozen:
        # fused SwiGLU keeps its input, gate and up (2 per f; 1 B each with
        # activation_func_fp8_input_store), fc2 its input (the product: FP8 with FP8,
        # nothing with moe_act, which frees it and fc2 keeps the original input)
        swiglu = 2 * (1 if x.activation_fp8_input_store else A)
        fc2 = lin
        shared_mlp = swiglu + fc2
        routed_mlp = swiglu + (0 if moe and x.recomputes("moe_act") else fc2)
        mlp = shared_mlp
    # layernorm recomputation: the norm's output is freed and its consumers keep nothing of
    # their own; it applies where the norm is a module apart (gpt_layer_specs.py: MLA's
    # input_layernorm, an MoE layer's pre_mlp_layernorm), not where TE fuses it into the
    # next Linear (LayerNormLinear: the norm is an IdentityOp there)
    ln = x.recomputes("layernorm")
    qkv_in = 0 if ln and x.kv_lora_rank is not None else fz * lin
    # an MoE layer's router keeps the 16-bit norm output (moe_utils.py
    # RouterGatingLinearFunction saves its input); the shared experts' fc1 keeps that
    # tensor too with FP8 (shared_experts.py set_save_original_input)
    mlp_in = (0 if ln else A) if moe else fz * lin
    fp8_tag = " (FP8)" if x.fp8_linear_inputs else ""
    replicated = {
        "LayerNorm inputs": 2 * A * sbh,
        "QKV projection input" + fp8_tag: qkv_in * sbh,
        "MLP input" + ("" if moe else fp8_tag): mlp_in * sbh,
        "residual dropout masks": 2 * mask * sbh if x.resid_dropout else 0,
    }
    split = {
        "Q, K (Q K^T inputs)": A * sbh + A * r * sbh,
        "V": A * r * sbh,
        "attention output (out-projection input)": (out_proj * sbh if fz else
                                                     A * sbh if x.flash_attention else 0),
        "MLP activations": (routed_mlp if moe else mlp) * s * b * _routed_ffn(x) * x.top_k,
    }
    if x.shared_ffn and moe:
        split["shared experts' MLP activations"] = shared_mlp * s * b * x.shared_ffn
    if not x.flash_attention and not x.recomputes("core_attn"):
        # softmax output 2, dropout mask 1, dropout output 2 (without dropout: softmax only)
        per = (A + mask + A) if x.attn_dropout else A
        split["attention scores (softmax, dropout)"] = per * a * s * s * b
    return replicated, split


def _huggingface(x: ActivationShape, k: Kernels) -> tuple[dict, dict]:
    """What transformers' decoder layers save (transformers 5.24 / torch 2.13).

    Norms (``LlamaRMSNorm.forward``: ``pow`` and ``mul`` keep the fp32 copy, ``rsqrt`` its
    fp32 result per token, ``weight * x`` the 16-bit normalised value; ``nn.LayerNorm``:
    its input and per-token mean and rstd). The norm's output is the next block's input,
    kept by the projections (q/k/v share one; gate/up/router share one). RoPE keeps only
    cos and sin, which the model makes once and every layer shares: not per layer.
    Attention: :func:`_hf_attention`. Residual dropout (GPT-2 ``resid_pdrop``; Llama
    and Mixtral have none) keeps a mask per branch; ``mul`` by the mask saves only it.
    MoE (``MixtralSparseMoeBlock`` / ``MixtralExperts``): the router keeps its fp32
    softmax (E per token), the top-k indices (int64) and the renormalisation's operands
    (sum and top-k values, fp32); each routed token (s*b*k of them) keeps its gathered
    input (2h), the expert's MLP (per :func:`_mlp_per_token`), the expert output (2h, kept
    by the multiplication with its routing weight), the 16-bit scatter source that
    ``index_add_`` keeps (2h), its routing weight (fp32) and its indices (an int64 pair
    from ``torch.where``).

    fp32 training (``activation_bytes`` 4): RMSNorm's ``to(float32)`` is then a no-op, so
    ``pow`` and ``mul`` keep the fp32 input itself and ``weight * x`` the fp32 normalised
    value: (4 + 4)*s*b*h, the same sum with A = 4; every 16-bit term becomes 4 bytes.
    """
    s, b, h = x.seq_len, x.micro_batch, x.hidden
    sb, sbh = s * b, s * b * h
    f = x.ffn or 4 * h
    A = x.activation_bytes
    fz = 0 if x.frozen else 1                 # frozen weights (_frozen_note)
    n = x.norms
    replicated = {
        f"norms ({n})": n * _norm_bytes(x, k) - (
            (n - 1) * A * sbh if x.norm_input_shared and x.norm == "layernorm" else 0),
        # one norm (Falcon-7B's parallel block): its output is both blocks' input
        "attention and MLP block inputs": fz * (1 if n == 1 else 2) * A * sbh,
        "residual dropout masks": 2 * k.mask_bytes(A) * sbh if x.resid_dropout else 0,
    }
    split = _hf_attention(x, k)
    moe = x.num_experts > 1
    if moe and (x.shared_ffn or x.kv_lora_rank is not None):
        replicated.update(_deepseek_routing(x))
        e, kk = x.num_experts, x.top_k
        split["routed tokens (gathered input, expert output, fp32 scatter source)"] = (
            (2 * A + FP32) * h * sb * kk)
        split["routing weights and indices"] = (FP32 + INDEX) * sb * kk
    elif moe:
        e, kk = x.num_experts, x.top_k
        replicated["router (fp32 probabilities, top-k, renormalisation)"] = (
            (FP32 * e + INDEX * kk + FP32 + FP32 * kk) * sb)
        split["routed tokens (gathered input, expert output, scatter source)"] = (
            (2 + fz) * A * h * sb * kk)
        split["routing weights and indices"] = (FP32 + 2 * INDEX) * sb * kk
    split["MLP activations"] = _mlp_per_token(x) * sb * _routed_ffn(x) * x.top_k
    if x.shared_ffn and moe:
        split["shared experts' MLP activations"] = _mlp_per_token(x) * sb * x.shared_ffn
    return replicated, split


def _norm_bytes(x: ActivationShape, k: Kernels) -> float:
    """What one norm module keeps (transformers), bytes.

    ``LlamaRMSNorm``: the fp32 copy of its input (``pow`` and ``mul``), the fp32 ``rsqrt``
    per token and the 16-bit normalised value ``weight * x`` keeps (frozen: not).
    ``GemmaRMSNorm`` / ``Gemma2RMSNorm`` (``norm_fp32_scale``; transformers
    gemma/modeling_gemma.py, gemma2/modeling_gemma2.py: ``output = self._norm(x.float());
    output = output * (1.0 + self.weight.float()); return output.type_as(x)``): the scale
    runs in fp32 before the cast, so its ``mul`` keeps the fp32 normalised value (4 B, for
    the weight's gradient; frozen: not) and the fp32 ``1 + w`` (4 B x h, made on each call),
    and the 16-bit cast is kept by the next projection only (the block input). Measured:
    the Gemma and Gemma 2 points of tests/data/saved_tensors_hf_families.json.
    ``nn.LayerNorm``: its input and the per-token mean and rstd. ``fused_norm`` (Liger's
    ``LigerRMSNorm``): the 16-bit input and the fp32 rstd per token, nothing else."""
    sb, h, A = x.seq_len * x.micro_batch, x.hidden, x.activation_bytes
    fz = 0 if x.frozen else 1
    if x.fused_norm and x.norm == "rmsnorm":
        # Liger's LigerRMSNormFunction (liger_kernel/ops/rms_norm.py, 0.8.5): one kernel,
        # ``ctx.save_for_backward(X, W, RSTD)``: its 16-bit input (a view) and one fp32
        # rstd per row (llama and gemma casting modes), frozen or not
        return A * sb * h + FP32 * sb
    if x.norm == "layernorm":
        return A * sb * h + 2 * k.stat_bytes(A) * sb
    if x.norm_fp32_scale:
        return (FP32 + fz * FP32) * sb * h + FP32 * sb + FP32 * h
    return (FP32 + fz * A) * sb * h + FP32 * sb


def final_norm_bytes(x: ActivationShape, kernels: Kernels = CUDA) -> float:
    """What the model's final norm keeps for backward (transformers' ``model.norm``), bytes:
    what a block's norm keeps (:func:`_norm_bytes`: Llama's fp32 input copy, rsqrt and
    16-bit normalised value; Gemma's fp32 input and fp32 scaled value). Its 16-bit output
    is the head's input, counted apart. Measured: the output-stage points of
    tests/data/saved_tensors_hf_families.json (a one-layer ``LlamaForCausalLM``,
    ``GemmaForCausalLM``, ``Gemma2ForCausalLM``, module ``model.norm``)."""
    return _norm_bytes(x, kernels)


def _deepseek_routing(x: ActivationShape) -> dict[str, float]:
    """DeepSeek's router as transformers 4.57 builds it (``DeepseekV3TopkRouter``: the
    logits are ``F.linear`` of the fp32-cast input and weight, so the linear keeps an fp32
    copy of the input, 4h per token, and of the E x h weight, once per layer; the sigmoid
    keeps its fp32 scores, ``gather`` its int64 top-k indices, the renormalising ``div``
    the fp32 sum and top-k weights), per :func:`_huggingface`'s accounting. Its experts
    loop (``DeepseekV3MoE.moe``) keeps per routed token the int64 index of the gather,
    the gathered 16-bit input, the expert output and its fp32 weight (the ``mul`` by the
    weight) and the fp32 product that ``index_add_`` keeps (weights are fp32, so the
    product is): measured in tests/data/saved_tensors_hf_mla.json. A model with shared
    experts or latent attention is taken to be built from these classes (the only ones
    in transformers with them that the engine reads)."""
    sb, h, e, k = x.seq_len * x.micro_batch, x.hidden, x.num_experts, x.top_k
    return {"router (fp32 input copy, sigmoid scores, top-k, renormalisation)":
                (FP32 * h + FP32 * e + INDEX * k + FP32 + FP32 * k) * sb,
            "router weight (fp32 copy)": FP32 * e * h}


def fp32_residual_mlp_bytes(x: ActivationShape) -> float:
    """Bytes a frozen layer's MLP keeps in addition when its input is fp32 (a QLoRA base
    under PEFT: ``memory._peft_fp32_residual``), per GPU: each element-wise tensor past
    the fc1 / gate / up outputs (:func:`_mlp_per_token`) is fp32 instead of 16-bit, the
    same bytes once more. bitsandbytes ``Linear4bit.forward`` casts its input to the
    compute dtype and returns ``out.to(inp_dtype)``, so gate and up come out fp32, and
    SiLU and the product (not autocast ops) keep fp32 tensors; ``MatMul4Bit`` keeps no
    input, PEFT's adapters keep their 16-bit autocast copies and SDPA its 16-bit casts
    of q, k, v, so nothing else changes. Measured with bitsandbytes' own NF4 layers
    (CPU backend) on transformers' LlamaDecoderLayer: 6 B x b x s x f more than with a
    bf16 input, for every shape (``tests/data/saved_tensors_qlora_hf.json``,
    ``scripts/measure_saved_tensors_qlora.py``). 0 unless ``frozen`` on the
    transformers stack with 16-bit activations, or with full recomputation (the
    checkpoint keeps the block input only)."""
    if not x.frozen or x.framework != "huggingface" or x.activation_bytes != ACT \
            or x.recompute in ("full", "selective_ops"):
        return 0.0
    return sum(v for k, v in layer_terms(x).items() if "MLP activations" in k)


def amp_fp32_weight_bytes(x: ActivationShape) -> float:
    """Bytes a trainable transformers block saves in addition when its weights are fp32 and
    it runs under torch AMP (HF Trainer's ``bf16``/``fp16`` on a model loaded in fp32), per
    GPU: RMSNorm's ``weight * x`` keeps its fp32 normalised value (4 B, not 2, x h a
    norm), and autocast casts the fp32 norm output once for each projection that reads it,
    each keeping its own 16-bit copy where a 16-bit model shares one tensor: q, k and v (2
    copies more, none with a fused qkv projection) and a gated MLP's gate and up (1 more).
    The weights' own copies are :func:`simulation.memory._autocast_weight_copies`'.
    Measured on transformers' LlamaDecoderLayer under ``torch.autocast("cpu", bfloat16)``:
    10 B x b x s x h more than the 16-bit layer (``tests/data/saved_tensors_amp_hf.json``,
    ``scripts/measure_saved_tensors_amp.py``). 0 for frozen weights, 32-bit activations,
    full recomputation (the checkpoint keeps the block input only) and Megatron's stack."""
    if x.frozen or x.framework != "huggingface" or x.activation_bytes != ACT \
            or x.recompute in ("full", "selective_ops"):
        return 0.0
    sbh = x.seq_len * x.micro_batch * x.hidden
    norms = x.norms * ACT * sbh if x.norm == "rmsnorm" else 0
    qkv = 0 if x.qkv_view_value else 2 * ACT * sbh
    mlp = ACT * sbh if x.gated_mlp else 0
    return float(norms + qkv + mlp)


def _routed_ffn(x: ActivationShape) -> int:
    """One routed expert's MLP width (``moe_ffn``), else ``ffn`` (4h when unset)."""
    if x.num_experts > 1 and x.moe_ffn:
        return x.moe_ffn
    return x.ffn or 4 * x.hidden


def _hf_attention(x: ActivationShape, k: Kernels) -> dict:
    """Attention's saved tensors in transformers (q/k/v projection input counted apart).

    SDPA/flash (``sdpa_attention_forward`` with ``enable_gqa``, FlashAttention-2): the
    kernel keeps Q, K, V (K and V at kv_heads), its output (which the out-projection keeps
    too: the kernel writes it in (b, s, heads, d) order, so ``transpose().contiguous()``
    copies nothing) and the fp32 logsumexp per head and token. On CPU with attention
    dropout the math kernel runs instead, in fp32, with K and V repeated to every head:
    Q, K, V, scores, mask and dropped scores in fp32 (12*s*b*h + 12*a*s^2*b) and the
    out-projection's 16-bit input apart.

    Widths: Q and the output are heads x ``head_dim`` (Gemma), K and V kv_heads x head_dim.
    Phi-3 (``qkv_view_value``, ``sdpa_output_copy``) and Falcon (``sdpa_kv_broadcast``,
    ``kv_repeated``, ``qkv_view_value``): see :class:`ActivationShape` and the comments below.

    Eager (``eager_attention_forward``): ``repeat_kv`` copies K and V to every head
    before the two ``matmul``, which keep Q and K, then the probabilities and V; the
    out-projection keeps its own copy of the output. Scores: the softmax output (fp32
    where upcast, 16-bit otherwise); with dropout the mask and the dropped 16-bit
    probabilities, without it the 16-bit copy of an fp32 softmax (GPT-2's softmax output
    is itself what the second matmul keeps). With fp32 activations the softmax is fp32
    without an upcast, so its "16-bit copy" is the softmax itself: nothing on top.
    """
    s, b, h, a = x.seq_len, x.micro_batch, x.hidden, x.heads
    A = x.activation_bytes
    sb, asb, as2b = s * b, a * s * b, a * s * s * b
    sbq = sb * x.q_width                     # Q and the attention output (heads x head_dim)
    sbkv = sb * h * x.kv_ratio               # K, V (kv_heads x head_dim)
    scores_kept = not x.recomputes("core_attn")
    out_proj = 0 if x.frozen else A * sbq    # a frozen out-projection keeps no input
    if x.flash_attention and ((x.attn_dropout and k.sdpa_dropout_math_fp32) or x.sdpa_kv_broadcast):
        # Falcon's multi-query SDPA call (sdpa_kv_broadcast) passes one K/V head and no
        # enable_gqa: the flash and memory-efficient kernels need equal head counts, and
        # the math kernel upcasts 16-bit inputs to fp32 on CUDA too (unless
        # allow_fp16_bf16_reduction_math_sdp) and expands K and V to every head; Falcon
        # passes dropout_p 0.0 there
        per = 3 * FP32 if x.attn_dropout and not x.sdpa_kv_broadcast else FP32
        return {"Q, K, V (fp32, math kernel)": 3 * FP32 * sbq,
                "attention scores (fp32 softmax, mask, dropout)": per * as2b if scores_kept else 0,
                "attention output (out-projection input)": out_proj}
    if x.flash_attention:
        # qkv_view_value: V is a slice of the fused qkv output, so the kernel keeps all of it
        v = sbq + 2 * sbkv if x.qkv_view_value else sbkv
        terms = {"Q, K, V": A * (sbq + sbkv + v),
                 "attention output (out-projection input)": A * sbq,
                 "logsumexp (fp32)": FP32 * asb}
        if x.sdpa_output_copy:
            # Phi-3's rotary ends in torch.cat (partial rotary), so Q is contiguous in
            # (b, heads, s, d) order, the kernel's output follows it, and o_proj keeps the
            # copy that transpose(1, 2).contiguous() makes
            terms["out-projection input (a copy of the output)"] = out_proj
        return terms
    upcast = x.norm == "rmsnorm" if x.eager_softmax_fp32 is None else x.eager_softmax_fp32
    upcast = upcast and A < FP32             # an fp32 layer's softmax needs no upcast
    softmax = FP32 if upcast else A
    if x.attn_dropout:
        per = softmax + k.mask_bytes(A) + A
    else:
        per = softmax + (A if upcast else 0)
    terms = {}
    if x.attn_softcap and scores_kept:
        # Gemma 2 (gemma2/modeling_gemma2.py eager_attention_forward): scores / softcap,
        # torch.tanh, * softcap: tanh keeps its output, one more tensor of scores
        terms["soft-capped scores (tanh output)"] = A * as2b
    return terms | {"Q, K, V (K and V repeated to every head)": 3 * A * sbq,
            "attention output (out-projection input)": out_proj,
            "attention scores (softmax, dropout)": per * as2b if scores_kept else 0}


@dataclass(frozen=True)
class StageActivations:
    per_layer_bytes: float
    layers_held: float              # layer-equivalents held by the first stage
    layers_bytes: float             # per_layer_bytes * layers_held
    extras_bytes: float             # embedding dropout + output layer (Sec. 4.3)
    interleave_factor: float
    source: str = ""                # whose accounting per_layer_bytes follows

    @property
    def total_bytes(self) -> float:
        return self.layers_bytes + self.extras_bytes


def first_stage(x: ActivationShape, num_layers: int, pipeline_parallel: int = 1,
                num_microbatches: int = 1, interleave_stages: int | None = None,
                vocab: int | None = None) -> StageActivations:
    """Activations held by the busiest (first) pipeline stage, Eq. 5-6 of the paper
    (per-layer bytes on CUDA, :func:`layer_bytes`)."""
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
    return frozen_new(StageActivations, dict(
        per_layer_bytes=per, layers_held=layers_held, layers_bytes=per * layers_held * factor,
        extras_bytes=extras, interleave_factor=factor, source=SOURCES[x.framework]))
