"""``Idempotency-Key`` on run, sweep and comparison creation (tierlab/idempotency.py): a repeat
replays the first response and makes nothing new; the same key with another request is a 422."""

import threading
import time
from datetime import timedelta

import pytest
from django.db import connection
from django.utils import timezone

from tests.web.dashboard_helpers import spec, strategies
from tierlab.dashboard.models import Comparison, Sweep, SweepChunk
from tierlab.models import IdempotencyKey
from tierlab.scenarios import services
from tierlab.scenarios.models import Run, Scenario

pytestmark = pytest.mark.django_db

AXES = [{"path": "cluster.num_nodes", "values": [1, 2]}]


@pytest.fixture
def scenario(owner):
    return Scenario.objects.create(owner=owner, name="7B", spec=spec())


def start(api, scenario, key=None):
    headers = {"HTTP_IDEMPOTENCY_KEY": key} if key is not None else {}
    return api.post(f"/api/v1/scenarios/{scenario.pk}/runs/", **headers)


def sweep(api, scenario, key, axes=AXES):
    return api.post("/api/v1/sweeps/", {"scenario": scenario.pk, "axes": axes}, format="json",
                    HTTP_IDEMPOTENCY_KEY=key)


def test_a_repeated_run_request_replays_the_first_response(owner_api, scenario):
    first = start(owner_api, scenario, "run-1")
    assert first.status_code == 202 and "Idempotent-Replayed" not in first
    Run.objects.filter(pk=first.json()["id"]).update(status=Run.Status.RUNNING)   # time passes
    again = start(owner_api, scenario, "run-1")
    assert again.status_code == 202
    # the same run, as it is now (the key's row keeps its id, not the first body)
    assert again.json() == owner_api.get(f"/api/v1/runs/{first.json()['id']}/").json()
    assert again.json()["id"] == first.json()["id"] and again.json()["status"] == "running"
    assert again["Location"] == first["Location"] == f"/api/v1/runs/{first.json()['id']}/"
    assert again["Idempotent-Replayed"] == "true"
    assert Run.objects.count() == 1


def test_without_a_key_or_with_a_new_one_each_request_counts(owner_api, scenario):
    start(owner_api, scenario)
    start(owner_api, scenario)
    start(owner_api, scenario, "a")
    start(owner_api, scenario, "b")
    assert Run.objects.count() == 4


def test_the_same_key_for_another_request_is_422(owner_api, owner, scenario):
    other = Scenario.objects.create(owner=owner, name="other", spec=spec())
    assert start(owner_api, scenario, "k").status_code == 202
    r = start(owner_api, other, "k")                     # another URL
    assert r.status_code == 422 and "Idempotency-Key" in r.json()
    assert "different request" in r.json()["Idempotency-Key"][0]
    assert sweep(owner_api, scenario, "s").status_code == 202
    r = sweep(owner_api, scenario, "s", axes=[{"path": "cluster.num_nodes", "values": [1, 4]}])   # another body
    assert r.status_code == 422 and list(r.json()) == ["Idempotency-Key"]
    assert Run.objects.count() == 1 and Sweep.objects.count() == 1


def test_a_repeated_sweep_makes_one_sweep_and_queues_its_chunks_once(owner_api, scenario, settings,
                                                                       django_capture_on_commit_callbacks):
    settings.TIERLAB_SWEEP_CHUNK_POINTS = 1
    with django_capture_on_commit_callbacks() as callbacks:
        first = sweep(owner_api, scenario, "sweep-1")
        again = sweep(owner_api, scenario, "sweep-1")
    assert first.status_code == again.status_code == 202
    assert again.json() == first.json() and again["Idempotent-Replayed"] == "true"
    assert Sweep.objects.count() == 1 and SweepChunk.objects.count() == 2
    assert len(callbacks) == 1                            # one enqueue of the chunks


def test_the_body_is_compared_as_json_not_as_text(owner_api, scenario):
    body = '{"scenario": %d, "axes": [{"path": "cluster.num_nodes", "values": [1, 2]}]}' % scenario.pk
    spaced = '{ "axes" : [ {"values": [1, 2], "path": "cluster.num_nodes"} ],  "scenario": %d }' % scenario.pk
    first = owner_api.post("/api/v1/sweeps/", body, content_type="application/json", HTTP_IDEMPOTENCY_KEY="j")
    again = owner_api.post("/api/v1/sweeps/", spaced, content_type="application/json", HTTP_IDEMPOTENCY_KEY="j")
    assert again.status_code == 202 and again.json() == first.json()
    assert Sweep.objects.count() == 1


def test_a_repeated_comparison_makes_one(owner_api, owner):
    ids = [s.pk for s in strategies(owner, ("zero2", "zero3"))]
    first = owner_api.post("/api/v1/comparisons/", {"scenarios": ids}, format="json", HTTP_IDEMPOTENCY_KEY="c")
    again = owner_api.post("/api/v1/comparisons/", {"scenarios": ids}, format="json", HTTP_IDEMPOTENCY_KEY="c")
    assert first.status_code == again.status_code == 201
    assert again.json()["id"] == first.json()["id"] and Comparison.objects.count() == 1
    assert Run.objects.count() == 2


def test_keys_belong_to_their_user(owner_api, teammate_api, teammate, scenario):
    theirs = Scenario.objects.create(owner=teammate, name="theirs", spec=spec())
    mine = start(owner_api, scenario, "same").json()
    # nobody replays someone else's response by guessing their key
    assert start(teammate_api, scenario, "same").status_code == 403
    their_run = start(teammate_api, theirs, "same")
    assert their_run.status_code == 202 and their_run.json()["id"] != mine["id"]
    assert Run.objects.count() == 2


def test_a_key_expires_after_24_hours(owner_api, scenario):
    first = start(owner_api, scenario, "old").json()
    IdempotencyKey.objects.update(created_at=timezone.now() - timedelta(hours=24, seconds=1))
    again = start(owner_api, scenario, "old")
    assert again.status_code == 202 and again.json()["id"] != first["id"]
    assert IdempotencyKey.objects.count() == 1
    start(owner_api, scenario, "other")
    IdempotencyKey.objects.filter(key="other").update(created_at=timezone.now() - timedelta(days=2))
    start(owner_api, scenario, "third")                 # expired keys are cleared away
    assert set(IdempotencyKey.objects.values_list("key", flat=True)) == {"old", "third"}
    IdempotencyKey.objects.update(created_at=timezone.now() - timedelta(hours=23))
    assert start(owner_api, scenario, "old").json()["id"] == again.json()["id"]


def test_a_failed_request_keeps_nothing_and_can_be_retried(owner_api, scenario):
    good = scenario.spec
    Scenario.objects.filter(pk=scenario.pk).update(spec={**good, "model": {"preset": "no-such-model"}})
    r = start(owner_api, scenario, "retry")
    assert r.status_code == 400 and "scenario.model.preset" in r.json()
    assert not IdempotencyKey.objects.exists() and not Run.objects.exists()
    Scenario.objects.filter(pk=scenario.pk).update(spec=good)
    assert start(owner_api, scenario, "retry").status_code == 202


def test_a_refused_request_keeps_nothing(stranger_api, teammate_api, scenario):
    assert start(stranger_api, scenario, "x").status_code == 404
    assert start(teammate_api, scenario, "x").status_code == 403
    assert not IdempotencyKey.objects.exists()


@pytest.mark.parametrize("key", ["", "has space", "x" * 256, "naïve"])
def test_a_malformed_key_is_a_400_naming_the_header(owner_api, scenario, key):
    r = owner_api.post(f"/api/v1/scenarios/{scenario.pk}/runs/", HTTP_IDEMPOTENCY_KEY=key.encode().decode("latin-1"))
    assert r.status_code == 400 and "Idempotency-Key" in r.json()
    assert not Run.objects.exists()


def test_a_key_of_255_characters_is_fine(owner_api, scenario):
    assert start(owner_api, scenario, "k" * 255).status_code == 202


def test_reading_ignores_the_key(owner_api, scenario):
    start(owner_api, scenario)
    for _ in range(2):
        r = owner_api.get(f"/api/v1/scenarios/{scenario.pk}/runs/", HTTP_IDEMPOTENCY_KEY="r")
        assert r.status_code == 200 and r.json()["count"] == 1
    assert not IdempotencyKey.objects.exists()


@pytest.mark.django_db(transaction=True)
def test_concurrent_duplicates_make_one_run(owner, scenario, monkeypatch):
    """Two identical requests at once: the second waits for the first's transaction and
    replays its response (the unique (user, key) constraint decides who was first)."""
    from rest_framework.test import APIClient

    slow_start = services.start_run

    def start_run(s):
        time.sleep(0.3)                  # keep the first request inside its transaction a while
        return slow_start(s)

    monkeypatch.setattr(services, "start_run", start_run)
    monkeypatch.setattr(services, "enqueue", lambda run: None)
    barrier, responses = threading.Barrier(2), []

    def post():
        try:
            client = APIClient()
            client.force_authenticate(owner)
            barrier.wait()
            responses.append(start(client, scenario, "together"))
        finally:
            connection.close()

    threads = [threading.Thread(target=post) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert [r.status_code for r in responses] == [202, 202]
    assert responses[0].json()["id"] == responses[1].json()["id"]
    assert sorted(r.get("Idempotent-Replayed", "") for r in responses) == ["", "true"]
    assert Run.objects.count() == 1


def test_a_key_keeps_the_made_objects_id_not_its_body(owner_api, scenario):
    """A reused run's response carries the whole report (up to ~550 kB); the key's row keeps
    its status, Location and id, and a replay reads the run again."""
    services.execute_run(start(owner_api, scenario).json()["id"])
    first = start(owner_api, scenario, "reuse")
    assert first.json()["reused_from"] and first.json()["result"]
    row = IdempotencyKey.objects.get(key="reuse")
    assert row.response_body == {"id": first.json()["id"]} and row.response_status == 202
    again = start(owner_api, scenario, "reuse")
    assert again.json() == first.json() and again["Location"] == first["Location"]
    other = Scenario.objects.create(owner=scenario.owner, name="b", spec=spec(**{"strategy.kind": "zero2"}))
    for key, make in (("c", lambda k: owner_api.post("/api/v1/comparisons/", {"scenarios": [scenario.pk, other.pk]},
                                                     format="json", HTTP_IDEMPOTENCY_KEY=k)),
                      ("s", lambda k: sweep(owner_api, scenario, k))):
        made = make(key)
        assert IdempotencyKey.objects.get(key=key).response_body == {"id": made.json()["id"]}
        assert make(key).json() == made.json()
