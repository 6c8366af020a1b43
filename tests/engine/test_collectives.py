"""Collectives as NCCL runs them: NCCL's latency model by hand, published nccl-tests
results (tests/data/reference/nccl_tests_busbw.json), groups strided across nodes."""

import json
from pathlib import Path

import pytest

from simulation import collectives as nccl
from simulation.scheduler import simulate
from simulation.stepgraph import RankModel, graph_arrays
from tests.engine.test_step import LINKS, tiny

DATA = json.loads((Path(__file__).parents[1] / "data" / "reference" / "nccl_tests_busbw.json").read_text())
CASE = {c["id"]: c for c in DATA["cases"]}
US = 1e-6


def test_ring_latency_by_hand_from_nccls_tuner():
    # NCCL tuning.cc, Simple protocol: base 8.4 us, 3.4 us a NVLink step, 14 us a network step.
    # all-gather over 1536 ranks on 192 nodes: 1535 steps, 191 of them across nodes.
    assert nccl.ring_latency_s("allgather", 1536, 192) == pytest.approx(
        (8.4 + (1535 - 191) * 3.4 + 191 * 14) * US)
    # reduce-scatter is the same ring; one rank has nothing to wait for
    assert nccl.ring_latency_s("reduce_scatter", 1536, 192) == nccl.ring_latency_s("allgather", 1536, 192)
    assert nccl.ring_latency_s("allgather", 1, 1) == 0.0
    # all-reduce inside one node: 2(n-1) = 14 NVLink steps
    assert nccl.ring_latency_s("allreduce", 8, 1) == pytest.approx((8.4 + 14 * 3.4) * US)
    # all-reduce on 2 nodes: 30 steps, 2 across the network, x 1.4 ring plateau
    assert nccl.ring_latency_s("allreduce", 16, 2) == pytest.approx((8.4 + 28 * 3.4 + 2 * 14) * 1.4 * US)
    # latency grows with the ranks: doubling them at 8 a node nearly doubles it
    ratio = nccl.ring_latency_s("allgather", 1536, 192) / nccl.ring_latency_s("allgather", 768, 96)
    assert 1.9 < ratio < 2.01


def test_tree_latency_by_hand_and_ncclS_choice():
    # 8.4 us + 2 ((16/2 - 1) x 4.0 us + log2(2) x 14 us)
    assert nccl.tree_allreduce_latency_s(16, 2) == pytest.approx((8.4 + 2 * (7 * 4.0 + 14)) * US)
    # tree latency grows with log2(nodes), ring's with the ranks: small messages on many
    # nodes take the tree, large ones the ring (its bandwidth is 1/0.92 better)
    assert nccl.all_reduce_choice(1e6, 1024, 128, 100e9)[0] == "tree"
    assert nccl.all_reduce_choice(4e9, 16, 2, 100e9)[0] == "ring"
    assert nccl.all_reduce_choice(1e6, 8, 1, 100e9)[0] == "ring"        # no tree inside a node


def test_ranks_per_node_of_strided_groups():
    # TP innermost: a data-parallel group is strided by t, so G/t of its ranks share a node
    assert nccl.ranks_per_node(32, 8, 8) == 1         # TP fills the node: one rank per node
    assert nccl.ranks_per_node(64, 2, 8) == 4
    assert nccl.ranks_per_node(4, 1, 8) == 4          # a small group inside one node
    assert nccl.nodes_spanned(32, 1) == 32 and nccl.nodes_spanned(64, 4) == 16
    assert nccl.bus_bandwidth(1, True, 300e9, 25e9) == 25e9            # strided: the NIC
    assert nccl.bus_bandwidth(8, True, 300e9, 25e9) == 200e9           # 8 rings, 8 NICs
    assert nccl.bus_bandwidth(8, False, 300e9, 25e9) == 300e9          # inside a node


def test_all_reduce_bus_bandwidth_against_nccl_tests_119():
    # 24 A100 on 3 nodes, 4 HDR NICs a node (100 GB/s), NVLink 300 GB/s a GPU; sizes 8 B to
    # 128 MiB in 1 MiB steps as the run did. Measured: mean 84.8 GB/s, peak 96 GB/s. Our model
    # uses NCCL's Simple-protocol latency at every size (NCCL takes LL/LL128 below ~1 MB,
    # which is why the model's mean is low); the line rates are not derated.
    c = CASE["nccl_tests_119_a100_3nodes_4hdr"]
    bw = nccl.bus_bandwidth(8, True, 300e9, c["inputs"]["nic_bytes_per_s_per_node"] / 8)
    sizes = range(8, 134217728 + 1, 1048576)
    busbw = [nccl.nccl_tests_busbw("allreduce", s, 24, nccl.collective_time_s("allreduce", s, 24, 3, bw))
             for s in sizes]
    mean, peak = sum(busbw) / len(busbw) / 1e9, max(busbw) / 1e9
    assert mean == pytest.approx(c["measured"]["avg_busbw_gb_per_s"], rel=0.15)
    assert peak == pytest.approx(c["measured"]["peak_busbw_gb_per_s"], rel=0.10)
    # bus bandwidth grows with the message: latency-bound below, bandwidth-bound above
    assert busbw[1] < busbw[16] < busbw[-1]


def test_ranks_per_node_against_nccl_569():
    # 1.6 GB ring all-reduce over 8 ranks: one rank per node sends everything over its NIC;
    # two ranks per node halve the NIC's share. DGX-2: V100 NVSwitch ~150 GB/s a GPU, one
    # 100 Gb/s EDR card (12.5 GB/s) per GPU used.
    c = CASE["nccl_569_dgx2_ranks_per_node"]["measured"]["time_s"]
    t = {}
    for name, k in (("A", 1), ("B", 2), ("C", 4)):
        bw = nccl.bus_bandwidth(k, True, 150e9, 12.5e9)
        t[name] = nccl.collective_time_s("allreduce", 1.6e9, 8, 8 // k, bw)
    assert t["A"] > t["B"] > t["C"] and c["A"] > c["B"] > c["C"]
    assert t["A"] / t["B"] == pytest.approx(c["A"] / c["B"], rel=0.15)     # 2.0 vs 2.10


def strided_step(per_node, engine="python"):
    # DDP on 4 ranks, one layer of 1e9 params x 2 B, NVLink and NIC at 1e9 B/s
    r = tiny(layers=1, stage=0, dp=4, dp_link="nic", gpus_per_node=8, dp_per_node=per_node)
    a = graph_arrays(r, LINKS, True, engine)
    s = simulate(a, engine)
    return dict(zip(a["links"], s.link_bytes)), s


@pytest.mark.parametrize("engine", ["python", "c"])
def test_a_strided_group_sends_every_byte_over_the_network(engine):
    # ring all-reduce: 2 x 3/4 x 2e9 B = 3e9 B a rank
    one, s1 = strided_step(1, engine)          # one rank a node (TP fills the node)
    assert one["nic"] == pytest.approx(3e9) and one["nvlink"] == 0
    two, s2 = strided_step(2, engine)          # two a node: half the hops leave it
    assert two["nic"] == pytest.approx(1.5e9) and two["nvlink"] == pytest.approx(1.5e9)
    assert s1.makespan_s - s2.makespan_s == pytest.approx(1.5)


@pytest.mark.parametrize("engine", ["python", "c"])
def test_latency_is_paid_on_the_communicators_stream(engine):
    # Hand-worked: tiny() with a 0.25 s alpha on every all-gather and reduce-scatter.
    # Forward: ag0 [0.25,1.25]; ag1's alpha [1.25,1.5], bytes [1.5,2.5]; f0 [1.25,2.25];
    # f1 [2.5,3.5]; backward: bg1 [2.75,3.75] (ag0's buffer freed at 2.25, alpha first);
    # b1 [3.75,5.75]; bg0 alpha [3.75,4] bytes [4,5]; rs1 alpha [5.75,6] bytes [6,7];
    # b0 [5.75,7.75]; rs0 alpha [7.75,8] bytes [8,9]; optimizer [9,10].
    r = tiny(gather_latency_s=0.25, reduce_latency_s=0.25)
    a = graph_arrays(r, LINKS, True, engine)
    s = simulate(a, engine)
    assert s.makespan_s == pytest.approx(10.0)
    base = simulate(graph_arrays(tiny(), LINKS, True, engine), engine).makespan_s
    assert s.makespan_s - base == pytest.approx(1.0)


def test_deepspeed_fetches_a_tensor_at_a_time():
    # four fetches a layer of a quarter each: same bytes as one flat unit, more collectives
    flat = tiny(gather_latency_s=0.01)
    per_tensor = tiny(gather_latency_s=0.01, units_per_layer=4, prefetch_depth=1)
    ga, gb = graph_arrays(flat, LINKS, True, "python"), graph_arrays(per_tensor, LINKS, True, "python")
    ag = lambda g: [i for i, lab in enumerate(g["label"]) if lab == 1 and g["kind"][i] == 1]   # noqa: E731
    assert len(ag(gb)) == 4 * len(ag(ga))
    assert sum(gb["size"][i] for i in ag(gb)) == pytest.approx(sum(ga["size"][i] for i in ag(ga)))
    # finer units overlap better while alpha is small (the first fetch is a quarter) ...
    assert simulate(gb).makespan_s < simulate(ga).makespan_s
    # ... and lose once the 4x alphas exceed what the units' compute hides
    slow = lambda r: simulate(graph_arrays(r, LINKS, True, "python")).makespan_s   # noqa: E731
    assert slow(tiny(gather_latency_s=0.6, units_per_layer=4)) > slow(tiny(gather_latency_s=0.6))


def test_rank_model_defaults_keep_the_graph_of_before():
    # the new fields default to the model without latency (benchmarks and old tests use it)
    r = tiny()
    assert (r.shard_per_node, r.units_per_layer, r.rs_per_layer, r.gather_latency_s) == (0, 1, 1, 0.0)
    assert isinstance(r, RankModel)


def _rank(scenario):
    from simulation.parallel import layout
    from simulation.params import model_params
    from simulation.scenario import Scenario
    from simulation.states import state_bytes
    from simulation.step import rank_model, zero3_granularity
    sc = Scenario.from_dict(scenario)
    pc = model_params(sc.model)
    lay = layout(sc)
    sb = state_bytes(sc.training.precision, sc.training.optimizer)
    return sc, pc, rank_model(sc, pc, lay, sb), zero3_granularity(sc, pc, lay.tensor_parallel)


GPT = {"num_layers": 96, "hidden_size": 12288, "num_attention_heads": 96, "ffn_hidden_size": 49152,
       "vocab_size": 51200, "gated_mlp": False, "norm": "layernorm", "linear_bias": True}


def scenario(kind, nodes, tp=1, pp=1, hidden=12288, heads=96):
    return {"model": dict(GPT, hidden_size=hidden, ffn_hidden_size=4 * hidden, num_attention_heads=heads),
            "cluster": {"node": "dgx-a100-80gb", "num_nodes": nodes},
            "training": {"micro_batch_size": 1, "seq_len": 2048, "recompute": "full",
                         "tensor_parallel": tp, "pipeline_parallel": pp},
            "strategy": {"kind": kind}}


def test_deepspeed_granularity_by_hand():
    # GPT 175B block: fused QKV 3h^2, proj h^2, fc1 4h^2, fc2 4h^2 (+ small biases, norms):
    # 4 tensors of ~4.5e8; prefetch ceil(5e7 / 4.5e8) = 1 tensor ahead; reduce-scatter
    # when 5e8 elements collect: ceil(1.81e9 / 5e8) = 4 a layer
    sc, pc, r, (units, ahead, n_rs) = _rank(scenario("zero3", 96))
    assert (units, ahead, n_rs) == (4, 1, 4)
    a = nccl.ring_latency_s("allgather", 768, 96)
    assert r.gather_latency_s == pytest.approx(4 * a) and r.prefetch_depth == 1
    assert r.reduce_latency_s == pytest.approx(4 * a)
    # 530B (h = 20480): 1.26e9 elements a tensor, over stage3_max_live_parameters (1e9):
    # nothing is prefetched
    *_, (units, ahead, n_rs) = _rank(scenario("zero3", 140, hidden=20480, heads=128))
    assert (units, ahead) == (4, 0)
    # FSDP: the block is one flat unit, prefetched one ahead, gathered once for backward
    *_, r, g = _rank(scenario("fsdp_full_shard", 96))
    assert g == (1, 1, 1) and r.gather_latency_s == pytest.approx(a) and r.bwd_fetch_factor == 1.0


def test_deepspeed_gathers_again_what_recomputation_released():
    # 175B, full recompute: in backward the block's forward reruns (qkv, proj, fc1, fc2),
    # then its backward (fc2 .. qkv). Tensor j (4.5e8 each) recurs after 2(3 - j) tensors:
    # j = 0: 2.7e9, j = 1: 1.8e9 >= 1e9 (released, gathered again); j = 2: 9.1e8, j = 3: 0
    # (kept). Half the layer is gathered a third time.
    sc, pc, r, _ = _rank(scenario("zero3", 96))
    assert r.bwd_fetch_factor == 1.5
    no_recompute = scenario("zero3", 96)
    no_recompute["training"]["recompute"] = "selective"
    assert _rank(no_recompute)[2].bwd_fetch_factor == 1.0
    # a 7B-size block (h = 4096: 5e7 a tensor) recurs well within 1e9: nothing released
    assert _rank(scenario("zero3", 4, hidden=4096, heads=32))[2].bwd_fetch_factor == 1.0
    # the backward fetch carries the extra bytes
    base = tiny()
    more = tiny(bwd_fetch_factor=1.5)
    bytes_of = lambda r: sum(simulate(graph_arrays(r, LINKS, False, "python")).link_bytes)   # noqa: E731
    # forward 1e9 B + backward 1e9 B a layer (ring over 2: half of 2e9), two layers; +50 % backward
    assert bytes_of(more) - bytes_of(base) == pytest.approx(2 * 0.5e9)


def test_a_data_parallel_group_of_a_node_filling_tp_is_strided():
    # Megatron tensor 8 x pipeline 12 on 192 DGX A100 nodes: data-parallel 16, one rank a node
    sc, pc, r, _ = _rank(scenario("ddp", 192, tp=8, pp=12))
    assert (r.dp, r.dp_per_node, r.dp_link) == (16, 1, "nic")
    # tensor 2: four data-parallel ranks share each node
    sc, pc, r, _ = _rank(scenario("ddp", 8, tp=2, pp=1, hidden=4096, heads=32))
    assert (r.dp, r.dp_per_node, r.dp_link) == (32, 4, "nic")
    assert r.tp_latency_s == pytest.approx(nccl.ring_latency_s("allreduce", 2, 1))


def test_gradients_are_reduced_in_the_frameworks_dtype():
    # Megatron (and torch DDP under autocast) reduce fp32 gradients with bf16; DeepSpeed
    # ZeRO and FSDP's default mixed precision reduce in the 16-bit dtype
    def grad_bytes(kind, precision):
        sc = scenario(kind, 4, tp=8 if kind == "ddp" else 1)
        sc["training"]["precision"] = precision
        return _rank(sc)[2].grad_bytes
    assert grad_bytes("ddp", "bf16") == 4
    assert grad_bytes("ddp", "fp16") == 2
    assert grad_bytes("zero3", "bf16") == 2 and grad_bytes("fsdp_full_shard", "bf16") == 2
