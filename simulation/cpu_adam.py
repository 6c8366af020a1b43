"""CPU-Adam as compute: how fast the host's cores run the optimizer step of ZeRO-Offload
and ZeRO-Infinity, and whether they or DDR bind.

DeepSpeed's CPU-Adam (``csrc/includes/cpu_adam.h``, ``Adam_Optimizer::Step_AVX``) walks the
parameters in SIMD vectors of ``SIMD_WIDTH`` fp32 lanes (``csrc/includes/simd.h``: 16 with
``__AVX512__``, 8 with ``__AVX256__``; ``op_builder/cpu_adam.py`` compiles for the widest
the host has), OpenMP-parallel over the cores bound to the rank (``#pragma omp parallel
for``; the launcher's ``--bind_cores_to_rank`` gives each local rank an equal share of
the node's cores). Per parameter it loads the gradient, m, v and the fp32 weight and
stores the weight, m, v and the 16-bit copy for the GPU: 30 bytes of DDR traffic
(``stepgraph.ADAM_BYTES_PER_PARAM``).

Rate per core: Ren et al., "ZeRO-Offload: Democratizing Billion-Scale Model Training",
USENIX ATC'21, Sec. 6 (CPU-Adam evaluation), Table 3: CPU-Adam updates 10 billion
parameters in 2.57 s on a DGX-2 host, 2x Intel Xeon Platinum 8168 (2 x 24 cores,
AVX-512): 10e9 / 2.57 / 48 = 8.1e7 parameters per second per core. At that rate the
host moves 10e9 x 30 B / 2.57 s = 117 GB/s, under half of its 2 x 6 channels of
DDR4-2666 (256 GB/s): the figure is the cores', not the memory's. With AVX2 a vector
holds half the lanes, so half the rate (the same loop, 8 lanes an instruction).

The optimizer phase runs at the lower of the two per GPU: cores x rate (compute) and the
GPU's DDR share / 30 B (memory); the scheduler puts CPU-Adam's bytes over both the
``ddr`` link and a ``cpu_adam`` link of cores x rate x 30 B/s, so contention on DDR is
seen too.
"""

from __future__ import annotations

from .errors import ScenarioError
from .units import plural

# Ren et al. 2021 Table 3 (CPU-Adam, 10 B parameters: 2.57 s) on 2 x 24 AVX-512 cores.
_TABLE3_PARAMS, _TABLE3_S, _TABLE3_CORES = 10e9, 2.57, 48
CPU_ADAM_PARAMS_PER_S_PER_CORE_AVX512 = _TABLE3_PARAMS / _TABLE3_S / _TABLE3_CORES
# fp32 lanes of a vector (DeepSpeed csrc/includes/simd.h SIMD_WIDTH)
SIMD_WIDTH_FP32 = {"avx512": 16, "avx2": 8}
_ISA_WORDS = {"avx512": "AVX-512", "avx2": "AVX2"}
ADAM_BYTES_PER_PARAM = 30.0        # as stepgraph.ADAM_BYTES_PER_PARAM (read 16 B, write 14 B)


def params_per_s_per_core(isa: str) -> float:
    """CPU-Adam parameters per second one core updates with vector ISA ``isa``."""
    return CPU_ADAM_PARAMS_PER_S_PER_CORE_AVX512 * SIMD_WIDTH_FP32[isa] / SIMD_WIDTH_FP32["avx512"]


def cores_per_gpu(cluster, strategy) -> float | None:
    """Cores each rank's CPU-Adam runs on: ``strategy.cpu_optimizer_cores_per_gpu`` when
    set, else an equal share of the node's ``cpu_cores`` (DeepSpeed
    ``--bind_cores_to_rank``); None when the node does not say how many cores it has."""
    if strategy.cpu_optimizer_cores_per_gpu is not None:
        return float(strategy.cpu_optimizer_cores_per_gpu)
    if not cluster.cpu_cores:
        return None
    return cluster.cpu_cores / cluster.gpus_per_node


def check_cores(cluster, strategy) -> None:
    """ScenarioError when the optimizer is given more cores per GPU than the node has."""
    want = strategy.cpu_optimizer_cores_per_gpu
    if want is not None and cluster.cpu_cores and want * cluster.gpus_per_node > cluster.cpu_cores:
        raise ScenarioError("strategy.cpu_optimizer_cores_per_gpu",
                            f"{plural(want, 'core')} for each of {plural(cluster.gpus_per_node, 'GPU')} exceeds the "
                            f"node's {cluster.cpu_cores} cores (cluster.cpu_cores)")


def adam_bytes_per_s(cluster, strategy) -> float | None:
    """DDR bytes per second one rank's cores can drive through CPU-Adam, or None."""
    cores = cores_per_gpu(cluster, strategy)
    if cores is None:
        return None
    return cores * params_per_s_per_core(cluster.cpu_isa) * ADAM_BYTES_PER_PARAM


def summary(cluster, strategy, ddr_bytes_per_s_per_gpu: float, params_per_gpu: float) -> dict:
    """What bounds one rank's CPU optimizer step: ``bound`` is ``"cpu_adam"`` (the cores)
    or ``"ddr"`` (memory), with both rates in parameters per second and the seconds the
    step takes alone (``params_per_gpu`` over the lower rate)."""
    ddr_params = ddr_bytes_per_s_per_gpu / ADAM_BYTES_PER_PARAM
    cores = cores_per_gpu(cluster, strategy)
    out = dict(params=float(params_per_gpu), ddr_params_per_s=float(ddr_params),
               cores_per_gpu=cores, isa=cluster.cpu_isa)
    if cores is None:
        out.update(bound="ddr", compute_params_per_s=None,
                   note="the node gives no cpu_cores: CPU-Adam compute is not modelled")
        rate = ddr_params
    else:
        per_core = params_per_s_per_core(cluster.cpu_isa)
        compute = cores * per_core
        out.update(params_per_s_per_core=per_core, compute_params_per_s=float(compute),
                   bound="cpu_adam" if compute < ddr_params else "ddr")
        rate = min(compute, ddr_params)
    out["alone_s"] = float(params_per_gpu / rate) if rate > 0 else 0.0
    return out


def bound_words(s: dict) -> str:
    """The bound in the report's words."""
    if s["bound"] == "cpu_adam":
        return (f"CPU-Adam-bound: {s['cores_per_gpu']:g} cores per GPU update "
                f"{s['compute_params_per_s'] / 1e6:.0f} M parameters/s ({_ISA_WORDS[s['isa']]}), "
                f"less than the {s['ddr_params_per_s'] / 1e6:.0f} M/s its DDR share would feed")
    if s.get("compute_params_per_s") is None:
        return (f"DDR-bound: {s['ddr_params_per_s'] / 1e6:.0f} M parameters/s at 30 B each "
                "(the node gives no core count, so CPU-Adam compute is not limited)")
    return (f"DDR-bound: the GPU's DDR share feeds {s['ddr_params_per_s'] / 1e6:.0f} M parameters/s "
            f"at 30 B each, less than the {s['compute_params_per_s'] / 1e6:.0f} M/s its "
            f"{s['cores_per_gpu']:g} cores would update")
