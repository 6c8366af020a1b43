"""Scenario validation, JSON round trips, the CLI, and the engine's independence from Django."""

import json
import subprocess
import sys

import pytest

from simulation import Report, Scenario, ScenarioError, estimate_dict, evaluate, evaluate_dict

BASE = {"model": {"preset": "llama2-70b"}, "cluster": {"node": "dgx-h100", "num_nodes": 2},
        "training": {"micro_batch_size": 1, "global_batch_size": 32, "seq_len": 4096,
                     "recompute": "full"},
        "strategy": {"kind": "zero3"}}


def with_(path, value):
    d = json.loads(json.dumps(BASE))
    *head, last = path.split(".")
    node = d
    for k in head:
        node = node.setdefault(k, {})
    node[last] = value
    return d


def test_scenario_round_trips_through_json():
    sc = Scenario.from_dict(BASE)
    again = Scenario.from_dict(json.loads(json.dumps(sc.to_dict())))
    assert again == sc
    assert sc.to_dict()["schema"] == 1


def test_report_round_trips_through_json():
    r = evaluate(Scenario.from_dict(BASE))
    assert Report.from_dict(json.loads(json.dumps(r.to_dict()))) == r


def test_evaluation_is_deterministic():
    assert evaluate_dict(BASE) == evaluate_dict(BASE)


@pytest.mark.parametrize("path,value,field", [
    ("cluster.num_nodes", 0, "cluster.num_nodes"),
    ("cluster.gpus_per_node", -8, "cluster.gpus_per_node"),
    ("training.global_batch_size", 33, "training.global_batch_size"),
    ("training.micro_batch_size", 1.5, "training.micro_batch_size"),
    ("model.preset", "llama-9000", "model.preset"),
    ("cluster.node", "dgx-z900", "cluster.node"),
    ("cluster.tiers.hbm4", {"capacity_bytes": 1}, "cluster.tiers.hbm4"),
    ("cluster.tiers.ddr.capacity_bytes", -1, "cluster.tiers.ddr.capacity_bytes"),
    ("cluster.tiers.nvme.read_bytes_per_s", 0, "cluster.tiers.nvme.read_bytes_per_s"),
    ("strategy.kind", "zero4", "strategy.kind"),
    ("strategy.offload_params", "cpu", "strategy.offload_params"),   # zero3 + ... ok? no: see below
    ("training.tensor_parallel", 3, "training.tensor_parallel"),
    ("training.pipeline_parallel", 5, "training.pipeline_parallel"),   # 5 does not divide 16 GPUs
    ("training.precision", "fp8", "training.precision"),
    ("training.seq_len", "long", "training.seq_len"),
    ("runtime.fragmentation_fraction", 2, "runtime.fragmentation_fraction"),
    ("model.colour", "blue", "model.colour"),
    ("convention", "bogus", "convention"),          # a top-level field: no leading dot
    ("convention", 5, "convention"),
])
def test_bad_input_names_the_field(path, value, field):
    d = with_(path, value)
    if path == "strategy.offload_params":
        d["strategy"]["kind"] = "zero2"          # parameter offload needs ZeRO-3
    if path == "training.pipeline_parallel":
        d["strategy"]["kind"] = "zero1"          # ZeRO-3 takes no pipeline (below)
    with pytest.raises(ScenarioError) as e:
        evaluate_dict(d)
    assert e.value.field == field
    assert str(e.value).startswith(field + ": ")


def test_hybrid_shard_needs_a_dividing_group():
    d = with_("strategy", {"kind": "fsdp_hybrid_shard", "shard_group_size": 5})
    with pytest.raises(ScenarioError) as e:
        evaluate_dict(d)
    assert e.value.field == "strategy.shard_group_size"


def test_preset_values_can_be_overridden():
    d = with_("cluster.tiers", {"ddr": {"capacity_bytes": 1e12}, "cxl": None})
    r = evaluate_dict(d)
    assert r["memory"]["per_node"]["ddr"]["capacity_bytes"] == 1e12
    assert r["scenario"]["cluster"]["tiers"]["ddr"]["read_bytes_per_s"] > 0   # kept from the template


def test_resolved_scenario_needs_no_presets():
    """A stored run's input re-evaluates to the same report without any preset table."""
    resolved = Scenario.from_dict(BASE).to_dict()
    again = Scenario.from_dict(resolved, models={}, nodes={}, accelerators={})
    assert evaluate(again).memory == evaluate(Scenario.from_dict(BASE)).memory


def run_cli(*args, stdin=None):
    return subprocess.run([sys.executable, "-m", "simulation", *args], input=stdin,
                          capture_output=True, text=True, timeout=60)


def test_cli_prints_report_from_stdin():
    p = run_cli("evaluate", "-", stdin=json.dumps(BASE))
    assert p.returncode == 0, p.stderr
    r = json.loads(p.stdout)
    assert r["model"]["num_params"] == 68976648192
    for k in ("params_bytes", "grads_bytes", "optimizer_bytes", "activations_bytes",
              "buffers_bytes", "total_bytes", "capacity_bytes"):
        assert k in r["memory"]["per_gpu"]["hbm"]
        for t in ("ddr", "nvme", "cxl"):
            assert k in r["memory"]["per_node"][t]


def test_cli_reads_a_file_and_reports_bad_input(tmp_path):
    f = tmp_path / "s.json"
    f.write_text(json.dumps(with_("training.global_batch_size", 7)))
    p = run_cli("evaluate", str(f))
    assert p.returncode == 2
    assert "training.global_batch_size" in p.stderr
    f.write_text("{not json")
    assert run_cli("evaluate", str(f)).returncode == 2


def test_engine_never_imports_django_or_celery():
    code = ("import sys, simulation; simulation.evaluate_dict(%r); "
            "bad = [m for m in sys.modules if m.split('.')[0] in ('django', 'celery', 'rest_framework')]; "
            "print(bad); sys.exit(1 if bad else 0)") % (BASE,)
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stdout + p.stderr


def test_progress_is_reported_in_order_up_to_one():
    seen = []
    evaluate(Scenario.from_dict(BASE), progress=seen.append)
    assert seen == sorted(seen) and seen[-1] == 1.0 and len(seen) >= 3


@pytest.mark.parametrize("path,value,field", [
    ("cluster.num_nodes", 10**23, "cluster.num_nodes"),
    ("training.seq_len", 10**23, "training.seq_len"),
    ("cluster.gpus_per_node", 4096, "cluster.gpus_per_node"),
])
def test_absurd_sizes_are_refused_not_computed(path, value, field):
    with pytest.raises(ScenarioError) as e:
        evaluate_dict(with_(path, value))
    assert e.value.field == field and "at most" in e.value.message


def test_a_huge_number_is_shown_short_in_the_message():
    with pytest.raises(ScenarioError) as e:
        evaluate_dict(with_("cluster.num_nodes", 1e308))
    assert e.value.message.endswith("got 1e+308") and len(e.value.message) < 80


def test_messages_show_values_as_json():
    with pytest.raises(ScenarioError) as e:
        evaluate_dict(with_("cluster.num_nodes", True))
    assert e.value.message.endswith("got true")


def test_more_gpus_than_the_node_template_has_is_said():
    """dgx-h100 has 8 GPUs: 64 per node keeps its DDR/NVMe/NICs, which a note says; the
    price scales with the GPUs (8 x the template's)."""
    d = with_("cluster.gpus_per_node", 64)
    d["training"]["global_batch_size"] = 128          # 1 x 128 GPUs
    r = estimate_dict(d)
    assert r["scenario"]["cluster"]["template_gpus_per_node"] == 8
    assert any("more than the" in n and "template's 8" in n for n in r["notes"]), r["notes"]
    fewer = estimate_dict(with_("cluster.gpus_per_node", 4))
    assert fewer["scenario"]["cluster"]["template_gpus_per_node"] == 8
    assert not any("more than the" in n for n in fewer["notes"])
    same = estimate_dict(with_("cluster.gpus_per_node", 8))
    assert "template_gpus_per_node" not in same["scenario"]["cluster"]
    # a resolved scenario evaluates again to the same report (stored runs are re-evaluated)
    assert estimate_dict(r["scenario"])["notes"] == r["notes"]


def test_a_sequence_longer_than_the_models_context_is_said():
    """Llama 2 was trained with a 4,096-token context (Touvron et al. 2023, Table 1)."""
    d = with_("training.seq_len", 16384)
    notes = estimate_dict(d)["notes"]
    assert any("16,384 is longer than" in n and "4,096-token context" in n for n in notes), notes
    assert not any("context" in n for n in estimate_dict(BASE)["notes"])


def test_the_pipeline_degree_that_does_not_divide_is_named():
    d = with_("training.pipeline_parallel", 5)          # 2 nodes x 8 = 16 GPUs
    d["strategy"]["kind"] = "zero1"
    with pytest.raises(ScenarioError) as e:
        evaluate_dict(d)
    assert e.value.field == "training.pipeline_parallel"
    assert "1 x 5 = 5 must divide the 16 GPUs (2 nodes x 8)" in e.value.message


@pytest.mark.parametrize("kind", ["zero2", "zero3", "zero_offload", "zero_infinity"])
def test_deepspeed_zero_2_and_3_take_no_pipeline(kind):
    # DeepSpeed's PipelineEngine.__init__ (deepspeed/runtime/pipe/engine.py) asserts
    # zero_optimization_stage() < 2: "ZeRO-2 and ZeRO-3 are incompatible with pipeline
    # parallelism"; Megatron-DeepSpeed's pipeline is that engine
    d = with_("training.pipeline_parallel", 2)
    d["strategy"]["kind"] = kind
    with pytest.raises(ScenarioError) as e:
        evaluate_dict(d)
    assert e.value.field == "strategy.kind"
    assert "incompatible with pipeline parallelism" in e.value.message and kind in e.value.message


@pytest.mark.parametrize("kind", ["zero1", "megatron_dist_opt", "ddp", "fsdp_full_shard"])
def test_zero1_megatron_and_fsdp_take_a_pipeline(kind):
    # zero1 (BLOOM's and MT-NLG's ZeRO-1 + pipeline), Megatron's own optimizers and
    # PyTorch FSDP with a pipeline (torchtitan's pipeline + FSDP2)
    d = with_("training.pipeline_parallel", 2)
    d["strategy"]["kind"] = kind
    assert evaluate_dict(d)["parallelism"]["pipeline_parallel"] == 2


def test_a_pipeline_without_a_strategy_kind_runs_zero1():
    # the default kind is zero3, which no pipeline takes: with one, zero1, the highest
    # stage DeepSpeed's pipeline engine runs; a kind given is kept (and checked)
    d = with_("training.pipeline_parallel", 2)
    del d["strategy"]
    assert Scenario.from_dict(d).strategy.kind == "zero1"
    d["strategy"] = {"prefetch_depth": 2}
    sc = Scenario.from_dict(d)
    assert sc.strategy.kind == "zero1" and sc.strategy.prefetch_depth == 2
    assert sc.to_dict()["strategy"]["kind"] == "zero1"
    assert Scenario.from_dict(BASE).strategy.kind == "zero3"      # no pipeline: the default


def test_checked_scenario_names_every_bad_field_the_input_holds():
    from simulation import ScenarioError, ScenarioErrors, checked_scenario

    good = {"model": {"preset": "llama2-7b"}, "cluster": {"node": "dgx-h100", "gpus_per_node": 1}}
    assert checked_scenario(good).model.num_layers == 32
    bad = dict(good, training={"seq_len": 0, "optimizer": "lion9", "tensor_parallel": 3},
               strategy={"kind": "zero9"})
    with pytest.raises(ScenarioErrors) as e:
        checked_scenario(bad)
    assert [x.field for x in e.value.errors] == [
        "training.seq_len", "training.optimizer", "strategy.kind", "training.tensor_parallel"]
    assert e.value.field == "training.seq_len" and "training.optimizer: must be one of" in str(e.value)
    assert bad["training"] == {"seq_len": 0, "optimizer": "lion9", "tensor_parallel": 3}  # untouched
    # one bad field: the plain ScenarioError; a preset name that is wrong is reported, not the
    # "is required" fields that leaving it out would cause
    with pytest.raises(ScenarioError) as e:
        checked_scenario(dict(good, model={"preset": "llama9"}))
    assert type(e.value) is ScenarioError and e.value.field == "model.preset"


def test_a_cross_field_check_that_read_a_bad_field_is_not_reported_with_it():
    # an unknown LoRA implementation is left out and retried as PEFT's (the default); the
    # dropout position "post" (AutoModel's) would then be refused as PEFT's, a consequence of
    # leaving the implementation out, not a second mistake (ScenarioError.depends_on)
    from simulation import ScenarioError, ScenarioErrors, checked_scenario

    good = {"model": {"preset": "llama2-7b"}, "cluster": {"node": "dgx-h100", "gpus_per_node": 1}}
    with pytest.raises(ScenarioError) as e:
        checked_scenario(dict(good, training={"lora": {"implementation": "nemo", "dropout_position": "post"}}))
    assert type(e.value) is ScenarioError and e.value.field == "training.lora.implementation"
    # the same check is still reported where the implementation given is the one it reads
    with pytest.raises(ScenarioError) as e:
        checked_scenario(dict(good, training={"lora": {"implementation": "peft", "dropout_position": "post"}}))
    assert e.value.field == "training.lora.dropout_position"
    # and beside an unrelated bad field
    with pytest.raises(ScenarioErrors) as e:
        checked_scenario(dict(good, training={"seq_len": 0, "lora": {"dropout_position": "post"}}))
    assert [x.field for x in e.value.errors] == ["training.seq_len", "training.lora.dropout_position"]


def test_a_custom_accelerator_and_tier_name_every_missing_and_bad_field_at_once():
    """README: every bad field at once. A required field left out cannot be dropped and
    retried, so the accelerator (and a tier, and the cluster) must name them all itself."""
    from simulation import ScenarioErrors, checked_scenario

    acc = {"name": "my card", "hbm_capacity_bytes": 24 * 2**30, "hbm_bytes_per_s": 1e12,
           "peak_flops_bf16": 1.5e14, "host_link_bytes_per_s": 32e9}
    d = {"model": {"preset": "llama2-7b"}, "cluster": {"gpus_per_node": 1, "accelerator": acc}}
    with pytest.raises(ScenarioErrors) as e:
        checked_scenario(d)
    assert [(x.field, x.message) for x in e.value.errors] == [
        ("cluster.accelerator.peak_flops_fp32", "is required"),
        ("cluster.accelerator.scaleup_bytes_per_s", "is required")]
    # bad values too, and a tier's and the cluster's own, in one answer
    d = {"model": {"preset": "llama2-7b"},
         "cluster": {"gpus_per_node": 0, "accelerator": dict(acc, hbm_bytes_per_s="fast"),
                     "tiers": {"nvme": {"capacity_bytes": 1e12}}}}
    with pytest.raises(ScenarioErrors) as e:
        checked_scenario(d)
    assert sorted(x.field for x in e.value.errors) == sorted([
        "cluster.accelerator.hbm_bytes_per_s", "cluster.accelerator.peak_flops_fp32",
        "cluster.accelerator.scaleup_bytes_per_s", "cluster.tiers.nvme.read_bytes_per_s",
        "cluster.tiers.nvme.write_bytes_per_s", "cluster.gpus_per_node"])


def test_a_sequence_length_past_any_published_context_is_refused_naming_the_field():
    from simulation import ScenarioError, checked_scenario
    from simulation.scenario import MAX_SEQ_LEN

    d = {"model": {"preset": "llama2-7b"}, "cluster": {"node": "dgx-h100", "gpus_per_node": 1}}
    assert checked_scenario(dict(d, training={"seq_len": 131_072})).training.seq_len == 131_072
    with pytest.raises(ScenarioError) as e:
        checked_scenario(dict(d, training={"seq_len": 100_000_000}))
    assert e.value.field == "training.seq_len"
    assert e.value.message == f"must be at most {MAX_SEQ_LEN:,}, got 100,000,000"


def test_messages_scale_large_sizes_and_separate_thousands():
    from simulation.units import fmt_bytes
    assert fmt_bytes(85.1e9) == "85.1 GB (79.3 GiB)"
    assert fmt_bytes(30.72e12) == "30.72 TB (27.94 TiB)"
    # 22528556.57 TB read without separators; in PB: 2.252855657e19 / 1e15 and / 2^50
    assert fmt_bytes(2.252855657e19) == "22,528.56 PB (20,009.38 PiB)"


def test_memory_advice_names_only_levers_not_in_use():
    """Llama 3.1 8B, distributed optimizer, flash attention, no recompute, micro batch 1 on
    an H100 (expert review): HBM is short by activations (24 GiB), while model states (2 + 4
    + 12 / 8 = 7.5 B x 8.03e9 = 60.2 GB) take under the card's 85.1 GB. The advice names
    full recomputation, not selective (which drops only the attention core's s x s tensors,
    which FlashAttention never keeps) nor flash_attention (already on); the model-state note
    says what they take (it said "do not fit", beside a tight verdict)."""
    from simulation import estimate_dict
    r = estimate_dict({"model": {"preset": "llama3.1-8b"}, "cluster": {"node": "dgx-h100"},
                       "training": {"flash_attention": True, "seq_len": 4096, "global_batch_size": 32,
                                    "framework": "megatron"},
                       "strategy": {"kind": "megatron_dist_opt"}})
    assert r["memory"]["per_gpu"]["hbm"]["free_bytes"] < 0
    (n,) = [n for n in r["notes"] if n.startswith("Activations take ")]
    assert "training.recompute = full." in n and "selective" not in n and "flash_attention" not in n
    (m,) = [n for n in r["notes"] if n.startswith("Model states")]
    assert m.startswith("Model states take 60.2 GB (56.1 GiB) of the GPU's 85.1 GB (79.3 GiB): ")
    # eager attention at micro batch 2: selective too, flash attention and a smaller micro batch
    r = estimate_dict({"model": {"preset": "llama3.1-8b"}, "cluster": {"node": "dgx-h100"},
                       "training": {"flash_attention": False, "seq_len": 4096, "micro_batch_size": 2,
                                    "global_batch_size": 32}, "strategy": {"kind": "fsdp_full_shard"}})
    (n,) = [n for n in r["notes"] if n.startswith("Activations take ")]
    assert n.endswith("try training.recompute = full (or selective), flash_attention or a smaller micro batch.")


def test_model_state_advice_never_suggests_what_the_strategy_already_does():
    """An 8B model on a 24 GiB card: its states do not fit under any stage-0..2 strategy
    (bf16 parameters alone are 2 B x 8.03e9 = 16.1 GB of 25.8 GB, before gradients and
    activations). The note names next steps, never the scenario's own setting."""
    from simulation import estimate_dict

    acc = {"name": "my card", "hbm_capacity_bytes": 24 * 2**30, "hbm_bytes_per_s": 1e12,
           "peak_flops_bf16": 1.5e14, "peak_flops_fp32": 2e13, "host_link_bytes_per_s": 32e9,
           "scaleup_bytes_per_s": 32e9}

    def note(strategy, gpus=8):
        r = estimate_dict({"model": {"preset": "llama3.1-8b"}, "strategy": strategy,
                           "cluster": {"node": "dgx-h100", "gpus_per_node": gpus, "accelerator": acc}})
        assert r["memory"]["per_gpu"]["hbm"]["free_bytes"] < 0
        (n,) = [n for n in r["notes"] if n.startswith("Model states take ")]
        return n

    offload = note({"kind": "zero_offload"})            # CPU optimizer offload already on
    assert "offload the optimizer" not in offload
    assert "already offloaded to CPU" in offload and "offload_params" in offload
    assert "more data-parallel GPUs" in offload
    zero2 = note({"kind": "zero2"})
    assert "offload the optimizer to CPU/NVMe/CXL" in zero2 and "zero3" in zero2
    ddp = note({"kind": "ddp"})
    assert "more data-parallel GPUs" not in ddp          # DDP replicates every state
    assert "ZeRO-1 or higher" in ddp


def test_counts_in_messages_are_singular_for_one():
    from simulation import ScenarioError, checked_scenario
    from simulation.units import plural

    assert (plural(1, "GPU"), plural(8, "GPU"), plural(1024, "GPU"), plural(0, "job")) == (
        "1 GPU", "8 GPUs", "1,024 GPUs", "0 jobs")
    assert plural(1, "sequence") == "1 sequence" and plural(2, "child", "children") == "2 children"
    with pytest.raises(ScenarioError) as e:
        checked_scenario({"model": {"preset": "llama2-7b"}, "training": {"tensor_parallel": 2},
                          "cluster": {"node": "dgx-h100", "gpus_per_node": 1}})
    assert "must divide the 1 GPU (1 node x 1)" in e.value.message


def test_newer_training_fields_are_left_out_at_their_dataclass_default_only():
    """to_dict leaves each of _TRAINING_OMITTED_AT_DEFAULT out at TrainingSpec's default
    (older scenarios' JSON and hashes unchanged) and keeps it at any other value."""
    from simulation.scenario import _TRAINING_DEFAULTS, _TRAINING_OMITTED_AT_DEFAULT, TrainingSpec
    base = {"model": {"preset": "mixtral-8x7b"}, "cluster": {"node": "dgx-h100", "num_nodes": 2}}
    out = Scenario.from_dict(base).to_dict()["training"]
    assert not set(_TRAINING_OMITTED_AT_DEFAULT) & set(out)
    assert _TRAINING_DEFAULTS["context_parallel"] == TrainingSpec().context_parallel == 1
    given = {"context_parallel": 2, "flash_attention": True, "expert_parallel": 8,
             "moe_routing_imbalance": 1.5, "moe_a2a_overlap": True, "context_parallel_comm": "all_gather"}
    out = Scenario.from_dict({**base, "training": given}).to_dict()["training"]
    assert {k: out[k] for k in given} == given


@pytest.mark.parametrize("oo,op,field", [
    ("cpu", "none", "strategy.offload_params"),      # the optimizer alone: ZeRO-Offload's, not FSDP's
    ("none", "cpu", "strategy.offload_optimizer"),   # parameters on the host step there
    ("nvme", "nvme", "strategy.offload_params"),     # FSDP has no NVMe offload
    ("cpu", "nvme", "strategy.offload_params"),
])
def test_fsdp_offloads_parameters_and_optimizer_together_to_host_memory(oo, op, field):
    # FSDP1 CPUOffload(offload_params=True) / FSDP2 CPUOffloadPolicy keep the parameter
    # shards and their gradients on the host and the optimizer steps there
    d = with_("strategy", {"kind": "fsdp_full_shard", "offload_optimizer": oo, "offload_params": op})
    with pytest.raises(ScenarioError) as e:
        Scenario.from_dict(d)
    assert e.value.field == field
    assert "FSDP" in e.value.message


@pytest.mark.parametrize("tier,node", [("none", "dgx-h100"), ("cpu", "dgx-h100"), ("cxl", "dgx-h100-cxl")])
def test_fsdp_offload_both_or_neither_is_accepted(tier, node):
    d = with_("strategy", {"kind": "fsdp_full_shard", "offload_optimizer": tier, "offload_params": tier})
    d["cluster"]["node"] = node
    sc = Scenario.from_dict(d)
    assert sc.strategy.offload_params == sc.strategy.offload_optimizer == tier


@pytest.mark.parametrize("kind", ["zero1", "zero2", "zero_offload"])
def test_nvme_optimizer_offload_needs_zero3(kind):
    # DeepSpeed builds its stage 1 / 2 optimizer with cpu_offload = (offload_optimizer.device
    # == "cpu") (deepspeed/runtime/engine.py zero_cpu_offload): NVMe is ZeRO-Infinity's (stage 3)
    d = with_("strategy", {"kind": kind, "offload_optimizer": "nvme"})
    with pytest.raises(ScenarioError) as e:
        Scenario.from_dict(d)
    assert e.value.field == "strategy.offload_optimizer" and "ZeRO-3" in e.value.message
    for ok in ({"kind": kind, "offload_optimizer": "cpu"}, {"kind": "zero3", "offload_optimizer": "nvme"},
               {"kind": "zero_infinity"}):
        assert Scenario.from_dict(with_("strategy", ok)).strategy.offload_optimizer in ("cpu", "nvme")


def test_a_layout_check_does_not_quote_the_default_of_a_field_found_bad():
    # the pipeline degree 16 does not divide DeepSeek-V3's 61 layers; left out and retried,
    # it reads as 1, and DualPipe's check would then say "needs an even pipeline_parallel,
    # got 1" of a scenario that sent 16 (errors.add_reads: the layout's checks name what they read)
    from simulation import ScenarioError, ScenarioErrors, checked_scenario

    d = {"model": {"preset": "deepseek-v3"}, "cluster": {"node": "dgx-h100", "num_nodes": 256},
         "training": {"flash_attention": True, "expert_parallel": 64, "pipeline_parallel": 16,
                      "pipeline_schedule": "dualpipe", "global_batch_size": 16384},
         "strategy": {"kind": "zero1"}}
    with pytest.raises(ScenarioError) as e:
        checked_scenario(d)
    assert type(e.value) is ScenarioError and e.value.field == "training.pipeline_parallel"
    assert "got 16" in e.value.message
    # a layout check that reads none of the bad fields is still reported beside them
    good = {"model": {"preset": "llama2-7b"}, "cluster": {"node": "dgx-h100"}}
    with pytest.raises(ScenarioErrors) as e:
        checked_scenario(dict(good, training={"seq_len": 0, "tensor_parallel": 3}))
    assert [x.field for x in e.value.errors] == ["training.seq_len", "training.tensor_parallel"]
