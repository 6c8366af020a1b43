"""Pipeline stages: how layers are split over them, what each holds, and the schedule's
bubble (1F1B, interleaved 1F1B, DualPipe).

Layer split (``training.pipeline_layers``, ``training.first_pipeline_layers``,
``training.last_pipeline_layers``), as Megatron-LM (core, 2025-08) checks and builds it:

* ``megatron/core/transformer/transformer_block.py`` ``get_num_layers_to_build``: with
  ``num_layers_in_first_pipeline_stage`` / ``num_layers_in_last_pipeline_stage``
  (``--decoder-first-pipeline-num-layers`` / ``--decoder-last-pipeline-num-layers``)
  the given stage(s) get that many layers and the rest are split evenly over the middle
  stages ("the left over layers must be divisible by left over stages"); with
  interleaving each stage's layers are divided by the virtual size
  (``num_layers_per_pipeline_rank % vp_size == 0``).
* ``megatron/core/transformer/transformer_config.py`` ``__post_init__``: each of the two
  must be larger than 0 and divisible by the virtual pipeline size; middle layers exist
  exactly when middle stages do; neither can be combined with
  ``pipeline_model_parallel_layout``.
* An explicit list of layers per stage is Megatron's ``--pipeline-model-parallel-layout``
  (``pipeline_parallel_layer_layout.py``: ``"Et*7|t*8|...|t*7L"``), which lets a stage
  hold no transformer layer. With interleaving the list gives either one count per
  rank, each split into ``interleave_stages`` equal chunks (so each must divide), or
  one count per virtual stage (``p v`` entries in the layout's order, entry
  ``vpp_rank * p + pp_rank``), as the layout string does: Llama 3's first and last
  chunk one layer short (Sec. 3.3.2) is ``[3] + [4] * 30 + [3]`` for 126 layers at
  p 16, v 2. The bubble is then the interleaved schedule's own makespan
  (:func:`interleaved_makespan_s`).

Without any of them every stage holds ``num_layers / pipeline_parallel`` layers (which
must divide, ``get_num_layers_to_build``'s even split).
"""

from __future__ import annotations

from dataclasses import dataclass

from .errors import ScenarioError
from .fields import frozen_new

SCHEDULES = ("1f1b", "dualpipe")


def stage_layers(num_layers: int | None, p: int, v: int = 1, first: int | None = None,
                 last: int | None = None, explicit: tuple | None = None) -> tuple[int, ...]:
    """Transformer layers on each of the ``p`` pipeline stages (stage 0 first).

    ``v``: interleaved (virtual) stages per rank. Raises :class:`ScenarioError` naming
    ``training.pipeline_layers``, ``training.first_pipeline_layers``,
    ``training.last_pipeline_layers``, ``training.interleave_stages`` or
    ``training.pipeline_parallel`` when the split is not one Megatron-LM builds.
    """
    v = v or 1
    if explicit is not None:
        f = "training.pipeline_layers"
        if first is not None or last is not None:
            raise ScenarioError(f, "cannot be combined with first_pipeline_layers / "
                                   "last_pipeline_layers (Megatron: pipeline_model_parallel_layout "
                                   "cannot be set with other pipeline layout arguments)")
        if not num_layers:
            raise ScenarioError(f, "needs the model's num_layers")
        if len(explicit) != p and not (v > 1 and len(explicit) == p * v):
            raise ScenarioError(f, f"must list one count per pipeline stage: "
                                   f"pipeline_parallel is {p}, got {len(explicit)}"
                                   + (f" (or one per virtual stage, pipeline_parallel x "
                                      f"interleave_stages = {p * v})" if v > 1 else ""))
        if sum(explicit) != num_layers:
            raise ScenarioError(f, f"must add up to the model's {num_layers} layers, "
                                   f"got {sum(explicit)}")
        if len(explicit) == p * v and v > 1:
            # Megatron-LM's layout order: entry vpp_rank * p + pp_rank
            # (pipeline_parallel_layer_layout.py), so rank i holds entries i, i + p, ...
            return tuple(sum(explicit[r * p + i] for r in range(v)) for i in range(p))
        if v > 1:
            for i, n in enumerate(explicit):
                if n % v:
                    raise ScenarioError(f"{f}[{i}]", f"must be a multiple of interleave_stages "
                                                     f"({v}): each stage's layers are split into "
                                                     f"equal chunks, got {n}")
        return tuple(explicit)
    if first is None and last is None:
        if num_layers and num_layers % p:
            raise ScenarioError("training.pipeline_parallel",
                                f"must divide the model's {num_layers} layers, got {p} "
                                "(or give training.pipeline_layers / first_pipeline_layers / "
                                "last_pipeline_layers)")
        if num_layers and v > 1 and p > 1 and (num_layers // p) % v:
            raise ScenarioError("training.interleave_stages",
                                f"must divide the {num_layers // p} layers of each pipeline stage, "
                                f"got {v}")
        return (num_layers // p if num_layers else 0,) * p
    if p < 2:
        name = "first_pipeline_layers" if first is not None else "last_pipeline_layers"
        raise ScenarioError(f"training.{name}", "needs pipeline_parallel > 1")
    if not num_layers:
        raise ScenarioError("training.first_pipeline_layers" if first is not None
                            else "training.last_pipeline_layers", "needs the model's num_layers")
    rest, middle = num_layers, p
    for name, n in (("first_pipeline_layers", first), ("last_pipeline_layers", last)):
        if n is None:
            continue
        if v > 1 and n % v:
            raise ScenarioError(f"training.{name}", f"must be a multiple of interleave_stages "
                                                    f"({v}), got {n}")
        rest -= n
        middle -= 1
    field = "training.last_pipeline_layers" if last is not None else "training.first_pipeline_layers"
    if rest < 0 or bool(rest) != bool(middle):
        raise ScenarioError(field, f"leaves {rest} of the model's {num_layers} layers for "
                                   f"{middle} middle stage{'s' if middle != 1 else ''}")
    if middle and rest % middle:
        raise ScenarioError(field, f"leaves {rest} layers, which do not split evenly over the "
                                   f"{middle} middle stages")
    per = rest // middle if middle else 0
    out = [per] * p
    if first is not None:
        out[0] = first
    if last is not None:
        out[-1] = last
    if v > 1 and per % v:
        raise ScenarioError("training.interleave_stages",
                            f"must divide the {per} layers of each middle stage")
    return tuple(out)


def chunk_layers(layers: tuple[int, ...], v: int = 1,
                 explicit: tuple | None = None) -> tuple[int, ...]:
    """Transformer layers of each of the ``p v`` virtual stages (model chunks), in
    Megatron-LM's layout order (``pipeline_parallel_layer_layout.py``: entry
    ``vpp_rank * p + pp_rank``). ``layers``: the per-rank counts of :func:`stage_layers`;
    ``explicit``: ``training.pipeline_layers`` when it lists one count per virtual stage
    (then returned as given), else each rank's layers split evenly over its ``v`` chunks
    (``get_num_layers_to_build``'s ``num_layers_per_pipeline_rank // vp_size``)."""
    v = v or 1
    p = len(layers)
    if explicit is not None and v > 1 and len(explicit) == p * v:
        return tuple(explicit)
    return tuple(layers[i] // v for _r in range(v) for i in range(p))


def check_schedule(schedule: str, p: int, v: int, m: int) -> None:
    """DualPipe's own checks (deepseek-ai/DualPipe ``dualpipe/dualpipe.py`` ``step``,
    2025-03: ``num_ranks % 2 == 0``; ``num_chunks > 0 and num_chunks % 2 == 0 and
    num_chunks >= num_ranks * 2``); it has no interleaving of its own."""
    if schedule != "dualpipe":
        return
    f = "training.pipeline_schedule"
    if p < 2 or p % 2:
        raise ScenarioError(f, f"dualpipe needs an even pipeline_parallel, got {p}")
    if v > 1:
        raise ScenarioError(f, "dualpipe cannot be combined with interleave_stages > 1")
    if m % 2 or m < 2 * p:
        raise ScenarioError(f, f"dualpipe needs an even number of micro-batches per step, at "
                               f"least 2 x pipeline_parallel = {2 * p}; got {m}")


@dataclass(frozen=True)
class StagePlan:
    """What one pipeline rank holds.

    ``index``: the rank (0 first); ``name``: ``only`` | ``first`` | ``middle`` | ``last``,
    or under DualPipe ``ends`` (ranks 0 and p-1, each holding stages 0 and p-1) and
    ``middle``; ``layers``: the
    transformer layers whose parameters it holds (DualPipe: its two stages', i and
    p-1-i); ``activation_layers``: layer-equivalents of stored activations at the peak
    (the layers of one micro-batch times the micro-batches in flight); ``embedding`` /
    ``head``: whether it holds the input embedding / the output head and the loss;
    ``in_flight``: micro-batches (chunks) whose activations it holds;
    ``dense_activation_layers``: how many of ``activation_layers`` are dense blocks (an
    MoE model's ``first_dense_layers``, which lead the model and so sit on stage 0 and on).
    """
    index: int
    name: str
    layers: int
    activation_layers: float
    embedding: bool
    head: bool
    in_flight: float
    dense_activation_layers: float = 0.0


def in_flight_chunks(i: int, p: int, v: int, m: int) -> int:
    """Model chunks whose forward activations stage ``i`` holds at its peak (1F1B).

    Megatron-LM ``megatron/core/pipeline_parallel/schedules.py`` (core, 2025-08)
    ``get_pp_rank_microbatches``: without interleaving rank i runs ``p - i - 1`` warm-up
    forwards, then one more forward before its first backward: ``min(p - i, m)``
    micro-batches in flight. Interleaved: ``(p - i - 1) * 2 + (v - 1) *
    microbatch_group_size_per_vp_stage`` (default ``p``) warm-up chunks plus one, at most
    ``m * v``. Rank 0 then holds ``p + (p-1)/v`` micro-batches of its layers, Korthikanti
    et al. 2022 Sec. 4.2.3's ``1 + (p-1)/(p v)`` times the non-interleaved L layers; the
    last rank ``(v - 1) p + 1`` chunks, more than the one micro-batch of plain 1F1B.
    """
    if v <= 1:
        return min(p - i, max(m, 1))
    return min((p - i - 1) * 2 + (v - 1) * p + 1, max(m, 1) * v)


def dualpipe_in_flight(i: int, p: int) -> tuple[int, int]:
    """``(shallow, deep)``: micro-batch chunks of each of its two stages that DualPipe rank
    ``i`` holds at its peak; rank i holds stages ``lo = min(i, p-1-i)`` and ``p-1-lo``.

    Counted from deepseek-ai/DualPipe ``dualpipe/dualpipe.py`` ``DualPipe.step`` (commit
    3da1bbe): phase 0 of a rank is its shallow stage ``lo`` (the forward direction on the
    first half of the ranks, the reverse one on the second), phase 1 its deep stage. With
    ``half_rank = lo`` and ``H = p/2``: step 1 runs ``2(H - lo - 1)`` phase-0 forwards,
    step 2 ``lo + 1`` pairs of phase-0 and phase-1 forwards, step 3 ``H - lo - 1`` phase-1
    backward + forward pairs (a backward frees one, a forward adds one), and from step 4
    each ``_forward_backward_chunk`` adds one and frees one. The peak, before step 4's
    first backward, is ``2(H - lo - 1) + lo + 1 + 1 = p - lo`` chunks of the shallow stage
    and ``lo + 1`` of the deep one: ``p + 1`` in all on every rank (the README's
    "Activation Per Device PP+1"), but split unevenly: rank 0 holds p chunks of stage 0 and
    one of stage p-1. A deferred weight-gradient chunk (zero bubble) is counted as freed
    with its backward."""
    lo = min(i, p - 1 - i)
    return p - lo, lo + 1


def stage_plans(layers: tuple[int, ...], m: int, v: int = 1,
                schedule: str = "1f1b", dense_layers: int = 0) -> tuple[StagePlan, ...]:
    """Every pipeline rank's :class:`StagePlan` (one ``only`` plan without a pipeline).

    1F1B: rank i holds its layers and ``in_flight_chunks(i)`` chunks of them (chunk =
    layers / v). DualPipe (DeepSeek-V3 report Sec. 3.2.1; deepseek-ai/DualPipe README
    table "Parameter Per Device 2x, Activation Per Device PP+1"; the example places
    stages ``rank`` and ``pp - 1 - rank`` on a rank): each rank holds the parameters of
    stages i and p-1-i and ``p + 1`` chunks of activations, half of each direction.
    Every stage so lives on two ranks ("two copies of the model parameters", V3 Sec.
    3.2.1); each rank keeps the gradients and optimizer states of both its stages, not
    sharded with the other copy (the conservative reading; the copies' gradient
    all-reduce is not in the step time). The p + 1 chunks split as
    :func:`dualpipe_in_flight` counts them: ``(p - lo) x layers[lo] + (lo + 1) x
    layers[p-1-lo]`` layer-equivalents.

    ``dense_layers``: the model's leading dense blocks (``first_dense_layers``); each plan's
    ``dense_activation_layers`` counts the held chunks' dense blocks (with interleaving,
    the stage's dense share of its held chunks).
    """
    p = len(layers)
    starts = [sum(layers[:i]) for i in range(p)]
    dense = [max(0, min(dense_layers - starts[i], layers[i])) for i in range(p)]
    if p == 1:
        held = float(layers[0]) * min(1, max(m, 1))
        return (StagePlan(0, "only", layers[0], held, True, True, 1,
                          held * dense[0] / layers[0] if layers[0] else 0.0),)
    out = []
    for i, n in enumerate(layers):
        name = "first" if i == 0 else "last" if i == p - 1 else "middle"
        if schedule == "dualpipe":
            j = p - 1 - i
            ends = i in (0, p - 1)
            lo, hi = min(i, j), max(i, j)
            c_lo, c_hi = dualpipe_in_flight(i, p)
            out.append(frozen_new(StagePlan, dict(
                index=i, name="ends" if ends else "middle", layers=n + layers[j],
                activation_layers=float(c_lo * layers[lo] + c_hi * layers[hi]), embedding=ends,
                head=ends, in_flight=p + 1,
                dense_activation_layers=float(c_lo * dense[lo] + c_hi * dense[hi]))))
            continue
        chunks = in_flight_chunks(i, p, v, m)
        held = chunks * n / v
        # frozen_new: StagePlan's own __init__ costs 1.4 us a rank (the fields in order)
        out.append(frozen_new(StagePlan, dict(index=i, name=name, layers=n,
                                              activation_layers=held, embedding=i == 0,
                                              head=i == p - 1, in_flight=chunks / v,
                                              dense_activation_layers=held * dense[i] / n if n else 0.0)))
    return tuple(out)


def one_f_one_b_s(f: list[float], b: list[float], m: int) -> float:
    """Makespan (seconds) of the non-interleaved 1F1B schedule with per-stage forward
    ``f[i]`` and backward ``b[i]`` seconds per micro-batch and ``m`` micro-batches.

    The schedule (Narayanan et al. 2021 Sec. 2.2; Megatron-LM
    ``forward_backward_pipelining_without_interleaving``): stage i runs
    ``w_i = min(p - i - 1, m)`` warm-up forwards, then alternates one forward and one
    backward, then drains the remaining backwards. F(i, k) needs F(i-1, k); B(i, k) needs
    B(i+1, k) (on the last stage its own F(i, k)); each stage runs its ops in that order.
    Each op's end = max(end of the stage's previous op, end of its dependency) + its
    time: the earliest-start timing of that fixed order, computed exactly here (ops
    visited in passes until all are placed; every pass places at least one).

    Derivation (tests/engine/test_pipeline_stages.py checks each step by hand and
    against an independent time-stepped simulation of the same schedule):

    * Equal stages (f, b): micro-batch 0 reaches the last stage after (p-1) f; from
      then on the last stage alternates F and B without waiting, m (f + b); the last
      backward then crosses the other p-1 stages, (p-1) b: makespan
      ``(m + p - 1)(f + b)``, the bubble ``(p - 1)(f + b)`` beyond the ideal m (f + b).
    * Unequal stages, t_i = f_i + b_i: every stage k works m t_k; it cannot start
      before micro-batch 0 crossed the stages before it (sum_{i<k} f_i) and its last
      backward still has to cross them (sum_{i<k} b_i), so
      ``makespan >= max_k (m t_k + sum_{i<k} t_i)``. Stage k also idles once in warm-up
      when the round trip of micro-batch 0 through the stages after it,
      sum_{i>k} t_i, is longer than its own p-k-1 warm-up forwards (p=2, f = [2, 1],
      b = [4, 2], m = 3: the first stage waits 3 - 2 = 1, makespan 19, not the
      18 the bound gives).
    * Every stage waits at most for the slowest stage's period t_max in the steady
      state, and the fill and drain cross each stage once:
      ``makespan <= (m - 1) t_max + sum_i t_i``, reached when the slowest stage is the
      last (p=2, f = [1, 2], b = [2, 4], m = 3: 21). This holds when every stage's
      backward is the same multiple of its forward, as here (layers, and the head,
      all about 2:1); a stage with a relatively slower backward can exceed it.

    Between the two bounds the value depends on where the slow stage sits, so it is
    computed: O(p m) operations.
    """
    p = len(f)
    orders = []
    for i in range(p):
        w = min(p - i - 1, m)
        ops = [(0, k) for k in range(w)]
        nf, nb = w, 0
        while nb < m:
            if nf < m:
                ops.append((0, nf))
                nf += 1
            ops.append((1, nb))
            nb += 1
        orders.append(ops)
    fend = [[-1.0] * m for _ in range(p)]
    bend = [[-1.0] * m for _ in range(p)]
    clock = [0.0] * p
    pos = [0] * p
    left = 2 * m * p
    while left:
        placed = 0
        for i in (*range(p), *range(p - 1, -1, -1)):
            ops, t = orders[i], clock[i]
            while pos[i] < len(ops):
                kind, k = ops[pos[i]]
                if kind == 0:
                    dep = fend[i - 1][k] if i else 0.0
                    if dep < 0:
                        break
                    t = fend[i][k] = max(t, dep) + f[i]
                else:
                    dep = bend[i + 1][k] if i < p - 1 else fend[i][k]
                    if dep < 0:
                        break
                    t = bend[i][k] = max(t, dep) + b[i]
                pos[i] += 1
                placed += 1
            clock[i] = t
        if not placed:          # pragma: no cover - the order above is always feasible
            raise RuntimeError("1F1B order deadlocked")
        left -= placed
    return max(clock)


def bubble_stage_times(f: list[float], b: list[float], m: int, v: int = 1) -> float:
    """The pipeline bubble in units of the slowest stage's ``f + b``: the 1F1B makespan
    (:func:`one_f_one_b_s`) minus the ``m (f_k + b_k)`` the slowest stage works, over
    ``f_k + b_k``; ``(p - 1)`` for equal stages. Interleaving divides it by ``v``
    (Narayanan et al. 2021 Sec. 2.2.2, as the engine does for equal stages)."""
    if len(f) <= 1:
        return 0.0
    t = [a + c for a, c in zip(f, b)]
    top = max(t)
    if not top:
        return 0.0
    if max(t) - min(t) <= 1e-12 * top:          # equal stages: the closed form
        return (len(f) - 1) / (v or 1)
    mm = min(max(m, 1), bubble_micro_batch_cap(len(f)))
    return (one_f_one_b_s(f, b, mm) - mm * top) / top / (v or 1)


def bubble_micro_batch_cap(p: int) -> int:
    """Micro-batches past which the bubble of unequal stages no longer changes: once the
    schedule is periodic (each further micro-batch adds the slowest stage's f + b) the
    makespan minus ``m (f + b)`` is constant, so :func:`bubble_stage_times` simulates at
    most ``max(1024, 16 p)`` of them (the test checks the bubble at that many equals the
    one at four times as many, to 1e-9 of a stage, on random stage times)."""
    return max(1024, 16 * p)


def dualpipe_bubble_s(p: int, f_s: float, b_s: float, w_s: float, fb_s: float | None = None) -> float:
    """DualPipe's bubble, seconds: ``(PP/2 - 1)(F&B + B - 3W)`` (DeepSeek-V3 technical
    report, Sec. 3.2.1, Table 2; deepseek-ai/DualPipe README "Pipeline Bubbles and Memory
    Usage Comparison"). ``f_s``: a forward chunk; ``b_s``: a full backward chunk;
    ``w_s``: its weight-gradient part; ``fb_s``: a forward and a backward chunk run
    overlapped (their computation in sequence, the communication hidden: ``f + b`` when
    not given)."""
    fb = f_s + b_s if fb_s is None else fb_s
    return max(0.0, (p / 2 - 1) * (fb + b_s - 3 * w_s))


def megatron_layout(layers: tuple[int, ...], v: int = 1, chunks: tuple | None = None) -> str:
    """``--pipeline-model-parallel-layout`` for a per-stage split: ``E`` the embedding,
    ``t`` a decoder layer, ``L`` the loss, virtual stages split by ``|`` in Megatron-LM's
    order (``pipeline_parallel_layer_layout.py``: entry ``vpp_rank * p + pp_rank``, parsed
    by ``parse_str_to_list``); with ``v`` chunks each stage's layers split evenly, unless
    ``chunks`` gives the ``p v`` virtual stages' counts (:func:`chunk_layers`)."""
    chunks = list(chunks if chunks is not None else chunk_layers(layers, v))
    parts = []
    for j, n in enumerate(chunks):
        s = ("E" if j == 0 else "") + (f"t*{n}" if n > 1 else "t" if n == 1 else "")
        if j == len(chunks) - 1:
            s += ("," if n else "") + "L"
        parts.append(s)
    return "|".join(parts)


def interleaved_order(i: int, p: int, v: int, m: int) -> list[tuple[str, int, int]]:
    """Rank ``i``'s operations under Megatron-LM's interleaved 1F1B, in order: ``("F" |
    "B", micro_batch, chunk)``. Megatron-LM ``megatron/core/pipeline_parallel/schedules.py``
    (core, 2025-08) ``forward_backward_pipelining_with_interleaving`` with the default
    ``microbatch_group_size_per_vp_stage = p``: ``(p - i - 1) * 2 + (v - 1) * p`` warm-up
    forwards (at most ``m v``), then one forward and one backward each until the
    forwards run out, then the remaining backwards. The k-th forward runs chunk
    ``(k // p) % v`` of micro-batch ``(k // (p v)) p + k % p``; the k-th backward the
    same micro-batch of chunk ``v - 1 - (k // p) % v`` (``get_model_chunk_id``,
    ``get_microbatch_id_in_model_chunk``). Needs ``m % p == 0``."""
    n = m * v
    warm = min((p - i - 1) * 2 + (v - 1) * p, n)

    def op(kind, k):
        chunk = (k // p) % v
        return (kind, (k // (p * v)) * p + k % p, chunk if kind == "F" else v - 1 - chunk)

    out = [op("F", k) for k in range(warm)]
    for k in range(n - warm):
        out += [op("F", warm + k), op("B", k)]
    out += [op("B", k) for k in range(n - warm, n)]
    return out


def interleaved_makespan_s(f: list[float], b: list[float], p: int, v: int, m: int) -> float:
    """Makespan (seconds) of Megatron-LM's interleaved 1F1B (:func:`interleaved_order`)
    with ``f[s]`` / ``b[s]`` the forward / backward seconds of virtual stage ``s`` (Megatron's
    layout order, ``s = chunk * p + rank``; ``p v`` entries), communication free. Each rank
    runs its operations in its order, each as soon as the rank is free and its input is
    ready: the forward of stage s after that micro-batch's forward of stage s - 1, the
    backward after its backward of stage s + 1 (the last stage's after its own forward).
    Raises ``ValueError`` when ``m`` is not a multiple of ``p``."""
    if m % p:
        raise ValueError(f"interleaving needs micro-batches a multiple of {p}, got {m}")
    orders = [interleaved_order(i, p, v, m) for i in range(p)]
    pos, free = [0] * p, [0.0] * p
    done: dict = {}
    last = p * v - 1
    left = sum(len(o) for o in orders)
    while left:
        moved = False
        for i in range(p):
            while pos[i] < len(orders[i]):
                kind, mb, c = orders[i][pos[i]]
                s = c * p + i
                dep = ((("F", mb, s - 1) if s else None) if kind == "F"
                       else (("B", mb, s + 1) if s < last else ("F", mb, s)))
                if dep is not None and dep not in done:
                    break
                start = max(free[i], done[dep] if dep is not None else 0.0)
                free[i] = done[(kind, mb, s)] = start + (f[s] if kind == "F" else b[s])
                pos[i] += 1
                left -= 1
                moved = True
        if not moved:
            raise RuntimeError("interleaved schedule deadlocked")
    return max(free)
