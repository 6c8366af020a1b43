"""Pipeline stages: Megatron-LM's uneven splits, every stage's memory, the 1F1B bubble of
unequal stages (hand calculations and an independent brute-force simulation), DualPipe
(the DeepSeek-V3 / deepseek-ai/DualPipe table), the Llama 3 405B layout, the exports."""

import random

import pytest

from simulation import ScenarioError
from simulation.evaluate import evaluate_dict
from simulation.export import deepspeed_config, megatron_pipeline_args
from simulation.memory import stage_param_share, stage_plans_for
from simulation.parallel import layout
from simulation.params import model_params
from simulation.pipeline import (bubble_micro_batch_cap, bubble_stage_times, dualpipe_bubble_s, in_flight_chunks,
                                 chunk_layers, interleaved_makespan_s, megatron_layout, one_f_one_b_s,
                                 stage_layers, stage_plans)
from simulation.scenario import Scenario
from simulation.step import HEAD_FWD_SHARE, compute_times, pipeline_bubble_mb


# ---- the split, as Megatron-LM builds and checks it --------------------------------------

def test_first_and_last_counts_split_the_rest_evenly_as_megatron_does():
    # transformer_block.py get_num_layers_to_build: (126 - 7 - 7) / (16 - 2) = 8 per middle stage
    assert stage_layers(126, 16, first=7, last=7) == (7,) + (8,) * 14 + (7,)
    assert stage_layers(126, 16, first=6) == (6,) + (8,) * 15          # 120 / 15
    assert stage_layers(126, 16, last=6) == (8,) * 15 + (6,)
    assert stage_layers(14, 2, first=7, last=7) == (7, 7)                # no middle stage
    assert stage_layers(32, 4) == (8, 8, 8, 8)                            # the even split
    assert stage_layers(32, 1) == (32,)
    # interleaved: Megatron allows uneven end stages whose counts divide by v and whose
    # middle stages' layers do too (6 + 10 + 10 + 6, two chunks each)
    assert stage_layers(32, 4, v=2, first=6, last=6) == (6, 10, 10, 6)
    assert stage_layers(32, 4, v=2) == (8, 8, 8, 8)
    # an explicit layout may leave a stage without decoder layers (Megatron's "E|t*16|t*16|L")
    assert stage_layers(32, 4, explicit=(0, 16, 16, 0)) == (0, 16, 16, 0)
    assert megatron_layout((0, 16, 16, 0)) == "E|t*16|t*16|L"


@pytest.mark.parametrize("kw, field, words", [
    (dict(num_layers=125, p=16, first=7, last=7), "training.last_pipeline_layers", "do not split"),
    (dict(num_layers=126, p=2, first=60, last=60), "training.last_pipeline_layers", "0 middle"),
    (dict(num_layers=126, p=16, v=2, first=7), "training.first_pipeline_layers", "interleave_stages"),
    (dict(num_layers=126, p=16), "training.pipeline_parallel", "must divide"),
    (dict(num_layers=126, p=16, explicit=(8,) * 16), "training.pipeline_layers", "add up to"),
    (dict(num_layers=126, p=16, explicit=(63, 63)), "training.pipeline_layers", "one count per"),
    (dict(num_layers=16, p=2, explicit=(8, 8), first=8), "training.pipeline_layers", "cannot be combined"),
    (dict(num_layers=12, p=2, v=2, explicit=(5, 7)), "training.pipeline_layers[0]", "multiple"),
    (dict(num_layers=12, p=1, first=6), "training.first_pipeline_layers", "pipeline_parallel > 1"),
    # transformer_block.py: num_layers_per_pipeline_rank % vp_size == 0 (18 / 2 = 9 layers per
    # middle stage, not two equal chunks; 32 / 4 = 8 layers, not three)
    (dict(num_layers=30, p=4, v=2, first=6, last=6), "training.interleave_stages", "must divide"),
    (dict(num_layers=32, p=4, v=3), "training.interleave_stages", "must divide"),
])
def test_splits_megatron_refuses_are_refused_naming_the_field(kw, field, words):
    with pytest.raises(ScenarioError) as e:
        stage_layers(**kw)
    assert e.value.field == field and words in str(e.value)


def base(**training):
    t = {"micro_batch_size": 1, "seq_len": 4096, "global_batch_size": 64, "tensor_parallel": 8,
         "pipeline_parallel": 4, "framework": "megatron", "sequence_parallel": True,
         "recompute": "selective", "flash_attention": True}
    t.update(training)
    return {"model": {"preset": "llama2-70b"}, "cluster": {"node": "dgx-h100", "num_nodes": 4},
            "training": t, "strategy": {"kind": "megatron_dist_opt"}}


def test_scenario_fields_parse_round_trip_and_leave_old_json_alone():
    old = Scenario.from_dict(base()).to_dict()["training"]
    for k in ("pipeline_layers", "first_pipeline_layers", "last_pipeline_layers", "pipeline_schedule"):
        assert k not in old                        # old scenarios' JSON (and hashes) unchanged
    sc = Scenario.from_dict(base(pipeline_layers=[19, 21, 21, 19]))
    assert sc.training.pipeline_layers == (19, 21, 21, 19)
    again = Scenario.from_dict({**base(), "training": sc.to_dict()["training"]})
    assert again.training == sc.training
    d = Scenario.from_dict(base(pipeline_schedule="dualpipe")).to_dict()["training"]
    assert d["pipeline_schedule"] == "dualpipe"


@pytest.mark.parametrize("training, field", [
    ({"pipeline_layers": [20, 20, -1, 41]}, "training.pipeline_layers[2]"),
    ({"pipeline_layers": [20, 20, 20.5, 19]}, "training.pipeline_layers[2]"),
    ({"pipeline_layers": []}, "training.pipeline_layers"),
    ({"first_pipeline_layers": 0}, "training.first_pipeline_layers"),   # Megatron: larger than 0
    ({"pipeline_schedule": "gpipe"}, "training.pipeline_schedule"),
])
def test_bad_fields_name_themselves(training, field):
    with pytest.raises(ScenarioError) as e:
        Scenario.from_dict(base(**training))
    assert e.value.field == field


def test_layout_checks_the_split_and_dualpipe_constraints():
    with pytest.raises(ScenarioError) as e:
        layout(Scenario.from_dict(base(pipeline_layers=[20, 20, 20, 19])))
    assert e.value.field == "training.pipeline_layers"
    # DualPipe (dualpipe.py step): an even number of ranks, micro-batches even and >= 2 x ranks
    with pytest.raises(ScenarioError) as e:
        layout(Scenario.from_dict(base(pipeline_schedule="dualpipe", global_batch_size=4)))
    assert e.value.field == "training.pipeline_schedule" and "at least 2 x" in str(e.value)
    with pytest.raises(ScenarioError) as e:
        layout(Scenario.from_dict(base(pipeline_schedule="dualpipe", interleave_stages=2)))
    assert e.value.field == "training.pipeline_schedule"


# ---- micro-batches in flight ------------------------------------------------------------

def test_micro_batches_in_flight_per_stage():
    # 1F1B: rank i runs p - i - 1 warm-up forwards and one more before its first backward
    assert [in_flight_chunks(i, 4, 1, 8) for i in range(4)] == [4, 3, 2, 1]
    assert [in_flight_chunks(i, 4, 1, 2) for i in range(4)] == [2, 2, 2, 1]     # m = 2 caps it
    # interleaved, v = 2: (p - i - 1) * 2 + (v - 1) * p + 1 chunks; rank 0: 6 + 4 + 1 = 11
    # chunks of L/(p v) layers = 5.5 micro-batches of the stage = p (1 + (p-1)/(p v)) =
    # 4 x (1 + 3/8) = 5.5 (Korthikanti et al. 2022 Sec. 4.2.3)
    assert in_flight_chunks(0, 4, 2, 8) == 11 and in_flight_chunks(3, 4, 2, 8) == 5
    plans = stage_plans((8, 8, 8, 8), 8)
    assert [pl.activation_layers for pl in plans] == [32, 24, 16, 8]
    assert [pl.name for pl in plans] == ["first", "middle", "middle", "last"]


# ---- the 1F1B schedule with unequal stages ----------------------------------------------

def brute_force_1f1b(f, b, m):
    """An independent simulation: integer durations, one tick at a time; at each tick every
    idle stage starts the next op of its 1F1B order if what it needs has finished."""
    p = len(f)
    orders = []
    for i in range(p):
        w = min(p - i - 1, m)
        ops = [("F", k) for k in range(w)]
        for k in range(m):
            if w + k < m:
                ops.append(("F", w + k))
            ops.append(("B", k))
        orders.append(ops)
    orders = [[(kind, i, k) for kind, k in ops] for i, ops in enumerate(orders)]

    def need(op):
        kind, i, k = op
        if kind == "F":
            return ("F", i - 1, k) if i else None
        return ("B", i + 1, k) if i < p - 1 else ("F", i, k)
    return tick_makespan(orders, need, lambda op: f[op[1]] if op[0] == "F" else b[op[1]])


def tick_makespan(orders, need, ticks):
    """Ticks until every rank has run its ``orders`` (lists of op keys) one op at a time: at
    each tick an idle rank starts its next op once ``need(op)`` (a key, or None) is done;
    an op takes ``ticks(op)`` integer ticks."""
    p = len(orders)
    done, busy_until, nxt, running, t = set(), [0] * p, [0] * p, [None] * p, 0
    while any(nxt[i] < len(orders[i]) for i in range(p)) or any(running):
        for i in range(p):                                   # finish what ends now
            if running[i] and busy_until[i] == t:
                done.add(running[i])
                running[i] = None
        for i in range(p):
            if running[i] or nxt[i] >= len(orders[i]):
                continue
            op = orders[i][nxt[i]]
            dep = need(op)
            if dep is None or dep in done:
                running[i] = op
                busy_until[i] = t + ticks(op)
                nxt[i] += 1
        t += 1
    return t - 1


def test_one_f_one_b_by_hand():
    # equal stages: (m + p - 1)(f + b) = (8 + 3) x 3 = 33
    assert one_f_one_b_s([1] * 4, [2] * 4, 8) == 33
    # p = 2, f = [1, 2], b = [2, 4], m = 3 (slow last stage). Stage 0: F0 0-1, F1 1-2,
    # B0 7-9 (after stage 1's B0 3-7), F2 9-10, B1 13-15, B2 19-21; stage 1: F0 1-3,
    # B0 3-7, F1 7-9, B1 9-13, F2 13-15, B2 15-19. Makespan 21 = (m-1) t_max + sum t.
    assert one_f_one_b_s([1, 2], [2, 4], 3) == 21
    # p = 2, f = [2, 1], b = [4, 2], m = 3 (slow first stage). Stage 0: F0 0-2, F1 2-4,
    # waits for B0 (stage 1: F0 2-3, B0 3-5), B0 5-9, F2 9-11, B1 11-15, B2 15-19.
    # Makespan 19: the slow stage's 3 x 6 = 18 plus its one idle unit (round trip 3 -
    # its warm-up forward 2); the upper bound (m-1) t_max + sum t would say 21.
    assert one_f_one_b_s([2, 1], [4, 2], 3) == 19
    # in units of the slowest stage (6): bubbles 3/6 and 1/6
    assert bubble_stage_times([1, 2], [2, 4], 3) == pytest.approx(0.5)
    assert bubble_stage_times([2, 1], [4, 2], 3) == pytest.approx(1 / 6)
    assert bubble_stage_times([1] * 16, [2] * 16, 64) == 15
    assert bubble_stage_times([1] * 16, [2] * 16, 64, v=3) == 5


def test_one_f_one_b_matches_a_brute_force_simulation_and_its_bounds():
    rng = random.Random(7)
    for _ in range(300):
        p, m = rng.randint(1, 7), rng.randint(1, 14)
        f = [rng.randint(1, 5) for _ in range(p)]
        r = rng.randint(1, 3)
        b = [r * x for x in f]                       # backward a fixed multiple of forward
        got = one_f_one_b_s(f, b, m)
        assert got == brute_force_1f1b(f, b, m)
        t = [x + y for x, y in zip(f, b)]
        assert max(m * t[k] + sum(t[:k]) for k in range(p)) <= got <= (m - 1) * max(t) + sum(t)
    for _ in range(100):                             # any backward: still the brute force's
        p, m = rng.randint(1, 6), rng.randint(1, 10)
        f = [rng.randint(1, 4) for _ in range(p)]
        b = [rng.randint(1, 8) for _ in range(p)]
        assert one_f_one_b_s(f, b, m) == brute_force_1f1b(f, b, m)


def test_the_bubble_stops_changing_past_the_cap():
    rng = random.Random(11)
    for _ in range(12):
        p = rng.randint(2, 12)
        r = rng.uniform(1.5, 3)
        f = [rng.uniform(0.5, 2) for _ in range(p)]
        b = [r * x for x in f]
        top = max(x + y for x, y in zip(f, b))
        cap = bubble_micro_batch_cap(p)
        far = (one_f_one_b_s(f, b, 4 * cap) - 4 * cap * top) / top
        assert bubble_stage_times(f, b, 10 ** 6) == pytest.approx(far, abs=1e-9)


# ---- DualPipe ---------------------------------------------------------------------------

def test_dualpipe_bubble_is_the_published_formula():
    # deepseek-ai/DualPipe README: DualPipe (PP/2 - 1)(F&B + B - 3W), 1F1B (PP - 1)(F + B).
    # PP = 8, F = 1, B = 2, W = 1, F&B = F + B = 3: (4 - 1)(3 + 2 - 3) = 6 vs 7 x 3 = 21
    assert dualpipe_bubble_s(8, 1.0, 2.0, 1.0) == 6.0
    assert dualpipe_bubble_s(8, 1.0, 2.0, 1.0, fb_s=2.5) == 4.5     # (4-1)(2.5 + 2 - 3)
    assert dualpipe_bubble_s(2, 1.0, 2.0, 1.0) == 0.0               # PP/2 - 1 = 0


def test_dualpipe_memory_two_stages_of_parameters_and_pp_plus_one_activations():
    plans = stage_plans((8, 8, 8, 8), 8, 1, "dualpipe")
    # each rank: stages i and p-1-i (16 layers of parameters, "2x"), (PP+1) = 5 chunks of
    # 8 layers of activations = 40 layer-equivalents (1F1B's first stage: 4 x 8 = 32)
    assert [pl.layers for pl in plans] == [16, 16, 16, 16]
    assert [pl.activation_layers for pl in plans] == [40, 40, 40, 40]
    assert [pl.embedding for pl in plans] == [True, False, False, True]
    assert [pl.name for pl in plans] == ["ends", "middle", "middle", "ends"]
    one = evaluate_dict(base(), include_step=False)["memory"]["per_stage"]
    two = evaluate_dict(base(pipeline_schedule="dualpipe"), include_step=False)["memory"]["per_stage"]
    mid1 = next(s for s in one if s["stage"] == "middle")
    mid2 = next(s for s in two if s["stage"] == "middle")
    assert mid2["layers"] == 2 * mid1["layers"] == 40
    assert mid2["hbm_model_state_bytes"] == pytest.approx(2 * mid1["hbm_model_state_bytes"])
    assert mid2["micro_batches_in_flight"] == 5


def test_dualpipe_step_bubble_from_the_table():
    d = base(pipeline_schedule="dualpipe")
    sc = Scenario.from_dict(d)
    lay = layout(sc)
    ct = compute_times(sc, model_params(sc.model))
    # the slowest chunk: the last stage's 20 layers and the head (a third of it forward)
    F = 20 * ct["fwd_s"] + ct["head_s"] / 3
    B = 20 * ct["bwd_s"] + ct["head_s"] * 2 / 3
    W = F
    want = (4 / 2 - 1) * ((F + B) + B - 3 * W) / (F + B)
    assert pipeline_bubble_mb(sc, lay) == pytest.approx(want)
    one = Scenario.from_dict(base())
    assert pipeline_bubble_mb(one, layout(one)) == 3          # (p - 1), as before
    r2 = evaluate_dict(d)["step"]
    r1 = evaluate_dict(base())["step"]
    assert r2["breakdown_s"]["pipeline_bubble"] < r1["breakdown_s"]["pipeline_bubble"]


# ---- the uneven step -------------------------------------------------------------------

def test_uneven_step_bubble_is_the_schedule_of_its_stage_times():
    d = base(pipeline_layers=[18, 22, 22, 18])
    sc = Scenario.from_dict(d)
    lay = layout(sc)
    ct = compute_times(sc, model_params(sc.model))
    h = ct["head_s"]
    f = [18 * ct["fwd_s"], 22 * ct["fwd_s"], 22 * ct["fwd_s"], 18 * ct["fwd_s"] + h / 3]
    b = [18 * ct["bwd_s"], 22 * ct["bwd_s"], 22 * ct["bwd_s"], 18 * ct["bwd_s"] + 2 * h / 3]
    m = lay.grad_accumulation_steps
    top = f[1] + b[1]                                  # a 22-layer middle stage is the slowest
    want = (brute_force_ticks(f, b, m) - m * top) / top
    # within 3 %: 2.48 against the brute-force 2.42 since each GEMM kernel's fixed costs
    # (simulation.compute.gemm_s) moved the stage times' ratios (within 2 % before)
    assert pipeline_bubble_mb(sc, lay) == pytest.approx(want, rel=3e-2)
    even = evaluate_dict(base())["step"]
    uneven = evaluate_dict(d)["step"]
    # the 22-layer stage paces the steady state: slower than the even 20 per stage
    assert uneven["time_s"] > even["time_s"]
    # an explicit even list is the even split
    same = evaluate_dict(base(pipeline_layers=[20, 20, 20, 20]))["step"]
    assert same["time_s"] == even["time_s"]
    # interleaved, v = 2 chunks per stage (each count divides by 2): the interleaved
    # schedule's own makespan over chunks of 9, 11, 11, 9 (the head on the last chunk),
    # not the 1F1B bubble over v (which it was: 1.24 here against the schedule's 1.01)
    vi = Scenario.from_dict(base(pipeline_layers=[18, 22, 22, 18], interleave_stages=2))
    lv = layout(vi)
    mv = lv.grad_accumulation_steps
    assert mv % 4 == 0
    fc = [n * ct["fwd_s"] for n in (9, 11, 11, 9) * 2]
    bc = [n * ct["bwd_s"] for n in (9, 11, 11, 9) * 2]
    fc[-1] += h / 3
    bc[-1] += 2 * h / 3
    want_v = (interleaved_makespan_s(fc, bc, 4, 2, mv) - mv * top) / top
    assert pipeline_bubble_mb(vi, lv) == pytest.approx(want_v)
    assert pipeline_bubble_mb(vi, lv) < pipeline_bubble_mb(sc, lay) / 2


def brute_force_ticks(f, b, m, scale=200):
    """The tick-by-tick brute force on durations rounded to 1/200 of the smallest op."""
    unit = min(f + b) / scale
    fi = [round(x / unit) for x in f]
    bi = [round(x / unit) for x in b]
    return brute_force_1f1b(fi, bi, m) * unit


# ---- every stage's memory, Llama 3 405B -------------------------------------------------

LLAMA3_405B = {
    "model": {"preset": "llama3.1-405b"},
    "cluster": {"node": "dgx-h100", "num_nodes": 256},
    # Dubey et al. 2024 (The Llama 3 Herd of Models) Sec. 3.3.2: TP 8, PP 16 on 16k GPUs,
    # one layer removed from the first and the last stage (126 = 7 + 14 x 8 + 7)
    "training": {"micro_batch_size": 1, "seq_len": 8192, "global_batch_size": 2048,
                 "tensor_parallel": 8, "pipeline_parallel": 16, "framework": "megatron",
                 "sequence_parallel": True, "flash_attention": True, "recompute": "none",
                 "first_pipeline_layers": 7, "last_pipeline_layers": 7},
    "strategy": {"kind": "megatron_dist_opt"},
}


def test_llama3_405b_pp16_with_lighter_end_stages_reports_every_stage():
    r = evaluate_dict(LLAMA3_405B, include_step=False)
    rows = r["memory"]["per_stage"]
    assert sum(s["num_stages"] for s in rows) == 16
    assert rows[0]["stage"] == "first" and rows[0]["layers"] == 7 and rows[0]["stages"] == "0"
    assert rows[-1]["stage"] == "last" and rows[-1]["layers"] == 7
    assert {s["layers"] for s in rows if s["stage"] == "middle"} == {8}
    assert [s["micro_batches_in_flight"] for s in rows] == list(range(16, 0, -1))
    # stored activations: stage 0 holds 7 layers x 16 micro-batches = 112, stage 1
    # 8 x 15 = 120, stage 2 8 x 14 = 112: the second stage is the worst, by 120/112
    per = {s["stages"]: s for s in rows}
    acts = {k: v["hbm_activation_bytes"] for k, v in per.items()}
    assert acts["0"] == pytest.approx(acts["2"])
    assert acts["1"] == pytest.approx(acts["0"] * 120 / 112)
    worst = max(rows, key=lambda s: s["hbm_total_bytes"])
    assert r["memory"]["stage_index"] == 1 and worst["stages"] == "1"
    assert r["memory"]["per_gpu"]["hbm"]["total_bytes"] == worst["hbm_total_bytes"]
    # model states: the first stage holds 7 layers + the embedding, a middle one 8 layers
    sc = Scenario.from_dict(LLAMA3_405B)
    pc = model_params(sc.model)
    plans = stage_plans_for(sc, layout(sc))
    assert stage_param_share(sc, pc, layout(sc), plans[0]) == pytest.approx(
        (7 * pc.per_layer + pc.embedding) / pc.total)
    assert stage_param_share(sc, pc, layout(sc), plans[5]) == pytest.approx(8 * pc.per_layer / pc.total)
    assert per["0"]["hbm_model_state_bytes"] / per["5"]["hbm_model_state_bytes"] == pytest.approx(
        (7 * pc.per_layer + pc.embedding) / (8 * pc.per_layer))
    # the verdict says which stage it is
    (tight,) = r["memory"]["tight"]
    assert tight["message"].endswith(
        ", on pipeline stage 1 (middle: 8 layers, 15 micro-batches in flight), the worst of 16.")
    # the logits and loss only on the last stage
    last = r["memory"]["per_gpu"]["hbm"]["parts"]
    assert not any(p["name"].startswith("logits") for p in last)     # the worst is stage 1
    # the same layout as an explicit list gives the same report
    explicit = {**LLAMA3_405B, "training": {**LLAMA3_405B["training"]}}
    del explicit["training"]["first_pipeline_layers"], explicit["training"]["last_pipeline_layers"]
    explicit["training"]["pipeline_layers"] = [7] + [8] * 14 + [7]
    assert evaluate_dict(explicit, include_step=False)["memory"]["per_stage"] == rows
    # without the uneven split 126 layers do not divide over 16 stages
    even = {**LLAMA3_405B, "training": {k: v for k, v in LLAMA3_405B["training"].items()
                                        if "pipeline_layers" not in k}}
    with pytest.raises(ScenarioError) as e:
        evaluate_dict(even, include_step=False)
    assert e.value.field == "training.pipeline_parallel"


def test_llama3_405b_step_runs_with_the_slowest_stage():
    r = evaluate_dict(LLAMA3_405B, detail=False)
    assert r["step"]["time_s"] > 0 and r["step"]["breakdown_s"]["pipeline_bubble"] > 0
    pl = r["step"]["pipeline"]
    assert pl["schedule"] == "1f1b" and pl["stage_layers"] == [7] + [8] * 14 + [7]
    # an 8-layer stage paces it (the last has 7 layers and the head, lighter than 8 layers)
    assert pl["stage_layers"][pl["slowest_stage"]] == 8
    # 14 stages as slow as the pacing one and two lighter ones: a bubble of less than p - 1
    assert 14 < pl["bubble_micro_batches"] < 15


def test_stages_with_equal_memory_are_grouped():
    # m = 2 micro-batches on 4 stages: ranks 0-2 all hold 2 in flight (min(p - i, m))
    r = evaluate_dict(base(global_batch_size=2, pipeline_layers=[20, 20, 20, 20]), include_step=False)
    rows = r["memory"]["per_stage"]
    assert [(s["stage"], s["stages"]) for s in rows] == [("first", "0"), ("middle", "1-2"), ("last", "3")]


# ---- exports ----------------------------------------------------------------------------

def test_exports_carry_the_split_as_megatron_arguments():
    sc = Scenario.from_dict(LLAMA3_405B)
    args = megatron_pipeline_args(sc)
    assert "--decoder-first-pipeline-num-layers 7" in args
    assert "--decoder-last-pipeline-num-layers 7" in args
    assert "--pipeline-model-parallel-size 16" in args
    cfg = deepspeed_config(Scenario.from_dict(base(pipeline_layers=[18, 22, 22, 18])))
    assert "--pipeline-model-parallel-layout 'Et*18|t*22|t*22|t*18,L'" in cfg["_tierlab_megatron_args"]
    assert any("partition_method" in n and "[18, 22, 22, 18]" in n for n in cfg["_tierlab_notes"])
    # with v = 2 chunks per stage the layout lists p x v virtual stages, vpp-rank major
    assert megatron_layout((4, 6), 2) == "Et*2|t*3|t*2|t*3,L"
    # interleaved: Megatron takes one of the three ways to say v (arguments.py asserts it)
    assert "--num-layers-per-virtual-pipeline-stage 10" in megatron_pipeline_args(
        Scenario.from_dict(base(interleave_stages=2)))
    uneven_v = megatron_pipeline_args(Scenario.from_dict(base(interleave_stages=2, first_pipeline_layers=18,
                                                              last_pipeline_layers=18)))
    assert "--num-virtual-stages-per-pipeline-rank 2" in uneven_v
    listed = megatron_pipeline_args(Scenario.from_dict(base(interleave_stages=2, pipeline_layers=[18, 22, 22, 18])))
    assert not any("virtual" in a for a in listed)
    assert "--pipeline-model-parallel-layout 'Et*9|t*11|t*11|t*9|t*9|t*11|t*11|t*9,L'" in listed
    dual = deepspeed_config(Scenario.from_dict(base(pipeline_schedule="dualpipe")))
    assert not any("#" in a for a in dual["_tierlab_megatron_args"])     # arguments only
    assert any("DualPipe" in n for n in dual["_tierlab_notes"])
    from simulation.export import megatron_notes
    assert "DualPipe" in megatron_notes(Scenario.from_dict(base(pipeline_schedule="dualpipe")))[0]


@pytest.mark.parametrize("kind", ["zero1", "fsdp_full_shard", "megatron_dist_opt", "ddp"])
@pytest.mark.parametrize("v", [1, 2])
def test_the_planners_first_and_last_shortcut_finds_the_worst_stage(kind, v):
    """The planner builds only the first and last rank of an even 1F1B split; the
    report's worst rank over all of them must be one of the two."""
    from simulation import planner
    d = base(interleave_stages=v, recompute="none")
    d["strategy"] = {"kind": kind}
    sc = Scenario.from_dict(d)
    r = evaluate_dict(d, include_step=False)
    assert len(r["memory"]["per_stage"]) >= 3
    assert planner.memory_tiers(sc, layout(sc))["per_gpu"]["hbm"]["total_bytes"] == \
        r["memory"]["per_gpu"]["hbm"]["total_bytes"]


@pytest.mark.parametrize("training", [
    {"pipeline_layers": [18, 22, 22, 18]}, {"pipeline_layers": [0, 40, 40, 0]},
    {"first_pipeline_layers": 14}, {"pipeline_schedule": "dualpipe"},
    {"pipeline_layers": [18, 22, 22, 18], "lora": {"rank": 16}},
])
@pytest.mark.parametrize("kind", ["zero1", "fsdp_full_shard", "megatron_dist_opt"])
def test_the_planners_hbm_floor_stays_under_every_uneven_or_dualpipe_report(training, kind):
    from simulation import planner
    d = base(**training)
    d["strategy"] = {"kind": kind}
    sc = Scenario.from_dict(d)
    r = evaluate_dict(d, include_step=False)
    assert planner.hbm_lower_bound_bytes(sc, layout(sc)) <= r["memory"]["per_gpu"]["hbm"]["total_bytes"]


# ---- interleaved 1F1B with uneven virtual stages (Llama 3 Sec. 3.3.2) ------------------

def brute_force_interleaved(f, b, p, v, m):
    """An independent tick-by-tick simulation of Megatron-LM's interleaved order
    (schedules.py forward_backward_pipelining_with_interleaving, group size p): f[s], b[s]
    integer durations of virtual stage s = chunk * p + rank."""
    def chunk(k, fwd):
        c = (k % (p * v)) // p                       # get_model_chunk_id
        return c if fwd else v - c - 1
    orders = []
    for i in range(p):
        n, w = m * v, min((p - i - 1) * 2 + (v - 1) * p, m * v)
        ops = [("F", k) for k in range(w)]
        for k in range(n - w):
            ops += [("F", w + k), ("B", k)]
        ops += [("B", k) for k in range(n - w, n)]
        orders.append([(kind, (k // (p * v)) * p + k % p, chunk(k, kind == "F") * p + i)
                       for kind, k in ops])

    def need(op):
        kind, mb, st = op
        if kind == "F":
            return ("F", mb, st - 1) if st else None
        return ("B", mb, st + 1) if st < p * v - 1 else ("F", mb, st)
    return tick_makespan(orders, need, lambda op: f[op[2]] if op[0] == "F" else b[op[2]])


def test_interleaved_makespan_by_hand():
    # equal chunks, p 2, v 2, m 2, f 1, b 2: the m v (f + b) = 12 of work plus the bubble
    # (p - 1)/v of a rank's v (f + b) (Narayanan et al. 2021 Sec. 2.2.2) = 3 -> 15
    assert interleaved_makespan_s([1] * 4, [2] * 4, 2, 2, 2) == 15
    # v = 1 is plain 1F1B
    assert interleaved_makespan_s([1, 1.2, 0.9, 1.5], [2, 2.1, 1.9, 3], 4, 1, 8) == pytest.approx(
        one_f_one_b_s([1, 1.2, 0.9, 1.5], [2, 2.1, 1.9, 3], 8))
    with pytest.raises(ValueError):
        interleaved_makespan_s([1] * 8, [2] * 8, 4, 2, 6)


@pytest.mark.parametrize("p,v,m", [(2, 2, 4), (4, 2, 8), (4, 3, 8), (8, 2, 16), (16, 2, 16), (16, 4, 32)])
def test_interleaved_equal_chunks_bubble_is_p_minus_1_over_v(p, v, m):
    t = interleaved_makespan_s([1] * (p * v), [2] * (p * v), p, v, m)
    assert (t - m * v * 3) / (v * 3) == pytest.approx((p - 1) / v)


@pytest.mark.parametrize("p,v,m,seed", [(4, 2, 8, 0), (4, 3, 4, 1), (8, 2, 16, 2), (6, 2, 12, 3)])
def test_interleaved_makespan_matches_brute_force(p, v, m, seed):
    import random
    rnd = random.Random(seed)
    f = [rnd.randint(1, 4) for _ in range(p * v)]
    b = [x * 2 + rnd.randint(0, 2) for x in f]
    assert interleaved_makespan_s(f, b, p, v, m) == brute_force_interleaved(f, b, p, v, m)
    # Llama 3's split: the first and last virtual stage one layer short
    f = [3] * (p * v)
    f[0] = f[-1] = 2
    assert interleaved_makespan_s(f, [2 * x for x in f], p, v, m) == \
        brute_force_interleaved(f, [2 * x for x in f], p, v, m)


def test_pipeline_layers_per_virtual_stage():
    # Megatron's layout lists p v virtual stages, entry vpp_rank * p + pp_rank
    # (pipeline_parallel_layer_layout.py): 126 layers over p 16, v 2 with the first and
    # last chunk 3 of 4 -> ranks 3 + 4 = 7, 14 x 8, 4 + 3 = 7 (Llama 3 Sec. 3.3.2)
    lay = (3,) + (4,) * 30 + (3,)
    assert stage_layers(126, 16, 2, explicit=lay) == (7,) + (8,) * 14 + (7,)
    assert chunk_layers((7,) + (8,) * 14 + (7,), 2, lay) == lay
    assert megatron_layout((7,) + (8,) * 14 + (7,), 2, lay).startswith("Et*3|t*4|")
    assert megatron_layout((7,) + (8,) * 14 + (7,), 2, lay).endswith("|t*4|t*3,L")
    with pytest.raises(ScenarioError) as e:
        stage_layers(126, 16, 2, explicit=lay[:-1] + (4,))
    assert e.value.field == "training.pipeline_layers"
    with pytest.raises(ScenarioError) as e:
        stage_layers(126, 16, 2, explicit=(3,) + (4,) * 29 + (3,))
    assert e.value.field == "training.pipeline_layers" and "32" in str(e.value)


def test_llama3_uneven_chunks_bubble_is_the_schedules():
    # the engine's bubble for uneven chunks is the interleaved schedule's makespan, not
    # the 1F1B one of the per-rank times divided by v
    d = {"model": {"preset": "llama3.1-405b", "num_layers": 126},
         "cluster": {"node": "dgx-h100", "num_nodes": 1024},
         "training": {"micro_batch_size": 1, "global_batch_size": 2048, "seq_len": 8192,
                      "tensor_parallel": 8, "pipeline_parallel": 16, "sequence_parallel": True,
                      "flash_attention": True, "interleave_stages": 2,
                      "pipeline_layers": [3] + [4] * 30 + [3]},
         "strategy": {"kind": "megatron_dist_opt"}}
    sc = Scenario.from_dict(d)
    lay = layout(sc)
    ct = compute_times(sc, model_params(sc.model))
    got = pipeline_bubble_mb(sc, lay, ct)
    last = 31
    f = [n * ct["fwd_s"] + (ct["head_s"] * HEAD_FWD_SHARE if s == last else 0) for s, n in enumerate([3] + [4] * 30 + [3])]
    b = [n * ct["bwd_s"] + (ct["head_s"] * (1 - HEAD_FWD_SHARE) if s == last else 0) for s, n in enumerate([3] + [4] * 30 + [3])]
    # the slowest rank: a middle one's 8 layers or the last one's 7 and the head
    top = max(8 * (ct["fwd_s"] + ct["bwd_s"]), f[15] + b[15] + f[31] + b[31])
    m = lay.grad_accumulation_steps
    assert m == 32                               # 2048 sequences over data-parallel 64
    assert got == pytest.approx((interleaved_makespan_s(f, b, 16, 2, m) - m * top) / top)
    assert got < 7.5                             # below the equal chunks' (p - 1)/v


def test_megatron_args_of_a_virtual_stage_layout():
    # the layout string carries the virtual stages itself (arguments.py: no
    # --num-virtual-stages-per-pipeline-rank with --pipeline-model-parallel-layout)
    sc = Scenario.from_dict(base(pipeline_layers=[9, 11, 11, 9, 9, 11, 11, 9], interleave_stages=2))
    args = megatron_pipeline_args(sc)
    assert "--pipeline-model-parallel-layout 'Et*9|t*11|t*11|t*9|t*9|t*11|t*11|t*9,L'" in args
    assert not any("virtual" in a for a in args)
