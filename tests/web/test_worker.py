"""End to end through a real Celery worker process: HTTP in, worker runs, HTTP out."""

import pytest

pytestmark = [pytest.mark.worker, pytest.mark.django_db(transaction=True)]


def test_a_run_is_executed_by_the_worker(owner_api, example_spec, celery_worker, wait_for):
    r = owner_api.post("/api/v1/scenarios/", {"name": "end to end", "scenario": example_spec},
                       format="json")
    assert r.status_code == 201, r.json()
    run = owner_api.post(f"/api/v1/scenarios/{r.json()['id']}/runs/").json()
    assert run["status"] == "queued"

    def finished():
        body = owner_api.get(f"/api/v1/runs/{run['id']}/").json()
        return body if body["status"] in ("succeeded", "failed") else None

    body = wait_for(finished, timeout=60)
    assert body["status"] == "succeeded", body["error"]
    assert body["progress"] == 1.0 and body["result"]["fits"] is True
    assert body["started_at"] and body["finished_at"]
    assert "tierlab.run_scenario" in celery_worker.log()   # it was the subprocess, not this one


def test_a_bad_stored_input_fails_in_the_worker(owner_api, owner, example_spec, celery_worker, wait_for):
    from tierlab.scenarios import services
    from tierlab.scenarios.models import Run, Scenario

    scenario = Scenario.objects.create(owner=owner, name="will break", spec=example_spec)
    # Corrupt the stored input between queueing and execution, as a schema change might.
    run = Run.objects.create(scenario=scenario, input={"model": {}}, input_hash="x" * 64,
                             engine_version="test", celery_task_id="manual-1")
    services.enqueue(run)
    body = wait_for(lambda: (b := owner_api.get(f"/api/v1/runs/{run.pk}/").json())["status"] == "failed" and b)
    assert body["error"] and body["finished_at"]          # "<field>: <message>" from the engine
    assert ": " in body["error"]
