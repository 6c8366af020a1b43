"""README's engine figures, recomputed: every figure README quotes from the engine that takes
at most a few seconds to compute is parsed out of README's text and compared with what the
engine at this commit gives, so an engine change that moves one fails here until README says
the new figure (the audit found a dozen that had drifted: bands, Table 2's TFLOP/s, the
calibration example, DLRM, the planner's message). The Validation section's pasted
``validate`` output is held by ``tests/engine/test_validate.py``; benchmark figures
(``bench/``) are measurements of one machine and are not recomputed.

Where README rounds, the engine's figure is rounded the same way and compared as text."""

import copy
import json
import math
import re
from pathlib import Path

import pytest

from simulation import Scenario, calibrate, cost_bound, errormodel, evaluate_dict, planner, validation
from simulation.presets import ACCELERATORS
from simulation.scenario import _TOP_LEVEL
from tests.refdata import cases

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text()
TEXT = re.sub(r"\s+", " ", README).replace("−", "-")    # one line, ASCII minus
STEPS = {c["id"]: c for c in validation.step_cases(validation.DEFAULT_DATA)}
T1 = {c["id"]: c for c in cases("narayanan_2021_table1")}
SELENE = {"node": "dgx-a100-80gb"}


def pct(x: float, digits: int = 1) -> str:
    """``+7.2 %`` from 0.0723, as README writes a signed error."""
    return f"{x * 100:+.{digits}f} %"


def after(marker: str, pattern: str, text: str = TEXT) -> re.Match:
    """The first match of ``pattern`` after ``marker`` in README (whitespace folded)."""
    assert marker in text, f"README no longer says {marker!r}"
    m = re.search(pattern, text.split(marker, 1)[1])
    assert m, f"README: nothing like {pattern!r} after {marker!r}"
    return m


def table(title_start: str) -> list[list[str]]:
    """The body rows (cells stripped) of the README table whose header starts so."""
    lines = README.splitlines()
    i = next(i for i, line in enumerate(lines) if line.startswith(f"| {title_start}"))
    rows = []
    for line in lines[i + 2:]:
        if not line.startswith("|"):
            break
        rows.append([c.strip() for c in line.strip("|").split("|")])
    return rows


def step_s(spec: dict) -> float:
    return evaluate_dict(spec, detail=False)["step"]["time_s"]


def error(case_id: str, constant: bool = False) -> float:
    c = STEPS[case_id]
    spec = copy.deepcopy(c["scenario"])
    if constant:
        spec.setdefault("training", {})["compute_model"] = "constant"
    return step_s(spec) / c["measured_s"] - 1


# ------------------------------------------------------------------ Engine: step-time tables
def test_narayanan_table1_rows_and_mean():
    rows = table("Narayanan et al. 2021 Table 1")
    ids = [c for c in T1 if c in STEPS]
    assert len(rows) == len(ids) + 1
    work, const = [], []
    for row, case_id in zip(rows, ids):
        w, k = error(case_id), error(case_id, constant=True)
        work.append(abs(w))
        const.append(abs(k))
        assert row[0].startswith(case_id.split("_")[-1].replace("p", ".").removesuffix("B")), (row, case_id)
        assert row[1:] == [pct(w), pct(k)], (case_id, row)
    assert rows[-1] == ["mean absolute error", f"{sum(work) / len(work) * 100:.1f} %",
                        f"{sum(const) / len(const) * 100:.1f} %"]


KORT_SIZES = ["22B", "175B", "530B", "1T"]


def _kort(size: str, constant: bool = False) -> tuple[float, float]:
    """(selective, full) errors of Korthikanti Table 5's runs of one size."""
    return (error(f"kort_t5_e2e_{size}_present_work", constant),
            error(f"kort_t5_e2e_{size}_full_recompute", constant))


def test_korthikanti_table5_rows_and_mean():
    rows = table("Korthikanti et al. 2022 Table 5")
    assert [r[0].split(",")[0] for r in rows[:-1]] == KORT_SIZES
    work, const = [], []
    for row, size in zip(rows, KORT_SIZES):
        w, k = _kort(size), _kort(size, constant=True)
        work += map(abs, w)
        const += map(abs, k)
        assert row[1:] == [" / ".join(map(pct, w)), " / ".join(map(pct, k))], (size, row)
    assert rows[-1] == ["mean absolute error", f"{sum(work) / len(work) * 100:.1f} %",
                        f"{sum(const) / len(const) * 100:.1f} %"]
    n = sum(1 for c in STEPS.values() if c["dataset"] == "korthikanti_2022")
    assert n == 8 == 2 * len(KORT_SIZES)


def test_korthikanti_sentence_of_the_validation_list():
    m = after("Korthikanti Table 5 end-to-end iteration times",
              r"all (\w+) within 10 %, selective / full: (.*?)\);")
    assert m.group(1) == "eight"
    shown = m.group(2)
    expected = ", ".join(f"{size} {pct(s)} / {pct(f)}" for size, (s, f) in
                         ((size, _kort(size)) for size in KORT_SIZES))
    assert shown == expected
    assert all(abs(e) < 0.10 for size in KORT_SIZES for e in _kort(size))


def test_narayanan_table2_zero3_tflops_and_ranking():
    # predicted TFLOP/s per GPU = measured TFLOP/s x measured step / predicted step (the
    # measured step is Eq. 3's FLOPs over the measured rate: the FLOPs cancel)
    t2 = {c["id"]: c for c in cases("narayanan_2021_table2")}
    runs = [f"nar21_t2_zero3_175B_{n}" for n in (384, 768, 1536)]
    predicted = [t2[r]["measured"]["tflops_per_gpu"] * STEPS[r]["measured_s"] / step_s(STEPS[r]["scenario"])
                 for r in runs]
    m = after("per-GPU throughput falls as GPUs double, 175B",
              r"^ (\d+) -> (\d+) -> (\d+) TFLOP/s against a measured (\d+) -> (\d+) -> (\d+),")
    assert [int(g) for g in m.groups()[:3]] == [round(p) for p in predicted]
    assert [int(g) for g in m.groups()[3:]] == [t2[r]["measured"]["tflops_per_gpu"] for r in runs]
    # "PTD-P ranks ahead at every GPU count both were run on": each pair of the same GPUs
    pairs = [(z, z.replace("zero3", "ptdp")) for z in t2 if z.startswith("nar21_t2_zero3")
             and z.replace("zero3", "ptdp") in t2]
    assert len(pairs) == 5
    assert "PTD-P ranks ahead at every GPU count both were run on, 384 to 2,240" in TEXT
    for z, p in pairs:
        assert step_s(STEPS[p]["scenario"]) < step_s(STEPS[z]["scenario"]), (z, p)
    # "the remaining gap, ZeRO-3 predicted 8-29 % fast from 640 GPUs on"
    m = after("the remaining gap, ZeRO-3 predicted", r"^ (\d+)-(\d+) % fast from (\d+) GPUs on")
    from_gpus = int(m.group(3))
    zero3 = {z: error(z) for z, c in STEPS.items() if z.startswith("nar21_t2_zero3")}
    far = [e for z, e in zero3.items() if int(z.rsplit("_", 1)[1]) >= from_gpus]
    near = [e for z, e in zero3.items() if int(z.rsplit("_", 1)[1]) < from_gpus]
    assert all(e < 0 for e in far) and all(abs(e) < -max(far) for e in near)
    assert (int(m.group(1)), int(m.group(2))) == (round(-max(far) * 100), round(-min(far) * 100))


# ------------------------------------------------------------------ Calibrating
def readme_measurements() -> dict:
    """The measurements README's calibration example POSTs (its ``-d`` body), with the step's
    scenario the ``SPEC=`` line reads from the reference data."""
    block = README.split("### Calibrating to your cluster", 1)[1].split("```sh", 1)[1].split("```", 1)[0]
    case_id = re.search(r'c\["id"\] == "(\w+)"', block).group(1)
    (case,) = [c for c in cases("narayanan_2021_table1") if c["id"] == case_id]
    body = re.search(r"-d '(\{\"name\".*?)' \\\n\s*\$API/cluster-profiles/", block, re.S).group(1)
    body = json.loads(body.replace("'\"$SPEC\"'", "null"))
    measurements = body["measurements"]
    measurements["steps"][0]["scenario"] = case["scenario"]
    return measurements


def test_the_calibration_examples_answer():
    fitted = calibrate.fit_profile(readme_measurements(), name="selene")
    step = next(f for f in fitted["fits"] if f["kind"] == "step")
    prof = fitted["profile"]
    m = after("# -> 201", r'"gemm_flops": ([\d.e+]+), "sm_count": (\d+), "network_efficiency": ([\d.]+)')
    assert m.group(1) == f"{prof['gemm_flops']:.3e}".replace("e+", "e")
    assert int(m.group(2)) == prof["sm_count"]
    assert m.group(3) == f"{prof['network_efficiency']:.3f}"
    m = after("# -> 201", r'"measured_step_s": ([\d.]+),.*?"default_step_s": ([\d.]+), "fitted_step_s": ([\d.]+)')
    assert m.groups() == (f"{step['measured_step_s']:.2f}", f"{step['default_step_s']:.2f}",
                          f"{step['fitted_step_s']:.2f}")


def _signed(err: float) -> str:
    """``0.8 % long`` / ``7.6 % short``."""
    return f"{abs(err) * 100:.1f} % {'long' if err > 0 else 'short'}"


@pytest.mark.parametrize("fit_on, predict, words", [
    ("nar21_t1_1p7B", "nar21_t1_3p6B", "3.6B row comes out"),
    ("nar21_t1_18p4B", "nar21_t1_76p1B", "the 76.1B row (1,024 GPUs, 4 interleaved pipeline stages)"),
])
def test_the_calibration_sentences(fit_on, predict, words):
    a, b = T1[fit_on], T1[predict]
    profile = calibrate.fit_profile({"cluster": SELENE, "steps": [
        {"scenario": a["scenario"], "step_s": a["expected_step_time_s"]}]})["profile"]
    measured = b["expected_step_time_s"]
    spec = copy.deepcopy(b["scenario"])
    spec["cluster"] = {**spec["cluster"], "profile": profile}
    fitted, default = step_s(spec) / measured - 1, step_s(b["scenario"]) / measured - 1
    m = after(words, r"^ ([\d.]+ % (?:long|short)) instead of ([\d.]+ % (?:long|short))")
    assert m.groups() == (_signed(fitted), _signed(default))


def test_the_defaults_predict_the_large_pipelined_rows_within():
    m = after("The defaults already predict that table's large pipelined rows (146B to 1T) within",
              r"^ ([\d.]+) %")
    large = [c for c in T1 if float(c.split("_")[-1].removesuffix("B").replace("p", ".")) >= 145]
    assert len(large) == 4
    assert m.group(1) == f"{max(abs(error(c)) for c in large) * 100:.1f}"


# ------------------------------------------------------------------ DLRM
def test_dlrm_mlperf_errors():
    rows = cases("mlperf_dlrm_dcnv2_throughput")

    def err(c):
        i = c["inputs"]
        r = evaluate_dict({"recsys": {"preset": "dlrm-mlperf-v2", "comm_dtype": "fp16", "sample_lookups": 0,
                                      "batch_size": i["global_batch"]},
                           "cluster": {"node": i["node"], "num_nodes": i["num_nodes"]}})
        return r["throughput"]["samples_per_s"] / i["gpus"] / c["expected"]["train_samples_per_s_per_gpu"] - 1

    by_id = {c["id"]: err(c) for c in rows}
    m = after("(`tests/data/reference/mlperf_dlrm_dcnv2_throughput.json`; default settings, one node): DGX H100",
              r"^ (\S+ %) \(v3.0\) and (\S+ %) \(v4.0\), 8x A100 80GB (\S+ %), HGX H200 (\S+ %) ")
    assert m.groups() == tuple(pct(by_id[k]) for k in (
        "mlperf_v3.0_nvidia_1x_dgx_h100", "mlperf_v4.0_nvidia_1x_dgx_h100",
        "mlperf_v3.0_dell_xe9680_8x_a100_80gb", "mlperf_v4.0_nvidia_1x_hgx_h200"))
    multi = [by_id[c["id"]] for c in rows if not c["validated"]]
    assert len(multi) >= 2 and min(multi) > 0
    m = after("are recorded, not asserted: the engine is", r"^ (\d+)–(\d+) % too fast there")
    assert (int(m.group(1)), int(m.group(2))) == (round(min(multi) * 100), round(max(multi) * 100))


# ------------------------------------------------------------------ bands
def _js_round(x: float) -> int:
    return math.floor(x + 0.5)


def _band_text(kind: str, gen: str, time_s: float) -> str:
    """frontend/src/step.ts ``stepBandText``'s text for a band of the recorded error model."""
    rec = errormodel.load()["step_time"]["by_generation"][kind][gen]
    lo, hi = rec["band_rel"]
    where = f"{rec['label']} on {rec['on']}"
    rng = f"{time_s * (1 + lo):.2f} s–{time_s * (1 + hi):.2f} s"
    if lo > 0:
        return f"tierlab's figure; measured runs of this kind took {_js_round(lo * 100)} % to " \
               f"{_js_round(hi * 100)} % longer: {rng}, {where}"
    sign = lambda v: f"{'+' if v > 0 else '-' if v < 0 else '±'}{abs(v)} %"   # noqa: E731
    return f"measured runs of this kind: {rng} ({sign(_js_round(lo * 100))} to {sign(_js_round(hi * 100))}), {where}"


def test_the_band_examples():
    m = after("a ZeRO-3 prediction of", r'^ ([\d.]+) s reads "\1 s \((.*?)\)"')
    assert m.group(2) == _band_text("sharded", "a100", float(m.group(1)))
    m = after("a band that holds the prediction, a tensor + pipeline one of", r'^ ([\d.]+) s, reads "(.*?)"')
    assert m.group(2) == _band_text("tensor_pipeline", "a100", float(m.group(1)))


# ------------------------------------------------------------------ planner
def test_the_planners_alternatives_message_and_candidates():
    block = README.split("### Planner", 1)[1].split("```sh", 1)[1].split("```", 1)[0]
    spec = json.loads(re.search(r"-d '(\{\"spec\".*?\})' \$API/plans/", block, re.S).group(1))["spec"]
    out = planner.plan(spec)
    m = after("Llama-2-70B on 1–4 DGX H100 nodes", r"^ \(([\d,]+) candidates\)")
    assert int(m.group(1).replace(",", "")) == out["candidates"]
    shown = after("`alternatives_message`", r'"(also: .*?)"\)').group(1)
    messages = [t["alternatives_message"] for t in out["top"] if t["alternatives_message"]]
    assert shown == messages[0], messages


# ------------------------------------------------------------------ bounded work
def test_examples_and_dlrm_presets_against_the_request_limit():
    m = after("`ESTIMATE_MAX_WORK_UNITS` (", r"^([\d,]+): every example is under; the DLRM presets only "
              r"memory-only \(about ([\d,]+) work units; with the step about ([\d,]+)")
    limit, memory_only, with_step = (int(g.replace(",", "")) for g in m.groups())
    examples = json.loads((ROOT / "tierlab" / "scenarios" / "examples.json").read_text())
    for e in examples:
        assert cost_bound(Scenario.from_dict(e["scenario"]), include_step=True, detail=False).work_units <= limit
    for preset in ("dlrm-mlperf-v1", "dlrm-mlperf-v2"):
        for nodes in (1, 2):
            sc = Scenario.from_dict({"recsys": {"preset": preset}, "cluster": {"node": "dgx-h100", "num_nodes": nodes}})
            mem = cost_bound(sc, include_step=False, detail=False).work_units
            step = cost_bound(sc, include_step=True, detail=False).work_units
            assert mem <= limit < step
            assert round(mem, -4) == memory_only and round(step, -4) == with_step, (preset, nodes, mem, step)


# ------------------------------------------------------------------ lists README keeps
def test_the_scenario_sections():
    m = after("It takes a scenario (JSON, `\"schema\": 1`: ", r"^(.*?)\) and returns a report")
    assert set(re.findall(r"`(\w+)`", m.group(1))) == set(_TOP_LEVEL) - {"schema"}


def test_the_fp8_peaks():
    m = after("It needs an accelerator with an FP8 peak (`peak_flops_fp8`, dense: ", r"^(.*?) TFLOP/s\)")
    shown = {}
    for part in m.group(1).split(", "):
        names, value = part.rsplit(" ", 1)
        for name in re.split(r"/| and ", names.strip()):
            shown[name] = float(value)
    prefixes = {"H100": "h100-", "H200": "h200-", "H800": "h800-", "B200": "b200-sxm", "GB200": "b200-gb200",
                "MI300X": "mi300x-", "MI325X": "mi325x-", "L40S": "l40s-", "RTX 6000 Ada": "rtx6000-ada",
                "RTX 4090": "rtx4090-"}
    with_fp8 = {k for k, a in ACCELERATORS.items() if a.get("peak_flops_fp8")}
    named = set()
    for name, value in shown.items():
        (key,) = [k for k in ACCELERATORS if k.startswith(prefixes[name])]
        assert ACCELERATORS[key]["peak_flops_fp8"] / 1e12 == pytest.approx(value, abs=0.05), name
        named.add(key)
    assert named == with_fp8, with_fp8 - named


def test_the_recorded_measurement_counts():
    def n(name, keep=lambda c: True):
        data = json.loads((ROOT / "tests" / "data" / name).read_text())
        return sum(1 for c in data["cases"] if keep(c))
    assert f"({n('saved_tensors_hf.json')} recorded CPU measurements in `tests/data/saved_tensors_hf.json`" in TEXT
    assert f"and {n('saved_tensors_hf_mla.json')} of DeepSeek-V3's layer" in TEXT
    fam = "saved_tensors_hf_families.json"
    assert f"and {n(fam, lambda c: '-output-' not in c['id'])} of the other families" in TEXT
    assert f"plus {n(fam, lambda c: '-output-' in c['id'])} output stages" in TEXT
    assert f"and {n('saved_tensors_hf_bloom.json')} of BLOOM's block" in TEXT


# ------------------------------------------------------------------ held-out tables (Validation)
ROWS = {r["id"]: r for r in validation.step_rows(list(STEPS.values()))
        if r["dataset"] in ("megatron_core_h100_2024", "torchtitan_llama3_h100_2024", "nemo_h100_bf16_2026",
                            "megatron_bridge_blackwell_2025", "megatron_bridge_h100_fp8_2025", "bloom_176b_2022")}


def lead(cell: str) -> str:
    """``-18.7 %`` of ``-18.7 % (was -28.0 %)`` or ``+2.2 % (GBS 256)``."""
    return re.match(r"[+-]?[\d.]+ %", cell).group(0)


def shown_error(case_id: str) -> str:
    return pct(ROWS[case_id]["error"])


def test_the_held_out_megatron_core_and_torchtitan_table():
    rows = table("Megatron-Core on H100 (TP, PP)")
    mcore = [i for i in STEPS if STEPS[i]["dataset"] == "megatron_core_h100_2024"]
    titan = [i for i in STEPS if STEPS[i]["dataset"] == "torchtitan_llama3_h100_2024"]
    assert [r[1] for r in rows] == [shown_error(i) for i in mcore]
    assert [r[3] for r in rows if r[3]] == [shown_error(i) for i in titan]


NEMO_ROWS = ["am_llama31_70b_pretrain_64gpu", "am_llama31_8b_lora_1gpu", "am_qwen25_7b_lora_1gpu",
             "am_llama33_70b_lora_8gpu", "am_llama33_70b_lora_16gpu", "am_qwen25_32b_lora_8gpu",
             "am_qwen25_32b_lora_16gpu"]


def test_the_held_out_nemo_table():
    rows = table("NeMo AutoModel on DGX-H100")
    assert sorted(NEMO_ROWS) == sorted(i for i in STEPS if STEPS[i]["dataset"] == "nemo_h100_bf16_2026")
    assert [r[1] for r in rows] == [shown_error(i) for i in NEMO_ROWS]


def test_the_held_out_megatron_bridge_tables():
    rows = table("Megatron-Bridge Llama 3 8B, 8 GPUs")
    got = [[lead(c) for c in r[1:]] for r in rows]
    assert got == [[shown_error(f"mbridge_{gpu}_8b_{recipe}") for recipe in ("fp8cs", "mxfp8")]
                   for gpu in ("b200", "gb200")]
    rows = table("Megatron-Bridge on DGX-H100, FP8")
    for row, size in zip(rows, ("8b", "70b", "405b"), strict=True):
        for cell, (recipe, release) in zip(row[1:], (("fp8", "2509"), ("fp8cs", "2511"), ("fp8", "2602"))):
            case_id = f"mbridge_h100_{size}_{recipe}_{release}"
            assert (lead(cell) if cell else None) == (shown_error(case_id) if case_id in ROWS else None), case_id
    fp8 = [ROWS[i]["error"] for i in ROWS if ROWS[i]["dataset"] == "megatron_bridge_h100_fp8_2025"]
    assert f"Mean |error| {sum(map(abs, fp8)) / len(fp8) * 100:.1f} % (mean {pct(sum(fp8) / len(fp8))[:-2]} %)" in TEXT
    big = [-ROWS[i]["error"] * 100 for i in ROWS if "_405b_" in i]
    assert f"The 405B rows are {min(big):.1f}-{max(big):.1f} % fast" in TEXT


def test_the_held_out_mean_and_bloom():
    errs = [abs(r["error"]) for r in ROWS.values()]
    assert f"Held-out mean |error|: {sum(errs) / len(errs) * 100:.1f} % ({len(errs)} rows)" in TEXT
    assert f"The engine comes out {-ROWS['bloom_176b_iter85376']['error'] * 100:.1f} % fast" in TEXT


def test_the_fp8_gemm_rates():
    from simulation.compute import GPU_FIGURES
    m = after("operands: H100", r"^ ([\d.]+) and H200 ([\d.]+) from 730 .*? B200 (\d+) and GB200 (\d+) from ([\d.]+) "
              r"and ([\d.]+) ")
    h100, h200, b200, gb200, b200_bf16, gb200_bf16 = m.groups()
    fig = {k: GPU_FIGURES[k] for k in ("h100-sxm5-80gb", "h200-sxm-141gb", "b200-sxm-180gb", "b200-gb200-186gb")}
    assert (h100, h200) == (f"{fig['h100-sxm5-80gb'].fp8_gemm_flops / 1e12:.1f}",
                            f"{fig['h200-sxm-141gb'].fp8_gemm_flops / 1e12:.1f}")
    assert (b200, gb200) == (f"{fig['b200-sxm-180gb'].fp8_gemm_flops / 1e12:.0f}",
                             f"{fig['b200-gb200-186gb'].fp8_gemm_flops / 1e12:.0f}")
    assert float(b200_bf16) == pytest.approx(fig["b200-sxm-180gb"].gemm_flops / 1e12, abs=0.05)
    assert float(gb200_bf16) == pytest.approx(fig["b200-gb200-186gb"].gemm_flops / 1e12, abs=0.05)
    m = after("and the HGX B200 at that share of its own MAMF,", r"^ ([\d.]+) × (\d+) / ([\d.]+) = ([\d.]+) TFLOP/s")
    assert float(m.group(4)) == pytest.approx(fig["b200-sxm-180gb"].gemm_flops / 1e12, abs=0.05)
    assert float(m.group(1)) * float(m.group(2)) / float(m.group(3)) == pytest.approx(float(m.group(4)), abs=0.05)


def test_the_single_gpu_lora_rows_memory():
    def hbm(case_id):
        r = evaluate_dict(STEPS[case_id]["scenario"], include_step=False)
        h = r["memory"]["per_gpu"]["hbm"]
        return r["fit_state"], f"{h['total_bytes'] / 2**30:.1f}", f"{h['capacity_bytes'] / 2**30:.1f}"
    state, total, capacity = hbm("am_llama31_8b_lora_1gpu")
    assert state == "tight"
    assert f"the 8B row comes out *tight* on the 80 GB H100 it ran on ({total} GiB reserved of {capacity}" in TEXT
    state, total, _ = hbm("am_qwen25_7b_lora_1gpu")
    assert state == "fits" and f"the 7B row fits ({total} GiB)" in TEXT


def test_the_llama3_405b_8192_gpu_row():
    # Dubey et al. 2024 Table 4 (430 TFLOP/s a GPU); tests/engine/test_context_parallel.py's
    # scenario, at the sustained GEMM rate and at the H100's best-of-sweep 794.5 TFLOP/s
    from tests.engine.test_context_parallel import llama3
    sc = llama3(1, 8192, 64, layers=126, per_dp=32)
    at_peak = sc.to_dict()
    at_peak["cluster"]["accelerator"].update(gemm_flops=794.5e12, sm_count=132)

    def tflops(s):
        st = evaluate_dict(s, detail=False)["step"]
        return st["model_flops"] / st["time_s"] / sc.cluster.num_gpus / 1e12
    sustained, best = tflops(sc.to_dict()), tflops(at_peak)
    m = after("8,192-GPU row of Dubey et al. 2024 Table 4",
              r"^ \((\d+) TFLOP/s a GPU\) comes out at (\d+) \((\S+ %); (\d+), (\S+ %), with the GEMMs at 794.5\)")
    measured = int(m.group(1))
    assert measured == 430
    assert m.groups()[1:] == (f"{sustained:.0f}", pct(sustained / measured - 1), f"{best:.0f}",
                              pct(best / measured - 1))


def test_the_prose_around_the_tables():
    small = [-error(c) * 100 for c in ("nar21_t1_1p7B", "nar21_t1_3p6B", "nar21_t1_7p5B", "nar21_t1_18p4B")]
    assert all(e > 0 for e in small)
    assert f"torch DDP) are still {round(min(small))}-{round(max(small))} % short" in TEXT
    one_gpu = [abs(ROWS[i]["error"]) * 100 for i in ("am_llama31_8b_lora_1gpu", "am_qwen25_7b_lora_1gpu")]
    assert f"The single-GPU LoRA rows are within {max(one_gpu):.1f} %" in TEXT
    m = after("measured MXFP8 is", r"^ ([\d.]+) % \(B200\) and ([\d.]+) % \(GB200\) slower than current "
              r"scaling, the engine has it (\d+) % faster")
    for gpu, shown in (("b200", m.group(1)), ("gb200", m.group(2))):
        cs, mx = ROWS[f"mbridge_{gpu}_8b_fp8cs"], ROWS[f"mbridge_{gpu}_8b_mxfp8"]
        assert shown == f"{(mx['measured_s'] / cs['measured_s'] - 1) * 100:.1f}"
        assert m.group(3) == f"{(1 - mx['predicted_s'] / cs['predicted_s']) * 100:.0f}"
