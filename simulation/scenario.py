"""The scenario: what the user asks about, as frozen dataclasses that round-trip JSON.

Shape (``"schema": 1``)::

    {"schema": 1,
     "model":    {"preset": "llama2-70b"}            # or explicit architecture fields,
                                                     # or {"num_params": 7e9, ...}
     "cluster":  {"node": "dgx-h100", "num_nodes": 2,
                  "accelerator": "h100-sxm5-80gb",   # optional overrides of the template
                  "gpus_per_node": 8,
                  "tiers": {"ddr": {"capacity_bytes": ...}, "nvme": {...}, "cxl": {...}}},
     "training": {"micro_batch_size": 1, "global_batch_size": 16, "seq_len": 4096,
                  "precision": "bf16", "optimizer": "adam", "recompute": "none",
                  "tensor_parallel": 1, "pipeline_parallel": 1, "sequence_parallel": false},
     "strategy": {"kind": "zero3", "shard_group_size": null,
                  "offload_optimizer": "none", "offload_params": "none",
                  "prefetch_depth": 1},
     "convention": "realistic",                      # or "zero_paper"
     "runtime":  {"runtime_bytes": 1610612736, "fragmentation_fraction": 0.1},
     "checkpoint": {"target": "parallel_fs", "method": "blocking", ...}}   # see checkpoint.py

Presets are expanded by :func:`resolve` into explicit values; a resolved scenario
carries everything the engine uses, so a stored run can be re-evaluated exactly.
Every bad value raises :class:`ScenarioError` naming its dotted field.
"""

from __future__ import annotations

import dataclasses as _dc
import math
from dataclasses import dataclass, field

from . import calibrate, cpu_adam, presets
from .checkpoint import CheckpointSpec, resolve_target
from .recsys import RecModelSpec
from .activations import RECOMPUTE_MODULES
from .errors import Collect, ScenarioError
from .loss import LOSS_KERNELS
from .fp8 import (AMAX_ALGOS as _FP8_AMAX_ALGOS, FORMATS as _FP8_FORMATS, RECIPES as _FP8_RECIPES,
                  TE_RECIPES as _FP8_TE_RECIPES, TORCHAO_RECIPES as _FP8_TORCHAO_RECIPES,
                  Fp8Spec, default_format as _fp8_default_format)
from .states import STATE_DTYPES, StateDtypes
from .lora import (BASE_DTYPES, DROPOUT_POSITIONS, IMPLEMENTATIONS, LORA_TARGETS,
                   QUANT_BLOCK_SIZES, QUANTISED as QUANTISED_DTYPES, LoraSpec)
from .memo import ByIdentity, KeptOnSecondCall
from .fields import (bool_field as _bool, choice_field as _choice, drop_none as _drop_none,
                     field_names, frozen_new as _new, given as _given, int_field as _int,
                     name_field as _name_field, no_unknown as _no_unknown, num_field as _num,
                     section as _section, show as _show, str_field as _str)

SCHEMA_VERSION = 1

DEEPSPEED_RELEASES = ("current", "v0.3-v0.5")
# PyTorch FSDP API (``strategy.fsdp_version``, as Hugging Face Accelerate names it):
# 1 = ``FullyShardedDataParallel`` (flat parameters), 2 = ``fully_shard`` (per-parameter DTensor)
FSDP_VERSIONS = (1, 2)
POSITION_EMBEDDINGS = ("rope", "learned", "alibi")
STRATEGY_KINDS = ("ddp", "zero1", "zero2", "zero3", "fsdp_full_shard", "fsdp_hybrid_shard",
                  "zero_offload", "zero_infinity", "megatron_dist_opt")
OFFLOAD_TARGETS = ("none", "cpu", "nvme", "cxl")
# The longest sequence a training plan may give: 10M tokens, the longest context a
# published model claims (Llama 4 Scout, Meta, April 2025: "10M" tokens); 100M is a typo.
MAX_SEQ_LEN = 10_000_000
# Upper bounds on hardware figures, each some hundreds of times the largest part sold in
# 2025 (288 GB of HBM on MI355X/B300, 8 TB/s of HBM bandwidth, 2.5 PFLOP/s dense bf16 on
# B300; a DGX's 30 TB of NVMe): a figure past them is a unit slip (bits for bytes, 1e300),
# not hardware.
MAX_BYTES = 1e15                  # one accelerator's memory
MAX_TIER_BYTES = 1e18             # one node's tier
MAX_BYTES_PER_S = 1e15            # any link or memory bandwidth
MAX_FLOPS = 1e18                  # one accelerator
PRECISIONS = ("bf16", "fp16", "fp32")
OPTIMIZERS = ("adam", "adamw", "adam_8bit", "sgd_momentum", "adafactor", "paged_adamw",
              "paged_adamw_8bit")
# "selective_ops": op-level selective activation checkpointing as torchtitan applies it
# (torchtitan/parallelisms/parallelize_llama.py _apply_ac_to_transformer_block, 9dec370,
# selective_ac_option = "op"): a block saves every odd matmul output, SDPA and the
# reduce-scatters, and recomputes the even matmuls and every element-wise op
# (simulation.compute.op_sac_recompute_s, activations.layer_terms).
RECOMPUTE = ("none", "selective", "full", "selective_ops")
PIPELINE_SCHEDULES = ("1f1b", "dualpipe")     # simulation/pipeline.py
CONVENTIONS = ("realistic", "zero_paper")
FRAMEWORKS = ("huggingface", "megatron")
SOFTWARE_STACKS = ("megatron", "pytorch_eager", "torch_compile")
COMPUTE_MODELS = ("constant", "work")
SLIDING_WINDOW_LAYERS = ("all", "alternate")
# ModelSpec.layer_family: the model types simulation/hf_config.py reads
LAYER_FAMILIES = ("llama", "mistral", "mixtral", "qwen2", "gemma", "gemma2", "phi3", "falcon",
                  "deepseek_v3", "deepseek_v2", "bloom")
# Megatron-LM --cp-comm-type values modelled (simulation.context_parallel)
CP_COMM_TYPES = ("p2p", "all_gather")


def _framework(training: dict, path: str) -> str:
    """``training.framework``; by default Megatron where its parallelism is asked for
    (tensor or pipeline parallel, sequence parallel: transformers' modules do none of
    them), transformers otherwise. Read after the parallel degrees are validated."""
    def degree(k):                      # absent or null: 1
        v = training.get(k)
        return 1 if v is None else v
    megatron = (degree("tensor_parallel") != 1 or degree("pipeline_parallel") != 1
                or degree("context_parallel") != 1
                or training.get("sequence_parallel") is True
                or degree("expert_parallel") != 1)
    return _choice(training, "framework", path, FRAMEWORKS, "megatron" if megatron else "huggingface")


class _Retry(Exception):
    """A direct parse met something the collecting parse must look at."""


def _missing():
    raise _Retry


def _first_try(direct, collecting, d: dict, path: str):
    """``direct(d, path)``: the section's checks called one after another, no collecting
    (what a valid section costs); on any failure ``collecting(d, path)``, which makes the
    same checks in the same order and names every bad field (what an invalid section
    raises). Both make equal specs of a valid section (``tests/engine/test_scenario_fast.py``)."""
    try:
        return direct(d, path)
    except Exception:       # noqa: BLE001 - the collecting parse raises what it must
        return collecting(d, path)


# ------------------------------------------------------------------ dataclasses
@dataclass(frozen=True)
class ModelSpec:
    """A transformer's architecture, or just its size.

    Either the architecture (layers, hidden size, heads, FFN size, vocab) is given and the
    parameter count is derived, or ``num_params`` is given (then ``num_layers`` and
    ``hidden_size`` are still needed for activations).

    ``position_embedding``: ``rope`` (rotary, no parameters), ``learned`` (a max_seq_len x
    hidden table) or ``alibi`` (ALiBi's per-head linear biases on the attention scores,
    Press et al. 2022, no parameters: BLOOM, MPT; simulation/compute.py counts its bias
    add on eager attention's scores).
    """
    name: str = "custom"
    num_layers: int | None = None
    hidden_size: int | None = None
    num_attention_heads: int | None = None
    num_kv_heads: int | None = None
    ffn_hidden_size: int | None = None
    vocab_size: int | None = None
    gated_mlp: bool = True
    tied_embeddings: bool = False
    position_embedding: str = "rope"
    norm: str = "rmsnorm"
    linear_bias: bool = False
    # Exact-count fields (issue #14). ``head_dim``: width of one attention head; None is
    # hidden_size / num_attention_heads (transformers' ``head_dim`` config key: Gemma-7B has
    # 16 heads x 256 = 4096 != hidden 3072). ``qkv_bias``: biases on the q, k and v
    # projections only (Qwen2's ``nn.Linear(..., bias=True)`` for q/k/v, o without); None
    # follows ``linear_bias``. ``norms_per_block``: norm modules in one block (2 for
    # pre-norm Llama/GPT; 1 for Falcon-7B's parallel block with one ``input_layernorm``;
    # 4 for Gemma 2, which adds post-attention and post-feed-forward norms).
    head_dim: int | None = None
    qkv_bias: bool | None = None
    norms_per_block: int | None = None     # None: 2
    # ``fused_projections``: q, k, v in one ``nn.Linear`` and (gated MLP) gate and up in
    # one (Phi-3's qkv_proj and gate_up_proj); None: fused when the MLP is not gated
    # (GPT-2's c_attn, Falcon's query_key_value), apart when it is (Llama's q/k/v_proj).
    # Changes the tensors ZeRO-3 fetches, not the count.
    fused_projections: bool | None = None
    # ``layer_family``: the transformers ``model_type`` whose decoder layer the huggingface
    # stack's activations follow (simulation/activations.py ``FAMILY_TRAITS``: Gemma's fp32
    # norm scale, Gemma 2's soft-capping, Phi-3's fused-qkv views, Falcon's attention,
    # BLOOM's fp32 softmax and single-op GELU); None: a Llama-style layer (GPT-2 style when
    # the MLP is not gated). ``bloom`` also counts BloomModel's embedding LayerNorm
    # (``word_embeddings_layernorm``, simulation/params.py).
    layer_family: str | None = None
    # Soft-capping (Gemma 2, transformers ``Gemma2Config``): ``attn_logit_softcapping``
    # caps the attention scores (eager attention keeps the tanh output: one more tensor of
    # scores), ``final_logit_softcapping`` the logits before the loss (the tanh output, one
    # more tensor of logits); None: no cap. The values do not change memory, only their use.
    attn_logit_softcapping: float | None = None
    final_logit_softcapping: float | None = None
    dropout: bool = True
    # Dropout on attention probabilities and on the two residual branches (transformers'
    # attention_dropout / attn_pdrop and resid_pdrop; Megatron's --attention-dropout and
    # --hidden-dropout); each defaults to ``dropout``. See simulation/activations.py.
    attention_dropout: bool | None = None
    hidden_dropout: bool | None = None
    num_experts: int = 1
    moe_top_k: int = 1
    # Mixture-of-experts layout beyond ``num_experts`` / ``moe_top_k`` (DeepSeekMoE, Dai et
    # al. 2024; transformers ``DeepseekV3MoE``): ``moe_ffn_hidden_size``, one routed
    # expert's MLP width (config.json ``moe_intermediate_size``; None: ffn_hidden_size, as
    # Mixtral); ``num_shared_experts``, experts every token passes through, together one
    # MLP of num_shared_experts x moe_ffn_hidden_size (``n_shared_experts``; None: 0);
    # ``first_dense_layers``, leading blocks with a dense MLP of ffn_hidden_size instead
    # of experts (``first_k_dense_replace``: block i has experts iff i >= k; None: 0).
    moe_ffn_hidden_size: int | None = None
    num_shared_experts: int | None = None
    first_dense_layers: int | None = None
    # Multi-head latent attention (DeepSeek-V2, arXiv 2405.04434, Sec. 2.1; transformers
    # ``DeepseekV3Attention``), on when ``kv_lora_rank`` is given: q is h -> q_lora_rank ->
    # heads x (qk_nope + qk_rope) (q_lora_rank None: one h -> heads x (qk_nope + qk_rope)
    # projection, DeepSeek-V2-Lite), k and v come from an h -> kv_lora_rank + qk_rope
    # projection, the latent up-projected to heads x (qk_nope + v_head_dim); o is
    # heads x v_head_dim -> h. num_kv_heads and head_dim are then unused.
    q_lora_rank: int | None = None
    kv_lora_rank: int | None = None
    qk_nope_head_dim: int | None = None
    qk_rope_head_dim: int | None = None
    v_head_dim: int | None = None
    # Sliding-window attention: each query attends to the last ``sliding_window`` keys
    # (itself included) in the layers ``sliding_window_layers`` names: "all" (Mistral-7B-
    # v0.1, transformers ``MistralAttention``) or "alternate" (Gemma 2: layers 0, 2, 4, ...
    # slide, ``Gemma2Config.layer_types``). None: full causal attention.
    sliding_window: int | None = None
    sliding_window_layers: str | None = None
    max_seq_len: int | None = None
    num_params: int | None = None
    preset: str | None = None
    source: str | None = None

    @property
    def attention_head_dim(self) -> int:
        """Width of one attention head: ``head_dim``, else hidden_size // num_attention_heads."""
        return self.head_dim or self.hidden_size // (self.num_attention_heads or max(1, self.hidden_size // 128))

    @property
    def attention_width(self) -> int:
        """Q's output width, heads x head_dim: hidden_size unless ``head_dim`` is given."""
        if self.head_dim is None or self.num_attention_heads is None:
            return self.hidden_size
        return self.num_attention_heads * self.head_dim

    @property
    def has_qkv_bias(self) -> bool:
        """Whether q, k and v carry biases: ``qkv_bias``, else ``linear_bias``."""
        return self.linear_bias if self.qkv_bias is None else self.qkv_bias

    @property
    def has_fused_projections(self) -> bool:
        """Whether q/k/v (and gate/up) are one tensor each: ``fused_projections``, else not gated."""
        return (not self.gated_mlp) if self.fused_projections is None else self.fused_projections

    @property
    def block_norms(self) -> int:
        """Norm modules per block: ``norms_per_block``, else 2 (pre-norm attention and MLP)."""
        return 2 if self.norms_per_block is None else self.norms_per_block

    @property
    def uses_mla(self) -> bool:
        """Multi-head latent attention (``kv_lora_rank`` given)."""
        return self.kv_lora_rank is not None

    @property
    def qk_head_dim(self) -> int:
        """Width of one head's query and key: qk_nope + qk_rope under MLA, else the head width."""
        if self.uses_mla:
            return self.qk_nope_head_dim + self.qk_rope_head_dim
        return self.attention_head_dim

    @property
    def value_head_dim(self) -> int:
        """Width of one head's value (and attention output): ``v_head_dim`` under MLA."""
        return self.v_head_dim if self.uses_mla else self.attention_head_dim

    @property
    def expert_ffn_size(self) -> int | None:
        """One routed expert's MLP width: ``moe_ffn_hidden_size``, else ffn_hidden_size."""
        return self.moe_ffn_hidden_size or self.ffn_hidden_size

    @property
    def shared_expert_ffn_size(self) -> int:
        """Width of the shared experts' MLP: num_shared_experts x expert_ffn_size (0 without)."""
        return (self.num_shared_experts or 0) * (self.expert_ffn_size or 0)

    @property
    def moe_layers(self) -> int:
        """Blocks with experts: all but the ``first_dense_layers`` (0 without experts)."""
        if self.num_experts <= 1:
            return 0
        return max((self.num_layers or 0) - (self.first_dense_layers or 0), 0)

    @property
    def sliding_layers(self) -> int:
        """Blocks with sliding-window attention: all, every other one (0, 2, 4, ...), or none."""
        if self.sliding_window is None:
            return 0
        n = self.num_layers or 0
        return (n + 1) // 2 if self.sliding_window_layers == "alternate" else n

    @property
    def has_architecture(self) -> bool:
        return None not in (self.num_layers, self.hidden_size, self.num_attention_heads,
                            self.ffn_hidden_size, self.vocab_size)

    @classmethod
    def from_dict(cls, d: dict, path: str = "model") -> "ModelSpec":
        _no_unknown(d, field_names(cls), path)
        # fields checked in order (the first bad one is named); kv heads default to heads.
        # ``x if "k" in d else v``: a field left out is what its check gives on an empty
        # section, without the call (tests/engine/test_stage_parts_fast.py holds v to it)
        m = _new(cls, dict(
            name=_name_field(d, "name", path, "custom") or "custom",
            num_layers=_int(d, "num_layers", path, maximum=10_000),
            hidden_size=_int(d, "hidden_size", path, maximum=1_000_000),
            num_attention_heads=(heads := _int(d, "num_attention_heads", path, maximum=100_000)),
            num_kv_heads=heads if (kv := _int(d, "num_kv_heads", path)) is None else kv,
            ffn_hidden_size=_int(d, "ffn_hidden_size", path, maximum=10_000_000),
            vocab_size=_int(d, "vocab_size", path, maximum=100_000_000),
            gated_mlp=_bool(d, "gated_mlp", path, True),
            tied_embeddings=_bool(d, "tied_embeddings", path, False),
            position_embedding=_choice(d, "position_embedding", path, POSITION_EMBEDDINGS, "rope"),
            norm=_choice(d, "norm", path, ("rmsnorm", "layernorm"), "rmsnorm"),
            linear_bias=_bool(d, "linear_bias", path, False),
            head_dim=(_int(d, "head_dim", path, minimum=1, maximum=100_000)
                      if "head_dim" in d else None),
            qkv_bias=None if d.get("qkv_bias") is None else _bool(d, "qkv_bias", path, False),
            norms_per_block=(_int(d, "norms_per_block", path, minimum=0, maximum=16)
                             if "norms_per_block" in d else None),
            fused_projections=(None if d.get("fused_projections") is None
                               else _bool(d, "fused_projections", path, False)),
            layer_family=(None if d.get("layer_family") is None
                          else _choice(d, "layer_family", path, LAYER_FAMILIES, "llama")),
            attn_logit_softcapping=_num(d, "attn_logit_softcapping", path, strict=True),
            final_logit_softcapping=_num(d, "final_logit_softcapping", path, strict=True),
            dropout=(dropout := _bool(d, "dropout", path, True)),
            attention_dropout=_bool(d, "attention_dropout", path, dropout),
            hidden_dropout=_bool(d, "hidden_dropout", path, dropout),
            num_experts=(_int(d, "num_experts", path, 1, maximum=1_000_000)
                         if "num_experts" in d else 1),
            moe_top_k=(_int(d, "moe_top_k", path, 1) if "moe_top_k" in d else 1),
            moe_ffn_hidden_size=(_int(d, "moe_ffn_hidden_size", path, maximum=10_000_000)
                                 if "moe_ffn_hidden_size" in d else None),
            num_shared_experts=(_int(d, "num_shared_experts", path, minimum=0, maximum=1_000_000)
                                if "num_shared_experts" in d else None),
            first_dense_layers=(_int(d, "first_dense_layers", path, minimum=0, maximum=10_000)
                                if "first_dense_layers" in d else None),
            q_lora_rank=(_int(d, "q_lora_rank", path, maximum=1_000_000)
                         if "q_lora_rank" in d else None),
            kv_lora_rank=(_int(d, "kv_lora_rank", path, maximum=1_000_000)
                          if "kv_lora_rank" in d else None),
            qk_nope_head_dim=(_int(d, "qk_nope_head_dim", path, minimum=0, maximum=100_000)
                              if "qk_nope_head_dim" in d else None),
            qk_rope_head_dim=(_int(d, "qk_rope_head_dim", path, minimum=0, maximum=100_000)
                              if "qk_rope_head_dim" in d else None),
            v_head_dim=(_int(d, "v_head_dim", path, maximum=100_000)
                        if "v_head_dim" in d else None),
            sliding_window=(_int(d, "sliding_window", path, maximum=MAX_SEQ_LEN)
                            if "sliding_window" in d else None),
            sliding_window_layers=(None if d.get("sliding_window_layers") is None else _choice(
                d, "sliding_window_layers", path, SLIDING_WINDOW_LAYERS, "all")),
            max_seq_len=(_int(d, "max_seq_len", path, maximum=MAX_SEQ_LEN) if "max_seq_len" in d else None),
            num_params=(_int(d, "num_params", path, maximum=10**16) if "num_params" in d else None),
            preset=_str(d, "preset", path),
            source=(_str(d, "source", path) if "source" in d else None)))
        if m.num_params is None and not m.has_architecture:
            missing = [k for k in ("num_layers", "hidden_size", "num_attention_heads",
                                   "ffn_hidden_size", "vocab_size") if getattr(m, k) is None]
            raise ScenarioError(f"{path}.{missing[0]}",
                                "is required: give a preset, the full architecture "
                                f"(missing: {', '.join(missing)}) or num_params")
        if m.num_params is not None and (m.num_layers is None or m.hidden_size is None):
            raise ScenarioError(f"{path}.num_layers" if m.num_layers is None else f"{path}.hidden_size",
                                "is required with num_params (activations depend on it)")
        if (m.head_dim is None and m.num_attention_heads and m.hidden_size
                and m.hidden_size % m.num_attention_heads):
            raise ScenarioError(f"{path}.num_attention_heads",
                                f"must divide hidden_size {m.hidden_size} (or give head_dim), "
                                f"got {m.num_attention_heads}",
                                depends_on=(f"{path}.hidden_size", f"{path}.head_dim"))
        if m.num_kv_heads and m.num_attention_heads and m.num_attention_heads % m.num_kv_heads:
            raise ScenarioError(f"{path}.num_kv_heads",
                                f"must divide num_attention_heads {m.num_attention_heads}, got {m.num_kv_heads}",
                                depends_on=(f"{path}.num_attention_heads",))
        if m.moe_top_k > m.num_experts:
            raise ScenarioError(f"{path}.moe_top_k",
                                f"must be <= num_experts ({m.num_experts}), got {m.moe_top_k}",
                                depends_on=(f"{path}.num_experts",))
        _check_layout(m, path)
        return m

    def to_dict(self) -> dict:
        return _given(self)


def _check_layout(m: "ModelSpec", path: str) -> None:
    """The expert, latent-attention and sliding-window fields agree with each other."""
    for k in ("moe_ffn_hidden_size", "num_shared_experts", "first_dense_layers"):
        if getattr(m, k) is not None and m.num_experts <= 1:
            raise ScenarioError(f"{path}.{k}", "needs num_experts > 1 (a mixture of experts)",
                                depends_on=(f"{path}.num_experts",))
    if m.first_dense_layers is not None and m.num_layers is not None and m.first_dense_layers > m.num_layers:
        raise ScenarioError(f"{path}.first_dense_layers",
                            f"must be <= num_layers ({m.num_layers}), got {m.first_dense_layers}",
                            depends_on=(f"{path}.num_layers",))
    if m.uses_mla:
        for k in ("qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim"):
            if getattr(m, k) is None:
                raise ScenarioError(f"{path}.{k}", "is required with kv_lora_rank (latent attention)",
                                    depends_on=(f"{path}.kv_lora_rank",))
        if m.qk_nope_head_dim + m.qk_rope_head_dim < 1:
            raise ScenarioError(f"{path}.qk_nope_head_dim",
                                "and qk_rope_head_dim must not both be 0")
    else:
        for k in ("q_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim"):
            if getattr(m, k) is not None:
                raise ScenarioError(f"{path}.{k}", "needs kv_lora_rank (multi-head latent attention)",
                                    depends_on=(f"{path}.kv_lora_rank",))
    if m.sliding_window_layers is not None and m.sliding_window is None:
        raise ScenarioError(f"{path}.sliding_window_layers", "needs sliding_window",
                            depends_on=(f"{path}.sliding_window",))


@dataclass(frozen=True)
class AcceleratorSpec:
    name: str
    hbm_capacity_bytes: float
    hbm_bytes_per_s: float
    peak_flops_bf16: float
    peak_flops_fp32: float
    host_link_bytes_per_s: float
    scaleup_bytes_per_s: float
    preset: str | None = None
    source: str | None = None
    # Measured dense 16-bit GEMM FLOP/s for large shapes and the SM (CU) count, used by
    # the work compute model (simulation.compute) instead of its table; both or neither.
    gemm_flops: float | None = None
    sm_count: int | None = None
    # Dense (not sparse) FP8 tensor-core peak FLOP/s; None: the part has no FP8 GEMMs
    # (A100, V100, MI250X) and ``training.fp8`` is refused. ``mxfp8``: the tensor cores
    # take MX block-scaled FP8 (OCP microscaling, E8M0 scales per 32 elements: Blackwell).
    # ``fp8_non_tn_gemm``: FP8 GEMMs take their operands in any layout (datacenter Blackwell,
    # compute capability 10.x: Transformer Engine's ``is_non_tn_fp8_gemm_supported``), so the
    # per-tensor recipes make no transposed FP8 copies; False: TN only (Hopper, Ada).
    peak_flops_fp8: float | None = None
    mxfp8: bool = False
    fp8_non_tn_gemm: bool = False

    @classmethod
    def from_dict(cls, d: dict, path: str) -> "AcceleratorSpec":
        """The spec, or every missing or bad field at once (:meth:`_collecting`); a valid
        section takes the direct checks of :func:`_first_try` (the same checks, no
        collecting), an invalid one is parsed again by :meth:`_collecting`."""
        return _first_try(cls._direct, cls._collecting, d, path)

    @classmethod
    def _direct(cls, d: dict, path: str) -> "AcceleratorSpec":
        built_in = _BUILT_IN_ACCELERATORS.get(d.get("preset"))
        if built_in is not None and _as_written(d, built_in[2]):
            return built_in[1]           # a built-in preset as the table has it
        _no_unknown(d, field_names(cls), path)
        vals = {k: _num(d, k, path, strict=True, maximum=top) if d.get(k) is not None else _missing()
                for k, top in _ACC_REQUIRED}
        gemm = _num(d, "gemm_flops", path, strict=True, maximum=MAX_FLOPS)
        sms = _int(d, "sm_count", path, minimum=1, maximum=100_000)
        if (gemm is None) != (sms is None) or gemm is not None and gemm > vals["peak_flops_bf16"]:
            _missing()
        fp8 = _num(d, "peak_flops_fp8", path, strict=True, maximum=MAX_FLOPS)
        vals.update(name=_name_field(d, "name", path, "custom accelerator") or "custom accelerator",
                    preset=_str(d, "preset", path), source=_str(d, "source", path),
                    gemm_flops=gemm, sm_count=sms, peak_flops_fp8=fp8,
                    mxfp8=_bool(d, "mxfp8", path, False),
                    fp8_non_tn_gemm=_bool(d, "fp8_non_tn_gemm", path, False))
        if (vals["mxfp8"] or vals["fp8_non_tn_gemm"]) and fp8 is None:
            _missing()
        return _new(cls, vals)

    @classmethod
    def _collecting(cls, d: dict, path: str) -> "AcceleratorSpec":
        bad = Collect()                  # every missing or bad field at once
        bad(_no_unknown, d, field_names(cls), path)
        vals = {}
        for k in ("hbm_capacity_bytes", "hbm_bytes_per_s", "peak_flops_bf16", "peak_flops_fp32",
                  "host_link_bytes_per_s", "scaleup_bytes_per_s"):
            if d.get(k) is None:
                bad.add(f"{path}.{k}")
                continue
            vals[k] = bad(_num, d, k, path, strict=True, maximum=(
                MAX_BYTES if k.endswith("_bytes") else MAX_BYTES_PER_S if k.endswith("_per_s")
                else MAX_FLOPS))
        gemm = bad(_num, d, "gemm_flops", path, strict=True, maximum=MAX_FLOPS)
        sms = bad(_int, d, "sm_count", path, minimum=1, maximum=100_000)
        fp8 = bad(_num, d, "peak_flops_fp8", path, strict=True, maximum=MAX_FLOPS)
        mx = bad(_bool, d, "mxfp8", path, False)
        non_tn = bad(_bool, d, "fp8_non_tn_gemm", path, False)
        bad.check()
        if mx and fp8 is None:
            raise ScenarioError(f"{path}.mxfp8", "needs peak_flops_fp8 (MX formats are FP8 GEMMs)")
        if non_tn and fp8 is None:
            raise ScenarioError(f"{path}.fp8_non_tn_gemm", "needs peak_flops_fp8 (it says how the "
                                "part's FP8 GEMMs take their operands)")
        if (gemm is None) != (sms is None):
            missing = "sm_count" if sms is None else "gemm_flops"
            raise ScenarioError(f"{path}.{missing}", "is required with "
                                + ("gemm_flops" if sms is None else "sm_count"))
        if gemm is not None and gemm > vals["peak_flops_bf16"]:
            raise ScenarioError(f"{path}.gemm_flops", "must not exceed peak_flops_bf16")
        vals.update(name=_name_field(d, "name", path, "custom accelerator") or "custom accelerator",
                    preset=_str(d, "preset", path), source=_str(d, "source", path),
                    gemm_flops=gemm, sm_count=sms, peak_flops_fp8=fp8, mxfp8=mx,
                    fp8_non_tn_gemm=non_tn)
        return _new(cls, vals)

    def to_dict(self) -> dict:
        out = _given(self)
        for flag in ("mxfp8", "fp8_non_tn_gemm"):
            if not getattr(self, flag):   # the default: keep older scenarios' JSON (and hashes)
                del out[flag]
        return out


@dataclass(frozen=True)
class TierSpec:
    """One memory/storage tier of a node (totals for the node)."""
    capacity_bytes: float
    read_bytes_per_s: float
    write_bytes_per_s: float
    latency_s: float = 0.0
    device: str | None = None
    devices: int | None = None
    # NVMe: the drives' rated endurance in full drive writes a day over their warranty
    # (None: not stated; the report then assumes 1, a read-intensive datacenter drive's)
    drive_writes_per_day: float | None = None

    @classmethod
    def from_dict(cls, d: dict, path: str) -> "TierSpec":
        """The spec, or every missing or bad field at once (see AcceleratorSpec.from_dict)."""
        return _first_try(cls._direct, cls._collecting, d, path)

    @classmethod
    def _direct(cls, d: dict, path: str) -> "TierSpec":
        device = d.get("device")
        for written, built_in in (_BUILT_IN_TIERS_BY_DEVICE.get(device, ()) if type(device) is str else ()):
            if _as_written(d, written):
                return built_in          # a node template's tier as the table has it
        _no_unknown(d, field_names(cls), path)
        return _new(cls, {k: (f(d, k, path, **kw) if not required or d.get(k) is not None
                              else _missing()) for k, f, required, kw in _TIER_FIELDS})

    @classmethod
    def _collecting(cls, d: dict, path: str) -> "TierSpec":
        bad = Collect()                  # every missing or bad field at once
        bad(_no_unknown, d, field_names(cls), path)
        for k in ("capacity_bytes", "read_bytes_per_s", "write_bytes_per_s"):
            if d.get(k) is None:
                bad.add(f"{path}.{k}")
        kw = dict(capacity_bytes=bad(_num, d, "capacity_bytes", path, maximum=MAX_TIER_BYTES),
                  read_bytes_per_s=bad(_num, d, "read_bytes_per_s", path, strict=True,
                                       maximum=MAX_BYTES_PER_S),
                  write_bytes_per_s=bad(_num, d, "write_bytes_per_s", path, strict=True,
                                        maximum=MAX_BYTES_PER_S),
                  latency_s=bad(_num, d, "latency_s", path, 0.0),
                  device=bad(_str, d, "device", path), devices=bad(_int, d, "devices", path, minimum=0),
                  drive_writes_per_day=bad(_num, d, "drive_writes_per_day", path, strict=True, maximum=1000))
        bad.check()
        return _new(cls, kw)

    def to_dict(self) -> dict:
        return _given(self)



# The direct parses' field checks: (key, check, ...) as the collecting parses make them.
_ACC_REQUIRED = tuple((k, MAX_BYTES if k.endswith("_bytes") else MAX_BYTES_PER_S
                       if k.endswith("_per_s") else MAX_FLOPS)
                      for k in ("hbm_capacity_bytes", "hbm_bytes_per_s", "peak_flops_bf16",
                                "peak_flops_fp32", "host_link_bytes_per_s", "scaleup_bytes_per_s"))
_TIER_FIELDS = (
    ("capacity_bytes", _num, True, dict(maximum=MAX_TIER_BYTES)),
    ("read_bytes_per_s", _num, True, dict(strict=True, maximum=MAX_BYTES_PER_S)),
    ("write_bytes_per_s", _num, True, dict(strict=True, maximum=MAX_BYTES_PER_S)),
    ("latency_s", _num, False, dict(default=0.0)),
    ("device", _str, False, {}),
    ("devices", _int, False, dict(minimum=0)),
    ("drive_writes_per_day", _num, False, dict(strict=True, maximum=1000)))

@dataclass(frozen=True)
class ClusterSpec:
    accelerator: AcceleratorSpec
    gpus_per_node: int
    num_nodes: int
    tiers: dict  # tier name -> TierSpec
    nic_bytes_per_s: float | None = None
    price_usd_per_node_hour: float | None = None
    price_source: str | None = None
    node: str | None = None
    node_name: str | None = None
    source: str | None = None
    template_gpus_per_node: int | None = None     # set when gpus_per_node overrides the template's
    host_share: str = "proportional"              # with fewer GPUs than the template: see _scale_host
    # The host's physical cores (all sockets) and the widest vector ISA DeepSpeed's
    # CPU-Adam builds for there (simulation.cpu_adam); without cores CPU-Adam is DDR only.
    cpu_cores: int | None = None
    cpu_isa: str = "avx512"
    cpu_source: str | None = None
    # PCIe topology, where the template says it: GPUs behind one PCIe switch, whose uplink
    # to the CPU (bytes/s each way) they share with the drives behind it (step.links_for).
    pcie_switch_gpus: int | None = None
    pcie_switch_uplink_bytes_per_s: float | None = None
    pcie_switch_source: str | None = None
    profile: dict | None = None                   # a cluster profile's figures (simulation.calibrate)
    # NVLink SHARP: the node's NVSwitches reduce (third-generation NVSwitch: HGX/DGX H100,
    # H200, B200), so NCCL's all-reduce inside a node runs NVLS (collectives.NVLS_ALLREDUCE_GAIN)
    nvls: bool = False
    # The network between nodes, a two-level fat tree (collectives.spine_factor): with
    # ``rail_optimized`` (NVIDIA's DGX SuperPOD reference architecture) NIC k of every node
    # goes to leaf k, otherwise all of a node's NICs to one leaf; a leaf has
    # ``leaf_switch_ports`` node-facing ports (None: one non-blocking fabric) and
    # ``spine_oversubscription`` times more bandwidth down than up to the spine.
    rail_optimized: bool = True
    leaf_switch_ports: int | None = None
    spine_oversubscription: float = 1.0
    # The NVLink (scale-up) domain, in GPUs, when it is wider than one host: GB200 NVL72
    # joins 18 hosts (compute trays) of 4 GPUs in one 72-GPU NVLink domain. The host
    # (``gpus_per_node``) keeps its DDR, NVMe, CPU cores, NICs, host link and price per
    # node-hour; collectives inside a domain run on NVLink (collectives.group_span).
    # None: the host is the domain (HGX/DGX). A multiple of gpus_per_node.
    nvlink_domain_gpus: int | None = None

    @property
    def num_gpus(self) -> int:
        return self.gpus_per_node * self.num_nodes

    @property
    def domain_gpus(self) -> int:
        """GPUs of one NVLink domain: ``nvlink_domain_gpus``, else a host's ``gpus_per_node``."""
        return self.nvlink_domain_gpus or self.gpus_per_node

    @classmethod
    def from_dict(cls, d: dict, path: str = "cluster") -> "ClusterSpec":
        """The spec, or every missing or bad field (and spec field) at once (see
        AcceleratorSpec.from_dict)."""
        return _first_try(cls._direct, cls._collecting, d, path)

    @classmethod
    def _direct(cls, d: dict, path: str) -> "ClusterSpec":
        _no_unknown(d, field_names(cls), path)
        acc = d.get("accelerator")
        if type(acc) is not dict:
            _missing()
        tiers = {}
        for name, spec in (_section(d, "tiers", path) or {}).items():
            if spec is None and name in presets.TIER_NAMES:
                continue
            if type(spec) is not dict or name not in presets.TIER_NAMES:
                _missing()
            tiers[name] = TierSpec._direct(spec, f"{path}.tiers.{name}")
        # an absent field is its check's result on an empty section (made once, below)
        kw = {k: f(d, k, path, *a, **o) if k in d or absent is _CALL else absent
              for k, f, a, o, absent in _CLUSTER_DIRECT}
        if _domain_error(kw["nvlink_domain_gpus"], kw["gpus_per_node"]):
            _missing()
        kw["accelerator"] = AcceleratorSpec._direct(acc, f"{path}.accelerator")
        kw["tiers"] = tiers
        p = d.get("profile")
        kw["profile"] = calibrate.profile_from_dict(p, f"{path}.profile") if p is not None else None
        return _new(cls, kw)

    @classmethod
    def _collecting(cls, d: dict, path: str) -> "ClusterSpec":
        bad = Collect()                  # every missing or bad field (and spec field) at once
        bad(_no_unknown, d, field_names(cls), path)
        acc = d.get("accelerator")
        if not isinstance(acc, dict):
            bad.add(f"{path}.accelerator",
                        "must name an accelerator preset "
                        f"({', '.join(presets.ACCELERATORS)}) or give its specs")
        tiers_in = bad(_section, d, "tiers", path) or {}
        tiers = {}
        for name, spec in tiers_in.items():
            if name not in presets.TIER_NAMES:
                bad.add(f"{path}.tiers.{name}",
                            f"unknown tier; known tiers: {', '.join(presets.TIER_NAMES)}")
            elif spec is None:
                continue
            elif not isinstance(spec, dict):
                bad.add(f"{path}.tiers.{name}", "must be an object")
            else:
                tiers[name] = bad(TierSpec.from_dict, spec, f"{path}.tiers.{name}")
        kw = dict(
            accelerator=(bad(AcceleratorSpec.from_dict, acc, f"{path}.accelerator")
                         if isinstance(acc, dict) else None),
            gpus_per_node=bad(_int, d, "gpus_per_node", path, required=True, maximum=1024),
            num_nodes=bad(_int, d, "num_nodes", path, 1, maximum=1_000_000),
            nic_bytes_per_s=bad(_num, d, "nic_bytes_per_s", path, strict=True,
                                maximum=MAX_BYTES_PER_S),
            price_usd_per_node_hour=bad(_num, d, "price_usd_per_node_hour", path),
            price_source=bad(_str, d, "price_source", path),
            node=bad(_str, d, "node", path), node_name=bad(_str, d, "node_name", path),
            source=bad(_str, d, "source", path),
            template_gpus_per_node=bad(_int, d, "template_gpus_per_node", path, minimum=1),
            host_share=bad(_choice, d, "host_share", path, HOST_SHARES, "proportional"),
            cpu_cores=bad(_int, d, "cpu_cores", path, minimum=1, maximum=1_000_000),
            cpu_isa=bad(_choice, d, "cpu_isa", path, CPU_ISAS, "avx512"),
            cpu_source=bad(_str, d, "cpu_source", path),
            pcie_switch_gpus=bad(_int, d, "pcie_switch_gpus", path, minimum=1, maximum=1024),
            pcie_switch_uplink_bytes_per_s=bad(_num, d, "pcie_switch_uplink_bytes_per_s", path,
                                               strict=True),
            pcie_switch_source=bad(_str, d, "pcie_switch_source", path),
            nvls=bad(_bool, d, "nvls", path, False),
            rail_optimized=bad(_bool, d, "rail_optimized", path, True),
            leaf_switch_ports=bad(_int, d, "leaf_switch_ports", path, minimum=1, maximum=100_000),
            spine_oversubscription=bad(_num, d, "spine_oversubscription", path, 1.0, minimum=1.0,
                                       maximum=64.0),
            nvlink_domain_gpus=bad(_int, d, "nvlink_domain_gpus", path, minimum=1,
                                   maximum=MAX_DOMAIN_GPUS),
            profile=(bad(calibrate.profile_from_dict, d["profile"], f"{path}.profile")
                     if d.get("profile") is not None else None))
        msg = _domain_error(kw["nvlink_domain_gpus"], kw["gpus_per_node"])
        if msg:
            bad.add(f"{path}.nvlink_domain_gpus", msg)
        bad.check()
        return _new(cls, dict(tiers=tiers, **kw))

    def to_dict(self) -> dict:
        t = self.__dict__.get("_json")    # a built-in node's spec (_template_cluster)
        if t is not None:
            out = _copy(*t)
            out["num_nodes"] = self.num_nodes
            return out
        return _drop_none(dict(
            node=self.node, node_name=self.node_name, num_nodes=self.num_nodes,
            gpus_per_node=self.gpus_per_node, accelerator=self.accelerator.to_dict(),
            nic_bytes_per_s=self.nic_bytes_per_s,
            price_usd_per_node_hour=self.price_usd_per_node_hour, price_source=self.price_source,
            tiers={k: v.to_dict() for k, v in self.tiers.items()}, source=self.source,
            template_gpus_per_node=self.template_gpus_per_node, host_share=self.host_share,
            cpu_cores=self.cpu_cores, cpu_isa=self.cpu_isa, cpu_source=self.cpu_source,
            pcie_switch_gpus=self.pcie_switch_gpus,
            pcie_switch_uplink_bytes_per_s=self.pcie_switch_uplink_bytes_per_s,
            pcie_switch_source=self.pcie_switch_source,
            nvls=self.nvls or None,        # absent when off: older scenarios' JSON (and hashes) stay
            rail_optimized=None if self.rail_optimized else False,
            leaf_switch_ports=self.leaf_switch_ports,
            spine_oversubscription=(self.spine_oversubscription
                                    if self.spine_oversubscription != 1.0 else None),
            # absent at its default (the host is the domain): older JSON and hashes stay
            nvlink_domain_gpus=(self.nvlink_domain_gpus
                                if self.nvlink_domain_gpus not in (None, self.gpus_per_node) else None),
            profile=dict(self.profile) if self.profile is not None else None))


@dataclass(frozen=True)
class TrainingSpec:
    """Batch, precision and parallel degrees.

    ``compute_model``: ``work`` (the default): each layer's compute time comes from its
    work (:mod:`simulation.compute`: GEMM shapes, attention kernel, memory-bound kernels
    of ``software_stack``); ``constant``: every FLOP runs at peak FLOP/s x
    ``compute_efficiency`` (0.55 when unset: what Korthikanti et al. 2022 Table 4 implies
    for a 22B layer on A100, 7.7 ms forward, 11.9 ms backward, less the tensor-parallel
    all-reduces). An explicit ``compute_efficiency`` selects the constant model (so do
    fp32 and accelerators without figures, at 0.55).
    ``software_stack``: whose kernels run the element-wise work: ``megatron`` (fused),
    ``pytorch_eager``, ``torch_compile``; by default ``megatron`` for the Megatron framework,
    ``pytorch_eager`` otherwise.
    ``loss_kernel``: how the output layer's cross-entropy is computed, which decides how
    many tokens x vocab copies are live (``torch``: plain PyTorch / Hugging Face;
    ``megatron_vocab_parallel``; ``fused_linear_cross_entropy``: Liger / chunked), see
    :mod:`simulation.loss`.
    ``dtypes``: the dtype of each state (parameters, gradients, master weights, optimizer
    states; :class:`simulation.states.StateDtypes`): pure bf16 is ``{"master_weights":
    "none", "optimizer_states": "bf16"}``; absent values follow ``precision``/``optimizer``.
    ``network_efficiency``: fraction of a link's bandwidth NCCL collectives reach (8-GPU
    H100 ring all-reduce: 365.6 of 450 GB/s bus bandwidth = 0.81).
    """
    micro_batch_size: int = 1
    global_batch_size: int | None = None
    seq_len: int = 4096          # at most MAX_SEQ_LEN
    precision: str = "bf16"
    optimizer: str = "adam"
    recompute: str = "none"
    tensor_parallel: int = 1
    pipeline_parallel: int = 1
    sequence_parallel: bool = False
    flash_attention: bool = False
    loss_kernel: str = "torch"
    dtypes: StateDtypes | None = None
    # Whose kernels save the activations (simulation/activations.py): "huggingface"
    # (transformers' modules: RMSNorm fp32 copies, eager fp32 softmax, unfused SwiGLU)
    # or "megatron" (Korthikanti et al. 2022, fused kernels; the default with tensor,
    # pipeline or sequence parallelism); fused_mlp_activation defaults to the
    # framework's own kernel (Megatron fused, transformers unfused).
    framework: str = "huggingface"
    fused_mlp_activation: bool | None = None
    # A fused RMSNorm kernel on the huggingface stack (Liger's LigerRMSNorm, which NeMo
    # AutoModel applies to transformers' models with use_liger_kernel, its default without
    # TP or CP): the 16-bit input and an fp32 rstd per token instead of transformers'
    # fp32 copy (simulation/activations.py _norm_bytes). Megatron's norms are fused already.
    fused_norm: bool = False
    interleave_stages: int | None = None
    compute_efficiency: float | None = None    # set: the constant model
    compute_model: str = "work"
    software_stack: str | None = None
    network_efficiency: float = 0.8
    # Data-parallel gradient all-reduce during the last micro-batch's backward (bucketed,
    # torch DDP) or after it: Megatron-LM's own DDP reduces once the backward is done
    # unless ``--overlap-grad-reduce`` is given (default False: megatron/training/
    # arguments.py, core DistributedDataParallelConfig.overlap_grad_reduce; in 2021
    # megatron/training.py train_step called allreduce_gradients() after
    # forward_backward_func). Default: False for the Megatron framework, True otherwise.
    overlap_grad_reduce: bool = True
    # Weight-gradient GEMMs that add into the accumulation buffer themselves (Megatron-LM
    # --gradient-accumulation-fusion, on by default since 2022-02: the fused wgrad kernels
    # of fused_weight_gradient_mlp_cuda). Without it every micro-batch after the first
    # adds its new gradients to the buffer in a pass of its own (autograd AccumulateGrad,
    # or Megatron's main_grad.add_). Default: True for the Megatron framework.
    gradient_accumulation_fusion: bool = False
    # Megatron's distributed optimizer with --overlap-param-gather (default off: megatron/
    # training/arguments.py, store_true): the updated parameters' all-gather is not run
    # after the optimizer step but bucket by bucket in the next step's forward, each
    # bucket's gather waited for by its module's forward pre-hook (megatron/core/
    # distributed/distributed_data_parallel.py _make_forward_pre_hook; param_and_grad_buffer
    # start_param_sync / finish_param_sync, core_r0.8.0). Needs megatron_dist_opt.
    overlap_param_gather: bool = False
    # Megatron-Core --tp-comm-overlap (default off: megatron/training/arguments.py,
    # store_true; needs sequence parallelism and Transformer Engine): each tensor-parallel
    # all-gather / reduce-scatter runs chunk by chunk beside the GEMM that consumes or
    # produces it (TE userbuffers, transformer_engine/pytorch/module/base.py
    # initialize_ub: ring-exchange and pipelined overlap of the QKV, projection, FC1 and
    # FC2 GEMMs, bulk overlap in the backward) instead of between the GEMMs on the
    # critical path (stepgraph.build).
    tp_comm_overlap: bool = False
    # GQA's K/V heads materialised to the query heads before the attention kernel
    # (``step.repeat_kv_s``): torchtitan's ``repeat_kv`` (torchtitan/models/llama/model.py at
    # 9dec370: ``expand`` + ``reshape`` of xk and xv, then ``F.scaled_dot_product_attention``
    # without ``enable_gqa``) and Hugging Face's eager / SDPA attention
    # (modeling_llama.py ``repeat_kv``). Off: the kernel reads the K/V heads as they are
    # (FlashAttention, SDPA ``enable_gqa=True``, Transformer Engine).
    repeat_kv: bool = False
    # Context parallelism (CP; Megatron-LM --context-parallel-size, torchtitan
    # context_parallel_degree): each sequence is split over ``context_parallel`` ranks, each
    # holding seq_len / cp of its tokens (in 2 cp chunks, rank r the r-th and the
    # (2cp - 1 - r)-th, which balances causal attention), and attention exchanges the keys
    # and values around the CP ring (Transformer Engine AttnFuncWithCPAndKVP2P; see
    # simulation.step.context_parallel_exchange). Ranks are laid out TP, CP, DP, PP
    # (Megatron RankGenerator "tp-cp-ep-dp-pp"); gradients are reduced and optimizer
    # states sharded over the data-parallel x CP ranks. Needs fused/flash attention
    # (Megatron core/transformer/dot_product_attention.py: "Context parallelism is only
    # supported by TEDotProductAttention!") and seq_len a multiple of 2 x cp
    # (megatron/training/arguments.py).
    context_parallel: int = 1
    # How the CP ranks exchange keys and values (Megatron-LM --cp-comm-type): "p2p", the
    # ring, each step's transfer beside one attention block (the default); "all_gather",
    # K/V all-gathered before attention and dK/dV reduce-scattered after it, exposed
    # (Transformer Engine AttnFuncWithCPAndKVAllGather; Llama 3, Dubey et al. 2024 Sec. 3.3.2).
    context_parallel_comm: str = "p2p"
    # LoRA fine-tuning (simulation/lora.py): a frozen base, trainable adapters. None: every
    # weight is trained.
    lora: LoraSpec | None = None
    # FP8 GEMMs (simulation/fp8.py): Transformer Engine under Megatron, torchao float8
    # under transformers' modules. None: every GEMM in ``precision``.
    fp8: Fp8Spec | None = None
    # Expert parallelism of a mixture of experts (simulation/experts.py), named as
    # Megatron-Core names them (megatron/training/arguments.py, core 0.20):
    # ``expert_parallel`` --expert-model-parallel-size, the ranks one MoE layer's experts
    # are spread over (num_experts / EP each), carved out of the data-parallel ranks;
    # ``expert_tensor_parallel`` --expert-tensor-parallel-size (None: tensor_parallel, as
    # arguments.py sets it); ``moe_capacity_factor`` --moe-expert-capacity-factor (None:
    # dropless; else each expert takes at most ceil(tokens x top_k / experts x factor)
    # tokens and drops the rest, moe_utils.get_capacity); ``moe_pad_to_capacity``
    # --moe-pad-expert-input-to-capacity (every expert padded to its capacity: needs a
    # capacity factor); ``moe_routing_imbalance``: tokens the busiest EP rank receives
    # over the mean (1.0: balanced routing, what an auxiliary load-balancing loss aims
    # at; the busiest rank paces every all-to-all and its expert GEMMs the layer).
    # Megatron's --overlap-moe-expert-parallel-comm is ``moe_a2a_overlap``: the dispatch
    # and combine run beside another micro-batch's compute (hidden up to it).
    # ``moe_router_group_topk`` --moe-router-group-topk with --moe-router-num-groups set to
    # the nodes the EP group spans: Megatron-Core's "node-limited routing" (transformer_config.py
    # moe_router_num_groups, moe_utils.group_limited_topk; DeepSeek-V3 report Sec. 2.1.2, M = 4):
    # each token goes to experts on at most this many nodes, crosses the network once per
    # node and is forwarded to the node's other GPUs over NVLink (None: not limited).
    expert_parallel: int = 1
    expert_tensor_parallel: int | None = None
    moe_capacity_factor: float | None = None
    moe_pad_to_capacity: bool = False
    moe_routing_imbalance: float = 1.0
    moe_a2a_overlap: bool = False
    moe_router_group_topk: int | None = None

    @property
    def expert_tp(self) -> int:
        """Expert tensor-parallel degree: ``expert_tensor_parallel``, else tensor_parallel."""
        return self.tensor_parallel if self.expert_tensor_parallel is None else self.expert_tensor_parallel
    # Layer-selective full recomputation (``recompute: full`` only; at most one of the two;
    # None: every layer checkpointed). ``recompute_layers`` = k: the first k layers of each
    # pipeline stage are checkpointed, the rest keep their activations (Megatron-LM
    # ``--recompute-method block --recompute-num-layers k``: megatron/core/transformer/
    # transformer_block.py _checkpointed_forward, core_r0.11.0; megatron/core/recompute.py
    # at d98e8a6). ``recompute_every`` = k: every k-th layer of each stage, counted from 1
    # (torchtitan ``ac.mode = "selective"``, ``selective_ac_option = "k"``: torchtitan/models/
    # llama3/infra/parallelize.py _apply_ac_to_transformer_block at 55e42c0,
    # ``ptd_checkpoint_wrapper._count % ac_freq == 0``). See :func:`checkpointed_layers`.
    recompute_layers: int | None = None
    recompute_every: int | None = None
    # Megatron-Core selective recomputation's modules (``recompute: selective`` and
    # framework megatron only; None: Megatron's default, ``["core_attn"]``):
    # ``--recompute-granularity selective --recompute-modules ...`` of
    # simulation.activations.RECOMPUTE_MODULES (core_attn, layernorm, mla_up_proj,
    # moe_act), as megatron/core/transformer/transformer_config.py (core 0.20, d98e8a6)
    # checks them. ``activation_func_fp8_input_store``: Megatron's TransformerConfig field
    # of that name, fused SwiGLU keeps its input in FP8 (fused_bias_swiglu.py; SwiGLU only).
    recompute_modules: tuple | None = None
    activation_func_fp8_input_store: bool = False
    # Preference tuning (DPO): each example a chosen and a rejected sequence, a frozen
    # reference model (:class:`PreferenceSpec`). None: plain next-token training.
    preference: "PreferenceSpec | None" = None

    @property
    def sequences_per_micro_batch(self) -> int:
        """Sequences one micro-batch runs through the policy: ``micro_batch_size``, twice
        that under preference tuning (TRL's DPO collator concatenates the chosen and the
        rejected completions along the batch: trl/trainer/dpo_trainer.py
        DataCollatorForPreference, ``torch.cat(pad([chosen_ids, rejected_ids]))``, v1.9.0;
        ``concatenated_forward`` up to v0.24)."""
        return self.micro_batch_size * (2 if self.preference is not None else 1)
    # Uneven pipeline stages (simulation/pipeline.py stage_layers): an explicit count of
    # layers per stage (Megatron --pipeline-model-parallel-layout; with interleave_stages
    # v also one per virtual stage, p v counts in the layout's order), or the first and/or
    # last stage's count with the rest split evenly (Megatron
    # --decoder-first-pipeline-num-layers / --decoder-last-pipeline-num-layers). None:
    # num_layers / pipeline_parallel on every stage.
    pipeline_layers: tuple | None = None
    first_pipeline_layers: int | None = None
    last_pipeline_layers: int | None = None
    # The pipeline schedule: "1f1b" (with interleave_stages > 1 Megatron's interleaved
    # 1F1B) or "dualpipe" (DeepSeek-V3 Sec. 3.2.1: two stages' parameters per rank, a
    # bidirectional schedule; simulation/pipeline.py).
    pipeline_schedule: str = "1f1b"

    @classmethod
    def from_dict(cls, d: dict, path: str = "training") -> "TrainingSpec":
        _no_unknown(d, field_names(cls), path)
        # ``x if "k" in d else v``: a field left out is what its check gives on an empty
        # section, without the call (tests/engine/test_stage_parts_fast.py holds v to it)
        return _new(cls, dict(
            micro_batch_size=_int(d, "micro_batch_size", path, 1, maximum=10_000_000),
            global_batch_size=(_int(d, "global_batch_size", path, maximum=1_000_000_000)
                               if "global_batch_size" in d else None),
            seq_len=_int(d, "seq_len", path, 4096, maximum=MAX_SEQ_LEN),
            precision=(_choice(d, "precision", path, PRECISIONS, "bf16")
                       if "precision" in d else 'bf16'),
            optimizer=(_choice(d, "optimizer", path, OPTIMIZERS, "adam")
                       if "optimizer" in d else 'adam'),
            recompute=(_choice(d, "recompute", path, RECOMPUTE, "none")
                       if "recompute" in d else 'none'),
            tensor_parallel=(_int(d, "tensor_parallel", path, 1, maximum=100_000)
                             if "tensor_parallel" in d else 1),
            pipeline_parallel=(_int(d, "pipeline_parallel", path, 1, maximum=100_000)
                               if "pipeline_parallel" in d else 1),
            sequence_parallel=(_bool(d, "sequence_parallel", path, False)
                               if "sequence_parallel" in d else False),
            flash_attention=(_bool(d, "flash_attention", path, False)
                             if "flash_attention" in d else False),
            loss_kernel=(_choice(d, "loss_kernel", path, LOSS_KERNELS, "torch")
                         if "loss_kernel" in d else 'torch'),
            dtypes=_state_dtypes(_section(d, "dtypes", path), f"{path}.dtypes"),
            framework=(framework := _framework(d, path)),
            fused_mlp_activation=_bool(d, "fused_mlp_activation", path, framework == "megatron"),
            fused_norm=_bool(d, "fused_norm", path, False),
            interleave_stages=(_int(d, "interleave_stages", path)
                               if "interleave_stages" in d else None),
            compute_efficiency=_num(d, "compute_efficiency", path,
                                    0.55 if d.get("compute_model") == "constant" else None,
                                    strict=True, maximum=1.0),
            compute_model=_choice(d, "compute_model", path, COMPUTE_MODELS,
                                  "constant" if d.get("compute_efficiency") is not None else "work"),
            software_stack=(_choice(d, "software_stack", path, SOFTWARE_STACKS + (None,), None)
                            if "software_stack" in d else None),
            network_efficiency=(_num(d, "network_efficiency", path, 0.8, strict=True, maximum=1.0)
                                if "network_efficiency" in d else 0.8),
            overlap_grad_reduce=_bool(d, "overlap_grad_reduce", path, framework != "megatron"),
            gradient_accumulation_fusion=_bool(d, "gradient_accumulation_fusion", path,
                                               framework == "megatron"),
            overlap_param_gather=(_bool(d, "overlap_param_gather", path, False)
                                  if "overlap_param_gather" in d else False),
            tp_comm_overlap=(_bool(d, "tp_comm_overlap", path, False)
                             if "tp_comm_overlap" in d else False),
            repeat_kv=_bool(d, "repeat_kv", path, False),
            context_parallel=(_int(d, "context_parallel", path, 1, maximum=100_000)
                              if "context_parallel" in d else 1),
            context_parallel_comm=(_choice(d, "context_parallel_comm", path, CP_COMM_TYPES, "p2p")
                                   if "context_parallel_comm" in d else 'p2p'),
            lora=_lora(d.get("lora"), f"{path}.lora"),
            fp8=_fp8(d.get("fp8"), f"{path}.fp8", framework),
            expert_parallel=(_int(d, "expert_parallel", path, 1, maximum=100_000)
                             if "expert_parallel" in d else 1),
            expert_tensor_parallel=(_int(d, "expert_tensor_parallel", path, maximum=100_000)
                                    if "expert_tensor_parallel" in d else None),
            moe_capacity_factor=(_num(d, "moe_capacity_factor", path, None, strict=True,
                                     maximum=1000.0) if "moe_capacity_factor" in d else None),
            moe_pad_to_capacity=(_bool(d, "moe_pad_to_capacity", path, False)
                                 if "moe_pad_to_capacity" in d else False),
            moe_routing_imbalance=(_num(d, "moe_routing_imbalance", path, 1.0, minimum=1.0,
                                       maximum=100_000.0) if "moe_routing_imbalance" in d else 1.0),
            moe_a2a_overlap=(_bool(d, "moe_a2a_overlap", path, False)
                             if "moe_a2a_overlap" in d else False),
            moe_router_group_topk=(_int(d, "moe_router_group_topk", path, maximum=100_000)
                                   if "moe_router_group_topk" in d else None),
            recompute_layers=(_int(d, "recompute_layers", path, maximum=100_000)
                              if "recompute_layers" in d else None),
            recompute_every=(_int(d, "recompute_every", path, maximum=100_000)
                             if "recompute_every" in d else None),
            recompute_modules=_recompute_modules(d, path),
            activation_func_fp8_input_store=_bool(d, "activation_func_fp8_input_store", path, False),
            preference=_preference(d.get("preference"), f"{path}.preference"),
            pipeline_layers=(_int_list(d, "pipeline_layers", path, minimum=0, maximum=10_000)
                             if "pipeline_layers" in d else None),
            first_pipeline_layers=(_int(d, "first_pipeline_layers", path, maximum=10_000)
                                   if "first_pipeline_layers" in d else None),
            last_pipeline_layers=(_int(d, "last_pipeline_layers", path, maximum=10_000)
                                  if "last_pipeline_layers" in d else None),
            pipeline_schedule=(_choice(d, "pipeline_schedule", path, PIPELINE_SCHEDULES, "1f1b")
                               if "pipeline_schedule" in d else '1f1b')))

    def to_dict(self) -> dict:
        out = _given(self)
        if self.preference is not None:
            out["preference"] = _given(self.preference)
        if self.pipeline_layers is not None:
            out["pipeline_layers"] = list(self.pipeline_layers)
        if self.recompute_modules is not None:
            out["recompute_modules"] = list(self.recompute_modules)
        if self.dtypes is not None:
            out["dtypes"] = _given(self.dtypes)
        if self.fp8 is not None:
            out["fp8"] = self.fp8.to_dict()
        if self.lora is not None:
            lo = {**_given(self.lora), "targets": list(self.lora.targets)}
            for name, default in (("double_quant", False), ("quant_block_size", 64),
                                  ("implementation", "peft"), ("dropout_position", None)):
                # the defaults: older LoRA JSON (and hashes) unchanged
                if name in lo and lo[name] == default:
                    del lo[name]
            out["lora"] = lo
        for name in _TRAINING_OMITTED_AT_DEFAULT:
            if out[name] == _TRAINING_DEFAULTS[name]:   # keep older scenarios' JSON (and hashes)
                del out[name]
        return out

    @property
    def local_seq_len(self) -> int:
        """Tokens of each sequence one rank holds: ``seq_len / context_parallel``."""
        return self.seq_len // self.context_parallel


# The training fields added after scenarios were first stored: to_dict leaves each out at
# its dataclass default, so older scenarios' JSON (and their hashes) stay as they were. A
# new such field is one name here (its default is the dataclass's).
_TRAINING_OMITTED_AT_DEFAULT = (
    "pipeline_schedule", "overlap_param_gather", "tp_comm_overlap", "repeat_kv", "moe_pad_to_capacity",
    "moe_a2a_overlap", "activation_func_fp8_input_store", "context_parallel",
    "context_parallel_comm", "expert_parallel", "moe_routing_imbalance", "fused_norm",
)
_TRAINING_DEFAULTS = {f.name: f.default for f in _dc.fields(TrainingSpec)}


def _recompute_modules(d: dict, path: str):
    """``training.recompute_modules``: a non-empty list of distinct names of
    :data:`RECOMPUTE_MODULES` (errors name the element), or None when absent."""
    v = d.get("recompute_modules")
    if v is None:
        return None
    where = f"{path}.recompute_modules"
    if not isinstance(v, (list, tuple)) or not v:
        raise ScenarioError(where, "must be a non-empty list of module names "
                                   f"({', '.join(RECOMPUTE_MODULES)})")
    out = []
    for i, x in enumerate(v):
        if x not in RECOMPUTE_MODULES:
            raise ScenarioError(f"{where}[{i}]", f"must be one of {', '.join(RECOMPUTE_MODULES)}, "
                                                 f"got {_show(x)}")
        if x in out:
            raise ScenarioError(f"{where}[{i}]", f"{x} is listed twice")
        out.append(x)
    return tuple(out)


def _int_list(d: dict, key: str, path: str, minimum: int = 0, maximum: int | None = None):
    """A list of whole numbers (``training.pipeline_layers``), or None when absent; errors
    name the element (``training.pipeline_layers[3]``)."""
    v = d.get(key)
    if v is None:
        return None
    if not isinstance(v, (list, tuple)) or not v:
        raise ScenarioError(f"{path}.{key}", "must be a non-empty list of whole numbers")
    return tuple(_int_item(x, f"{path}.{key}[{i}]", minimum, maximum) for i, x in enumerate(v))


def _int_item(x, where: str, minimum: int, maximum: int | None) -> int:
    if isinstance(x, bool) or not isinstance(x, int):
        raise ScenarioError(where, f"must be a whole number, got {_show(x)}")
    if x < minimum:
        raise ScenarioError(where, f"must be at least {minimum}, got {x}")
    if maximum is not None and x > maximum:
        raise ScenarioError(where, f"must be at most {maximum:,}, got {x}")
    return x


_PARAM_DTYPES = ("bf16", "fp16", "fp32")
_GRAD_DTYPES = ("bf16", "fp16", "fp32")
_OPT_DTYPES = ("fp32", "bf16", "int8")


def _state_dtypes(d: dict, path: str) -> StateDtypes | None:
    """``training.dtypes``: the dtype of each state (see :class:`simulation.states.StateDtypes`)."""
    if not d:
        return None
    _no_unknown(d, set(STATE_DTYPES) | {"kahan_summation"}, path)
    pick = lambda k, choices: _choice(d, k, path, (None, *choices), None)  # noqa: E731
    out = StateDtypes(params=pick("params", _PARAM_DTYPES), grads=pick("grads", _GRAD_DTYPES),
                      master_weights=pick("master_weights", ("fp32", "none")),
                      optimizer_states=pick("optimizer_states", _OPT_DTYPES),
                      kahan_summation=_bool(d, "kahan_summation", path, False))
    if out.kahan_summation and out.master_weights != "none":
        raise ScenarioError(f"{path}.kahan_summation",
                            "applies to pure 16-bit training: set master_weights to none")
    return out


def _fp8(d, path: str, framework: str) -> Fp8Spec | None:
    """``training.fp8``: ``{"recipe": "delayed", "format": "hybrid", "amax_history_len":
    1024, "amax_compute_algo": "max", "param": false}`` (see :class:`simulation.fp8.Fp8Spec`);
    null or absent: no FP8. The recipes are the framework's: Transformer Engine's under
    Megatron, torchao's under transformers' modules."""
    if d is None:
        return None
    if not isinstance(d, dict):
        raise ScenarioError(path, f"must be an object or null, got {type(d).__name__}")
    _no_unknown(d, field_names(Fp8Spec), path)
    torchao = framework != "megatron"
    allowed = _FP8_TORCHAO_RECIPES if torchao else _FP8_TE_RECIPES
    recipe = _choice(d, "recipe", path, _FP8_RECIPES, "tensorwise" if torchao else "delayed")
    if recipe not in allowed:
        raise ScenarioError(f"{path}.recipe",
                            f"{recipe} is not a recipe of "
                            + ("torchao float8 (framework huggingface)" if torchao
                               else "Transformer Engine (framework megatron)")
                            + f"; choose one of {', '.join(allowed)}")
    fmt = _choice(d, "format", path, _FP8_FORMATS, _fp8_default_format(recipe) if not torchao else "e4m3")
    if torchao and fmt != "e4m3":
        raise ScenarioError(f"{path}.format", "torchao float8 casts to E4M3 forward and backward: "
                                              "use e4m3")
    hist = _int(d, "amax_history_len", path, None, minimum=1, maximum=1_000_000)
    algo = _choice(d, "amax_compute_algo", path, (None, *_FP8_AMAX_ALGOS), None)
    for key, val in (("amax_history_len", hist), ("amax_compute_algo", algo)):
        if val is not None and recipe != "delayed":
            raise ScenarioError(f"{path}.{key}", f"applies to the delayed recipe only, not {recipe}")
    param = _bool(d, "param", path, False)
    if param and torchao and recipe != "tensorwise":
        raise ScenarioError(f"{path}.param", "torchao's float8 all-gather "
                                             "(enable_fsdp_float8_all_gather) needs the tensorwise recipe")
    return Fp8Spec(recipe=recipe, format=fmt, amax_history_len=hist, amax_compute_algo=algo,
                   param=param)


def _check_fp8(sc) -> None:
    """FP8 needs FP8 tensor cores (``cluster.accelerator.peak_flops_fp8``), MX recipes an
    MX-capable part, 16-bit activations around the FP8 GEMMs, and a transformer."""
    tr, acc = sc.training, sc.cluster.accelerator
    if sc.model is None:
        raise ScenarioError("training.fp8", "applies to transformer models")
    if acc.peak_flops_fp8 is None:
        raise ScenarioError("training.fp8", f"{acc.name} has no FP8 tensor cores "
                                            "(cluster.accelerator.peak_flops_fp8 is not set)")
    if tr.fp8.recipe == "mxfp8" and not acc.mxfp8:
        raise ScenarioError("training.fp8.recipe", f"mxfp8 needs MX-format tensor cores "
                                                   f"(Blackwell); {acc.name} has none")
    if tr.precision == "fp32":
        raise ScenarioError("training.fp8", "FP8 GEMMs run inside 16-bit mixed precision: "
                                            "set training.precision to bf16 or fp16")
    if tr.lora is not None:
        raise ScenarioError("training.fp8", "FP8 with LoRA is not modelled")
    if tr.fp8.param and tr.framework != "megatron" and not sc.strategy.is_fsdp:
        raise ScenarioError("training.fp8.param", "torchao's float8 all-gather is FSDP2's: "
                                                  f"needs an fsdp strategy, not {sc.strategy.kind}")


def _lora(d, path: str) -> LoraSpec | None:
    """``training.lora``: ``{"rank": 16, "alpha": 32, "dropout": 0.05, "targets": ["q",
    "k", "v", "o"]}`` (see :class:`simulation.lora.LoraSpec`); null or absent: no LoRA.
    QLoRA: ``"base_dtype": "nf4"`` (or ``fp4``, ``int8``; ``bf16``/``fp16``: a 16-bit
    base), ``"double_quant": true`` and ``"quant_block_size": 64`` (4-bit only). Whose
    LoRA runs: ``"implementation": "peft"`` (default) or ``"automodel"`` (NeMo AutoModel's
    ``LinearLoRA``), with ``"dropout_position": "pre" | "post"`` (AutoModel's setting;
    PEFT's dropout is always on the input)."""
    if d is None:
        return None
    if not isinstance(d, dict):
        raise ScenarioError(path, f"must be an object or null, got {type(d).__name__}")
    _no_unknown(d, field_names(LoraSpec), path)
    targets = d.get("targets", list(LoraSpec.targets))
    if not isinstance(targets, list) or not targets:
        raise ScenarioError(f"{path}.targets",
                            f"must be a non-empty list of {', '.join(LORA_TARGETS)}")
    for i, t in enumerate(targets):
        if t not in LORA_TARGETS:
            raise ScenarioError(f"{path}.targets[{i}]",
                                f"must be one of {', '.join(LORA_TARGETS)}; got {_show(t)}")
    if len(set(targets)) != len(targets):
        raise ScenarioError(f"{path}.targets", "names a module twice")
    base_dtype = _choice(d, "base_dtype", path, (None, *BASE_DTYPES), None)
    adapter_dtype = _choice(d, "adapter_dtype", path, (None, "fp32", "bf16", "fp16"), None)
    four_bit = base_dtype in ("nf4", "fp4")
    for name, default in (("double_quant", False), ("quant_block_size", 64)):
        if d.get(name) not in (None, default) and not four_bit:      # the default is harmless
            raise ScenarioError(f"{path}.{name}", "applies to a 4-bit base: set base_dtype to "
                                                   "nf4 or fp4")
    implementation = _choice(d, "implementation", path, IMPLEMENTATIONS, "peft")
    position = _choice(d, "dropout_position", path, (None, *DROPOUT_POSITIONS), None)
    if position == "post" and implementation == "peft":
        raise ScenarioError(f"{path}.dropout_position", "PEFT's lora_dropout is on the adapter's "
                                                        "input (pre); post is AutoModel's: set "
                                                        "implementation to automodel",
                            depends_on=(f"{path}.implementation",))
    if implementation == "automodel" and base_dtype in QUANTISED_DTYPES:
        raise ScenarioError(f"{path}.base_dtype", "a quantised base is modelled for PEFT's "
                                                  "QLoRA only: set implementation to peft",
                            depends_on=(f"{path}.implementation",))
    block = _int(d, "quant_block_size", path, 64)
    if block not in QUANT_BLOCK_SIZES:
        raise ScenarioError(f"{path}.quant_block_size",
                            f"must be one of {', '.join(map(str, QUANT_BLOCK_SIZES))} "
                            f"(bitsandbytes quantize_4bit); got {block}")
    return LoraSpec(rank=_int(d, "rank", path, 8, maximum=65_536),
                    alpha=_num(d, "alpha", path, None, strict=True, maximum=1e6),
                    dropout=_num(d, "dropout", path, 0.0, maximum=0.99),
                    targets=tuple(t for t in LORA_TARGETS if t in targets),
                    base_dtype=base_dtype,
                    double_quant=_bool(d, "double_quant", path, False),
                    quant_block_size=block, adapter_dtype=adapter_dtype,
                    implementation=implementation, dropout_position=position)


PREFERENCE_METHODS = ("dpo",)
PREFERENCE_REFERENCES = ("separate", "adapters_off", "precomputed")


@dataclass(frozen=True)
class PreferenceSpec:
    """``training.preference``: preference tuning as TRL's ``DPOTrainer`` runs it (v1.9.0).

    ``method``: ``dpo`` (Rafailov et al. 2023). ``reference``: where the frozen reference
    model's log-probabilities come from:

    * ``separate``: a second copy of the model (``DPOTrainer(ref_model=...)`` or the copy
      it loads itself), in the compute dtype, sharded like the policy under ZeRO-3 / FSDP
      and whole on every rank otherwise (trl/models/utils.py ``prepare_deepspeed``: "If
      ZeRO-3 is used, we shard both the active and reference model", else stage 0;
      ``prepare_fsdp``: the policy's FSDP plugin settings), run forward only;
    * ``adapters_off``: the policy's frozen base with the LoRA adapters switched off
      (``ref_model=None`` with a PEFT model: ``use_adapter(model, None)``); needs
      ``training.lora``;
    * ``precomputed``: ``precompute_ref_log_probs=True``: one forward pass over the data
      set before training; nothing in memory or step time during training.
    """
    method: str = "dpo"
    reference: str = "separate"


def _preference(d, path: str) -> PreferenceSpec | None:
    """``training.preference``: ``{"method": "dpo", "reference": "separate" |
    "adapters_off" | "precomputed"}``; null or absent: no preference tuning."""
    if d is None:
        return None
    if not isinstance(d, dict):
        raise ScenarioError(path, f"must be an object or null, got {type(d).__name__}")
    _no_unknown(d, field_names(PreferenceSpec), path)
    return PreferenceSpec(method=_choice(d, "method", path, PREFERENCE_METHODS, "dpo"),
                          reference=_choice(d, "reference", path, PREFERENCE_REFERENCES, "separate"))


def checkpointed_layers(tr: "TrainingSpec", layers: float) -> float:
    """How many of a pipeline stage's ``layers`` are checkpointed (their input kept, their
    forward re-run in backward): all of them under ``recompute: full`` unless
    ``recompute_layers`` (Megatron ``block``: min(k, layers), per model chunk with
    ``interleave_stages``: v x min(k, layers / v)) or ``recompute_every`` (torchtitan:
    floor(layers / k), layers k, 2k, ... of the rank's blocks) says fewer; 0 otherwise."""
    if tr.recompute != "full":
        return 0
    if tr.recompute_layers is not None:
        # per model chunk: with interleave_stages v each chunk is a TransformerBlock of its
        # own (len(self.layers) = layers / v), and each checkpoints its first k
        v = tr.interleave_stages or 1
        return v * min(tr.recompute_layers, layers / v)
    if tr.recompute_every is not None:
        return math.floor(layers / tr.recompute_every)
    return layers


def last_layer_checkpointed(tr: "TrainingSpec", layers: int) -> bool:
    """Whether the stage's last layer (the first in backward) is checkpointed, so that its
    rebuilt activations come on top of every stored one; a later plain layer's backward
    frees at least one full layer first otherwise (see memory._realistic_activations)."""
    if tr.recompute != "full":
        return False
    if tr.recompute_layers is not None:
        return tr.recompute_layers >= layers / (tr.interleave_stages or 1)
    if tr.recompute_every is not None:
        return layers % tr.recompute_every == 0
    return True


def _check_fsdp_offload(s: "StrategySpec", path: str) -> None:
    """PyTorch FSDP offloads one way only: ``CPUOffload(offload_params=True)`` (FSDP1,
    torch/distributed/fsdp/api.py) or ``CPUOffloadPolicy`` (FSDP2) keeps the parameter
    shards and their gradients in host memory, and the optimizer steps there because its
    parameters are host tensors. So the parameters and the optimizer are offloaded
    together or not at all, to host memory (DRAM, or a CXL node bound with numactl), never
    to NVMe and never the optimizer alone (that is DeepSpeed's ZeRO-Offload)."""
    oo, op = s.offload_optimizer, s.offload_params
    if "nvme" in (oo, op):
        field = "offload_params" if op == "nvme" else "offload_optimizer"
        raise ScenarioError(f"{path}.{field}",
                            "PyTorch FSDP offloads to host memory only, never to NVMe "
                            "(CPUOffload / CPUOffloadPolicy); ZeRO-Infinity (zero_infinity) can use NVMe")
    if oo != op:
        field = "offload_params" if oo != "none" else "offload_optimizer"
        raise ScenarioError(f"{path}.{field}",
                            f"PyTorch FSDP offloads the parameters and the optimizer together "
                            f"(CPUOffload(offload_params=True) moves the parameter shards and their "
                            f"gradients, and the optimizer steps on the host): set offload_params and "
                            f"offload_optimizer to the same tier, not {op} and {oo}; DeepSpeed's "
                            f"ZeRO-Offload (zero_offload) offloads the optimizer alone")


_ZERO_STAGE = {"ddp": 0, "zero1": 1, "zero2": 2, "zero_offload": 2, "megatron_dist_opt": 1}


@dataclass(frozen=True)
class StrategySpec:
    kind: str = "zero3"
    shard_group_size: int | None = None
    offload_optimizer: str = "none"
    offload_params: str = "none"
    offload_activations: str = "none"
    prefetch_depth: int = 1
    prefetch_miss_rate: float = 0.0
    # DeepSpeed ZeRO-3 as released (``step.zero3_granularity``): "current", or "v0.3-v0.5"
    # (March 2021 - January 2022: synchronous per-tensor fetches, per-tensor reduce-scatter)
    deepspeed_release: str = "current"
    # Cores each GPU's CPU optimizer may use (default: the node's cpu_cores / GPUs per node)
    cpu_optimizer_cores_per_gpu: float | None = None
    # PyTorch FSDP API of the fsdp_* kinds (``step.fsdp2_copy_s``): 1 = FSDP1
    # ``FullyShardedDataParallel`` (one flat parameter per unit, gathered in place, views),
    # 2 = FSDP2 ``fully_shard`` (per-parameter DTensor shards: a copy-out after each
    # all-gather, a copy-in before each reduce-scatter). Accelerate's ``fsdp_version``.
    fsdp_version: int = 1

    @property
    def zero_stage(self) -> int:
        """ZeRO stage equivalent: 0 (DDP), 1, 2 or 3 (FSDP shards like stage 3)."""
        return _ZERO_STAGE.get(self.kind, 3)

    @property
    def is_fsdp(self) -> bool:
        return self.kind.startswith("fsdp")

    @property
    def takes_pipeline(self) -> bool:
        """Whether the framework runs this strategy with pipeline parallelism
        (:func:`_check_pipeline_strategy`): not DeepSpeed's ZeRO-2/3."""
        return self.zero_stage < 2 or self.is_fsdp

    @classmethod
    def from_dict(cls, d: dict, path: str = "strategy") -> "StrategySpec":
        _no_unknown(d, field_names(cls), path)
        kind = _choice(d, "kind", path, STRATEGY_KINDS, "zero3")
        # ZeRO-Offload / ZeRO-Infinity name a stage plus an offload target.
        default_opt = {"zero_offload": "cpu", "zero_infinity": "nvme"}.get(kind, "none")
        default_par = "nvme" if kind == "zero_infinity" else "none"
        s = _new(cls, dict(kind=kind,
                shard_group_size=_int(d, "shard_group_size", path, maximum=100_000_000),
                offload_optimizer=_choice(d, "offload_optimizer", path, OFFLOAD_TARGETS, default_opt),
                offload_params=_choice(d, "offload_params", path, OFFLOAD_TARGETS, default_par),
                offload_activations=_choice(d, "offload_activations", path, ("none", "cpu"), "none"),
                prefetch_depth=_int(d, "prefetch_depth", path, 1, minimum=0, maximum=10_000),
                prefetch_miss_rate=_num(d, "prefetch_miss_rate", path, 0.0, maximum=1.0),
                deepspeed_release=_choice(d, "deepspeed_release", path, DEEPSPEED_RELEASES, "current"),
                cpu_optimizer_cores_per_gpu=_num(d, "cpu_optimizer_cores_per_gpu", path, None,
                                                 strict=True, maximum=1_000_000),
                fsdp_version=_choice(d, "fsdp_version", path, FSDP_VERSIONS, 1)))
        if s.fsdp_version != 1 and not s.is_fsdp:
            raise ScenarioError(f"{path}.fsdp_version",
                                f"applies to PyTorch FSDP (fsdp_full_shard, fsdp_hybrid_shard), not {kind}")
        if s.deepspeed_release != "current" and (s.zero_stage < 3 or s.is_fsdp):
            raise ScenarioError(f"{path}.deepspeed_release",
                                f"applies to DeepSpeed ZeRO-3 (zero3, zero_infinity), not {kind}")
        if kind == "megatron_dist_opt" and s.offload_optimizer != "none":
            raise ScenarioError(f"{path}.offload_optimizer",
                                "Megatron's distributed optimizer keeps its shard on the GPU; "
                                "offload needs a ZeRO strategy")
        if s.zero_stage == 0 and s.offload_optimizer != "none":
            raise ScenarioError(f"{path}.offload_optimizer",
                                "DDP keeps every state on the GPU; offload needs ZeRO-1 or higher")
        if s.zero_stage < 3 and s.offload_params != "none":
            raise ScenarioError(f"{path}.offload_params",
                                f"parameter offload needs sharded parameters (ZeRO-3/FSDP/ZeRO-Infinity), "
                                f"not {kind}")
        if kind == "zero_offload" and s.offload_optimizer == "none":
            raise ScenarioError(f"{path}.offload_optimizer", "ZeRO-Offload offloads the optimizer; "
                                                             "choose cpu, nvme or cxl")
        if s.is_fsdp:
            _check_fsdp_offload(s, path)
        elif s.offload_optimizer == "nvme" and s.zero_stage < 3:
            # DeepSpeed's stage 1 / 2 optimizer offloads to host memory only: the engine
            # builds it with cpu_offload = (offload_optimizer.device == "cpu")
            # (deepspeed/runtime/engine.py zero_cpu_offload); NVMe swapping is ZeRO-3's
            # (ZeRO-Infinity)
            raise ScenarioError(f"{path}.offload_optimizer",
                                f"NVMe offload needs ZeRO-3 (zero3 or zero_infinity: ZeRO-Infinity); "
                                f"{kind} (ZeRO stage {s.zero_stage}) offloads the optimizer to host "
                                f"memory only (cpu, or cxl bound with numactl)")
        if kind == "fsdp_hybrid_shard" and s.shard_group_size is None:
            raise ScenarioError(f"{path}.shard_group_size",
                                "is required for fsdp_hybrid_shard (often the GPUs of one node)")
        if kind != "fsdp_hybrid_shard" and s.shard_group_size is not None:
            raise ScenarioError(f"{path}.shard_group_size", "applies to fsdp_hybrid_shard only")
        return s

    def to_dict(self) -> dict:
        d = _given(self)
        if d.get("deepspeed_release") == "current":     # the default: keep older scenarios' JSON
            del d["deepspeed_release"]
        if d.get("fsdp_version") == 1:                  # the default: keep older scenarios' JSON
            del d["fsdp_version"]
        return d


@dataclass(frozen=True)
class RuntimeSpec:
    """Framework overheads the realistic convention adds on each GPU.

    ``runtime_bytes``: CUDA context, cuBLAS workspace and NCCL buffers, allocated before
    any tensor. Default 1.5 GiB: the context is 274 MiB with CUDA's lazy module loading
    and 636 MiB without (pytorch/pytorch PR #86509), NCCL's buffers 0.5-0.7 GB per
    communicator on A100 (``NCCL_BUFFSIZE`` 4 MiB per channel and peer), cuBLAS 32 MiB of
    workspace per handle on Hopper.
    ``fragmentation_fraction``: caching-allocator reserve beyond what tensors use, as a
    fraction of the peak moment's activations and working buffers. When not given it
    follows the allocation pattern: 0.10 for persistent buckets (DDP, ZeRO-1/2), 0.20 for
    ZeRO-3 / FSDP, whose gather/free churn of differently sized units fragments more
    (GMLake, Guo et al. ASPLOS'24: 15 % of reserved memory on average, up to 33 %), and
    0.03 with ``expandable_segments`` (PyTorch's ``PYTORCH_CUDA_ALLOC_CONF``, which maps
    segments that grow instead of caching fixed blocks).
    ``model_load`` / ``load_dtype``: how and in which dtype the weights are loaded into
    host RAM before training (the ``load`` phase of DDR; ``memory._model_load``).
    """
    runtime_bytes: float = 1.5 * 2**30
    fragmentation_fraction: float | None = None
    expandable_segments: bool = False
    model_load: str | None = None
    load_dtype: str | None = None

    def model_load_for(self, strategy: "StrategySpec") -> str:
        """How the model is loaded (``runtime.model_load``, see ``memory._model_load``):
        as given, else ``sharded`` for DeepSpeed ZeRO-3 (``zero.Init``), ``rank0`` for
        FSDP (Accelerate's CPU-RAM-efficient loading), ``every_rank`` otherwise."""
        if self.model_load:
            return self.model_load
        if strategy.is_fsdp:
            return "rank0"
        return "sharded" if strategy.zero_stage >= 3 else "every_rank"

    def fragmentation_for(self, zero_stage: int) -> float:
        """The fraction in use: the given one, else the pattern's default (see above)."""
        if self.fragmentation_fraction is not None:
            return self.fragmentation_fraction
        if self.expandable_segments:
            return 0.03
        return 0.20 if zero_stage >= 3 else 0.10

    @classmethod
    def from_dict(cls, d: dict, path: str = "runtime") -> "RuntimeSpec":
        _no_unknown(d, field_names(cls), path)
        return _new(cls, dict(runtime_bytes=_num(d, "runtime_bytes", path, cls.runtime_bytes),
                   fragmentation_fraction=_num(d, "fragmentation_fraction", path, None,
                                               maximum=1.0),
                   expandable_segments=_bool(d, "expandable_segments", path, False),
                   model_load=_choice(d, "model_load", path,
                                      (None, "every_rank", "rank0", "sharded"), None),
                   load_dtype=_choice(d, "load_dtype", path, (None, "bf16", "fp16", "fp32"), None)))

    def to_dict(self) -> dict:
        return _given(self)


@dataclass(frozen=True)
class Scenario:
    """A training plan. ``model`` is a transformer; ``recsys`` a recommendation model
    (embedding tables + dense MLPs); at least one of the two is given."""
    model: ModelSpec | None
    cluster: ClusterSpec
    training: TrainingSpec = field(default_factory=TrainingSpec)
    strategy: StrategySpec = field(default_factory=StrategySpec)
    convention: str = "realistic"
    runtime: RuntimeSpec = field(default_factory=RuntimeSpec)
    checkpoint: CheckpointSpec = field(default_factory=CheckpointSpec)
    recsys: RecModelSpec | None = None
    schema: int = SCHEMA_VERSION

    @classmethod
    def from_dict(cls, d: dict, models=None, nodes=None, accelerators=None,
                  profiles=None) -> "Scenario":
        """Validate, expand presets and build a scenario. Raises ScenarioError.
        A ``cluster.profile`` (a cluster profile's figures, or its key in ``profiles``,
        id -> figures) fills in the training, accelerator and checkpoint figures the
        scenario leaves unset (:mod:`simulation.calibrate`)."""
        if isinstance(d, dict) and isinstance(d.get("cluster"), dict) and d["cluster"].get("profile") is not None:
            d = calibrate.apply_to_sections(calibrate.with_profile_figures(d, profiles))
        models = presets.MODELS if models is None else models
        nodes = presets.NODES if nodes is None else nodes
        accelerators = presets.ACCELERATORS if accelerators is None else accelerators
        keys = _resolved_keys(d, models, nodes, accelerators)
        model, cluster, recsys = _resolved_sections(d, keys)
        if cluster is None:          # not seen before (or a recommendation model): the long way
            # a built-in node and at most num_nodes: its spec made at import, not expanded
            fast = _template_cluster(d.get("cluster"), nodes, accelerators) if keys is not None else None
            r = resolve(d, models=models, nodes=nodes, accelerators=accelerators,
                        expand_cluster=fast is None)
            if keys is not None and r.get("model") is not None:
                # remembered below by the sections as written (their keys are made already)
                model = ModelSpec.from_dict(r["model"])
                cluster = fast if fast is not None else ClusterSpec.from_dict(r["cluster"])
                _remember_resolved(keys, model, cluster, models, nodes, accelerators)
            else:
                model = _parsed(ModelSpec, r["model"]) if r.get("model") is not None else None
                recsys = _parsed(RecModelSpec, r["recsys"]) if r.get("recsys") is not None else None
                cluster = fast if fast is not None else _parsed(ClusterSpec, r["cluster"])
        training = _parsed(TrainingSpec, _section(d, "training"))
        sdict = _section(d, "strategy")
        if training.pipeline_parallel > 1 and isinstance(sdict, dict) and "kind" not in sdict:
            # the default kind with a pipeline: zero1, the highest ZeRO stage DeepSpeed's
            # pipeline engine runs (zero3, the default otherwise, runs none)
            sdict = {**sdict, "kind": "zero1"}
        sc = _new(cls, dict(model=model, recsys=recsys, cluster=cluster, training=training,
                            strategy=_parsed(StrategySpec, sdict),
                            convention=_choice(d, "convention", "", CONVENTIONS, "realistic"),
                            runtime=_parsed(RuntimeSpec, _section(d, "runtime")),
                            checkpoint=_parsed(CheckpointSpec, _section(d, "checkpoint"))))
        _name_field(d, "name", "")      # the scenario's own name: read by nothing, stored with it
        _checked_target(sc.checkpoint, sc.cluster)
        cpu_adam.check_cores(sc.cluster, sc.strategy)
        _check_pipeline_strategy(sc.training, sc.strategy)
        if sc.training.overlap_param_gather and sc.strategy.kind != "megatron_dist_opt":
            raise ScenarioError("training.overlap_param_gather",
                                "is Megatron's distributed optimizer's option: needs strategy "
                                f"megatron_dist_opt, not {sc.strategy.kind}",
                                depends_on=("strategy.kind",))
        tr = sc.training
        acc = sc.cluster.accelerator
        if tr.precision == "bf16" and acc.preset in presets.NO_BF16_ACCELERATORS:
            raise ScenarioError("training.precision",
                                f"{acc.name} has no bf16 Tensor Cores (its 16-bit peak is fp16's, "
                                "NVIDIA Tesla V100 datasheet): use fp16 (mixed precision with "
                                "loss scaling, as V100 runs trained) or fp32")
        if tr.lora is not None:
            _check_lora(sc)
        if tr.fp8 is not None:
            _check_fp8(sc)
        _check_recompute_layers(tr, sc.strategy)
        _check_recompute_modules(sc)
        if tr.preference is not None:
            _check_preference(sc)
        if tr.tp_comm_overlap and not tr.sequence_parallel:
            raise ScenarioError("training.tp_comm_overlap",
                                "overlaps the tensor-parallel all-gathers and reduce-scatters of "
                                "sequence parallelism: needs sequence_parallel true (Megatron-LM "
                                "arguments.py asserts it)",
                                depends_on=("training.sequence_parallel",))
        if tr.context_parallel > 1:
            _check_context_parallel(tr)
        _check_experts(sc)
        return sc

    def to_dict(self) -> dict:
        """The scenario as JSON: a new dict each call, so a caller may change what it gets."""
        return _as_json(self.model, self.recsys, self.cluster, self.training, self.strategy,
                        self.convention, self.runtime, self.checkpoint, self.schema)


def _check_pipeline_strategy(tr: "TrainingSpec", st: "StrategySpec") -> None:
    """DeepSpeed's pipeline engine runs ZeRO stage 0 or 1 only: ``PipelineEngine.__init__``
    (deepspeed/runtime/pipe/engine.py) asserts ``zero_optimization_stage() < 2``, "ZeRO-2
    and ZeRO-3 are incompatible with pipeline parallelism" (Megatron-DeepSpeed's pipeline is
    that engine). So zero2, zero3, zero_offload and zero_infinity take no pipeline; PyTorch
    FSDP does (torchtitan's pipeline + FSDP2), as do zero1 and Megatron's distributed
    optimizer."""
    if tr.pipeline_parallel > 1 and not st.takes_pipeline:
        raise ScenarioError("strategy.kind",
                            f"{st.kind} (ZeRO stage {st.zero_stage}) runs no pipeline: DeepSpeed's "
                            "pipeline engine asserts 'ZeRO-2 and ZeRO-3 are incompatible with "
                            "pipeline parallelism' (deepspeed/runtime/pipe/engine.py); choose "
                            "zero1, megatron_dist_opt or an FSDP kind, or pipeline_parallel 1 "
                            f"(training.pipeline_parallel is {tr.pipeline_parallel})",
                            depends_on=("training.pipeline_parallel",))


def _check_context_parallel(tr: "TrainingSpec") -> None:
    """Megatron-LM's checks of ``--context-parallel-size`` (megatron/training/arguments.py
    ``validate_args``): the sequence splits into 2 x cp chunks of equal length (causal load
    balancing), and only Transformer Engine's fused/flash attention runs context-parallel
    (megatron/core/transformer/dot_product_attention.py asserts cp == 1)."""
    cp = tr.context_parallel
    if tr.seq_len % (2 * cp):
        raise ScenarioError("training.context_parallel",
                            f"seq_len {tr.seq_len:,} must be a multiple of 2 x context_parallel = "
                            f"{2 * cp} (each CP rank holds two equal chunks for causal load "
                            f"balancing; Megatron-LM arguments.py asserts it)",
                            depends_on=("training.seq_len",))
    if not tr.flash_attention:
        raise ScenarioError("training.context_parallel",
                            "needs flash_attention true: context parallelism runs in Transformer "
                            "Engine's fused/flash attention only (Megatron-LM "
                            "dot_product_attention.py asserts context_parallel_size == 1)",
                            depends_on=("training.flash_attention",))


def _json_of(model, recsys, cluster, training, strategy, convention, runtime, checkpoint,
             schema) -> dict:
    """The scenario's JSON, made anew from its (frozen, shared) sections."""
    d = dict(schema=schema, cluster=cluster.to_dict(), training=training.to_dict(),
             strategy=_section_json(strategy), convention=convention,
             runtime=_section_json(runtime), checkpoint=_section_json(checkpoint))
    if model is not None:
        d["model"] = model.to_dict()
    if recsys is not None:
        d["recsys"] = recsys.to_dict()
    return d


def _plan(d: dict) -> tuple:
    """Where ``d`` nests: ``((key, plan of a dict | None for a list), ...)``."""
    return tuple((k, _plan(v) if type(v) is dict else None) for k, v in d.items()
                 if type(v) is dict or type(v) is list)


def _copy(d: dict, plan: tuple) -> dict:
    """A copy of ``d`` and of the dicts and lists that ``plan`` says it holds."""
    out = d.copy()
    for k, sub in plan:
        out[k] = _copy(d[k], sub) if sub is not None else _copy_list(d[k])
    return out


def _copy_list(v: list) -> list:
    return [_copy(x, _plan(x)) if type(x) is dict else _copy_list(x) if type(x) is list else x
            for x in v]


# kept with its copy plan from the second call for the same sections on
_as_json = KeptOnSecondCall(_json_of, keep=lambda d: (d, _plan(d)), copy=lambda kept: _copy(*kept))


# ------------------------------------------------------------------ section memo
# An absent or empty section parses to its defaults whatever the scenario: made here once
# (a constant of the engine, as the dataclasses' defaults are, not a memo of any input).
_EMPTY: dict = {c: c.from_dict({}) for c in (TrainingSpec, StrategySpec, RuntimeSpec, CheckpointSpec)}
# A strategy section that names its kind alone, likewise (a kind that needs more, such as
# fsdp_hybrid_shard's shard_group_size, is not here).
_KIND_ONLY: dict = {}
for _kind in STRATEGY_KINDS:
    try:
        _KIND_ONLY[_kind] = StrategySpec.from_dict({"kind": _kind})
    except ScenarioError:
        pass
del _kind
# Those constants' JSON with its copy plan, by id (they live as long as the engine)
_CONST_JSON: dict = {id(c): (j, _plan(j)) for c in (*_EMPTY.values(), *_KIND_ONLY.values())
                     for j in (c.to_dict(),)}


def _section_json(spec) -> dict:
    """``spec.to_dict()``, a copy of the one made at import for the constants above."""
    t = _CONST_JSON.get(id(spec))
    return _copy(*t) if t is not None else spec.to_dict()


_PARSED: dict = {}
_PARSED_MAX = 4096


def _parsed(cls, section):
    """``cls.from_dict(section)``, remembered: sweeps and a form being typed into send the
    same sections again and again, and the specs are frozen, so they can be shared.
    Errors are not remembered (they raise each time)."""
    if not isinstance(section, dict):
        return cls.from_dict(section)
    if not section and cls in _EMPTY:
        return _EMPTY[cls]
    if cls is StrategySpec and len(section) == 1:
        kind = section.get("kind")                    # {"kind": k}: made at import
        hit = _KIND_ONLY.get(kind) if isinstance(kind, str) else None
        if hit is not None:
            return hit
    # repr keeps JSON types apart (True, 1, 1.0) and floats exact; C-fast
    key = (cls, repr(section))
    hit = _PARSED.get(key)
    if hit is None:
        hit = cls.from_dict(section)
        if len(_PARSED) >= _PARSED_MAX:
            _PARSED.clear()
        _PARSED[key] = hit
    return hit


# A model or cluster section as the user wrote it (a preset name plus overrides) and the
# preset tables it was expanded with -> its parsed spec. The tables are kept alive with the
# entry (so their ids stay theirs); the engine never changes a table it is given.
_RESOLVED: dict = {}
_TOP_LEVEL = frozenset({"schema", "model", "cluster", "training", "strategy", "convention", "runtime",
                        "checkpoint", "recsys", "name"})


def _resolved_keys(d: dict, models, nodes, accelerators) -> tuple | None:
    """The keys of ``d``'s model and cluster sections as written in :data:`_RESOLVED`;
    None where they are not remembered (no dict, a recommendation model)."""
    if not isinstance(d, dict) or d.get("recsys") is not None:
        return None
    return (("model", repr(d.get("model")), id(models)),
            ("cluster", repr(d.get("cluster")), id(nodes), id(accelerators)))


def _resolved_sections(d, keys) -> tuple:
    """``(model, cluster, None)`` when both sections were resolved before, else Nones.
    Only the checks :func:`resolve` makes before expanding are repeated: the rest passed."""
    if keys is None:
        return None, None, None
    km, kc = keys
    m, c = _RESOLVED.get(km), _RESOLVED.get(kc)
    if m is None or c is None:
        return None, None, None
    schema = d.get("schema", SCHEMA_VERSION)
    if schema != SCHEMA_VERSION:
        raise ScenarioError("schema", f"unsupported schema {_show(schema)}; this engine reads {SCHEMA_VERSION}")
    _no_unknown(d, _TOP_LEVEL, "")
    return m[-1], c[-1], None


def _remember_resolved(keys, model, cluster, models, nodes, accelerators) -> None:
    km, kc = keys
    if len(_RESOLVED) >= _PARSED_MAX:
        _RESOLVED.clear()
    _RESOLVED[km] = (models, model)
    _RESOLVED[kc] = (nodes, accelerators, cluster)


def forget_parsed() -> None:
    """Clear the section memos (see :func:`simulation.memo.forget`)."""
    _PARSED.clear()
    _RESOLVED.clear()
    _checked_target.clear()
    _as_json.clear()


# ------------------------------------------------------------------ preset expansion
def _expand(value, table: dict, path: str, what: str) -> dict:
    """A preset id, or a dict with an optional ``preset`` key plus overrides."""
    if isinstance(value, str):
        value = {"preset": value}
    if not isinstance(value, dict):
        raise ScenarioError(path, f"must be a {what} preset name or an object")
    name = value.get("preset")
    if name is None:
        return dict(value)
    if not isinstance(name, str):
        raise ScenarioError(f"{path}.preset", f"must be a {what} preset name (a string), got "
                                              f"{type(name).__name__}")
    if name not in table:
        if set(value) - {"preset", "name", "source"}:
            return dict(value)   # already resolved: the preset is provenance only
        raise ScenarioError(f"{path}.preset" if "preset" in value else path,
                            f"unknown {what} preset {_show(name)}; known: {', '.join(sorted(table))}")
    out = {k: v for k, v in table[name].items()}
    out.update({k: v for k, v in value.items() if v is not None})
    out["preset"] = name
    return out


def resolve(d: dict, models=None, nodes=None, accelerators=None,
            expand_cluster: bool = True) -> dict:
    """Expand preset names into explicit values; returns a new dict (input unchanged).

    ``models``/``nodes``/``accelerators`` are lookup tables (id -> spec dict); the
    built-in :mod:`simulation.presets` are used where omitted. Without ``expand_cluster``
    the cluster section is left as written (the caller has its spec).
    """
    if not isinstance(d, dict):
        raise ScenarioError("scenario", "must be a JSON object")
    schema = d.get("schema", SCHEMA_VERSION)
    if schema != SCHEMA_VERSION:
        raise ScenarioError("schema", f"unsupported schema {_show(schema)}; this engine reads {SCHEMA_VERSION}")
    _no_unknown(d, _TOP_LEVEL, "")
    models = presets.MODELS if models is None else models
    nodes = presets.NODES if nodes is None else nodes
    accelerators = presets.ACCELERATORS if accelerators is None else accelerators
    if d.get("model") is None and d.get("recsys") is None:
        raise ScenarioError("model", "is required (or give a recommendation model in recsys)")
    if "cluster" not in d:
        raise ScenarioError("cluster", "is required")
    out = dict(d)
    if d.get("model") is not None:
        out["model"] = _expand(d["model"], models, "model", "model")

    if expand_cluster:
        out["cluster"] = resolve_cluster(d["cluster"], nodes, accelerators)
    return out


def resolve_cluster(cluster_in, nodes=None, accelerators=None, path: str = "cluster") -> dict:
    """A cluster section with its node template and accelerator preset expanded (a new
    dict), and a ``profile``'s accelerator figures applied (:mod:`simulation.calibrate`)."""
    nodes = presets.NODES if nodes is None else nodes
    accelerators = presets.ACCELERATORS if accelerators is None else accelerators
    if not isinstance(cluster_in, dict):
        raise ScenarioError(path, "must be an object")
    cluster = {}
    node_id = cluster_in.get("node")
    if node_id is not None and not isinstance(node_id, str):
        raise ScenarioError(f"{path}.node", f"must be a node template name (a string), got "
                                            f"{type(node_id).__name__}")
    explicit = cluster_in.get("accelerator") is not None and cluster_in.get("gpus_per_node") is not None
    if node_id is not None and not (node_id not in nodes and explicit):
        if node_id not in nodes:
            raise ScenarioError(f"{path}.node",
                                f"unknown node template {_show(node_id)}; known: {', '.join(sorted(nodes))}")
        tpl = nodes[node_id]
        cluster = {k: v for k, v in tpl.items() if k not in ("name", "tiers")}
        cluster["node_name"] = tpl.get("name")
        cluster["tiers"] = {k: dict(v) for k, v in (tpl.get("tiers") or {}).items()}
    for k, v in cluster_in.items():
        if k == "tiers":
            if v is None:
                continue
            if not isinstance(v, dict):
                raise ScenarioError(f"{path}.tiers", "must be an object")
            tiers = cluster.setdefault("tiers", {})
            for tname, tspec in v.items():
                if tspec is None:            # null removes a tier of the template
                    tiers.pop(tname, None)
                elif isinstance(tspec, dict):
                    tiers[tname] = {**tiers.get(tname, {}), **tspec}
                else:
                    raise ScenarioError(f"{path}.tiers.{tname}", "must be an object or null")
        elif v is not None:
            cluster[k] = v
    template = tpl if node_id is not None and node_id in nodes else None
    _scale_price(cluster, template, cluster_in)
    _scale_host(cluster, template, cluster_in)
    if template and template.get("gpus_per_node") not in (None, cluster.get("gpus_per_node")):
        cluster["template_gpus_per_node"] = template.get("gpus_per_node")
    acc = cluster.get("accelerator")
    if acc is None:
        raise ScenarioError(f"{path}.accelerator", "is required (or give a node template)")
    cluster["accelerator"] = _expand(acc, accelerators, f"{path}.accelerator", "accelerator")
    if cluster.get("profile") is not None:
        calibrate.apply_to_cluster(cluster)
    return cluster


HOST_SHARES = ("proportional", "whole")
CPU_ISAS = tuple(cpu_adam.SIMD_WIDTH_FP32)


def _scale_host(cluster: dict, tpl: dict | None, given: dict) -> None:
    """Fewer GPUs than the node template has: the scenario has a slice of the host, as a
    cloud VM of 1 of 8 GPUs does (``cluster.host_share: proportional``, the default: the
    template's DDR, NVMe and CXL capacity and bandwidth, its NIC and its CPU cores scaled
    by GPUs / the template's GPUs) or the whole host (``whole``). A tier, NIC rate or core
    count the scenario gives itself is taken as given."""
    share = given.get("host_share", "proportional")
    if share not in HOST_SHARES:
        raise ScenarioError("cluster.host_share",
                            f"must be one of {', '.join(HOST_SHARES)}; got {_show(share)}")
    tpl_gpus, gpus = (tpl or {}).get("gpus_per_node"), given.get("gpus_per_node")
    if share == "whole" or not tpl or not isinstance(gpus, int) or isinstance(gpus, bool) \
            or not tpl_gpus or gpus < 1 or gpus >= tpl_gpus:
        return
    f = gpus / tpl_gpus
    own_tiers = given.get("tiers") or {}
    for name, spec in (cluster.get("tiers") or {}).items():
        if name in own_tiers or not isinstance(spec, dict):
            continue
        for key in ("capacity_bytes", "read_bytes_per_s", "write_bytes_per_s"):
            if isinstance(spec.get(key), (int, float)) and not isinstance(spec.get(key), bool):
                spec[key] = spec[key] * f
        if isinstance(spec.get("devices"), int) and not isinstance(spec.get("devices"), bool):
            spec["devices"] = max(1, round(spec["devices"] * f))
    if "nic_bytes_per_s" not in given and isinstance(cluster.get("nic_bytes_per_s"), (int, float)):
        cluster["nic_bytes_per_s"] = cluster["nic_bytes_per_s"] * f
    cores = cluster.get("cpu_cores")
    if "cpu_cores" not in given and isinstance(cores, int) and not isinstance(cores, bool):
        cluster["cpu_cores"] = max(1, round(cores * f))


def _scale_price(cluster: dict, tpl: dict | None, given: dict) -> None:
    """A template's price is for its whole node: with fewer (or more) GPUs per node than the
    template has, and no price of its own, the node costs its share of GPUs."""
    if not tpl or "price_usd_per_node_hour" in given:
        return
    price, tpl_gpus, gpus = tpl.get("price_usd_per_node_hour"), tpl.get("gpus_per_node"), given.get("gpus_per_node")
    if not price or not tpl_gpus or not isinstance(gpus, int) or isinstance(gpus, bool) \
            or gpus < 1 or gpus == tpl_gpus:
        return
    cluster["price_usd_per_node_hour"] = price * gpus / tpl_gpus
    cluster["price_source"] = (f"{tpl.get('price_source') or 'template price'}; "
                               f"{gpus} of the template's {tpl_gpus} GPUs")


def node_figures(sc: Scenario) -> dict:
    """The node's tier figures as the checkpoint model's keyword arguments."""
    return _node_figures_of(sc.cluster)


def _node_figures(c: ClusterSpec) -> dict:
    t = c.tiers
    nvme, cxl, ddr = t.get("nvme"), t.get("cxl"), t.get("ddr")
    return dict(gpus_per_node=c.gpus_per_node, num_nodes=c.num_nodes,
                host_link_bytes_per_s=c.accelerator.host_link_bytes_per_s,
                nic_bytes_per_s=c.nic_bytes_per_s,
                nvme_write_bytes_per_s=nvme and nvme.write_bytes_per_s,
                nvme_read_bytes_per_s=nvme and nvme.read_bytes_per_s,
                nvme_capacity_bytes=nvme and nvme.capacity_bytes,
                ddr_capacity_bytes=ddr and ddr.capacity_bytes,
                cxl_write_bytes_per_s=cxl and cxl.write_bytes_per_s,
                cxl_read_bytes_per_s=cxl and cxl.read_bytes_per_s,
                cxl_capacity_bytes=cxl and cxl.capacity_bytes)


def _check_experts(sc) -> None:
    """The MoE routing settings against the model, as Megatron-Core checks them
    (megatron/training/arguments.py and core/transformer/transformer_config.py, core 0.20):
    expert parallelism needs experts, and EP must divide their number; padding needs a
    capacity factor; with tensor parallelism an MoE layer needs sequence parallelism
    (moe_layer.py raises without it). Layout divisibility is :func:`simulation.parallel.layout`'s."""
    tr, m = sc.training, sc.model
    ep = tr.expert_parallel
    moe = m is not None and m.num_experts > 1
    routing = (ep != 1 or tr.expert_tensor_parallel is not None or tr.moe_capacity_factor is not None
               or tr.moe_pad_to_capacity or tr.moe_routing_imbalance != 1.0 or tr.moe_a2a_overlap
               or tr.moe_router_group_topk is not None)
    if routing and not moe:
        name = next(k for k, v in (("expert_parallel", ep != 1),
                                   ("expert_tensor_parallel", tr.expert_tensor_parallel is not None),
                                   ("moe_capacity_factor", tr.moe_capacity_factor is not None),
                                   ("moe_pad_to_capacity", tr.moe_pad_to_capacity),
                                   ("moe_routing_imbalance", tr.moe_routing_imbalance != 1.0),
                                   ("moe_a2a_overlap", tr.moe_a2a_overlap),
                                   ("moe_router_group_topk", tr.moe_router_group_topk is not None)) if v)
        raise ScenarioError(f"training.{name}",
                            "applies to a mixture of experts: the model has no experts "
                            "(model.num_experts is 1)")
    if not moe:
        return
    if m.num_experts % ep:
        raise ScenarioError("training.expert_parallel",
                            f"must divide the model's {m.num_experts} experts, got {ep} "
                            "(Megatron: num_experts must be a multiple of expert_model_parallel_size)")
    if tr.moe_pad_to_capacity and tr.moe_capacity_factor is None:
        raise ScenarioError("training.moe_pad_to_capacity",
                            "needs moe_capacity_factor (Megatron: moe_expert_capacity_factor must "
                            "be set to use moe_pad_expert_input_to_capacity)")
    if tr.moe_routing_imbalance > ep:
        raise ScenarioError("training.moe_routing_imbalance",
                            f"is at most expert_parallel ({ep}): the busiest rank cannot receive "
                            f"more than every rank's tokens, got {tr.moe_routing_imbalance:g}")
    if tr.moe_router_group_topk is not None:
        _check_group_topk(sc)
    if ep > 1 and tr.tensor_parallel > 1 and not tr.sequence_parallel:
        raise ScenarioError("training.sequence_parallel",
                            "must be true for an MoE layer with tensor parallelism (Megatron-Core "
                            "moe_layer.py raises without it)")
    if tr.moe_a2a_overlap:
        # Megatron-Core transformer_config.py (core 0.20) asserts each of these
        why = ("needs expert_parallel > 1 (no all-to-all)" if ep == 1 else
               "needs recompute other than full (Megatron: disable full recomputation)"
               if tr.recompute == "full" else
               "needs a 16-bit model (Megatron: only supported with bf16 or fp16)"
               if tr.precision == "fp32" else
               "needs interleave_stages with pipeline_parallel > 1 (Megatron: "
               "virtual_pipeline_model_parallel_size must be specified)"
               if tr.pipeline_parallel > 1 and tr.interleave_stages is None else None)
        if why:
            raise ScenarioError("training.moe_a2a_overlap", why)


def ep_nodes(sc) -> int:
    """Nodes (NVLink domains) one expert-parallel group spans: its EP ranks are ETP apart
    (Megatron-Core's expert grid, order tp-ep-dp-pp), so a domain of G GPUs holds
    max(1, min(EP, G / ETP)) of them (``collectives.ranks_per_node``, ``nodes_spanned``)."""
    tr = sc.training
    ep, gpn = tr.expert_parallel, sc.cluster.domain_gpus
    k = max(1, min(ep, gpn // max(tr.expert_tp, 1)))
    return max(1, -(-ep // k))


def _check_group_topk(sc) -> None:
    """``moe_router_group_topk`` (M) as node-limited routing: the groups are the nodes the
    EP group spans (Megatron-Core transformer_config.py: "set moe_router_num_groups equal to
    number of nodes in EP group"), so M is at most that number (torch.topk over the groups
    needs it), and at most the model's top-k (moe_utils.group_limited_topk takes the top
    ``topk // group_topk`` experts of each group: 0 beyond it)."""
    tr, m = sc.training, sc.model
    g, nodes = tr.moe_router_group_topk, ep_nodes(sc)
    if g > nodes:
        raise ScenarioError("training.moe_router_group_topk",
                            f"is at most the {nodes} node(s) the expert-parallel group spans "
                            f"(expert_parallel {tr.expert_parallel} on {sc.cluster.domain_gpus}-GPU "
                            f"nodes; the routing groups are its nodes), got {g}")
    if g > m.moe_top_k:
        raise ScenarioError("training.moe_router_group_topk",
                            f"is at most the model's moe_top_k ({m.moe_top_k}): each selected "
                            f"group gives top_k / group_topk experts (Megatron-Core "
                            f"moe_utils.group_limited_topk), got {g}")


def _check_recompute_modules(sc) -> None:
    """``recompute_modules`` and ``activation_func_fp8_input_store`` as Megatron-Core checks
    them (transformer_config.py ``__post_init__``, core 0.20 at d98e8a6): modules with
    selective granularity; ``mla_up_proj`` only with multi-latent attention; FP8 with
    ``moe_act`` or ``layernorm`` not with delayed scaling; FP8 input store for SwiGLU only.
    Both are Megatron-Core's, so framework megatron; ``moe_act`` needs a model with experts
    (the grouped experts it applies to)."""
    tr, m = sc.training, sc.model
    mods = tr.recompute_modules
    if mods is not None:
        f = "training.recompute_modules"
        if tr.framework != "megatron":
            raise ScenarioError(f, "are Megatron-Core's --recompute-modules: needs framework megatron")
        if tr.recompute != "selective":
            raise ScenarioError(f, f"apply to selective recomputation (Megatron "
                                   f"--recompute-granularity selective): needs recompute "
                                   f"selective, not {tr.recompute}")
        if "mla_up_proj" in mods and not m.uses_mla:
            raise ScenarioError(f, "mla_up_proj is only supported with multi-latent attention "
                                   "(model.kv_lora_rank)")
        if "moe_act" in mods and m.num_experts <= 1:
            raise ScenarioError(f, "moe_act recomputes the experts' activation: needs a model "
                                   "with experts (model.num_experts > 1)")
        if tr.fp8 is not None and tr.fp8.recipe == "delayed" and ({"moe_act", "layernorm"} & set(mods)):
            raise ScenarioError(f, "delayed scaling does not support moe_act and layernorm "
                                   "recompute for FP8 (Megatron-Core): use training.fp8.recipe "
                                   "tensorwise, blockwise or mxfp8")
    if tr.activation_func_fp8_input_store:
        f = "training.activation_func_fp8_input_store"
        if tr.framework != "megatron":
            raise ScenarioError(f, "is Megatron-Core's fused SwiGLU option: needs framework megatron")
        if not m.gated_mlp:
            raise ScenarioError(f, "storing the activation input in FP8 is supported only for "
                                   "SwiGLU (model.gated_mlp)")


def _check_recompute_layers(tr: TrainingSpec, st=None) -> None:
    """``recompute_layers`` / ``recompute_every`` choose layers for full recomputation.
    Not with ``strategy.offload_activations: cpu``: DeepSpeed's CPU checkpointing moves the
    checkpoints of full recomputation to the host (``checkpointing.py``
    ``CheckpointFunction``), and which of a partly checkpointed stage's tensors would go
    (the checkpoints only, or the plain layers' activations too) is not modelled."""
    for name in ("recompute_layers", "recompute_every"):
        if getattr(tr, name) is not None and tr.recompute != "full":
            raise ScenarioError(f"training.{name}",
                                "chooses the layers of full recomputation: needs recompute "
                                f"full, not {tr.recompute}")
    if tr.recompute_layers is not None and tr.recompute_every is not None:
        raise ScenarioError("training.recompute_every",
                            "give recompute_layers (Megatron block) or recompute_every "
                            "(torchtitan every k-th layer), not both")
    partial = tr.recompute_layers is not None or tr.recompute_every is not None
    if partial and st is not None and st.offload_activations != "none":
        name = "recompute_layers" if tr.recompute_layers is not None else "recompute_every"
        raise ScenarioError(f"training.{name}",
                            "layer-selective recomputation with strategy.offload_activations "
                            f"{st.offload_activations} is not modelled: CPU checkpointing offloads "
                            "the checkpoints of full recomputation (checkpoint every layer, or "
                            "keep the activations on the GPU)")


def _check_preference(sc) -> None:
    """``training.preference`` against the rest of the scenario."""
    tr = sc.training
    if tr.preference.reference == "adapters_off" and tr.lora is None:
        raise ScenarioError("training.preference.reference",
                            "adapters_off uses the policy's frozen base as the reference: "
                            "needs training.lora (or choose separate or precomputed)")
    if tr.pipeline_parallel > 1:
        raise ScenarioError("training.preference",
                            "TRL's DPOTrainer runs no pipeline parallelism: needs "
                            "pipeline_parallel 1")


def _check_lora(sc) -> None:
    """LoRA needs the architecture (the adapters' shapes); ``gate`` a gated MLP,
    ``embeddings`` a vocabulary."""
    m, lo = sc.model, sc.training.lora
    if m is None or not m.has_architecture:
        raise ScenarioError("training.lora", "needs the model's architecture (hidden_size, "
                                             "num_layers, heads, ffn_hidden_size), not only num_params")
    if "gate" in lo.targets and not m.gated_mlp:
        raise ScenarioError("training.lora.targets", "gate needs a gated MLP (model.gated_mlp)")
    if "embeddings" in lo.targets and not m.vocab_size:
        raise ScenarioError("training.lora.targets", "embeddings needs model.vocab_size")
    if m.uses_mla and set(lo.targets) & {"q", "k", "v"}:
        raise ScenarioError("training.lora.targets",
                            "q, k and v are not modules of latent attention (model.kv_lora_rank: "
                            "q_a/q_b_proj, kv_a_proj_with_mqa, kv_b_proj); target o, gate, up, down")
    if (m.num_shared_experts or m.first_dense_layers) and set(lo.targets) & {"gate", "up", "down"}:
        raise ScenarioError("training.lora.targets",
                            "gate, up and down with shared experts or dense first layers "
                            "(model.num_shared_experts, model.first_dense_layers) are not modelled")


def _check_checkpoint_target(checkpoint: CheckpointSpec, cluster: ClusterSpec):
    """The checkpoint target on this node (a :class:`simulation.checkpoint.Target`);
    rejects one this node lacks (ScenarioError on checkpoint.target)."""
    return resolve_target(checkpoint, **_node_figures(cluster))


def checkpoint_target(sc: Scenario):
    """``resolve_target`` of the scenario's checkpoint on its node, made once per pair of
    sections (a frozen Target, shared)."""
    return _checked_target(sc.checkpoint, sc.cluster)


_checked_target = ByIdentity(_check_checkpoint_target)
# Callers unpack it (``**``), so the remembered dict is never changed.
_node_figures_of = ByIdentity(_node_figures)


MAX_DOMAIN_GPUS = 100_000       # cluster.nvlink_domain_gpus


# ClusterSpec._direct's checks: (key, check, positional, keyword arguments after d, key,
# path), those of ClusterSpec._collecting.
_CLUSTER_FIELDS = (
    ("gpus_per_node", _int, (), dict(required=True, maximum=1024)),
    ("num_nodes", _int, (1,), dict(maximum=1_000_000)),
    ("nic_bytes_per_s", _num, (), dict(strict=True, maximum=MAX_BYTES_PER_S)),
    ("price_usd_per_node_hour", _num, (), {}),
    ("price_source", _str, (), {}), ("node", _str, (), {}), ("node_name", _str, (), {}),
    ("source", _str, (), {}),
    ("template_gpus_per_node", _int, (), dict(minimum=1)),
    ("host_share", _choice, (HOST_SHARES, "proportional"), {}),
    ("cpu_cores", _int, (), dict(minimum=1, maximum=1_000_000)),
    ("cpu_isa", _choice, (CPU_ISAS, "avx512"), {}),
    ("cpu_source", _str, (), {}),
    ("pcie_switch_gpus", _int, (), dict(minimum=1, maximum=1024)),
    ("pcie_switch_uplink_bytes_per_s", _num, (), dict(strict=True)),
    ("pcie_switch_source", _str, (), {}),
    ("nvls", _bool, (False,), {}), ("rail_optimized", _bool, (True,), {}),
    ("leaf_switch_ports", _int, (), dict(minimum=1, maximum=100_000)),
    ("spine_oversubscription", _num, (1.0,), dict(minimum=1.0, maximum=64.0)),
    ("nvlink_domain_gpus", _int, (), dict(minimum=1, maximum=MAX_DOMAIN_GPUS)))


# The direct parse's table: each field with what its check gives when the section leaves
# it out (the check on an empty section: a constant, as the defaults it returns are), or
# _CALL where leaving it out is an error (a required field).
_CALL = object()
_CLUSTER_DIRECT = tuple((k, f, a, o, _CALL if o.get("required") else f({}, k, "cluster", *a, **o))
                        for k, f, a, o in _CLUSTER_FIELDS)


def _domain_error(domain, gpus_per_node) -> str | None:
    """Why ``cluster.nvlink_domain_gpus`` does not fit the host, or None: a domain joins
    whole hosts, so it is a multiple of ``gpus_per_node`` (GB200 NVL72: 72 = 18 x 4)."""
    if domain is None or not isinstance(gpus_per_node, int) or gpus_per_node < 1:
        return None
    if domain % gpus_per_node:
        return (f"must be a multiple of cluster.gpus_per_node ({gpus_per_node}): an NVLink "
                f"domain joins whole hosts; got {domain}")
    return None


# The built-in presets' accelerators and node templates' tiers, parsed once when the engine
# is imported (constants of the engine, as the presets are; not memos of any input, so
# ``forget`` leaves them): a section the direct parse is given is one of them when its
# ``repr`` is the preset's, as :func:`resolve` expands it (``repr`` keeps JSON types apart
# and floats exact, so the parse of the section is the preset's spec). The accelerator
# table is keyed by preset name, with the section's repr; the tiers by repr.
# A section is matched as :func:`_as_written` tells (what ``repr`` equality told, without
# formatting every float): the tiers are looked up by their ``device`` text.
_BUILT_IN_ACCELERATORS: dict = {}
_BUILT_IN_TIERS: dict = {}
_BUILT_IN_TIERS_BY_DEVICE: dict = {}


def _written(d: dict) -> tuple | None:
    """``(d, keys, value types)`` of a flat section of JSON scalars, for :func:`_as_written`;
    None where ``==`` and the types would not tell ``repr`` apart (a nested value, a float
    zero: -0.0 == 0.0, a NaN: not equal to itself)."""
    for v in d.values():
        if type(v) in (dict, list, tuple) or type(v) is float and (v == 0.0 or v != v):
            return None
    return dict(d), list(d), list(map(type, d.values()))


def _as_written(d: dict, written: tuple | None) -> bool:
    """Whether ``repr(d) == repr(written[0])``, for a section ``written`` of :func:`_written`:
    the same keys in the same order and values of the same types that compare equal (a
    value equal to a non-zero float or to an int, str, bool or None of its own type has its
    ``repr``; ``1``, ``1.0`` and ``True`` are told apart by their types). C-level
    comparisons only."""
    return (written is not None and d == written[0] and list(d) == written[1]
            and list(map(type, d.values())) == written[2])


for _name in presets.ACCELERATORS:
    _acc = _expand(_name, presets.ACCELERATORS, "accelerator", "accelerator")
    _BUILT_IN_ACCELERATORS[_name] = (repr(_acc), AcceleratorSpec._collecting(_acc, "accelerator"),
                                     _written(_acc))
for _tpl in presets.NODES.values():
    for _t in (_tpl.get("tiers") or {}).values():
        _t = dict(_t)
        if repr(_t) not in _BUILT_IN_TIERS:
            _BUILT_IN_TIERS[repr(_t)] = TierSpec._collecting(_t, "cluster.tiers")
            _BUILT_IN_TIERS_BY_DEVICE.setdefault(_t.get("device"), []).append(
                (_written(_t), _BUILT_IN_TIERS[repr(_t)]))
del _name, _acc, _tpl, _t


# The built-in node templates parsed once at import (constants of the engine, as the
# presets are; ``forget`` leaves them): node id -> (the template and its accelerator preset
# as the tables had them, the fields of its ClusterSpec at one node, that spec's JSON and
# its copy plan). A cluster section that is a built-in node and at most ``num_nodes`` (the
# 160 benchmark configurations', most forms') takes them: :func:`_template_cluster`.
_TEMPLATE_CLUSTERS: dict = {}


def _template_cluster(c, nodes, accelerators):
    """``ClusterSpec.from_dict(resolve_cluster(c))`` for a section ``{"node": built-in id}``
    with at most a valid ``num_nodes`` and the built-in tables (unchanged since import),
    made from the template's spec at import; None for any other section (the long way).
    ``tests/engine/test_scenario_fast.py`` holds it equal to the long way on every template."""
    if type(c) is not dict or nodes is not presets.NODES or accelerators is not presets.ACCELERATORS:
        return None
    node, n = c.get("node"), c.get("num_nodes", 1)
    t = _TEMPLATE_CLUSTERS.get(node) if type(node) is str else None
    if t is None or type(n) is not int or not 1 <= n <= 1_000_000 or not (
            len(c) == 1 or len(c) == 2 and "num_nodes" in c):
        return None
    tpl, acc_name, acc, fields, json_of = t
    if nodes[node] != tpl or acc_name is not None and accelerators.get(acc_name) != acc:
        return None
    spec = object.__new__(ClusterSpec)
    d = spec.__dict__
    d.update(fields)
    d["num_nodes"] = n
    d["tiers"] = dict(fields["tiers"])
    d["_json"] = json_of           # ClusterSpec.to_dict: the template's JSON, this num_nodes
    return spec


def _template_entry(node_id: str) -> tuple:
    """:data:`_TEMPLATE_CLUSTERS`' entry of a built-in node (ScenarioError: it needs more
    than its id)."""
    import copy as _copy_mod
    tpl = presets.NODES[node_id]
    a = tpl.get("accelerator")
    acc_name = a if type(a) is str else a.get("preset") if type(a) is dict else None
    acc = presets.ACCELERATORS.get(acc_name) if acc_name is not None else None
    spec = ClusterSpec.from_dict(resolve_cluster({"node": node_id}))
    fields = dict(spec.__dict__)
    j = spec.to_dict()
    return (_copy_mod.deepcopy(tpl), acc_name, _copy_mod.deepcopy(acc), fields, (j, _plan(j)))


for _name in presets.NODES:
    try:
        _TEMPLATE_CLUSTERS[_name] = _template_entry(_name)
    except ScenarioError:          # a template that needs more than its id: the long way
        pass
del _name
