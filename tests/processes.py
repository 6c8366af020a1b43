"""Real processes for the reliability, scale-out and fuzz tests.

Celery workers, gunicorn and a private ``redis-server``, each a subprocess on loopback with
its log in a file, pointed at the test database (``worker_env``). Every process starts in its
own session, so killing its group takes its children (a prefork pool) with it.
"""

from __future__ import annotations

import copy
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

from django.conf import settings
from django.db import connection

ROOT = Path(__file__).resolve().parent.parent


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def children(pid: int) -> list[int]:
    """Direct children of ``pid`` (from /proc)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            # pid (comm) state ppid ...; comm may contain spaces or parentheses
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                found.append(int(entry.name))
    return found


class Proc:
    """A subprocess with its output in a log file."""

    stop_signal = signal.SIGTERM

    def __init__(self, name: str, cmd: list[str], env: dict, log_path: Path, cwd=ROOT):
        self.name, self.cmd, self.log_path = name, cmd, log_path
        with open(log_path, "ab") as log:
            self.popen = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=log,
                                          stderr=subprocess.STDOUT, start_new_session=True)
        self.pid = self.popen.pid

    def log(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def alive(self) -> bool:
        return self.popen.poll() is None

    def wait_for_log(self, text: str, timeout: float = 60.0, after: int = 0):
        deadline = time.monotonic() + timeout
        while text not in self.log()[after:]:
            if not self.alive() or time.monotonic() > deadline:
                raise RuntimeError(f"{self.name} did not log {text!r} (exit {self.popen.poll()}):\n"
                                   f"{self.log()[-5000:]}")
            time.sleep(0.1)

    def kill_group(self, sig=signal.SIGKILL):
        """Like pulling the plug: the process and all its children at once."""
        try:
            os.killpg(self.pid, sig)
        except ProcessLookupError:
            pass
        self.popen.wait(timeout=30)

    def stop(self, timeout: float = 20.0):
        if not self.alive():
            return
        self.popen.send_signal(self.stop_signal)
        try:
            self.popen.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.kill_group()
        else:
            try:                     # leftover pool processes, if any
                os.killpg(self.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass


def database_url() -> str:
    from tests.conftest import _database_url

    return _database_url(connection.settings_dict)


def worker_env(queue: str, **extra) -> dict:
    """The environment of a subprocess that shares this test's database and broker."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("TIERLAB_TEST_")}
    env.update(DATABASE_URL=database_url(), TIERLAB_RUN_QUEUE=queue, PYTHONUNBUFFERED="1",
               DJANGO_SETTINGS_MODULE="tierlab.settings")
    if settings.CELERY_BROKER_URL.startswith("filesystem://"):
        env["CELERY_BROKER_DIR"] = str(settings.BROKER_DIR)
    # rate limits off (tests/conftest.py's _no_rate_limits), unless ``extra`` sets one
    env.update({f"THROTTLE_{scope.upper()}_RATE": "off" for scope in settings.TIERLAB_THROTTLE_RATES})
    env.update({k: str(v) for k, v in extra.items()})
    return env


def start_worker(tmp: Path, queue: str, name: str, *, env: dict | None = None, pool="prefork",
                 concurrency=1) -> Proc:
    """``celery -A tierlab worker`` named ``name@<host>`` on ``queue``; returns once ready."""
    cmd = [sys.executable, "-m", "celery", "-A", "tierlab", "worker", "--pool", pool,
           "--concurrency", str(concurrency), "--prefetch-multiplier", "1", "--loglevel", "info",
           "--queues", queue, "--hostname", f"{name}@%h",
           "--without-gossip", "--without-mingle", "--without-heartbeat"]
    proc = Proc(f"worker {name}", cmd, env or worker_env(queue), tmp / f"worker-{name}.log")
    proc.stop_signal = signal.SIGQUIT             # cold shutdown: tests do not wait for runs
    proc.hostname = f"{name}@{socket.gethostname()}"
    proc.wait_for_log(" ready.")
    return proc


def start_gunicorn(tmp: Path, env: dict, workers: int = 1, extra: list[str] = ()) -> Proc:
    """gunicorn serving tierlab on a free loopback port; ``.url`` once /healthz answers."""
    port = free_port()
    cmd = [sys.executable, "-m", "gunicorn", "tierlab.wsgi", "--bind", f"127.0.0.1:{port}",
           "--workers", str(workers), "--access-logfile", "-", *extra]
    proc = Proc("gunicorn", cmd, env, tmp / f"gunicorn-{port}.log")
    proc.url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while True:
        try:
            urllib.request.urlopen(proc.url + "/healthz", timeout=5)
            return proc
        except urllib.error.HTTPError:
            return proc                     # it answers (503: the broker may be down on purpose)
        except OSError:
            if not proc.alive() or time.monotonic() > deadline:
                raise RuntimeError(f"gunicorn did not start:\n{proc.log()[-5000:]}") from None
            time.sleep(0.2)


REDIS_SERVER = shutil.which("redis-server")


def start_redis(data_dir: Path, port: int, persist: bool = True) -> Proc:
    """A private redis-server whose append-only file (fsync always) survives a SIGKILL;
    ``persist=False``: no file at all, so a restart loses every queued message."""
    data_dir.mkdir(parents=True, exist_ok=True)
    cmd = [REDIS_SERVER, "--port", str(port), "--bind", "127.0.0.1", "--save", "",
           "--appendonly", "yes" if persist else "no", "--appendfsync", "always", "--dir", str(data_dir)]
    proc = Proc(f"redis:{port}", cmd, dict(os.environ), data_dir / "redis.log")
    deadline = time.monotonic() + 30
    while True:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1) as sock:
                sock.sendall(b"PING\r\n")
                if sock.recv(64).startswith(b"+PONG"):
                    return proc
        except OSError:
            pass
        if not proc.alive() or time.monotonic() > deadline:
            raise RuntimeError(f"redis-server did not start:\n{proc.log()[-3000:]}")
        time.sleep(0.1)


# ---------------------------------------------------------------- runs
def spec_variant(example_spec, i: int) -> dict:
    """Distinct inputs, so no run reuses another's stored result."""
    spec = copy.deepcopy(example_spec)
    spec["training"]["seq_len"] = 512 * (i + 1)
    return spec


def new_run(owner, spec, name="fault"):
    from tierlab.scenarios import services
    from tierlab.scenarios.models import Scenario

    return services.start_run(Scenario.objects.create(owner=owner, name=name, spec=spec))


def wait_status(run_id, statuses, timeout=60.0, sweep=False):
    """Poll the Run row until its status is one of ``statuses``; ``sweep`` also applies the
    stale-run sweep that every read through the API does."""
    from tierlab.scenarios import services
    from tierlab.scenarios.models import Run

    deadline = time.monotonic() + timeout
    while True:
        if sweep:
            services.fail_stale_runs()
        run = Run.objects.get(pk=run_id)
        if run.status in statuses:
            return run
        if time.monotonic() > deadline:
            raise AssertionError(f"run {run_id} still {run.status} after {timeout} s "
                                 f"(attempts {run.attempts}, error {run.error!r})")
        time.sleep(0.1)
