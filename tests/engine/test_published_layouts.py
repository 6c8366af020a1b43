"""Published pretraining layouts written as scenarios (issue #15): DeepSeek-V3 on 2,048
H800s (DeepSeek-V3 technical report, arXiv 2412.19437, Sec. 3.1-3.3: PP 16 with DualPipe,
EP 64 over 8 nodes, ZeRO-1 data parallelism, no tensor parallelism, FP8 with 1x128 /
128x128 blockwise scaling, sequences of 4,096 tokens, batch 15,360). Llama 3's Table 4
rows are in ``test_context_parallel.py``."""

import pytest

from simulation.evaluate import evaluate
from simulation.scenario import Scenario

# 61 layers (3 dense, 58 MoE) over 16 stages; DualPipe pairs stage i with 15 - i
SPLIT = [4] * 13 + [3] * 3


def deepseek_v3(ep, recompute="none"):
    return Scenario.from_dict({
        "model": {"preset": "deepseek-v3"},
        "cluster": {"node": "hgx-h800", "num_nodes": 256},
        "training": {"micro_batch_size": 1, "global_batch_size": 15360, "seq_len": 4096,
                     "tensor_parallel": 1, "pipeline_parallel": 16, "expert_parallel": ep,
                     "flash_attention": True, "framework": "megatron", "recompute": recompute,
                     "pipeline_layers": SPLIT, "pipeline_schedule": "dualpipe",
                     "fp8": {"recipe": "blockwise"}},
        "strategy": {"kind": "zero1"}})


def hbm_part(rep, prefix):
    return sum(p["bytes"] for p in rep["memory"]["per_gpu"]["hbm"]["parts"] if p["name"].startswith(prefix))


def test_ep64_evaluates_and_its_fp8_weight_copies_hold_the_rank_s_experts():
    # EP 64 used to build a step graph with a negative unit (the mean block, dense first
    # layers included, has fewer parameters than one MoE block's routed experts).
    e8, e64 = (evaluate(deepseek_v3(ep)).to_dict() for ep in (8, 64))
    assert e64["step"]["time_s"] > 0
    assert e8["memory"]["stage_index"] == e64["memory"]["stage_index"] == 3     # 4 + 4 layers
    # Hand calculation: a routed expert is 3 x 7168 x 2048 = 44,040,192 weights; a mean
    # block holds 256 of them x 58/61 (58 of the 61 blocks have experts). The worst rank
    # holds 8 blocks; TE keeps 2 B per FP8 GEMM weight (row-wise + transposed), each with an
    # fp32 scale per 128 x 128 block (blockwise). EP 8 keeps 1/8 of the experts, EP 64 1/64.
    routed_mean = 256 * 44_040_192 * 58 / 61
    diff = 2 * (1 + 4 / (128 * 128)) * 8 * routed_mean * (1 / 8 - 1 / 64)
    got = hbm_part(e8, "FP8 weight") - hbm_part(e64, "FP8 weight")
    assert got == pytest.approx(diff, rel=1e-9)


def test_more_expert_parallelism_holds_less_per_gpu_and_all_to_alls_cross_nodes():
    e8, e16 = (evaluate(deepseek_v3(ep, "full")).to_dict() for ep in (8, 16))
    assert e16["memory"]["per_gpu"]["hbm"]["total_bytes"] < e8["memory"]["per_gpu"]["hbm"]["total_bytes"]
    # EP 8 stays inside an 8-GPU node, EP 16 spans two (TP 1: the EP group is 16 GPUs in a row)
    assert e8["step"]["expert_parallel"]["link"] == "nvlink"
    assert e16["step"]["expert_parallel"]["link"] == "nic"


# The report's own memory savings (Sec. 3.2.3, 3.3.3) written as the Megatron-Core settings
# that do the same: RMSNorm and the MLA up-projections recomputed in backward
# (--recompute-modules layernorm mla_up_proj), the SwiGLU inputs of the MoE cached in FP8
# and its output recomputed (moe_act + activation_func_fp8_input_store), the Linear inputs
# and the dispatched tokens in FP8 (TE's FP8 GEMMs save their FP8 casts: fp8), BF16 AdamW
# moments with FP32 master weights and FP32 gradients for the accumulation (dtypes), ZeRO-1
# as Megatron's distributed optimizer (framework megatron: no DeepSpeed buckets). Its
# node-limited routing (Sec. 2.1.2: "each token will be sent to at most M nodes ... M = 4",
# Sec. 4.2 hyper-parameters) is Megatron-Core's group-limited routing over the EP group's
# nodes, --moe-router-group-topk 4.
REPORT_MODULES = ["layernorm", "mla_up_proj", "moe_act"]


def deepseek_v3_as_reported():
    d = deepseek_v3(64).to_dict()
    d["training"].update(recompute="selective", recompute_modules=REPORT_MODULES,
                         activation_func_fp8_input_store=True,
                         dtypes={"grads": "fp32", "optimizer_states": "bf16"},
                         moe_router_group_topk=4)
    d["strategy"] = {"kind": "megatron_dist_opt"}
    return Scenario.from_dict(d)


def test_deepseek_v3_fits_as_it_ran():
    # Without the report's savings the worst rank (stages 3 and 12: 13 + 4 chunks of 4
    # MoE blocks in flight) needs far more than an H800 holds.
    assert evaluate(deepseek_v3(64)).to_dict()["fit_state"] == "does_not_fit"
    rep = evaluate(deepseek_v3_as_reported()).to_dict()
    assert rep["fit_state"] in ("fits", "tight")
    hbm = rep["memory"]["per_gpu"]["hbm"]
    # tight, not comfortable: within 5 % of the usable HBM either way (the engine: about
    # 81 GiB of 79.3 usable, inside its 10 % band). Not modelled, and left: the MTP module on
    # the ranks holding the last stage (the ends ranks, about 5 GiB under the worst rank),
    # the EMA (on the CPU in the report: nothing on the GPU), and whether HAI-LLM caches FP8
    # weight copies for the step as Transformer Engine does (6.2 GiB counted here).
    assert abs(hbm["total_bytes"] / hbm["capacity_bytes"] - 1) < 0.05
    # the activations are what the settings cut: 68 layer-equivalents of MoE blocks
    act = hbm_part(rep, "activations (68 layers")
    assert act < 0.5 * hbm_part(evaluate(deepseek_v3(64)).to_dict(), "activations (68 layers")


def test_with_full_recomputation_the_ep64_layout_fits():
    assert evaluate(deepseek_v3(64, "full")).to_dict()["fit_state"] == "fits"


def test_the_megatron_arguments_carry_the_whole_layout():
    # the megatron.txt download: split, CP, EP, FP8 and layer-selective recomputation in
    # one command line (megatron/training/arguments.py names)
    from simulation.export import megatron_args
    from tests.engine.test_context_parallel import llama3
    line = " ".join(megatron_args(llama3(2, 8192, 8, layers=126)))
    for arg in ("--tensor-model-parallel-size 8", "--pipeline-model-parallel-size 16",
                "--decoder-first-pipeline-num-layers 7", "--decoder-last-pipeline-num-layers 7",
                "--context-parallel-size 2", "--cp-comm-type all_gather", "--sequence-parallel"):
        assert arg in line, arg
    d = deepseek_v3(16, "full").to_dict()
    d["training"]["recompute_layers"] = 2
    line = " ".join(megatron_args(Scenario.from_dict(d)))
    for arg in ("--expert-model-parallel-size 16", "--num-experts 256", "--moe-router-topk 8",
                "--fp8-recipe blockwise", "--recompute-method block --recompute-num-layers 2"):
        assert arg in line, arg


def test_dualpipe_hides_the_all_to_alls_behind_the_paired_chunk_s_compute():
    # DeepSeek-V3 Sec. 3.2.1 / Figure 4: DualPipe runs a forward and a backward chunk side by
    # side, each one's all-to-alls beside the other's computation: exposed = max(0, a2a -
    # compute); under 1F1B (no moe_a2a_overlap) every all-to-all is on the path
    from simulation import experts
    from simulation.parallel import layout
    from simulation.step import links_for
    dual = deepseek_v3(64)
    d = dual.to_dict()
    d["training"].pop("pipeline_schedule")
    d["training"]["pipeline_layers"] = [4] * 13 + [3] * 3
    d["training"]["global_batch_size"] = 15360
    plain = Scenario.from_dict(d)
    for sc, hides in ((dual, True), (plain, False)):
        lay = layout(sc)
        a = experts.alltoall(sc, lay, links_for(sc, lay), 0.0)
        assert a["exposed_s"] == a["time_s"] > 0
        half = experts.alltoall(sc, lay, links_for(sc, lay), a["time_s"] / 2)
        assert half["exposed_s"] == pytest.approx(a["time_s"] / 2 if hides else a["time_s"])


def test_overlapped_alltoall_kernels_take_sms_from_the_compute_by_hand():
    # DeepSeek-V3 report Sec. 3.2.2: the dispatch/combine kernels take 20 of the H800's 132
    # SMs while DualPipe overlaps them with the paired chunk's compute (DeepEP
    # deep_ep/buffer.py: Buffer.num_sms = 20); Megatron's alltoall dispatcher (NCCL) takes
    # NCCL's 16 (collectives.NCCL_CTAS). The compute runs on the other SMs while the
    # all-to-alls (T) are in flight (collectives.sm_contention_s), share s:
    # compute C = 2T: + T x s (the all-to-alls end first), nothing exposed;
    # C = T/2: the whole compute slowed, C / (1 - s) - C = C s / (1 - s), and the
    # all-to-alls stick out T - C - C s / (1 - s). 1F1B without moe_a2a_overlap: none.
    from simulation import experts
    from simulation.parallel import layout
    from simulation.step import links_for
    d = deepseek_v3(64).to_dict()
    d["training"].pop("pipeline_schedule")
    d["training"]["pipeline_layers"] = [4] * 13 + [3] * 3
    d["training"]["global_batch_size"] = 15360
    for sc, s in ((deepseek_v3_as_reported(), 20 / 132), (deepseek_v3(64), 16 / 132),
                  (Scenario.from_dict(d), 0.0)):
        lay = layout(sc)
        links = links_for(sc, lay)
        t = experts.alltoall(sc, lay, links, 0.0, 132)["time_s"]
        two = experts.alltoall(sc, lay, links, 2 * t, 132)
        half = experts.alltoall(sc, lay, links, t / 2, 132)
        assert two["contention_s"] == pytest.approx(t * s)
        assert two["exposed_s"] == (0.0 if s else t)
        assert half["contention_s"] == pytest.approx(t / 2 * s / (1 - s))
        assert half["exposed_s"] == pytest.approx(t - t / 2 - t / 2 * s / (1 - s) if s else t)
    # H800: 20 / 132 = 0.1515 on the DeepSeek-V3 layout's report, on the path as compute
    ep = evaluate(deepseek_v3_as_reported()).to_dict()["step"]["expert_parallel"]
    assert ep["alltoall_sm_share"] == pytest.approx(20 / 132)
    assert ep["alltoall_contention_s"] == pytest.approx(ep["alltoall_s"] * 20 / 132)


@pytest.mark.xfail(strict=True, reason="about 22 % fast (15.6 s a step against 19.9 s) with the "
                   "report's node-limited routing (M = 4 nodes, moe_router_group_topk) and the "
                   "all-to-all kernels' 20 of the H800's 132 SMs beside the overlapped compute "
                   "(Sec. 3.2.2; 15.4 s without them) modelled; 24.7 s, 24 % slow, without the "
                   "routing. Not modelled: the MTP module's compute; H800 GEMMs run at the "
                   "H100's sustained rate")
def test_deepseek_v3_step_time_as_reported():
    # 180K H800 GPU hours per trillion tokens (report Sec. 1, Table 1): 2,048 GPUs take
    # 180,000 / 2048 h = 316,406 s per 1e12 tokens; a step is 15,360 x 4,096 = 62.9M tokens
    per_step = 180_000 * 3600 / 2048 * 15360 * 4096 / 1e12
    assert evaluate(deepseek_v3_as_reported()).to_dict()["step"]["time_s"] == pytest.approx(per_step, rel=0.10)


def test_node_limited_routing_sends_a_token_over_ib_once_per_node_by_hand():
    # DeepSeek-V3 Sec. 3.2.2: a token crosses IB to at most M = 4 nodes, to the GPU of its
    # own index there, which forwards it over NVLink to the GPUs holding its experts.
    # EP 64 over 8 nodes of 8 H800: a rank's dispatch is 4,096 tokens x 8 copies x 7,168 x
    # 2 B = 469,762,048 B, 56/64 of it for the other 7 nodes: 411,041,792 B over IB
    # unlimited; limited, 4 of the 8 copies: 205,520,896 B. NVLink: the 7/64 for the own
    # node (51,380,224 B) plus the forwarding hop of the remote copies not for the
    # receiving GPU, 411,041,792 x 7/8 = 359,661,568 B: 411,041,792 B.
    plain = evaluate(deepseek_v3(64)).to_dict()["step"]["expert_parallel"]
    limited = evaluate(deepseek_v3_as_reported()).to_dict()["step"]["expert_parallel"]
    assert limited["ep_nodes"] == 8 and limited["router_group_topk"] == 4
    assert plain["dispatch_bytes"] == limited["dispatch_bytes"] == 469_762_048
    assert plain["alltoall_nic_bytes"] == pytest.approx(411_041_792)
    assert plain["alltoall_nvlink_bytes"] == pytest.approx(51_380_224)
    assert limited["alltoall_nic_bytes"] == pytest.approx(205_520_896)
    assert limited["alltoall_nvlink_bytes"] == pytest.approx(51_380_224 + 359_661_568)
    assert limited["per_alltoall_s"] < plain["per_alltoall_s"]
