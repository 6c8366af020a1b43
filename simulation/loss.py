"""Memory of the output layer's loss: the logits and the cross-entropy around them.

At the end of forward and at the start of backward a language model holds, beside every
stored activation, a tensor of ``tokens x vocab`` (or ``vocab / t`` with a vocab-parallel
head): at 32k tokens and a 152k vocabulary one fp32 copy is 20 GB. How many copies are
live depends on the stack, so it is a training setting (``training.loss_kernel``):

``torch`` (plain PyTorch / Hugging Face ``ForCausalLMLoss``)
    transformers ``loss/loss_utils.py`` upcasts the logits (``logits.float()``) and calls
    ``F.cross_entropy``, which is ``log_softmax`` (saves its fp32 output for backward) then
    ``nll_loss``. Forward: 16-bit logits 2 + fp32 copy 4 + log-probabilities 4 = 10 B per
    element. Backward of ``nll_loss`` makes a dense fp32 gradient (4) and
    ``_log_softmax_backward_data`` writes another (4) while the saved output (4) is still
    held: **12 B per element**, the larger of the two, at the start of backward.
``megatron_vocab_parallel``
    Megatron-LM ``core/tensor_parallel/cross_entropy.py`` (``_VocabParallelCrossEntropy``)
    takes ``logits.float()`` and turns it into the softmax in place (max subtracted,
    ``exp`` in place, divided in place), saves that one buffer and writes the gradient into
    it in backward: the 16-bit logits 2 + one fp32 buffer 4 = **6 B per element**, over
    ``vocab / t`` on each tensor-parallel rank.
``fused_linear_cross_entropy`` (Liger kernel's ``LigerFusedLinearCrossEntropyLoss``,
    chunked losses)
    never materializes the logits: the head's matmul, softmax and gradient run chunk by
    chunk. Liger sizes a chunk so that its logits have about ``tokens x hidden`` elements
    (``chunk_size = next_power_of_2(ceil(BT / ceil(V / H)))``, Liger
    ``ops/fused_linear_cross_entropy.py``), held as 16-bit logits and fp32 gradient (6 B
    per element), plus the gradient of the head's input computed during forward (2 B per
    ``tokens x hidden``): ``8 * tokens * hidden`` bytes.

Gemma 2 caps the logits first (``final_logit_softcapping``: ``tanh`` keeps its 16-bit
output): 2 B more per element with ``torch`` (:func:`softcap_bytes_per_logit`).

fp32 training (``act_bytes`` 4): the upcasts are no-ops. ``torch`` still peaks at 12 B
(saved fp32 output and two fp32 gradients); Megatron's in-place buffer is the logits
themselves, **4 B**; Liger's chunk holds fp32 logits and gradient and the head input's
gradient is fp32: ``(2 * 4 + 4) * tokens * hidden``.
"""

from __future__ import annotations

LOSS_KERNELS = ("torch", "megatron_vocab_parallel", "fused_linear_cross_entropy")

# Bytes per logit element live at the loss's peak (see the module docstring).
_BYTES_PER_LOGIT = {"torch": 12.0, "megatron_vocab_parallel": 6.0}


def loss_bytes(kernel: str, tokens: float, vocab: int, hidden: int,
               tensor_parallel: int = 1, act_bytes: int = 2, final_softcap: bool = False) -> float:
    """Peak bytes of the logits and cross-entropy on one GPU of the last pipeline stage.

    ``tokens`` = micro batch x sequence length (per GPU), ``vocab`` the vocabulary,
    ``hidden`` the model width; a tensor-parallel head splits the vocabulary over
    ``tensor_parallel`` ranks; ``act_bytes`` is the bytes of the model's activations (2 for
    bf16/fp16 training, 4 for fp32). Raises ValueError for an unknown kernel (the scenario
    checks the name first).
    """
    if kernel == "fused_linear_cross_entropy":
        return (2.0 * act_bytes + 4) * tokens * hidden / tensor_parallel
    try:
        per = _BYTES_PER_LOGIT[kernel]
    except KeyError:
        raise ValueError(f"unknown loss kernel {kernel!r}") from None
    if kernel == "megatron_vocab_parallel" and act_bytes >= 4:
        per = 4.0                      # the fp32 logits are the in-place softmax buffer
    if final_softcap and kernel == "torch":
        per += softcap_bytes_per_logit(act_bytes)
    return per * tokens * vocab / tensor_parallel


def softcap_bytes_per_logit(act_bytes: int = 2) -> float:
    """What final-logit soft-capping adds per logit at the loss's peak (``torch`` kernel).

    transformers ``Gemma2ForCausalLM.forward`` (gemma2/modeling_gemma2.py): ``logits /
    cap; torch.tanh; * cap`` before the loss. ``tanh`` keeps its output (the logits' dtype)
    for backward, and it is live until the head's backward reaches it, after the
    cross-entropy's fp32 buffers: ``act_bytes`` per logit on top of the 12. Measured as a
    saved tensor (``tests/data/saved_tensors_hf_families.json``, the gemma2 output-stage
    points: 2 B per logit more than without soft-capping); the other kernels take the cap
    inside (Liger's fused linear cross-entropy ``softcap``) or are not used with it."""
    return float(act_bytes)
