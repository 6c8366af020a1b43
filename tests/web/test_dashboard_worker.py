"""Through a real Celery worker process: a sweep's chunks are run and progress reaches 1;
a comparison's runs finish."""

import pytest

from tests.web.dashboard_helpers import spec, strategies

pytestmark = [pytest.mark.worker, pytest.mark.django_db(transaction=True)]


def test_a_sweep_is_run_by_the_worker_chunk_by_chunk(owner_api, owner, celery_worker, wait_for, settings):
    from tierlab.scenarios.models import Scenario

    settings.TIERLAB_SWEEP_CHUNK_POINTS = 2
    base = Scenario.objects.create(owner=owner, name="base", spec=spec())
    r = owner_api.post("/api/v1/sweeps/", {"scenario": base.pk, "axes": [
        {"path": "cluster.num_nodes", "values": [1, 2]},
        {"path": "strategy.kind", "values": ["zero2", "zero3", "ddp"]}]}, format="json")
    assert r.status_code == 202, r.json()
    assert r.json()["chunks"] == 3
    url = f"/api/v1/sweeps/{r.json()['id']}/"
    seen = set()

    def finished():
        body = owner_api.get(url).json()
        seen.add(body["done_points"])
        return body if body["status"] in ("succeeded", "failed", "cancelled") else None

    body = wait_for(finished, timeout=60)
    assert body["status"] == "succeeded", body["error"]
    # 2 nodes are 16 data-parallel GPUs for a global batch of 8: those 3 points are invalid,
    # failed, not evaluated (they read as done before)
    assert body["progress"] == 1.0 and (body["done_points"], body["failed_points"]) == (3, 3)
    assert [p["status"] for p in body["points"]] == ["done"] * 3 + ["failed"] * 3
    assert body["pareto"]
    assert "tierlab.run_sweep_chunk" in celery_worker.log()


def test_a_comparisons_runs_are_run_by_the_worker(owner_api, owner, celery_worker, wait_for):
    ids = [s.pk for s in strategies(owner, ("zero2", "zero3"))]
    pk = owner_api.post("/api/v1/comparisons/", {"scenarios": ids}, format="json").json()["id"]
    body = wait_for(lambda: (b := owner_api.get(f"/api/v1/comparisons/{pk}/").json())["status"] != "running" and b,
                    timeout=60)
    assert body["status"] == "succeeded" and all(i["report"] for i in body["items"])
