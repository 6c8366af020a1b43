"""The CPU optimizer as compute: how fast the host's cores run the optimizer step of
ZeRO-Offload, ZeRO-Infinity and FSDP's CPU offload, and whether they or DDR bind.

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

PyTorch FSDP's CPU offload (FSDP1 ``CPUOffload(offload_params=True)``, FSDP2
``CPUOffloadPolicy``) runs no CPU-Adam: the user's ``torch.optim.AdamW`` steps the fp32
shards on the CPU. With neither ``foreach`` nor ``fused`` given (torch 2.13
``torch/optim/adam.py`` ``adam()``, ``optimizer.py`` ``_default_to_fused_or_foreach``:
foreach only where every parameter is on a device of
``_get_foreach_kernels_supported_devices()``, which lists no "cpu"; fused never by default)
CPU tensors run ``_single_tensor_adam``, the for-loop: per tensor ``mul_`` (weight decay),
``lerp_``, ``mul_`` + ``addcmul_`` (second moment), ``sqrt``, divide, ``add_`` and
``addcdiv_``, eight ATen passes over memory, three of them into fresh temporaries: 80 B of
DDR traffic a parameter (:data:`TORCH_ADAMW_BYTES_PER_PARAM`) where CPU-Adam's one
vectorised pass moves 30. Its rate per core is CPU-Adam's over the slowdown measured here
(``scripts/measure_cpu_adamw.py``, ``tests/data/cpu_adamw_torch.json``: torch 2.13's default
AdamW against its own fused single-pass CPU kernel, ``FusedAdamKernel.cpp``, the shape of
CPU-Adam's loop, one AVX-512 core, the fastest of 15 alternating steps: 7.7x, the median
of shards of 4, 16 and 32 M elements, 4.7x at 4 M where the tensors fit the L3 cache, 7.7x
and 7.9x above it, as FSDP's flat shards are), near DeepSpeed's own figure for CPU-Adam
against PyTorch's CPU Adam (``docs/_tutorials/zero-offload.md``: "5X--7X faster than the
standard PyTorch implementation", from ZeRO-Offload's Table 3 PT-CPU column). :func:`implementation` says which one a strategy runs.

The optimizer phase runs at the lower of the two per GPU: cores x rate (compute) and the
GPU's DDR share / bytes a parameter (memory); the scheduler puts the optimizer's bytes over
both the ``ddr`` link and a ``cpu_adam`` link of cores x rate x bytes a parameter, so
contention on DDR is seen too (the link keeps its name whichever implementation runs).
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
# torch's for-loop AdamW on fp32 CPU tensors, pass by pass (read + write, 4 B elements):
# param.mul_ 8, exp_avg.lerp_(grad) 12, exp_avg_sq.mul_ 8, .addcmul_(grad, grad) 12,
# sqrt 8, divide 8, add_ 8, param.addcdiv_(exp_avg, denom) 16 (torch/optim/adam.py
# _single_tensor_adam; tests/data/cpu_adamw_torch.json counts 84 with ByteCounter, which
# reads addcmul_'s one gradient twice)
TORCH_ADAMW_BYTES_PER_PARAM = 80.0
# torch 2.13's default CPU AdamW is this many times slower per core than a single fused
# vectorised pass (scripts/measure_cpu_adamw.py: median of tests/data/cpu_adamw_torch.json)
TORCH_ADAMW_SLOWDOWN = 7.7
IMPLEMENTATIONS = ("deepspeed_cpu_adam", "torch_adamw")
_IMPL_WORDS = {"deepspeed_cpu_adam": "DeepSpeed CPU-Adam",
               "torch_adamw": "torch.optim.AdamW's for-loop on CPU tensors"}
_BYTES = {"deepspeed_cpu_adam": ADAM_BYTES_PER_PARAM, "torch_adamw": TORCH_ADAMW_BYTES_PER_PARAM}


def implementation(strategy) -> str:
    """The CPU optimizer a strategy's offload runs: PyTorch FSDP's CPU offload steps the
    user's ``torch.optim.AdamW`` on CPU tensors ("torch_adamw"); DeepSpeed's ZeRO
    offload (ZeRO-1/2/3, ZeRO-Offload, ZeRO-Infinity) runs ``DeepSpeedCPUAdam``
    ("deepspeed_cpu_adam", ``deepspeed/ops/adam/cpu_adam.py``)."""
    return "torch_adamw" if strategy.is_fsdp else "deepspeed_cpu_adam"


def bytes_per_param(impl: str) -> float:
    """DDR bytes one parameter's update moves with implementation ``impl``."""
    return _BYTES[impl]


def params_per_s_per_core(isa: str, impl: str = "deepspeed_cpu_adam") -> float:
    """Parameters per second one core updates with vector ISA ``isa``: CPU-Adam's Table 3
    rate (half with AVX2's 8 lanes), over :data:`TORCH_ADAMW_SLOWDOWN` for torch's AdamW
    (ATen's element-wise kernels are vectorised for the same ISA, ``at::vec``)."""
    rate = CPU_ADAM_PARAMS_PER_S_PER_CORE_AVX512 * SIMD_WIDTH_FP32[isa] / SIMD_WIDTH_FP32["avx512"]
    return rate / TORCH_ADAMW_SLOWDOWN if impl == "torch_adamw" else rate


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
    """DDR bytes per second one rank's cores can drive through its CPU optimizer
    (:func:`implementation`), or None."""
    cores = cores_per_gpu(cluster, strategy)
    if cores is None:
        return None
    impl = implementation(strategy)
    return cores * params_per_s_per_core(cluster.cpu_isa, impl) * bytes_per_param(impl)


def summary(cluster, strategy, ddr_bytes_per_s_per_gpu: float, params_per_gpu: float) -> dict:
    """What bounds one rank's CPU optimizer step: ``bound`` is ``"cpu_adam"`` (the cores)
    or ``"ddr"`` (memory), with both rates in parameters per second and the seconds the
    step takes alone (``params_per_gpu`` over the lower rate); ``implementation`` says
    which optimizer runs (:func:`implementation`), ``bytes_per_param`` its DDR traffic."""
    impl = implementation(strategy)
    ddr_params = ddr_bytes_per_s_per_gpu / bytes_per_param(impl)
    cores = cores_per_gpu(cluster, strategy)
    out = dict(params=float(params_per_gpu), ddr_params_per_s=float(ddr_params),
               cores_per_gpu=cores, isa=cluster.cpu_isa, implementation=impl,
               bytes_per_param=bytes_per_param(impl))
    if cores is None:
        out.update(bound="ddr", compute_params_per_s=None,
                   note="the node gives no cpu_cores: the CPU optimizer's compute is not modelled")
        rate = ddr_params
    else:
        per_core = params_per_s_per_core(cluster.cpu_isa, impl)
        compute = cores * per_core
        out.update(params_per_s_per_core=per_core, compute_params_per_s=float(compute),
                   bound="cpu_adam" if compute < ddr_params else "ddr")
        rate = min(compute, ddr_params)
    out["alone_s"] = float(params_per_gpu / rate) if rate > 0 else 0.0
    return out


def bound_words(s: dict) -> str:
    """The bound in the report's words, naming the optimizer implementation that runs."""
    impl = s.get("implementation", "deepspeed_cpu_adam")
    b = s.get("bytes_per_param", ADAM_BYTES_PER_PARAM)
    torch_ = impl == "torch_adamw"
    what = _IMPL_WORDS[impl]
    if s["bound"] == "cpu_adam":
        head = "CPU-optimizer-bound" if torch_ else "CPU-Adam-bound"
        return (f"{head}: {s['cores_per_gpu']:g} cores per GPU update "
                f"{s['compute_params_per_s'] / 1e6:.0f} M parameters/s with {what} "
                f"({_ISA_WORDS[s['isa']]}), less than the {s['ddr_params_per_s'] / 1e6:.0f} M/s "
                "its DDR share would feed")
    if s.get("compute_params_per_s") is None:
        return (f"DDR-bound: {s['ddr_params_per_s'] / 1e6:.0f} M parameters/s at {b:g} B each with "
                f"{what} (the node gives no core count, so the optimizer's compute is not limited)")
    return (f"DDR-bound: the GPU's DDR share feeds {s['ddr_params_per_s'] / 1e6:.0f} M parameters/s "
            f"at {b:g} B each with {what}, less than the {s['compute_params_per_s'] / 1e6:.0f} M/s "
            f"its {s['cores_per_gpu']:g} cores would update")
