"""Bytes moved by the element-wise aten ops of a forward or backward, as one GPU kernel each.

``ByteCounter`` is a ``TorchDispatchMode``: every aten op dispatched while it is active
(the autograd engine's gradient sums included) adds the bytes of its tensor inputs (read)
and outputs (written), except the GEMMs (``mm``, ``addmm``, ``bmm``), ops that move no
data (views, ``t``, ``detach``) and allocations. Used by ``measure_lora_elementwise.py``
and ``measure_eager_passes.py``.
"""

from __future__ import annotations

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
