"""Recommendation models through evaluate(): memory per tier, PS vs all-to-all, combined."""

import json

import pytest

from simulation import Report, Scenario, ScenarioError, evaluate, evaluate_dict
from simulation.export import deepspeed_config

DLRM = {"recsys": {"preset": "dlrm-mlperf-v2"}, "cluster": {"node": "dgx-h100", "num_nodes": 2}}


def test_dlrm_alone_reports_tiers_and_designs():
    r = evaluate_dict(DLRM)
    hbm = r["memory"]["per_gpu"]["hbm"]
    emb = r["embedding"]
    # every tier's rows, divided over its devices, is what the memory section shows
    on_hbm = sum(t["bytes"] / t["devices"] for t in emb["tiers"] if t["tier"] == "hbm")
    dense = r["model"]["dense_params"]
    assert hbm["params_bytes"] == pytest.approx(on_hbm + 2 * dense)
    assert hbm["optimizer_bytes"] == pytest.approx(12 * dense)
    assert sum(t["hit_rate"] for t in emb["tiers"]) == pytest.approx(1.0)
    designs = {d["design"]: d for d in r["ps"]["designs"]}
    assert set(designs) == {"parameter_server", "all_to_all"}
    assert r["step"]["time_s"] == pytest.approx(min(d["step_time_s"] for d in designs.values()))
    assert sum(r["step"]["breakdown_s"].values()) == pytest.approx(r["step"]["time_s"])
    assert r["throughput"]["samples_per_s"] == pytest.approx(
        r["parallelism"]["global_batch_size"] / r["step"]["time_s"])


def test_tables_spill_to_ddr_when_hbm_is_small():
    d = json.loads(json.dumps(DLRM))
    d["cluster"]["num_nodes"] = 1
    d["cluster"]["accelerator"] = {"preset": "h100-sxm5-80gb", "hbm_capacity_bytes": 8e9}
    r = evaluate_dict(d)
    tiers = {t["tier"]: t for t in r["embedding"]["tiers"]}
    assert tiers["hbm"]["hit_rate"] < 1 and tiers["ddr"]["rows"] > 0
    assert r["memory"]["per_node"]["ddr"]["params_bytes"] == pytest.approx(tiers["ddr"]["bytes"])


def test_recsys_round_trips_and_needs_a_model_or_recsys():
    sc = Scenario.from_dict(DLRM)
    assert Scenario.from_dict(json.loads(json.dumps(sc.to_dict()))) == sc
    r = evaluate(sc)
    assert Report.from_dict(json.loads(json.dumps(r.to_dict()))) == r
    with pytest.raises(ScenarioError) as e:
        evaluate_dict({"cluster": {"node": "dgx-h100"}})
    assert e.value.field == "model"
    with pytest.raises(ScenarioError) as e:
        deepspeed_config(sc)
    assert e.value.field == "model"


def test_transformer_and_embeddings_together_share_hbm():
    r = evaluate_dict({"model": "llama2-7b", "cluster": {"node": "dgx-h100"},
                       "training": {"recompute": "full"}, "recsys": {"preset": "dlrm-mlperf-v2"}})
    assert r["embedding"]["tiers"] and r["ps"]["designs"]
    hbm_free = r["memory"]["per_gpu"]["hbm"]["free_bytes"]
    hbm_rows = [t for t in r["embedding"]["tiers"] if t["tier"] == "hbm"][0]
    assert hbm_rows["bytes"] / hbm_rows["devices"] <= max(hbm_free, 0) + 1


def test_moe_model_compares_expert_parameter_server_with_all_to_all():
    r = evaluate_dict({"model": "mixtral-8x7b", "cluster": {"node": "dgx-h100", "num_nodes": 2},
                       "training": {"recompute": "full", "seq_len": 4096}})
    designs = {d["design"]: d for d in r["ps"]["designs"]}
    assert set(designs) == {"expert_parameter_server", "expert_all_to_all"}
    # 4096 tokens x top-2 routed per worker touch all 8 experts: each worker pulls and pushes
    # 8 experts x 3 x 4096 x 14336 params x 2 B per layer, 32 layers, 16 workers
    per = 8 * 3 * 4096 * 14336 * 2
    assert designs["expert_parameter_server"]["bytes_on_wire"] == pytest.approx(16 * 32 * 2 * per, rel=1e-3)
    assert r["ps"]["faster"] == "expert_all_to_all"
    dense = evaluate_dict({"model": "llama2-7b", "cluster": {"node": "dgx-h100"}})
    assert dense["ps"] == {}


def test_a_recsys_preset_is_named_by_its_display_name():
    from simulation import evaluate_dict
    r = evaluate_dict({"recsys": {"preset": "dlrm-mlperf-v2"}, "cluster": {"node": "dgx-h100"}},
                      include_step=False)
    assert r["model"]["name"] == "DLRM-DCNv2, MLPerf v2 (Criteo 1TB multi-hot) · recommendation model"
