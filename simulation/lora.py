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

NeMo AutoModel's own LoRA (``nemo_automodel/components/_peft/lora.py``, ``LinearLoRA``,
at AutoModel 507bfb75 and in its 0.2.0 release) patches each targeted ``nn.Linear`` in
place: ``res = F.linear(x, W, b)``; ``lora_res = lora_B(lora_A(x) * scale)``; dropout on
``x`` (``dropout_position`` "pre") or on ``lora_res`` ("post", its default); ``res +
lora_res``. Its adapters take the base weight's dtype (``lora_dtype`` None) and the model
trains in that dtype, with no cast of ``x``: see :func:`adapter_activation_bytes`.

The module names are Llama's (``q_proj`` ... ``down_proj``); ``gate`` needs a gated MLP.
A MoE model's ``gate``/``up``/``down`` are targeted in every expert.

QLoRA (Dettmers et al. 2023, "QLoRA: Efficient Finetuning of Quantized LLMs", Sec. 3)
stores the frozen base's matrices in 4 bits (NF4 or FP4, bitsandbytes ``Linear4bit``) with
one absmax per block, optionally double-quantised, or in int8 (``Linear8bitLt``), and
dequantises them to 16-bit for each matmul: :func:`base_matrices`,
:func:`base_weight_bytes`; the memory parts are :func:`simulation.memory._quantised_base`,
the step's dequantisation kernel ``simulation.compute`` (``dequant``).
"""

from __future__ import annotations

from dataclasses import dataclass

LORA_TARGETS = ("q", "k", "v", "o", "gate", "up", "down", "embeddings")
LAYER_TARGETS = LORA_TARGETS[:-1]
# Whose LoRA forward runs: Hugging Face PEFT's ``LoraModel`` or NeMo AutoModel's
# ``LinearLoRA`` (module docstring); each puts its dropout where :data:`DROPOUT_POSITIONS`
# says by default.
IMPLEMENTATIONS = ("peft", "automodel")
DROPOUT_POSITIONS = ("pre", "post")
# A target's input, by the tensor it is: q, k and v read the first norm's output, gate and
# up the second's; o and down read tensors of their own.
_SHARED_INPUT = {"q": "attn_in", "k": "attn_in", "v": "attn_in", "o": "o", "gate": "mlp_in",
                 "up": "mlp_in", "down": "down"}
# The frozen base's storage: 16-bit as trained ("bf16" / "fp16"), or quantised by
# bitsandbytes for QLoRA: 4-bit NormalFloat or 4-bit float (``Linear4bit``,
# ``bnb_4bit_quant_type`` "nf4" | "fp4") or LLM.int8 (``Linear8bitLt``).
BASE_DTYPES = ("bf16", "fp16", "nf4", "fp4", "int8")
QUANTISED = ("nf4", "fp4", "int8")
# bitsandbytes/functional.py quantize_4bit (0.50.2.dev0): "Valid values are 32, 64, 128,
# 256, 512, 1024, 2048, and 4096", default 64; double quantisation quantises the absmax
# values again with quantize_blockwise(..., blocksize=256) (8-bit, one fp32 absmax per 256).
QUANT_BLOCK_SIZES = (32, 64, 128, 256, 512, 1024, 2048, 4096)
DQ_BLOCK = 256


@dataclass(frozen=True)
class LoraSpec:
    """``training.lora``: ``rank`` (r), ``alpha`` (the update is scaled by alpha / r; no
    effect on memory or time), ``dropout`` (PEFT ``lora_dropout``), ``targets`` (of
    :data:`LORA_TARGETS`, in that order); QLoRA: ``base_dtype`` (of :data:`BASE_DTYPES`;
    None: the training precision's 16-bit weights), ``double_quant`` and
    ``quant_block_size`` (4-bit bases, of :data:`QUANT_BLOCK_SIZES`), and
    ``adapter_dtype`` (None: PEFT's fp32 adapters; bf16/fp16: qlora.py's);
    ``implementation`` (of :data:`IMPLEMENTATIONS`: whose forward runs) and
    ``dropout_position`` (of :data:`DROPOUT_POSITIONS`, AutoModel's ``dropout_position``;
    None: the implementation's own, PEFT "pre" on the input, AutoModel "post" on the
    adapter's output)."""
    rank: int = 8
    alpha: float | None = None
    dropout: float = 0.0
    targets: tuple = ("q", "v")
    # QLoRA (Dettmers et al. 2023): the frozen base's storage dtype (None: the training
    # precision's 16-bit weights), double quantisation of the 4-bit absmax constants and
    # the 4-bit block size (elements per absmax); see :func:`base_weight_bytes`.
    base_dtype: str | None = None
    double_quant: bool = False
    quant_block_size: int = 64
    # The adapters' dtype under torch AMP (DDP / FSDP). None: PEFT's default, fp32
    # (``autocast_adapter_dtype=True``), with the base's unquantised parameters in fp32
    # (``prepare_model_for_kbit_training``). "bf16" / "fp16": the QLoRA paper's
    # ``qlora.py`` (artidoro/qlora at 7f4e95a, ``get_accelerate_model``: LoraLayer,
    # ``embed_tokens`` and ``lm_head`` cast back to bf16 after PEFT, norms kept in fp32):
    # 16-bit adapters and gradients, fp32 optimizer states, no master copy.
    adapter_dtype: str | None = None
    implementation: str = "peft"
    dropout_position: str | None = None

    @property
    def quantised(self) -> bool:
        return self.base_dtype in QUANTISED

    @property
    def dropout_at(self) -> str:
        """Where the adapter's dropout runs: ``"pre"`` (on its input) or ``"post"``."""
        if self.dropout_position is not None:
            return self.dropout_position
        return "post" if self.implementation == "automodel" else "pre"


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


def _targets(m, lora: LoraSpec, tokens: float, tensor_parallel: int):
    """Each targeted matrix of one block as ``(name, tokens it sees, d_in, d_out, count)``,
    ``d_in`` / ``d_out`` over ``tensor_parallel`` (:func:`target_shapes`, :func:`_tokens`)."""
    shapes = target_shapes(m)
    for name in lora.targets:
        if name in shapes:
            d_in, d_out, count = shapes[name]
            yield (name, _tokens(m, name, tokens), d_in / tensor_parallel,
                   d_out / tensor_parallel, count)


def adapter_activation_bytes(m, lora: LoraSpec, tokens: float, act_bytes: int,
                             tensor_parallel: int = 1, mask_bytes: int = 1,
                             o_input_kept: bool = False) -> float:
    """Bytes one block's adapters save for backward, for ``tokens`` = b x s of one
    micro-batch, as PEFT runs them under mixed precision (HF Trainer ``bf16=True``:
    ``torch.autocast``), measured in ``tests/data/saved_tensors_lora_hf.json``.

    PEFT keeps the adapters in fp32 (``autocast_adapter_dtype=True``:
    ``tuners_utils.cast_adapter_dtype`` upcasts bf16/fp16 adapter weights) and casts each
    target's input to that dtype (``lora/layer.py`` ``Linear.forward``:
    ``x = self._cast_input_dtype(x, lora_A.weight.dtype)``, peft 0.20.1.dev0 at 5d602fd);
    autocast then casts it back to 16-bit for ``lora_A``'s matmul, which saves that copy.
    So per targeted matrix, every one its own: the input copy (``tokens x d_in x
    act_bytes``), ``lora_A``'s ``r``-wide output that ``lora_B`` saves (``tokens x r x
    act_bytes``), the 16-bit casts of the two adapter weights that autocast makes for the
    matmuls (``r (d_in + d_out) x act_bytes``); with ``lora_dropout`` > 0 the dropout runs
    on the fp32 copy and keeps its mask (``mask_bytes`` per element: a bool on CUDA, the
    fp32 input's dtype on CPU). ``d_in`` / ``d_out`` are divided by ``tensor_parallel``.

    ``implementation`` "automodel" (NeMo AutoModel's ``LinearLoRA.forward``, module
    docstring; measured in ``tests/data/saved_tensors_lora_automodel.json``): no cast, so
    ``lora_A`` keeps the very tensor the frozen base reads, which a frozen layer keeps for
    nothing else: one ``tokens x d_in x act_bytes`` per distinct input (q, k and v share
    one, gate and up one), plus ``lora_B``'s ``r``-wide input (``tokens x r x act_bytes``)
    per target. Dropout "post" keeps one mask on the ``d_out``-wide adapter output per
    target; "pre" gives each target a dropped copy of its input (``act_bytes``) and a mask
    on it, which ``lora_A`` keeps instead of the input. ``o_input_kept``: the
    out-projection's input is a tensor the layer keeps anyway (FlashAttention's output,
    ``simulation.activations._hf_attention``), so ``o``'s adds no copy of it.
    """
    if lora.implementation == "automodel":
        return _automodel_activation_bytes(m, lora, tokens, act_bytes, tensor_parallel,
                                           mask_bytes, o_input_kept)
    total = 0.0
    for _, n, d_in, d_out, count in _targets(m, lora, tokens, tensor_parallel):
        per = n * (d_in + lora.rank) * act_bytes + lora.rank * (d_in + d_out) * act_bytes
        if lora.dropout > 0:
            per += n * d_in * mask_bytes
        total += count * per
    return total


def _automodel_activation_bytes(m, lora: LoraSpec, tokens: float, act_bytes: int,
                                tensor_parallel: int, mask_bytes: int,
                                o_input_kept: bool) -> float:
    """:func:`adapter_activation_bytes` of NeMo AutoModel's ``LinearLoRA``."""
    dropout = lora.dropout > 0
    pre = dropout and lora.dropout_at == "pre"
    inputs: dict = {}
    total = 0.0
    for t, n, d_in, d_out, count in _targets(m, lora, tokens, tensor_parallel):
        per = n * lora.rank * act_bytes
        if pre:       # its own dropped copy and mask; the input itself is not kept
            per += n * d_in * (act_bytes + mask_bytes)
        else:
            if not (t == "o" and o_input_kept):
                inputs[_SHARED_INPUT[t]] = count * n * d_in * act_bytes
            if dropout:
                per += n * d_out * mask_bytes
        total += count * per
    return total + sum(inputs.values())


def adapter_elementwise_elements(m, lora: LoraSpec, tokens: float, tensor_parallel: int = 1,
                                 compiled: bool = False, casts: bool = True) -> tuple:
    """``(forward, backward)``: 16-bit elements one block's adapters' element-wise kernels
    read plus write for ``tokens`` tokens (the unit of ``simulation.compute.PASSES``: an
    fp32 element counts 2, a 1-byte dropout mask 0.5); the adapters' GEMMs are apart
    (:func:`adapter_gemms`). Per targeted matrix, ``d_in`` / ``d_out`` over
    ``tensor_parallel``:

    * NeMo AutoModel (``LinearLoRA.forward``; measured in
      ``tests/data/lora_elementwise_automodel.json``): ``lora_A(x) * scale`` (read and
      write r), ``res + lora_res`` (read two, write one of d_out); backward the scale's
      gradient (2 r) and autograd's sum of x's two gradients, the base's and lora_A's
      (3 d_in). torch.compile (``compiled``) fuses the add with a post-dropout.
    * PEFT (``tuners/lora/layer.py`` ``Linear.forward``, peft 0.21.2: ``x =
      self._cast_input_dtype(x, lora_A.weight.dtype)``; ``result = result +
      lora_B(lora_A(dropout(x))) * scaling``) with fp32 adapters under autocast
      (``casts``): x to fp32 (read 2 B, write 4 B: 3) and autocast's cast back for
      lora_A (3), the product by ``scaling`` (2 d_out) and the sum (3 d_out); backward
      the two casts' gradients (3 + 3 d_in), the product's (2 d_out) and the sum of x's
      gradients (3 d_in). Without ``casts`` (16-bit adapters) the casts are no-ops.
    * dropout (CUDA ``native_dropout``: read, write, a 1-byte mask: 2.5 passes of its
      tensor each way; on an fp32 input 4.5): on the input ("pre", per target) or on
      the adapter's output ("post", AutoModel).
    """
    r = lora.rank
    dropout = lora.dropout > 0
    pre, post = dropout and lora.dropout_at == "pre", dropout and lora.dropout_at == "post"
    fwd = bwd = 0.0
    for _, n, d_in, d_out, count in _targets(m, lora, tokens, tensor_parallel):
        if lora.implementation == "automodel":
            f = 2 * r + 3 * d_out + (0.5 if compiled else 2.5) * d_out * post
            b = 2 * r + 3 * d_in + 2.5 * d_out * post
            drop = 2.5
        else:
            cast = 3 * d_in if casts else 0.0
            f = 2 * cast + 5 * d_out
            b = 2 * cast + 2 * d_out + 3 * d_in
            drop = 4.5 if casts else 2.5
        f += drop * d_in * pre
        b += drop * d_in * pre
        fwd += n * count * f
        bwd += n * count * b
    return fwd, bwd


def adapter_tensors(m, lora: LoraSpec, tensor_parallel: int = 1) -> list:
    """Every adapter weight of the model as ``(elements, count)``: ``lora_A`` (``r x
    d_in``) and ``lora_B`` (``d_out x r``) per targeted matrix and layer, the embedding's
    ``r x vocab`` and ``h x r``; widths divided by ``tensor_parallel``."""
    shapes = target_shapes(m)
    out = []
    for t in lora.targets:
        if t in shapes:
            d_in, d_out, c = shapes[t]
            n = c * m.num_layers
            out += [(lora.rank * d_in / tensor_parallel, n), (lora.rank * d_out / tensor_parallel, n)]
    if "embeddings" in lora.targets:
        out += [(lora.rank * (m.vocab_size or 0), 1), (lora.rank * m.hidden_size, 1)]
    return out


def base_matrices(m) -> list:
    """The frozen base's matrices of one block that bitsandbytes quantises, ``(d_in,
    d_out, count)``: every ``nn.Linear`` of the block (transformers
    ``replace_with_bnb_linear`` converts each ``nn.Linear`` but ``modules_to_not_convert``,
    which ``get_keys_to_not_convert`` fills with the output head): q, k, v, o, the MLP's
    (gate only with a gated MLP; per expert) and a MoE router (h -> experts). Embeddings,
    the head, norms and biases stay unquantised."""
    shapes = target_shapes(m)
    out = [shapes[t] for t in ("q", "k", "v", "o")]
    out += [shapes[t] for t in (("gate", "up", "down") if m.gated_mlp else ("up", "down"))]
    if m.num_experts > 1:
        out.append((m.hidden_size, m.num_experts, 1))
    return out


def quantised_elements(m) -> int:
    """Weight elements of one block that a quantised base stores in 4 or 8 bits."""
    return sum(int(d_in * d_out * c) for d_in, d_out, c in base_matrices(m))


def base_weight_bytes(m, lora: LoraSpec) -> dict:
    """Bytes per quantised element of one block's frozen matrices, by part.

    ``nf4`` / ``fp4`` (bitsandbytes ``Params4bit`` / ``quantize_4bit``): two 4-bit codes a
    byte (0.5 B); one fp32 absmax per ``quant_block_size`` elements (4 / B B); with
    ``double_quant`` (``compress_statistics``) the absmax values are quantised again to
    8 bits in blocks of 256 with one fp32 absmax each: 1 / B + 4 / (256 B). At B = 64:
    0.5 bits and 8/64 + 32/(64 x 256) = 0.127 bits per parameter (Dettmers et al. 2023
    Sec. 3, "Double Quantization"). ``int8`` (``Int8Params``: ``int8_vectorwise_quant``):
    1 B a weight and one fp32 scale (``SCB``) per output row (4 / d_in a weight, averaged
    over the block's matrices). Returns ``{"weights": B/elem, "constants": B/elem}``; the
    per-tensor codebook (256 fp32 values) and offset are left out (1 KiB a matrix).
    """
    if lora.base_dtype == "int8":
        rows = sum(d_out * c for _, d_out, c in base_matrices(m))
        return {"weights": 1.0, "constants": 4.0 * rows / quantised_elements(m)}
    b = lora.quant_block_size
    const = (1.0 / b + 4.0 / (DQ_BLOCK * b)) if lora.double_quant else 4.0 / b
    return {"weights": 0.5, "constants": const}


def largest_base_matrix(m) -> int:
    """Elements of the largest quantised matrix (the dequantised 16-bit copy that
    bitsandbytes makes per Linear at a time)."""
    return int(max(d_in * d_out for d_in, d_out, _ in base_matrices(m)))


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
    r = lora.rank
    return [g for _, n, d_in, d_out, count in _targets(m, lora, tokens, tensor_parallel)
            for g in ((n, r, d_in, count), (n, d_out, r, count))]
