"""The quick estimate's shortcuts give what the code they stand for gives, to the last bit.

* Pipeline ranks of one role (the same name, layers, embedding and head; rank 0 apart)
  differ only in the micro-batches in flight: ``evaluate._stage_parts`` builds the first
  rank of each role and makes the others with ``memory.in_flight_variant`` (only the
  stored activations and the busiest expert rank's routed tokens made again; the node
  tiers shared when only HBM parts change). Held here to the way it was done before (every
  distinct plan through ``build_parts`` and ``tier_summaries``, written out below as the
  reference) on a few hundred generated scenarios: even and uneven splits, interleaving,
  DualPipe, context and expert parallelism, FP8, LoRA and QLoRA, DPO, layer-selective
  recomputation, activation offload, both conventions; parts, tiers and the whole report
  compared as ``repr``/JSON (the same keys, order and floats).
* ``ActivationShape.made`` (no frozen ``__init__``) equals ``ActivationShape(**fields)``.
* A parse field a section leaves out (``x if "k" in d else v`` in ``ModelSpec.from_dict``
  and ``TrainingSpec.from_dict``) takes ``v``, which must be what the check gives on an
  empty section; and the cluster table's absent values likewise.
* Layouts, parameter counts and stage plans made by ``frozen_new`` equal their
  ``__init__``'s.
"""

import ast
import copy
import dataclasses
import importlib
import inspect
import json
import random
import textwrap

import pytest

from simulation import ScenarioError, evaluate as evaluate_fn
from simulation.activations import ActivationShape
from simulation.memory import (_shape, add_fragmentation, build_parts, stage_plans_for,
                               tier_summaries)
from simulation.parallel import Layout, layout
from simulation.params import ParamCount, model_params
from simulation.pipeline import StagePlan
from simulation.scenario import _CALL, _CLUSTER_DIRECT, ModelSpec, Scenario, TrainingSpec
from simulation.states import state_bytes

E = importlib.import_module("simulation.evaluate")      # the module (the package's evaluate is its function)

_MODELS = ["llama2-7b", "llama2-70b", "llama3.1-8b", "llama3.1-405b", "mixtral-8x7b",
           "deepseek-v2-lite", "deepseek-v3", "qwen2.5-7b", "gpt3-175b", "gemma2-9b"]
_KINDS = ["ddp", "zero1", "zero2", "zero3", "fsdp_full_shard", "fsdp_hybrid_shard",
          "zero_offload", "zero_infinity", "megatron_dist_opt"]
_PIPELINE_KINDS = ["ddp", "zero1", "fsdp_full_shard", "fsdp_hybrid_shard", "megatron_dist_opt"]
_LAYERS = {}


def _num_layers(model: str) -> int:
    if model not in _LAYERS:
        _LAYERS[model] = Scenario.from_dict({"model": {"preset": model},
                                             "cluster": {"node": "dgx-h100"}}).model.num_layers
    return _LAYERS[model]


def varied_scenarios(n: int = 300, seed: int = 17) -> list[dict]:
    """``n`` valid scenario dicts drawn from every axis the stage parts depend on (about
    half with a pipeline of 2-16 stages)."""
    rng = random.Random(seed)
    out = []
    while len(out) < n:
        model = rng.choice(_MODELS)
        pp = rng.choice([1, 1, 2, 4, 4, 8, 16])
        tp = rng.choice([1, 2, 4, 8])
        tr = {"micro_batch_size": rng.choice([1, 2]), "seq_len": rng.choice([2048, 4096, 8192]),
              "global_batch_size": rng.choice([64, 128, 256]), "tensor_parallel": tp,
              "pipeline_parallel": pp, "sequence_parallel": tp > 1 and rng.random() < 0.8,
              "recompute": rng.choice(["none", "selective", "full"]),
              "flash_attention": rng.random() < 0.8,
              "framework": rng.choice(["megatron", "huggingface"]),
              "precision": rng.choice(["bf16", "bf16", "fp16", "fp32"])}
        cp = rng.choice([1, 1, 1, 2, 4])
        if cp > 1:
            tr["context_parallel"] = cp
        if pp > 1:
            r = rng.random()
            if r < 0.2:
                tr["pipeline_schedule"] = "dualpipe"
            elif r < 0.35:
                tr["interleave_stages"] = 2
            elif r < 0.5:
                tr["first_pipeline_layers"] = rng.choice([1, 2, 3, 4])
            elif r < 0.6:
                tr["last_pipeline_layers"] = rng.choice([1, 2, 3])
            elif r < 0.7:
                L = _num_layers(model)
                split = [L // pp] * pp
                for i in range(L - sum(split)):
                    split[i] += 1
                if split[0] > 1:
                    split[0] -= 1
                    split[-1] += 1
                tr["pipeline_layers"] = split
        if model in ("mixtral-8x7b", "deepseek-v2-lite", "deepseek-v3") and rng.random() < 0.7:
            tr["expert_parallel"] = rng.choice([2, 4, 8])
            if rng.random() < 0.3:
                tr["moe_capacity_factor"] = 1.25
            if rng.random() < 0.3:
                tr["moe_routing_imbalance"] = 1.5
        if rng.random() < 0.25:
            tr["fp8"] = rng.choice([{"recipe": "delayed"}, {"recipe": "tensorwise", "param": True},
                                    {"recipe": "blockwise"}, {"recipe": "delayed", "param": True}])
        r = rng.random()
        if r < 0.12:
            tr["lora"] = {"rank": rng.choice([8, 16, 64])}
        elif r < 0.22:
            tr["lora"] = {"rank": 16, "base_dtype": rng.choice(["nf4", "fp4", "int8"])}
        if rng.random() < 0.1:
            tr["preference"] = {"method": "dpo",
                                "reference": rng.choice(["separate", "adapters_off", "precomputed"])}
        if tr["recompute"] == "full" and rng.random() < 0.3:
            tr["recompute_layers"] = rng.choice([1, 2, 4])
        # DeepSpeed's ZeRO-2/3 take no pipeline (scenario._check_pipeline_strategy)
        st = {"kind": rng.choice(_KINDS if pp == 1 else _PIPELINE_KINDS)}
        if st["kind"] == "fsdp_hybrid_shard":
            st["shard_group_size"] = 8
        if rng.random() < 0.15:
            st["offload_activations"] = "cpu"
        d = {"model": {"preset": model},
             "cluster": {"node": rng.choice(["dgx-h100", "dgx-b200", "dgx-a100-80gb",
                                             "gb200-nvl72", "dgx-h100-cxl"]),
                         "num_nodes": rng.choice([1, 2, 4, 8, 16])},
             "training": tr, "strategy": st,
             "convention": rng.choice(["realistic", "realistic", "zero_paper"])}
        try:
            sc = Scenario.from_dict(copy.deepcopy(d))
            layout(sc)
        except ScenarioError:
            continue
        out.append(d)
    return out


SCENARIOS = varied_scenarios()


def stage_parts_reference(sc, pc, lay, sb, counted=None, worst_only=False):
    """``_stage_parts`` as it was before the shortcut: every distinct plan built by
    ``build_parts`` and summed by ``tier_summaries``; each rank's figures read off its
    summary and parts as ``_per_stage`` read them (the stored activations summed over all
    its parts)."""
    plans = stage_plans_for(sc, lay)
    if worst_only and len(plans) > 2 and sc.training.pipeline_schedule == "1f1b" and \
            len({pl.layers for pl in plans}) == 1:
        plans = (plans[0], plans[-1])
    out, made = [], {}
    for i, plan in enumerate(plans):
        key = (plan.name, plan.layers, plan.activation_layers, plan.embedding, plan.head)
        if key not in made:
            parts = build_parts(sc, pc, lay, sb, plan, counted if i == 0 else None)
            tiers = tier_summaries(parts, sc.cluster.accelerator.hbm_capacity_bytes, sc.cluster.tiers)
            if sc.convention == "realistic":
                add_fragmentation(parts, tiers[0]["hbm"],
                                  sc.runtime.fragmentation_for(sc.strategy.zero_stage))
            hbm = tiers[0]["hbm"]
            figures = (hbm["total_bytes"], hbm["params_bytes"] + hbm["grads_bytes"] + hbm["optimizer_bytes"],
                       sum(p["bytes"] for p in parts if p["tier"] == "hbm" and
                           p["category"] == "activations" and p["phase"] == "fwd_bwd"),
                       hbm["peak_phase"])
            made[key] = (parts, tiers, figures if len(plans) > 1 else None)
        out.append((plan.name, *made[key][:2], plan, made[key][2]))
    return out


def test_the_sample_covers_what_the_stage_parts_depend_on():
    trs = [d["training"] for d in SCENARIOS]
    assert len(SCENARIOS) >= 300
    assert sum(t["pipeline_parallel"] >= 8 for t in trs) >= 15
    for key in ("pipeline_schedule", "interleave_stages", "first_pipeline_layers",
                "last_pipeline_layers", "pipeline_layers", "context_parallel", "expert_parallel",
                "fp8", "lora", "preference", "recompute_layers"):
        assert sum(key in t for t in trs) >= 5, key
    assert sum("base_dtype" in t.get("lora", {}) for t in trs) >= 5          # QLoRA
    assert sum(d["strategy"].get("offload_activations") == "cpu" and d["training"]["pipeline_parallel"] > 1
               for d in SCENARIOS) >= 5                      # DDR parts in the in-flight span


@pytest.mark.parametrize("worst_only", [False, True])
def test_stage_parts_equal_every_rank_built_on_its_own(worst_only):
    variants = 0                       # ranks whose breakdown was not made
    for d in SCENARIOS:
        sc = Scenario.from_dict(copy.deepcopy(d))
        pc, lay = model_params(sc.model), layout(sc)
        sb = state_bytes(sc.training.precision, sc.training.optimizer, sc.training.dtypes)
        c_fast, c_ref = [], []
        fast = E._stage_parts(sc, pc, lay, sb, c_fast, worst_only)
        ref = stage_parts_reference(sc, pc, lay, sb, c_ref, worst_only)
        assert c_fast == c_ref
        assert len(fast) == len(ref)
        for f, r in zip(fast, ref):
            assert f[0] == r[0] and f[3] == r[3] and repr(f[4]) == repr(r[4]), d    # every float
            if f[1] is not None:                              # a breakdown made: the same
                assert repr(f[1:3]) == repr(r[1:3]), d
            else:
                variants += 1
        worst = E.worst_stage(fast)
        assert worst[1] is not None and repr(worst[1:4]) == repr(max(
            ref, key=lambda st: st[2][0]["hbm"]["total_bytes"])[1:4])
    assert variants >= (10 if worst_only else 30)           # the shortcut was taken


def test_reports_equal_the_reference_path(monkeypatch):
    fast = []
    for i, d in enumerate(SCENARIOS):
        full = i % 10 == 0
        fast.append(json.dumps(evaluate_fn(Scenario.from_dict(copy.deepcopy(d)), include_step=full,
                                           detail=False).to_dict()))
    monkeypatch.setattr(E, "_stage_parts", stage_parts_reference)
    for i, d in enumerate(SCENARIOS):
        full = i % 10 == 0
        ref = json.dumps(evaluate_fn(Scenario.from_dict(copy.deepcopy(d)), include_step=full,
                                     detail=False).to_dict())
        assert fast[i] == ref, d


def test_a_deep_even_pipeline_builds_one_rank_per_role(monkeypatch):
    """16 stages of an even 1F1B split: first, middle and last are built (the 14 middle
    ranks differ only in the micro-batches in flight), not 16."""
    built = []
    real = E.build_parts
    monkeypatch.setattr(E, "build_parts", lambda *a, **k: built.append(a[4]) or real(*a, **k))
    d = {"model": {"preset": "llama2-70b"}, "cluster": {"node": "dgx-h100", "num_nodes": 8},
         "training": {"micro_batch_size": 1, "global_batch_size": 64, "seq_len": 4096,
                      "tensor_parallel": 4, "pipeline_parallel": 16, "sequence_parallel": True,
                      "recompute": "selective", "flash_attention": True},
         "strategy": {"kind": "zero1"}}
    r = E.evaluate_dict(d, include_step=False)
    assert len(r["memory"]["per_stage"]) >= 14            # ranks grouped where their peaks tie
    assert [p.name for p in built] == ["first", "middle", "last"]


def test_activation_shape_made_equals_its_init():
    seen = 0
    for d in SCENARIOS[::3]:
        sc = Scenario.from_dict(copy.deepcopy(d))
        for rec in ("none", "selective", "full"):
            x = _shape(sc.model, sc.training, rec)
            y = ActivationShape(**{f.name: getattr(x, f.name) for f in dataclasses.fields(x)})
            assert x == y and repr(x) == repr(y) and hash(x) == hash(y)
            assert list(vars(x)) == list(vars(y))
            z = x.replaced(top_k=0, dense_share=0.5)
            assert z == dataclasses.replace(x, top_k=0, dense_share=0.5)
            seen += 1
    assert seen >= 100
    with pytest.raises(TypeError):
        ActivationShape.made({"seq_len": 1, "micro_batch": 1, "hidden": 8})          # heads missing
    with pytest.raises(TypeError):
        ActivationShape.made({"seq_len": 1, "micro_batch": 1, "hidden": 8, "heads": 1, "nope": 1})
    with pytest.raises(ValueError, match="framework"):
        ActivationShape.made({"seq_len": 1, "micro_batch": 1, "hidden": 8, "heads": 1,
                              "framework": "jax"})


def _guarded_fields(cls):
    """``(key, call source, value)`` of every ``call if "key" in d else value`` in
    ``cls.from_dict``."""
    tree = ast.parse(textwrap.dedent(inspect.getsource(cls.from_dict.__func__)))
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.IfExp) and isinstance(node.test, ast.Compare) and \
                isinstance(node.test.ops[0], ast.In) and isinstance(node.test.left, ast.Constant) \
                and isinstance(node.test.comparators[0], ast.Name) and node.test.comparators[0].id == "d":
            out.append((node.test.left.value, ast.unparse(node.body), ast.literal_eval(node.orelse)))
    return out


@pytest.mark.parametrize("cls", [ModelSpec, TrainingSpec])
def test_a_field_left_out_takes_what_its_check_gives_on_an_empty_section(cls):
    import simulation.scenario as S
    fields = _guarded_fields(cls)
    assert len(fields) >= 15
    for key, call, value in fields:
        assert repr(key) in call                       # the guard tests the field it parses
        got = eval(call, vars(S), {"d": {}, "path": "x"})
        assert got == value and type(got) is type(value), key


def test_the_cluster_tables_absent_values_are_the_checks_on_an_empty_section():
    for k, f, a, o, absent in _CLUSTER_DIRECT:
        if absent is _CALL:
            assert o.get("required")
            continue
        got = f({}, k, "cluster", *a, **o)
        assert got == absent and type(got) is type(absent), k


def test_records_made_without_their_init_equal_it():
    for d in SCENARIOS[::5]:
        sc = Scenario.from_dict(copy.deepcopy(d))
        lay, pc = layout(sc), model_params(sc.model)
        for obj, cls in ((lay, Layout), (pc, ParamCount)):
            names = [f.name for f in dataclasses.fields(cls)]
            twin = cls(**{n: getattr(obj, n) for n in names})
            assert obj == twin and repr(obj) == repr(twin)
            assert [k for k in vars(obj) if k in names] == names
        for plan in stage_plans_for(sc, lay):
            twin = StagePlan(**{f.name: getattr(plan, f.name) for f in dataclasses.fields(StagePlan)})
            assert plan == twin and hash(plan) == hash(twin) and list(vars(plan)) == list(vars(twin))
