"""Ctrl-C of ``scripts/start``: honcho sends SIGTERM and gives the worker 5 s before a
SIGKILL (honcho.manager.KILL_WAIT). An idle worker of the SQLite mode (filesystem broker)
took 4.3-6.6 s, so honcho often had to kill it: Celery's loop for a polling transport waited
out ``drain_events(timeout=2.0)`` before it saw the shutdown, the timer thread slept up to
1 s, and the Procfile's shell stood between honcho and the worker. Now it stops in about 2 s
(tierlab.fs_transport, CELERY_WORKER_TIMER_PRECISION, ``exec`` in the Procfile)."""

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import ROOT

BIN = Path(sys.executable).parent
# honcho's KILL_WAIT is 5 s; the worker must be well inside it (it took over 4 s before)
WITHIN_S = 4.0


@pytest.mark.skipif(not (BIN / "honcho").exists(), reason="honcho is scripts/start's process manager")
def test_an_idle_worker_stops_on_ctrl_c_of_scripts_start_before_honcho_kills_it(tmp_path):
    env = {k: v for k, v in os.environ.items()
           if k not in ("DATABASE_URL", "CELERY_BROKER_URL", "CELERY_BROKER_DIR")}
    env.update(PATH=f"{BIN}{os.pathsep}{env.get('PATH', '')}", PYTHONPATH=str(ROOT),
               TIERLAB_VAR_DIR=str(tmp_path / "var"), TIERLAB_RUN_QUEUE=f"stop-{os.getpid()}",
               PYTHONUNBUFFERED="1")
    log = tmp_path / "honcho.log"
    with open(log, "wb") as out:
        honcho = subprocess.Popen([str(BIN / "honcho"), "start", "-f", str(ROOT / "Procfile"), "worker"],
                                  cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT,
                                  start_new_session=True)
    try:
        deadline = time.monotonic() + 90
        while " ready." not in log.read_text(errors="replace"):
            assert honcho.poll() is None and time.monotonic() < deadline, log.read_text()[-3000:]
            time.sleep(0.2)
        time.sleep(2)                                  # idle, between polls
        start = time.monotonic()
        honcho.send_signal(signal.SIGINT)              # Ctrl-C reaches honcho
        honcho.wait(timeout=30)
        took = time.monotonic() - start
        text = log.read_text(errors="replace")
        assert "SIGKILL" not in text, text[-3000:]
        assert "worker.1 stopped (rc=0)" in text, text[-3000:]   # the worker, not a shell, exited
        assert took < WITHIN_S, f"{took:.1f} s\n{text[-3000:]}"
    finally:
        if honcho.poll() is None:
            os.killpg(honcho.pid, signal.SIGKILL)
        shutil.rmtree(tmp_path / "var", ignore_errors=True)
