"""The kernels of one DLRM training step on one GPU: embeddings as memory-bound gathers,
the MLPs and the interaction as GEMMs, element-wise passes over HBM.

Model-parallel embeddings (HugeCTR's and TorchRec's table-wise sharding, tables balanced
over the W GPUs): each GPU looks up its tables for the whole global batch B, so it makes
``B x sum(L_t) / W`` row reads of ``dim x dtype`` bytes each (L_t: the multi-hot size).
Per GPU and step:

embedding forward    gather: lookups x row bytes over HBM at ``GATHER_EFFICIENCY``;
                     pooled output: B x sum(dim) / W x comm bytes written.
embedding backward   the pooled gradients are read once per lookup (lookups x dim x comm
                     bytes, a gather); the gradient of every distinct row is written and
                     read back by the optimizer (``GRAD_BUFFER_PASSES``: HugeCTR's two-stage
                     backward, ``backward()`` then ``update_params()``, HugeCTR
                     include/embeddings/localized_slot_sparse_embedding_hash.hpp class doc;
                     FBGEMM's fused TBE backward keeps it in registers: 0); the optimizer
                     reads and writes each distinct row and its state (Adagrad: one fp32 per
                     element, HugeCTR sharding/generate_plan.py ``byte_per_elem = 8``;
                     row-wise Adagrad one fp32 per row, FBGEMM EXACT_ROWWISE_ADAGRAD).
                     Random rows at ``SCATTER_EFFICIENCY``. Distinct rows: the expected
                     distinct rows of the global batch's lookups of the table
                     (:func:`distinct_rows`).
dense forward/back   every linear layer of the bottom MLP, DCNv2's low-rank cross layers
                     (x_{l+1} = x0 * (U (V x_l) + b) + x_l; Wang et al. 2021, DCN-V2, Eq. 1;
                     TorchRec LowRankCrossNet) or the dot interaction (a batched F x d by
                     d x F product), and the top MLP: a forward GEMM (m = B/W, n = out,
                     k = in), a data-gradient GEMM (m = B/W, n = in, k = out; none for the
                     first layer, whose input is data) and a weight-gradient GEMM (m = in,
                     n = out, k = B/W), each by :func:`simulation.compute.gemm_s` (achievable
                     matmul rate and wave quantization) where the GPU has figures, else
                     FLOPs at peak x compute efficiency. Bias and ReLU are fused into the
                     GEMM epilogues (cuBLASLt; HugeCTR's MLP layer). Element-wise passes of
                     16-bit B/W x d tensors at HBM bandwidth: the concatenation (2 forward,
                     2 backward) and each cross layer (forward: read x0, x_l and the
                     projection, write x_{l+1}: 4; backward: 9, counted from Eq. 1).
dense optimizer      Adagrad on the dense parameters, fp32 master weight and state read
                     and written, 16-bit gradient read and 16-bit weight written: 20 bytes
                     per parameter.

Only the row reads are random: streaming passes run at the accelerator's HBM figure, as in
:mod:`simulation.compute`. Kernels of one GPU run one at a time (one ``gpu`` stream); the
all-to-alls and the dense all-reduce overlap them (:mod:`.ps`). Key sorting and the data
reader's copies are not counted.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from . import zipf
from .spec import DTYPE_BYTES, ROW_STATE_BYTES, RecModelSpec

# Random-row gather and scatter-add on H100 SXM5 (HBM3, 3.35 TB/s): FBGEMM's gather/scatter
# benchmark measured 2,646.4 GB/s (gather_along_first_dim) and 2,535.9 GB/s
# (scatter_add_along_first_dim) (pytorch/FBGEMM pull request #3993, 2025). As fractions of
# the 3,350 GB/s figure; other GPUs take the same fractions (an assumption).
H100_HBM_BYTES_PER_S = 3350e9
GATHER_EFFICIENCY = 2646.431e9 / H100_HBM_BYTES_PER_S
SCATTER_EFFICIENCY = 2535.945e9 / H100_HBM_BYTES_PER_S
GRAD_BUFFER_PASSES = 2          # HugeCTR: distinct rows' gradients written, then read
ACT_BYTES = 2                   # 16-bit activations (mixed precision)
WGRAD_BYTES = 4                 # fp32 gradient of an embedding row
DENSE_OPT_BYTES_PER_PARAM = 20  # Adagrad: fp32 weight + state r/w (16), 16-bit grad r, weight w
DCN_PASSES = (4, 9)             # element-wise tensors per cross layer, forward / backward
CONCAT_PASSES = (2, 2)

if TYPE_CHECKING:
    from ..compute import GpuFigures


def gemm_s(*args, **kw) -> float:
    """:func:`simulation.compute.gemm_s` (imported late: compute imports the scenario,
    which imports this package)."""
    from ..compute import gemm_s as f
    return f(*args, **kw)


@dataclass(frozen=True)
class Kernel:
    """One kernel (or fused group) of the step: seconds, bytes moved, FLOPs, what bounds it."""
    name: str
    phase: str          # forward | backward | optimizer
    seconds: float
    bytes: float = 0.0
    flops: float = 0.0
    bound: str = "memory"

    def to_dict(self) -> dict:
        return dict(name=self.name, phase=self.phase, seconds=self.seconds, bytes=self.bytes,
                    flops=self.flops, bound=self.bound)


def distinct_rows(spec: RecModelSpec, samples: float) -> list:
    """Expected distinct rows of each table among ``samples`` samples' lookups.

    ``multi_hot_distribution`` "zipf": all L_t lookups are Zipf(alpha) draws
    (:func:`.zipf.expected_distinct` of samples x L_t draws). "uniform" (MLPerf's synthetic
    multi-hot Criteo): the first lookup is the one-hot id (Zipf), the other L_t - 1 are
    uniform rows fixed per id (TorchRec DLRM ``multi_hot.py``,
    ``Multihot.__make_multi_hot_indices_cache``: ``randint(0, rows, (rows, L - 1))``), so
    u distinct ids bring (L_t - 1) u uniform draws: E = n - (n - u)(1 - 1/n)^((L_t - 1) u).
    """
    return distinct_rows_many(spec, [samples])[0]


def distinct_rows_many(spec: RecModelSpec, samples: list) -> list:
    """:func:`distinct_rows` for several sample counts (one list per count), each table's
    row probabilities computed once."""
    out = [[] for _ in samples]
    for t in spec.tables:
        a, n, L = spec.alpha(t), t.rows, t.lookups_per_sample
        uniform = spec.multi_hot_distribution == "uniform" and L > 1
        ds = zipf.expected_distinct_many([b if uniform else b * L for b in samples], n, a)
        for o, d in zip(out, ds):
            o.append(n - (n - d) * (1 - 1 / n) ** ((L - 1) * d) if uniform else d)
    return out


def _linear(name, m, k, n, gpu, hbm, flops_per_s, first=False):
    """Forward, data-gradient and weight-gradient GEMMs of an m x k by k x n layer."""
    def one(label, mm, nn, kk, phase):
        f = 2.0 * mm * nn * kk
        s = gemm_s(mm, nn, kk, gpu, hbm) if gpu is not None else f / flops_per_s
        return Kernel(f"{name} {label}", phase, s, ACT_BYTES * (mm * kk + kk * nn + mm * nn), f, "gemm")
    fwd = [one("forward", m, n, k, "forward")]
    bwd = ([] if first else [one("data gradient", m, k, n, "backward")]) + \
        [one("weight gradient", k, n, m, "backward")]
    return fwd, bwd


def dense_kernels(spec: RecModelSpec, samples_per_gpu: float, *, gpu: GpuFigures | None,
                  hbm_bytes_per_s: float, flops_per_s: float | None) -> dict:
    """Kernels of the dense part for ``samples_per_gpu`` samples, as four lists:
    ``bottom_forward``, ``bottom_backward``, ``top_forward`` and ``top_backward`` (top:
    the interaction and the top MLP)."""
    if gpu is None and not flops_per_s:
        raise ValueError("dense_kernels needs the GPU's GEMM figures or its FLOP/s")
    b, hbm = samples_per_gpu, hbm_bytes_per_s
    out = {k: [] for k in ("bottom_forward", "bottom_backward", "top_forward", "top_backward")}

    def mlp(part, prefix, widths, first):
        for i, (k, n) in enumerate(zip(widths[:-1], widths[1:])):
            f, g = _linear(f"{prefix} {k}x{n}", b, k, n, gpu, hbm, flops_per_s, first and i == 0)
            out[f"{part}_forward"].extend(f)
            out[f"{part}_backward"].extend(g)

    def passes(name, counts, elems):
        for phase, n in zip(("forward", "backward"), counts):
            nbytes = n * elems * ACT_BYTES
            out[f"top_{phase}"].append(Kernel(f"{name} {phase}", phase, nbytes / hbm, nbytes))

    mlp("bottom", "bottom MLP", spec.bottom_mlp, True)
    d, f, dim = spec.top_mlp_input, len(spec.tables) + 1, spec.bottom_mlp[-1]
    if spec.interaction == "dcn":
        passes("concatenate", CONCAT_PASSES, b * d)
        r = spec.dcn_low_rank_dim or 0
        for layer in range(spec.dcn_num_layers or 0):
            for k, n, what in ((d, r, "V"), (r, d, "U")):
                fw, bw = _linear(f"cross {layer} {what} {k}x{n}", b, k, n, gpu, hbm, flops_per_s)
                out["top_forward"].extend(fw)
                out["top_backward"].extend(bw)
            passes(f"cross {layer} element-wise", DCN_PASSES, b * d)
    else:
        # F x d by d x F per sample forward; backward two products of the same size
        fl = 2.0 * f * f * dim * b
        s = gemm_s(f, f, dim, gpu, hbm, batch=max(1, int(b))) if gpu is not None else fl / flops_per_s
        out["top_forward"].append(Kernel("dot interaction forward", "forward", s, 0.0, fl, "gemm"))
        out["top_backward"].append(Kernel("dot interaction backward", "backward", 2 * s, 0.0, 2 * fl, "gemm"))
    if spec.top_mlp:
        mlp("top", "top MLP", (d,) + spec.top_mlp, False)
    return out


def embedding_kernels(spec: RecModelSpec, *, num_gpus: int, hbm_bytes_per_s: float,
                      distinct: list | None = None) -> tuple:
    """(forward, backward) kernels of the model-parallel embeddings on one GPU, and the
    lookups and distinct rows of one step. ``distinct``: the global batch's distinct rows
    per table when already known (:func:`distinct_rows`)."""
    w, B = num_gpus, spec.batch_size
    comm = DTYPE_BYTES[spec.comm_dtype]
    lookups = B * sum(t.lookups_per_sample for t in spec.tables) / w
    gather = B * sum(t.lookups_per_sample * t.value_bytes for t in spec.tables) / w
    pooled = B * sum(t.dim for t in spec.tables) * comm / w
    grads_in = B * sum(t.lookups_per_sample * t.dim for t in spec.tables) * comm / w
    distinct = distinct_rows(spec, B) if distinct is None else distinct
    state = ROW_STATE_BYTES[spec.embedding_optimizer]
    update = sum(d * (GRAD_BUFFER_PASSES * t.dim * WGRAD_BYTES + 2 * t.value_bytes + 2 * state(t.dim))
                 for d, t in zip(distinct, spec.tables)) / w
    g, s = hbm_bytes_per_s * GATHER_EFFICIENCY, hbm_bytes_per_s * SCATTER_EFFICIENCY
    fwd = [Kernel("embedding gather + pooling", "forward", gather / g + pooled / hbm_bytes_per_s,
                  gather + pooled)]
    bwd = [Kernel("embedding backward (pooled gradients per lookup)", "backward", grads_in / g, grads_in),
           Kernel(f"embedding update ({spec.embedding_optimizer}, distinct rows)", "optimizer",
                  update / s, update)]
    return fwd, bwd, dict(lookups_per_gpu=lookups, distinct_rows=sum(distinct),
                          distinct_rows_per_gpu=sum(distinct) / w,
                          distinct_fraction=sum(distinct) / (lookups * w) if lookups else 0.0)


def dense_optimizer_kernel(spec: RecModelSpec, hbm_bytes_per_s: float) -> Kernel:
    nbytes = spec.dense_params["total"] * DENSE_OPT_BYTES_PER_PARAM
    return Kernel("dense optimizer", "optimizer", nbytes / hbm_bytes_per_s, nbytes)


def step_kernels(spec: RecModelSpec, *, num_gpus: int, hbm_bytes_per_s: float,
                 gpu: GpuFigures | None, flops_per_s: float | None,
                 distinct: list | None = None) -> tuple:
    """The GPU's kernels of one step, grouped as :func:`.ps.embedding_designs` runs them
    (``embedding_forward``, ``bottom_forward``, ``top_forward``, ``top_backward``,
    ``bottom_backward``, ``embedding_backward``, ``dense_optimizer``: lists of
    :class:`Kernel`), and the embedding's counts (lookups and distinct rows per GPU).

    ``recsys.dense_step_s``, when given, replaces the dense kernels by one of that length.
    Raises ScenarioError (``recsys.dense_step_s``) when the dense part has neither GEMM
    figures nor FLOP/s to run on."""
    from ..errors import ScenarioError
    e_f, e_b, counts = embedding_kernels(spec, num_gpus=num_gpus, hbm_bytes_per_s=hbm_bytes_per_s,
                                         distinct=distinct)
    if spec.dense_step_s is not None:
        dense = dict(bottom_forward=[], bottom_backward=[], top_backward=[],
                     top_forward=[Kernel("dense forward + backward (recsys.dense_step_s)", "forward",
                                         spec.dense_step_s, bound="given")])
    else:
        if gpu is None and not flops_per_s:
            raise ScenarioError("recsys.dense_step_s", "is required when the GPU's FLOP/s are unknown")
        dense = dense_kernels(spec, spec.batch_size / num_gpus, gpu=gpu,
                              hbm_bytes_per_s=hbm_bytes_per_s, flops_per_s=flops_per_s)
    ks = dict(embedding_forward=e_f, **dense, embedding_backward=e_b,
              dense_optimizer=[dense_optimizer_kernel(spec, hbm_bytes_per_s)])
    return ks, counts


def dense_seconds(kernels: dict) -> float:
    """Seconds of the dense part's forward and backward kernels (no optimizer)."""
    return sum(k.seconds for g in ("bottom_forward", "top_forward", "top_backward", "bottom_backward")
               for k in kernels[g])
