"""The host and the NVLink (scale-up) domain as two properties of a cluster (issue #15,
GB200 NVL72): ``cluster.nvlink_domain_gpus`` decides which link a group's collectives
cross (collectives.group_span), the host (``gpus_per_node``) keeps its DDR, NIC, host
link and price. Every figure below is worked out by hand from the sources named in
simulation/presets.py (NVIDIA GB200 NVL72 specifications; NCCL src/graph/tuning.cc for the
latencies, as simulation/collectives.py quotes them)."""

import pytest

from simulation import collectives as nccl
from simulation import presets
from simulation.errors import ScenarioError
from simulation.evaluate import evaluate_dict
from simulation.params import count_params
from simulation.parallel import layout
from simulation.scenario import Scenario, resolve
from simulation.states import state_bytes
from simulation.step import links_for, pipeline_p2p_bytes, rank_model

GB = 1e9
US = 1e-6
GIB = 2**30


def _sc(cluster: dict, **training) -> Scenario:
    tr = {"micro_batch_size": 1, "seq_len": 4096, "recompute": "full", **training}
    return Scenario.from_dict(resolve({"model": "llama2-70b", "cluster": cluster, "training": tr,
                                       "strategy": {"kind": "zero1"}}))


def _rank(sc: Scenario):
    pc, lay = count_params(sc.model), layout(sc)
    return rank_model(sc, pc, lay, state_bytes(sc.training.precision, sc.training.optimizer))


def test_the_template_is_one_tray_of_four_gpus_in_a_72_gpu_nvlink_domain():
    c = _sc({"node": "gb200-nvl72", "num_nodes": 18}).cluster
    assert (c.gpus_per_node, c.nvlink_domain_gpus, c.num_gpus) == (4, 72, 72)
    acc = c.accelerator
    # NVIDIA GB200 NVL72 specifications, rack totals over 72 GPUs:
    # FP16/BF16 360 PFLOPS with sparsity -> 180 dense -> 2.5 PFLOP/s a GPU
    assert acc.peak_flops_bf16 == pytest.approx(360e15 / 2 / 72)
    # 576 TB/s HBM3e -> 8 TB/s; NVLink 130 TB/s -> 1.8 TB/s both ways, 900 GB/s each way
    assert acc.hbm_bytes_per_s == pytest.approx(576e12 / 72)
    assert acc.scaleup_bytes_per_s == pytest.approx(130e12 / 72 / 2, rel=0.005)   # 72 x 1.8 = 129.6
    # NVLink-C2C 900 GB/s both ways = 450 each way, shared by a Grace's 2 GPUs
    assert acc.host_link_bytes_per_s == pytest.approx(900 * GB / 2 / 2)
    # Grace LPDDR5X: 17 TB at 18.4 TB/s over 36 Grace -> 480 GB, 512 GB/s; 2 a tray
    ddr = c.tiers["ddr"]
    assert ddr.capacity_bytes == pytest.approx(2 * 480 * GB)
    assert 36 * 480 * GB == pytest.approx(17e12, rel=0.02)
    assert ddr.read_bytes_per_s == pytest.approx(2 * 512 * GB)
    assert 36 * 512 * GB == pytest.approx(18.4e12, rel=0.002)
    # its own accelerator row: not the HGX B200's (2.25 PFLOP/s, 180 GB, PCIe host link)
    b200 = presets.ACCELERATORS["b200-sxm-180gb"]
    assert acc.peak_flops_bf16 > b200["peak_flops_bf16"]
    assert acc.host_link_bytes_per_s > 4 * b200["host_link_bytes_per_s"]


def test_the_domain_is_absent_from_json_at_its_default_and_joins_whole_hosts():
    dgx = _sc({"node": "dgx-h100", "num_nodes": 2})
    assert "nvlink_domain_gpus" not in dgx.cluster.to_dict()
    assert dgx.cluster.domain_gpus == 8
    same = _sc({"node": "dgx-h100", "num_nodes": 2, "nvlink_domain_gpus": 8})
    assert same.cluster.to_dict() == dgx.cluster.to_dict()
    nvl = _sc({"node": "gb200-nvl72", "num_nodes": 18})
    assert nvl.cluster.to_dict()["nvlink_domain_gpus"] == 72
    with pytest.raises(ScenarioError) as e:
        _sc({"node": "gb200-nvl72", "num_nodes": 18, "nvlink_domain_gpus": 70})
    assert e.value.field == "cluster.nvlink_domain_gpus" and "multiple" in str(e.value)
    with pytest.raises(ScenarioError) as e:
        _sc({"node": "gb200-nvl72", "num_nodes": 18, "nvlink_domain_gpus": 0})
    assert e.value.field == "cluster.nvlink_domain_gpus"


def test_tp8_over_two_trays_stays_on_nvlink():
    """TP 8 spans 2 hosts of 4 but one NVLink domain: its all-reduce is an NVLink ring.
    NCCL latency (Simple), one node: 8.4 us + 2(8 - 1) x 3.4 us = 56.0 us. Taken as two
    nodes (the host as the domain, as before) it would be (8.4 + 12 x 3.4 + 2 x 14) x
    1.4 = 108.08 us on the NIC."""
    sc = _sc({"node": "gb200-nvl72", "num_nodes": 18}, tensor_parallel=8, global_batch_size=9)
    r = _rank(sc)
    assert r.tp_latency_s == pytest.approx(8.4 * US + 14 * 3.4 * US)
    assert r.tp_allreduce_factor > 0          # NVLS inside the domain
    assert r.gpus_per_node == 72
    # the same TP on hosts that are their own domains crosses the NIC
    own = _sc({"node": "gb200-nvl72", "num_nodes": 18, "nvlink_domain_gpus": 4},
              tensor_parallel=8, global_batch_size=9)
    assert _rank(own).tp_latency_s == pytest.approx((8.4 + 12 * 3.4 + 2 * 14) * 1.4 * US)
    assert _rank(own).tp_allreduce_factor == 0


def test_data_parallel_groups_cross_racks_with_nine_ranks_a_rack():
    """144 GPUs (2 racks), TP 8: a data-parallel group has 18 ranks 8 apart, 72 / 8 = 9 in
    each rack, so 2 domains; its ring makes 8 NVLink hops and one NIC hop per rack.
    On DGX B200 (8-GPU hosts) the same group has 1 rank a host and 18 nodes."""
    nvl = _rank(_sc({"node": "gb200-nvl72", "num_nodes": 36}, tensor_parallel=8,
                    global_batch_size=18))
    assert (nvl.dp, nvl.dp_per_node, nvl.dp_link) == (18, 9, "nic")
    # alpha: 8.4 + (34 - 2) x 3.4 + 2 x 14 us, x 1.4 (multi-node ring all-reduce)
    assert nccl.ring_latency_s("allreduce", 18, 2) == pytest.approx((8.4 + 32 * 3.4 + 28) * 1.4 * US)
    dgx = _rank(_sc({"node": "dgx-b200", "num_nodes": 18}, tensor_parallel=8, global_batch_size=18))
    assert (dgx.dp, dgx.dp_per_node, dgx.dp_link) == (18, 1, "nic")
    # one rack, TP 8, DP 9: the whole data-parallel group inside the domain, on NVLink
    one = _rank(_sc({"node": "gb200-nvl72", "num_nodes": 18}, tensor_parallel=8,
                    global_batch_size=9))
    assert (one.dp, one.dp_link) == (9, "nvlink")


def test_a_64_gpu_all_reduce_in_one_rack_vs_across_eight_dgx_b200():
    """All-reduce of 1 GiB over 64 GPUs (network_efficiency 0.8 on every link).

    GB200 NVL72, 16 trays of one rack: one NVLink domain, NVLS: bytes 2 x 63/64 x 2^30 x
    370/480 = 1.6295e9 at 0.8 x 900 GB/s = 720 GB/s -> 2.2632 ms, alpha 8.4 + 126 x 3.4
    = 436.8 us: 2.700 ms.
    DGX B200 x 8: 8 GPUs a node on 8 nodes; bus min(720 x 8/7, 0.8 x 50 x 8 = 320 GB/s) =
    320 GB/s; ring bytes 2 x 63/64 x 2^30 = 2.1139e9 -> 6.606 ms, alpha (8.4 + 112 x 3.4 +
    14 x 14) x 1.4 = 819.3 us: 7.425 ms (the tree: 148.4 us + 2 x 2^30 / 0.92 / 320 GB/s =
    7.443 ms, slower, so NCCL's model keeps the ring)."""
    S = GIB
    nvl = _sc({"node": "gb200-nvl72", "num_nodes": 16}, global_batch_size=64)
    k, domains = nccl.group_span(64, 1, nvl.cluster)
    assert (k, domains) == (64, 1)
    bus = links_for(nvl, layout(nvl))["nvlink"]
    assert bus == pytest.approx(720 * GB)
    t_nvl = nccl.collective_time_s("allreduce", S, 64, domains, bus, nvls=nvl.cluster.nvls)
    assert t_nvl == pytest.approx(436.8 * US + 2 * 63 / 64 * S * 370 / 480 / (720 * GB))
    assert t_nvl == pytest.approx(2.700e-3, rel=1e-3)

    dgx = _sc({"node": "dgx-b200", "num_nodes": 8}, global_batch_size=64)
    k, domains = nccl.group_span(64, 1, dgx.cluster)
    assert (k, domains) == (8, 8)
    links = links_for(dgx, layout(dgx))
    bus = nccl.bus_bandwidth(k, True, links["nvlink"], links["nic"])
    assert bus == pytest.approx(320 * GB)
    t_dgx = nccl.collective_time_s("allreduce", S, 64, domains, bus, nvls=dgx.cluster.nvls)
    assert t_dgx == pytest.approx((8.4 + 112 * 3.4 + 196) * 1.4 * US + 2 * 63 / 64 * S / (320 * GB))
    assert t_dgx == pytest.approx(7.425e-3, rel=1e-3)


def test_pipeline_neighbours_cross_the_nic_only_between_racks():
    """144 GPUs, TP 4: with PP 2 the stages are 72 ranks apart, one rack each: the
    activations (2 b s h / t bytes a rank, twice a micro-batch) cross the NIC; with PP 4
    they are 36 apart, inside a rack: NVLink (as hosts of 4 they crossed the NIC)."""
    act = 2 * 1 * 4096 * 8192 / 4
    pp2 = _sc({"node": "gb200-nvl72", "num_nodes": 36}, tensor_parallel=4, pipeline_parallel=2,
              global_batch_size=18, sequence_parallel=True)
    assert pipeline_p2p_bytes(pp2, layout(pp2)) == {"nic": pytest.approx(2 * act)}
    pp4 = _sc({"node": "gb200-nvl72", "num_nodes": 36}, tensor_parallel=4, pipeline_parallel=4,
              global_batch_size=9, sequence_parallel=True)
    assert pipeline_p2p_bytes(pp4, layout(pp4)) == {"nvlink": pytest.approx(2 * act)}


def test_host_resources_stay_per_tray_and_offload_runs_at_the_c2c_rate():
    """A rank's share of its host: NIC 4 x 400 Gb/s / 4 GPUs x 0.8 = 40 GB/s; LPDDR5X
    2 x 512 / 4 = 256 GB/s; host link 225 GB/s each way (C2C), against DGX B200's PCIe
    Gen5 55.4 GB/s: the same optimizer offload moves its bytes 225 / 55.4 = 4.06x faster."""
    sc = _sc({"node": "gb200-nvl72", "num_nodes": 18}, global_batch_size=72)
    links = links_for(sc, layout(sc))
    assert links["nic"] == pytest.approx(4 * 50 * GB / 4 * 0.8)
    assert links["ddr"] == pytest.approx(2 * 512 * GB / 4)
    assert links["pcie_h2d"] == links["pcie_d2h"] == pytest.approx(225 * GB)
    spec = {"model": "llama2-7b", "training": {"micro_batch_size": 1, "seq_len": 4096,
                                               "recompute": "full", "global_batch_size": 8},
            "strategy": {"kind": "zero_offload", "offload_optimizer": "cpu"}}
    nvl = evaluate_dict({**spec, "cluster": {"node": "gb200-nvl72", "num_nodes": 2}})
    dgx = evaluate_dict({**spec, "cluster": {"node": "dgx-b200", "num_nodes": 1}})

    def h2d(r):
        return next(x for x in r["links"] if x["name"] == "pcie_h2d")

    a, b = h2d(nvl), h2d(dgx)
    assert a["bytes"] == pytest.approx(b["bytes"])        # the same bytes a rank moves
    assert a["busy_s"] == pytest.approx(b["busy_s"] * 55.4 / 225, rel=1e-6)


def test_price_is_per_tray_hour_and_a_slice_of_a_tray_keeps_the_rack_domain():
    """CoreWeave: $42.00 an hour for a 4-GPU GB200 instance (one tray): 2 racks = 36
    trays = $1,512 an hour, $10.50 a GPU-hour. Two GPUs of a tray: half its LPDDR5X and
    NIC (host_share proportional), half its price, still in the 72-GPU domain."""
    r = evaluate_dict({"model": "llama2-7b", "cluster": {"node": "gb200-nvl72", "num_nodes": 36},
                       "training": {"micro_batch_size": 1, "seq_len": 4096, "recompute": "full",
                                    "global_batch_size": 144}})
    assert r["cost"]["usd_per_hour"] == pytest.approx(36 * 42.0)
    assert r["cost"]["usd_per_gpu_hour"] == pytest.approx(10.5)
    half = _sc({"node": "gb200-nvl72", "num_nodes": 36, "gpus_per_node": 2}, global_batch_size=72)
    c = half.cluster
    assert c.price_usd_per_node_hour == pytest.approx(21.0)
    assert c.tiers["ddr"].capacity_bytes == pytest.approx(480 * GB)
    assert c.nic_bytes_per_s == pytest.approx(100 * GB)
    assert c.domain_gpus == 72


def test_v100_refuses_bf16_naming_training_precision():
    spec = {"model": "llama3.2-1b", "cluster": {"node": "dgx-2-v100"},
            "training": {"micro_batch_size": 1, "global_batch_size": 16, "seq_len": 1024,
                         "recompute": "full"}}
    with pytest.raises(ScenarioError) as e:
        evaluate_dict(spec)           # precision defaults to bf16
    assert e.value.field == "training.precision" and "fp16" in str(e.value)
    spec["training"]["precision"] = "fp16"
    assert evaluate_dict(spec)["step"]["time_s"] > 0


def test_hsdp_replicas_inside_a_rack_all_reduce_over_nvlink():
    """HSDP with shard groups of 8 on one rack (TP 1, DP 72): 9 replicas 8 apart, all 9 in
    the domain, so the all-reduce across replicas runs on NVLink, alpha 8.4 + 16 x 3.4 =
    62.8 us; on hosts of 4 as their own domains the replicas are 8 apart on 9 hosts: one
    a host, on the NIC, alpha (8.4 + (16 - 16) x 3.4 + 16 x 14) x 1.4 = 325.36 us."""
    def rank(**cluster):
        sc = Scenario.from_dict(resolve({
            "model": "llama2-7b", "cluster": {"node": "gb200-nvl72", "num_nodes": 18, **cluster},
            "training": {"micro_batch_size": 1, "seq_len": 4096, "recompute": "full",
                         "global_batch_size": 72},
            "strategy": {"kind": "fsdp_hybrid_shard", "shard_group_size": 8}}))
        return _rank(sc)

    r = rank()
    assert (r.replicas, r.replica_link, r.replica_per_node) == (9, "nvlink", 9)
    assert r.replica_latency_s == pytest.approx((8.4 + 16 * 3.4) * US)
    own = rank(nvlink_domain_gpus=4)
    assert (own.replicas, own.replica_link, own.replica_per_node) == (9, "nic", 1)
    assert own.replica_latency_s == pytest.approx((8.4 + 16 * 14) * 1.4 * US)
    # the step graph carries it: the C builder and the Python one agree
    sc = Scenario.from_dict(resolve({
        "model": "llama2-7b", "cluster": {"node": "gb200-nvl72", "num_nodes": 18},
        "training": {"micro_batch_size": 1, "seq_len": 4096, "recompute": "full",
                     "global_batch_size": 72},
        "strategy": {"kind": "fsdp_hybrid_shard", "shard_group_size": 8}}))
    rep = evaluate_dict(sc.to_dict())
    nic = next((x for x in rep["links"] if x["name"] == "nic"), None)
    assert nic is None or nic["bytes"] == 0


def test_the_exports_say_what_they_leave_out_about_the_domain():
    from simulation.export import deepspeed_config, fsdp_snippet
    nvl = _sc({"node": "gb200-nvl72", "num_nodes": 18}, global_batch_size=72)
    ds = deepspeed_config(nvl)
    assert any("NVLink domain of 72 GPUs across 18 hosts" in n for n in ds["_tierlab_notes"])
    assert "--nproc_per_node 4" in " ".join(ds["_tierlab_notes"])
    assert "multi-node NVLink" in fsdp_snippet(nvl).replace("\n", " ").replace("#", "").replace("  ", " ")
    dgx = _sc({"node": "dgx-b200", "num_nodes": 2}, global_batch_size=16)
    assert not any("NVLink domain" in n for n in deepspeed_config(dgx).get("_tierlab_notes", []))


def test_a_tp_degree_that_splits_the_rack_is_noted():
    """TP 16 on 2 racks of 72: groups 64..79 and 136..151 straddle two racks (72 % 16 = 8)."""
    r = evaluate_dict({"model": "llama2-70b", "cluster": {"node": "gb200-nvl72", "num_nodes": 36},
                       "training": {"micro_batch_size": 1, "seq_len": 4096, "recompute": "full",
                                    "tensor_parallel": 16, "global_batch_size": 9}},
                      include_step=False)
    assert any("tensor_parallel 16 does not divide the 72-GPU NVLink domain" in n for n in r["notes"])
    ok = evaluate_dict({"model": "llama2-70b", "cluster": {"node": "gb200-nvl72", "num_nodes": 36},
                        "training": {"micro_batch_size": 1, "seq_len": 4096, "recompute": "full",
                                     "tensor_parallel": 8, "global_batch_size": 18}},
                       include_step=False)
    assert not any("does not divide" in n for n in ok["notes"])
