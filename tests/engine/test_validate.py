"""``python -m simulation validate`` prints the fit table README publishes."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_validate_prints_the_fit_table_and_passes_on_the_reference_cases():
    out = subprocess.run([sys.executable, "-m", "simulation", "validate"], cwd=ROOT,
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "| oom-07c | OOM | does_not_fit | hbm |" in out.stdout
    assert "| oom-15b | OOM | does_not_fit | ddr, hbm |" in out.stdout
    assert "verdicts match what was observed" in out.stdout
    assert "caught only by tight" in out.stdout


def test_validate_says_where_the_data_is_missing(tmp_path):
    out = subprocess.run([sys.executable, "-m", "simulation", "validate", "--data", str(tmp_path)],
                         cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert out.returncode == 2 and "not found" in out.stdout
