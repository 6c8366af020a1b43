"""ZeRO-Infinity's bandwidth analysis: how fast must an offload tier be?

Source: Rajbhandari et al., "ZeRO-Infinity: Breaking the GPU Memory Wall for Extreme
Scale Deep Learning", SC'21, Sec. 4.1-4.2. With per-GPU batch ``bsz``, sequence ``seq``,
hidden ``hd`` and an activation checkpoint every ``ci`` layers, the arithmetic
intensity (FLOPs per byte moved to and from the tier) is

    parameters and gradients    AIT = seq * bsz
    optimizer states            AIT = seq * bsz * gas / 4
    activation checkpoints      AIT = 24 * hd * ci

where ``bsz`` is the micro-batch (parameters and gradients move once per forward and
backward of each micro-batch) and ``gas`` the gradient-accumulation steps: the optimizer
states move once per iteration (Sec. 4.1: "read and updated at least once per
iteration"), while its compute is every micro-batch's, so accumulation raises their AIT.

and training efficiency at bandwidth ``bw`` (bytes/s) and achievable FLOP/s ``peak``
is ``AIT * bw / (AIT * bw + peak)``. The bandwidth for a target efficiency e is
``e * peak / ((1 - e) * AIT)``.
"""

from __future__ import annotations

import numpy as np


def intensities(seq: int, bsz: int, hidden: int, ci: int = 1, gas: int = 1) -> dict:
    """FLOPs per byte moved of each kind of state (module docstring): ``bsz`` the
    micro-batch, ``gas`` the gradient-accumulation steps of an iteration."""
    return {"params_grads": float(seq * bsz), "optimizer_states": seq * bsz * gas / 4.0,
            "activations": 24.0 * hidden * ci}


def efficiency(ait: float, bw: np.ndarray | float, peak: float):
    bw = np.asarray(bw, dtype=float)
    return ait * bw / (ait * bw + peak)


def bandwidth_for(ait: float, target: float, peak: float) -> float:
    return target * peak / ((1 - target) * ait)


def analysis(seq: int, bsz: int, hidden: int, peak_flops: float, tiers: dict,
             target: float = 0.9, points: int = 40, gas: int = 1) -> dict:
    """Efficiency curves over 1 GB/s..10 TB/s and where each tier of this node stands.

    ``tiers``: name -> per-GPU bandwidth (bytes/s) of this node's DDR, CXL, NVMe; ``bsz``
    the micro-batch, ``gas`` the gradient-accumulation steps (``intensities``).
    """
    bw = _bandwidths(points)
    out = {"bandwidth_bytes_per_s": list(bw), "target_efficiency": target,
           "achievable_flops": peak_flops, "curves": {}, "tiers": []}
    # Plain floats: +, * and / round as numpy's float64 do, without numpy's per-call cost
    # on 40 points (the same values as ``efficiency``).
    pk = float(peak_flops)
    for name, ait in intensities(seq, bsz, hidden, gas=gas).items():
        out["curves"][name] = {"arithmetic_intensity": ait,
                               "efficiency": [ait * b / (ait * b + pk) for b in bw],
                               "bandwidth_needed_bytes_per_s": bandwidth_for(ait, target, peak_flops)}
    for tier, tbw in tiers.items():
        tbw_f = float(tbw)
        out["tiers"].append({"tier": tier, "bytes_per_s": tbw, "efficiency": {
            k: c["arithmetic_intensity"] * tbw_f / (c["arithmetic_intensity"] * tbw_f + pk)
            for k, c in out["curves"].items()}})
    return out


_BANDWIDTHS: dict = {}


def _bandwidths(points: int) -> tuple:
    """``np.logspace(9, 13, points)`` as a tuple of floats, computed once per ``points``."""
    bw = _BANDWIDTHS.get(points)
    if bw is None:
        bw = _BANDWIDTHS[points] = tuple(np.logspace(9, 13, points).tolist())
    return bw
