"""``python -m simulation evaluate``: the report as JSON, written the way it always was."""

import io
import json
import subprocess
import sys

from simulation import evaluate_dict
from simulation.__main__ import main

SCENARIO = {"model": {"preset": "llama2-7b"}, "cluster": {"node": "dgx-h100", "gpus_per_node": 1}}


def test_evaluate_prints_the_detailed_report_as_json_dump_would(tmp_path, monkeypatch):
    path = tmp_path / "s.json"
    path.write_text(json.dumps(SCENARIO))
    out = io.StringIO()
    monkeypatch.setattr(sys, "stdout", out)
    assert main(["evaluate", str(path), "--indent", "1"]) == 0
    want = io.StringIO()
    json.dump(evaluate_dict(SCENARIO), want, indent=1)      # how it was written before #17
    assert out.getvalue() == want.getvalue() + "\n"
    assert json.loads(out.getvalue())["timeline"]["tasks"]


def test_evaluate_loads_neither_statistics_nor_numpy_ma(tmp_path):
    """Start-up: an evaluation needs numpy and numpy.random (the step's arrays, the
    checkpoint Monte-Carlo), not what only the calibration (statistics) or
    np.percentile (numpy.ma, through np.unique) load."""
    path = tmp_path / "s.json"
    path.write_text(json.dumps(SCENARIO))
    code = ("import sys; from simulation.__main__ import main; import io, contextlib\n"
            f"with contextlib.redirect_stdout(io.StringIO()): main(['evaluate', {str(path)!r}])\n"
            "print(sorted(m for m in ('statistics', 'numpy.ma', 'numpy.random') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split("\n")[-2] == "['numpy.random']"
