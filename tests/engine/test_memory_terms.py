"""Each memory term of the realistic convention on its own, against a hand calculation."""

import math

import pytest

from simulation import evaluate_dict
from simulation.fit import MAX_BAND, MEMORY_ERROR, fit_state, tier_state
from simulation.loss import loss_bytes
from simulation.scenario import RuntimeSpec

P7 = 6738415616            # Llama-2-7B


def run(model="llama2-7b", kind="fsdp_full_shard", nodes=1, gpn=None, training=None, **extra):
    cluster = {"node": "dgx-h100", "num_nodes": nodes}
    if gpn:
        cluster["gpus_per_node"] = gpn
    t = {"micro_batch_size": 1, "seq_len": 4096, "recompute": "full", "flash_attention": True}
    t.update(training or {})
    return evaluate_dict({"model": {"preset": model}, "cluster": cluster, "training": t,
                          "strategy": {"kind": kind}, **extra}, include_step=False)


def parts(r, prefix, tier="hbm", scope="per_gpu"):
    return [p for p in r["memory"][scope][tier]["parts"] if p["name"].startswith(prefix)]


def test_loss_bytes_per_kernel_by_hand():
    tokens, v, h = 4096, 32000, 4096
    # torch: fp32 log-probs 4 + nll gradient 4 + log_softmax gradient 4 = 12 B per logit
    assert loss_bytes("torch", tokens, v, h) == 12 * 4096 * 32000
    # Megatron: bf16 logits 2 + one in-place fp32 softmax 4, over vocab / t
    assert loss_bytes("megatron_vocab_parallel", tokens, v, h, 8) == 6 * 4096 * 32000 / 8
    # Liger: chunks of ~tokens x hidden logits (6 B) + the head input's gradient (2 B)
    assert loss_bytes("fused_linear_cross_entropy", tokens, v, h) == 8 * 4096 * 4096
    with pytest.raises(ValueError):
        loss_bytes("nope", tokens, v, h)


def test_loss_kernel_is_a_training_setting_shown_as_its_own_part():
    torch_ = run(training={"loss_kernel": "torch"})
    fused = run(training={"loss_kernel": "fused_linear_cross_entropy"})
    (a,) = parts(torch_, "logits and cross-entropy (torch)")
    (b,) = parts(fused, "logits and cross-entropy (fused_linear_cross_entropy)")
    assert a["bytes"] == 12 * 4096 * 32000 and a["phase"] == "loss"
    assert b["bytes"] == 8 * 4096 * 4096
    bad = {"model": {"preset": "llama2-7b"}, "cluster": {"node": "dgx-h100"},
           "training": {"loss_kernel": "liger"}}
    with pytest.raises(Exception, match="training.loss_kernel"):
        evaluate_dict(bad)


def test_fsdp_root_unit_holds_embedding_and_head_through_backward():
    r = run()
    (root,) = parts(r, "root FSDP unit gathered")
    (grad,) = parts(r, "root FSDP unit unsharded gradient")
    # Llama-2-7B: embedding 32000 x 4096 and an untied head 32000 x 4096, bf16
    assert root["bytes"] == 2 * (32000 * 4096 * 2)
    assert root["phase"] == "fwd_bwd"             # live at the loss and through backward
    assert grad["bytes"] == 2 * (32000 * 4096 * 2) and grad["phase"] == "backward"
    ddp = run(kind="ddp", gpn=1)
    assert not parts(ddp, "root FSDP unit")


def test_deepspeed_zero3_gathers_the_head_as_its_own_module():
    r = run(kind="zero3")
    (head,) = parts(r, "output head gathered")
    assert head["bytes"] == 32000 * 4096 * 2


def test_recompute_working_set_only_with_recomputation_and_in_backward():
    full = run()
    (ws,) = parts(full, "recompute working set")
    assert ws["phase"] == "backward" and ws["bytes"] > 0
    assert not parts(run(training={"recompute": "none"}), "recompute working set")


def test_pipeline_reports_every_stage_and_the_last_holds_the_loss():
    r = run(model="llama2-70b", kind="zero1", nodes=2,
            training={"pipeline_parallel": 4, "tensor_parallel": 4, "global_batch_size": 8})
    stages = {s["stage"]: s for s in r["memory"]["per_stage"]}
    assert set(stages) == {"first", "middle", "last"}
    assert sum(s["num_stages"] for s in r["memory"]["per_stage"]) == 4
    worst = max(stages.values(), key=lambda s: s["hbm_total_bytes"])
    assert r["memory"]["stage"] == worst["stage"]
    assert r["memory"]["per_gpu"]["hbm"]["total_bytes"] == worst["hbm_total_bytes"]
    names = [p["name"] for p in r["memory"]["per_gpu"]["hbm"]["parts"]]
    if r["memory"]["stage"] == "last":
        assert any(n.startswith("logits and cross-entropy") for n in names)
    else:
        assert not any(n.startswith("logits and cross-entropy") for n in names)


def test_checkpoint_staging_through_host_dram_is_counted_with_pinned_rounding():
    r = run(nodes=1, checkpoint={"target": "parallel_fs", "method": "blocking"})
    (copy,) = parts(r, "checkpoint staging copy", "ddr", "per_node")
    (rounding,) = parts(r, "pinned-allocator rounding", "ddr", "per_node")
    # FSDP: the fp32 shard (also the master weights) and fp32 Adam's two moments,
    # 4 + 8 = 12 B/param sharded over 8 ranks, all 8 ranks of the node
    assert copy["bytes"] == pytest.approx(12 * P7 / 8 * 8)
    assert copy["phase"] == "checkpoint"
    assert rounding["bytes"] == pytest.approx(copy["bytes"] * (1 / math.log(2) - 1))
    assert r["memory"]["per_node"]["ddr"]["moments_bytes"]["checkpoint"] == pytest.approx(
        copy["bytes"] + rounding["bytes"])


def test_checkpoint_holds_fsdp_shard_once():
    # FSDP under mixed precision: the fp32 flat shard is the master copy (no 16-bit copy
    # exists between steps), so the sharded state dict holds 4 B of parameters and 8 B of
    # Adam moments a parameter: 12 B, not the states' own 2 + 4 + 8
    r = evaluate_dict({"model": {"preset": "llama2-7b"}, "cluster": {"node": "dgx-h100"},
                       "training": {"micro_batch_size": 1, "seq_len": 4096, "flash_attention": True},
                       "strategy": {"kind": "fsdp_full_shard"}}, detail=False)
    size = r["checkpoint"]["size"]
    assert size["bytes_per_param"] == {"params": 4.0, "master_weights": 0.0, "optimizer_states": 8.0}
    assert size["full_bytes"] == round(12 * P7)
    # DeepSpeed ZeRO-3 keeps 16-bit partitions beside its fp32 masters: both are saved
    z = evaluate_dict({"model": {"preset": "llama2-7b"}, "cluster": {"node": "dgx-h100"},
                       "training": {"micro_batch_size": 1, "seq_len": 4096, "flash_attention": True},
                       "strategy": {"kind": "zero3"}}, detail=False)
    assert z["checkpoint"]["size"]["full_bytes"] == round(16 * P7 - 2 * P7)    # 2 + 4 + 8


def test_checkpoint_staging_leaves_host_resident_states_where_they_are():
    # ZeRO-Offload: the fp32 masters and Adam moments live in pinned host memory; a save
    # writes them from there, so only the 16-bit parameters on the GPU are staged:
    # 2 B/param of llama2-13b on one GPU (13,015,864,320 parameters)
    d = {"model": {"preset": "llama2-13b"}, "cluster": {"node": "dgx-a100-80gb", "gpus_per_node": 1},
         "training": {"micro_batch_size": 1, "seq_len": 2048, "recompute": "full", "flash_attention": True},
         "strategy": {"kind": "zero_offload", "offload_optimizer": "cpu"},
         "checkpoint": {"target": "parallel_fs", "method": "blocking"}}
    r = evaluate_dict(d, include_step=False)
    (copy,) = parts(r, "checkpoint staging copy", "ddr", "per_node")
    assert r["model"]["num_params"] == 13_015_864_320
    assert copy["bytes"] == pytest.approx(2 * 13_015_864_320)
    assert r["fit_state"] == "fits"          # 13B with ZeRO-Offload on one A100 80GB host share
    # the parameters offloaded too (ZeRO-Infinity to CPU): nothing is staged
    d["strategy"] = {"kind": "zero_infinity", "offload_optimizer": "cpu", "offload_params": "cpu"}
    assert parts(evaluate_dict(d, include_step=False), "checkpoint staging copy", "ddr", "per_node") == []


def test_tier_state_band_edges():
    cap, band = 100.0, 0.08
    assert tier_state(92.0, cap, band) == "fits"
    assert tier_state(92.1, cap, band) == "tight"
    assert tier_state(108.0, cap, band) == "tight"
    assert tier_state(108.1, cap, band) == "does_not_fit"
    assert fit_state(["fits", "tight", "fits"]) == "tight"
    assert fit_state(["tight", "does_not_fit"]) == "does_not_fit"
    assert max(MEMORY_ERROR.values()) <= MAX_BAND == 0.10


def test_fragmentation_follows_the_allocation_pattern():
    assert RuntimeSpec().fragmentation_for(0) == 0.10
    assert RuntimeSpec().fragmentation_for(3) == 0.20
    assert RuntimeSpec(expandable_segments=True).fragmentation_for(3) == 0.03
    assert RuntimeSpec(fragmentation_fraction=0.3).fragmentation_for(3) == 0.3


def model_states_bpp(r, tier="hbm", scope="per_gpu"):
    t = r["memory"][scope][tier]
    return (t["params_bytes"] + t["grads_bytes"] + t["optimizer_bytes"]) / P7


def test_megatron_distributed_optimizer_is_six_plus_twelve_over_d():
    # Megatron-LM docs (dist_optimizer.md): bf16 params + fp32 grads, distributed: 6 + 12/d
    r = run(kind="megatron_dist_opt")
    assert model_states_bpp(r) == pytest.approx(6 + 12 / 8)
    names = [p["name"] for p in r["memory"]["per_gpu"]["hbm"]["parts"]]
    assert "fp32 main gradients (full, every rank)" in names
    assert not any("bucket" in n for n in names)
    # the same table, non-distributed (DDP): 18
    assert model_states_bpp(run(kind="ddp", gpn=1)) == pytest.approx(18)


def test_pure_bf16_has_no_master_copy_and_bf16_moments():
    pure = {"dtypes": {"master_weights": "none", "optimizer_states": "bf16"}}
    r = run(training=pure)
    # FSDP shard: bf16 params 2 + bf16 grads 2 + Adam m, v in bf16 4 = 8 B/param over 8 ranks
    assert model_states_bpp(r) == pytest.approx(8 / 8)
    assert r["convention"]["bytes_per_param"]["dtypes"] == {
        "params": "bf16", "grads": "bf16", "master_weights": "none", "optimizer_states": "bf16"}
    kahan = run(training={"dtypes": {"master_weights": "none", "optimizer_states": "bf16",
                                     "kahan_summation": True}})
    assert model_states_bpp(kahan) == pytest.approx(10 / 8)    # + a bf16 compensation buffer
    with pytest.raises(Exception, match="training.dtypes.kahan_summation"):
        run(training={"dtypes": {"kahan_summation": True}})
    with pytest.raises(Exception, match="training.dtypes.optimizer_states"):
        run(training={"dtypes": {"optimizer_states": "fp64"}})


def test_eight_bit_adam_moments_are_int8():
    r = run(training={"optimizer": "adam_8bit"})
    # FSDP: fp32 shard 4 + fp32 grads 4 + int8 m, v 2 = 10 B/param over 8 ranks
    assert model_states_bpp(r) == pytest.approx(10 / 8)


def test_zero1_with_optimizer_offload_keeps_full_gradients_on_the_gpu():
    # stage_1_and_2.py: no gradient hooks in stage 1, 16-bit grads stay until the boundary
    r = run(kind="zero1", training={"recompute": "full"})
    off = evaluate_dict({"model": {"preset": "llama2-7b"}, "cluster": {"node": "dgx-h100"},
                         "strategy": {"kind": "zero1", "offload_optimizer": "cpu"}},
                        include_step=False)
    (g,) = parts(off, "bf16 gradients (full")
    assert g["bytes"] == pytest.approx(2 * P7)
    assert r["memory"]["per_gpu"]["hbm"]["grads_bytes"] == pytest.approx(2 * P7)


def test_dtypes_round_trip_through_the_scenario_json():
    from simulation import Scenario
    d = {"model": {"preset": "llama2-7b"}, "cluster": {"node": "dgx-h100"},
         "training": {"dtypes": {"master_weights": "none", "optimizer_states": "bf16"}}}
    sc = Scenario.from_dict(d)
    again = Scenario.from_dict(sc.to_dict())
    assert again.training.dtypes == sc.training.dtypes
    assert sc.to_dict()["training"]["dtypes"] == {"master_weights": "none", "optimizer_states": "bf16",
                                                  "kahan_summation": False}


def test_a_slice_of_the_node_gets_its_share_of_the_host_unless_it_has_the_whole_host():
    # DGX H100 template: 8 GPUs, 2 TiB DDR, 8 NVMe drives (30.72 TB), 400 GB/s of NICs
    one = run(kind="zero_offload", gpn=1)
    whole = evaluate_dict({"model": {"preset": "llama2-7b"},
                           "cluster": {"node": "dgx-h100", "gpus_per_node": 1, "host_share": "whole"},
                           "strategy": {"kind": "zero_offload"}}, include_step=False)
    c1, cw = one["scenario"]["cluster"], whole["scenario"]["cluster"]
    assert c1["tiers"]["ddr"]["capacity_bytes"] == 2 * 2**40 / 8
    assert c1["tiers"]["nvme"]["capacity_bytes"] == pytest.approx(30.72e12 / 8)
    assert c1["tiers"]["nvme"]["devices"] == 1 and c1["nic_bytes_per_s"] == 400e9 / 8
    assert cw["tiers"]["ddr"]["capacity_bytes"] == 2 * 2**40 and cw["nic_bytes_per_s"] == 400e9
    assert any("scaled to that share" in n for n in one["notes"])
    # a tier the scenario gives itself is taken as given
    own = evaluate_dict({"model": {"preset": "llama2-7b"},
                         "cluster": {"node": "dgx-h100", "gpus_per_node": 1,
                                     "tiers": {"ddr": {"capacity_bytes": 1e12}}},
                         "strategy": {"kind": "zero_offload"}}, include_step=False)
    assert own["scenario"]["cluster"]["tiers"]["ddr"]["capacity_bytes"] == 1e12
    with pytest.raises(Exception, match="cluster.host_share"):
        evaluate_dict({"model": {"preset": "llama2-7b"},
                       "cluster": {"node": "dgx-h100", "gpus_per_node": 1, "host_share": "half"}})


def test_load_phase_every_rank_materializes_the_model_in_host_ram():
    # DDP on 8 GPUs, from_pretrained on every rank: 8 x 2 B (bf16) x P on the node's DDR,
    # before any training state exists (the checkpoint goes GPU-direct, so no host staging)
    r = run(kind="ddp", checkpoint={"target": "gds_nvme"})
    ddr = r["memory"]["per_node"]["ddr"]
    assert ddr["peak_phase"] == "load"
    assert ddr["total_bytes"] == pytest.approx(8 * 2 * P7)
    # DeepSpeed's estimator's view of the same (no zero.Init): fp32 weights, 4 B x P x 8
    fp32 = evaluate_dict({"model": {"preset": "llama2-7b"}, "cluster": {"node": "dgx-h100"},
                          "strategy": {"kind": "ddp"}, "runtime": {"load_dtype": "fp32"},
                          "checkpoint": {"target": "gds_nvme"}},
                         include_step=False)
    assert fp32["memory"]["per_node"]["ddr"]["total_bytes"] == pytest.approx(4 * P7 * 8)
    # FSDP loads on rank 0 only; ZeRO-3 with zero.Init loads shards
    (fsdp,) = parts(run(), "model weights while loading (rank0)", "ddr", "per_node")
    assert fsdp["bytes"] == pytest.approx(2 * P7)
    (z3,) = parts(run(kind="zero3"), "model weights while loading (sharded)", "ddr", "per_node")
    assert z3["bytes"] == pytest.approx(2 * P7)          # 8 shards of P/8 on the node
    # loading comes before training: it does not stack on the offloaded states
    off = run(kind="zero_offload", gpn=1)
    ddr = off["memory"]["per_node"]["ddr"]
    assert ddr["peak_phase"] != "load" and ddr["moments_bytes"]["load"] == pytest.approx(2 * P7)


def test_reserved_as_nvidia_smi_shows_it_beside_allocated():
    r = run()
    hbm = r["memory"]["per_gpu"]["hbm"]
    frag = [p for p in hbm["parts"] if p["name"] == "allocator fragmentation and reserve"][0]
    # nvidia-smi: the CUDA context (1.5 GiB) + PyTorch's reserved memory; allocated: the tensors
    assert hbm["reserved_bytes"] == hbm["total_bytes"]
    assert hbm["allocated_bytes"] == pytest.approx(hbm["total_bytes"] - 1.5 * 2**30 - frag["bytes"])


def test_deepspeed_zero3_reduce_scatter_copies_a_full_bucket_beyond_the_head_gradient():
    # stage3.py __reduce_and_partition_ipg_grads -> reduce_scatter_coalesced: torch.cat of a
    # bucket's rank chunks, up to reduce_bucket_size = 5e8 elements in bf16, in backward.
    # Llama-2-7B's head (32000 x 4096 = 131,072,000 elements) is reduced alone, without a
    # copy, before the first full bucket: the part is the copy beyond the head's gradient.
    r = run(kind="zero3")
    (copy,) = parts(r, "reduce-scatter staging copy")
    assert copy["bytes"] == (5e8 - 32000 * 4096) * 2 and copy["phase"] == "backward"
    (head,) = parts(r, "output head full gradient")
    assert head["bytes"] + copy["bytes"] == 5e8 * 2      # backward holds the larger of the two
    # Llama-3-8B's head (128256 x 4096 = 525M elements) is bigger than a bucket: no extra
    llama3_8b = {"num_layers": 32, "hidden_size": 4096, "num_attention_heads": 32,
                 "num_kv_heads": 8, "ffn_hidden_size": 14336, "vocab_size": 128256,
                 "gated_mlp": True, "dropout": False}
    big = evaluate_dict({"model": llama3_8b, "cluster": {"node": "dgx-h100"},
                         "training": {"micro_batch_size": 1, "seq_len": 4096, "recompute": "full"},
                         "strategy": {"kind": "zero3"}}, include_step=False)
    assert parts(big, "reduce-scatter staging copy") == []
    # FSDP reduce-scatters each unit's gradient in place: no such copy
    assert parts(run(kind="fsdp_full_shard"), "reduce-scatter staging copy") == []


def test_deepspeed_zero3_live_parameters_follow_the_reuse_distance():
    # partitioned_param_coordinator.py: a module's parameters stay gathered while the trace
    # brings them back within stage3_max_reuse_distance (1e9) parameters; prefetching adds
    # stage3_prefetch_bucket_size (5e7) while under stage3_max_live_parameters (1e9).
    # Llama-2-7B: a layer is 4*h*h + 3*h*11008 + 2*h = 202,383,360 params, the head 32000*h.
    layer, head = 4 * 4096**2 + 3 * 4096 * 11008 + 2 * 4096, 32000 * 4096
    assert layer == 202_383_360
    # full recompute: the last layer comes back (re-run) 1 layer + 2 heads = 464M later:
    # kept; the one before 4 layers + 2 heads = 1.07e9 later: released. 1 layer + 5e7.
    (full,) = parts(run(kind="zero3"), "gathered parameters")
    assert full["name"].startswith("gathered parameters (1 layer + prefetch bucket)")
    assert full["bytes"] == (layer + 5e7) * 2 and full["phase"] == "fwd_bwd"
    # without recompute: (2j + 1) layers + 2 heads: j = 0 (464M) and j = 1 (869M) are kept,
    # j = 2 (1.27e9) is not: 2 layers + 5e7 (202M x 2 + 131M + 5e7 stays under 1e9 live)
    (none,) = parts(run(kind="zero3", training={"recompute": "none"}), "gathered parameters")
    assert none["bytes"] == (2 * layer + 5e7) * 2
    # no prefetching (prefetch_depth 0 exports stage3_prefetch_bucket_size 0)
    off = evaluate_dict({"model": {"preset": "llama2-7b"}, "cluster": {"node": "dgx-h100"},
                         "training": {"micro_batch_size": 1, "seq_len": 4096, "recompute": "full"},
                         "strategy": {"kind": "zero3", "prefetch_depth": 0}}, include_step=False)
    (nopf,) = parts(off, "gathered parameters")
    assert nopf["bytes"] == layer * 2


def test_loss_bytes_in_fp32_training_by_hand():
    tokens, v, h = 4096, 32000, 4096
    # torch: logits.float() is a no-op, but the peak is backward's: saved fp32 log-probs 4
    # + nll gradient 4 + log_softmax gradient 4 = 12 B, as in bf16
    assert loss_bytes("torch", tokens, v, h, act_bytes=4) == 12 * tokens * v
    # Megatron: the fp32 logits are the buffer the softmax is made in place: 4 B, not 2 + 4
    assert loss_bytes("megatron_vocab_parallel", tokens, v, h, 8, act_bytes=4) == 4 * tokens * v / 8
    # Liger: chunk logits and gradient fp32 (4 + 4), the head input's gradient fp32 (4)
    assert loss_bytes("fused_linear_cross_entropy", tokens, v, h, act_bytes=4) == 12 * tokens * h
    # an fp32 scenario passes its activation bytes through
    r = run(training={"precision": "fp32", "loss_kernel": "fused_linear_cross_entropy"})
    (p,) = parts(r, "logits and cross-entropy (fused_linear_cross_entropy)")
    assert p["bytes"] == 12 * 4096 * 4096
    (x,) = parts(r, "output-head input")
    assert x["bytes"] == 4 * 4096 * 4096


@pytest.mark.parametrize("kind, table", [
    # Megatron / torch DDP under bf16: bf16 params 2 + fp32 main_grad 4 + fp32 master 4 +
    # Adam m, v 8 = 18 (memory.py docstring; Megatron dist_optimizer.md: 6 + 12)
    ("ddp", (2, 4, 4, 8)), ("megatron_dist_opt", (2, 4, 4, 8)),
    # DeepSpeed ZeRO: gradients in the model dtype, 2 + 2 + 4 + 8 = 16 (ZeRO paper, K = 12)
    ("zero1", (2, 2, 4, 8)), ("zero2", (2, 2, 4, 8)), ("zero3", (2, 2, 4, 8)),
    # FSDP mixed precision: fp32 flat parameters double as the master weights, fp32 grads
    ("fsdp_full_shard", (4, 4, 0, 8)),
])
def test_bytes_per_param_table_is_what_the_breakdown_counts(kind, table):
    """The run page's table (convention.bytes_per_param) and the memory breakdown agree:
    on one GPU (no sharding, every state in HBM) its total is the breakdown's
    hbm_model_state_bytes_per_param, and each state is the sum of its parts."""
    r = run(model="llama3.1-8b", kind=kind, gpn=1)
    conv = r["convention"]
    bpp = conv["bytes_per_param"]
    assert (bpp["params"], bpp["grads"], bpp["master_weights"], bpp["optimizer_states"]) == table
    assert bpp["total"] == sum(table) == pytest.approx(conv["hbm_model_state_bytes_per_param"])
    hbm = r["memory"]["per_gpu"]["hbm"]
    n = r["model"]["num_params"]
    assert bpp["params"] == pytest.approx(hbm["params_bytes"] / n)
    assert bpp["grads"] == pytest.approx(hbm["grads_bytes"] / n)
    assert bpp["k"] == pytest.approx(hbm["optimizer_bytes"] / n)
    if kind in ("ddp", "megatron_dist_opt"):
        assert bpp["dtypes"]["grads"] == "fp32"       # not the bf16 the dtypes alone give
    # sharded over 8 GPUs the table is still before sharding; the breakdown shows the shard
    eight = run(model="llama3.1-8b", kind=kind, gpn=8)["convention"]
    assert eight["bytes_per_param"]["total"] == sum(table)


def _byte_counts(x, key=""):
    """Every number in a report stored under a key that counts bytes (``*_bytes``, a part's
    ``bytes``, the values of a ``*_bytes`` map such as ``moments_bytes``)."""
    if isinstance(x, dict):
        for k, v in x.items():
            if isinstance(v, dict) and k.endswith("_bytes"):
                yield from ((f"{key}.{k}.{kk}", vv) for kk, vv in v.items())
            else:
                yield from _byte_counts(v, f"{key}.{k}")
    elif isinstance(x, list):
        for i, v in enumerate(x):
            yield from _byte_counts(v, f"{key}[{i}]")
    elif isinstance(x, (int, float)) and not isinstance(x, bool) and (
            key.endswith("_bytes") or key.endswith(".bytes")):
        yield key, x


def test_byte_counts_are_whole():
    # A share of bytes (20 % allocator reserve, the pinned allocator's mean 1/ln 2 rounding of
    # a staged checkpoint) is no fraction of a byte: the report printed free_bytes
    # 25194230783.8 before parts were rounded. oom-03b with its optimizer offloaded but its
    # parameters on the GPU has both shares (ZeRO-3 with offload, the 16-bit parameters'
    # checkpoint staged through host memory).
    from tests.refdata import cases
    sc = cases("public_oom_reports", "oom-03b")[0]["scenario"]
    sc = dict(sc, strategy=dict(sc["strategy"], offload_params="none"))
    r = evaluate_dict(sc, detail=True)
    counts = list(_byte_counts(r))
    assert len(counts) > 40
    names = {p["name"] for t in r["memory"]["per_gpu"].values() for p in t.get("parts", ())}
    names |= {p["name"] for t in r["memory"]["per_node"].values() for p in t.get("parts", ())}
    assert "allocator fragmentation and reserve" in names
    assert "pinned-allocator rounding of the staging copy" in names
    assert [(k, v) for k, v in counts if v != int(v)] == []
    # a pipeline's per-stage rows (their fragmentation added without a summary) and the
    # bytes a step moves over each link (Table 2's 175B on 384 GPUs: 1214559403008.025 before);
    # ZeRO-3 shards of 530B over 1,120 GPUs (945715748.57 a part), a checkpoint's shard
    # (433249450.67 on 48 GPUs), an FP8 pipeline's stages, a DDR overflow's required bytes
    for ds, cid in (("narayanan_2021_table2", "nar21_t2_ptdp_175B_384"),
                    ("narayanan_2021_table2", "nar21_t2_zero3_530B_1120"),
                    ("megatron_core_h100_2024", "mcore_h100_1p7B"),
                    ("megatron_bridge_h100_fp8_2025", "mbridge_h100_70b_fp8_2509"),
                    ("public_oom_reports", "oom-15a")):
        r = evaluate_dict(cases(ds, cid)[0]["scenario"], detail=True)
        counts = list(_byte_counts(r))
        assert [(k, v) for k, v in counts if v != int(v)] == [], cid
    assert any(".per_stage[" in k for k, _ in counts) and any(".links[" in k for k, _ in counts)


def test_torch_amp_on_fp32_weights_keeps_16_bit_copies_as_measured():
    """HF Trainer's bf16 AMP on a model loaded in fp32: autocast caches a 16-bit copy of every
    matrix it casts (leaf tensors that require grad) and the matmuls keep them for backward.
    Measured with the profiler's allocation events on a 2-layer fp32 LlamaForCausalLM
    (scripts/measure_amp_step_peak.py, tests/data/amp_step_peak_hf.json: h 128, f 352, 4
    heads, 2 KV heads, vocab 2,048): what the forward leaves allocated at 128 and 256 tokens
    gives a per-token slope and a constant; the constant is 2 B x the 630,784 matrix weights
    (2 x (128 x 128 x 2 + 128 x 64 x 2 + 3 x 128 x 352) + 2,048 x 128) without checkpointing,
    2 B x the head's 262,144 alone with reentrant checkpointing (the blocks run under
    no_grad). The engine's parts equal these to 0.2 % and 2 %."""
    import json
    from pathlib import Path
    d = json.loads((Path(__file__).parent.parent / "data" / "amp_step_peak_hf.json").read_text())
    runs = {(c["config"]["s"], c["config"]["h"], c["config"]["checkpointing"]): c for c in d["cases"]}

    def constant(ck):
        a, b = runs[128, 128, ck]["forward_end_bytes"], runs[256, 128, ck]["forward_end_bytes"]
        return a - (b - a)                     # the bytes that do not grow with the tokens
    assert runs[128, 128, False]["linear_params"] == 2 * (128 * 128 * 2 + 128 * 64 * 2 + 3 * 128 * 352) + 2048 * 128

    model = dict(name="tiny", num_layers=2, hidden_size=128, num_attention_heads=4, num_kv_heads=2,
                 ffn_hidden_size=352, vocab_size=2048, gated_mlp=True, tied_embeddings=False,
                 position_embedding="rope", norm="rmsnorm", linear_bias=False, dropout=False,
                 max_seq_len=1024)

    def copies(recompute, **dtypes):
        sc = {"model": model, "cluster": {"node": "dgx-h100", "num_nodes": 1, "gpus_per_node": 1},
              "training": {"micro_batch_size": 1, "seq_len": 128, "precision": "bf16", "recompute": recompute,
                           "flash_attention": True, "dtypes": dtypes}, "strategy": {"kind": "ddp"}}
        parts = evaluate_dict(sc, include_step=False)["memory"]["per_gpu"]["hbm"]["parts"]
        return {p["name"]: p["bytes"] for p in parts if "autocast cop" in p["name"]}
    none = copies("none", params="fp32")
    assert sum(none.values()) == pytest.approx(constant(False), rel=0.002)
    assert sum(none.values()) == 2 * 630784
    full = copies("full", params="fp32")
    assert full["16-bit autocast copy of the fp32 output head"] == pytest.approx(constant(True), rel=0.02)
    assert full["16-bit autocast copies of the re-run block's fp32 weights"] == 2 * 184320
    assert copies("none") == {}                # 16-bit weights: nothing to cast


def test_amp_on_fp32_weights_layer_saves_what_the_engine_counts():
    """transformers' LlamaDecoderLayer in fp32 under bf16 autocast against the same layer in
    bf16 (scripts/measure_saved_tensors_amp.py, tests/data/saved_tensors_amp_hf.json; SDPA):
    10 B x b x s x h more for every shape (RMSNorm's fp32 normalised value, 2 B more for each
    of the 2 norms; q, k, v each keep their own 16-bit cast of the fp32 norm output, 2
    copies more; gate and up, 1 more), as amp_fp32_weight_bytes counts, and autocast's
    weight copies, 2 B x the block's matrix weights, as the engine's per-block part."""
    import json
    from pathlib import Path
    from simulation.activations import CPU, ActivationShape, amp_fp32_weight_bytes, layer_bytes
    from simulation.fp8 import linear_params_per_layer
    from simulation.params import count_params
    from simulation.scenario import ModelSpec
    d = json.loads((Path(__file__).parent.parent / "data" / "saved_tensors_amp_hf.json").read_text())
    assert d["device"] == "cpu" and len(d["cases"]) == 8
    by = {c["id"]: c for c in d["cases"]}
    for c in d["cases"]:
        cfg = c["config"]
        if cfg["mode"] != "amp_fp32":
            continue
        bf16 = by[c["id"].replace("-amp_fp32-", "-bf16-")]
        x = ActivationShape(seq_len=cfg["s"], micro_batch=cfg["b"], hidden=cfg["h"], heads=cfg["a"],
                            kv_heads=cfg["kv"], ffn=cfg["ffn"], gated_mlp=True, dropout=False,
                            flash_attention=True, framework="huggingface", norm="rmsnorm")
        extra = amp_fp32_weight_bytes(x)
        assert extra == 10 * cfg["b"] * cfg["s"] * cfg["h"]
        assert c["layer_bytes"] - bf16["layer_bytes"] == extra
        assert layer_bytes(x, CPU) == bf16["layer_bytes"]
        m = ModelSpec.from_dict(dict(name="l", num_layers=1, hidden_size=cfg["h"],
                                     num_attention_heads=cfg["a"], num_kv_heads=cfg["kv"],
                                     ffn_hidden_size=cfg["ffn"], vocab_size=128, gated_mlp=True,
                                     tied_embeddings=False, position_embedding="rope", norm="rmsnorm",
                                     linear_bias=False, dropout=False, max_seq_len=1024))
        assert c["weight_copy_bytes"] == 2 * c["linear_params"] == 2 * linear_params_per_layer(m, count_params(m))
    # and a scenario shows it as a part: Llama 2 7B, b 1, s 2,048, 32 layers, no recompute:
    # 10 x 2,048 x 4,096 x 32 = 2,684,354,560 B; none with 16-bit weights
    def parts(**dtypes):
        sc = {"model": {"preset": "llama2-7b"}, "cluster": {"node": "dgx-h100", "num_nodes": 1, "gpus_per_node": 1},
              "training": {"micro_batch_size": 1, "seq_len": 2048, "precision": "bf16", "recompute": "none",
                           "flash_attention": True, "dtypes": dtypes}, "strategy": {"kind": "ddp"}}
        return {p["name"]: p["bytes"] for p in
                evaluate_dict(sc, include_step=False)["memory"]["per_gpu"]["hbm"]["parts"]
                if p["name"].startswith("AMP on fp32 weights")}
    assert list(parts(params="fp32").values()) == [10 * 2048 * 4096 * 32]
    assert parts() == {}
