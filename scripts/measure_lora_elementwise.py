"""Count the bytes LoRA's element-wise kernels move, forward and backward, one Linear at a time.

``scripts/dispatch_bytes.py``'s ``ByteCounter`` (a ``TorchDispatchMode``) adds up the
bytes each element-wise aten op of a forward and of ``backward(grad)`` reads and writes
(the autograd engine's gradient sums included; GEMMs, views and allocations left out). Run on a
frozen bf16 ``nn.Linear`` whose input requires grad, alone and with NeMo AutoModel's
``LinearLoRA`` patched in (``nemo_automodel.components._peft.lora.patch_linear_module``,
``use_triton=False`` as with Transformer Engine installed); the difference is what the
adapter's element-wise work costs in eager PyTorch (one kernel per op, as on the GPU).

Dropout differs on the CPU (``_dropout_impl``: ``bernoulli_``, ``div_``, ``mul``) from
CUDA's fused ``native_dropout`` (read x, write y and a 1-byte mask; backward read the
gradient and the mask, write one), so the points here are without dropout; the engine's
dropout terms count CUDA's kernel (``simulation/lora.py adapter_elementwise_elements``).

Needs torch and nemo-automodel 0.2.0 (see ``scripts/measure_saved_tensors_lora_automodel.py``)::

    PYTHONPATH=/some/dir python scripts/measure_lora_elementwise.py \
        --out tests/data/lora_elementwise_automodel.json

It is a tool, not a test: ``tests/engine/test_lora_automodel.py`` reads the JSON.
"""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import nemo_automodel  # noqa: E402
import torch  # noqa: E402
from nemo_automodel.components._peft.lora import patch_linear_module  # noqa: E402
import dispatch_bytes  # noqa: E402
from dispatch_bytes import ByteCounter  # noqa: E402

def run(p: dict) -> dict:
    torch.manual_seed(0)
    lin = torch.nn.Linear(p["d_in"], p["d_out"], bias=False, dtype=torch.bfloat16)
    lin.weight.requires_grad_(False)
    if p["lora"]:
        patch_linear_module(lin, dim=p["r"], alpha=2 * p["r"], dropout=0.0, use_triton=False)
        for n, w in lin.named_parameters():
            w.requires_grad_("lora_" in n)
    x = torch.randn(p["tokens"], p["d_in"], dtype=torch.bfloat16, requires_grad=True)
    # x's gradient comes from the base's data-gradient GEMM and, with LoRA, from lora_A's:
    # autograd adds the two (its InputBuffer accumulation), as in a model
    g = torch.randn(p["tokens"], p["d_out"], dtype=torch.bfloat16)
    with ByteCounter() as fwd:
        y = lin(x)
    with ByteCounter() as bwd:
        y.backward(g)
    return {"config": p, "forward_bytes": fwd.bytes, "backward_bytes": bwd.bytes,
            "forward_ops": fwd.ops, "backward_ops": bwd.ops}


def points(attn: str = "eager") -> list[dict]:
    out = []
    for d_in, d_out, r in ((256, 256, 8), (256, 688, 8), (688, 256, 16)):
        for lora in (False, True):
            out.append(dict(tokens=128, d_in=d_in, d_out=d_out, r=r, lora=lora))
    return out


WHAT = ("bytes read plus written by element-wise aten ops (GEMMs, views and "
        "allocations left out) in the forward and backward of one frozen bf16 "
        "Linear, alone and with NeMo AutoModel's LinearLoRA; see "
        "scripts/measure_lora_elementwise.py")


def main():
    versions = {"torch": torch.__version__, "nemo_automodel": nemo_automodel.__version__}
    dispatch_bytes.main(__doc__, WHAT, versions, run, points)


if __name__ == "__main__":
    main()
