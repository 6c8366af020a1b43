"""Other estimators' views of the same scenario, shown beside tierlab's own numbers.

``deepspeed_estimate`` reproduces DeepSpeed 0.19.8's
``estimate_zero2_model_states_mem_needs`` (deepspeed/runtime/zero/stage_1_and_2.py) and
``estimate_zero3_model_states_mem_needs`` (deepspeed/runtime/zero/stage3.py): model
states only, no activations; the host figure carries DeepSpeed's
``additional_buffer_factor`` (1.5). With P parameters, G GPUs in all, g per node, n nodes,
L = 4 x largest layer, abf = 1.5:

ZeRO-2, optimizer on CPU:   GPU 2P;                CPU P*max(4G, 16)*abf
ZeRO-2, no offload:         GPU 2P + int(18P/G);   CPU 4P*g*abf
ZeRO-3, params+opt on CPU:  GPU L;                 CPU 18P/n*abf (zero.Init) else P*max(4g, 18/n)*abf
ZeRO-3, opt on CPU:         GPU L + int(2P/G);     CPU 16P/n*abf (zero.Init) else P*max(4g, 16/n)*abf
ZeRO-3, no offload:         GPU L + int(18P/G);    CPU 4*largest*g*abf (zero.Init) else 4P*g*abf

DeepSpeed before 0.14.3 used GPU 4P + int(16P/G) for ZeRO-2 without offload
(``legacy_zero2=True``). Printed "GB" there is bytes / 2**30.
"""

from __future__ import annotations


def deepspeed_estimate(stage: int, total_params: float, largest_layer_params: float,
                       gpus_per_node: int, num_nodes: int, offload_optimizer: bool,
                       offload_params: bool = False, zero_init: bool = True,
                       additional_buffer_factor: float = 1.5,
                       legacy_zero2: bool = False) -> dict:
    """DeepSpeed's own model-state estimate: ``{gpu_bytes, cpu_bytes}`` (cpu per node)."""
    p, g, n, abf = total_params, gpus_per_node, num_nodes, additional_buffer_factor
    total_gpus = g * n
    if stage in (1, 2):
        if offload_optimizer:
            gpu, cpu = 2 * p, p * max(4 * total_gpus, 16) * abf
        else:
            gpu = (4 * p + int(16 * p / total_gpus)) if legacy_zero2 else (2 * p + int(18 * p / total_gpus))
            cpu = p * 4 * g * abf
        return dict(gpu_bytes=gpu, cpu_bytes=cpu)
    if stage != 3:
        raise ValueError(f"DeepSpeed estimators cover ZeRO stages 1-3, not {stage}")
    big = 4 * largest_layer_params
    f = 1 / n
    if offload_params and offload_optimizer:
        gpu = big
        cpu = p * 18 * f * abf if zero_init else p * max(4 * g, 18 * f) * abf
    elif offload_optimizer:
        gpu = big + int(2 * p / total_gpus)
        cpu = p * 16 * f * abf if zero_init else p * max(4 * g, 16 * f) * abf
    else:
        gpu = big + int(18 * p / total_gpus)
        cpu = largest_layer_params * 4 * g * abf if zero_init else p * 4 * g * abf
    return dict(gpu_bytes=gpu, cpu_bytes=cpu, largest_layer_memory_bytes=big)
