"""Shared fixtures: named users (owner, teammate, stranger), API clients, the live server URL
and a real Celery worker.

`celery_worker` starts ``celery -A tierlab worker`` as a subprocess (once per session)
pointed at the test database and a queue of its own, so it executes runs created by
tests that commit their rows (``transactional_db`` / ``live_server``).
"""

import json
import os
import subprocess
import sys
import time
import uuid
from pathlib import Path
from urllib.parse import quote

import pytest
from django.conf import settings

ROOT = Path(__file__).resolve().parent.parent
ADMIN_PASSWORD = "admin"
PASSWORD = "correct horse battery staple"


# ---------------------------------------------------------------- users and clients
def _make_user(django_user_model, username, password=PASSWORD, **extra):
    user = django_user_model.objects.create_user(username=username, password=password,
                                                 email=f"{username}@example.com", **extra)
    user.raw_password = password
    return user


@pytest.fixture
def user_admin(django_user_model):
    """Superuser ``admin`` with password ``admin`` (``.raw_password``), like seed's."""
    return _make_user(django_user_model, "admin", ADMIN_PASSWORD, is_staff=True, is_superuser=True)


@pytest.fixture
def owner(django_user_model):
    return _make_user(django_user_model, "owner")


@pytest.fixture
def stranger(django_user_model):
    return _make_user(django_user_model, "stranger")


@pytest.fixture
def teammate(django_user_model, owner):
    """A member of the owner's team: both are in the group ``team`` (tierlab.access)."""
    from django.contrib.auth.models import Group

    user = _make_user(django_user_model, "teammate")
    Group.objects.create(name="team").user_set.add(owner, user)
    return user


@pytest.fixture(autouse=True)
def _fresh_process_memories():
    """Each test starts with no remembered tokens or catalog (a flushed database fires no
    signals); tests of those memories set them up themselves."""
    yield
    from tierlab import auth, broker
    from tierlab.catalog.lookups import forget_catalog

    auth.forget()
    broker.forget()
    forget_catalog()


@pytest.fixture(autouse=True)
def _no_rate_limits(settings):
    """API rate limits and active-job limits are off unless a test sets the ones it checks
    (``settings.TIERLAB_THROTTLE_RATES``); counts go under a key prefix of the test's own, so
    no test sees another's requests in a shared cache."""
    settings.TIERLAB_THROTTLE_RATES = dict.fromkeys(settings.TIERLAB_THROTTLE_RATES)
    settings.TIERLAB_THROTTLE_KEY_PREFIX = f"throttle-test-{uuid.uuid4().hex}"
    # nor the per-user limits on active jobs (tests that queue several and no worker runs
    # them): test_active_limits.py sets the limits it checks
    settings.TIERLAB_MAX_ACTIVE_RUNS = settings.TIERLAB_MAX_ACTIVE_SWEEPS = settings.TIERLAB_MAX_ACTIVE_PLANS = 0


@pytest.fixture
def anon_api():
    from rest_framework.test import APIClient

    return APIClient()


@pytest.fixture
def owner_api(owner):
    from rest_framework.test import APIClient

    client = APIClient()
    client.force_authenticate(owner)
    return client


@pytest.fixture
def stranger_api(stranger):
    from rest_framework.test import APIClient

    client = APIClient()
    client.force_authenticate(stranger)
    return client


@pytest.fixture
def teammate_api(teammate):
    from rest_framework.test import APIClient

    client = APIClient()
    client.force_authenticate(teammate)
    return client


@pytest.fixture
def catalog(db):
    """The shipped catalog, loaded into the test database."""
    from tierlab.catalog.loader import load_catalog

    return load_catalog()


@pytest.fixture
def example_spec():
    """A small scenario that fits: Llama-2-7B on one H100 with ZeRO-Offload."""
    from tierlab.scenarios.examples import examples

    return examples()[2]["scenario"]


@pytest.fixture
def live_url(live_server):
    """Base URL of pytest-django's live server (no trailing slash)."""
    return live_server.url


# ---------------------------------------------------------------- front-end manifest
@pytest.fixture
def vite_manifest(tmp_path, settings):
    """Pages render against a stub Vite manifest, whether or not the front end is built."""
    from django_vite.core.asset_loader import DjangoViteAssetLoader

    entries = {name: {"file": f"assets/{Path(name).stem}-stub.js", "src": name, "isEntry": True,
                      "css": [f"assets/{Path(name).stem}-stub.css"] if name == "src/base.ts" else []}
               for name in ("src/base.ts", "src/pages/scenario_form.ts", "src/pages/run_result.ts",
                            "src/pages/compare.ts", "src/pages/sweep.ts", "src/pages/plan.ts", "src/pages/share_panel.ts",
                            "src/pages/scenario_prefill.ts")}
    path = tmp_path / "manifest.json"
    path.write_text(json.dumps(entries))
    settings.DJANGO_VITE = {"default": {**settings.DJANGO_VITE["default"], "dev_mode": False,
                                        "manifest_path": path}}
    DjangoViteAssetLoader._instance = None
    yield path
    DjangoViteAssetLoader._instance = None


# ---------------------------------------------------------------- a real Celery worker
def _database_url(db: dict) -> str:
    """A DATABASE_URL for the (test) database Django is connected to."""
    if db["ENGINE"] == "django.db.backends.sqlite3":
        return f"sqlite:///{db['NAME']}"
    if db["ENGINE"] == "django.db.backends.postgresql":
        auth = quote(db.get("USER") or "", safe="")
        if db.get("PASSWORD"):
            auth += ":" + quote(db["PASSWORD"], safe="")
        host = db.get("HOST") or "localhost"
        port = f":{db['PORT']}" if db.get("PORT") else ""
        return f"postgres://{auth}{'@' if auth else ''}{host}{port}/{db['NAME']}"
    raise RuntimeError(f"no worker DATABASE_URL for {db['ENGINE']}")


class Worker:
    def __init__(self, proc, log_path: Path, queue: str):
        self.proc, self.log_path, self.queue = proc, log_path, queue

    def log(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""


@pytest.fixture(scope="session")
def celery_worker(django_db_setup, django_db_blocker, tmp_path_factory):
    """A real ``celery -A tierlab worker`` subprocess on the test database and its own queue."""
    from django.db import connection

    tmp = tmp_path_factory.mktemp("celery")
    log_path = tmp / "worker.log"
    queue = f"tierlab-test-{uuid.uuid4().hex[:8]}"
    env = dict(os.environ, DATABASE_URL=_database_url(connection.settings_dict),
               TIERLAB_RUN_QUEUE=queue, PYTHONUNBUFFERED="1",
               DJANGO_SETTINGS_MODULE="tierlab.settings")
    if settings.CELERY_BROKER_URL.startswith("filesystem://"):
        env["CELERY_BROKER_DIR"] = str(settings.BROKER_DIR)   # same folders as this process
    cmd = [sys.executable, "-m", "celery", "-A", "tierlab", "worker", "--pool", "solo",
           "--loglevel", "info", "--queues", queue, "--hostname", f"{queue}@%h",
           "--without-gossip", "--without-mingle", "--without-heartbeat"]
    old_queue = settings.TIERLAB_RUN_QUEUE
    settings.TIERLAB_RUN_QUEUE = queue
    with open(log_path, "wb") as log:
        proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
    worker = Worker(proc, log_path, queue)
    try:
        deadline = time.monotonic() + 60
        while " ready." not in worker.log():
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"Celery worker did not start (exit {proc.poll()}):\n{worker.log()}")
            time.sleep(0.2)
        yield worker
    finally:
        settings.TIERLAB_RUN_QUEUE = old_queue
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    """Attach the worker's log to the report of a failed test that used it."""
    report = yield
    worker = getattr(item, "funcargs", {}).get("celery_worker")
    if report.failed and isinstance(worker, Worker):
        report.sections.append(("celery worker log", worker.log()[-20000:]))
    return report


@pytest.fixture
def wait_for():
    """``wait_for(predicate, timeout=30)``: poll until truthy; return the value or fail."""
    def wait(predicate, timeout=30.0, interval=0.1):
        deadline = time.monotonic() + timeout
        while True:
            value = predicate()
            if value:
                return value
            if time.monotonic() > deadline:
                raise AssertionError(f"timed out after {timeout} s waiting for {predicate}")
            time.sleep(interval)
    return wait
