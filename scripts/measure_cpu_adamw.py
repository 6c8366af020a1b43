"""Time torch's own AdamW on CPU tensors, as FSDP's CPU offload runs it, against torch's
fused single-pass CPU AdamW kernel, and count the bytes each step moves.

FSDP with CPU offload (FSDP1 ``CPUOffload(offload_params=True)``, FSDP2
``CPUOffloadPolicy``) keeps the sharded fp32 parameters and their gradients on the CPU,
so the user's ``torch.optim.AdamW`` steps CPU tensors. With neither ``foreach`` nor
``fused`` given, ``torch/optim/adam.py`` ``adam()`` asks ``_default_to_fused_or_foreach``
(``torch/optim/optimizer.py``), which picks foreach only when every parameter's device is
in ``_get_foreach_kernels_supported_devices()`` (cuda, xpu, mtia, privateuse1: not
cpu) and never picks fused by default: CPU tensors run ``_single_tensor_adam``, the
for-loop (weight decay, ``lerp_``, ``mul_``, ``addcmul_``, ``sqrt``, divide, ``add_``,
``addcdiv_``: eight passes over memory a tensor, two of them into fresh temporaries).
``fused=True`` runs ``aten/src/ATen/native/cpu/FusedAdamKernel.cpp``: one vectorised pass
(``at::vec::Vectorized``), the shape of DeepSpeed's CPU-Adam (``csrc/includes/cpu_adam.h``
``Step_AVX``), which is the reference the ratio is taken against.

Each case: ``params`` fp32 parameters in tensors of ``tensor_elements`` (an FSDP1 flat
shard is one big tensor, FSDP2's per-parameter shards are smaller), gradients set, two
warm-up steps (the state is created lazily), then ``repeats`` timed steps,
with ``threads`` intra-op threads (one: the engine's rate is per core). The steps of the
implementations alternate and the fastest of each counts, so that a shared, loaded
machine slows them alike and as little as it can. The byte count (``scripts/dispatch_bytes.py``'s
``ByteCounter``, one step on a small model) is what each implementation's aten ops read
and write per parameter (the for-loop's: ``addcmul_(grad, grad)`` counts its one gradient
read twice).

    PYTHONPATH=. python scripts/measure_cpu_adamw.py --out tests/data/cpu_adamw_torch.json

It is a tool, not a test: ``tests/engine/test_cpu_optimizer.py`` reads the JSON.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import torch  # noqa: E402
from torch.optim.optimizer import _default_to_fused_or_foreach  # noqa: E402

from dispatch_bytes import ByteCounter  # noqa: E402

IMPLS = {"default": {}, "fused": {"fused": True}, "foreach": {"foreach": True}}


def model(params: int, tensor_elements: int) -> list[torch.Tensor]:
    torch.manual_seed(0)
    ps = [torch.randn(tensor_elements, requires_grad=True) for _ in range(params // tensor_elements)]
    for p in ps:
        p.grad = torch.randn_like(p)
    return ps


def time_steps(params: int, tensor_elements: int, threads: int, repeats: int) -> list[dict]:
    """One step of each implementation in turn, ``repeats`` rounds, so that all of them
    meet the same load on a shared machine; the fastest step of each is its figure (other
    work on the machine only ever adds time)."""
    torch.set_num_threads(threads)
    opts = {}
    for impl, kw in IMPLS.items():
        opts[impl] = torch.optim.AdamW(model(params, tensor_elements), lr=1e-4, weight_decay=0.1, **kw)
        for _ in range(2):
            opts[impl].step()
    times = {impl: [] for impl in IMPLS}
    for _ in range(repeats):
        for impl, opt in opts.items():
            t0 = time.perf_counter()
            opt.step()
            times[impl].append(time.perf_counter() - t0)
    n = params // tensor_elements * tensor_elements
    out = []
    for impl, ts in times.items():
        s = min(ts)
        out.append(dict(impl=impl, params=n, tensor_elements=tensor_elements, threads=threads,
                        step_s=s, median_step_s=statistics.median(ts), times_s=ts,
                        params_per_s=n / s, params_per_s_per_thread=n / s / threads))
    return out


def bytes_per_param(impl: str, n: int = 1 << 16) -> dict:
    ps = model(n, n)
    opt = torch.optim.AdamW(ps, lr=1e-4, weight_decay=0.1, **IMPLS[impl])
    opt.step()                      # the state exists: count a steady step
    with ByteCounter() as c:
        opt.step()
    return dict(impl=impl, bytes_per_param=c.bytes / n,
                ops={str(k): v / n for k, v in sorted(c.ops.items(), key=lambda kv: str(kv[0]))})


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--params", type=int, default=1 << 25)
    ap.add_argument("--repeats", type=int, default=15)
    ap.add_argument("--threads", type=int, default=1,
                    help="intra-op threads (the engine's figure is per core)")
    a = ap.parse_args()
    probe = [torch.zeros(4, requires_grad=True)]
    fused_default, foreach_default = _default_to_fused_or_foreach(probe, False, use_fused=False)
    cases = []
    for tensor_elements in (1 << 22, 1 << 24, 1 << 25):    # FSDP shards: millions of elements
        for c in time_steps(a.params, tensor_elements, a.threads, a.repeats):
            cases.append(c)
            print(json.dumps({k: v for k, v in c.items() if k != "times_s"}), flush=True)
    out = dict(
        what="torch.optim.AdamW on CPU tensors: step time and bytes per parameter, by implementation",
        versions=dict(torch=torch.__version__, python=platform.python_version()),
        machine=dict(processor=platform.processor() or platform.machine(), cpu_count=os.cpu_count(),
                     cpu_capability=torch.backends.cpu.get_cpu_capability()),
        cpu_tensor_default=dict(fused=fused_default, foreach=foreach_default,
                                implementation="_single_tensor_adam (for-loop)"
                                if not (fused_default or foreach_default) else "other"),
        # the for-loop's aten ops one by one (ByteCounter does not see inside the fused
        # kernel's in-place tensor lists: by hand it reads 16 B and writes 12 B)
        bytes=bytes_per_param("default"),
        cases=cases)
    with open(a.out, "w") as f:
        json.dump(out, f, indent=1, sort_keys=True)
        f.write("\n")


if __name__ == "__main__":
    main()
