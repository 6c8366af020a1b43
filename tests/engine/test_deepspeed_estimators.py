"""DeepSpeed 0.19.8's estimate_zero2/3_model_states_mem_needs, reproduced.

These are DeepSpeed's own figures (model states only; CPU figure with its 1.5 buffer
factor), shown in reports as ``cross_checks.deepspeed_estimator``.
"""

import pytest

from simulation import evaluate_dict
from simulation.estimators import deepspeed_estimate
from tests.refdata import assert_close, cases, ids

ALL = cases("deepspeed_estimators")
GRID = [c for c in ALL if "cpu_bytes" in c["expected"]]
ROWS = [c for c in ALL if "rows" in c["expected"]]
GIB = 2**30


def run(inp, legacy=False, **over):
    kw = dict(stage=inp["stage"], total_params=inp["total_params"],
              largest_layer_params=inp.get("largest_layer_params", 0),
              gpus_per_node=inp["num_gpus_per_node"], num_nodes=inp["num_nodes"],
              offload_optimizer=inp.get("offload_optimizer") == "cpu",
              offload_params=inp.get("offload_param") == "cpu",
              zero_init=bool(inp.get("zero_init", 1)),
              additional_buffer_factor=inp.get("additional_buffer_factor", 1.5),
              legacy_zero2=legacy)
    kw.update(over)
    return deepspeed_estimate(**kw)


@pytest.mark.parametrize("case", GRID, ids=ids(GRID))
def test_grid_bytes(case):
    got = run(case["inputs"])
    for k in ("gpu_bytes", "cpu_bytes", "largest_layer_memory_bytes"):
        if k in case["expected"]:
            assert_close(got[k], case["expected"][k], case["tolerance"], f"{case['id']} {k}")
    assert round(got["gpu_bytes"] / GIB, 2) == case["expected"]["gpu_printed_gib"]


@pytest.mark.parametrize("case", ROWS, ids=ids(ROWS))
def test_printed_doc_tables(case):
    inp = case["inputs"]
    for row in case["expected"]["rows"]:
        got = run(inp, offload_optimizer=row["offload_optimizer"] == "cpu",
                  offload_params=row["offload_param"] == "cpu", zero_init=bool(row["zero_init"]))
        assert round(got["gpu_bytes"] / GIB, 2) == pytest.approx(row["gpu"], abs=0.011)
        assert round(got["cpu_bytes"] / GIB, 2) == pytest.approx(row["cpu"], abs=0.011)


def test_zero2_docs_legacy_and_current_formula():
    case = [c for c in ALL if c["id"] == "ds_doc_t5_3b_z2_live_offnone"][0]
    inp, exp = case["inputs"], case["expected"]
    assert round(run(inp, legacy=True)["gpu_bytes"] / GIB, 2) == exp["gpu_printed_gib"]
    assert round(run(inp)["gpu_bytes"] / GIB, 2) == exp["gpu_printed_gib_current_code"]


def test_t5_large_mib_cases():
    case = [c for c in ALL if c["id"] == "ds_doc_t5_large_cases_4gpu"][0]
    inp, exp = case["inputs"], case["expected"]
    base = dict(stage=3, total_params=inp["total_params"],
                largest_layer_params=inp["largest_layer_params"], gpus_per_node=4, num_nodes=1)
    mib = lambda d: int(d["gpu_bytes"]) >> 20
    assert mib(deepspeed_estimate(**base, offload_optimizer=False)) == exp["case1_none_none_gpu_mib"]
    assert mib(deepspeed_estimate(**base, offload_optimizer=True, offload_params=True)) == exp["case2_cpu_cpu_gpu_mib"]
    assert mib(deepspeed_estimate(**base, offload_optimizer=True)) == exp["case3_none_cpu_gpu_mib"]


def test_report_carries_the_deepspeed_view():
    # Llama-2-7B (largest module = 32000 x 4096 embedding) on 8 GPUs, ZeRO-3, no offload:
    # DeepSpeed says 4 * 131072000 + int(18 * 6738415616 / 8) bytes per GPU.
    r = evaluate_dict({"model": "llama2-7b", "cluster": {"node": "dgx-h100"},
                       "strategy": {"kind": "zero3"}})
    ds = r["cross_checks"]["deepspeed_estimator"]
    assert ds["gpu_bytes"] == 4 * 131072000 + int(18 * 6738415616 / 8)
    assert "model states only" in ds["view"]
