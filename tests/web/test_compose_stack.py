"""docker-compose.yml's web and worker services, run as written, without containers.

No Docker engine runs here, so the stack is started the way compose would start it minus
the containers: each service's ``command`` through ``sh -c`` with the compose environment
substituted as ``docker compose`` does (``tests/web/test_compose.py``), pointed at this
test's database and broker instead of the ``postgres`` and ``redis`` containers and at a
free port instead of 8000. Then both healthchecks run as written, and a run posted
through the API is completed by the worker. What stays untested is the image build
(Dockerfile) and the container network.
"""

import os
import socket
import subprocess
import sys
import time
import uuid
from pathlib import Path

import httpx
import pytest
from django.conf import settings

from tests.processes import Proc, database_url, free_port
from tests.web.test_compose import SERVICES, substitute

pytestmark = pytest.mark.django_db(transaction=True)
ROOT = Path(__file__).resolve().parents[2]


def stack_env(port: int, queue: str) -> dict:
    host = {"SECRET_KEY": "compose-" + "Zq8w" * 12}
    # A container's environment: the compose file's, nothing of this test process's
    # (browser tests set DJANGO_ALLOW_ASYNC_UNSAFE, which check --deploy rightly refuses).
    env = {k: os.environ[k] for k in ("HOME", "LANG", "LC_ALL", "TMPDIR") if k in os.environ}
    env.update({name: substitute(str(v), host) for name, v in SERVICES["web"]["environment"].items()})
    # The containers' addresses become this test's; the rest is the compose environment.
    env.update(DATABASE_URL=database_url(), CELERY_BROKER_URL=settings.CELERY_BROKER_URL,
               TIERLAB_RUN_QUEUE=queue, HOSTNAME=socket.gethostname(), PYTHONUNBUFFERED="1",
               WEB_CONCURRENCY="2", PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}")
    if settings.CELERY_BROKER_URL.startswith("filesystem://"):
        env["CELERY_BROKER_DIR"] = str(settings.BROKER_DIR)
    return env


def command(service: str, port: int) -> list[str]:
    """The service's command, ``$$`` unescaped and 0.0.0.0:8000 moved to a free loopback port."""
    cmd = [substitute(part, {}) for part in SERVICES[service]["command"]]
    return [part.replace("0.0.0.0:8000", f"127.0.0.1:{port}") for part in cmd]


def healthcheck(service: str, env: dict, port: int) -> subprocess.CompletedProcess:
    test = SERVICES[service]["healthcheck"]["test"]
    kind, args = test[0], [substitute(a, {}).replace("127.0.0.1:8000", f"127.0.0.1:{port}") for a in test[1:]]
    argv = ["sh", "-c", args[0]] if kind == "CMD-SHELL" else args
    return subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)


def wait_healthy(service, env, port, proc, timeout=180.0):
    deadline = time.monotonic() + timeout
    while True:
        result = healthcheck(service, env, port)
        if result.returncode == 0:
            return
        if not proc.alive() or time.monotonic() > deadline:
            raise AssertionError(f"{service} never became healthy: {result.stderr[-1500:]}\n{proc.log()[-4000:]}")
        time.sleep(1)


def test_web_and_worker_commands_serve_and_complete_a_run(tmp_path, owner, example_spec):
    from rest_framework.authtoken.models import Token

    port, queue = free_port(), f"compose-{uuid.uuid4().hex[:8]}"
    env = stack_env(port, queue)
    web = Proc("web", command("web", port), env, tmp_path / "web.log")
    worker = None
    try:
        wait_healthy("web", env, port, web)           # check --deploy, migrate, collectstatic, ...
        worker = Proc("worker", command("worker", port), env, tmp_path / "worker.log")
        worker.wait_for_log(" ready.", timeout=90)
        wait_healthy("worker", env, port, worker, timeout=90)
        log = web.log()
        for step in ("Operations to perform", "static file",
                     "Using worker: gthread", "Listening at: http://127.0.0.1"):
            assert step in log, f"{step!r} not in the web log:\n{log[-3000:]}"

        token = Token.objects.create(user=owner)
        with httpx.Client(base_url=f"http://127.0.0.1:{port}",
                          headers={"Authorization": f"Token {token.key}"}, timeout=30) as api:
            assert api.get("/api/v1/catalog/models/").status_code == 200     # load_catalog ran
            r = api.post("/api/v1/scenarios/", json={"name": "compose", "scenario": example_spec})
            assert r.status_code == 201, r.text
            r = api.post(f"/api/v1/scenarios/{r.json()['id']}/runs/", json={})
            assert r.status_code in (201, 202), r.text
            run_url = f"/api/v1/runs/{r.json()['id']}/"
            deadline = time.monotonic() + 120
            while (run := api.get(run_url).json())["status"] not in ("succeeded", "failed"):
                assert time.monotonic() < deadline, run
                time.sleep(0.3)
        assert run["status"] == "succeeded", run
        assert run["worker"].startswith("worker@")
    finally:
        for proc in (worker, web):
            if proc is not None:
                proc.stop()
