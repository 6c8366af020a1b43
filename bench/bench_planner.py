"""Planner benchmark (issue #16, Speed): figures measured in one run; it never passes or fails.

    python bench/bench_planner.py --calculon DIR            # the whole space, minutes
    python bench/bench_planner.py --calculon DIR --quick    # a 1/20 slice of it, seconds

1. Calculon's ``llm-optimal-execution`` space for GPT-3 175B on 64 GPUs: its model file
   (``models/gpt3-175B.json``), its A100 80 GB system (``systems/a100_80g.json``), a
   maximum batch of 1536 (GPT-3's, Brown et al. 2020 Table 2.1), ``float16``. The space is
   counted with Calculon's own generators (``Llm.get_all_tensor_parallelisms`` ...) in the
   order of ``calculon/llm/optimal_execution.py`` (``run_command`` builds one search per
   TP x PP x interleaving x recompute x optimizer sharding x TP communication type;
   ``search`` loops over the rest): 10,462,464 candidates. Running all of them takes hours
   here, so a uniform random sample of them is run through the body of Calculon's
   ``search`` loop (an ``Llm`` built, compiled and run on the candidate's execution JSON,
   its statistics read, the best list updated, an ``Llm.Error`` counted as a bad
   execution), timed twice: with the per-candidate logger as shipped (``logging.Logger``
   with no level: every debug line of ``compile`` and ``run`` is formatted) and quiet (the
   same logger at ``WARNING``). Its time for the whole space is the sample's mean CPU
   seconds per candidate x 10,462,464.
2. tierlab's planner on GPT-3 175B on 8 DGX A100 80 GB nodes (64 GPUs), global batch 1536
   of 2048 tokens, over TP x PP x interleaving x micro-batch x recompute x strategy (every
   ZeRO stage, FSDP, Megatron's distributed optimizer) x optimizer and parameter offload
   (none, CPU, NVMe) x prefetch depth x checkpoint target: 14,696,640 candidates, split
   into chunks run by ``--workers`` processes as Celery workers run them (the same
   ``plan_chunk`` and ``merge``).

Both sides are timed in CPU seconds (``time.process_time`` in each process), which a
machine shared with other work changes less than the wall clock; the wall clock and
``os.getloadavg()`` are printed beside them. The ratio is printed first, then what is and
is not like for like.
"""

from __future__ import annotations

import argparse
import itertools
import json
import logging
import os
import platform
import random
import sys
import time
from concurrent.futures import ProcessPoolExecutor

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from simulation import planner  # noqa: E402

MAX_BATCH = 1536
NUM_PROCS = 64


# ------------------------------------------------------------------ Calculon's side
def calculon_space(base_dir: str):
    """``(searches, total, app, system)``: one entry per search Calculon's
    ``llm-optimal-execution`` would start, ``(fixed execution fields, inner axes)``, where
    the inner axes are the lists ``search`` loops over (their product: its candidates)."""
    import calculon
    from calculon.llm import Llm
    from calculon.llm.optimal_execution import OptimalExecution

    def read(*parts):
        with open(os.path.join(base_dir, *parts)) as f:
            return json.load(f)

    app_json = read("models", "gpt3-175B.json")
    app = Llm.Application(app_json)
    system = calculon.System(read("systems", "a100_80g.json"))
    nets = system.num_networks
    has_mem2 = system.mem2.capacity > 0
    searches, total = [], 0
    for tp in Llm.get_all_tensor_parallelisms(NUM_PROCS, app.hidden, app.attn_heads):
        for pp in Llm.get_all_pipeline_parallelisms(NUM_PROCS, tp, app.num_blocks):
            dp = Llm.get_data_parallelism(NUM_PROCS, tp, pp)
            for ppint in Llm.get_valid_pipeline_interleavings(app.num_blocks, pp):
                batch = OptimalExecution.get_batch_size(dp, MAX_BATCH)
                if batch is None:
                    continue
                for recompute in ("full", "attn_only", "none"):
                    for opt_shard in ([True, False] if dp > 1 else [False]):
                        for tp_comm in ("ar", "p2p_rs_ag", "rs_ag"):
                            fixed = dict(num_procs=NUM_PROCS, tensor_par=tp, pipeline_par=pp, data_par=dp,
                                         batch_size=batch, datatype="float16", attention_type="multihead",
                                         activation_recompute=recompute, pipeline_interleaving=ppint,
                                         optimizer_sharding=opt_shard, tensor_par_comm_type=tp_comm,
                                         training=True)
                            redo = Llm.can_redo_ag(tp_comm, recompute)
                            inner = [
                                ("seq_par_ag_redo", [True, False] if redo else [False]),
                                ("data_par_overlap", [True, False] if dp > 1 else [False]),
                                ("tensor_par_overlap", ["none", "ring", "pipe"] if tp > 1 else ["none"]),
                                ("weight_offload", [True, False] if has_mem2 else [False]),
                                ("activations_offload", [True, False] if recompute != "full" and has_mem2
                                 else [False]),
                                ("optimizer_offload", [True, False] if has_mem2 else [False]),
                                ("fused_activation", [True]),         # its default, -f true
                                ("microbatch_size", list(Llm.get_valid_microbatch_sizes(
                                    app.seq_size, tp, dp, batch, pp))),
                                ("tensor_par_net", list(range(nets)) if tp > 1 else [0]),
                                ("pipeline_par_net", list(range(nets)) if pp > 1 else [0]),
                                ("data_par_net", list(range(nets)) if dp > 1 else [0])]
                            n = 1
                            for _k, v in inner:
                                n *= len(v)
                            searches.append((fixed, inner, n))
                            total += n
    return searches, total, app_json, system


def calculon_sample(searches, total: int, k: int, seed: int = 16) -> list[dict]:
    """``k`` execution JSONs drawn uniformly from the whole space (with replacement)."""
    rng = random.Random(seed)
    cum = list(itertools.accumulate(n for _f, _i, n in searches))
    out = []
    for _ in range(k):
        g = rng.randrange(total)
        lo, hi = 0, len(cum) - 1
        while lo < hi:
            mid = (lo + hi) // 2
            if cum[mid] > g:
                hi = mid
            else:
                lo = mid + 1
        fixed, inner, _n = searches[lo]
        j = g - (cum[lo - 1] if lo else 0)
        exe = dict(fixed)
        for key, values in reversed(inner):        # the last loop varies fastest
            j, r = divmod(j, len(values))
            exe[key] = values[r]
        out.append(exe)
    return out


def calculon_time(app_json, system, executions, quiet: bool) -> tuple[float, float, int]:
    """``(CPU s, wall s, good)`` for ``executions`` through the body of Calculon's
    ``OptimalExecution.search`` loop, its logger as shipped or quiet."""
    from calculon.llm import Llm
    from calculon.llm.optimal_execution import OptimalExecution
    app = Llm.Application(app_json)
    best, good = [], 0
    c0, w0 = time.process_time(), time.perf_counter()
    for exe in executions:
        try:
            log = logging.Logger("sub")          # as search() makes it, per candidate
            if quiet:
                log.setLevel(logging.WARNING)
            model = Llm(app, log)
            model.compile(system, Llm.Execution.from_json(exe))
            model.run(system)
            stats = model.get_stats_json(False)
            good += 1
            best = OptimalExecution.update_list(best, (stats["sample_rate"], exe, stats), 1)
        except Llm.Error as ex:
            logging.getLogger().debug(f"JSON:{exe}\nERROR:{ex}\n")
    return time.process_time() - c0, time.perf_counter() - w0, good


# ------------------------------------------------------------------ tierlab's side
def tierlab_spec(app_json: dict) -> dict:
    """GPT-3 175B from Calculon's model file, on 8 DGX A100 80 GB nodes."""
    def divisors(n):
        return [d for d in range(1, n + 1) if n % d == 0]
    model = {"num_layers": app_json["num_blocks"], "hidden_size": app_json["hidden"],
             "num_attention_heads": app_json["attn_heads"], "ffn_hidden_size": app_json["feedforward"],
             "vocab_size": 51200, "gated_mlp": False, "tied_embeddings": True,
             "position_embedding": "learned", "norm": "layernorm", "linear_bias": True,
             "max_seq_len": app_json["seq_size"]}
    return {"model": model, "cluster": {"node": "dgx-a100-80gb", "num_nodes": NUM_PROCS // 8},
            "training": {"seq_len": app_json["seq_size"], "global_batch_size": MAX_BATCH,
                         "precision": "bf16", "flash_attention": True},
            "space": {"tensor_parallel": [t for t in divisors(NUM_PROCS) if t <= 32],
                      "pipeline_parallel": divisors(NUM_PROCS),
                      "interleave_stages": divisors(app_json["num_blocks"]),
                      "micro_batch_size": divisors(MAX_BATCH),
                      "recompute": ["none", "selective", "full"],
                      "strategies": list(planner.STRATEGY_KINDS),
                      "offload_optimizer": ["none", "cpu", "nvme"],
                      "offload_params": ["none", "cpu", "nvme"],
                      "prefetch_depth": [1, 2, 4],
                      "checkpoint_target": ["parallel_fs", "local_nvme"]},
            "objective": "step_time", "top_k": 10}


def _chunk(args):
    spec, k, n = args
    c0, w0 = time.process_time(), time.perf_counter()
    out = planner.plan_chunk(spec, k, n)
    return out, time.process_time() - c0, time.perf_counter() - w0


def run_planner(spec: dict, workers: int, n_chunks: int, only: int | None = None):
    """``(merged answer, chunk results, CPU s summed over the workers, wall s)``; with
    ``only``, every ``only``-th chunk (a slice of the space)."""
    parsed = planner.parse_spec(spec, max_candidates=10**9)
    jobs = [(parsed, k, n) for k, n in planner.plan_chunks(parsed, n_chunks)]
    if only:
        jobs = jobs[::only]
    w0 = time.perf_counter()
    with ProcessPoolExecutor(max_workers=workers) as pool:
        results = list(pool.map(_chunk, jobs))
    wall = time.perf_counter() - w0
    chunks = [r[0] for r in results]
    merged = planner.merge(parsed, chunks) if not only else None
    return parsed, merged, chunks, sum(r[1] for r in results), wall


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--calculon", metavar="DIR", default=os.environ.get("CALCULON_DIR"),
                    help="a checkout of calculon-ai/calculon (pip install DIR pandas psutil)")
    ap.add_argument("--sample", type=int, default=400, help="Calculon candidates timed each way")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--chunks", type=int, default=8)
    ap.add_argument("--quick", action="store_true", help="a 1/20 slice of tierlab's space")
    args = ap.parse_args()
    print(f"machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}, "
          f"load average at start {tuple(round(x, 2) for x in os.getloadavg())}")
    cal = None
    if args.calculon:
        try:
            cal = calculon_space(args.calculon)
        except ImportError:
            print("Calculon not importable (pip install DIR pandas psutil)")
    spec = tierlab_spec(cal[2] if cal else {"num_blocks": 96, "hidden": 12288, "attn_heads": 96,
                                            "feedforward": 49152, "seq_size": 2048})
    cal_times = {}
    if cal:
        searches, total, app_json, system = cal
        sample = calculon_sample(searches, total, args.sample)
        half = len(sample) // 2        # half before tierlab's run and half after, each way
        for part in (sample[:half],):
            for quiet in (True, False):
                c, w, g = calculon_time(app_json, system, part, quiet)
                cal_times.setdefault(quiet, []).append((c, w, g, len(part)))
    load0 = os.getloadavg()
    parsed, merged, chunks, cpu_s, wall_s = run_planner(spec, args.workers,
                                                        20 * args.chunks if args.quick else args.chunks,
                                                        only=20 if args.quick else None)
    load1 = os.getloadavg()
    if cal:
        for quiet in (True, False):
            c, w, g = calculon_time(app_json, system, sample[half:], quiet)
            cal_times[quiet].append((c, w, g, len(sample) - half))
    n_ours = sum(c["candidates"] for c in chunks)
    scale = parsed["num_candidates"] / n_ours
    ours_cpu, ours_wall = cpu_s * scale, wall_s * scale
    print()
    if cal:
        per = {q: sum(t[0] for t in v) / sum(t[3] for t in v) for q, v in cal_times.items()}
        per_wall = {q: sum(t[1] for t in v) / sum(t[3] for t in v) for q, v in cal_times.items()}
        good = sum(t[2] for t in cal_times[True]) / sum(t[3] for t in cal_times[True])
        cq, cs = per[True] * total, per[False] * total
        print(f"tierlab / Calculon, logging quiet:  {cq / ours_cpu:8.1f}x   (goal >= 10x; CPU seconds, "
              f"whole spaces: Calculon {cq:,.0f} s = {cq / 3600:.2f} core-hours, tierlab {ours_cpu:,.0f} s)")
        print(f"tierlab / Calculon, as shipped:     {cs / ours_cpu:8.1f}x   (Calculon {cs:,.0f} s = "
              f"{cs / 3600:.2f} core-hours)")
        print(f"\n1. Calculon llm-optimal-execution, GPT-3 175B, {NUM_PROCS} A100 80 GB, batch {MAX_BATCH}: "
              f"{total:,} candidates in {len(searches):,} searches")
        print(f"   sample of {len(sample)} drawn uniformly, run each way (half before tierlab's run, half after); "
              f"{good:.0%} good executions")
        for q in (True, False):
            print(f"   {'quiet     ' if q else 'as shipped'}  {per[q] * 1e3:8.3f} ms CPU per candidate "
                  f"({per_wall[q] * 1e3:.3f} ms wall): {per[q] * total / 3600:7.2f} core-hours for the space, "
                  f"{per[q] * total / args.workers / 60:8.1f} min on {args.workers} cores")
    else:
        print("Calculon not measured (--calculon DIR)")
    print(f"\n2. tierlab planner, the same model on {spec['cluster']['num_nodes']} DGX A100 80 GB nodes, "
          f"{parsed['num_candidates']:,} candidates" + (f" ({n_ours:,} run: a 1/20 slice)" if args.quick else ""))
    print(f"   {args.workers} worker processes, {len(chunks)} chunks: {wall_s:,.1f} s wall, {cpu_s:,.1f} s CPU"
          + (f"; whole space extrapolated {ours_wall:,.0f} s wall, {ours_cpu:,.0f} s CPU" if args.quick else "")
          + f" (goal: the whole space < 600 s on 2 cores)")
    print(f"   load average before / after: {tuple(round(x, 2) for x in load0)} / "
          f"{tuple(round(x, 2) for x in load1)} on {os.cpu_count()} cores")
    rejected = {}
    for c in chunks:
        for k, v in c["rejected"].items():
            rejected[k] = rejected.get(k, 0) + v
    feasible = sum(c["feasible"] for c in chunks)
    simulated = sum(c["simulated"] for c in chunks)
    print(f"   feasible {feasible:,}; step model run on {simulated:,} "
          f"({simulated / max(feasible, 1):.1%} of them; the rest dominated by their lower bounds)")
    print("   rejected: " + ", ".join(f"{k} {v:,}" for k, v in rejected.items() if v))
    assert feasible + sum(rejected.values()) == n_ours, "every candidate is feasible or rejected once"
    if merged and merged["best"]:
        b = merged["best"]
        ch = b["choices"]
        print(f"   best: TP {ch['tensor_parallel']} x PP {ch['pipeline_parallel']} (v {ch['interleave_stages']}) "
              f"x DP {b['data_parallel']}, micro-batch {ch['micro_batch_size']}, {ch['recompute']} recompute, "
              f"{ch['strategy']}: {b['step_time_s']:.2f} s per step, MFU {b['mfu']:.1%}")
    print("\n   like for like: the same model (Calculon's gpt3-175B.json), 64 GPUs of 80 GB, global batch 1536 of "
          "2048 tokens; both enumerate TP, PP, interleaving, micro-batch, recompute (none / selective = "
          "attn_only / full), optimizer sharding (Calculon's on/off; here DDP, ZeRO-1/2/3, FSDP, Megatron's "
          "distributed optimizer), weight and optimizer offload. Calculon's space also has activation "
          "offload (the engine has it; its planner does not vary it), the TP communication type and "
          "overlap, sequence-parallel all-gather redo, DP overlap and the network of each group (the "
          "engine does not model them); tierlab's has ZeRO-2/3 and FSDP, NVMe offload, prefetch depth "
          "and the checkpoint target, which Calculon does not model. Calculon "
          "lists only layouts that divide; tierlab's space is the product of its lists and counts the "
          "layouts that do not divide as rejected (cheaply).")


if __name__ == "__main__":
    main()
