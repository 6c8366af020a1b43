"""The machines of issues #14 and #15: consumer and workstation GPUs, H800/A800, MI325X,
V100 and their node templates resolve, evaluate (memory and step) and carry the datasheet
figures, checked here by hand against the sources named in simulation/presets.py."""

import pytest

from simulation import presets
from simulation.evaluate import evaluate_dict
from simulation.scenario import Scenario, resolve

GB = 1e9

NEW_ACCELERATORS = ["rtx3090-24gb", "rtx4090-24gb", "rtx6000-ada-48gb", "l40s-48gb",
                    "h800-sxm5-80gb", "a800-sxm4-80gb", "mi325x-256gb", "v100-sxm2-32gb",
                    "b200-gb200-186gb"]
NEW_NODES = ["rtx3090-workstation", "rtx3090-nvlink-pair", "rtx4090-workstation",
             "rtx6000-ada-workstation", "l40s-1gpu", "l40s-8gpu-server", "a100-40gb-1gpu",
             "mi300x-8gpu", "mi325x-8gpu", "hgx-h800", "hgx-a800", "dgx-2-v100", "gb200-nvl72"]


def _scenario(cluster: dict, precision: str = "bf16") -> dict:
    return {"model": "llama3.2-1b", "cluster": cluster,
            "training": {"micro_batch_size": 1, "global_batch_size": 16, "seq_len": 1024,
                         "precision": precision, "recompute": "full"},
            "strategy": {"kind": "zero3"}}


@pytest.mark.parametrize("node", NEW_NODES)
def test_each_new_node_template_resolves_and_evaluates(node):
    sc = _scenario({"node": node}, "fp16" if "v100" in node else "bf16")
    c = Scenario.from_dict(resolve(sc)).cluster
    tpl = presets.NODES[node]
    assert c.gpus_per_node == tpl["gpus_per_node"] and c.node_name == tpl["name"]
    r = evaluate_dict(sc)
    assert r["fits"] is True
    assert r["memory"]["per_gpu"]["hbm"]["capacity_bytes"] == pytest.approx(c.accelerator.hbm_capacity_bytes)
    assert r["step"]["available"] and r["step"]["time_s"] > 0


@pytest.mark.parametrize("acc", NEW_ACCELERATORS)
def test_each_new_accelerator_is_usable_as_cluster_accelerator(acc):
    sc = _scenario({"accelerator": acc, "gpus_per_node": 2, "num_nodes": 1},
                   "fp16" if acc.startswith("v100") else "bf16")
    c = Scenario.from_dict(resolve(sc)).cluster
    assert c.accelerator.preset == acc and c.accelerator.source
    r = evaluate_dict(sc)
    assert r["memory"]["per_gpu"]["hbm"]["total_bytes"] > 0 and r["step"]["time_s"] > 0


def test_geforce_bf16_peaks_are_the_fp32_accumulate_rates():
    acc = presets.ACCELERATORS
    # Ada whitepaper (v2.01) Appendix A, GeForce RTX 4090 table: peak BF16 Tensor TFLOPS
    # with FP32 accumulate 165.2, half the headline FP16-accumulate 330.3.
    assert acc["rtx4090-24gb"]["peak_flops_bf16"] == pytest.approx(330.3e12 / 2, rel=1e-3)
    # GA102 whitepaper Appendix A, RTX 3090: 71 with FP32 accumulate, half of 142.
    assert acc["rtx3090-24gb"]["peak_flops_bf16"] == pytest.approx(142e12 / 2)
    # Professional Ada cards run FP32 accumulate at full rate: RTX 6000 Ada, 142 SMs x 512
    # dense FP16 FMAs per SM per clock x 2 FLOPs x 2.505 GHz boost = 364.2 TFLOP/s.
    assert acc["rtx6000-ada-48gb"]["peak_flops_bf16"] == pytest.approx(142 * 512 * 2 * 2.505e9, rel=1e-3)
    # The same count for the 4090 (128 SMs at 2.52 GHz) gives the headline, 330.3.
    assert 128 * 512 * 2 * 2.52e9 == pytest.approx(330.3e12, rel=1e-3)
    assert acc["l40s-48gb"]["peak_flops_bf16"] == pytest.approx(362.05e12)   # L40S datasheet


def test_links_of_the_new_machines():
    acc = presets.ACCELERATORS
    # No NVLink on Ada: scale-up is PCIe 4.0 x16, ~25 GB/s measured each way.
    for a in ("rtx4090-24gb", "rtx6000-ada-48gb", "l40s-48gb"):
        assert acc[a]["scaleup_bytes_per_s"] == pytest.approx(25 * GB)
    # 3090 pair: four x4 NVLink links x 14.0625 GB/s each way (GA102 whitepaper).
    pair = Scenario.from_dict(resolve(_scenario({"node": "rtx3090-nvlink-pair"}))).cluster
    assert pair.accelerator.scaleup_bytes_per_s == pytest.approx(4 * 14.0625 * GB)
    assert acc["rtx3090-24gb"]["scaleup_bytes_per_s"] == pytest.approx(25 * GB)  # no bridge
    # H800 / A800: 400 GB/s bidirectional NVLink = 200 each way; else the H100 / A100.
    for cut, full in (("h800-sxm5-80gb", "h100-sxm5-80gb"), ("a800-sxm4-80gb", "a100-sxm4-80gb")):
        assert acc[cut]["scaleup_bytes_per_s"] == pytest.approx(400 / 2 * GB)
        assert acc[cut]["peak_flops_bf16"] == acc[full]["peak_flops_bf16"]
        assert acc[cut]["hbm_bytes_per_s"] == acc[full]["hbm_bytes_per_s"]
    # MI325X: 7 Infinity Fabric peers x 64 GB/s each way; V100: 6 NVLink 2 links x 25 GB/s.
    assert acc["mi325x-256gb"]["scaleup_bytes_per_s"] == pytest.approx(7 * 64 * GB)
    assert acc["v100-sxm2-32gb"]["scaleup_bytes_per_s"] == pytest.approx(6 * 25 * GB)
    assert presets.NODES["dgx-2-v100"]["gpus_per_node"] == 16


def test_a_layer_on_a_4090_and_a_3090_by_hand():
    # Constant compute model (no measured GEMM figures for GeForce cards): a Llama-3.2-1B
    # layer at 1 x 1024 tokens is 2 * 1024 * (2048 * (32 + 2 * 8) * 64 + 2048 * 2048
    # + 3 * 2048 * 8192) GEMM FLOPs + 4 * 1024^2 * 2048 attention FLOPs = 133.144 GFLOP,
    # at 0.55 of the bf16 peak with FP32 accumulate: 1.4654 ms on a 4090 (165.2 TFLOP/s),
    # 3.4096 ms on a 3090 (71 TFLOP/s).
    flops = 2 * 1024 * (2048 * 48 * 64 + 2048 * 2048 + 3 * 2048 * 8192) + 4 * 1024 ** 2 * 2048
    for node, peak in (("rtx4090-workstation", 165.2e12), ("rtx3090-workstation", 71e12)):
        r = evaluate_dict({"model": "llama3.2-1b", "cluster": {"node": node},
                           "training": {"global_batch_size": 4, "seq_len": 1024}})
        assert r["step"]["compute"]["model"] == "constant"
        assert r["step"]["compute"]["layer_fwd_s"] == pytest.approx(flops / (0.55 * peak), rel=1e-6)


def test_h800_and_a800_use_the_measured_figures_of_their_parent():
    from simulation import compute
    assert compute.GPU_FIGURES["h800-sxm5-80gb"].gemm_flops == compute.GPU_FIGURES["h100-sxm5-80gb"].gemm_flops
    assert compute.GPU_FIGURES["a800-sxm4-80gb"].gemm_flops == compute.GPU_FIGURES["a100-sxm4-80gb"].gemm_flops
    r = evaluate_dict(_scenario({"node": "hgx-h800"}))
    assert r["step"]["compute"]["model"] == "work"


def test_prices_of_the_new_templates():
    # RunPod serverless flex: $0.00031/s for a 4090 = $1.116/h; DGX B200: 8 x $6.03.
    r = evaluate_dict(_scenario({"node": "rtx4090-workstation"}), include_step=False)
    assert r["cost"]["usd_per_hour"] == pytest.approx(0.00031 * 3600)
    b200 = evaluate_dict(_scenario({"node": "dgx-b200", "gpus_per_node": 1}), include_step=False)
    assert b200["cost"]["usd_per_hour"] == pytest.approx(6.03)
    assert evaluate_dict(_scenario({"node": "mi325x-8gpu"}), include_step=False)["cost"]["usd_per_hour"] \
        == pytest.approx(8 * 1.95)
    for node in NEW_NODES:
        tpl = presets.NODES[node]
        assert tpl.get("price_source") or tpl.get("price_usd_per_node_hour") is None
        if tpl.get("price_usd_per_node_hour"):
            assert "http" in tpl["price_source"] and "20" in tpl["price_source"]   # URL and date
