"""Context parallelism (``training.context_parallel``): the layout as Megatron-LM checks it,
activations per CP rank, the K/V ring's buffers and exchange worked by hand, the gradient
reduction over data parallel x CP, the exports, and the Llama 3 paper's CP row (Dubey et al.
2024, "The Llama 3 Herd of Models", Table 4)."""

import pytest

from simulation import ScenarioError, evaluate
from simulation import context_parallel as cpm
from simulation import export
from simulation import step as step_mod
from simulation.parallel import layout
from simulation.params import model_params
from simulation.scenario import Scenario
from simulation.states import state_bytes

# A Llama-style test model: 32 heads of 128 (hidden 4096), 8 KV heads, 8 layers.
MODEL = {"name": "cp-test", "num_layers": 8, "hidden_size": 4096, "num_attention_heads": 32,
         "num_kv_heads": 8, "ffn_hidden_size": 14336, "vocab_size": 32000}


def scenario(cp=1, tp=2, pp=1, nodes=1, seq=16384, kind="megatron_dist_opt", model=None,
             cluster=None, **training):
    tr = {"micro_batch_size": 1, "seq_len": seq, "tensor_parallel": tp, "pipeline_parallel": pp,
          "sequence_parallel": tp > 1, "flash_attention": True, **training}
    if cp != 1:
        tr["context_parallel"] = cp
    return Scenario.from_dict({"model": model or MODEL,
                               "cluster": {"node": "dgx-h100", "num_nodes": nodes, **(cluster or {})},
                               "training": tr, "strategy": {"kind": kind}})


# ------------------------------------------------------------------ scenario and layout
def test_context_parallel_round_trips_and_cp_1_stays_out_of_the_json():
    sc = scenario(cp=4)
    assert sc.training.context_parallel == 4
    assert sc.training.local_seq_len == 16384 // 4
    assert sc.to_dict()["training"]["context_parallel"] == 4
    assert Scenario.from_dict(sc.to_dict()) == sc
    # the default is omitted: older scenarios' JSON (and their hashes) do not change
    assert "context_parallel" not in scenario(cp=1).to_dict()["training"]


def test_seq_len_must_split_into_2_cp_chunks():
    # Megatron-LM arguments.py: seq_length % (2 x context_parallel_size) == 0; 16,388 = 8 x 2,048 + 4
    with pytest.raises(ScenarioError) as e:
        scenario(cp=4, seq=16388)
    assert e.value.field == "training.context_parallel"
    assert "multiple of 2 x context_parallel = 8" in str(e.value)


def test_context_parallel_needs_flash_attention():
    with pytest.raises(ScenarioError) as e:
        scenario(cp=2, flash_attention=False)
    assert e.value.field == "training.context_parallel"
    assert "needs flash_attention true" in str(e.value)


def test_world_size_must_divide_by_tp_cp_pp():
    # 6 nodes x 8 = 48 GPUs; 8 x 4 x 1 = 32 does not divide them (parallel_state.py:
    # world_size % (tp x pp x cp) raises)
    with pytest.raises(ScenarioError) as e:
        layout(scenario(cp=4, tp=8, nodes=6))
    assert e.value.field == "training.context_parallel"
    assert "8 x 4 x 1 = 32 must divide the 48 GPUs" in str(e.value)


def test_layout_data_parallel_is_what_tp_cp_pp_leave_and_states_shard_over_dp_x_cp():
    # 8 nodes x 8 = 64 GPUs; TP 8 x CP 2 x PP 2 = 32, so DP = 2; the distributed optimizer
    # shards over the data-parallel group with CP: 2 x 2 = 4 ranks
    # (parallel_state.get_data_parallel_group(with_context_parallel=True)).
    lay = layout(scenario(cp=2, tp=8, pp=2, nodes=8, global_batch_size=8))
    assert (lay.data_parallel, lay.context_parallel, lay.shard_degree) == (2, 2, 4)
    assert lay.grad_reduce_degree == 4
    # 8 sequences over DP 2 with micro batch 1: 4 accumulation steps (CP ranks share a sequence)
    assert lay.grad_accumulation_steps == 4
    assert layout(scenario(cp=2, tp=8, pp=2, nodes=8, kind="ddp")).shard_degree == 1


def test_hybrid_shard_groups_divide_dp_x_cp():
    sc = Scenario.from_dict({**scenario(cp=2, tp=2, nodes=1).to_dict(),
                             "strategy": {"kind": "fsdp_hybrid_shard", "shard_group_size": 4}})
    lay = layout(sc)                          # 8 GPUs: TP 2 x CP 2, DP 2; dp x cp = 4
    assert (lay.shard_degree, lay.replica_groups) == (4, 1)
    bad = Scenario.from_dict({**sc.to_dict(), "strategy": {"kind": "fsdp_hybrid_shard",
                                                           "shard_group_size": 3}})
    with pytest.raises(ScenarioError, match="data-parallel x context-parallel degree 4"):
        layout(bad)


def test_gradients_are_reduced_over_dp_x_cp():
    # DDP on 8 GPUs, TP 2 x CP 4: DP 1, yet the 4 CP ranks hold different tokens' gradients
    # and all-reduce them (Megatron finalize_model_grads / param_and_grad_buffer use the
    # data-parallel group with CP): the rank model reduces over 4 ranks, on NVLink.
    sc = scenario(cp=4, tp=2, kind="ddp")
    lay = layout(sc)
    pc = model_params(sc.model)
    r = step_mod.rank_model(sc, pc, lay, state_bytes("bf16", "adam"))
    assert lay.data_parallel == 1 and r.dp == 4 and r.dp_link == "nvlink"


# ------------------------------------------------------------------ memory
def test_activations_per_rank_are_those_of_seq_len_over_cp():
    # each CP rank holds s / cp tokens; with flash attention nothing is quadratic in s, so
    # the stored activations at (s, cp) are those at (s / cp, 1), and CP 2 halves CP 1's
    def acts(sc):
        parts = evaluate(sc).to_dict()["memory"]["per_gpu"]["hbm"]["parts"]
        return sum(p["bytes"] for p in parts if p["tier"] == "hbm" and p["category"] == "activations")
    one = acts(scenario(cp=1, tp=2, seq=16384))
    two = acts(scenario(cp=2, tp=2, seq=16384))
    short = acts(scenario(cp=1, tp=2, seq=8192))
    assert two == pytest.approx(short, rel=1e-12)
    assert two == pytest.approx(one / 2, rel=1e-12)


def test_ring_buffers_by_hand():
    # Transformer Engine AttnFuncWithCPAndKVP2P (bf16): one K/V chunk of the test model at TP 2,
    # CP 4, s 16384: 1 x 4096 tokens x (8 / 2 = 4) KV heads x 128 x 2 (K, V) x 2 B = 8,388,608 B.
    # Forward keeps all cp = 4 chunks: 33,554,432 B. Backward: 2 K/V + 2 dK/dV buffers
    # (4 x 8,388,608 = 33,554,432 B) + dQ, 4096 x (32 / 2 = 16) heads x 128 x 2 B =
    # 16,777,216 B: 50,331,648 B, the peak.
    sc = scenario(cp=4, tp=2)
    assert cpm.kv_chunk_bytes(sc.model, sc.training) == 8_388_608
    ring = cpm.ring_buffer_bytes(sc.model, sc.training)
    assert ring == {"forward_bytes": 33_554_432, "backward_bytes": 50_331_648,
                    "peak_bytes": 50_331_648}
    parts = evaluate(sc).to_dict()["memory"]["per_gpu"]["hbm"]["parts"]
    (part,) = [p for p in parts if p["name"].startswith("context-parallel K/V ring buffers")]
    assert part["bytes"] == 50_331_648 and part["tier"] == "hbm"
    assert not [p for p in evaluate(scenario(cp=1)).to_dict()["memory"]["per_gpu"]["hbm"]["parts"]
                if p["name"].startswith("context-parallel")]


# ------------------------------------------------------------------ compute and step time
def test_each_cp_rank_computes_a_cp_th_of_the_layer():
    # per rank: matmuls 2 x P x b x s / cp, attention 4 b (s / cp) s w: both a cp-th of CP 1's
    one, two = scenario(cp=1), scenario(cp=2)
    pc = model_params(one.model)
    f1, f2 = step_mod.layer_flops(one, pc), step_mod.layer_flops(two, pc)
    assert f2["fwd"] == pytest.approx(f1["fwd"] / 2, rel=1e-12)
    assert f2["bwd"] == pytest.approx(f1["bwd"] / 2, rel=1e-12)
    # the work model's flash attention: a cp-th of the sequence's causal work
    a1, b1 = step_mod.attention_times(one, pc)
    a2, b2 = step_mod.attention_times(two, pc)
    assert (a2, b2) == pytest.approx((a1 / 2, b1 / 2), rel=1e-12)


def test_kv_exchange_by_hand():
    # Test model, TP 2 x CP 4 on one DGX H100 (t x cp = 8 GPUs): the ring stays on NVLink.
    # Chunk 8,388,608 B; NVLink given as 100 GB/s; one NCCL step's alpha over two ranks in
    # a node: 8.4 + 3.4 = 11.8 us. T1 = 11.8 + 83.886 08 = 95.686 08 us; T2 (K/V + dK/dV)
    # = 11.8 + 167.772 16 = 179.572 16 us. Attention given as 40 us forward, 120 us backward:
    # blocks of 10 and 30 us.
    # forward: 3 x (95.686 08 - 10) = 257.058 24 us
    # backward: 2 x (95.686 08 - 30) + (4 - 2) x (179.572 16 - 30) = 131.372 16 + 299.144 32
    #           = 430.516 48 us
    sc = scenario(cp=4, tp=2)
    x = cpm.exchange(sc, layout(sc), {"nvlink": 100e9, "nic": 10e9}, 40e-6, 120e-6)
    assert x["link"] == "nvlink" and not x["crosses_network"]
    assert x["transfer_s"] == pytest.approx(95.68608e-6, rel=1e-12)
    assert x["fwd_exposed_s"] == pytest.approx(257.05824e-6, rel=1e-12)
    assert x["bwd_exposed_s"] == pytest.approx(430.51648e-6, rel=1e-12)
    # bytes: 3 chunks forward, 6 backward
    assert x["bytes"] == 9 * 8_388_608
    # full recomputation runs the forward ring again in the backward
    full = scenario(cp=4, tp=2, recompute="full")
    y = cpm.exchange(full, layout(full), {"nvlink": 100e9, "nic": 10e9}, 40e-6, 120e-6)
    assert y["bwd_exposed_s"] == pytest.approx((430.51648 + 257.05824) * 1e-6, rel=1e-12)
    assert y["bytes"] == 12 * 8_388_608
    # attention long enough: every transfer hides
    z = cpm.exchange(sc, layout(sc), {"nvlink": 100e9, "nic": 10e9}, 4e-3, 12e-3)
    assert z["exposed_s"] == 0.0


def test_sm_contention_beside_the_ring_by_hand():
    # NCCL holding a share 0.1 of the SMs while a transfer runs (collectives.sm_contention_s):
    # a forward block of 10 us beside a 95.686 08 us transfer runs min(10 + 9.568 608,
    # 10 / 0.9) - 10 = 1.111 11 us longer, and the transfer outlasts the stretched block by
    # 95.686 08 - 11.111 11 = 84.574 97 us. Forward: 3 x each. Backward blocks of 30 us:
    # beside T1 min(30 + 9.568 608, 33.333 33) - 30 = 3.333 33 us, exposed 62.352 75 us; beside
    # T2 3.333 33 us too, exposed 146.238 83 us: contention 4 x 3.333 33, exposed
    # 2 x 62.352 75 + 2 x 146.238 83.
    sc = scenario(cp=4, tp=2)
    x = cpm.exchange(sc, layout(sc), {"nvlink": 100e9, "nic": 10e9}, 40e-6, 120e-6, sm_share=0.1)
    c_f, c_b = 10e-6 / 0.9 - 10e-6, 30e-6 / 0.9 - 30e-6
    assert x["fwd_exposed_s"] == pytest.approx(3 * (95.68608e-6 - 10e-6 - c_f), rel=1e-12)
    assert x["bwd_exposed_s"] == pytest.approx(2 * (95.68608e-6 - 30e-6 - c_b)
                                               + 2 * (179.57216e-6 - 30e-6 - c_b), rel=1e-12)
    assert x["contention_s"] == pytest.approx(3 * c_f + 4 * c_b, rel=1e-12)
    assert c_f == pytest.approx(1.11111e-6, rel=1e-5)


def test_all_gather_exchange_by_hand():
    # context_parallel_comm all_gather (TE AttnFuncWithCPAndKVAllGather, Megatron --cp-comm-type
    # all_gather): the same test model and links. One all-gather of the sequence's K (4 chunks
    # x 4,194,304 B of K each = 16,777,216 B) over 4 ranks in one node: alpha 8.4 + 3 x 3.4 =
    # 18.6 us, then 3/4 x 16,777,216 B at 100 GB/s = 125.829 12 us: 144.429 12 us. Nothing
    # hides: forward K and V, 288.858 24 us; backward K, V again and the reduce-scatters of dK,
    # dV, 577.716 48 us. Bytes: 3 chunks forward, 6 backward, as the ring.
    sc = scenario(cp=4, tp=2, context_parallel_comm="all_gather")
    x = cpm.exchange(sc, layout(sc), {"nvlink": 100e9, "nic": 10e9}, 4e-3, 12e-3)
    assert x["comm"] == "all_gather" and x["link"] == "nvlink"
    assert x["transfer_s"] == pytest.approx(144.42912e-6, rel=1e-12)
    assert x["fwd_exposed_s"] == pytest.approx(288.85824e-6, rel=1e-12)
    assert x["bwd_exposed_s"] == pytest.approx(577.71648e-6, rel=1e-12)
    assert x["bytes"] == pytest.approx(9 * 8_388_608, rel=1e-12)
    # it holds the gathered sequence: forward 2 x 4 chunks (the gather and its reordered copy),
    # backward 3 x 4 chunks (K/V, dK/dV and its reordered copy) + dQ 16,777,216 B
    ring = cpm.ring_buffer_bytes(sc.model, sc.training)
    assert ring["forward_bytes"] == 67_108_864
    assert ring["backward_bytes"] == 117_440_512
    args = export.megatron_parallel_args(sc)
    assert args[args.index("--cp-comm-type") + 1] == "all_gather"
    assert export.torchtitan_parallelism(sc)["context_parallel_rotate_method"] == "allgather"
    assert "context_parallel_comm" not in scenario(cp=4).to_dict()["training"]
    assert sc.to_dict()["training"]["context_parallel_comm"] == "all_gather"


def test_the_ring_crosses_the_network_when_tp_x_cp_exceeds_a_node():
    # TP 4 x CP 4 on 2 nodes of 8: the CP group's ranks are 4 apart (0, 4, 8, 12), two per
    # node: the ring leaves the node and each step waits for the NIC; the alpha is a
    # two-node step's (8.4 + max(3.4, 3) ... + 14 us once the ring spans nodes).
    sc = scenario(cp=4, tp=4, nodes=2)
    x = cpm.exchange(sc, layout(sc), {"nvlink": 100e9, "nic": 10e9}, 1.0, 1.0)
    assert x["link"] == "nic" and x["crosses_network"]
    chunk = cpm.kv_chunk_bytes(sc.model, sc.training)          # 4096 x 2 KV heads: 4,194,304 B
    assert chunk == 4_194_304
    assert x["transfer_s"] == pytest.approx(8.4e-6 + 14e-6 + chunk / 10e9, rel=1e-12)


def test_exposed_exchange_is_on_the_step_critical_path():
    # A slow NIC (1 GB/s per GPU) makes the ring's steps longer than the attention blocks.
    # The step (PP 1) is m x (graph micro-batch + exposed exchange): removing the exchange's
    # exposure takes exactly m x layers x the per-layer exposed seconds off the step.
    sc = scenario(cp=4, tp=4, nodes=2, cluster={"nic_bytes_per_s": 8e9}, global_batch_size=8)
    lay = layout(sc)
    rep = evaluate(sc).to_dict()
    cp = rep["step"]["context_parallel"]
    assert cp["link"] == "nic" and cp["layers"] == 8
    assert cp["exposed_s"] == pytest.approx(8 * cp["layer_exposed_s"], rel=1e-12)
    assert cp["layer_exposed_s"] > 0
    m = lay.grad_accumulation_steps
    assert m == 8                              # 16 GPUs / (TP 4 x CP 4): DP 1, 8 sequences

    real = cpm.exchange

    def hidden(*a, **k):
        return dict(real(*a, **k), exposed_s=0.0)
    mp = pytest.MonkeyPatch()
    mp.setattr(step_mod.context_parallel, "exchange", hidden)
    try:
        quiet = step_mod.step_report(sc, model_params(sc.model), lay,
                                     state_bytes("bf16", "adam"), detail=False)
    finally:
        mp.undo()
    assert rep["step"]["time_s"] - quiet["step"]["time_s"] == pytest.approx(m * cp["exposed_s"], rel=1e-9)
    assert cp["exposed_per_step_s"] == pytest.approx(m * cp["exposed_s"], rel=1e-12)
    assert (rep["step"]["breakdown_s"]["exposed_comm"] - quiet["step"]["breakdown_s"]["exposed_comm"]
            == pytest.approx(m * cp["exposed_s"], rel=1e-9))
    # the attention blocks' slowdown beside the transfers (NCCL holding SMs) is compute
    assert cp["contention_s"] > 0

    def nothing(*a, **k):
        return dict(real(*a, **k), exposed_s=0.0, contention_s=0.0)
    mp.setattr(step_mod.context_parallel, "exchange", nothing)
    try:
        bare = step_mod.step_report(sc, model_params(sc.model), lay,
                                    state_bytes("bf16", "adam"), detail=False)
    finally:
        mp.undo()
    assert (quiet["step"]["breakdown_s"]["compute"] - bare["step"]["breakdown_s"]["compute"]
            == pytest.approx(m * cp["contention_s"], rel=1e-9))
    assert quiet["step"]["time_s"] - bare["step"]["time_s"] == pytest.approx(m * cp["contention_s"], rel=1e-9)
    # its bytes are on the NIC's row
    nic = {r["name"]: r for r in rep["links"]}["nic"]
    nic_quiet = {r["name"]: r for r in quiet["links"]}["nic"]
    assert nic["bytes"] - nic_quiet["bytes"] == pytest.approx(0.0)   # same bytes, hidden or not
    assert nic["bytes"] >= m * cp["bytes"]


# ------------------------------------------------------------------ exports
def test_exports_carry_context_parallelism_or_say_they_leave_it_out():
    sc = scenario(cp=4, tp=2, nodes=2, kind="megatron_dist_opt", global_batch_size=8)
    args = export.megatron_parallel_args(sc)
    i = args.index("--context-parallel-size")
    assert args[i + 1] == "4" and args[args.index("--cp-comm-type") + 1] == "p2p"
    assert args[args.index("--tensor-model-parallel-size") + 1] == "2"
    assert "--use-distributed-optimizer" in args
    tt = export.torchtitan_parallelism(sc)
    assert tt["context_parallel_degree"] == 4 and tt["tensor_parallel_degree"] == 2
    assert tt["data_parallel_shard_degree"] == 2          # 16 GPUs / (2 x 4)
    ds = export.deepspeed_config(sc)
    note = " ".join(ds["_tierlab_notes"])
    assert "leaves it out" in note and "Ulysses" in note and "--context-parallel-size 4" in note
    fsdp = export.fsdp_snippet(Scenario.from_dict({**sc.to_dict(), "strategy": {"kind": "fsdp_full_shard"}}))
    assert "context_parallel = 4" in fsdp and "context_parallel_degree = 4" in fsdp
    assert "--context-parallel-size" not in " ".join(export.deepspeed_config(scenario()).get("_tierlab_notes", []))


# ------------------------------------------------------------------ Llama 3 405B (Table 4)
# Dubey et al. 2024, Table 4: 16,384 H100 GPUs; TP 8, CP 1, PP 16, DP 128 at 8,192 tokens,
# 16 sequences per DP rank: 400 TFLOP/s per GPU; TP 8, CP 16, PP 16, DP 8 at 131,072 tokens,
# 16 sequences per DP rank: 380 TFLOP/s per GPU (16M tokens a batch each). Llama 3 405B has
# 126 layers: Sec. 3.3.2 takes one layer off the first and off the last of the 16 stages
# (training.first_pipeline_layers / last_pipeline_layers 7). The middle stages hold 8
# layers, so a 128-layer stand-in (8 a stage) holds what they hold. Sec. 3.3.2: CP
# "all-gather based": K and V all-gathered, then the local queries' attention
# (context_parallel_comm all_gather).
def llama3(cp, seq, dp, layers=128, per_dp=16):
    split = {"first_pipeline_layers": 7, "last_pipeline_layers": 7} if layers == 126 else {}
    return Scenario.from_dict({
        "model": {"preset": "llama3.1-405b", "num_layers": layers},
        "cluster": {"node": "dgx-h100", "num_nodes": 8 * cp * 16 * dp // 8},
        "training": {"micro_batch_size": 1, "global_batch_size": per_dp * dp, "seq_len": seq,
                     "tensor_parallel": 8, "pipeline_parallel": 16, "context_parallel": cp,
                     "sequence_parallel": True, "flash_attention": True, **split,
                     **({"context_parallel_comm": "all_gather"} if cp > 1 else {})},
        "strategy": {"kind": "megatron_dist_opt"}})


def test_llama3_405b_cp16_holds_the_activations_of_the_8k_row():
    # CP 16 at 131,072 tokens: 8,192 tokens a rank, as the CP 1 row at 8,192: the same
    # stored activations per GPU; model states the same too (TP 8 x PP 16 split the
    # weights, the distributed optimizer shards over DP x CP = 128 in both rows).
    long, short = evaluate(llama3(16, 131072, 8)).to_dict(), evaluate(llama3(1, 8192, 128)).to_dict()
    hl, hs = long["memory"]["per_gpu"]["hbm"], short["memory"]["per_gpu"]["hbm"]
    assert hl["activations_bytes"] == pytest.approx(hs["activations_bytes"], rel=1e-12)
    assert hl["optimizer_bytes"] == pytest.approx(hs["optimizer_bytes"], rel=1e-12)
    assert long["parallelism"]["shard_degree"] == short["parallelism"]["shard_degree"] == 128
    # the CP row's K/V buffers: chunks of 8192 x 1 KV head x 128 x 2 x 2 B = 4 MiB; the
    # backward holds 3 x 16 of them and dQ, 8192 x 16 heads x 128 x 2 B = 32 MiB
    ring = [p for p in long["memory"]["per_gpu"]["hbm"]["parts"] if p["name"].startswith("context-parallel")]
    assert ring[0]["bytes"] == 3 * 16 * 4_194_304 + 33_554_432


def test_llama3_405b_cp16_costs_what_table_4_reports_relative_to_cp1():
    # Per-GPU TFLOP/s of the CP 16 row over the CP 1 row at the same 16,384 GPUs and 16
    # micro-batches per pipeline: 380 / 400 = 0.95 in Table 4. Within the engine's 10 %
    # step-time band for pipelines (README, Validation). The all-gathers are exposed: the CP
    # row moves the same FLOPs per GPU a step plus 4 collectives per layer and micro-batch.
    def tflops(sc):
        st = evaluate(sc).to_dict()["step"]
        return st["model_flops"] / st["time_s"] / sc.cluster.num_gpus
    ratio = tflops(llama3(16, 131072, 8)) / tflops(llama3(1, 8192, 128))
    assert ratio == pytest.approx(380 / 400, rel=0.10)


# Table 4's rows as published (tests/data/reference/llama3_herd_2024.json): GPUs, CP,
# sequence, batch per data-parallel group; TP 8 and PP 16 in all three. The CP 16 row's
# printed DP 4 makes 8,192 GPUs and 8M tokens, not its 16,384 GPUs and 16M tokens: DP 8
# (8 x 16 x 16 x 8 = 16,384; 16 x 131,072 x 8 = 16.8M tokens) is taken.
TABLE4 = [("8192gpus_cp1", 1, 8192, 64, 32, 430e12), ("16384gpus_cp1", 1, 8192, 128, 16, 400e12),
          ("16384gpus_cp16", 16, 131072, 8, 16, 380e12)]


@pytest.mark.parametrize("row", TABLE4, ids=[r[0] for r in TABLE4])
def test_llama3_405b_table4_layouts_fit_where_they_ran(row):
    # 126 layers, 7 on the first and last stage: a run that fit must never come out
    # does_not_fit (issue #12: fits or tight)
    _, cp, seq, dp, per_dp, _ = row
    rep = evaluate(llama3(cp, seq, dp, layers=126, per_dp=per_dp)).to_dict()
    assert rep["fit_state"] in ("fits", "tight"), rep["memory"]["per_gpu"]["hbm"]["total_bytes"]
    assert rep["step"]["pipeline"]["stage_layers"] == [7] + [8] * 14 + [7]


@pytest.mark.xfail(strict=True, reason=(
    "380 TFLOP/s a GPU against 430 (-11.6 %) since the H100's GEMMs run at the sustained 730 "
    "TFLOP/s of gpu-fryer's 8192^3 burn (simulation/compute.py); 404 (-6.2 %) at the best-of-sweep "
    "794.5 (README's figures, recomputed by tests/engine/test_readme_figures.py). The engine runs plain 1F1B, a bubble of 14.8 of the slowest stage's 32 micro-batches "
    "(32 % of the step); Llama 3 ran its own interleaved schedule (Sec. 3.3.2), which the paper "
    "gives no virtual-stage count for: with v 2 and the first and last chunk one layer short "
    "(pipeline_layers [3] + [4] * 30 + [3]) the schedule's bubble is 7.0 and the row 452 "
    "(+5.1 %), but Megatron's in-flight chunks for v 2 make rank 0 does_not_fit"))
def test_llama3_405b_8192_gpu_row_within_10_percent():
    # 32 micro-batches per pipeline: 430 TFLOP/s per GPU in Table 4
    sc = llama3(1, 8192, 64, layers=126, per_dp=32)
    st = evaluate(sc).to_dict()["step"]
    assert st["model_flops"] / st["time_s"] / sc.cluster.num_gpus == pytest.approx(430e12, rel=0.10)


@pytest.mark.xfail(strict=True, reason="the 16-micro-batch rows (16,384 GPUs) come out 25 % "
                   "slow (about 300 and 280 TFLOP/s a GPU against 400 and 380): the engine runs "
                   "plain 1F1B, whose bubble is 15 of 16 micro-batches here; Llama 3 ran its own "
                   "interleaved schedule with a tunable number of contiguous micro-batches "
                   "(Sec. 3.3.2) and no stated virtual-stage count; v 2 with the first and last "
                   "chunk one layer short (pipeline_layers per virtual stage) gives 373 and 361 "
                   "(-6.8 %, -5.1 %) but does_not_fit by Megatron's in-flight chunks, whose "
                   "group size (Llama's N) the engine does not take")
@pytest.mark.parametrize("row", TABLE4[1:], ids=[r[0] for r in TABLE4[1:]])
def test_llama3_405b_16384_gpu_rows_as_published(row):
    _, cp, seq, dp, per_dp, tflops = row
    sc = llama3(cp, seq, dp, layers=126, per_dp=per_dp)
    st = evaluate(sc).to_dict()["step"]
    assert st["model_flops"] / st["time_s"] / sc.cluster.num_gpus == pytest.approx(tflops, rel=0.10)


def test_the_planner_says_it_does_not_search_context_parallelism():
    from simulation import planner
    from tests.engine.test_planner import SMALL
    with pytest.raises(ScenarioError) as e:
        planner.parse_spec(dict(SMALL, training={**SMALL["training"], "context_parallel": 2}))
    assert e.value.field == "training.context_parallel" and "does not search" in str(e.value)
