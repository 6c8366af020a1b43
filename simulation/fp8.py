"""FP8 training (``training.fp8``): which GEMMs run in FP8, the copies they make, and the
kernels that make them.

Two implementations, chosen by ``training.framework``:

``megatron``: NVIDIA Transformer Engine (TE 2.20.0.dev0, commit d0067d0 of
NVIDIA/TransformerEngine) as Megatron-Core uses it (``--fp8-format``, ``--fp8-recipe``).
Read in ``transformer_engine/pytorch/module/linear.py`` (``_linear_forward``),
``layernorm_linear.py``, ``layernorm_mlp.py``, ``base.py`` (``quantize_weight``,
``set_meta_tensor``), ``quantization.py`` (``DelayedScalingRecipeState``,
``reduce_and_update_fp8_tensors``) and ``common/recipe/__init__.py``:

* **Which GEMMs**: the ``Linear`` / ``LayerNormLinear`` / ``LayerNormMLP`` modules, i.e.
  the QKV and output projections and the MLP's fc1 and fc2 (experts' ``GroupedLinear``
  alike), forward (``fprop``) and both backward GEMMs (``dgrad``, ``wgrad``). The
  attention core (``DotProductAttention``: softmax, Q K^T and P V), the embedding and the
  output head stay in 16 bits.
* **Saved activations**: each FP8 GEMM saves its input for the weight gradient as the FP8
  cast it made, keeping only the column-wise (transposed) data (``linear.py``: "Discard
  row-wise data since it is not needed in backward pass"; with sequence parallelism the
  local shard, row-wise, re-gathered in backward): 1 byte an element where the 16-bit
  stack saves 2. The fused LayerNorm writes its output in FP8 (``layernorm_linear.py``),
  fc2's input is the activation's FP8 cast (``layernorm_mlp.py``); fc1's output (the
  activation's input) and the norm inputs stay 16-bit; FlashAttention keeps its own 16-bit
  output beside the out-projection's FP8 copy (:mod:`simulation.activations`).
* **Weight copies**: ``quantize_weight`` makes the FP8 weight with row-wise data (fprop)
  and, when the input needs a gradient, column-wise data (on Hopper a transposed copy, for
  dgrad): 2 bytes a weight. Megatron passes ``is_first_microbatch``, so the copy is a
  workspace cached in ``_fp8_workspaces`` for the whole step and refreshed on the first
  micro-batch (``cache_name = "weight"``); under FSDP (ZeRO-3) it is not cached
  (``cache_name`` None for FSDP2): made for the gathered unit and freed with it.
  ``param: true`` (TE ``fp8_model_init``; Megatron ``--fp8-param-gather``) keeps the
  primary weights themselves as FP8 tensors: 1 byte a weight plus the column-wise copy
  made on demand (``update_usage(columnwise_usage=True)``); the fp32 master copy stays in
  the optimizer.
* **Scaling state**: delayed scaling (``DelayedScaling``: ``amax_history_len`` 1024 and
  ``amax_compute_algo`` "max" by default) keeps per GEMM 3 forward (input, weight, output)
  and 2 backward (grad output, grad input) quantizers, each an fp32 ``scale`` and an
  ``amax_history_len`` row of fp32 amaxes (``set_meta_tensor``: ``num_gemms * 3`` / ``* 2``;
  ``DelayedScalingRecipeState``). After each forward and backward the amaxes of the whole
  autocast region are concatenated, all-reduced (MAX) over the FP8 group and the scales
  updated in one fused kernel (``reduce_and_update_fp8_tensors``).
  Current (``tensorwise``: ``Float8CurrentScaling``) scaling computes each tensor's amax
  just before its cast: one more read of the 16-bit tensor. Block scaling (``blockwise``:
  ``Float8BlockScaling``, 1x128 activation and gradient blocks and 128x128 weight blocks,
  as DeepSeek-V3 trained; ``mxfp8``: ``MXFP8BlockScaling``, 32-element blocks with E8M0
  scales, Blackwell only) finds block amaxes inside the cast kernel and stores a scale per
  block (fp32 per 128 elements; one byte per 32).
* **Formats**: ``hybrid`` is E4M3 forward and E5M2 for gradients (TE's default for delayed
  and current scaling), ``e4m3`` everywhere (TE's default for the block recipes).

``huggingface``: torchao float8 training (``torchao/float8/float8_linear.py``, pytorch/ao
commit 36027d8; ``convert_to_float8_training``, as torchtitan uses it with FSDP2): recipes
``tensorwise`` (dynamic, the default) and ``rowwise``. ``matmul_with_hp_or_float8_args``
saves the 16-bit input and weight (``ctx.save_for_backward(input_hp, weight_hp_t)``) and
casts again in backward: no FP8 activations, no cached FP8 weights, but more casts.
``param: true`` is torchao's ``enable_fsdp_float8_all_gather`` (tensorwise, FSDP2 only):
each rank casts its shard before the all-gather (``fsdp_utils.py``
``WeightWithDynamicFloat8CastTensor.fsdp_pre_all_gather``), which then moves 1 byte a
weight; the shards themselves stay in their dtype.
(The rowwise recipe's CUTLASS GEMM is taken at the tensorwise rate: not measured apart.)

Cast kernels are memory-bound: bytes of HBM traffic per element cast, in
:func:`cast_bytes_per_element`.
"""

from __future__ import annotations

from dataclasses import dataclass

TE_RECIPES = ("delayed", "tensorwise", "blockwise", "mxfp8")
TORCHAO_RECIPES = ("tensorwise", "rowwise")
RECIPES = ("delayed", "tensorwise", "rowwise", "blockwise", "mxfp8")
FORMATS = ("hybrid", "e4m3")
AMAX_ALGOS = ("max", "most_recent")
DEFAULT_AMAX_HISTORY_LEN = 1024      # TE DelayedScaling.amax_history_len
# Quantizers per GEMM (base.py set_meta_tensor: num_gemms * 3 forward, * 2 backward)
QUANTIZERS_PER_GEMM = 5
FP32 = 4


@dataclass(frozen=True)
class Fp8Spec:
    """``training.fp8``: FP8 GEMMs (see the module docstring).

    ``recipe``: ``delayed`` | ``tensorwise`` | ``blockwise`` | ``mxfp8`` (Transformer
    Engine's DelayedScaling, Float8CurrentScaling, Float8BlockScaling, MXFP8BlockScaling)
    or ``rowwise`` (torchao); default ``delayed`` for Megatron/TE, ``tensorwise`` for
    torchao. ``format``: ``hybrid`` (E4M3 forward, E5M2 backward) | ``e4m3``; default TE's
    for the recipe. ``amax_history_len`` / ``amax_compute_algo``: delayed scaling only
    (TE defaults 1024 / ``max``). ``param``: primary weights kept in FP8 (TE
    ``fp8_model_init``, Megatron ``--fp8-param-gather``).
    """
    recipe: str = "delayed"
    format: str = "hybrid"
    amax_history_len: int | None = None
    amax_compute_algo: str | None = None
    param: bool = False

    @property
    def history_len(self) -> int:
        """Rows of amax history per quantizer (0 without delayed scaling)."""
        if self.recipe != "delayed":
            return 0
        return self.amax_history_len or DEFAULT_AMAX_HISTORY_LEN

    def to_dict(self) -> dict:
        out = {"recipe": self.recipe, "format": self.format}
        if self.amax_history_len is not None:
            out["amax_history_len"] = self.amax_history_len
        if self.amax_compute_algo is not None:
            out["amax_compute_algo"] = self.amax_compute_algo
        if self.param:
            out["param"] = True
        return out


def default_format(recipe: str) -> str:
    """TE's default format for the recipe (recipe/__init__.py): HYBRID for delayed and
    current scaling, E4M3 for the block recipes; torchao casts forward and backward to E4M3."""
    return "hybrid" if recipe in ("delayed", "tensorwise") else "e4m3"


def block_scale_bytes(recipe: str, weight: bool = False) -> float:
    """Bytes of scale per FP8 element of one layout: blockwise fp32 per 1 x 128 block of
    an activation or gradient and per 128 x 128 block of a weight (TE ``Float8BlockScaling``:
    ``x_block_scaling_dim`` 1, ``w_block_scaling_dim`` 2, ``grad_block_scaling_dim`` 1; the
    DeepSeek-V3 report Sec. 3.3.2 groups weights the same way), one E8M0 byte per 32
    (mxfp8), none stored per element otherwise."""
    if recipe == "blockwise":
        return FP32 / (128 * 128) if weight else FP32 / 128
    return {"mxfp8": 1 / 32}.get(recipe, 0.0)


def cast_bytes_per_element(recipe: str, layouts: int, torchao: bool, act_bytes: int = 2,
                           fused: bool = False) -> float:
    """HBM bytes moved to cast one 16-bit element to FP8 in ``layouts`` layouts (1: row-wise;
    2: row- and column-wise, the transpose Hopper's FP8 GEMMs need for dgrad/wgrad).

    TE: one fused kernel reads the 16-bit value (2) and writes a byte per layout (TE's
    ``cast_transpose``), amax fused in (delayed scaling reads last step's scale; block
    recipes find block amaxes in the kernel); current scaling first reads the tensor once
    more for its amax (+2). Block scales add :func:`block_scale_bytes` per layout.
    torchao eager: each layout is its own amax pass and cast, read 2 + read 2 + write 1 = 5;
    ``fused`` (torch.compile: the cast joins the kernel that produces its input) leaves the
    amax read and the FP8 write, 3.
    """
    if torchao:
        return (3.0 if fused else 5.0) * layouts
    extra = act_bytes if recipe == "tensorwise" else 0.0
    return act_bytes + extra + layouts * (1.0 + block_scale_bytes(recipe))


PER_TENSOR_RECIPES = ("delayed", "tensorwise")


def te_layouts(recipe: str, acc) -> int:
    """FP8 layouts Transformer Engine makes of each GEMM operand: 2 (row-wise for fprop, the
    column-wise transpose for dgrad / wgrad: cuBLAS's FP8 GEMMs are TN only before
    Blackwell), or 1 for the per-tensor recipes on a part whose FP8 GEMMs take any layout
    (``accelerator.fp8_non_tn_gemm``: TE ``pytorch/utils.py`` ``is_non_tn_fp8_gemm_supported``,
    compute capability 10.x or 13+; ``Float8TensorStorage.update_usage`` then serves the
    column-wise usage from the row-wise data and drops the transpose). MXFP8 keeps both:
    its 32-element scale blocks run along the contracted dimension, which differs between
    fprop and wgrad."""
    if recipe in PER_TENSOR_RECIPES and acc is not None and acc.fp8_non_tn_gemm:
        return 1
    return 2


def weight_copy_bytes_per_param(fp8: Fp8Spec, acc=None) -> float:
    """Bytes per Linear weight of TE's FP8 weight copies beyond the primary weight: one FP8
    byte plus block scales per layout of :func:`te_layouts` (2 on Hopper: row-wise and the
    transpose); with FP8 primary weights the primary is the row-wise layout, so one layout
    fewer (the transpose on Hopper, nothing on Blackwell's per-tensor recipes)."""
    per_layout = 1.0 + block_scale_bytes(fp8.recipe, weight=True)
    return per_layout * (te_layouts(fp8.recipe, acc) - (1 if fp8.param else 0))


def scaling_state_bytes_per_gemm(fp8: Fp8Spec) -> float:
    """fp32 scale and amax history of one TE GEMM's 5 quantizers (delayed scaling:
    ``(amax_history_len + 1) * 4 * 5`` bytes; current scaling one amax and one scale each);
    block recipes keep their scales with the tensors (:func:`block_scale_bytes`)."""
    if fp8.recipe == "delayed":
        return (fp8.history_len + 1) * FP32 * QUANTIZERS_PER_GEMM
    if fp8.recipe == "tensorwise":
        return 2 * FP32 * QUANTIZERS_PER_GEMM
    return 0.0


def linear_params_per_layer(m, pc) -> float:
    """Weights of one block that run FP8 GEMMs: the block less its norms (the router's
    small gate included, as in :func:`simulation.step.layer_flops`)."""
    norms = m.block_norms * (2 if m.norm == "layernorm" else 1) * m.hidden_size
    return max(pc.per_layer - norms, 0)


def gemms_per_layer(m) -> int:
    """TE GEMM modules (quantizer groups) in one block: QKV, projection, fc1, fc2; an MoE
    block's experts each have an fc1 and an fc2 (``GroupedLinear``)."""
    return 2 + 2 * max(m.num_experts, 1)


def uses_torchao(tr) -> bool:
    """Whether the FP8 path is torchao's (transformers modules) rather than TE's (Megatron)."""
    return tr.framework != "megatron"
