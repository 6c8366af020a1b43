"""Bytes per parameter of each model state, as explicit choices.

ZeRO (Rajbhandari et al., SC'20, Sec. 3.1) counts mixed-precision Adam as 2 (fp16
parameters) + 2 (fp16 gradients) + K = 12 (fp32 master weights, Adam momentum and
variance): 16 bytes per parameter. K is a property of the optimizer and precision, not a
constant:

=============  =================================  ======================
optimizer      optimizer states (bytes/param)      master weights (mixed)
=============  =================================  ======================
adam / adamw   8 (fp32 m, v)                       4
adam_8bit      2 (int8 m, v; Dettmers et al. 2022) 4
sgd_momentum   4 (fp32 momentum)                   4
adafactor      ~0 (factored 2nd moment, no m)      4
paged_adamw    8 (fp32 m, v in unified memory)     4
paged_adamw_8bit 2 (int8 m, v in unified memory)   4
=============  =================================  ======================

The paged optimizers are bitsandbytes' ``PagedAdamW`` / ``PagedAdamW8bit``
(``bitsandbytes/optim/optimizer.py``: ``get_state_buffer`` allocates the states with
``F.get_paged``, CUDA unified memory, when ``is_paged``; QLoRA Sec. 3 "Paged
Optimizers"): the same bytes as AdamW / 8-bit AdamW, but the driver evicts their pages
to host RAM when the GPU runs short and pages them back for the update, so they need
HBM only in the optimizer step (:mod:`simulation.memory` puts them in that phase).

In pure fp32 training there is no separate master copy (the parameters are fp32).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from .fields import made_once

DTYPE_BYTES = {"fp32": 4, "bf16": 2, "fp16": 2, "fp8": 1, "int8": 1}
# Moments an optimizer keeps per parameter (Adam: m and v; SGD: momentum; Adafactor's
# factored second moment is O(rows + cols), counted as none).
OPTIMIZER_MOMENTS = {"adam": 2, "adamw": 2, "adam_8bit": 2, "sgd_momentum": 1, "adafactor": 0,
                     "paged_adamw": 2, "paged_adamw_8bit": 2}
PAGED_OPTIMIZERS = ("paged_adamw", "paged_adamw_8bit")
STATE_DTYPES = ("params", "grads", "master_weights", "optimizer_states")


@dataclass(frozen=True)
class StateDtypes:
    """The dtype of each training state, as a scenario gives it (``training.dtypes``).

    ``params``: the weights the forward uses (``bf16`` | ``fp16`` | ``fp32``);
    ``grads``: the gradients as kept, accumulated and reduced (``None``: as the framework
    does by default, see :mod:`simulation.memory`); ``master_weights``: ``fp32`` or ``none``
    (pure 16-bit training updates the 16-bit weights in place); ``optimizer_states``:
    ``fp32`` | ``bf16`` | ``int8`` per moment; ``kahan_summation``: a 16-bit compensation
    buffer per parameter for pure-bf16 updates (Zamirai et al. 2020, "Revisiting BFloat16
    Training"). Absent values follow ``precision`` and ``optimizer``.
    """
    params: str | None = None
    grads: str | None = None
    master_weights: str | None = None
    optimizer_states: str | None = None
    kahan_summation: bool = False


@dataclass(frozen=True)
class StateBytes:
    """Bytes per parameter of each state, and the dtype names they come from."""
    params: float
    grads: float
    master_weights: float
    optimizer_states: float
    params_dtype: str = "bf16"
    grads_dtype: str = "bf16"
    master_dtype: str = "fp32"
    optimizer_dtype: str = "fp32"
    grads_explicit: bool = False       # the scenario named the gradient dtype

    @property
    def k(self) -> float:
        """ZeRO's K: bytes of optimizer-held state per parameter (master + moments)."""
        return self.master_weights + self.optimizer_states

    @property
    def total(self) -> float:
        return self.params + self.grads + self.k

    def to_dict(self) -> dict:
        return made_once(self, lambda b: dict(          # state_bytes hands out shared ones
            params=b.params, grads=b.grads, master_weights=b.master_weights,
            optimizer_states=b.optimizer_states, k=b.k, total=b.total,
            dtypes=dict(params=b.params_dtype, grads=b.grads_dtype,
                        master_weights=b.master_dtype, optimizer_states=b.optimizer_dtype)))


@lru_cache(maxsize=256)
def state_bytes(precision: str, optimizer: str, dtypes: StateDtypes | None = None) -> StateBytes:
    """Bytes per parameter for ``precision`` (bf16/fp16/fp32), ``optimizer`` and the
    scenario's explicit ``dtypes`` (any of them may be absent: defaults as in the table)."""
    d = dtypes or StateDtypes()
    pdt = d.params or precision
    gdt = d.grads or pdt
    mdt = d.master_weights or ("none" if pdt == "fp32" else "fp32")
    odt = d.optimizer_states or ("int8" if optimizer in ("adam_8bit", "paged_adamw_8bit") else "fp32")
    moments = OPTIMIZER_MOMENTS[optimizer] * DTYPE_BYTES[odt]
    if d.kahan_summation:
        moments += DTYPE_BYTES[pdt]
    return StateBytes(params=DTYPE_BYTES[pdt], grads=DTYPE_BYTES[gdt],
                      master_weights=0 if mdt == "none" else DTYPE_BYTES[mdt],
                      optimizer_states=moments, params_dtype=pdt, grads_dtype=gdt,
                      master_dtype=mdt, optimizer_dtype=odt, grads_explicit=d.grads is not None)
