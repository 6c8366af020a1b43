"""POST /api/v1/scenarios/{id}/runs/ and GET /api/v1/runs/: queue, reuse, worker lost, owners."""

import json
from datetime import timedelta
from unittest import mock

import pytest
from django.utils import timezone

import simulation
from tierlab.scenarios import services
from tierlab.scenarios.models import Run, Scenario

pytestmark = pytest.mark.django_db


@pytest.fixture
def scenario(owner, example_spec):
    return Scenario.objects.create(owner=owner, name="mine", spec=example_spec)


def start(client, scenario):
    return client.post(f"/api/v1/scenarios/{scenario.pk}/runs/")


def test_it_queues_a_run(owner_api, scenario):
    r = start(owner_api, scenario)
    assert r.status_code == 202
    body = r.json()
    assert body["status"] == "queued" and body["progress"] == 0.0
    assert body["scenario"] == scenario.pk
    assert body["engine_version"] == simulation.ENGINE_VERSION
    assert body["input"]["model"]["num_layers"] == 32          # presets expanded
    assert len(body["input_hash"]) == 64
    assert r["Location"] == f"/api/v1/runs/{body['id']}/"
    keys = {"id", "scenario", "status", "progress", "result", "error", "engine_version",
            "created_at", "started_at", "finished_at"}
    assert keys <= set(owner_api.get(f"/api/v1/runs/{body['id']}/").json())


def test_it_sends_the_run_to_the_worker_queue_after_commit(owner_api, scenario, settings,
                                                           django_capture_on_commit_callbacks):
    with mock.patch("tierlab.scenarios.tasks.run_scenario.apply_async") as send:
        with django_capture_on_commit_callbacks(execute=True):
            body = start(owner_api, scenario).json()
    run = Run.objects.get(pk=body["id"])
    send.assert_called_once_with(args=[run.pk], task_id=run.celery_task_id,
                                 queue=settings.TIERLAB_RUN_QUEUE,
                                 time_limit=None, soft_time_limit=None)   # the worker's apply


def test_it_fails_the_run_when_the_broker_is_down(owner_api, scenario,
                                                  django_capture_on_commit_callbacks):
    with mock.patch("tierlab.scenarios.tasks.run_scenario.apply_async",
                    side_effect=ConnectionError("refused")):
        with django_capture_on_commit_callbacks(execute=True):
            body = start(owner_api, scenario).json()
    run = owner_api.get(f"/api/v1/runs/{body['id']}/").json()
    assert run["status"] == "failed"
    assert "broker" in run["error"]


def test_it_reuses_a_stored_result_for_identical_input(owner_api, owner, scenario, example_spec):
    first = start(owner_api, scenario).json()
    services.execute_run(first["id"])
    twin = Scenario.objects.create(owner=owner, name="same input", spec=example_spec)
    second = start(owner_api, twin).json()
    assert second["status"] == "succeeded" and second["progress"] == 1.0
    assert second["reused_from"] == first["id"]
    assert second["input_hash"] == first["input_hash"]
    assert second["result"] == Run.objects.get(pk=first["id"]).result
    third = start(owner_api, twin).json()             # a reuse points at the original run
    assert third["status"] == "succeeded" and third["reused_from"] == first["id"]


def test_it_does_not_reuse_for_different_input(owner_api, owner, scenario, example_spec):
    first = start(owner_api, scenario).json()
    services.execute_run(first["id"])
    example_spec["training"]["seq_len"] = 2048
    other = Scenario.objects.create(owner=owner, name="shorter", spec=example_spec)
    second = start(owner_api, other).json()
    assert second["status"] == "queued" and second["input_hash"] != first["input_hash"]


def test_it_does_not_reuse_a_failed_run(owner_api, scenario):
    first = Run.objects.get(pk=start(owner_api, scenario).json()["id"])
    first.mark_failed("boom")
    assert start(owner_api, scenario).json()["status"] == "queued"


def test_it_marks_a_run_whose_worker_died_as_failed(owner_api, scenario, settings):
    run = Run.objects.get(pk=start(owner_api, scenario).json()["id"])
    run.mark_running("task-1")
    Run.objects.filter(pk=run.pk).update(
        started_at=timezone.now() - timedelta(seconds=settings.TIERLAB_RUN_STALE_AFTER_S + 5))
    body = owner_api.get(f"/api/v1/runs/{run.pk}/").json()
    assert body["status"] == "failed"
    assert "worker lost" in body["error"]
    assert body["finished_at"] is not None


def test_it_leaves_a_recent_running_run_alone(owner_api, scenario):
    run = Run.objects.get(pk=start(owner_api, scenario).json()["id"])
    run.mark_running("task-1")
    assert owner_api.get(f"/api/v1/runs/{run.pk}/").json()["status"] == "running"


def test_it_hides_others_runs(owner_api, stranger_api, scenario):
    pk = start(owner_api, scenario).json()["id"]
    assert stranger_api.get(f"/api/v1/runs/{pk}/").status_code == 404
    assert stranger_api.get("/api/v1/runs/").json()["count"] == 0
    assert owner_api.get("/api/v1/runs/").json()["count"] == 1
    assert [r["id"] for r in owner_api.get(f"/api/v1/scenarios/{scenario.pk}/runs/").json()["results"]] == [pk]


def test_it_requires_login(anon_api, scenario):
    assert anon_api.post(f"/api/v1/scenarios/{scenario.pk}/runs/").status_code == 401
    assert anon_api.get("/api/v1/runs/").status_code == 401


def test_it_rejects_a_scenario_the_catalog_no_longer_resolves(owner_api, owner, catalog, example_spec):
    from tierlab.catalog.models import ModelPreset

    sc = Scenario.objects.create(owner=owner, name="old", spec=example_spec)
    ModelPreset.objects.filter(slug="llama2-7b").delete()
    r = start(owner_api, sc)
    assert r.status_code == 400
    assert "scenario.model.preset" in r.json()
    assert Run.objects.count() == 0



# POST runs/ takes no body: DRF hands a view the parsed body and the view ignored it, so a
# client's option ({"priority": "high"}) silently did nothing. The frontend posts {}
# (frontend/src/pages/scenario_form.ts: postJSON(endpoints.scenarioRuns(id), {})).
@pytest.mark.parametrize("body", [{"priority": "high"}, {"force": True, "b": 1}])
def test_a_body_key_is_a_400_naming_it_and_no_run_starts(owner_api, scenario, body):
    r = owner_api.post(f"/api/v1/scenarios/{scenario.pk}/runs/", body, format="json")
    assert r.status_code == 400, r.content[:200]
    assert r.json() == {key: ["unknown field; this request takes none (send {} or no body)"] for key in body}
    assert Run.objects.count() == 0


def test_a_form_body_is_refused_too(owner_api, scenario):
    r = owner_api.post(f"/api/v1/scenarios/{scenario.pk}/runs/", {"priority": "high"})   # multipart
    assert r.status_code == 415 and list(r.json()) == ["body"]
    assert Run.objects.count() == 0


@pytest.mark.parametrize("send", [
    lambda c, url: c.post(url),                                              # no body
    lambda c, url: c.post(url, {}, format="json"),                           # {}, as the frontend
    lambda c, url: c.generic("POST", url, "", content_type="application/json"),  # empty JSON body
])
def test_no_body_or_an_empty_object_starts_a_run(owner_api, scenario, send):
    r = send(owner_api, f"/api/v1/scenarios/{scenario.pk}/runs/")
    assert r.status_code == 202, r.content[:200]
    assert Run.objects.get().pk == r.json()["id"]


def test_a_body_does_not_get_past_the_owner_check(teammate_api, scenario):
    """A teammate's POST is a 403 whatever it sends (the permission check comes first)."""
    r = teammate_api.post(f"/api/v1/scenarios/{scenario.pk}/runs/", {"x": 1}, format="json")
    assert r.status_code == 403
    assert Run.objects.count() == 0

# ---------------------------------------------------------------- lists stay light
def _selected_columns(sql: str) -> str:
    """The SELECT list of a query (what the database ships back)."""
    return sql[:sql.upper().index(" FROM ")]


def _plain_column(sql: str, column: str) -> bool:
    """Whether ``column`` ("table"."name") is selected as itself, not only read inside a
    JSON key extraction (e.g. ``JSON_EXTRACT("scenarios_run"."result", '$.fits')``)."""
    import re

    return re.search(rf'(^|SELECT\s|,\s*){re.escape(column)}\s*(,|$)', _selected_columns(sql)) is not None


@pytest.fixture
def fifty_runs(owner, catalog):
    """50 succeeded runs of a 70B scenario with their real report (about 120 kB each)."""
    from tierlab.scenarios.examples import examples

    spec = examples()[0]["scenario"]
    resolved = services.resolve(spec)
    report = services.evaluate_resolved(resolved)
    scenario = Scenario.objects.create(owner=owner, name="70B", spec=spec)
    now = timezone.now()
    Run.objects.bulk_create(
        Run(scenario=scenario, status=Run.Status.SUCCEEDED, progress=1.0, input=resolved, result=report,
            input_hash=f"{i:064x}", engine_version=simulation.ENGINE_VERSION, created_at=now,
            started_at=now, finished_at=now) for i in range(50))
    return scenario, report


def test_a_run_list_carries_summaries_not_reports(owner_api, fifty_runs):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    scenario, report = fifty_runs
    assert len(json.dumps(report)) > 100_000
    for url in ("/api/v1/runs/", f"/api/v1/scenarios/{scenario.pk}/runs/"):
        with CaptureQueriesContext(connection) as queries:
            r = owner_api.get(url)
        assert r.status_code == 200
        assert len(r.content) < 50_000, (url, len(r.content))       # was 6 MB
        rows = r.json()["results"]
        assert len(rows) == 50
        assert "result" not in rows[0] and "input" not in rows[0]
        assert rows[0]["owner"] == "owner"
        assert rows[0]["summary"] == {
            "fits": report["fits"], "fit_state": report["fit_state"],
            "hbm_per_gpu_bytes": report["memory"]["per_gpu"]["hbm"]["total_bytes"],
            "hbm_capacity_per_gpu_bytes": report["memory"]["per_gpu"]["hbm"]["capacity_bytes"],
            "step_time_s": report["step"]["time_s"],
            "step_time_band_s": report["step"]["time_band_s"], "step_validated": report["step"]["validated"],
            "tokens_per_s": report["throughput"]["tokens_per_s"],
            "bottleneck": report["verdict"]["bottleneck"],
            "usd_per_hour": report["cost"]["usd_per_hour"],
            "usd_per_million_tokens": report["cost"]["usd_per_million_tokens"],
            "violations": [{k: v[k] for k in ("tier", "scope", "over_bytes")} for v in report["violations"]]}
        runs_selects = [q["sql"] for q in queries.captured_queries
                        if q["sql"].startswith("SELECT") and '"scenarios_run"."id"' in _selected_columns(q["sql"])]
        assert runs_selects, url
        for sql in runs_selects:                # the database does not ship the reports
            assert not _plain_column(sql, '"scenarios_run"."result"'), sql
            assert not _plain_column(sql, '"scenarios_run"."input"'), sql
    detail = owner_api.get(f"/api/v1/runs/{rows[0]['id']}/").json()
    assert detail["result"] == report and detail["owner"] == "owner" and detail["input"]


def test_a_list_summarizes_only_succeeded_runs(owner_api, scenario):
    run = Run.objects.get(pk=start(owner_api, scenario).json()["id"])
    assert owner_api.get("/api/v1/runs/").json()["results"][0]["summary"] is None
    run.mark_failed("boom")
    row = owner_api.get("/api/v1/runs/").json()["results"][0]
    assert row["summary"] is None and row["error"] == "boom"


def test_a_scenario_list_does_not_load_the_last_runs_report(owner_api, fifty_runs):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    with CaptureQueriesContext(connection) as queries:
        rows = owner_api.get("/api/v1/scenarios/").json()["results"]
    assert rows[0]["last_run"]["status"] == "succeeded"
    for q in queries.captured_queries:
        if q["sql"].startswith("SELECT"):
            assert not _plain_column(q["sql"], '"scenarios_run"."result"'), q["sql"]
