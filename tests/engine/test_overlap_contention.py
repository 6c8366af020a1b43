"""Compute beside communication: NCCL's CTAs hold SMs (collectives.sm_contention_s),
Megatron-Core's --tp-comm-overlap (training.tp_comm_overlap) and the distributed
optimizer's gradient reduce-scatter (step.gradient_reduction), each against a hand
calculation written here."""

import pytest

from simulation import evaluate_dict, step
from simulation import collectives as nccl
from simulation.errors import ScenarioError
from simulation.scenario import Scenario


def test_nccl_holds_16_sms():
    # NVIDIA/nccl#689: 16 SMs on a DGX; A100 108 SMs, H100 132
    assert nccl.sm_share(108) == pytest.approx(0.1481, abs=1e-4)
    assert nccl.sm_share(132) == pytest.approx(0.1212, abs=1e-4)
    assert nccl.sm_share(None) == 0.0


def test_contention_by_hand():
    s = 16 / 132
    # a 1 ms GEMM beside a 0.2 ms all-gather: the GEMM loses the 16 SMs for 0.2 ms
    assert nccl.sm_contention_s(1e-3, 2e-4, s) == pytest.approx(2e-4 * s)
    # beside a collective longer than itself it runs on 116 of 132 SMs throughout
    assert nccl.sm_contention_s(1e-3, 5e-3, s) == pytest.approx(1e-3 * 132 / 116 - 1e-3)
    assert nccl.sm_contention_s(1e-3, 0.0, s) == 0.0


def test_fully_overlapped_slowdown_lies_in_the_measured_range():
    # Lee et al. 2025 (arXiv 2507.03114): compute overlapped with communication on A100 and
    # H100 runs 18.9 % slower on average, at most 40 %; the SM share alone gives
    # 1 / (1 - 16/132) = 13.8 % (H100), 1 / (1 - 16/108) = 17.4 % (A100): below the mean
    # (HBM traffic is left out), never above the maximum
    for sms, expected in ((132, 0.138), (108, 0.174)):
        slow = nccl.sm_contention_s(1.0, 10.0, nccl.sm_share(sms))
        assert slow == pytest.approx(expected, abs=1e-3)
        assert 0 < slow < 0.40


def tp_scenario(overlap: bool, layers: int = 4) -> dict:
    # GPT, hidden 8192, TP 8 over one DGX H100's NVLink, one micro-batch, no data parallelism
    return {"model": {"name": "gpt", "num_layers": layers, "hidden_size": 8192, "num_attention_heads": 64,
                      "ffn_hidden_size": 32768, "vocab_size": 51200, "gated_mlp": False,
                      "norm": "layernorm", "position_embedding": "learned", "linear_bias": True},
            "cluster": {"node": "dgx-h100", "num_nodes": 1},
            "training": {"micro_batch_size": 1, "global_batch_size": 1, "seq_len": 2048,
                         "tensor_parallel": 8, "sequence_parallel": True, "framework": "megatron",
                         "flash_attention": True, "tp_comm_overlap": overlap},
            "strategy": {"kind": "megatron_dist_opt"}}


@pytest.mark.parametrize("engine", ["python", "c"])
def test_tp_comm_overlap_hides_the_tp_collectives_but_their_sm_share(engine, monkeypatch):
    """Without the overlap each layer waits for 2 TP collectives in forward and 2 in
    backward, T = alpha + V / B each: alpha = 8.4 + 14 x 3.4 us (ring all-reduce over 8
    NVLink ranks), V = 2 x 7/8 x (2 s b h) bytes, B = 450 GB/s x 0.8. With it each runs
    beside its half of the layer's compute (a half of 0.3 ms or more, longer than T =
    0.22 ms), so none is exposed, but the compute beside it loses 16 of the 132 SMs for
    T: the step is shorter by 4 T (1 - 16/132) a layer."""
    orig = step.graph_arrays
    monkeypatch.setattr(step, "graph_arrays", lambda r, links, last, e="auto": orig(r, links, last, engine))
    off = evaluate_dict(tp_scenario(False), detail=False)["step"]["time_s"]
    on = evaluate_dict(tp_scenario(True), detail=False)["step"]["time_s"]
    t = (8.4 + 14 * 3.4) * 1e-6 + 2 * 7 / 8 * (2 * 2048 * 8192) / 360e9
    assert off - on == pytest.approx(4 * 4 * t * (1 - 16 / 132), rel=1e-9)


def test_tp_comm_overlap_needs_sequence_parallelism_and_is_off_by_default():
    sc = tp_scenario(True)
    sc["training"]["sequence_parallel"] = False
    with pytest.raises(ScenarioError, match="training.tp_comm_overlap"):
        Scenario.from_dict(sc)
    sc = tp_scenario(False)
    del sc["training"]["tp_comm_overlap"]
    parsed = Scenario.from_dict(sc)
    assert parsed.training.tp_comm_overlap is False
    assert "tp_comm_overlap" not in parsed.to_dict()["training"]      # older scenarios' hashes stay


def test_distributed_optimizer_reduce_scatters_fp32_gradients():
    """Megatron-Core core_r0.8.0 param_and_grad_buffer.py: with the distributed optimizer a
    bucket's gradients are reduce-scattered ((n-1)/n of the buffer a rank), in fp32 for
    bf16 training (grad_reduce_in_fp32). 24 layers of h = 2048 (12 h^2 + 13 h parameters
    each) over TP 8 on two DGX H100s: the data-parallel group (2 ranks, one a node)
    reduce-scatters 1/2 x 24 x 50.36e6 / 8 x 4 bytes and all-gathers the updated bf16
    parameters (all 1.418e9 / 8 of them) 1/2 x 2 bytes, all over the NIC."""
    sc = {"model": {"name": "gpt", "num_layers": 24, "hidden_size": 2048, "num_attention_heads": 16,
                    "ffn_hidden_size": 8192, "vocab_size": 51200, "gated_mlp": False,
                    "norm": "layernorm", "position_embedding": "learned", "linear_bias": True},
          "cluster": {"node": "dgx-h100", "num_nodes": 2},
          "training": {"micro_batch_size": 4, "global_batch_size": 8, "seq_len": 2048,
                       "tensor_parallel": 8, "sequence_parallel": True, "framework": "megatron",
                       "flash_attention": True},
          "strategy": {"kind": "megatron_dist_opt"}}
    r = evaluate_dict(sc, detail=False)
    total = r["model"]["num_params"]
    per_layer = 12 * 2048**2 + 13 * 2048
    nic = {row["name"]: row["bytes"] for row in r["links"]}["nic"]
    assert nic == pytest.approx(0.5 * (24 * per_layer / 8 * 4 + total / 8 * 2), rel=1e-9)


def test_nvls_all_reduce_reaches_the_measured_bus_bandwidth():
    # NVIDIA/nccl-tests#212 (S. Jeaugey): an 8-GPU H100 all-reduce peaks at busBw ~480 GB/s
    # (NVLS) where ring gets the effective NVLink 370 GB/s; at 370 GB/s of ring bus
    # bandwidth an 8 GiB NVLS all-reduce must read back 480 GB/s in nccl-tests' terms
    size = 8 * 2**30
    t = nccl.collective_time_s("allreduce", size, 8, 1, 370e9, nvls=True)
    # (the ring's alpha, 8.4 + 14 x 3.4 us, is 0.2 % of the 31 ms)
    assert nccl.nccl_tests_busbw("allreduce", size, 8, t) == pytest.approx(480e9, rel=3e-3)
    t_ring = nccl.collective_time_s("allreduce", size, 8, 1, 370e9)
    assert nccl.nccl_tests_busbw("allreduce", size, 8, t_ring) == pytest.approx(370e9, rel=3e-3)
    # across nodes NVLS (inside a node) does not apply
    assert nccl.all_reduce_choice(size, 16, 2, 370e9, nvls=True)[0] != "nvls"


def ddp_scenario(nvls, tp=1, sp=False):
    return {"model": {"name": "gpt", "num_layers": 4, "hidden_size": 2048, "num_attention_heads": 16,
                      "ffn_hidden_size": 8192, "vocab_size": 51200, "gated_mlp": False,
                      "norm": "layernorm", "position_embedding": "learned", "linear_bias": True},
            "cluster": {"node": "dgx-h100", "num_nodes": 1, "nvls": nvls},
            "training": {"micro_batch_size": 1, "global_batch_size": 8 // tp, "seq_len": 2048,
                         "tensor_parallel": tp, "sequence_parallel": sp, "flash_attention": True},
            "strategy": {"kind": "ddp"}}


def nvlink_bytes(sc):
    return {row["name"]: row["bytes"] for row in evaluate_dict(sc, detail=False)["links"]}["nvlink"]


def test_dgx_h100_all_reduces_run_nvls_inside_the_node():
    """DDP over one DGX H100's 8 GPUs: the gradient all-reduces move 2 x 7/8 x G bytes at
    NVLink speed as rings, the same time's worth of 370/480 of that with NVLS; the DGX
    H100 template has NVLS, an A100 node does not."""
    assert Scenario.from_dict(ddp_scenario(True)).cluster.nvls is True
    sc = ddp_scenario(True)
    del sc["cluster"]["nvls"]
    assert Scenario.from_dict(sc).cluster.nvls is True                  # the template's
    sc["cluster"]["node"] = "dgx-a100-80gb"
    assert Scenario.from_dict(sc).cluster.nvls is False
    # the report's link bytes are whole: within one byte of the ratio
    assert nvlink_bytes(ddp_scenario(True)) == pytest.approx(nvlink_bytes(ddp_scenario(False)) * 370 / 480,
                                                             abs=1)


def test_tensor_parallel_all_reduce_is_nvls_only_without_sequence_parallelism():
    # TP 8 in one node: Megatron all-reduces activations (NVLS) unless sequence parallelism
    # turns them into all-gathers and reduce-scatters (rings)
    assert nvlink_bytes(ddp_scenario(True, tp=8)) == pytest.approx(
        nvlink_bytes(ddp_scenario(False, tp=8)) * 370 / 480, abs=1)      # whole bytes
    assert nvlink_bytes(ddp_scenario(True, tp=8, sp=True)) == pytest.approx(
        nvlink_bytes(ddp_scenario(False, tp=8, sp=True)), rel=1e-12)


def fabric_scenario(**net):
    # TP 8 fills each DGX H100, so the data-parallel group of 16 has one rank per node
    # (16 nodes): every hop of its gradient ring crosses the network
    return {"model": {"name": "gpt", "num_layers": 4, "hidden_size": 4096, "num_attention_heads": 32,
                      "ffn_hidden_size": 16384, "vocab_size": 51200, "gated_mlp": False,
                      "norm": "layernorm", "position_embedding": "learned", "linear_bias": True},
            "cluster": {"node": "dgx-h100", "num_nodes": 16, **net},
            "training": {"micro_batch_size": 1, "global_batch_size": 16, "seq_len": 2048,
                         "tensor_parallel": 8, "sequence_parallel": True, "framework": "megatron",
                         "flash_attention": True},
            "strategy": {"kind": "megatron_dist_opt"}}


def nic_rate(sc):
    return {row["name"]: row["bytes_per_s"] for row in evaluate_dict(sc, detail=False)["links"]}["nic"]


def test_a_ring_wider_than_a_leaf_runs_at_the_spines_share():
    """A 2:1 oversubscribed two-level fat tree of 64-port leaves, 16 DGX H100 nodes:
    rail-optimised, leaf k reaches NIC k of 64 nodes, so the 16-node ring stays on its rail
    leaf at the NIC's 400 Gb/s x 0.8 = 40 GB/s; with every NIC of a node on one leaf a leaf
    reaches 64 / 8 = 8 nodes, the ring spans two leaves and its hop through the spine paces
    it at 40 / 2 = 20 GB/s. Non-blocking (or no leaf size given) keeps 40 GB/s."""
    net = dict(leaf_switch_ports=64, spine_oversubscription=2.0)
    assert nic_rate(fabric_scenario(**net)) == pytest.approx(40e9)
    assert nic_rate(fabric_scenario(rail_optimized=False, **net)) == pytest.approx(20e9)
    assert nic_rate(fabric_scenario(rail_optimized=False, leaf_switch_ports=64)) == pytest.approx(40e9)
    assert nic_rate(fabric_scenario()) == pytest.approx(40e9)
    slow = evaluate_dict(fabric_scenario(rail_optimized=False, **net), detail=False)["step"]["time_s"]
    assert slow > evaluate_dict(fabric_scenario(**net), detail=False)["step"]["time_s"]


def test_fabric_settings_are_checked_and_stay_out_of_default_json():
    with pytest.raises(ScenarioError, match="cluster.spine_oversubscription"):
        Scenario.from_dict(fabric_scenario(spine_oversubscription=0.5))
    with pytest.raises(ScenarioError, match="cluster.leaf_switch_ports"):
        Scenario.from_dict(fabric_scenario(leaf_switch_ports=0))
    with pytest.raises(ScenarioError, match="cluster.rail_optimized"):
        Scenario.from_dict(fabric_scenario(rail_optimized="yes"))
    out = Scenario.from_dict(fabric_scenario()).to_dict()["cluster"]
    assert not {"rail_optimized", "leaf_switch_ports", "spine_oversubscription"} & set(out)


def test_four_dgx_h100_all_reduce_near_the_published_bus_bandwidth():
    """AI @ Georgia Tech / Voltage Park (github.com/aigatech/vpbenchmarking README, NCCL
    2.24.3): all_reduce_perf over 4 nodes of 8 H100 SXM5, 8x 400 Gb/s InfiniBand a node,
    peak bus bandwidth 330.93 GB/s; one node's 8 GPUs 479.72 GB/s (NVLS, as nccl-tests#212's
    ~480). The model: a ring with 8 ranks a node puts 1/8 of each rank's bytes on its NIC,
    bus = min(360 x 8/7, 40 x 8) = 320 GB/s, plus NCCL's alpha: 317.6 GB/s at 8 GiB (-4 %)."""
    size = 8 * 2**30
    bus = nccl.bus_bandwidth(8, True, 450e9 * 0.8, 50e9 * 0.8)
    t = nccl.collective_time_s("allreduce", size, 32, 4, bus)
    assert nccl.nccl_tests_busbw("allreduce", size, 32, t) == pytest.approx(330.93e9, rel=0.05)
    t1 = nccl.collective_time_s("allreduce", size, 8, 1, 450e9 * 0.8, nvls=True)
    assert nccl.nccl_tests_busbw("allreduce", size, 8, t1) == pytest.approx(479.72e9, rel=0.05)
