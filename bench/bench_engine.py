"""Engine benchmarks: they print figures measured in one run; they never pass or fail.

    python bench/bench_engine.py            # all figures, about a minute
    python bench/bench_engine.py --quick    # fewer repetitions

1. The bandwidth scheduler on the step the engine builds for Llama-2-70B under
   ZeRO-Infinity (parameters and optimizer on NVMe, 2 DGX H100 nodes), at 80 layers and
   at 1,000: the C extension vs the Python reference vs the same model written with SimPy
   (``SimPyStep``: the same task graph, bandwidths, pools, consumption weights, streams
   and dependencies), each ratio printed only after the makespans are checked equal
   (rel 1e-9); then the C scheduler's cost per task at 1,000 layers over 80 (issue #17:
   >= 50x SimPy at 80 layers, >= 100x at 1,000, cost per task within 1.5x).
   ``--scheduler`` runs this section alone.
2. Scenario evaluations per second per core, cycling through a grid of distinct
   Llama-2-70B (80-layer) scenarios (strategy x nodes x micro batch x recompute x
   prefetch depth), so no two consecutive calls see the same input:
   - full: memory + the simulated step (breakdown, links, verdict) + checkpoint goodput,
     as sweeps and the API run it (``detail=False``);
   - full with detail: also the step timeline with its critical path and the checkpoint
     Monte-Carlo, as a run's result page shows it; beside it the same reports made the
     way they were before issue #17 (the step's graph rebuilt in Python for the task
     names, the timeline and critical path walked in Python, the Monte-Carlo on numpy's
     percentile: ``tests/engine/test_detail_fast.py``'s references, which the tests hold
     equal to the new path), in the same rounds: the ratio is issue #17's (>= 4x);
3. llm-analysis's ``train()`` (memory + analytic step time, no simulation) and the engine
   on the same configurations (:func:`matched_configs`): 160 Llama-style models, no two of
   the same width and depth, each registered with llm-analysis and given one configuration
   of its ZeRO stage x GPUs x micro batch x recompute x TP grid on H100 SXM, written as the
   same scenario. The ratios are printed only after checking, pair by pair, that both
   computed the same thing (parameter counts, weights and optimizer states per GPU within
   0.1 %: :func:`matched_agree`). Measured in the same run in alternating rounds (the best
   round of each), so the ratio holds on any machine:
   - quick: memory only, the live estimate of the form, memos warm (each scenario was
     seen in an earlier pass over the set);
   - quick, cold: the same with every engine memo cleared before each call, on a model
     the process has not evaluated (issue #17: >= 3x llm-analysis);
   - full (``detail=False``) on the same scenarios (goal >= 0.30x llm-analysis).
   ``--quick-only`` runs this section alone. ``pip install llm-analysis`` (and ``simpy`` for 1.) to measure them.
4. Calculon (calculon-ai/calculon, not on PyPI) on Korthikanti et al. 2022 Table 5's eight
   runs, read from its own model, execution and system files, against the engine's full
   evaluation (``detail=False``) of scenarios written from the same numbers, in the same
   rounds; the ratio is printed only after checking that both computed the same run (GPUs,
   global batch, parameter count, step time within 25 %). Issue #13's goal: >= 3x.
   ``--calculon DIR`` (or ``CALCULON_DIR``): a checkout, installed with
   ``pip install DIR pandas psutil`` (its package imports both).
5. Start-up: ``python -m simulation evaluate FILE`` (a Llama-2-7B scenario on one H100) as a
   subprocess, the median of 11 runs, against ``python -c "import numpy, numpy.random"`` (what
   an evaluation cannot do without: the step's arrays, the checkpoint Monte-Carlo) and
   ``python -c pass``. Bytecode is cached in a temporary folder (``PYTHONPYCACHEPREFIX``,
   after one warm-up run), as an installed package has it.
"""

from __future__ import annotations

import argparse
import bisect
import json
import math
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import itertools  # noqa: E402

from simulation import ScenarioError, estimate_dict, evaluate_dict  # noqa: E402
from simulation.memo import forget  # noqa: E402
from simulation.scheduler import _REL, COMPUTE, GraphError, path_weights, simulate  # noqa: E402
from simulation.params import model_params  # noqa: E402
from simulation.parallel import layout  # noqa: E402
from simulation.scenario import Scenario  # noqa: E402
from simulation.states import state_bytes  # noqa: E402
from simulation.step import links_for, rank_model  # noqa: E402
from simulation.stepgraph import graph_arrays  # noqa: E402

# Section 1's step: the last micro-batch (gradient reduction and the optimizer step
# included) of Llama-2-70B under ZeRO-Infinity, parameters and optimizer states on the
# NVMe drives, on two DGX H100 nodes; ``step_arrays`` sets the layer count.
STEP_SCENARIO = {"model": {"preset": "llama2-70b"}, "cluster": {"node": "dgx-h100", "num_nodes": 2},
                 "training": {"micro_batch_size": 1, "global_batch_size": 32, "seq_len": 4096,
                              "recompute": "full", "flash_attention": True},
                 "strategy": {"kind": "zero_infinity", "offload_params": "nvme",
                              "offload_optimizer": "nvme"}}


def step_arrays(layers: int) -> dict:
    """The graph the engine simulates for ``STEP_SCENARIO`` with ``layers`` layers (the
    preset's widths; at 1,000 layers the rank updates 12.5x the parameters, in 12.5x the
    optimizer sub-groups), built as ``step.step_report`` builds it."""
    d = {**STEP_SCENARIO, "model": {**STEP_SCENARIO["model"], "num_layers": layers}}
    sc = Scenario.from_dict(d)
    pc, lay = model_params(sc.model), layout(sc)
    sb = state_bytes(sc.training.precision, sc.training.optimizer, sc.training.dtypes)
    return graph_arrays(rank_model(sc, pc, lay, sb), links_for(sc, lay), True)


class SimPyStep:
    """The scheduler's model (``simulation/scheduler.py``'s semantics) written with SimPy,
    task for task on the same arrays: one process per task, a dependency an ``all_of`` of
    its predecessors' end events, a compute task a ``timeout`` on its stream, a transfer a
    process that sleeps until its flow would end and is interrupted when its max-min fair
    rate changes (rates from the specification's ``max_min_rates`` on lists, with the graph's
    consumption weights), pool slots and streams handed out by a dispatcher.

    The dispatcher keeps the specification's rules, which SimPy's own resources (first come,
    first served, granted the moment a slot frees) do not: at each instant it runs after
    every other event due then (an event of priority 2; SimPy's own are 0 and 1), ends what
    the specification ends there (computes and flows due within its tolerance), lets the
    ends' successors become ready, and only then starts the lowest-id ready task that may
    start, again and again; a zero-length task ends at once and its successors join before
    the next start. ``run()`` returns ``(start_s, end_s, makespan_s)``; the benchmark checks
    the makespan against the C scheduler's before it prints a ratio. It keeps times only,
    not the link and stream totals the C scheduler also adds up (less work on SimPy's side).
    """

    def __init__(self, a: dict):
        import simpy

        self.simpy = simpy
        self.env = env = simpy.Environment()
        self.n = n = len(a["kind"])
        self.kind, self.stream = a["kind"].tolist(), a["stream"].tolist()
        self.dur, self.size = a["duration"].tolist(), a["size"].tolist()
        self.acq, self.rel = a["acquire"].tolist(), a["release"].tolist()
        pp, pl, pw = a["path_ptr"].tolist(), a["path_links"].tolist(), path_weights(a).tolist()
        self.paths = [pl[pp[i]:pp[i + 1]] for i in range(n)]
        self.weights = [pw[pp[i]:pp[i + 1]] for i in range(n)]
        dp, di = a["dep_ptr"].tolist(), a["dep_idx"].tolist()
        self.bw = a["link_bw"].tolist()
        self.free = a["pool_cap"].tolist()
        self.on_stream = [-1] * a["n_streams"]     # the compute task each stream runs
        self.start, self.end = [math.nan] * n, [math.nan] * n
        self.ended = [env.event() for _ in range(n)]
        self.go = [env.event() for _ in range(n)]
        self.ready = []            # ready tasks not started, ascending ids
        self.flows = {}            # task -> [bytes left, rate, its process while it sleeps]
        self.new_flows = []        # started this instant, waiting for their first rate
        self.flows_changed = False
        self.settled_s = 0.0       # when the flows' bytes left were last brought up to date
        self.due = False           # a timer fired: something may end now
        self.pending = None        # the dispatcher's next pass
        self.finished = 0
        for i in range(n):
            env.process(self.task(i, di[dp[i]:dp[i + 1]]))

    def run(self):
        self.env.run()
        if self.finished < self.n:
            raise GraphError("no task can make progress (pool slots never released?)")
        return self.start, self.end, max(self.end, default=0.0)

    def task(self, i, deps):
        if deps:
            yield self.env.all_of([self.ended[d] for d in deps])
        bisect.insort(self.ready, i)
        self.poke()
        yield self.go[i]
        if self.end[i] == self.end[i]:           # a zero-length task: it ended as it started
            return
        if self.kind[i] == COMPUTE:
            yield self.env.timeout(self.dur[i])
            if self.end[i] != self.end[i]:       # not ended early, within the tolerance
                self.poke(due=True)
            return
        f = self.flows[i]
        while True:
            f[2] = self.env.active_process
            try:
                yield self.env.timeout(f[0] / f[1])
            except self.simpy.Interrupt:
                if self.end[i] == self.end[i]:   # ended by the dispatcher
                    return
                continue                         # a new rate: sleep again
            f[2] = None
            self.poke(due=True)
            return

    def max_min_rates(self, flows):
        """``scheduler.max_min_rates`` on Python lists (progressive filling, the same
        operations in the same order; numpy scalars would cost SimPy's side 3x)."""
        paths, weights, nl = self.paths, self.weights, len(self.bw)
        rem, count, wsum = list(self.bw), [0] * nl, [0.0] * nl
        for f in flows:
            for l, w in zip(paths[f], weights[f]):
                count[l] += 1
                wsum[l] += w
        rate, left = {}, list(flows)
        while left:
            best = min(rem[l] / wsum[l] for l in range(nl) if count[l] > 0)
            for l in range(nl):
                if count[l] > 0 and rem[l] / wsum[l] <= best * (1 + _REL):
                    keep = []
                    for f in left:
                        if l in paths[f]:
                            rate[f] = best
                            for k, w in zip(paths[f], weights[f]):
                                rem[k] -= best * w
                                count[k] -= 1
                                wsum[k] -= w
                        else:
                            keep.append(f)
                    left = keep
        return rate

    def poke(self, due=False):
        """Ask for a dispatcher pass at this instant, after everything else due now."""
        self.due |= due
        if self.pending is None:
            ev = self.pending = self.simpy.events.Event(self.env)
            ev._ok, ev._value = True, None       # as SimPy's own Timeout and Initialize do
            ev.callbacks.append(self.dispatch)
            self.env.schedule(ev, priority=2)

    def finish(self, i):
        self.end[i] = self.env.now
        self.finished += 1
        if self.rel[i] >= 0:
            self.free[self.rel[i]] += 1
        self.ended[i].succeed()

    def dispatch(self, _event):
        self.pending = None
        now = self.env.now
        if self.due:                 # advance the flows, end what is due (scheduler.py)
            self.due = False
            dt = now - self.settled_s
            self.settled_s = now
            for f in self.flows.values():
                f[0] -= f[1] * dt
            tol = _REL * max(1.0, now) * 1e3
            ended = False
            for s, i in enumerate(self.on_stream):
                if i != -1 and self.start[i] + self.dur[i] <= now + tol:
                    self.on_stream[s] = -1
                    self.finish(i)
                    ended = True
            for i in sorted(self.flows):
                f = self.flows[i]
                if f[1] and (now + f[0] / f[1] <= now + tol or f[0] <= 0):
                    del self.flows[i]
                    self.finish(i)
                    if f[2] is not None:
                        f[2].interrupt()
                    ended = self.flows_changed = True
            if ended:                # their successors become ready before anything starts
                self.poke()
                return
        while True:                  # start the lowest-id ready task that may start
            for k, i in enumerate(self.ready):
                p = self.acq[i]
                if (p < 0 or self.free[p] > 0) and \
                        (self.kind[i] != COMPUTE or self.on_stream[self.stream[i]] == -1):
                    break
            else:
                break
            del self.ready[k]
            if p >= 0:
                self.free[p] -= 1
            self.start[i] = now
            if self.kind[i] == COMPUTE and self.dur[i] > 0:
                self.on_stream[self.stream[i]] = i
                self.go[i].succeed()
            elif self.kind[i] != COMPUTE and self.size[i] > 0:
                self.flows[i] = [self.size[i], 0.0, None]
                self.new_flows.append(i)
                self.flows_changed = True
            else:                    # ends at once; its successors join before the next start
                self.finish(i)
                self.go[i].succeed()
                self.poke()
                return
        if self.flows_changed:       # new max-min rates; wake the flows whose rate changed
            self.flows_changed = False
            rates = self.max_min_rates(sorted(self.flows))
            for i, r in rates.items():
                f = self.flows[i]
                if f[1] != r:
                    f[1] = r
                    if f[2] is not None:
                        f[2].interrupt()
            for i in self.new_flows:
                self.go[i].succeed()
            self.new_flows = []


def simpy_schedule(a: dict):
    """``(start_s, end_s, makespan_s)`` of the graph ``a`` run by :class:`SimPyStep`."""
    return SimPyStep(a).run()


def scenario_grid() -> list[dict]:
    """Valid scenarios: strategy x nodes x micro batch x recompute x prefetch depth."""
    out = []
    for kind, nodes, mbs, rec, depth in itertools.product(
            ["zero3", "fsdp_hybrid_shard", "zero2", "zero_offload", "zero_infinity"], [1, 2, 4, 8],
            [1, 2], ["full", "selective"], [1, 2]):
        d = {"model": {"preset": "llama2-70b"}, "cluster": {"node": "dgx-h100", "num_nodes": nodes},
             "training": {"micro_batch_size": mbs, "global_batch_size": 64, "seq_len": 4096,
                          "recompute": rec, "flash_attention": True},
             "strategy": {"kind": kind, "prefetch_depth": depth}}
        try:
            evaluate_dict(d, detail=False)
        except ScenarioError:
            continue
        out.append(d)
    return out


def timeit_cycle(fn, inputs, min_s):
    """Seconds per call of fn over inputs, taken in turn until min_s has passed."""
    reps, t0 = 0, time.perf_counter()
    for d in itertools.cycle(inputs):
        fn(d)
        reps += 1
        el = time.perf_counter() - t0
        if el >= min_s and reps >= len(inputs):
            return el / reps


def best_rounds(workloads: dict, min_s: float, rounds: int = 15) -> dict:
    """Seconds per call of each ``(fn, inputs)`` in ``workloads``: the best of ``rounds``
    rounds, the workloads taking turns in every round (a noisy neighbour slows all alike)."""
    best = dict.fromkeys(workloads, float("inf"))
    for _ in range(rounds):
        for name, (fn, inputs) in workloads.items():
            best[name] = min(best[name], timeit_cycle(fn, inputs, min_s / rounds))
    return best


def llama_family(n: int = 160) -> list[dict]:
    """``n`` Llama-style decoders, no two alike in width and depth: hidden 2,048-8,192 in
    steps of 256 (head dim 128, grouped-query attention with gcd(heads, 8) KV heads), 16-80
    layers, SwiGLU MLP of Llama's width (8h/3 rounded up to a multiple of 256: the
    ``multiple_of`` rule of meta-llama's ``model.py``), RMSNorm, RoPE, 32,000-token vocabulary,
    tied embeddings (llm-analysis counts one embedding matrix), 4,096-token context. Model
    ``i`` has width step ``i % 25`` and depth ``16 + 7 i % 65``: distinct for ``n <= 325``."""
    import math
    out = []
    for i in range(n):
        h = 2048 + 256 * (i % 25)
        heads = h // 128
        f = -(-8 * h // 3 // 256) * 256
        out.append({"name": f"llama-style-{i}", "num_layers": 16 + (7 * i) % 65, "hidden_size": h,
                    "num_attention_heads": heads, "num_kv_heads": math.gcd(heads, 8),
                    "ffn_hidden_size": f, "vocab_size": 32000, "tied_embeddings": True,
                    "max_seq_len": 4096})
    return out


# (ZeRO stage, GPUs, micro batch, recompute, TP): llm-analysis's own grid of knobs
_LA_GRID = list(itertools.product([1, 2, 3], [8, 16, 32, 64], [1, 2], [0, 1, 2], [1, 2, 4, 8]))
_LA_RECOMPUTE = {0: "none", 1: "selective", 2: "full"}   # its ActivationRecomputation values


def matched_configs(n: int = 160):
    """``(llm_analysis_call, [(la_config, scenario)])``: llm-analysis ``train()`` and
    the engine on the same configurations, or None without llm-analysis.

    Each of :func:`llama_family`'s models is registered with llm-analysis (its
    ``model_configs`` table, as its ``--model_name`` JSON files are: a gated MLP of width f
    is its ``ffn_embed_dim`` 1.5 f, since it counts two matrices) and given the next
    configuration of the knob grid that both accept, as the same scenario: H100 SXM 80 GB
    (``dgx-h100`` nodes of 8), bf16 with Adam, ZeRO stage -> zero1/zero2/zero3, the same
    micro batch and global batch (one micro batch per step), sequence 4,096, the same
    recompute, TP with sequence parallelism (llm-analysis's ``sp_size`` defaults to TP),
    FlashAttention on both. Configurations with TP above the model's KV heads are skipped
    (llm-analysis then replicates KV heads in its count)."""
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")   # its import warns of no PyTorch
    try:
        from llm_analysis import config as la_config
        from llm_analysis.analysis import train
    except ImportError:
        return None

    def call(cfg):
        name, zero, gpus, mbs, rec, tp = cfg
        return train(model_name=name, gpu_name="h100-sxm-80gb", dtype_name="w16a16e16",
                     log_level="ERROR", batch_size_per_gpu=mbs, global_batch_size=mbs * gpus // tp,
                     seq_len=4096, tp_size=tp, activation_recomputation=rec, ds_zero=zero,
                     total_num_gpus=gpus, flops_efficiency=0.5, mlp_gated_linear_units=True)

    pairs, k = [], 0
    for m in llama_family(n):
        la_config.model_configs[m["name"]] = la_config.ModelConfig(
            name=m["name"], num_layers=m["num_layers"], n_head=m["num_attention_heads"],
            hidden_dim=m["hidden_size"], vocab_size=m["vocab_size"], max_seq_len=m["max_seq_len"],
            num_key_value_heads=m["num_kv_heads"], ffn_embed_dim=3 * m["ffn_hidden_size"] // 2,
            expansion_ratio=1.5 * m["ffn_hidden_size"] / m["hidden_size"], model_type="llama")
        for _ in range(len(_LA_GRID)):
            zero, gpus, mbs, rec, tp = _LA_GRID[k % len(_LA_GRID)]
            k += 1
            if tp > m["num_kv_heads"]:
                continue
            cfg = (m["name"], zero, gpus, mbs, rec, tp)
            d = {"model": dict(m), "cluster": {"node": "dgx-h100", "num_nodes": gpus // 8},
                 "training": {"micro_batch_size": mbs, "global_batch_size": mbs * gpus // tp,
                              "seq_len": 4096, "recompute": _LA_RECOMPUTE[rec],
                              "flash_attention": True, "tensor_parallel": tp,
                              "sequence_parallel": tp > 1},
                 "strategy": {"kind": f"zero{zero}"}}
            try:
                call(cfg)
                estimate_dict(d)
            except (AssertionError, ScenarioError):  # llm-analysis asserts "does not fit"
                continue
            pairs.append((cfg, d))
            break
    return call, pairs


def matched_agree(call, pairs, rel: float = 1e-3):
    """True when llm-analysis and the engine computed the same thing on every pair, else
    what differs: the same parameter count and, per GPU, the same bf16 weights and the same
    fp32 master weights + Adam moments (12 B/param, sharded by ZeRO stage >= 1), each within
    ``rel``. Gradients and activations are not compared: llm-analysis counts fp32
    gradients (``master_weights_dtype_bytes``) where DeepSpeed keeps them in bf16
    (``engine.get_data_types``), and its activations are Korthikanti's formula."""
    for cfg, d in pairs:
        la, r = call(cfg), estimate_dict(d)
        hbm = r["memory"]["per_gpu"]["hbm"]
        for what, ours, theirs in (
                ("parameters", r["model"]["num_params"], la["num_params_total"]),
                ("weights per GPU", hbm["params_bytes"], la["weight_memory_per_gpu"]),
                ("optimizer states per GPU", hbm["optimizer_bytes"], la["optimizer_state_memory_per_gpu"])):
            if abs(ours / theirs - 1) > rel:
                return f"{cfg}: {what} {ours:.6g} against llm-analysis's {theirs:.6g}"
    return True


CALCULON_RUNS = [(m, r) for m in ("megatron-22B", "gpt3-175B", "turing-530B", "megatron-1T")
                 for r in ("full", "seqsel")]


def calculon_calls(base_dir):
    """``(call, configs, engine_scenarios)`` for Calculon on Korthikanti et al. 2022 Table 5's
    eight runs, read from its own files (``models/``, ``validation/seqsel/tab5/``,
    ``systems/a100_80e.json``, as its ``llm-validation`` command reads them), with the
    engine's scenario for each written from the same numbers; None without Calculon."""
    if not base_dir:
        return None
    import json
    import logging
    try:
        import calculon
        from calculon.llm import Llm
    except ImportError:
        return None

    def read(*parts):
        with open(os.path.join(base_dir, *parts)) as f:
            return json.load(f)

    log = logging.getLogger("bench.calculon")
    log.setLevel(logging.WARNING)         # quiet: its per-layer debug lines are never formatted
    system = calculon.System(read("systems", "a100_80e.json"))

    def call(cfg):
        app_json, exe_json = cfg
        m = Llm(Llm.Application(app_json), log)
        m.compile(system, Llm.Execution.from_json(exe_json))
        m.run(system)
        return m

    configs, scenarios = [], []
    for model, run in CALCULON_RUNS:
        app, exe = read("models", f"{model}.json"), read("validation", "seqsel", "tab5", f"{model}_{run}.json")
        configs.append((app, exe))
        seqsel = exe["activation_recompute"] == "attn_only"     # selective + sequence parallel
        tr = {"micro_batch_size": exe["microbatch_size"], "global_batch_size": exe["batch_size"],
              "seq_len": app["seq_size"], "precision": "bf16",
              "recompute": "selective" if seqsel else "full", "sequence_parallel": seqsel,
              "tensor_parallel": exe["tensor_par"], "pipeline_parallel": exe["pipeline_par"]}
        if exe["pipeline_interleaving"] > 1:
            tr["interleave_stages"] = exe["pipeline_interleaving"]
        scenarios.append({
            "model": {"num_layers": app["num_blocks"], "hidden_size": app["hidden"],
                      "num_attention_heads": app["attn_heads"], "ffn_hidden_size": app["feedforward"],
                      "vocab_size": 51200, "gated_mlp": False, "tied_embeddings": True,
                      "position_embedding": "learned", "norm": "layernorm", "linear_bias": True,
                      "max_seq_len": app["seq_size"]},
            "cluster": {"node": "dgx-a100-80gb", "num_nodes": exe["num_procs"] // 8},
            "training": tr, "strategy": {"kind": "ddp"}})
    return call, configs, scenarios


def calculon_agrees(cal, step_rel=0.25):
    """True when Calculon and the engine computed the same thing on every run: the same
    GPUs and global batch, parameter counts within 0.1 %, and step times within
    ``step_rel`` of each other (two models of one measured run); else what differs."""
    call, configs, scenarios = cal
    from calculon.llm import Llm
    for (app, exe), d in zip(configs, scenarios):
        m, r = call((app, exe)), evaluate_dict(d, detail=False)
        name = f"{app['num_blocks']} layers, {exe['num_procs']} GPUs, {exe['activation_recompute']}"
        p_cal, p_eng = Llm.Application(app).num_parameters(), r["model"]["num_params"]
        if r["parallelism"]["num_gpus"] != exe["num_procs"] or \
                r["parallelism"]["global_batch_size"] != exe["batch_size"]:
            return f"{name}: GPUs or global batch differ"
        if abs(p_eng / p_cal - 1) > 1e-3:
            return f"{name}: {p_eng:.4g} parameters against Calculon's {p_cal:.4g}"
        s_cal, s_eng = m.get_stats_json(False)["total_time"], r["step"].get("time_s")
        if not s_eng or abs(s_eng / s_cal - 1) > step_rel:
            return f"{name}: step {s_eng} s against Calculon's {s_cal:.3f} s"
    return True


def detail_before():
    """``evaluate_dict(d, detail=True)`` made as before issue #17 (the references of
    tests/engine/test_detail_fast.py: the graph rebuilt for the timeline, the old
    Monte-Carlo), or None where the tests' packages (pytest, hypothesis) are missing."""
    try:
        from tests.engine.test_detail_fast import monte_carlo_before, timeline_before
    except ImportError:
        return None
    from simulation import checkpoint, step

    def call(d):
        fast = step.step_timeline, checkpoint.monte_carlo
        step.step_timeline, checkpoint.monte_carlo = timeline_before, monte_carlo_before
        try:
            return evaluate_dict(d, detail=True)
        finally:
            step.step_timeline, checkpoint.monte_carlo = fast
    return call


START_SCENARIO = {"model": {"preset": "llama2-7b"}, "cluster": {"node": "dgx-h100", "gpus_per_node": 1}}


def startup_s(runs: int = 11) -> dict:
    """Median wall seconds of ``python -m simulation evaluate FILE`` and of the floors
    (``import numpy, numpy.random``; ``pass``), each a fresh subprocess."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "scenario.json")
        with open(path, "w", encoding="utf-8") as f:
            json.dump(START_SCENARIO, f)
        env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
        env.update(PYTHONPYCACHEPREFIX=os.path.join(tmp, "pyc"),
                   PYTHONPATH=os.pathsep.join([root] + [p for p in [env.get("PYTHONPATH")] if p]))
        cmds = {"evaluate": [sys.executable, "-m", "simulation", "evaluate", path],
                "numpy": [sys.executable, "-c", "import numpy, numpy.random"],
                "python": [sys.executable, "-c", "pass"]}
        out = {}
        for name, cmd in cmds.items():
            subprocess.run(cmd, env=env, cwd=tmp, stdout=subprocess.DEVNULL, check=True)   # warm
            ts = []
            for _ in range(runs):
                t0 = time.perf_counter()
                subprocess.run(cmd, env=env, cwd=tmp, stdout=subprocess.DEVNULL, check=True)
                ts.append(time.perf_counter() - t0)
            out[name] = statistics.median(ts)
        return out


def timeit(fn, min_s):
    reps, t0 = 0, time.perf_counter()
    while True:
        fn()
        reps += 1
        el = time.perf_counter() - t0
        if el >= min_s:
            return el / reps


def scheduler_section(min_s: float) -> None:
    """Section 1: the C scheduler against the Python reference and against SimPy on the
    same graphs, makespans checked equal first; then its cost per task as the step grows."""
    print(f"\n1. scheduler: the last micro-batch of Llama-2-70B, ZeRO-Infinity (parameters and "
          "optimizer on NVMe), 2 DGX H100 nodes")
    try:
        import simpy  # noqa: F401
    except ImportError:
        simpy = None
        print("   SimPy not installed (pip install simpy): no SimPy figures")
    cost = {}
    for layers, goal in ((80, 50), (1000, 100)):
        a = step_arrays(layers)
        n, edges = len(a["kind"]), len(a["dep_idx"])
        c = simulate(a, "c").makespan_s
        work = {"c": (lambda x: simulate(x, "c"), [a]),
                "python": (lambda x: simulate(x, "python"), [a])}
        peers = [("Python reference", simulate(a, "python").makespan_s, "python")]
        if simpy:
            peers.append(("SimPy, same graph", simpy_schedule(a)[2], "simpy"))
            work["simpy"] = (simpy_schedule, [a])
        for name, m, _ in peers:          # like for like, or no ratio at all
            if abs(m - c) > 1e-9 * c:
                raise SystemExit(f"{name}: makespan {m!r} s, C {c!r} s: not the same schedule")
        t = best_rounds(work, min_s, rounds=3)
        cost[layers] = t["c"] / n
        print(f"   {layers} layers: {n:,} tasks, {edges:,} dependencies; makespan {c:.6f} s in C"
              + "".join(f", {name.split(',')[0]} equal" for name, _, _ in peers))
        print(f"     C extension       {t['c'] * 1e3:10.3f} ms  {t['c'] / n * 1e9:8.1f} ns/task")
        for name, _, key in peers:
            want = f"goal >= {goal}x" if key == "simpy" else "goal >= 50x"
            print(f"     {name:<17} {t[key] * 1e3:10.3f} ms  {t[key] / n * 1e9:8.1f} ns/task"
                  f"   C is {t[key] / t['c']:8.1f}x faster ({want})")
    print(f"   C cost per task, 1,000 layers / 80 layers: {cost[1000] / cost[80]:.2f}x (goal <= 1.5x)"
          f"; load average {', '.join(f'{x:.2f}' for x in os.getloadavg())}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--calculon", metavar="DIR", default=os.environ.get("CALCULON_DIR"),
                    help="a checkout of calculon-ai/calculon (its model, execution and system "
                         "files; the package importable): measure it side by side")
    ap.add_argument("--scheduler", action="store_true", help="section 1 only")
    ap.add_argument("--quick-only", action="store_true",
                    help="section 3 only (llm-analysis against the quick estimate)")
    args = ap.parse_args()
    min_s = 0.5 if args.quick else 2.0
    print(f"machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}")

    if not args.quick_only:
        scheduler_section(min_s)
    if args.scheduler:
        return

    grid = [] if args.quick_only else scenario_grid()
    work = {}
    if grid:
        work = {"full": (lambda d: evaluate_dict(d, detail=False), grid),
                "detail": (lambda d: evaluate_dict(d, detail=True), grid)}
    before = detail_before() if grid else None
    if before:
        work["detail-before"] = (before, grid)
    la = matched_configs()
    if la:
        call, pairs = la
        same_la = matched_agree(call, pairs)
        matched = [d for _, d in pairs]
        work["llm-analysis"] = (call, [cfg for cfg, _ in pairs])
        work["quick"] = (estimate_dict, matched)
        work["quick-cold"] = (lambda d: (forget(), estimate_dict(d)), matched)
        work["full-matched"] = (lambda d: evaluate_dict(d, detail=False), matched)
    cal = None if args.quick_only else calculon_calls(args.calculon)
    if cal:
        work["calculon"] = cal[:2]
        work["full-t5"] = (lambda d: evaluate_dict(d, detail=False), cal[2])
    t = best_rounds(work, 3 * min_s)
    if grid:
        grid_section(t, grid, before)
    llm_analysis_section(t, la, pairs if la else None, same_la if la else None)
    if args.quick_only:
        return
    if not cal:
        print("\n4. Calculon not measured (--calculon DIR: a checkout of calculon-ai/calculon, "
              "pip install DIR pandas psutil)")
    else:
        calculon_section(cal, t)
    st = startup_s(5 if args.quick else 11)
    print(f"\n5. start-up, median of {5 if args.quick else 11} subprocesses (load average "
          f"{os.getloadavg()[0]:.2f})")
    print(f"   python -m simulation evaluate (Llama-2-7B, one H100)  {st['evaluate'] * 1e3:7.0f} ms")
    print(f"   python -c 'import numpy, numpy.random'                {st['numpy'] * 1e3:7.0f} ms   "
          f"(the evaluation's floor: {st['numpy'] / st['evaluate']:.0%} of it)")
    print(f"   python -c pass                                        {st['python'] * 1e3:7.0f} ms")


def grid_section(t, grid, before):
    t_full, t_detail = t["full"], t["detail"]
    print(f"\n2. scenario evaluations, one core, cycling through {len(grid)} distinct Llama-2-70B "
          "(80-layer) scenarios on DGX H100 nodes")
    print(f"   full (memory + simulated step + goodput)  {1 / t_full:10,.0f} /s   ({t_full * 1e3:.3f} ms each; goal >= 2,000/s)")
    print(f"   full with timeline and Monte-Carlo        {1 / t_detail:10,.0f} /s   ({t_detail * 1e3:.3f} ms each)")
    if before:
        t_b = t["detail-before"]
        print(f"   the same as made before issue #17         {1 / t_b:10,.0f} /s   ({t_b * 1e3:.3f} ms each): "
              f"{t_b / t_detail:.2f}x faster now (goal >= 4x)")


def llm_analysis_section(t, la, pairs, same_la):
    if not la:
        print("\n3. llm-analysis not installed (pip install llm-analysis)")
    else:
        print(f"\n3. llm-analysis train() and tierlab on the same {len(pairs)} configurations: "
              f"{len(pairs)} distinct Llama-style models (hidden 2,048-8,192, 16-80 layers), one "
              "each, ZeRO 1-3 x 8-64 H100 SXM x micro batch x recompute x TP, sequence 4,096; "
              "same run, same rounds")
        if same_la is not True:
            print(f"   not the same computation, no ratio: {same_la}")
        else:
            t_la, t_quick, t_cold, t_fm = t["llm-analysis"], t["quick"], t["quick-cold"], t["full-matched"]
            print("   checked: parameter counts, bf16 weights and fp32 optimizer states per GPU within 0.1 % on every pair")
            print(f"   llm-analysis (analytic memory + step)     {1 / t_la:10,.0f} /s   ({t_la * 1e3:.3f} ms each)")
            print(f"   tierlab quick (memory only), memos warm   {1 / t_quick:10,.0f} /s   ({t_quick * 1e3:.3f} ms each)"
                  f"   {t_la / t_quick:5.2f}x llm-analysis (goal >= 3x)")
            print(f"   tierlab quick, every memo cleared first   {1 / t_cold:10,.0f} /s   ({t_cold * 1e3:.3f} ms each)"
                  f"   {t_la / t_cold:5.2f}x llm-analysis (issue #17: >= 3x on inputs never seen)")
            print(f"   tierlab full (memory + simulated step)    {1 / t_fm:10,.0f} /s   ({t_fm * 1e3:.3f} ms each)"
                  f"   {t_la / t_fm:5.2f}x llm-analysis (goal >= 0.30x)")
    print(f"   load average {', '.join(f'{x:.2f}' for x in os.getloadavg())}")


def calculon_section(cal, t):
    _, configs, scenarios = cal
    print(f"\n4. Calculon, Korthikanti et al. 2022 Table 5's {len(configs)} runs from its own files, "
          "the engine on the same configurations, same run, same rounds")
    same = calculon_agrees(cal)
    if same is not True:
        print(f"   not the same computation, no ratio: {same}")
        return
    t_cal, t_t5 = t["calculon"], t["full-t5"]
    print(f"   Calculon (compile + run, logging quiet)   {1 / t_cal:10,.0f} /s   ({t_cal * 1e3:.3f} ms each)")
    print(f"   tierlab full on the same runs             {1 / t_t5:10,.0f} /s   ({t_t5 * 1e3:.3f} ms each)")
    print(f"   tierlab full / Calculon                   {t_cal / t_t5:10.2f} x   (issue #13: >= 3x)")


if __name__ == "__main__":
    main()
