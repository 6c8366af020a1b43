"""How a sweep is cut into chunks (issue #17: web sweeps at the engine's rate): chunk size
from the number of points and worker processes, capped so heavy points end inside the time
limit; progress written every PROGRESS_EVERY_S, not after every point; 10,000-point grids."""

import math
from unittest import mock

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from tests.web.dashboard_helpers import spec
from tierlab.dashboard import sweeps
from tierlab.dashboard.models import SweepChunk
from tierlab.dashboard.sweeps import chunk_size
from tierlab.scenarios.models import Scenario


@pytest.mark.parametrize("total, workers, per_worker, units, budget_s, expected", [
    # 4 chunks wanted; 10^7 units are 100 chunks' worth of 10^5: 10,000 / 4 = 2,500
    (10_000, 2, 2, 1_000, math.inf, 2_500),
    # 400 x 1,000 = 4 x 10^5 units: 4 chunks' worth, 4 wanted: 100 each
    (400, 2, 2, 1_000, math.inf, 100),
    # 400 x 998 = 399,200 units: 3 chunks' worth, rounded down to 2 processes: 200 each
    (400, 2, 2, 998, math.inf, 200),
    # 3 points, 2,994 units: less than one chunk's worth: one chunk of all 3
    (3, 2, 2, 998, math.inf, 3),
    # 100 points of 8 s: 25 a chunk wanted, 27 s holds 3 (24 s), not 4 (32 s)
    (100, 2, 2, 8_000_000, 27.0, 3),
    # one point over the budget: still a chunk of 1
    (10, 2, 2, 60_000_000, 27.0, 1),
    # unknown work (no valid point sampled): 4 chunks of ceil(10 / 4) = 3
    (10, 2, 2, 0, 27.0, 3),
    # 5 processes, 3 chunks each: 15 chunks of ceil(10,000 / 15) = 667
    (10_000, 5, 3, 1_000, math.inf, 667),
    # 7 chunks' worth on 5 processes: rounded down to 5: 2,000 points of 350 units each
    (2_000, 5, 3, 350, math.inf, 400),
])
def test_chunk_size_by_hand(total, workers, per_worker, units, budget_s, expected):
    assert chunk_size(total, workers, per_worker, units, budget_s) == expected


def test_chunk_size_refuses_zero_counts():
    with pytest.raises(ValueError):
        chunk_size(0, 2, 2)
    with pytest.raises(ValueError):
        chunk_size(10, 0, 2)


@pytest.fixture
def base(owner):
    return Scenario.objects.create(owner=owner, name="7B", spec=spec(**{"training.global_batch_size": 16}))


def chunk_sizes(sweep) -> list[int]:
    return [c.size for c in sweep.chunks.order_by("start")]


@pytest.mark.django_db
def test_a_new_sweep_gets_chunks_from_its_points_and_the_workers(owner, base, settings):
    settings.TIERLAB_SWEEP_WORKERS, settings.TIERLAB_SWEEP_CHUNKS_PER_WORKER = 3, 2
    settings.TIERLAB_SWEEP_CHUNK_POINTS = 0
    axes = [{"path": "training.seq_len", "values": [256 * (i + 1) for i in range(80)]},
            {"path": "training.micro_batch_size", "values": [1, 2, 4, 8, 16]}]
    work = sweeps.point_work_units(base.spec, axes, 400)
    assert 500 < work < 10_000                            # a 7B point: about a millisecond
    # 400 x ~1,200 units: 4 chunks' worth, 6 wanted, rounded down to 3 processes: 134 a chunk
    assert chunk_size(400, 3, 2, work, 0.1 * settings.CELERY_TASK_SOFT_TIME_LIMIT) == 134
    with mock.patch("tierlab.dashboard.tasks.run_sweep_chunk.apply_async"):
        sweep = sweeps.create_sweep(owner, base.pk, axes)
    assert chunk_sizes(sweep) == [134, 134, 132]
    settings.TIERLAB_SWEEP_CHUNK_POINTS = 150             # the setting fixes it
    with mock.patch("tierlab.dashboard.tasks.run_sweep_chunk.apply_async"):
        sweep = sweeps.create_sweep(owner, base.pk, axes)
    assert chunk_sizes(sweep) == [150, 150, 100]


@pytest.mark.django_db
def test_heavy_points_get_small_chunks_within_the_time_limit(owner, base, settings):
    settings.TIERLAB_SWEEP_WORKERS, settings.TIERLAB_SWEEP_CHUNKS_PER_WORKER = 2, 2
    settings.TIERLAB_SWEEP_CHUNK_POINTS, settings.CELERY_TASK_SOFT_TIME_LIMIT = 0, 270
    axes = [{"path": "training.seq_len", "values": [512 * (i + 1) for i in range(40)]}]
    with mock.patch.object(sweeps, "point_work_units", return_value=5_000_000), \
            mock.patch("tierlab.dashboard.tasks.run_sweep_chunk.apply_async"):
        sweep = sweeps.create_sweep(owner, base.pk, axes)
    assert chunk_sizes(sweep) == [5] * 8                  # 27 s / 5 s: 5 a chunk, not 10


@pytest.mark.django_db
def test_a_chunk_writes_its_progress_every_interval_not_every_point(owner, base, settings, monkeypatch):
    settings.TIERLAB_SWEEP_CHUNK_POINTS = 0
    monkeypatch.setattr(sweeps, "PROGRESS_EVERY_S", 3600.0)
    axes = [{"path": "training.seq_len", "values": [512 * (i + 1) for i in range(8)]}]
    with mock.patch("tierlab.dashboard.tasks.run_sweep_chunk.apply_async"):
        sweep = sweeps.create_sweep(owner, base.pk, axes)
    (chunk,) = sweep.chunks.all()
    with CaptureQueriesContext(connection) as queries:
        sweeps.execute_chunk(chunk.pk)
    progress = [q["sql"] for q in queries.captured_queries
                if q["sql"].startswith("UPDATE") and '"done" = (' in q["sql"]]
    cancel_checks = [q["sql"] for q in queries.captured_queries
                     if q["sql"].startswith('SELECT 1 AS "a" FROM "dashboard_sweep"')]
    assert progress == [] and len(cancel_checks) == 1, (progress, cancel_checks)   # was 8 and 8
    chunk.refresh_from_db()
    assert chunk.status == SweepChunk.Status.DONE and chunk.done == 8
    assert [r["status"] for r in chunk.results] == ["done"] * 8


@pytest.mark.django_db
def test_a_ten_thousand_point_sweep_is_made_in_a_request(owner_api, base, settings):
    """The grid's values are checked without building all 10,000 points (each is accepted at
    its first point), and the chunks are a handful, not 2,000."""
    import time

    settings.TIERLAB_SWEEP_CHUNK_POINTS = 0
    settings.TIERLAB_SWEEP_WORKERS, settings.TIERLAB_SWEEP_CHUNKS_PER_WORKER = 2, 2
    axes = [{"path": "training.seq_len", "values": [256 + 16 * i for i in range(100)]},
            {"path": "training.global_batch_size", "values": [16 * (i + 1) for i in range(100)]}]
    built = []
    real = sweeps.engine_sweep.point_at
    with mock.patch("tierlab.dashboard.tasks.run_sweep_chunk.apply_async"), \
            mock.patch.object(sweeps.engine_sweep, "point_at", side_effect=lambda *a: built.append(a[2]) or real(*a)):
        started = time.perf_counter()
        r = owner_api.post("/api/v1/sweeps/", {"scenario": base.pk, "axes": axes}, format="json")
        elapsed = time.perf_counter() - started
    assert r.status_code == 202, r.json()
    assert r.json()["total_points"] == 10_000 and r.json()["chunks"] == 4
    assert len(built) < 300, len(built)                  # ~100 to check values + 33 to size chunks
    assert elapsed < 5.0
    axes[1]["values"].append(10_000)
    r = owner_api.post("/api/v1/sweeps/", {"scenario": base.pk, "axes": axes}, format="json")
    assert r.status_code == 400 and r.json() == {"axes": ["10100 points; at most 10,000 per sweep"]}


@pytest.mark.django_db
def test_a_point_report_json_cannot_hold_fails_that_point_only(owner, base, settings, monkeypatch):
    """Strict JSON has no inf or NaN (RFC 8259 section 6), nor has PostgreSQL's jsonb: one
    point whose summary held one made storing the chunk raise DataError, and the chunk stayed
    running until the read-time check. That point fails, naming the field; the rest are done."""
    settings.TIERLAB_SWEEP_CHUNK_POINTS = 0
    axes = [{"path": "training.seq_len", "values": [512, 1024, 2048]}]
    real = sweeps.engine_sweep.summarize

    def summarize(point, **lookups):
        out = real(point, **lookups)
        if point["index"] == 1:
            out["step_time_s"] = float("nan")
        return out

    monkeypatch.setattr(sweeps.engine_sweep, "summarize", summarize)
    with mock.patch("tierlab.dashboard.tasks.run_sweep_chunk.apply_async"):
        sweep = sweeps.create_sweep(owner, base.pk, axes)
    (chunk,) = sweep.chunks.all()
    sweeps.execute_chunk(chunk.pk)
    chunk.refresh_from_db()
    sweep.refresh_from_db()
    assert chunk.status == SweepChunk.Status.DONE
    assert [r["status"] for r in chunk.results] == ["done", "failed", "done"]
    assert "step_time_s = nan" in chunk.results[1]["error"] and chunk.results[1]["fits"] is False
    assert sweep.status == "succeeded"
