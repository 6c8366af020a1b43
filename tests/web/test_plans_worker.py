"""Plans through real Celery worker processes: two workers share a plan's chunks and the
answer equals the engine's own search; a pool process killed mid-chunk is redelivered and
the plan resumes; cancel stops a running plan."""

import os
import signal

import pytest

from simulation import planner
from tests.processes import children, start_worker, worker_env
from tests.web.test_plans_api import SPEC
from tierlab.dashboard.models import Plan, PlanChunk

pytestmark = [pytest.mark.worker, pytest.mark.django_db(transaction=True)]


def _finished(owner_api, pk):
    def check():
        body = owner_api.get(f"/api/v1/plans/{pk}/").json()
        return body if body["status"] in ("succeeded", "failed", "cancelled") else None
    return check


def test_two_workers_share_a_plan_and_give_the_same_answer(owner_api, queue, procs, tmp_path,
                                                          settings, wait_for):
    settings.TIERLAB_PLAN_CHUNKS = 4
    env = worker_env(queue, TIERLAB_TEST_TASK_SLEEP_S=1)
    workers = [start_worker(tmp_path, queue, name, env=env) for name in ("alpha", "beta")]
    procs.extend(workers)
    r = owner_api.post("/api/v1/plans/", {"spec": SPEC}, format="json")
    assert r.status_code == 202, r.json()
    body = wait_for(_finished(owner_api, r.json()["id"]), timeout=120)
    assert body["status"] == "succeeded", body["error"]
    assert body["result"] == planner.plan(SPEC)
    assert sorted(body["workers"]) == sorted(w.hostname for w in workers)


def test_a_pool_process_killed_mid_chunk_is_redelivered_and_the_plan_resumes(
        owner_api, queue, procs, tmp_path, settings, wait_for):
    settings.TIERLAB_PLAN_CHUNKS = 2
    worker = start_worker(tmp_path, queue, "kill-child", env=worker_env(queue, TIERLAB_TEST_TASK_SLEEP_S=3))
    procs.append(worker)
    pk = owner_api.post("/api/v1/plans/", {"spec": SPEC}, format="json").json()["id"]
    wait_for(lambda: PlanChunk.objects.filter(plan_id=pk, status="running").exists(), timeout=30)
    (child,) = children(worker.pid)
    os.kill(child, signal.SIGKILL)
    body = wait_for(_finished(owner_api, pk), timeout=120)
    assert body["status"] == "succeeded", body["error"]
    assert body["result"] == planner.plan(SPEC)
    assert sorted(PlanChunk.objects.filter(plan_id=pk).values_list("attempts", flat=True)) == [1, 2]
    assert "WorkerLostError" in worker.log()


def test_cancel_stops_a_plan_a_worker_is_running(owner_api, queue, procs, tmp_path, settings, wait_for):
    settings.TIERLAB_PLAN_CHUNKS = 2
    worker = start_worker(tmp_path, queue, "cancel", env=worker_env(queue, TIERLAB_TEST_TASK_SLEEP_S=2))
    procs.append(worker)
    pk = owner_api.post("/api/v1/plans/", {"spec": SPEC}, format="json").json()["id"]
    wait_for(lambda: PlanChunk.objects.filter(plan_id=pk, status="running").exists(), timeout=30)
    r = owner_api.post(f"/api/v1/plans/{pk}/cancel/")
    assert r.status_code == 200 and r.json()["status"] == "cancelled"
    wait_for(lambda: not PlanChunk.objects.filter(plan_id=pk, status__in=["queued", "running"]).exists(),
             timeout=60)
    assert set(PlanChunk.objects.filter(plan_id=pk).values_list("status", flat=True)) == {"cancelled"}
    assert Plan.objects.get(pk=pk).status == "cancelled"


def test_a_worker_killed_mid_chunk_and_restarted_resumes_the_plan(owner_api, queue, procs, tmp_path,
                                                                  settings, wait_for):
    """The whole worker (parent and pool) dies; when a worker of the same name starts again it
    queues the chunk it left running (tierlab.celery), and the plan completes with the answer."""
    settings.TIERLAB_PLAN_CHUNKS = 1
    env = worker_env(queue, TIERLAB_TEST_TASK_SLEEP_S=3)
    first = start_worker(tmp_path, queue, "phoenix", env=env)
    procs.append(first)
    pk = owner_api.post("/api/v1/plans/", {"spec": SPEC}, format="json").json()["id"]
    wait_for(lambda: PlanChunk.objects.filter(plan_id=pk, status="running").exists(), timeout=30)
    first.kill_group()
    second = start_worker(tmp_path, queue, "phoenix", env=env)
    procs.append(second)
    body = wait_for(_finished(owner_api, pk), timeout=90)
    assert body["status"] == "succeeded", body["error"]
    assert body["result"] == planner.plan(SPEC)
    assert PlanChunk.objects.get(plan_id=pk).attempts == 2
    assert "left running by an earlier process" in second.log()
