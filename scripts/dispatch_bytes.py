"""Bytes moved by the element-wise aten ops of a forward or backward, as one GPU kernel each.

``ByteCounter`` is a ``TorchDispatchMode``: every aten op dispatched while it is active
(the autograd engine's gradient sums included) adds the bytes of its tensor inputs (read)
and outputs (written), except the GEMMs (``mm``, ``addmm``, ``bmm``), ops that move no
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
    """``--out FILE``: ``run(p)`` for each of ``points()`` on one thread, written as JSON with
    ``what``, the ``versions`` (Python's added) and the device (the CPU, bf16)."""
    ap = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    torch.set_num_threads(1)
    data = {"what": what, "versions": {**versions, "python": platform.python_version()},
            "device": "cpu", "dtype": "bfloat16", "cases": [run(p) for p in points()]}
    with open(a.out, "w") as f:
        json.dump(data, f, indent=1, sort_keys=True)
        f.write("\n")
