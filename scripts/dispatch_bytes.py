"""Bytes moved by the element-wise aten ops of a forward or backward, as one GPU kernel each.

``ByteCounter`` is a ``TorchDispatchMode``: every aten op dispatched while it is active
(the autograd engine's gradient sums included) adds the bytes of its tensor inputs (read)
and outputs (written), except the GEMMs (``mm``, ``addmm``, ``bmm``) and SDPA's fused
attention kernels, ops that move no
data (views, ``t``, ``detach``) and allocations. Used by ``measure_lora_elementwise.py``
and ``measure_eager_passes.py``; :func:`main` is their shared command line.
"""

from __future__ import annotations

import argparse
import json
import platform

import torch
from torch.utils._python_dispatch import TorchDispatchMode

aten = torch.ops.aten
GEMMS = {aten.mm.default, aten.addmm.default, aten.bmm.default}
# SDPA's fused kernels are the attention core, timed apart (simulation/compute.py's flash rate)
for _name in ("_scaled_dot_product_flash_attention_for_cpu", "_scaled_dot_product_flash_attention_for_cpu_backward",
              "_scaled_dot_product_flash_attention", "_scaled_dot_product_flash_attention_backward",
              "_scaled_dot_product_efficient_attention", "_scaled_dot_product_efficient_attention_backward"):
    if hasattr(aten, _name):
        GEMMS.add(getattr(aten, _name).default)
NO_DATA = {aten.t.default, aten.view.default, aten._unsafe_view.default, aten.detach.default,
           aten.transpose.int, aten.expand.default, aten.alias.default, aten.as_strided.default,
           aten.reshape.default, aten.empty.memory_format, aten.empty_like.default,
           aten.empty_strided.default, aten.slice.Tensor, aten.squeeze.dim, aten.squeeze.default,
           aten.unsqueeze.default, aten.select.int, aten.permute.default, aten.split.Tensor,
           aten.split_with_sizes.default, aten.unbind.int}


def _tensors(x):
    if isinstance(x, torch.Tensor):
        yield x
    elif isinstance(x, (list, tuple)):
        for y in x:
            yield from _tensors(y)
    elif isinstance(x, dict):
        for y in x.values():
            yield from _tensors(y)


class ByteCounter(TorchDispatchMode):
    """Bytes read plus written by the element-wise ops dispatched while active."""

    def __init__(self):
        super().__init__()
        self.bytes = 0
        self.ops: dict[str, int] = {}

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        if func in GEMMS or func in NO_DATA:
            return out
        moved = sum(t.numel() * t.element_size() for t in _tensors((args, kwargs)))
        moved += sum(t.numel() * t.element_size() for t in _tensors(out))
        self.bytes += moved
        self.ops[str(func)] = self.ops.get(str(func), 0) + moved
        return out


def main(doc: str, what: str, versions: dict, run, points) -> None:
    """``--out FILE [--attn eager|sdpa]``: ``run(p)`` for each of ``points(attn)`` on one
    thread, written as JSON with ``what``, the ``versions`` (Python's added) and the device
    (the CPU, bf16)."""
    ap = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--attn", choices=("eager", "sdpa"), default="eager",
                    help="transformers' attention implementation (sdpa: transformers >= 4.48)")
    a = ap.parse_args()
    torch.set_num_threads(1)
    data = {"what": what, "versions": {**versions, "python": platform.python_version()},
            "device": "cpu", "dtype": "bfloat16", "cases": [run(p) for p in points(a.attn)]}
    with open(a.out, "w") as f:
        json.dump(data, f, indent=1, sort_keys=True)
        f.write("\n")
