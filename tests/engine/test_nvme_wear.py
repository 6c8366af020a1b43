"""NVMe wear of an offload to NVMe (expert review: ZeRO-Infinity's NVMe writes against the
drives' rated endurance, which no earlier report said)."""

import pytest

from simulation import evaluate_dict
from simulation.evaluate import nvme_wear
from simulation.scenario import Scenario

INFINITY = {"model": {"preset": "llama2-70b"}, "cluster": {"node": "dgx-h100-cxl", "num_nodes": 1},
            "training": {"micro_batch_size": 1, "global_batch_size": 16, "seq_len": 4096,
                         "recompute": "full", "flash_attention": True},
            "strategy": {"kind": "zero_infinity", "offload_optimizer": "nvme", "offload_params": "nvme"}}


def test_zero_infinity_on_nvme_wears_the_drives_out_in_weeks():
    # by hand from the report's own figures: the step writes nvme_write bytes per GPU, 8 GPUs
    # a node, 86,400 / step_s steps a day; the node's 8 x 3.84 TB drives at 1 drive write a
    # day (assumed: the catalog's Kioxia CM6 3.84 TB is the line's 1-DWPD model) are rated
    # for 30.72 TB a day, 5 years of it in all
    r = evaluate_dict(INFINITY)
    step_s = r["step"]["time_s"]
    per_gpu = next(x for x in r["links"] if x["name"] == "nvme_write")["bytes"]
    written = per_gpu * 8 * 86400 / step_s
    assert written / 1e15 == pytest.approx(1.52, abs=0.01)          # about 1.5 PB a day
    w = nvme_wear(Scenario.from_dict(INFINITY), r["links"], step_s)
    assert w["written_bytes_per_day"] == pytest.approx(written)
    assert w["rated_bytes_per_day"] == pytest.approx(8 * 3.84e12) and w["assumed"]
    assert w["days_to_rated_endurance"] == pytest.approx(8 * 3.84e12 * 365.25 * 5 / written)
    assert 30 < w["days_to_rated_endurance"] < 45
    (note,) = [n for n in r["notes"] if n.startswith("NVMe wear")]
    assert "49x" in note and "assumed: set cluster.tiers.nvme.drive_writes_per_day" in note


def test_stated_endurance_is_used_and_no_note_without_nvme_writes():
    d = {**INFINITY, "cluster": {**INFINITY["cluster"], "tiers": {"nvme": {"drive_writes_per_day": 3}}}}
    r = evaluate_dict(d)
    w = nvme_wear(Scenario.from_dict(d), r["links"], r["step"]["time_s"])
    assert w["drive_writes_per_day"] == 3 and not w["assumed"]
    assert w["rated_bytes_per_day"] == pytest.approx(3 * 8 * 3.84e12)
    cpu = {**INFINITY, "strategy": {"kind": "zero_infinity", "offload_optimizer": "cpu", "offload_params": "cpu"}}
    r = evaluate_dict(cpu)
    assert not [n for n in r["notes"] if n.startswith("NVMe wear")]
    assert nvme_wear(Scenario.from_dict(cpu), r["links"], r["step"]["time_s"]) is None
