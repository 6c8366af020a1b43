"""Work that lost its queue message, a worker stopped with Ctrl-C, cancelled runs, identical
input queued twice, and recycled worker and web processes: against real processes.

Each test starts what it needs (``tests/processes.py``): a private ``redis-server`` it
restarts, gunicorn, Celery workers and honcho as ``scripts/start`` runs them, on the test
database and a queue of the test's own.
"""

import os
import signal
import sys
import time

import pytest

from tests.processes import (REDIS_SERVER, ROOT, Proc, children, free_port, new_run, spec_variant,
                             start_gunicorn, start_redis, start_worker, wait_status, worker_env)
from tests.web.test_reliability import http
from tierlab.dashboard.models import SweepChunk
from tierlab.scenarios.models import Run

pytestmark = [pytest.mark.worker, pytest.mark.django_db(transaction=True)]


def need_redis_server():
    if REDIS_SERVER is None:
        reason = "redis-server is not installed (apt-get install redis-server)"
        pytest.fail(reason + " (required under CI)") if os.environ.get("CI") else pytest.skip(reason)


def poll(get, done, timeout: float):
    """Call ``get()`` until ``done(value)``; the last value either way."""
    deadline = time.monotonic() + timeout
    while True:
        value = get()
        if done(value) or time.monotonic() > deadline:
            return value
        time.sleep(0.3)


# ---------------------------------------------------------------- a lost queue message
def test_work_whose_message_a_broker_restart_lost_is_sent_again_and_completes(
        owner, example_spec, queue, procs, tmp_path):
    """Redis without persistence restarts with a run and a sweep queued and no worker up:
    their messages are gone. Past RUN_QUEUED_TIMEOUT_S the read-time check (any read
    through the web process) sends them again; the worker then computes them."""
    need_redis_server()
    import redis
    from rest_framework.authtoken.models import Token

    port, data = free_port(), tmp_path / "redis"
    procs.append(start_redis(data, port, persist=False))
    env = worker_env(queue, CELERY_BROKER_URL=f"redis://127.0.0.1:{port}/0", RUN_QUEUED_TIMEOUT_S=3)
    web = start_gunicorn(tmp_path, env)
    procs.append(web)
    token, api = Token.objects.create(user=owner).key, web.url + "/api/v1"

    status, scenario = http("POST", f"{api}/scenarios/", token, {"name": "lost", "scenario": example_spec})
    assert status == 201, scenario
    status, run = http("POST", f"{api}/scenarios/{scenario['id']}/runs/", token)
    assert status == 202 and run["status"] == "queued", run
    status, sweep = http("POST", f"{api}/sweeps/", token, {
        "scenario": scenario["id"], "axes": [{"path": "training.seq_len", "values": [1024, 2048]}]})
    assert status == 202, sweep
    assert redis.Redis(port=port).llen(queue) == 2

    procs[0].kill_group()                                   # Redis dies and forgets
    procs[0] = start_redis(data, port, persist=False)
    assert redis.Redis(port=port).llen(queue) == 0
    procs.append(start_worker(tmp_path, queue, "after-flush", env=env))

    run = poll(lambda: http("GET", f"{api}/runs/{run['id']}/", token)[1],
               lambda r: r["status"] in ("succeeded", "failed"), timeout=60)
    assert run["status"] == "succeeded", run
    sweep = poll(lambda: http("GET", f"{api}/sweeps/{sweep['id']}/", token)[1],
                 lambda s: s["status"] in ("succeeded", "failed", "cancelled"), timeout=60)
    assert sweep["status"] == "succeeded" and sweep["done_points"] == 2, sweep
    row = Run.objects.get(pk=run["id"])
    assert row.requeues == 1 and row.attempts == 1
    assert [c.requeues for c in SweepChunk.objects.filter(sweep_id=sweep["id"])] == [1]


def test_a_run_no_worker_takes_is_failed_with_the_reason_after_its_requeues(
        owner_api, owner, example_spec, queue, settings, django_capture_on_commit_callbacks):
    """Nothing reads the queue: sent again RUN_MAX_REQUEUES times, then failed, never left
    queued. (No worker: the test moves the clock back on the row.)"""
    from datetime import timedelta

    from django.utils import timezone

    settings.TIERLAB_RUN_QUEUED_TIMEOUT_S, settings.TIERLAB_RUN_MAX_REQUEUES = 60, 1
    with django_capture_on_commit_callbacks(execute=True):
        run = new_run(owner, example_spec)
    first_task = run.celery_task_id
    long_ago = timezone.now() - timedelta(seconds=61)
    Run.objects.filter(pk=run.pk).update(enqueued_at=long_ago)
    with django_capture_on_commit_callbacks(execute=True):
        body = owner_api.get(f"/api/v1/runs/{run.pk}/").json()
    assert body["status"] == "queued"
    run.refresh_from_db()
    assert run.requeues == 1 and run.celery_task_id != first_task

    Run.objects.filter(pk=run.pk).update(enqueued_at=long_ago)
    body = owner_api.get(f"/api/v1/runs/{run.pk}/").json()
    assert body["status"] == "failed"
    assert body["error"] == ("not started: no worker took the run within 60 s, 2 times it was "
                             "sent (its queue message was lost, or no worker reads the queue); "
                             "start it again")


# ---------------------------------------------------------------- Ctrl-C of scripts/start
def test_the_run_in_flight_at_ctrl_c_of_scripts_start_is_picked_up_at_the_next_start(
        owner, example_spec, queue, procs, tmp_path, settings):
    """honcho runs web and worker as scripts/start does; Ctrl-C (SIGINT to honcho) stops the
    web at once and, 5 s later, kills the worker still in its warm shutdown: with the
    filesystem broker (scripts/start's) before it hands its message back. The next worker of
    the same name queues the run again at its start. (With Redis the worker hands the message
    back within the 5 s; the run is redelivered either way.)"""
    procfile = tmp_path / "Procfile"
    procfile.write_text(
        "web: exec python -c 'import time; time.sleep(600)'\n"
        f"worker: exec {sys.executable} -m celery -A tierlab worker --concurrency 1 --loglevel info "
        f"--queues {queue} --hostname ctrlc@%h --without-gossip --without-mingle --without-heartbeat\n")
    (tmp_path / "empty.env").write_text("")
    env = worker_env(queue, TIERLAB_TEST_TASK_SLEEP_S=60)
    honcho = Proc("honcho", [sys.executable, "-m", "honcho", "-f", str(procfile), "-d", str(ROOT),
                             "-e", str(tmp_path / "empty.env"), "start"], env, tmp_path / "honcho.log")
    procs.append(honcho)
    honcho.wait_for_log(" ready.")
    run = new_run(owner, example_spec)
    wait_status(run.pk, {"running"}, timeout=30)

    honcho.popen.send_signal(signal.SIGINT)                 # Ctrl-C in its terminal
    honcho.popen.wait(timeout=30)
    if settings.CELERY_BROKER_URL.startswith("filesystem://"):
        assert "SIGKILL" in honcho.log()                    # the worker did not finish its shutdown
    assert Run.objects.get(pk=run.pk).status == "running"

    again = start_worker(tmp_path, queue, "ctrlc", env=worker_env(queue, TIERLAB_TEST_TASK_SLEEP_S=1))
    procs.append(again)
    done = wait_status(run.pk, {"succeeded", "failed"}, timeout=30)
    assert done.status == "succeeded", done.error
    assert done.attempts == 2 and done.worker == again.hostname
    assert "left running by an earlier process were queued again" in again.log()


# ---------------------------------------------------------------- a sweep chunk's hard limit
def test_a_sweep_chunk_stuck_past_the_hard_limit_is_failed_and_its_sweep_settles(
        owner, example_spec, queue, procs, tmp_path):
    from tierlab.dashboard import sweeps
    from tierlab.scenarios.models import Scenario

    env = worker_env(queue, TIERLAB_TEST_TASK_SLEEP_S=60, TIERLAB_TEST_TASK_STUCK=1,
                     RUN_TIME_LIMIT_S=3, RUN_SOFT_TIME_LIMIT_S=1, CELERY_VISIBILITY_TIMEOUT_S=40)
    procs.append(start_worker(tmp_path, queue, "chunk-limit", env=env))
    base = Scenario.objects.create(owner=owner, name="base", spec=example_spec)
    sweep = sweeps.create_sweep(owner, base.pk, [{"path": "training.seq_len", "values": [1024, 2048]}])
    sweep = poll(lambda: type(sweep).objects.get(pk=sweep.pk), lambda s: s.is_finished, timeout=30)
    (chunk,) = sweep.chunks.all()
    assert chunk.status == "failed", chunk.error
    assert chunk.error == "time limit exceeded: the chunk ran longer than 3 s (hard limit; its process was killed)"
    assert sweep.status == "failed" and [p["status"] for p in sweeps.points(sweep)] == ["failed", "failed"]


# ---------------------------------------------------------------- cancel
def test_a_running_run_cancelled_stops_at_its_next_progress_step(
        owner, owner_api, example_spec, queue, procs, tmp_path):
    worker = start_worker(tmp_path, queue, "cancel", env=worker_env(queue, TIERLAB_TEST_TASK_SLEEP_S=20))
    procs.append(worker)
    run = new_run(owner, example_spec)
    wait_status(run.pk, {"running"}, timeout=30)

    response = owner_api.post(f"/api/v1/runs/{run.pk}/cancel/")
    assert response.status_code == 200, response.content
    assert response.json()["status"] == "failed" and response.json()["error"] == "cancelled by owner"
    worker.wait_for_log(f"run {run.pk} stopped: cancelled by owner", timeout=5)
    worker.wait_for_log("succeeded in", timeout=5)          # the task ended, its process is free
    run.refresh_from_db()
    assert run.status == "failed" and run.error == "cancelled by owner" and run.result is None


# ---------------------------------------------------------------- deleted while it runs
def test_a_running_run_whose_scenario_is_deleted_stops_quietly(owner, owner_api, example_spec, queue, procs,
                                                               tmp_path):
    worker = start_worker(tmp_path, queue, "gone", env=worker_env(queue, TIERLAB_TEST_TASK_SLEEP_S=20))
    procs.append(worker)
    run = new_run(owner, example_spec)
    wait_status(run.pk, {"running"}, timeout=30)

    assert owner_api.delete(f"/api/v1/scenarios/{run.scenario_id}/").status_code == 204
    worker.wait_for_log(f"run {run.pk} stopped: it was deleted", timeout=5)
    worker.wait_for_log("succeeded in", timeout=5)          # the task ended, its process is free
    assert not Run.objects.filter(pk=run.pk).exists()
    assert "Traceback" not in worker.log() and "ERROR" not in worker.log()


def test_a_running_sweep_deleted_is_cancelled_and_its_chunk_stops_quietly(owner, owner_api, example_spec, queue,
                                                                         procs, tmp_path, settings):
    from tierlab.dashboard import sweeps
    from tierlab.dashboard.models import Sweep
    from tierlab.scenarios.models import Scenario

    settings.TIERLAB_SWEEP_CHUNK_POINTS = 2
    worker = start_worker(tmp_path, queue, "sweep-gone", env=worker_env(queue, TIERLAB_TEST_TASK_SLEEP_S=3))
    procs.append(worker)
    base = Scenario.objects.create(owner=owner, name="base", spec=example_spec)
    sweep = sweeps.create_sweep(owner, base.pk, [{"path": "training.seq_len", "values": [512, 1024, 2048, 4096]}])
    assert sweep.chunks.count() == 2
    poll(lambda: sweep.chunks.filter(status="running").count(), bool, timeout=30)

    assert owner_api.delete(f"/api/v1/sweeps/{sweep.pk}/").status_code == 204
    assert not Sweep.objects.filter(pk=sweep.pk).exists() and not SweepChunk.objects.filter(sweep_id=sweep.pk).exists()
    worker.wait_for_log(f"its sweep {sweep.pk} was deleted; result dropped", timeout=15)
    # the second chunk's message was taken out of the queue by the cancel (a copy the worker
    # had already taken finds nothing to do)
    from tests.web.test_queue_waiting import waiting

    assert poll(lambda: waiting(queue), lambda n: n == 0, timeout=15) == 0
    time.sleep(1)
    assert "Traceback" not in worker.log() and "ERROR" not in worker.log()


# ---------------------------------------------------------------- identical input, once
def test_identical_input_queued_twice_is_computed_once(owner, example_spec, queue, procs, tmp_path):
    worker = start_worker(tmp_path, queue, "once", env=worker_env(queue, TIERLAB_TEST_TASK_SLEEP_S=1.5))
    procs.append(worker)
    first = new_run(owner, example_spec, name="first")
    second = new_run(owner, example_spec, name="second")     # while the first is queued or running
    assert second.status == "queued" and second.reused_from_id == first.pk

    first = wait_status(first.pk, {"succeeded", "failed"}, timeout=30)
    second = wait_status(second.pk, {"succeeded", "failed"}, timeout=10, sweep=True)
    assert first.status == second.status == "succeeded", (first.error, second.error)
    assert second.result == first.result and second.reused_from_id == first.pk
    assert (first.attempts, second.attempts) == (1, 0)      # no worker started the second
    assert worker.log().count("Task tierlab.run_scenario[") == 2   # one received, one succeeded


# ---------------------------------------------------------------- recycled processes
@pytest.mark.parametrize("limit", [{"WORKER_MAX_TASKS_PER_CHILD": 1},
                                   {"WORKER_MAX_MEMORY_PER_CHILD_KIB": 1}], ids=["tasks", "memory"])
def test_a_worker_pool_process_is_replaced_after_its_task_or_memory_limit(
        owner, example_spec, queue, procs, tmp_path, limit):
    worker = start_worker(tmp_path, queue, "recycled", env=worker_env(queue, **limit))
    procs.append(worker)
    (before,) = children(worker.pid)
    run = new_run(owner, example_spec)
    assert wait_status(run.pk, {"succeeded", "failed"}, timeout=30).status == "succeeded"
    after = poll(lambda: children(worker.pid), lambda pids: len(pids) == 1 and pids[0] != before, timeout=15)
    assert len(after) == 1 and after[0] != before, (before, after)
    run = new_run(owner, spec_variant(example_spec, 1))      # the new process works
    assert wait_status(run.pk, {"succeeded", "failed"}, timeout=30).status == "succeeded"


def test_a_web_process_is_replaced_after_its_request_limit(queue, procs, tmp_path):
    """gunicorn.conf.py, read by every gunicorn started in the project folder (the image's too)."""
    web = start_gunicorn(tmp_path, worker_env(queue, WEB_MAX_REQUESTS=2, WEB_MAX_REQUESTS_JITTER=0))
    procs.append(web)
    for _ in range(4):
        assert http("GET", web.url + "/healthz")[0] in (200, 503)
    log = poll(web.log, lambda text: text.count("Booting worker with pid") >= 2, timeout=15)
    assert "Autorestarting worker after current request" in log
    assert log.count("Booting worker with pid") >= 2, log[-3000:]


def test_a_web_process_is_replaced_after_a_request_leaves_it_over_its_memory_limit(queue, procs, tmp_path):
    """WEB_MAX_MEMORY_KIB=1: every process is over it after its first request (a Django
    process holds ~100 MiB), so each request is answered and its process replaced; the
    request count alone (WEB_MAX_REQUESTS=0) would never replace one."""
    web = start_gunicorn(tmp_path, worker_env(queue, WEB_MAX_REQUESTS=0, WEB_MAX_MEMORY_KIB=1))
    procs.append(web)
    for _ in range(3):
        assert http("GET", web.url + "/healthz")[0] in (200, 503)
    log = poll(web.log, lambda text: text.count("Booting worker with pid") >= 3, timeout=30)
    assert "resident is over WEB_MAX_MEMORY_KIB (1 KiB)" in log, log[-3000:]
    assert log.count("Booting worker with pid") >= 3, log[-3000:]


def test_the_web_memory_limit_is_off_at_zero_and_a_bad_one_stops_gunicorn(queue, procs, tmp_path):
    import subprocess

    web = start_gunicorn(tmp_path, worker_env(queue, WEB_MAX_REQUESTS=0, WEB_MAX_MEMORY_KIB=0))
    procs.append(web)
    for _ in range(3):
        assert http("GET", web.url + "/healthz")[0] in (200, 503)
    time.sleep(1)
    assert web.log().count("Booting worker with pid") == 1, web.log()[-3000:]
    result = subprocess.run([sys.executable, "-m", "gunicorn", "--check-config", "tierlab.wsgi"],
                            cwd=ROOT, env=worker_env(queue, WEB_MAX_MEMORY_KIB="1 GiB"),
                            capture_output=True, text=True, timeout=60)
    assert result.returncode != 0
    assert "WEB_MAX_MEMORY_KIB: expected a whole number of KiB" in result.stdout + result.stderr


def test_a_bad_web_request_limit_stops_gunicorn_with_its_name(queue, tmp_path):
    import subprocess

    result = subprocess.run([sys.executable, "-m", "gunicorn", "--check-config", "tierlab.wsgi"],
                            cwd=ROOT, env=worker_env(queue, WEB_MAX_REQUESTS="lots"),
                            capture_output=True, text=True, timeout=60)
    assert result.returncode != 0
    assert "WEB_MAX_REQUESTS: expected a whole number of requests" in result.stdout + result.stderr

