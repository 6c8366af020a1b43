"""The comparison's memory verdict, step-time band and CSV bytes, from reports written by hand.

A newcomer's comparison said "Fits in every tier: yes" for a run whose report had
``fit_state: "tight"`` (the run page: "Tight … it may not fit"); its "error band" for a
17.33 s step was 23.35–25.45 s with nothing saying why it does not contain the step; and the
CSV wrote 70638308659.2 bytes.
"""

import csv
import io

from tierlab.dashboard.exports import comparison_csv
from tierlab.dashboard.table import band_note, comparison_table, output_rows

# A tight run: fits (fits is "fits or tight", simulation/report.py) but within the ±10 % memory
# band of the HBM capacity; its step's band from a kind whose every measured step was 35–47 %
# longer than predicted (simulation/errormodel.py: error_rel [0.347, 0.469]).
TIGHT = {"fits": True, "fit_state": "tight", "violations": [],
         "memory": {"band": 0.1, "per_gpu": {"hbm": {"total_bytes": 70638308659.2}}},
         "step": {"time_s": 17.33, "time_band_s": [23.35, 25.45],
                  "band": {"label": "tensor + pipeline", "on": "A100", "error_rel": [0.347, 0.469]}}}
FITS = {"fits": True, "fit_state": "fits", "violations": [],
        "memory": {"band": 0.1, "per_gpu": {"hbm": {"total_bytes": 50e9}}}}
OOM = {"fits": False, "fit_state": "does_not_fit", "violations": [{"tier": "hbm"}],
       "memory": {"per_gpu": {"hbm": {"total_bytes": 90e9}}}}
OLD = {"fits": True, "memory": {"per_gpu": {"hbm": {"total_bytes": 1e9}}}}     # before fit_state


def rows(reports):
    return {r["key"]: r for r in output_rows(reports)}


def test_a_tight_run_reads_tight_never_a_plain_fits():
    out = rows([FITS, TIGHT, OOM, OLD])
    assert "fits" not in out                                 # no yes/no row that calls tight "yes"
    verdict = out["fit_state"]
    assert verdict["unit"] == "fit_state" and verdict["label"].startswith("Memory verdict")
    assert verdict["values"] == ["fits", "tight", "does_not_fit", "fits"]
    # the run page's headlines (frontend/src/report.ts verdict)
    assert verdict["labels"] == ["Fits: every tier has room",
                                 "Tight: within the engine's ±10 % memory error — it may not fit",
                                 "Does not fit: 1 tier over capacity", "Fits: every tier has room"]
    assert verdict["best"] == [0, 3]                         # fits beats tight beats does not fit
    assert rows([TIGHT, OOM])["fit_state"]["best"] == [0]


def test_the_step_band_is_named_for_what_it_is_with_a_note_on_why_it_misses_the_estimate():
    out = rows([TIGHT])
    assert out["step.time_band_s.0"]["label"] == "Step time, measured-run band low"
    assert out["step.time_band_s.1"]["label"] == "Step time, measured-run band high"
    assert out["step.time_band_s.0"]["values"] == [23.35]
    # 0.347 -> 35 %, 0.469 -> 47 %: the run page's stepBandText words (frontend/src/step.ts)
    assert out["step.band_note"]["values"] == [
        "measured runs of this kind took 35 % to 47 % longer (tensor + pipeline on A100)"]
    assert band_note({"step": {"band": {"label": "ddp", "on": None, "error_rel": [-0.3, -0.1]}}}) == \
        "measured runs of this kind took 10 % to 30 % less (ddp)"
    assert band_note({"step": {"band": {"label": "ddp", "error_rel": [-0.12, 0.12]}}}) == \
        "measured runs of this kind: ±12 % (ddp)"
    assert band_note({"step": {"band": {"label": "ddp", "error_rel": [-0.12, 0.24]}}}) == \
        "measured runs of this kind: −12 % to +24 % (ddp)"
    assert band_note(FITS) is None


def test_the_csv_writes_the_verdict_in_words_and_bytes_as_integers():
    payload = {"items": [{"position": 0, "name": "a", "status": "succeeded"},
                         {"position": 1, "name": "b", "status": "succeeded"}],
               "table": comparison_table([{"memory_bytes": 1.5}, {"memory_bytes": 2.0}], [TIGHT, FITS])}
    by_key = {r[1]: r for r in csv.reader(io.StringIO(comparison_csv(payload)))}
    assert "fits" not in by_key
    assert by_key["fit_state"][5:] == ["Tight: within the engine's ±10 % memory error — it may not fit",
                                       "Fits: every tier has room"]
    assert by_key["memory.per_gpu.hbm.total_bytes"][5:] == ["70638308659", "50000000000"]
    assert by_key["memory_bytes"][5:] == ["2", "2"]          # inputs in bytes too (round half to even)
    assert by_key["step.time_s"][5] == "17.33"               # other numbers as they are
