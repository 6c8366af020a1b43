"""Offload hardware: CPU-Adam as compute, NVMe drives that reads and writes share.

Hand calculations, each with its source:

* CPU-Adam rate: Ren et al., ZeRO-Offload (USENIX ATC'21) Table 3: 10e9 parameters in
  2.57 s on 2 x 24 AVX-512 cores (DGX-2's 2x Xeon Platinum 8168) = 8.106e7 parameters
  per second per core; AVX2 (8 fp32 lanes, DeepSpeed csrc/includes/simd.h) half that.
* Cores: DGX H100 2 x 56 (Xeon Platinum 8480C), DGX A100 2 x 64 (EPYC 7742, AVX2).
* DDR: DGX H100 2 sockets x 8 channels DDR5-4800 = 614.4 GB/s; DGX A100 2 x 204.8 GB/s.
* NVMe: Kioxia CM6-class U.2 drives, 6.9 GB/s read and 4.2 GB/s write each.
"""

import pytest

from simulation import evaluate_dict
from simulation.errors import ScenarioError
from simulation.scenario import Scenario
from simulation.scheduler import simulate
from simulation.stepgraph import RankModel, graph_arrays

LLAMA2_7B_PARAMS = 6_738_415_616      # Touvron et al. 2023, released config (simulation presets)
PER_CORE_AVX512 = 10e9 / 2.57 / 48    # Ren et al. 2021 Table 3


def offload(node="dgx-h100", gpus=1, strategy=None, cluster=None):
    c = {"node": node, "gpus_per_node": gpus, **(cluster or {})}
    return evaluate_dict({"model": "llama2-7b", "cluster": c, "training": {"global_batch_size": 1},
                          "strategy": {"kind": "zero_offload", "offload_optimizer": "cpu", **(strategy or {})}})


def adam_seconds(r):
    return sum(t["end_s"] - t["start_s"] for t in r["timeline"]["tasks"] if "CPU Adam" in t["name"])


def test_cpu_adam_on_one_h100_is_bound_by_its_cores():
    """One GPU of a DGX H100 (host_share proportional): 112 / 8 = 14 cores and 614.4 / 8 =
    76.8 GB/s of DDR. Cores: 14 x 8.106e7 = 1.1349e9 parameters/s; DDR: 76.8e9 / 30 B =
    2.56e9/s. The cores bind: 6.7384e9 / 1.1349e9 = 5.9375 s. (DDR only, the old model:
    6.7384e9 x 30 / 76.8e9 = 2.632 s.)"""
    r = offload()
    want = LLAMA2_7B_PARAMS / (14 * PER_CORE_AVX512)
    assert want == pytest.approx(5.9375, rel=1e-4)
    assert adam_seconds(r) == pytest.approx(want, rel=1e-9)
    s = r["step"]["cpu_optimizer"]
    assert s["bound"] == "cpu_adam" and s["cores_per_gpu"] == 14
    assert s["ddr_params_per_s"] == pytest.approx(2.56e9)
    v = r["verdict"]
    assert v["bottleneck"] == "cpu_optimizer" and v["cpu_optimizer_bound"] == "cpu_adam"
    assert "CPU-Adam-bound" in v["message"] and "14 cores per GPU" in v["message"]
    assert v["buy_more_of"] == "cpu_adam"
    assert {l["name"]: l["bytes_per_s"] for l in r["links"]}["cpu_adam"] == pytest.approx(
        14 * PER_CORE_AVX512 * 30)


def test_slow_ddr_binds_instead_and_the_verdict_says_so():
    """The same one-GPU host given DDR of 2.5 GB/s (a tier the scenario sets is not scaled)
    feeds 2.5e9 / 30 = 8.33e7 parameters/s, less than the cores' 1.1349e9: DDR-bound,
    6.7384e9 x 30 / 2.5e9 = 80.86 s."""
    r = offload(cluster={"host_share": "proportional",
                         "tiers": {"ddr": {"read_bytes_per_s": 2.5e9, "write_bytes_per_s": 2.5e9}}})
    assert adam_seconds(r) == pytest.approx(LLAMA2_7B_PARAMS * 30 / 2.5e9, rel=1e-9)
    v = r["verdict"]
    assert v["cpu_optimizer_bound"] == "ddr" and "DDR-bound" in v["message"]
    assert v["buy_more_of"] == "ddr"


def test_an_avx2_host_updates_half_as_fast_per_core():
    """One GPU of a DGX A100: 128 / 8 = 16 EPYC 7742 cores with AVX2 (8 lanes): 16 x 8.106e7
    / 2 = 6.485e8 parameters/s, under the DDR share 409.6e9 / 8 / 30 = 1.7067e9/s:
    6.7384e9 / 6.485e8 = 10.39 s."""
    r = offload(node="dgx-a100-80gb")
    want = LLAMA2_7B_PARAMS / (16 * PER_CORE_AVX512 / 2)
    assert want == pytest.approx(10.391, rel=1e-3)
    assert adam_seconds(r) == pytest.approx(want, rel=1e-9)
    assert r["step"]["cpu_optimizer"]["isa"] == "avx2"


def test_the_optimizer_may_be_given_fewer_cores():
    """``strategy.cpu_optimizer_cores_per_gpu`` 7: half of the 14, twice the time."""
    r = offload(strategy={"cpu_optimizer_cores_per_gpu": 7})
    assert adam_seconds(r) == pytest.approx(LLAMA2_7B_PARAMS / (7 * PER_CORE_AVX512), rel=1e-9)


def test_more_cores_than_the_node_has_is_a_clear_error():
    with pytest.raises(ScenarioError, match="strategy.cpu_optimizer_cores_per_gpu"):
        offload(gpus=8, strategy={"cpu_optimizer_cores_per_gpu": 15})


def test_a_node_without_a_core_count_keeps_ddr_only():
    """A custom cluster that gives no cpu_cores: CPU-Adam at the DDR share (30 B a
    parameter), and the summary says compute was not modelled."""
    acc = {"preset": "h100-sxm5-80gb"}
    r = evaluate_dict({"model": "llama2-7b", "training": {"global_batch_size": 1},
                       "cluster": {"accelerator": acc, "gpus_per_node": 1, "tiers": {"ddr": {
                           "capacity_bytes": 2e12, "read_bytes_per_s": 76.8e9,
                           "write_bytes_per_s": 76.8e9}}},
                       "strategy": {"kind": "zero_offload", "offload_optimizer": "cpu"}})
    assert adam_seconds(r) == pytest.approx(LLAMA2_7B_PARAMS * 30 / 76.8e9, rel=1e-9)
    assert r["step"]["cpu_optimizer"]["compute_params_per_s"] is None
    assert "cpu_adam" not in {l["name"] for l in r["links"]}


def test_host_share_scales_the_cores():
    sc = Scenario.from_dict({"model": "llama2-7b", "cluster": {"node": "dgx-h100", "gpus_per_node": 2}})
    assert sc.cluster.cpu_cores == 28
    whole = Scenario.from_dict({"model": "llama2-7b", "cluster": {"node": "dgx-h100", "gpus_per_node": 2,
                                                                  "host_share": "whole"}})
    assert whole.cluster.cpu_cores == 112
    assert Scenario.from_dict(sc.to_dict()).cluster.cpu_cores == 28       # round trip


def _nvme_optimizer_only(write_weight):
    """No layers: only the optimizer step, its states on NVMe, two sub-groups of 0.5e9."""
    return RankModel(layers=0, fwd_s=0.0, bwd_s=0.0, head_s=0.0, unit_params=0.0,
                     params_per_rank=1e9 + 1, param_bytes=2, grad_bytes=2, optimizer_state_bytes=12,
                     shard=1, shard_link="nvlink", replicas=1, dp=1, dp_link="nvlink",
                     gpus_per_node=1, stage=2, tp=1, tp_bytes=0.0, bwd_allreduces=2,
                     act_ckpt_bytes=0.0, offload_params="none", offload_optimizer="nvme",
                     offload_activations="none", prefetch_depth=1, miss_rate=0.0,
                     hbm_bytes_per_s=3e12, nvme_write_weight=write_weight)


@pytest.mark.parametrize("engine", ["python", "c"])
def test_nvme_optimizer_reads_and_writes_share_the_drive(engine):
    """Optimizer states (12 B a parameter) of 1e9 parameters in two sub-groups of 0.5e9
    (6e9 B each), read with their fp32 gradients (4 B a parameter: 8e9 B a sub-group,
    DeepSpeed's swap_in_optimizer_state), drive 6 GB/s read, 4 GB/s write (write weight
    1.5), CPU-Adam and DDR so fast they take ~1e-5 s, PCIe 1 GB/s.

    read0 [0, 4/3]; then write0 (after Adam 0) and read1 share the drive: each at x with
    x + 1.5 x = 6e9, x = 2.4e9 B/s; write0 (6e9 B) ends at 4/3 + 2.5, read1's last 2e9 B
    run alone at 6e9 B/s to 4/3 + 2.5 + 1/3 = 25/6 s; Adam 1; then write1 alone 6e9 / 4e9
    = 1.5 s and the updated 16-bit parameters to the GPU, 2e9 B at 1e9 B/s, -> 25/6 + 2 =
    37/6 s. With separate read and write channels (the old model) read1 would end at 8/3 s."""
    links = {"pcie_h2d": 1e9, "pcie_d2h": 1e9, "nvlink": 1e12, "nic": 1e12, "ddr": 1e16,
             "nvme_read": 6e9, "nvme_write": 4e9, "nvme": 6e9, "cpu_adam": 1e16}
    a = graph_arrays(_nvme_optimizer_only(1.5), links, True, engine)
    s = simulate(a, engine)
    assert s.makespan_s == pytest.approx(37 / 6, rel=1e-4)
    nvme = a["links"].index("nvme")
    # the drive's time: 16e9 B read / 6e9 + 12e9 B written / 4e9 = 8/3 + 3 s
    assert s.link_busy_s[nvme] == pytest.approx(8 / 3 + 3, rel=1e-4)
    assert s.link_bytes[nvme] == pytest.approx(16e9 + 1.5 * 12e9, rel=1e-9)


def test_zero_infinity_nvme_wall_adds_read_and_write_times():
    """70B with optimizer and parameters on one node's NVMe: the verdict's floor is the
    drives' read time plus their write time (they share each drive), not the longer one."""
    r = evaluate_dict({"model": "llama2-70b", "cluster": {"node": "dgx-h100"},
                       "training": {"global_batch_size": 8}, "strategy": {"kind": "zero_infinity"}})
    rows = {l["name"]: l for l in r["links"]}
    read_b, write_b = rows["nvme_read"]["bytes"] * 8, rows["nvme_write"]["bytes"] * 8
    floor = read_b / (8 * 6.9e9) + write_b / (8 * 4.2e9)
    assert f"at least {floor:.3g} s" in r["verdict"]["message"]
    # the drives were busy at least that long
    assert rows["nvme"]["busy_s"] >= floor * (1 - 1e-6)


def _optimizer_on_cpu_only():
    """No layers: the CPU optimizer step of 1e9 parameters and their 16-bit copy back."""
    return RankModel(layers=0, fwd_s=0.0, bwd_s=0.0, head_s=0.0, unit_params=0.0,
                     params_per_rank=1e9, param_bytes=2, grad_bytes=2, optimizer_state_bytes=12,
                     shard=1, shard_link="nvlink", replicas=1, dp=1, dp_link="nvlink",
                     gpus_per_node=2, stage=2, tp=1, tp_bytes=0.0, bwd_allreduces=2,
                     act_ckpt_bytes=0.0, offload_params="none", offload_optimizer="cpu",
                     offload_activations="none", prefetch_depth=1, miss_rate=0.0,
                     hbm_bytes_per_s=3e12)


@pytest.mark.parametrize("engine", ["python", "c"])
def test_two_gpus_behind_one_pcie_switch_share_its_uplink(engine):
    """DGX A100: two A100s behind each PCIe Gen4 switch, one x16 uplink (~25 GB/s) to the
    CPU. The updated 16-bit parameters, 1e9 x 2 B, go to each GPU at once: alone on its
    own x16 link 2e9 / 25e9 = 0.08 s; sharing the uplink, 12.5e9 B/s each: 0.16 s.
    (CPU-Adam over DDR and cores of 1e16 B/s takes 3e-6 s before it.)"""
    links = {"pcie_h2d": 25e9, "pcie_d2h": 25e9, "nvlink": 1e12, "nic": 1e12, "ddr": 1e16,
             "cpu_adam": 1e16}
    alone = simulate(graph_arrays(_optimizer_on_cpu_only(), links, True, engine), engine)
    assert alone.makespan_s == pytest.approx(0.08 + 3e-6, rel=1e-9)
    switched = dict(links, pcie_switch_up=12.5e9, pcie_switch_down=12.5e9)
    a = graph_arrays(_optimizer_on_cpu_only(), switched, True, engine)
    s = simulate(a, engine)
    assert s.makespan_s == pytest.approx(0.16 + 3e-6, rel=1e-9)
    assert s.link_bytes[a["links"].index("pcie_switch_down")] == pytest.approx(2e9)
    assert s.link_bytes[a["links"].index("pcie_switch_up")] == 0.0


def test_dgx_a100_zero_offload_copies_parameters_at_half_the_host_link():
    """Llama-2-7B, ZeRO-Offload on a whole DGX A100: each rank's 6.7384e9 / 8 parameters
    come back as 2 B each, 1.6846e9 B, over its half of the switch uplink, 25e9 / 2:
    0.13477 s. A DGX H100 template gives no PCIe topology: no switch links there."""
    r = evaluate_dict({"model": "llama2-7b", "cluster": {"node": "dgx-a100-80gb"},
                       "training": {"global_batch_size": 8},
                       "strategy": {"kind": "zero_offload", "offload_optimizer": "cpu"}})
    rows = {l["name"]: l for l in r["links"]}
    assert rows["pcie_switch_down"]["bytes_per_s"] == 12.5e9 == rows["pcie_switch_up"]["bytes_per_s"]
    copy = [t for t in r["timeline"]["tasks"] if t["name"] == "updated parameters to GPU"]
    assert copy[0]["end_s"] - copy[0]["start_s"] == pytest.approx(LLAMA2_7B_PARAMS / 8 * 2 / 12.5e9, rel=1e-9)
    h100 = evaluate_dict({"model": "llama2-7b", "cluster": {"node": "dgx-h100"},
                          "training": {"global_batch_size": 8}, "strategy": {"kind": "zero_offload"}})
    assert not {"pcie_switch_up", "pcie_switch_down"} & {l["name"] for l in h100["links"]}


@pytest.mark.parametrize("engine", ["python", "c"])
def test_zero_infinity_swaps_fp32_gradients_with_the_optimizer_states(engine):
    """DeepSpeed ZeRO-3 with the optimizer on NVMe writes each reduced gradient partition
    in fp32 to the drives (stage3.py partition_grads -> optimizer_swapper.swap_out_gradients)
    and reads it back with the states (swap_in_optimizer_state -> _swap_in_gradients).
    4 layers of 1e8 parameters sharded over 8 ranks, 4e8 / 8 = 5e7 parameters a rank in one
    sub-group: written 5e7 x (12 states + 4 gradient) B, read the same; without NVMe (the
    optimizer in DDR) nothing reaches the drives."""
    import dataclasses
    base = dataclasses.replace(_nvme_optimizer_only(1.0), layers=4, fwd_s=1e-3, bwd_s=2e-3,
                               unit_params=1e8, params_per_rank=4e8, shard=8, dp=8, stage=3)
    links = {"pcie_h2d": 25e9, "pcie_d2h": 25e9, "nvlink": 360e9, "nic": 40e9, "ddr": 100e9,
             "nvme_read": 6e9, "nvme_write": 4e9, "nvme": 6e9, "cpu_adam": 1e12}
    s = simulate(graph_arrays(base, links, True, engine), engine)
    a = graph_arrays(base, links, True, engine)
    by = dict(zip(a["links"], s.link_bytes))
    assert by["nvme_write"] == pytest.approx(5e7 * (12 + 4), rel=1e-12)
    assert by["nvme_read"] == pytest.approx(5e7 * (12 + 4), rel=1e-12)
    cpu = dataclasses.replace(base, offload_optimizer="cpu")
    a = graph_arrays(cpu, links, True, engine)
    by = dict(zip(a["links"], simulate(a, engine).link_bytes))
    assert by.get("nvme_write", 0.0) == 0.0
