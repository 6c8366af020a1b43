"""Faults against real processes: killed workers, a restarted broker, time limits.

Each test starts its own Celery worker(s) (``tests/processes.py``) on the test database and a
queue of its own, with ``TIERLAB_TEST_TASK_SLEEP_S`` making every run slow on purpose. A run
must end ``succeeded`` (redelivered) or ``failed`` with a reason; never stay ``running``.
"""

import json
import os
import signal
import time
import urllib.error
import urllib.request

import pytest

from tests.processes import (REDIS_SERVER, children, free_port, new_run, spec_variant,
                             start_gunicorn, start_redis, start_worker, wait_status, worker_env)
from tierlab.scenarios import services
from tierlab.scenarios.models import Run

pytestmark = [pytest.mark.worker, pytest.mark.django_db(transaction=True)]


def redis_broker() -> bool:
    from django.conf import settings

    return settings.CELERY_BROKER_URL.startswith("redis://")


# ---------------------------------------------------------------- (a) a worker killed mid-run
def test_a_pool_process_killed_mid_run_is_redelivered_and_completes(
        owner, example_spec, queue, procs, tmp_path):
    worker = start_worker(tmp_path, queue, "kill-child",
                          env=worker_env(queue, TIERLAB_TEST_TASK_SLEEP_S=3))
    procs.append(worker)
    run = new_run(owner, example_spec)
    wait_status(run.pk, {"running"}, timeout=30)
    (child,) = children(worker.pid)
    os.kill(child, signal.SIGKILL)

    done = wait_status(run.pk, {"succeeded", "failed"}, timeout=60)
    assert done.status == "succeeded", done.error
    assert done.attempts == 2 and done.worker == worker.hostname
    assert done.result["fits"] is True
    assert "WorkerLostError" in worker.log()


def test_a_worker_host_killed_mid_run_never_leaves_it_running(
        owner, example_spec, queue, procs, tmp_path, settings):
    """The whole worker (parent and pool) dies at once, as when its machine goes down.

    Redis keeps the unacknowledged message and hands it to another worker after the
    visibility timeout: the run completes there. The filesystem broker cannot (it forgets a
    message once delivered): the run reads back as failed, "worker lost", once it has been
    running longer than the time limit plus the margin.
    """
    limits = dict(TIERLAB_TEST_TASK_SLEEP_S=3, RUN_TIME_LIMIT_S=5, RUN_SOFT_TIME_LIMIT_S=4,
                  CELERY_VISIBILITY_TIMEOUT_S=6)
    first = start_worker(tmp_path, queue, "doomed", env=worker_env(queue, **limits))
    procs.append(first)
    run = new_run(owner, example_spec)
    wait_status(run.pk, {"running"}, timeout=30)
    first.kill_group()

    second = start_worker(tmp_path, queue, "survivor", env=worker_env(queue, **limits))
    procs.append(second)
    if redis_broker():
        done = wait_status(run.pk, {"succeeded", "failed"}, timeout=60)
        assert done.status == "succeeded", done.error
        assert done.attempts == 2 and done.worker == second.hostname
    else:
        settings.TIERLAB_RUN_STALE_AFTER_S = 5 + 1           # the worker's limit + a margin
        done = wait_status(run.pk, {"succeeded", "failed"}, timeout=30, sweep=True)
        assert done.status == "failed" and done.error.startswith("worker lost"), done.error
        assert done.attempts == 1


def test_a_run_whose_workers_keep_dying_is_failed_not_retried_forever(owner, example_spec, settings):
    settings.TIERLAB_RUN_MAX_ATTEMPTS = 3
    run = new_run(owner, example_spec)
    Run.objects.filter(pk=run.pk).update(status="running", attempts=3)
    services.execute_run(run.pk, task_id=run.celery_task_id)    # its message, redelivered
    run.refresh_from_db()
    assert run.status == "failed" and "started 3 times" in run.error


# ---------------------------------------------------------------- (d) time limits
@pytest.mark.parametrize("soft, hard, stuck, words", [
    (2, 6, 0, "took longer than 2 s (soft limit)"),
    (1, 3, 1, "took longer than 3 s (hard limit; its process was killed)"),
])
def test_a_run_over_its_time_limit_is_failed(owner, example_spec, queue, procs, tmp_path,
                                             soft, hard, stuck, words):
    """Soft: the run is interrupted and records it. Hard: a run stuck where the soft limit
    cannot interrupt it (TIERLAB_TEST_TASK_STUCK) has its process killed; the worker's main
    process records it."""
    env = worker_env(queue, TIERLAB_TEST_TASK_SLEEP_S=60, TIERLAB_TEST_TASK_STUCK=stuck,
                     RUN_TIME_LIMIT_S=hard, RUN_SOFT_TIME_LIMIT_S=soft,
                     CELERY_VISIBILITY_TIMEOUT_S=hard + 30)
    worker = start_worker(tmp_path, queue, "limited", env=env)
    procs.append(worker)
    run = new_run(owner, example_spec)
    done = wait_status(run.pk, {"succeeded", "failed"}, timeout=30)
    assert done.status == "failed" and done.error == f"time limit exceeded: the run {words}"
    assert done.finished_at is not None
    time.sleep(1)                      # a redelivery, if any, must not undo it
    assert Run.objects.get(pk=run.pk).status == "failed"


# ---------------------------------------------------------------- (b) the broker restarted
def http(method, url, token=None, body=None):
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(url, data=data, method=method)
    request.add_header("Content-Type", "application/json")
    if token:
        request.add_header("Authorization", f"Token {token}")
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, json.loads(response.read() or b"null")
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read() or b"null")


def test_queued_runs_survive_a_broker_restart(owner, example_spec, queue, procs, tmp_path):
    """A private Redis with an append-only file; web (gunicorn) and worker are real processes.

    Runs queued while no worker is up survive a SIGKILL and restart of Redis; then, with the
    worker running, Redis is restarted again and new runs still go through (web and worker
    reconnect by themselves); identical input reuses the stored result.
    """
    if REDIS_SERVER is None:
        reason = "redis-server is not installed (apt-get install redis-server)"
        pytest.fail(reason + " (required under CI)") if os.environ.get("CI") else pytest.skip(reason)
    import redis
    from rest_framework.authtoken.models import Token

    port = free_port()
    data = tmp_path / "redis"
    broker = f"redis://127.0.0.1:{port}/0"
    procs.append(start_redis(data, port))
    env = worker_env(queue, CELERY_BROKER_URL=broker)
    web = start_gunicorn(tmp_path, env)
    procs.append(web)
    token = Token.objects.create(user=owner).key
    api = web.url + "/api/v1"

    def start(i):
        status, body = http("POST", f"{api}/scenarios/", token,
                            {"name": f"queued {i}", "scenario": spec_variant(example_spec, i)})
        assert status == 201, body
        status, run = http("POST", f"{api}/scenarios/{body['id']}/runs/", token)
        assert status == 202 and run["status"] == "queued", run
        return run["id"], body["id"]

    queued = [start(i) for i in range(4)]
    assert redis.Redis(port=port).llen(queue) == 4

    procs[0].kill_group()                                   # Redis dies ...
    assert http("GET", web.url + "/healthz") == (503, {"database": "ok", "broker": "failed"})
    procs[0] = start_redis(data, port)                      # ... and comes back from its AOF
    assert redis.Redis(port=port).llen(queue) == 4
    assert http("GET", web.url + "/healthz") == (200, {"database": "ok", "broker": "ok"})

    worker = start_worker(tmp_path, queue, "after-restart", env=env)
    procs.append(worker)
    for run_id, _ in queued:
        run = wait_status(run_id, {"succeeded", "failed"}, timeout=60)
        assert run.status == "succeeded", run.error

    procs[0].kill_group()                                   # again, with the worker up
    time.sleep(1)
    procs[0] = start_redis(data, port)
    later = [start(i) for i in range(4, 6)]
    for run_id, _ in later:
        run = wait_status(run_id, {"succeeded", "failed"}, timeout=90)
        assert run.status == "succeeded", run.error

    # (c) identical input: the stored result, at once, through the real web process
    status, again = http("POST", f"{api}/scenarios/{queued[0][1]}/runs/", token)
    assert status == 202 and again["status"] == "succeeded"
    assert again["reused_from"] == queued[0][0]
