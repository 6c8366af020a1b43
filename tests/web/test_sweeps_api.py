"""/api/v1/sweeps/: a grid over one or two fields, one Celery task per chunk of points,
progress, results (invalid and infeasible points included), Pareto front and cancel."""

from datetime import timedelta
from unittest import mock

import pytest
from django.utils import timezone

from tests.web.dashboard_helpers import run_chunks, spec
from tierlab.dashboard import sweeps
from tierlab.dashboard.models import Sweep, SweepChunk
from tierlab.scenarios.models import Scenario

URL = "/api/v1/sweeps/"
pytestmark = pytest.mark.django_db

NODES_X_MICRO = [{"path": "cluster.num_nodes", "values": [1, 2]},
                 {"path": "training.micro_batch_size", "values": [1, 2, 3]}]


@pytest.fixture
def base(owner):
    return Scenario.objects.create(owner=owner, name="7B ZeRO-3", spec=spec(**{"training.global_batch_size": 16}))


def create(client, scenario, axes, **extra):
    return client.post(URL, {"scenario": scenario.pk if hasattr(scenario, "pk") else scenario,
                             "axes": axes, **extra}, format="json")


def test_it_requires_login(anon_api, base):
    assert anon_api.get(URL).status_code == 401
    assert create(anon_api, base, NODES_X_MICRO).status_code == 401


def test_it_queues_one_task_per_chunk(owner_api, base, settings, django_capture_on_commit_callbacks):
    settings.TIERLAB_SWEEP_CHUNK_POINTS = 4
    with mock.patch("tierlab.dashboard.tasks.run_sweep_chunk.apply_async") as send:
        with django_capture_on_commit_callbacks(execute=True):
            r = create(owner_api, base, NODES_X_MICRO)
    assert r.status_code == 202, r.json()
    body = r.json()
    assert body["status"] == "queued" and body["progress"] == 0.0
    assert body["total_points"] == 6 and body["chunks"] == 2
    assert body["name"] == "7B ZeRO-3: Number of nodes × Micro batch size"
    # the response carries no points (a 10,000-point sweep's were ~1 MB): points_url has them
    assert "points" not in body and body["points_url"] == f"{URL}{body['id']}/?points=all"
    points = owner_api.get(body["points_url"]).json()["points"]
    assert [p["status"] for p in points] == ["pending"] * 6
    assert points[4]["values"] == {"cluster.num_nodes": 2, "training.micro_batch_size": 2}
    chunks = SweepChunk.objects.order_by("start")
    assert [(c.start, c.stop) for c in chunks] == [(0, 4), (4, 6)]
    assert [call.kwargs["args"] for call in send.call_args_list] == [[c.pk] for c in chunks]
    assert {call.kwargs["queue"] for call in send.call_args_list} == {settings.TIERLAB_RUN_QUEUE}


def test_chunks_fill_in_results_progress_and_the_pareto_front(owner_api, base, settings):
    settings.TIERLAB_SWEEP_CHUNK_POINTS = 4
    pk = create(owner_api, base, NODES_X_MICRO).json()["id"]
    first = SweepChunk.objects.order_by("start").first()
    sweeps.execute_chunk(first.pk)
    body = owner_api.get(f"{URL}{pk}/").json()
    # point 2 (1 node x micro batch 3) is invalid: it failed, it is not one evaluated
    assert body["status"] == "running" and body["progress"] == pytest.approx(4 / 6)
    assert (body["done_points"], body["failed_points"]) == (3, 1)
    assert [p["status"] for p in body["points"]] == ["done", "done", "failed", "done"] + ["pending"] * 2
    run_chunks()
    body = owner_api.get(f"{URL}{pk}/").json()
    assert body["status"] == "succeeded" and body["progress"] == 1.0 and body["finished_at"]
    by = {(p["values"]["cluster.num_nodes"], p["values"]["training.micro_batch_size"]): p for p in body["points"]}
    # 16 sequences over 8 or 16 GPUs: micro batch 3 does not divide; 2 nodes x micro 2 = 32 > 16
    assert by[(1, 3)]["valid"] is False and "global_batch_size" in by[(1, 3)]["error"]
    assert by[(2, 2)]["valid"] is False
    assert by[(1, 1)]["valid"] is True and by[(1, 1)]["step_time_s"] > 0
    assert by[(1, 1)]["usd_per_million_tokens"] > 0
    assert body["pareto"] and all(body["points"][i]["fits"] for i in body["pareto"])


def test_every_point_downloads_as_csv(owner_api, stranger_api, base):
    """The page lists the first 100 points; the CSV has every one, in grid order, with the
    axis values and the numbers in SI units (the API's own figures, unrounded)."""
    import csv
    import io

    pk = create(owner_api, base, NODES_X_MICRO).json()["id"]
    run_chunks()
    body = owner_api.get(f"{URL}{pk}/").json()
    r = owner_api.get(f"{URL}{pk}/points.csv")
    assert r.status_code == 200 and r["Content-Type"].startswith("text/csv")
    assert r["Content-Disposition"].endswith('-points.csv"')
    rows = list(csv.DictReader(io.StringIO(r.content.decode())))
    assert [int(x["index"]) for x in rows] == list(range(len(body["points"]))) and len(rows) == 6
    for x, p in zip(rows, body["points"]):
        assert int(x["cluster.num_nodes"]) == p["values"]["cluster.num_nodes"]
        assert x["pareto"] == ("true" if p["index"] in body["pareto"] else "false")
        if p.get("step_time_s") is not None:
            assert float(x["step_time_s"]) == p["step_time_s"]
            # 16-bit points: MFU over the 16-bit peak is their MFU (FP8 ones: test_sweep.py)
            assert x["mfu_peak_precision"] == p["mfu_peak_precision"] == "16-bit"
            assert float(x["mfu_16bit_peak"]) == p["mfu_16bit_peak"] == p["mfu"]
        assert x["valid"] == ("false" if p.get("valid") is False else "true")
    assert stranger_api.get(f"{URL}{pk}/points.csv").status_code == 404


def test_a_point_that_does_not_fit_is_a_result(owner_api, owner):
    base = Scenario.objects.create(owner=owner, name="13B", spec=spec(**{"model.preset": "llama2-13b"}))
    pk = create(owner_api, base, [{"path": "strategy.kind", "values": ["ddp", "zero3"]}]).json()["id"]
    run_chunks()
    body = owner_api.get(f"{URL}{pk}/").json()
    ddp, zero3 = body["points"]
    assert ddp["valid"] is True and ddp["fits"] is False and ddp["violations"]
    assert zero3["fits"] is True
    assert body["pareto"] == [1]


@pytest.mark.parametrize("axes,field", [
    ([], "axes"),
    ("nodes", "axes"),
    ([{"path": "", "values": [1]}], "axes.0.path"),
    ([{"path": "cluster.num_nodes", "values": []}], "axes.0.values"),
    ([{"path": "cluster.num_nodes", "values": [1]}, {"path": "cluster.flux", "values": [1]}], "axes.1.path"),
    ([{"path": "cluster.num_nodes", "values": [1]}, {"path": "cluster.num_nodes", "values": [2]}], "axes.1.path"),
    ([{"path": "cluster.num_nodes", "values": [1, 1]}], "axes.0.values"),
    ([{"path": "a", "values": list(range(101))}, {"path": "b", "values": list(range(100))}], "axes"),
    ([{"path": "x", "values": [1]}] * 3, "axes"),
    # a misspelt key is refused, not dropped (dropped, the node axis kept the global batch fixed)
    ([{"path": "cluster.num_nodes", "values": [1, 2], "scale_global_batch": True}], "axes.0.scale_global_batch"),
    ([{"path": "cluster.num_nodes", "values": [1]}, {"path": "training.seq_len", "values": [2048], "label": "x"}],
     "axes.1.label"),
])
def test_bad_axes_are_a_400_naming_the_field(owner_api, base, axes, field):
    r = create(owner_api, base, axes)
    assert r.status_code == 400 and field in r.json(), r.json()
    assert Sweep.objects.count() == 0


def test_every_bad_axis_field_is_named_at_once(owner_api, base):
    r = create(owner_api, base, [{"path": "cluster.flux", "values": [1, 1]},
                                 {"path": "training.micro_batch_size", "values": [1, -2, "x"]}])
    assert r.status_code == 400
    assert sorted(r.json()) == ["axes.0.path", "axes.0.values"]
    r = create(owner_api, base, [{"path": "training.micro_batch_size", "values": [1, -2, "x"]}])
    assert sorted(r.json()) == ["axes.0.values.1", "axes.0.values.2"], r.json()


def test_a_strangers_scenario_cannot_be_swept(stranger_api, base):
    r = create(stranger_api, base, NODES_X_MICRO)
    assert r.status_code == 400 and list(r.json()) == ["scenario"]


def test_strangers_see_404(owner_api, stranger_api, base):
    pk = create(owner_api, base, NODES_X_MICRO).json()["id"]
    assert stranger_api.get(f"{URL}{pk}/").status_code == 404
    assert stranger_api.post(f"{URL}{pk}/cancel/").status_code == 404
    assert stranger_api.get(URL).json()["results"] == []


def test_cancel_stops_the_remaining_chunks(owner_api, base, settings):
    settings.TIERLAB_SWEEP_CHUNK_POINTS = 2
    pk = create(owner_api, base, NODES_X_MICRO).json()["id"]
    first = SweepChunk.objects.order_by("start").first()
    sweeps.execute_chunk(first.pk)
    r = owner_api.post(f"{URL}{pk}/cancel/")
    assert r.status_code == 200
    body = r.json()
    assert body["status"] == "cancelled" and body["cancelled"] is True
    # the points evaluated, not the total (it read 6 of 6, 100 %); the cancelled ones apart
    assert (body["done_points"], body["cancelled_points"], body["total_points"]) == (2, 4, 6)
    assert body["progress"] == pytest.approx(2 / 6)
    assert [p["status"] for p in body["points"]] == ["done"] * 2 + ["cancelled"] * 4
    run_chunks()          # a chunk the broker still delivers does nothing
    again = owner_api.get(f"{URL}{pk}/").json()
    assert again["points"][3]["status"] == "cancelled"
    assert (again["done_points"], again["cancelled_points"]) == (2, 4)
    listed = owner_api.get(URL).json()["results"][0]
    assert listed["progress"] == pytest.approx(2 / 6)
    again = owner_api.post(f"{URL}{pk}/cancel/")
    assert again.status_code == 400 and "status" in again.json()


def test_a_running_chunk_stops_before_its_next_point_when_cancelled(base, owner, monkeypatch):
    monkeypatch.setattr(sweeps, "PROGRESS_EVERY_S", 0.0)      # it checks before every point
    sweep = sweeps.create_sweep(owner, base.pk, [{"path": "training.seq_len", "values": [1024, 2048, 4096]}])
    chunk = sweep.chunks.get()
    real = sweeps.engine_sweep.summarize
    calls = []

    def summarize_then_cancel(point, **lookups):
        calls.append(point["index"])
        if len(calls) == 1:
            sweeps.cancel_sweep(sweep)
        return real(point, **lookups)

    with mock.patch.object(sweeps.engine_sweep, "summarize", side_effect=summarize_then_cancel):
        sweeps.execute_chunk(chunk.pk)
    chunk.refresh_from_db()
    assert calls == [0] and chunk.status == "cancelled"
    assert [r["status"] for r in chunk.results] == ["done", "cancelled", "cancelled"]
    assert (chunk.done, chunk.cancelled) == (1, 2)
    sweep.refresh_from_db()
    assert (sweep.done_points, sweep.cancelled_points, sweep.progress) == (1, 2, pytest.approx(1 / 3))


def test_a_chunk_that_crashes_marks_its_points_failed_with_the_reason(owner_api, base, settings):
    settings.TIERLAB_SWEEP_CHUNK_POINTS = 3
    pk = create(owner_api, base, NODES_X_MICRO).json()["id"]
    first, second = SweepChunk.objects.order_by("start")
    sweeps.execute_chunk(first.pk)
    with mock.patch.object(sweeps.engine_sweep, "summarize", side_effect=MemoryError("out of memory")):
        sweeps.execute_chunk(second.pk)
    body = owner_api.get(f"{URL}{pk}/").json()
    assert body["status"] == "succeeded"              # the sweep ends; its failed points say why
    # point 2 is invalid (micro batch 3 does not divide 16): failed too, by the engine
    assert [p["status"] for p in body["points"]] == ["done", "done", "failed"] + ["failed"] * 3
    assert body["points"][5]["error"] == "engine error: MemoryError: out of memory"
    assert body["points"][5]["valid"] is None and body["points"][2]["valid"] is False   # never judged / refused
    assert (body["done_points"], body["failed_points"]) == (2, 4)
    assert body["error"] == "3 of 6 points failed: engine error: MemoryError: out of memory"


def test_a_sweep_whose_chunks_all_fail_is_failed(owner_api, base):
    pk = create(owner_api, base, [{"path": "cluster.num_nodes", "values": [1, 2]}]).json()["id"]
    with mock.patch.object(sweeps.engine_sweep, "summarize", side_effect=RuntimeError("bug")):
        run_chunks()
    body = owner_api.get(f"{URL}{pk}/").json()
    assert body["status"] == "failed" and "RuntimeError: bug" in body["error"]


def test_a_broker_failure_fails_the_chunks_instead_of_leaving_them_queued(owner_api, base,
                                                                           django_capture_on_commit_callbacks):
    with mock.patch("tierlab.dashboard.tasks.run_sweep_chunk.apply_async", side_effect=ConnectionError("refused")):
        with django_capture_on_commit_callbacks(execute=True):
            pk = create(owner_api, base, NODES_X_MICRO).json()["id"]
    body = owner_api.get(f"{URL}{pk}/").json()
    assert body["status"] == "failed" and "broker" in body["error"]
    assert {p["status"] for p in body["points"]} == {"failed"}


def test_a_chunk_whose_worker_died_is_failed_on_read(owner_api, base, settings):
    settings.TIERLAB_SWEEP_CHUNK_POINTS = 100
    pk = create(owner_api, base, NODES_X_MICRO).json()["id"]
    long_ago = timezone.now() - timedelta(seconds=settings.TIERLAB_RUN_STALE_AFTER_S + 5)
    SweepChunk.objects.update(status="running", started_at=long_ago, done=2)
    Sweep.objects.update(status="running", started_at=long_ago)
    body = owner_api.get(f"{URL}{pk}/").json()
    assert body["status"] == "failed" and "worker lost" in body["error"]
    assert body["progress"] == 1.0


def test_a_redelivered_chunk_starts_over_without_counting_twice(base, owner):
    sweep = sweeps.create_sweep(owner, base.pk, [{"path": "cluster.num_nodes", "values": [1, 2]}])
    chunk = sweep.chunks.get()
    SweepChunk.objects.filter(pk=chunk.pk).update(status="running", done=1, started_at=timezone.now())
    sweeps.execute_chunk(chunk.pk)
    sweep.refresh_from_db()
    assert sweep.status == "succeeded" and sweep.done_points == 2
    sweeps.execute_chunk(chunk.pk)        # and once finished, a late duplicate does nothing
    assert sweep.chunks.get().done == 2


def test_values_from_a_form_are_typed():
    assert sweeps.parse_values("1, 2,4") == [1, 2, 4]
    assert sweeps.parse_values("none, cpu ,nvme") == ["none", "cpu", "nvme"]
    assert sweeps.parse_values("0.5, 1e-3, true, ,") == [0.5, 0.001, True]
    assert sweeps.parse_values("null, delayed") == [None, "delayed"]    # the field's null: FP8 off


def test_a_chunk_that_killed_its_worker_too_often_fails(base, owner, settings):
    settings.TIERLAB_RUN_MAX_ATTEMPTS = 2
    sweep = sweeps.create_sweep(owner, base.pk, [{"path": "cluster.num_nodes", "values": [1, 2]}])
    chunk = sweep.chunks.get()
    SweepChunk.objects.filter(pk=chunk.pk).update(status="running", attempts=2, started_at=timezone.now())
    sweeps.execute_chunk(chunk.pk)
    sweep.refresh_from_db()
    assert sweep.status == "failed" and "started 2 times" in sweep.error


def test_axes_carry_the_display_names_of_their_values(owner_api, base):
    axes = [{"path": "strategy.kind", "values": ["zero3", "fsdp_hybrid_shard"]},
            {"path": "cluster.node", "values": ["dgx-h100", "dgx-a100-80gb"]}]
    with mock.patch("tierlab.dashboard.tasks.run_sweep_chunk.apply_async"):
        body = create(owner_api, base, axes).json()
    kind, node = body["axes"]
    assert kind["values"] == ["zero3", "fsdp_hybrid_shard"]          # ids stay what was sent
    assert kind["value_labels"] == ["ZeRO-3", "FSDP HYBRID_SHARD"]
    assert node["value_labels"] == ["NVIDIA DGX H100", "NVIDIA DGX A100 (640 GB)"]
    body = owner_api.get(f"{URL}{body['id']}/").json()
    assert body["axes"][1]["value_labels"][0] == "NVIDIA DGX H100"
    with mock.patch("tierlab.dashboard.tasks.run_sweep_chunk.apply_async"):
        body = create(owner_api, base, NODES_X_MICRO).json()
    assert body["axes"][0]["value_labels"] == [None, None]             # numbers read as themselves
    axes = [{"path": "strategy.offload_optimizer", "values": ["none", "cpu", "nvme"]},
            {"path": "training.recompute", "values": ["none", "full"]}]
    with mock.patch("tierlab.dashboard.tasks.run_sweep_chunk.apply_async"):
        body = create(owner_api, base, axes).json()
    assert body["axes"][0]["value_labels"] == ["none (GPU HBM)", "CPU DDR", "NVMe"]
    assert body["axes"][1]["value_labels"] == [None, None]


def test_a_chunk_left_running_by_an_earlier_worker_of_the_same_name_is_queued_again(base, owner):
    sweep = sweeps.create_sweep(owner, base.pk, [{"path": "cluster.num_nodes", "values": [1, 2]}])
    chunk = sweep.chunks.get()
    old_task = chunk.celery_task_id
    SweepChunk.objects.filter(pk=chunk.pk).update(status="running", attempts=1, worker="celery@host",
                                                  started_at=timezone.now() - timedelta(seconds=5))
    assert sweeps.recover_chunks_of("celery@host", started_before=timezone.now()) == 1
    chunk.refresh_from_db()
    assert chunk.status == "queued" and chunk.celery_task_id != old_task
    sweeps.execute_chunk(chunk.pk, task_id=old_task)          # the old message does nothing
    assert sweep.chunks.get().status == "queued"
    sweeps.execute_chunk(chunk.pk, task_id=chunk.celery_task_id, worker="celery@host")
    sweep.refresh_from_db()
    assert sweep.status == "succeeded" and sweep.chunks.get().attempts == 2


def test_a_chunk_no_worker_takes_is_sent_again_then_its_points_fail(owner_api, base, owner, settings):
    settings.TIERLAB_RUN_QUEUED_TIMEOUT_S, settings.TIERLAB_RUN_MAX_REQUEUES = 60, 1
    sweep = sweeps.create_sweep(owner, base.pk, [{"path": "cluster.num_nodes", "values": [1, 2]}])
    long_ago = timezone.now() - timedelta(seconds=61)
    SweepChunk.objects.update(enqueued_at=long_ago)
    assert owner_api.get(f"{URL}{sweep.pk}/").json()["status"] == "queued"
    assert sweep.chunks.get().requeues == 1
    SweepChunk.objects.update(enqueued_at=long_ago)
    body = owner_api.get(f"{URL}{sweep.pk}/").json()
    assert body["status"] == "failed" and "not started: no worker took the chunk within 60 s, 2 times" in body["error"]
    assert [p["status"] for p in body["points"]] == ["failed", "failed"]


@pytest.mark.parametrize("path,values", [("training.fp8.recipe", ["tensorwise", "rowwise"]),
                                         ("training.pipeline_schedule", ["1f1b"]),
                                         ("training.lora.base_dtype", ["bf16", "nf4"])])
def test_fields_absent_from_the_base_scenario_are_sweep_axes_too(owner_api, path, values):
    # found by a newcomer: "no scenario field" for training.fp8.recipe, which exists
    from tierlab.dashboard.sweeps import validate_axes
    from tests.web.dashboard_helpers import spec
    base = spec(**{"model.preset": "llama3.1-8b", "cluster.node": "dgx-h100", "strategy.kind": "ddp"})
    assert validate_axes(base, [{"path": path, "values": values}])[0]["path"] == path


def test_an_axis_value_past_floats_range_is_a_400_naming_it(owner_api, base):
    r = create(owner_api, base, [{"path": "cluster.num_nodes", "values": [1, 10 ** 309]}])
    assert r.status_code == 400 and list(r.json()) == ["axes.0.values.1"], r.json()
    assert Sweep.objects.count() == 0


def test_a_tight_point_says_tight_in_the_api_and_the_csv(owner_api, owner):
    """A point within the engine's memory error of the capacity fits but may not (fit_state
    "tight", simulation/fit.py), as its run page says; the sweep's rows said only "fits".
    Llama-2-7B, ZeRO-3, no recomputation, micro-batch 1 on H100s: at 4,096 tokens 57 % of the
    HBM, at 8,192 94 % (inside ZeRO-3's memory error: tight), at 16,384 168 %."""
    import csv
    import io

    base = Scenario.objects.create(owner=owner, name="7B no recompute",
                                   spec=spec(**{"training.recompute": "none"}))
    pk = create(owner_api, base, [{"path": "training.seq_len", "values": [4096, 8192, 16384]}]).json()["id"]
    run_chunks()
    points = owner_api.get(f"{URL}{pk}/").json()["points"]
    assert [(p["fits"], p["fit_state"]) for p in points] == [
        (True, "fits"), (True, "tight"), (False, "does_not_fit")]
    rows = list(csv.DictReader(io.StringIO(owner_api.get(f"{URL}{pk}/points.csv").content.decode())))
    assert [(x["fits"], x["fit_state"]) for x in rows] == [
        ("true", "fits"), ("true", "tight"), ("false", "does_not_fit")]


FP8_SPEC = spec(**{"training.framework": "megatron", "training.fp8": {"recipe": "delayed"}})


@pytest.mark.parametrize("path,on", [("training.fp8", {"recipe": "tensorwise"}), ("training.fp8.recipe", "tensorwise")])
def test_a_null_axis_value_runs_the_fields_null_and_reads_as_its_meaning(owner_api, owner, path, on):
    """With FP8 on in the base, the null point of an FP8 axis runs without FP8 (16-bit
    MFU, slower) and reads "off" in the API, the CSV and the page, never "null"."""
    import csv
    import io

    base = Scenario.objects.create(owner=owner, name="7B FP8", spec=FP8_SPEC)
    r = create(owner_api, base, [{"path": path, "values": [None, on]}])
    assert r.status_code == 202, r.json()
    run_chunks()
    body = owner_api.get(f"{URL}{r.json()['id']}/").json()
    off, fp8 = body["points"]
    assert off["values"] == {path: None} and off["valid"] is True, off.get("error")
    assert off["mfu_peak_precision"] == "16-bit" and fp8["mfu_peak_precision"] == "fp8"
    assert off["step_time_s"] > fp8["step_time_s"]
    assert body["axes"][0]["value_labels"][0] == "off"
    rows = list(csv.DictReader(io.StringIO(owner_api.get(f"{URL}{r.json()['id']}/points.csv").content.decode())))
    assert rows[0][path] == "off"
    assert "null" not in {rows[0][path], rows[1][path]}


@pytest.mark.parametrize("path,accepts", [
    ("training.precision", "bf16, fp16, fp32"), ("training.flash_attention", "true or false"),
    ("strategy.offload_optimizer", "none, cpu, nvme, cxl"), ("cluster.node", "dgx-h100")])
def test_a_null_on_a_field_that_takes_none_is_a_400_naming_the_value(owner_api, base, path, accepts):
    other = {"training.precision": "bf16", "training.flash_attention": True,
             "strategy.offload_optimizer": "cpu", "cluster.node": "dgx-h100"}[path]
    r = create(owner_api, base, [{"path": "training.micro_batch_size", "values": [1, 2]},
                                 {"path": path, "values": [other, None]}])
    assert r.status_code == 400, r.json()
    assert list(r.json()) == ["axes.1.values.1"]
    message = r.json()["axes.1.values.1"][0]
    assert f"{path} takes no null" in message and accepts in message
    assert not Sweep.objects.exists()


def test_a_null_that_some_point_takes_stays_a_result(owner_api, owner):
    """A null shard group is required under FSDP hybrid shard, and no shard group under
    ZeRO-3: the grid's ZeRO-3 point takes it, so the sweep is made."""
    base = Scenario.objects.create(owner=owner, name="hybrid", spec=spec(
        **{"strategy.kind": "fsdp_hybrid_shard", "strategy.shard_group_size": 8}))
    r = create(owner_api, base, [{"path": "strategy.kind", "values": ["fsdp_hybrid_shard", "zero3"]},
                                 {"path": "strategy.shard_group_size", "values": [8, None]}])
    assert r.status_code == 202, r.json()
    assert r.json()["axes"][1]["value_labels"] == [None, "none"]


def test_a_null_number_is_its_default_and_reads_so(owner_api, base):
    """A null tensor-parallel degree is the default, 1, as the field left out."""
    r = create(owner_api, base, [{"path": "training.tensor_parallel", "values": [None, 1, 2]}])
    assert r.status_code == 202, r.json()
    assert r.json()["axes"][0]["value_labels"] == ["default", None, None]
    run_chunks()
    null, tp1, tp2 = owner_api.get(f"{URL}{r.json()['id']}/").json()["points"]
    assert null["valid"] and tp2["valid"] and null["step_time_s"] != tp2["step_time_s"]
    assert (null["hbm_total_bytes"], null["step_time_s"]) == (tp1["hbm_total_bytes"], tp1["step_time_s"])


def test_the_detail_without_points_or_a_page_of_them(owner_api, base, settings):
    settings.TIERLAB_SWEEP_CHUNK_POINTS = 4
    pk = create(owner_api, base, NODES_X_MICRO).json()["id"]
    sweeps.execute_chunk(SweepChunk.objects.order_by("start").first().pk)
    full = owner_api.get(f"{URL}{pk}/").json()                       # as before: every point
    assert len(full["points"]) == 6 and owner_api.get(f"{URL}{pk}/?points=all").json() == full
    light = owner_api.get(f"{URL}{pk}/?points=none").json()
    assert "points" not in light and light["points_url"] == f"{URL}{pk}/?points=all"
    assert {k: v for k, v in full.items() if k != "points"} == light
    assert (light["done_points"], light["failed_points"]) == (3, 1) and light["status"] == "running"
    page = owner_api.get(f"{URL}{pk}/?points=2:5").json()["points"]
    assert [p["index"] for p in page] == [2, 3, 4] and page == full["points"][2:5]
    assert owner_api.get(f"{URL}{pk}/?points=5:100").json()["points"] == full["points"][5:]
    for bad in ("some", "3:1", "-1:2", "1:"):
        r = owner_api.get(f"{URL}{pk}/?points={bad}")
        assert r.status_code == 400 and "points" in r.json(), bad


def test_failed_points_are_counted_apart_with_the_first_error(owner_api, base):
    """A point the engine refuses (invalid) failed: it counted as done ("6 of 6 points"),
    so a sweep whose points were mostly invalid read as a success. The API counts it in
    failed_points with the first failure's error (naming the field), the light form too
    (it reads no results), and the point's status and the CSV say failed."""
    import csv
    import io

    pk = create(owner_api, base, NODES_X_MICRO).json()["id"]
    run_chunks()
    body = owner_api.get(f"{URL}{pk}/").json()
    # 16 sequences: micro 3 divides neither 8 nor 16 GPUs; 2 nodes x micro 2 is 32 > 16
    assert (body["done_points"], body["failed_points"], body["cancelled_points"]) == (3, 3, 0)
    assert body["status"] == "succeeded" and body["progress"] == 1.0 and body["error"] == ""
    assert body["first_failure"]["index"] == 2
    assert body["first_failure"]["error"].startswith("training.global_batch_size: ")
    assert [p["status"] for p in body["points"]] == ["done", "done", "failed", "done", "failed", "failed"]
    assert all(p["valid"] is False for p in body["points"] if p["status"] == "failed")
    light = owner_api.get(f"{URL}{pk}/?points=none").json()
    assert {k: light[k] for k in ("done_points", "failed_points", "first_failure")} == \
        {k: body[k] for k in ("done_points", "failed_points", "first_failure")}
    rows = list(csv.DictReader(io.StringIO(owner_api.get(f"{URL}{pk}/points.csv").content.decode())))
    assert [x["status"] for x in rows] == [p["status"] for p in body["points"]]
    assert "global_batch_size" in rows[2]["error"]


def test_a_sweep_whose_every_point_is_invalid_is_failed(owner_api, base):
    """Each micro batch is refused in combination (the global batch it does not divide), so
    the sweep is made; every point fails, and the sweep says so instead of "succeeded"."""
    r = create(owner_api, base, [{"path": "training.micro_batch_size", "values": [3, 5]}])
    assert r.status_code == 202, r.json()
    run_chunks()
    body = owner_api.get(f"{URL}{r.json()['id']}/").json()
    assert (body["done_points"], body["failed_points"], body["progress"]) == (0, 2, 1.0)
    assert body["status"] == "failed", body
    assert body["error"].startswith("all 2 points failed, none was evaluated; the first (point 1): "
                                    "training.global_batch_size: "), body["error"]
    assert owner_api.get(URL, {"status": "failed"}).json()["results"][0]["progress"] == 1.0


def test_a_chunk_counts_its_failures_as_it_runs(base, owner, settings):
    """A running chunk writes the failed points beside the evaluated ones, with the first
    failure, at each progress write (not only when it ends)."""
    sweep = sweeps.create_sweep(owner, base.pk, [{"path": "training.micro_batch_size", "values": [1, 3, 2, 5]}])
    chunk = sweep.chunks.get()
    seen = []
    real = sweeps._cancel_requested

    def look(sweep_id):
        chunk.refresh_from_db()
        seen.append((chunk.done, chunk.failed, (chunk.first_failure or {}).get("index")))
        return real(sweep_id)

    with mock.patch.object(sweeps, "PROGRESS_EVERY_S", 0), mock.patch.object(sweeps, "_cancel_requested", look):
        sweeps.execute_chunk(chunk.pk)
    assert seen == [(0, 0, None), (1, 0, None), (1, 1, 1), (2, 1, 1)]
    chunk.refresh_from_db()
    assert (chunk.done, chunk.failed, chunk.first_failure["index"]) == (2, 2, 1)


def test_a_value_refused_inside_the_section_it_sets_is_a_400(owner_api, base):
    """The default framework (huggingface) does FP8 through torchao, whose recipes are
    tensorwise and rowwise: an axis setting training.fp8 whole to the delayed recipe made
    every point invalid (the engine names training.fp8.recipe, not the axis's path); now a
    400 naming the value, with the engine's message, and nothing saved."""
    r = create(owner_api, base, [{"path": "training.micro_batch_size", "values": [1, 2]},
                                 {"path": "training.fp8", "values": [None, {"recipe": "rowwise"},
                                                                     {"recipe": "delayed"}]}])
    assert r.status_code == 400, r.json()
    assert list(r.json()) == ["axes.1.values.2"]
    message = r.json()["axes.1.values.2"][0]
    assert message.startswith("training.fp8.recipe: delayed is not a recipe of torchao") and "tensorwise" in message
    assert "at every point of the grid" in message
    assert not Sweep.objects.exists()


def test_a_value_valid_under_one_framework_of_the_grid_stays_a_result(owner_api, base):
    """Delayed scaling is Transformer Engine's (Megatron), not torchao's: with both
    frameworks on an axis the value is valid somewhere, so the sweep is made and the
    huggingface point fails, counted as failed."""
    r = create(owner_api, base, [{"path": "training.framework", "values": ["huggingface", "megatron"]},
                                 {"path": "training.fp8", "values": [{"recipe": "delayed"}]}])
    assert r.status_code == 202, r.json()
    run_chunks()
    body = owner_api.get(f"{URL}{r.json()['id']}/").json()
    hf, megatron = body["points"]
    assert hf["status"] == "failed" and hf["valid"] is False and "torchao" in hf["error"]
    assert megatron["status"] == "done" and megatron["mfu_peak_precision"] == "fp8"
    assert (body["done_points"], body["failed_points"], body["status"]) == (1, 1, "succeeded")


def test_a_10000_point_grid_is_checked_without_evaluating_it(owner_api, base):
    """Every FP8 value of a 10,000-point grid is refused: the check builds the points'
    scenarios and never evaluates one."""
    axes = [{"path": "cluster.num_nodes", "values": list(range(1, 101))},
            {"path": "training.fp8", "values": [{"recipe": "delayed", "amax_history_len": n} for n in range(1, 101)]}]
    with mock.patch.object(sweeps.engine_sweep, "evaluate", wraps=sweeps.engine_sweep.evaluate) as ev:
        r = create(owner_api, base, axes)
    assert r.status_code == 400, r.json()
    assert set(r.json()) == {f"axes.1.values.{j}" for j in range(100)}
    assert ev.call_count == 0 and not Sweep.objects.exists()
