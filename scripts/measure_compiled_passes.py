"""Count the bytes TorchInductor's fused kernels move in a transformers Llama layer (CPU backend).

Each module of a bf16 ``LlamaDecoderLayer`` (small config in code, eager attention, no
dropout) is compiled with ``torch.compile`` (inductor) and run forward and backward with
inductor's trace on; its ``ir_post_fusion.txt`` lists every kernel after fusion with the
buffers it reads (``met_dependencies`` / ``unmet_dependencies``) and writes and their
layouts. A kernel's bytes are its distinct buffers read from outside it plus the buffers
it writes that anything outside it uses (what stays inside a fused kernel is not stored);
extern kernels (the GEMMs) are left out. The sum is the memory-bound work
``simulation/compute.py`` counts in ``PASSES["torch_compile"]``.

This is the CPU code generator: it splits some reductions into more kernels than Triton
does on a GPU (a softmax's max, sum and normalisation), so its s x s terms are an upper
bound for a GPU; the fusion of pointwise chains and what the partitioner saves for
backward are the same graph passes on both.

Needs torch, transformers and a C++ compiler (inductor's CPU backend)::

    TORCHINDUCTOR_FORCE_DISABLE_CACHES=1 python scripts/measure_compiled_passes.py \
        --out tests/data/compiled_passes_llama.json

and, with SDPA attention (transformers >= 4.48 in its own environment; recorded with 4.57.3)::

    python scripts/measure_compiled_passes.py --attn sdpa --out tests/data/compiled_passes_llama_sdpa.json

It is a tool, not a test: ``tests/engine/test_eager_passes.py`` reads the JSON.
"""

from __future__ import annotations

import glob
import math
import os
import re
import sys
import tempfile

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TORCHINDUCTOR_FORCE_DISABLE_CACHES", "1")   # a cached graph writes no trace
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import torch  # noqa: E402
import torch._inductor.config as inductor_config  # noqa: E402
import transformers  # noqa: E402

import dispatch_bytes  # noqa: E402
from measure_eager_passes import llama_parts  # noqa: E402

DTYPE_BYTES = {"torch.bfloat16": 2, "torch.float16": 2, "torch.float32": 4, "torch.int64": 8,
               "torch.int32": 4, "torch.bool": 1, "torch.uint8": 1, "torch.int8": 1}


def kernel_bytes(text: str) -> list[tuple[str, int]]:
    """``(kernel, bytes)`` of each non-extern kernel in an ``ir_post_fusion.txt``."""
    sizes = {}
    for m in re.finditer(r"^(\w+)_layout = \w+\('\w+', (torch\.\w+), size=\[([^\]]*)\]", text, re.M):
        dims = [int(x) for x in m.group(3).split(",") if x.strip()]
        sizes[m.group(1)] = math.prod(dims) * DTYPE_BYTES[m.group(2)]
    out, inner = [], set()
    for block in re.split(r"^(?=op\w+: )", text, flags=re.M):
        m = re.match(r"(op\w+): (\w+)", block)
        if not m or m.group(1) in inner:
            continue
        name, kind = m.groups()
        own = set(name.split("_"))
        if len(own) > 1:
            inner |= own                        # its parts follow as blocks of their own
        if "Extern" in kind:
            continue
        head = block.split(f"{name}.snodes[0]")[0]

        def deps(key):
            d = re.search(rf"{re.escape(name)}\.{key} = (.*?)(?=\n{re.escape(name)}\.|\Z)", head, re.S)
            return set(re.findall(r"(?:MemoryDep|StarDep|WeakDep)\('(\w+)'", d.group(1))) if d else set()

        writes = deps("writes")
        reads = (deps("met_dependencies") | deps("unmet_dependencies")) - writes
        stored = set()
        outs = re.search(rf"{re.escape(name)}\.outputs = \[(.*?)\n\]", head, re.S)
        for u in re.finditer(r"(\w+)\.users = \[(.*?)\]\n", (outs.group(1) + "\n") if outs else "", re.S):
            users = u.group(2)
            if "OUTPUT" in users or set(re.findall(r"name='(op\d+)'", users)) - own:
                stored.add(u.group(1))
        out.append((name, sum(sizes.get(b, 0) for b in reads) + sum(sizes.get(b, 0) for b in stored)))
    return out


def _count(module, x, kwargs) -> dict:
    torch._dynamo.reset()
    with tempfile.TemporaryDirectory() as d:
        inductor_config.trace.enabled = True
        inductor_config.trace.debug_dir = d
        y = torch.compile(module, backend="inductor")(x, **kwargs)
        y = y[0] if isinstance(y, tuple) else y
        y.backward(torch.randn_like(y))
        out = {}
        for path in glob.glob(os.path.join(d, "**", "ir_post_fusion.txt"), recursive=True):
            side = "backward" if "backward" in os.path.basename(os.path.dirname(path)) else "forward"
            with open(path) as f:
                ks = kernel_bytes(f.read())
            out[f"{side}_bytes"] = out.get(f"{side}_bytes", 0) + sum(b for _, b in ks)
            out[f"{side}_kernels"] = out.get(f"{side}_kernels", 0) + len(ks)
    return out


def run(p: dict) -> dict:
    torch.manual_seed(0)
    b, s, h = p["b"], p["s"], p["h"]
    _, parts = llama_parts(p)
    out = {"config": p, "parts": {}}
    for name, module, kw in parts:
        x = torch.randn(b, s, h, dtype=torch.bfloat16, requires_grad=True)
        out["parts"][name] = _count(module, x, kw)
    print(p, {k: (v["forward_bytes"], v["backward_bytes"]) for k, v in out["parts"].items()},
          file=sys.stderr)
    return out


def points(attn: str = "eager") -> list[dict]:
    base = dict(b=2, s=64, h=128, a=4, kv=4, ffn=344)
    if attn != "eager":
        base["attn"] = attn
    return [base, dict(base, s=128)]


WHAT = ("bytes read plus written by TorchInductor's fused (non-extern) kernels, CPU "
        "backend, of a bf16 transformers LlamaDecoderLayer's modules, forward and "
        "backward; see scripts/measure_compiled_passes.py")


def main():
    versions = {"torch": torch.__version__, "transformers": transformers.__version__}
    dispatch_bytes.main(__doc__, WHAT, versions, run, points)


if __name__ == "__main__":
    main()
