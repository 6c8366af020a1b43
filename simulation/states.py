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
=============  =================================  ======================

In pure fp32 training there is no separate master copy (the parameters are fp32).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from .fields import made_once

_OPT_STATE_BYTES = {"adam": 8, "adamw": 8, "adam_8bit": 2, "sgd_momentum": 4, "adafactor": 0}
_DTYPE_BYTES = {"bf16": 2, "fp16": 2, "fp32": 4}


@dataclass(frozen=True)
class StateBytes:
    """Bytes per parameter: low-precision params and grads, fp32 master, optimizer."""
    params: int
    grads: int
    master_weights: int
    optimizer_states: int

    @property
    def k(self) -> int:
        """ZeRO's K: bytes of optimizer-held state per parameter (master + moments)."""
        return self.master_weights + self.optimizer_states

    @property
    def total(self) -> int:
        return self.params + self.grads + self.k

    def to_dict(self) -> dict:
        return made_once(self, lambda b: dict(          # state_bytes hands out shared ones
            params=b.params, grads=b.grads, master_weights=b.master_weights,
            optimizer_states=b.optimizer_states, k=b.k, total=b.total))


@lru_cache(maxsize=64)
def state_bytes(precision: str, optimizer: str) -> StateBytes:
    """Bytes per parameter for ``precision`` (bf16/fp16/fp32) and ``optimizer``."""
    p = _DTYPE_BYTES[precision]
    master = 0 if precision == "fp32" else 4
    return StateBytes(params=p, grads=p, master_weights=master,
                      optimizer_states=_OPT_STATE_BYTES[optimizer])
