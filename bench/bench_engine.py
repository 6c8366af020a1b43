"""Engine benchmarks: they print figures measured in one run; they never pass or fail.

    python bench/bench_engine.py            # all figures, about a minute
    python bench/bench_engine.py --quick    # fewer repetitions

1. The bandwidth scheduler on a 1000-task step (ZeRO-3, 200 layers): the C extension vs
   the Python reference vs the same model written with SimPy (processes, interrupts on
   every rate change, max-min fair sharing), as events per second and ratios.
2. Scenario evaluations per second per core, cycling through a grid of distinct
   Llama-2-70B (80-layer) scenarios (strategy x nodes x micro batch x recompute x
   prefetch depth), so no two consecutive calls see the same input:
   - full: memory + the simulated step (breakdown, links, verdict) + checkpoint goodput,
     as sweeps and the API run it (``detail=False``);
   - full with detail: also the step timeline with its critical path and the checkpoint
     Monte-Carlo, as a run's result page shows it.
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
   ``pip install llm-analysis`` (and ``simpy`` for 1.) to measure them.
4. Calculon (calculon-ai/calculon, not on PyPI) on Korthikanti et al. 2022 Table 5's eight
   runs, read from its own model, execution and system files, against the engine's full
   evaluation (``detail=False``) of scenarios written from the same numbers, in the same
   rounds; the ratio is printed only after checking that both computed the same run (GPUs,
   global batch, parameter count, step time within 25 %). Issue #13's goal: >= 3x.
   ``--calculon DIR`` (or ``CALCULON_DIR``): a checkout, installed with
   ``pip install DIR pandas psutil`` (its package imports both).
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import itertools  # noqa: E402

from simulation import ScenarioError, estimate_dict, evaluate_dict  # noqa: E402
from simulation.memo import forget  # noqa: E402
from simulation.scheduler import COMPUTE, max_min_rates, simulate  # noqa: E402
from simulation.stepgraph import RankModel, build  # noqa: E402

LINKS = {"nvlink": 360e9, "nic": 40e9, "pcie_h2d": 55e9, "pcie_d2h": 55e9, "ddr": 77e9}
SCENARIO = {"model": {"preset": "llama2-70b"}, "cluster": {"node": "dgx-h100", "num_nodes": 2},
            "training": {"micro_batch_size": 1, "global_batch_size": 32, "seq_len": 4096,
                         "recompute": "full", "flash_attention": True},
            "strategy": {"kind": "zero3"}}


def step_graph(layers=200):
    r = RankModel(layers=layers, fwd_s=0.014, bwd_s=0.042, head_s=0.0, unit_params=8.5e8,
                  params_per_rank=6.9e10, param_bytes=2, grad_bytes=2, optimizer_state_bytes=12,
                  shard=8, shard_link="nvlink", replicas=1, dp=8, dp_link="nvlink", gpus_per_node=8, stage=3, tp=1,
                  tp_bytes=0.0, bwd_allreduces=2, act_ckpt_bytes=0.0, offload_params="none",
                  offload_optimizer="none", offload_activations="none", prefetch_depth=2,
                  miss_rate=0.0, hbm_bytes_per_s=3.35e12)
    return build(r, LINKS, last=False)


def simpy_makespan(g):
    """The same task graph in SimPy: one process per task, fair-shared links."""
    import simpy
    a = g.arrays()
    env = simpy.Environment()
    n = len(g.names)
    done = [env.event() for _ in range(n)]
    streams = [simpy.Resource(env, capacity=1) for _ in g.streams]
    pools = [simpy.Container(env, capacity=c, init=c) for c in g.pool_cap]
    paths = [list(p) for p in g.paths]
    active = {}     # task -> [remaining, rate, process]
    clock = {"t": 0.0}

    def settle():
        dt = env.now - clock["t"]
        for f in active.values():
            f[0] -= f[1] * dt
        clock["t"] = env.now
        rates = max_min_rates(sorted(active), paths, a["link_bw"])
        for k, f in active.items():
            f[1] = rates[k]

    def poke(skip):
        for k, f in active.items():
            if k != skip and f[2].is_alive and f[2].target is not None:
                f[2].interrupt()

    def task(i):
        if g.deps[i]:
            yield env.all_of([done[d] for d in g.deps[i]])
        if g.acquire[i] >= 0:
            yield pools[g.acquire[i]].get(1)
        if g.kind[i] == COMPUTE:
            with streams[g.stream[i]].request() as req:
                yield req
                yield env.timeout(g.duration[i])
        elif g.size[i] > 0:
            settle()
            active[i] = [g.size[i], 0.0, env.active_process]
            settle()
            poke(i)
            while True:
                try:
                    rem, rate = active[i][0], active[i][1]
                    yield env.timeout(max(rem / rate, 0.0))
                    settle()
                    if active[i][0] <= 1e-6 * g.size[i]:
                        break
                except simpy.Interrupt:
                    continue
            del active[i]
            if active:
                settle()
                poke(i)
        if g.release[i] >= 0:
            yield pools[g.release[i]].put(1)
        done[i].succeed()

    for i in range(n):
        env.process(task(i))
    env.run()
    return env.now


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


def timeit(fn, min_s):
    reps, t0 = 0, time.perf_counter()
    while True:
        fn()
        reps += 1
        el = time.perf_counter() - t0
        if el >= min_s:
            return el / reps


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--calculon", metavar="DIR", default=os.environ.get("CALCULON_DIR"),
                    help="a checkout of calculon-ai/calculon (its model, execution and system "
                         "files; the package importable): measure it side by side")
    args = ap.parse_args()
    min_s = 0.5 if args.quick else 2.0
    print(f"machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}")

    g = step_graph()
    a = g.arrays()
    n = len(g.names)
    events = 2 * n
    t_c = timeit(lambda: simulate(a, "c"), min_s)
    t_py = timeit(lambda: simulate(a, "python"), min_s)
    ms = [simulate(a, "c").makespan_s, simulate(a, "python").makespan_s]
    try:
        t_simpy = timeit(lambda: simpy_makespan(g), min_s)
        ms.append(simpy_makespan(g))
    except ImportError:
        t_simpy = None
    print(f"\n1. scheduler, {n}-task step ({events} start/end events); makespans {', '.join(f'{m:.4f}' for m in ms)} s")
    print(f"   C extension       {t_c * 1e3:9.3f} ms  {events / t_c:12,.0f} events/s")
    print(f"   Python reference  {t_py * 1e3:9.3f} ms  {events / t_py:12,.0f} events/s   C is {t_py / t_c:6.1f}x faster (goal >= 50x)")
    if t_simpy:
        print(f"   SimPy             {t_simpy * 1e3:9.3f} ms  {events / t_simpy:12,.0f} events/s   C is {t_simpy / t_c:6.1f}x faster (goal >= 100x)")
    else:
        print("   SimPy             not installed (pip install simpy)")

    grid = scenario_grid()
    work = {"full": (lambda d: evaluate_dict(d, detail=False), grid),
            "detail": (lambda d: evaluate_dict(d, detail=True), grid)}
    la = matched_configs()
    if la:
        call, pairs = la
        same_la = matched_agree(call, pairs)
        matched = [d for _, d in pairs]
        work["llm-analysis"] = (call, [cfg for cfg, _ in pairs])
        work["quick"] = (estimate_dict, matched)
        work["quick-cold"] = (lambda d: (forget(), estimate_dict(d)), matched)
        work["full-matched"] = (lambda d: evaluate_dict(d, detail=False), matched)
    cal = calculon_calls(args.calculon)
    if cal:
        work["calculon"] = cal[:2]
        work["full-t5"] = (lambda d: evaluate_dict(d, detail=False), cal[2])
    t = best_rounds(work, 3 * min_s)
    t_full, t_detail = t["full"], t["detail"]
    print(f"\n2. scenario evaluations, one core, cycling through {len(grid)} distinct Llama-2-70B "
          "(80-layer) scenarios on DGX H100 nodes")
    print(f"   full (memory + simulated step + goodput)  {1 / t_full:10,.0f} /s   ({t_full * 1e3:.3f} ms each; goal >= 2,000/s)")
    print(f"   full with timeline and Monte-Carlo        {1 / t_detail:10,.0f} /s   ({t_detail * 1e3:.3f} ms each)")
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
    if not cal:
        print("\n4. Calculon not measured (--calculon DIR: a checkout of calculon-ai/calculon, "
              "pip install DIR pandas psutil)")
        return
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
