"""Expert parallelism (training.expert_parallel, simulation/experts.py): the scenario's
checks as Megatron-Core makes them, the layout's expert grid, per-rank expert memory, the
all-to-alls and the busiest rank's imbalance in the step, the exports; each against a
hand calculation written here, and Megatron-Core's published EP8xTP1 > EP4xTP2 for
Mixtral 8x7B."""

import pytest

from simulation import collectives as nccl
from simulation import evaluate, evaluate_dict, experts, export
from simulation.errors import ScenarioError
from simulation.parallel import layout
from simulation.params import count_params
from simulation.scenario import Scenario
from simulation.step import compute_times, links_for

# Mixtral 8x7B (Jiang et al. 2024, Table 1): h 4096, f 14336, 32 layers, 8 experts, top 2
H, F, L, E, K = 4096, 14336, 32, 8, 2
EXPERT = 3 * H * F                       # one SwiGLU expert: gate, up, down


def mixtral(nodes=1, tp=1, pp=1, ep=1, gbs=None, strategy="megatron_dist_opt", **training) -> dict:
    t = {"micro_batch_size": 1, "seq_len": 4096, "tensor_parallel": tp,
         "sequence_parallel": tp > 1, "pipeline_parallel": pp, "expert_parallel": ep,
         "flash_attention": True, "recompute": "selective", **training}
    if gbs is not None:
        t["global_batch_size"] = gbs
    return {"model": {"preset": "mixtral-8x7b"}, "cluster": {"node": "dgx-h100", "num_nodes": nodes},
            "training": t, "strategy": {"kind": strategy}}


def parts(report: dict) -> dict:
    return {p["name"]: p["bytes"] for p in report["memory"]["per_gpu"]["hbm"]["parts"]}


# ---------------------------------------------------------------- scenario and layout
def test_defaults_leave_the_json_as_it_was():
    d = mixtral()
    del d["training"]["expert_parallel"]
    out = Scenario.from_dict(d).to_dict()["training"]
    for k in ("expert_parallel", "expert_tensor_parallel", "moe_capacity_factor",
              "moe_pad_to_capacity", "moe_routing_imbalance", "moe_a2a_overlap",
              "moe_router_group_topk"):
        assert k not in out
    assert "expert_parallel" not in layout(Scenario.from_dict(d)).to_dict()
    sc = Scenario.from_dict(mixtral(ep=8, moe_capacity_factor=1.25, moe_routing_imbalance=1.5))
    again = Scenario.from_dict(sc.to_dict())
    assert again == sc
    assert sc.to_dict()["training"]["expert_parallel"] == 8
    assert sc.training.framework == "megatron"           # EP is Megatron's: its kernels' activations


@pytest.mark.parametrize("change, field, words", [
    (dict(expert_parallel=3), "training.expert_parallel", "must divide the model's 8 experts"),
    (dict(expert_parallel=2, moe_pad_to_capacity=True), "training.moe_pad_to_capacity",
     "needs moe_capacity_factor"),
    (dict(expert_parallel=2, moe_routing_imbalance=3.0), "training.moe_routing_imbalance",
     "at most expert_parallel"),
    (dict(expert_parallel=2, moe_routing_imbalance=0.5), "training.moe_routing_imbalance", ">= 1"),
    (dict(expert_parallel=2, moe_capacity_factor=0.0), "training.moe_capacity_factor", "> 0"),
    (dict(moe_a2a_overlap=True), "training.moe_a2a_overlap", "needs expert_parallel > 1"),
    # Megatron-Core transformer_config.py's assertions for --overlap-moe-expert-parallel-comm
    (dict(expert_parallel=2, moe_a2a_overlap=True, recompute="full"), "training.moe_a2a_overlap",
     "recompute other than full"),
    (dict(expert_parallel=2, moe_a2a_overlap=True, pipeline_parallel=2), "training.moe_a2a_overlap",
     "needs interleave_stages"),
    # node-limited routing: the groups are the nodes the EP group spans (EP 8 on one DGX: 1)
    (dict(expert_parallel=8, moe_router_group_topk=2), "training.moe_router_group_topk",
     "at most the 1 node(s) the expert-parallel group spans"),
    (dict(expert_parallel=8, moe_router_group_topk=0), "training.moe_router_group_topk",
     "at least 1"),
    (dict(expert_parallel=8, moe_router_group_topk=1.5), "training.moe_router_group_topk",
     "whole number"),
])
def test_bad_routing_settings_name_their_field(change, field, words):
    d = mixtral()
    d["training"].update(change)
    with pytest.raises(ScenarioError) as e:
        Scenario.from_dict(d)
    assert e.value.field == field
    assert words in str(e.value)


def test_expert_parallel_needs_experts_and_sequence_parallel_with_tp():
    d = mixtral(ep=2)
    d["model"] = {"preset": "llama2-7b"}
    with pytest.raises(ScenarioError) as e:
        Scenario.from_dict(d)
    assert e.value.field == "training.expert_parallel"
    d = mixtral(tp=2, ep=2)
    d["training"]["sequence_parallel"] = False           # Megatron moe_layer.py raises
    with pytest.raises(ScenarioError) as e:
        Scenario.from_dict(d)
    assert e.value.field == "training.sequence_parallel"


def test_layout_is_megatron_cores_expert_grid():
    # 32 GPUs, TP 2, PP 4: DP 4; ETP (= TP) x EP = 2 x 4 = 8 divides TP x DP = 8: EDP 1
    lay = layout(Scenario.from_dict(mixtral(nodes=4, tp=2, pp=4, ep=4)))
    assert (lay.expert_parallel, lay.expert_tensor_parallel, lay.expert_data_parallel) == (4, 2, 1)
    # Megatron's example (moe/README.md): 32 GPUs, TP 1, PP 4, EP 8: DP 8, EDP 8 / 8 = 1
    lay = layout(Scenario.from_dict(mixtral(nodes=4, pp=4, ep=8)))
    assert (lay.data_parallel, lay.expert_data_parallel, lay.expert_shard_degree) == (8, 1, 1)
    # ETP 1 under TP 2 on 16 GPUs: DP 8, EDP = 2 x 8 / (1 x 4) = 4; shard 8 x 2 / 4 = 4
    lay = layout(Scenario.from_dict(mixtral(nodes=2, tp=2, ep=4, expert_tensor_parallel=1)))
    assert (lay.expert_tensor_parallel, lay.expert_data_parallel, lay.expert_shard_degree) == (1, 4, 4)
    # ETP 4 x EP 2 = 8 does not divide TP x DP = 2 x 2 on 4 GPUs (EP 2 alone does)
    d = mixtral(tp=2, ep=2, expert_tensor_parallel=4)
    d["cluster"]["gpus_per_node"] = 4
    with pytest.raises(ScenarioError) as e:
        layout(Scenario.from_dict(d))
    assert e.value.field == "training.expert_tensor_parallel"
    # EP 8 x ETP 1 does not divide TP x DP = 1 x 4 on 4 GPUs
    d = mixtral(ep=8)
    d["cluster"]["gpus_per_node"] = 4
    with pytest.raises(ScenarioError) as e:
        Scenario.from_dict(d) and layout(Scenario.from_dict(d))
    assert e.value.field == "training.expert_parallel"


# ---------------------------------------------------------------- memory
def test_experts_per_rank_and_sharded_states_by_hand():
    """Mixtral 8x7B, 8 GPUs, TP 1, EP 8, Megatron distributed optimizer.

    Experts: 32 layers x 8 x 3 x 4096 x 14336 = 45,097,156,608 elements; the rest (D) is
    46,702,792,704 - that = 1,605,636,096. Per rank: D + E / 8 held (bf16 2 B, fp32
    main_grad 4 B); master weights and moments sharded over the 8 DP ranks (dense) and
    the 8 / 8 = 1 expert-data-parallel rank of each expert: D / 8 + (E / 8) / 1 = (D + E)
    / 8, as without EP."""
    total = count_params(Scenario.from_dict(mixtral()).model).total
    e = L * E * EXPERT
    assert e == 45_097_156_608 and total - e == 1_605_636_096
    assert experts.expert_params_total(Scenario.from_dict(mixtral()).model) == e
    held = (total - e) + e / 8
    with_ep, without = parts(evaluate_dict(mixtral(ep=8), include_step=False)), \
        parts(evaluate_dict(mixtral(), include_step=False))
    assert with_ep["bf16 parameters"] == pytest.approx(2 * held)
    assert with_ep["fp32 main gradients (full, every rank)"] == pytest.approx(4 * held)
    assert without["bf16 parameters"] == pytest.approx(2 * total)
    assert with_ep["fp32 master weights (shard)"] == pytest.approx(4 * total / 8)
    assert with_ep["fp32 master weights (shard)"] == pytest.approx(without["fp32 master weights (shard)"])
    assert with_ep["adam optimizer states (fp32) (shard)"] == pytest.approx(8 * total / 8)


def test_zero3_unit_and_ddp_states_follow_the_experts():
    """FSDP FULL_SHARD: the gathered unit is one block on the rank, its dense part whole
    and its experts / EP (per_layer - 8 x expert + 8 x expert / 4 with EP 4); DDP: every
    state is the rank's held count D + E / EP."""
    pc = count_params(Scenario.from_dict(mixtral()).model)
    block = pc.per_layer - E * EXPERT + E * EXPERT / 4
    p = parts(evaluate_dict(mixtral(ep=4, strategy="fsdp_full_shard", framework="megatron"),
                            include_step=False))
    assert p["unsharded parameters (2 FSDP units)"] == pytest.approx(2 * 2 * block)
    p = parts(evaluate_dict(mixtral(ep=4, strategy="ddp"), include_step=False))
    held = pc.total - L * E * EXPERT * 3 / 4
    assert p["bf16 parameters"] == pytest.approx(2 * held)


def test_busiest_rank_holds_the_imbalanced_tokens():
    """The stored routed-token tensors of a Megatron MoE layer per token and top-k choice
    (activations.py): the experts' SwiGLU MLP 6 f, the permuted fc1 input and its prob
    2 h + 2, the top-k index and fp32 prob 8 + 4, two int64 permutation indices 16: 6 f +
    2 h + 30 bytes. With r = 1.5 the busiest rank holds 0.5 x that x s b k more, for
    each of the 32 layers; capacity 1.2 caps r at 1.2; padding makes it c = 1.2 even when
    balanced. The all-to-all buffers are 2 x s b / TP x k x h x 2 B x factor."""
    sbk = 4096 * 1 * K
    per = 6 * F + 2 * H + 30
    p = parts(evaluate_dict(mixtral(ep=8, moe_routing_imbalance=1.5), include_step=False))
    assert p[experts.IMBALANCE_PART] == pytest.approx(0.5 * sbk * per * L)
    assert p[experts.A2A_PART] == pytest.approx(2 * sbk * H * 2 * 1.5)
    p = parts(evaluate_dict(mixtral(ep=8, moe_routing_imbalance=1.5, moe_capacity_factor=1.2),
                            include_step=False))
    assert p[experts.IMBALANCE_PART] == pytest.approx(0.2 * sbk * per * L)
    p = parts(evaluate_dict(mixtral(ep=8, moe_capacity_factor=1.2, moe_pad_to_capacity=True),
                            include_step=False))
    assert p[experts.IMBALANCE_PART] == pytest.approx(0.2 * sbk * per * L)
    p = parts(evaluate_dict(mixtral(ep=8), include_step=False))
    assert experts.IMBALANCE_PART not in p


def test_token_factor():
    tr = lambda **kw: Scenario.from_dict(mixtral(ep=8, **kw)).training   # noqa: E731
    assert experts.token_factor(tr()) == 1.0
    assert experts.token_factor(tr(moe_routing_imbalance=2.0)) == 2.0
    assert experts.token_factor(tr(moe_routing_imbalance=2.0, moe_capacity_factor=1.5)) == 1.5
    assert experts.token_factor(tr(moe_capacity_factor=1.5, moe_pad_to_capacity=True)) == 1.5
    assert experts.token_factor(tr(moe_capacity_factor=0.8)) == 0.8
    # Megatron moe_utils.get_capacity: ceil(4096 x 2 / 8 x 1.25) = 1280 tokens per expert
    assert experts.capacity_tokens(Scenario.from_dict(mixtral()).model, tr(moe_capacity_factor=1.25)) == 1280


# ---------------------------------------------------------------- step time
def test_alltoall_inside_a_node_by_hand():
    """EP 8 over one DGX H100: each rank's dispatch is s b / TP x k x h x 2 B = 4096 x 2 x
    4096 x 2 = 67,108,864 B, 7/8 of it to the 7 peers over NVLink (450 GB/s x 0.8
    network efficiency), none over the NIC; alpha: one NCCL step on one node, 8.4 + 3.4
    us. Four all-to-alls per MoE layer and micro-batch (dispatch and combine, forward and
    backward), 32 layers."""
    sc = Scenario.from_dict(mixtral(ep=8))
    lay = layout(sc)
    links = links_for(sc, lay)
    assert links["nvlink"] == pytest.approx(450e9 * 0.8)
    v = 4096 * K * H * 2
    per = 11.8e-6 + v * 7 / 8 / (450e9 * 0.8)
    a = experts.alltoall(sc, lay, links)
    assert a["dispatch_bytes"] == v
    assert a["per_a2a_s"] == pytest.approx(per)
    assert a["time_s"] == pytest.approx(L * 4 * per)
    assert a["bytes"] == {"nvlink": pytest.approx(L * 4 * v * 7 / 8), "nic": 0.0}
    # full recomputation re-runs the forward's two
    sc = Scenario.from_dict(mixtral(ep=8, recompute="full"))
    assert experts.alltoall(sc, lay, links)["time_s"] == pytest.approx(L * 6 * per)


def test_alltoall_across_nodes_by_hand():
    """EP 16 over two DGX H100 (8 a node): of a rank's 16 shares, 7 go over NVLink and 8
    over its NIC (400 GB/s a node / 8 GPUs x 0.8 = 40 GB/s): the NIC binds; alpha: one
    NCCL step across nodes, 8.4 + 14 us. With r = 1.5 every share is 1.5 times larger."""
    d = mixtral(nodes=2, ep=16)
    d["model"] = {**Scenario.from_dict(mixtral()).model.to_dict(), "num_experts": 16, "preset": None}
    sc = Scenario.from_dict({**d, "training": {**d["training"], "moe_routing_imbalance": 1.5}})
    lay = layout(sc)
    links = links_for(sc, lay)
    assert links["nic"] == pytest.approx(400e9 / 8 * 0.8)
    v = 4096 * K * H * 2 * 1.5
    a = experts.alltoall(sc, lay, links)
    assert a["nodes"] == 2 and a["ranks_per_node"] == 8
    assert a["per_a2a_s"] == pytest.approx(8.4e-6 + 14e-6 + max(v * 7 / 16 / links["nvlink"],
                                                                v * 8 / 16 / links["nic"]))
    assert a["bytes"]["nic"] == pytest.approx(L * 4 * v / 2)


def mixtral_16_experts(nodes, ep, **training) -> dict:
    d = mixtral(nodes=nodes, ep=ep, **training)
    d["model"] = {**Scenario.from_dict(mixtral()).model.to_dict(), "num_experts": 16, "preset": None}
    return d


def test_node_limited_routing_needs_experts_and_at_most_top_k_groups():
    d = mixtral(moe_router_group_topk=1)
    d["model"] = {"preset": "llama2-7b"}
    with pytest.raises(ScenarioError) as e:
        Scenario.from_dict(d)
    assert e.value.field == "training.moe_router_group_topk" and "mixture of experts" in str(e.value)
    # EP 16 over 4 DGX H100 with ETP 4 (TP 4): 2 EP ranks a node, 8 nodes; top-2 routing
    # gives top_k / group_topk experts per selected group (Megatron-Core
    # moe_utils.group_limited_topk): 3 groups of a top 2 is none
    d = mixtral_16_experts(8, 16, tensor_parallel=4, sequence_parallel=True, moe_router_group_topk=3)
    with pytest.raises(ScenarioError) as e:
        Scenario.from_dict(d)
    assert e.value.field == "training.moe_router_group_topk" and "moe_top_k (2)" in str(e.value)
    d["training"]["moe_router_group_topk"] = 2
    assert Scenario.from_dict(d).training.moe_router_group_topk == 2


def test_node_limited_alltoall_across_nodes_by_hand():
    """EP 16 over two DGX H100, top 2, node-limited to M = 1 node (DeepSeek-V3 report Sec.
    3.2.2: a token crosses IB once per destination node, the GPU of its index there
    forwards it over NVLink). Dispatch v = 4096 x 2 x 4096 x 2 B; unlimited, 8/16 of v goes
    over the NIC, 7/16 over NVLink. Limited: the NIC carries min(2, 1) / 2 of v x 8/16; of
    those copies 7/8 are for the node's other 7 GPUs and take an NVLink hop: NVLink
    v x 7/16 + v x 8/16 x 7/8."""
    v = 4096 * K * H * 2
    plain = Scenario.from_dict(mixtral_16_experts(2, 16))
    limited = Scenario.from_dict(mixtral_16_experts(2, 16, moe_router_group_topk=1))
    lay = layout(limited)
    links = links_for(limited, lay)
    a0, a = experts.alltoall(plain, lay, links), experts.alltoall(limited, lay, links)
    assert a0["nic_bytes"] == pytest.approx(v * 8 / 16) and a0["nvlink_bytes"] == pytest.approx(v * 7 / 16)
    assert a["nic_bytes"] == pytest.approx(v * 8 / 16 / 2)
    assert a["nvlink_bytes"] == pytest.approx(v * 7 / 16 + v * 8 / 16 * 7 / 8)
    assert a["per_a2a_s"] == pytest.approx(8.4e-6 + 14e-6 + max(a["nvlink_bytes"] / links["nvlink"],
                                                                a["nic_bytes"] / links["nic"]))
    assert a["bytes"]["nic"] == pytest.approx(L * 4 * v / 4)
    assert a["per_a2a_s"] < a0["per_a2a_s"]
    # M = top_k = 2: each of the two copies may be for another node, the NIC bytes as
    # unlimited; the forwarding hop still moves 7/8 of them over NVLink
    two = experts.alltoall(Scenario.from_dict(mixtral_16_experts(2, 16, moe_router_group_topk=2)),
                           lay, links)
    assert two["nic_bytes"] == pytest.approx(v * 8 / 16)
    rep = evaluate(limited).to_dict()
    assert rep["step"]["expert_parallel"]["router_group_topk"] == 1
    assert "at most 1 node(s)" in " ".join(rep["notes"])
    args = export.megatron_moe_args(limited)
    assert "--moe-router-num-groups 2" in args and "--moe-router-group-topk 1" in args
    assert any("Node-limited routing" in n for n in export.megatron_notes(limited))
    assert not any("group" in x for x in export.megatron_moe_args(plain))


def test_step_carries_the_alltoalls_and_the_overlap_hides_them():
    """Without a pipeline the step is m micro-batches, each with its all-to-alls on the
    critical path: hiding them (moe_a2a_overlap, each micro-batch's compute longer than
    its all-to-alls) makes the step m x a2a shorter, less what the compute beside them
    loses to NCCL's 16 of the H100's 132 SMs (collectives.sm_contention_s: a2a x 16/132
    a micro-batch, counted as compute)."""
    on = evaluate(Scenario.from_dict(mixtral(ep=8, gbs=16))).to_dict()
    off = evaluate(Scenario.from_dict(mixtral(ep=8, gbs=16, moe_a2a_overlap=True))).to_dict()
    ep = on["step"]["expert_parallel"]
    m = on["step"]["micro_batches"]
    assert m == 2
    assert ep["alltoall_exposed_s"] == ep["alltoall_s"] > 0
    assert off["step"]["expert_parallel"]["alltoall_exposed_s"] == 0.0
    slow = ep["alltoall_s"] * 16 / 132
    assert off["step"]["expert_parallel"]["alltoall_contention_s"] == pytest.approx(slow)
    assert on["step"]["expert_parallel"]["alltoall_contention_s"] == 0.0
    assert on["step"]["time_s"] - off["step"]["time_s"] == pytest.approx(m * (ep["alltoall_s"] - slow))
    assert on["step"]["breakdown_s"]["exposed_comm"] - off["step"]["breakdown_s"]["exposed_comm"] \
        == pytest.approx(m * ep["alltoall_s"])
    assert off["step"]["breakdown_s"]["compute"] - on["step"]["breakdown_s"]["compute"] \
        == pytest.approx(m * slow)
    nvlink = {x["name"]: x["bytes"] for x in on["links"]}["nvlink"]
    nvlink_off = {x["name"]: x["bytes"] for x in off["links"]}["nvlink"]
    assert nvlink == pytest.approx(nvlink_off)          # the bytes move either way
    assert "expert parallelism 8" in " ".join(on["notes"])


def test_imbalance_adds_the_busiest_ranks_expert_flops():
    """Constant compute model (every FLOP at peak x 0.5): the busiest rank's experts run
    r = 1.5 times the mean tokens, 0.5 x s b k x 2 x 3 h f more FLOPs a layer forward
    (and twice that backward, plus the selective recompute's attention core, unchanged)."""
    base = Scenario.from_dict(mixtral(ep=8, compute_efficiency=0.5))
    hot = Scenario.from_dict(mixtral(ep=8, compute_efficiency=0.5, moe_routing_imbalance=1.5))
    pc = count_params(base.model)
    extra_flops = 0.5 * 4096 * K * 2 * EXPERT
    rate = base.cluster.accelerator.peak_flops_bf16 * 0.5      # H100 SXM: 989 TFLOP/s dense bf16
    assert compute_times(hot, pc)["fwd_s"] - compute_times(base, pc)["fwd_s"] == pytest.approx(extra_flops / rate)
    assert compute_times(hot, pc)["bwd_s"] - compute_times(base, pc)["bwd_s"] == pytest.approx(2 * extra_flops / rate)


def test_ep_runs_fewer_larger_expert_gemms():
    """Work model: with EP 8 a rank runs 1 expert on 8 x the tokens instead of 8 experts
    (same FLOPs, larger GEMMs, no slower); with r = 1.5 its expert GEMMs take longer and
    the report says by how much."""
    pc = count_params(Scenario.from_dict(mixtral()).model)
    t1 = compute_times(Scenario.from_dict(mixtral()), pc)
    t8 = compute_times(Scenario.from_dict(mixtral(ep=8)), pc)
    hot = compute_times(Scenario.from_dict(mixtral(ep=8, moe_routing_imbalance=1.5)), pc)
    assert t8["fwd_s"] <= t1["fwd_s"]
    assert hot["parts"]["expert_gemm"] > 1.4 * t8["parts"]["expert_gemm"]
    r = evaluate(Scenario.from_dict(mixtral(ep=8, gbs=16, moe_routing_imbalance=1.5))).to_dict()
    ep = r["step"]["expert_parallel"]
    assert ep["token_factor"] == 1.5
    assert ep["imbalance_compute_s"] == pytest.approx(hot["parts"]["expert_gemm"] * L * (1 - 1 / 1.5))


def test_mixtral_ep8_tp1_beats_ep4_tp2_as_megatron_core_reports():
    """Megatron-Core MoE README (megatron/core/transformer/moe/README.md, core 0.20,
    "Guideline 4: Prefer EP over TP for Expert Layers"): "For Mixtral 8x7B, EP8xTP1
    outperforms EP4xTP2". The README's Mixtral example run: 32 H100 (4 nodes), PP 4,
    sequence parallel, distributed optimizer, --overlap-grad-reduce and
    --overlap-param-gather, micro batch 1, global batch 128, seq 4096, bf16."""
    def run(tp, ep):
        d = mixtral(nodes=4, tp=tp, pp=4, ep=ep, gbs=128, recompute="none",
                    overlap_grad_reduce=True, overlap_param_gather=True)
        d["training"]["sequence_parallel"] = True
        return evaluate(Scenario.from_dict(d)).to_dict()
    ep8, ep4 = run(1, 8), run(2, 4)
    assert ep8["fits"] and ep4["fits"]
    assert ep8["step"]["time_s"] < ep4["step"]["time_s"]


# ---------------------------------------------------------------- exports
def test_exports_carry_expert_parallelism():
    sc = Scenario.from_dict(mixtral(nodes=2, tp=2, ep=4, moe_capacity_factor=1.25,
                                    moe_pad_to_capacity=True, strategy="zero1"))
    ds = export.deepspeed_config(sc)
    assert ds["_tierlab_moe"] == {"num_experts": 8, "ep_size": 4, "k": 2, "capacity_factor": 1.25,
                                  "drop_tokens": True, "enable_expert_tensor_parallelism": True}
    assert "--expert-model-parallel-size 4" in ds["_tierlab_megatron_args"]
    assert "--moe-expert-capacity-factor 1.25" in ds["_tierlab_megatron_args"]
    assert "--moe-pad-expert-input-to-capacity" in ds["_tierlab_megatron_args"]
    assert any("ep_size" in n for n in ds["_tierlab_notes"])
    dropless = Scenario.from_dict(mixtral(ep=8, strategy="zero1"))
    assert export.deepspeed_config(dropless)["_tierlab_moe"]["drop_tokens"] is False
    snippet = export.fsdp_snippet(sc)
    assert "leaves expert parallelism out" in snippet
    assert "_tierlab_moe" not in export.deepspeed_config(Scenario.from_dict(mixtral(strategy="zero1")))


@pytest.mark.parametrize("strategy, ep, extra", [
    ("ddp", 8, {}), ("megatron_dist_opt", 8, {}), ("zero3", 4, {"framework": "megatron"}),
    ("megatron_dist_opt", 4, {"expert_tensor_parallel": 1}),
])
def test_the_planners_hbm_floor_stays_below_the_memory_model_with_ep(strategy, ep, extra):
    """The planner prunes on a lower bound of HBM (planner.hbm_lower_bound_bytes); with EP
    a rank holds D + E / EP parameters, not all of them, so a floor counting every
    parameter would prune layouts that fit."""
    from simulation import planner
    tp = 2 if "expert_tensor_parallel" in extra else 1
    sc = Scenario.from_dict(mixtral(nodes=1, tp=tp, ep=ep, strategy=strategy, **extra))
    floor = planner.hbm_lower_bound_bytes(sc, layout(sc))
    total = evaluate(sc, include_step=False).to_dict()["memory"]["per_gpu"]["hbm"]["total_bytes"]
    assert floor <= total
    assert floor > 0.3 * total          # still a bound worth pruning on
