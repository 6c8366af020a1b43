"""Bounded work per request: every input that drives the engine's work, sent to the estimate
API and to a scenario save, is refused fast or evaluated by a real worker (issue #18).

A request evaluates a scenario only when the engine's cost bound is under
``ESTIMATE_MAX_WORK_UNITS`` (a 413 otherwise); saving a scenario, starting a run, making a
comparison, variants or a sweep validate without simulating.
"""

import copy
import time

import pytest

from tierlab.scenarios.models import Run, Scenario

ESTIMATE = "/api/v1/estimate/"
SCENARIOS = "/api/v1/scenarios/"
FAST_S = 1.0          # "well under a second": the expensive cases take 6 s to 6 min


def custom_model(num_params: int, **overrides) -> dict:
    spec = {"model": {"num_params": num_params, "num_layers": 32, "hidden_size": 4096},
            "cluster": {"node": "dgx-h100", "gpus_per_node": 1},
            "strategy": {"kind": "zero_offload", "offload_optimizer": "cpu"}}
    spec.update(overrides)
    return spec


def recsys(tables: int = 3, rows: int = 2_000_000, **extra) -> dict:
    return {"recsys": {"tables": [{"name": f"t{i}", "rows": rows, "dim": 16} for i in range(tables)],
                       "bottom_mlp": [13, 16], "batch_size": 2048, **extra},
            "cluster": {"node": "dgx-h100"}}


def deep_model() -> dict:
    """10,000 layers (the cap) with tensor parallelism over 4 nodes: ~300,000 tasks."""
    return {"model": {"num_params": 7 * 10**9, "num_layers": 10_000, "hidden_size": 4096},
            "cluster": {"node": "dgx-h100", "num_nodes": 4}, "strategy": {"kind": "zero3"},
            "training": {"tensor_parallel": 8}}


def with_checkpoint(example_spec, **checkpoint) -> dict:
    spec = copy.deepcopy(example_spec)
    spec["checkpoint"] = checkpoint
    return spec


def timed(call):
    t0 = time.perf_counter()
    r = call()
    return r, time.perf_counter() - t0


# Over the engine's caps: refused by every request, a 400 naming the field and the limit.
REFUSED = {
    "huge custom model": (lambda ex: custom_model(10**16), "scenario.model.num_params",
                          "at most 500,000 tasks per step graph"),
    "Monte-Carlo runs": (lambda ex: with_checkpoint(ex, monte_carlo_runs=10**9),
                         "scenario.checkpoint.monte_carlo_runs", "at most 10,000"),
    "sample lookups": (lambda ex: recsys(sample_lookups=10**9), "scenario.recsys.sample_lookups",
                       "at most 1,000,000"),
    "tables": (lambda ex: recsys(tables=5000, rows=10), "scenario.recsys.tables", "at most 1,000 tables"),
    "NVMe optimizer sub-groups": (lambda ex: custom_model(5 * 10**13, strategy={"kind": "zero_infinity"}),
                                  "scenario.model.num_params", "at most 60 s"),
    "samples times tables": (lambda ex: recsys(tables=300, sample_lookups=10**6),
                             "scenario.recsys.sample_lookups", "at most 60 s"),
}
# Valid, but more work than a request may do: a 413 from the estimate, saved and run by a worker.
TO_WORKER = {
    # 10,000 host-optimizer sub-groups whose NVMe write-backs queue: ~3 s to simulate
    "big custom model": (lambda ex: custom_model(10**13, strategy={"kind": "zero_infinity"}),
                         "scenario.model.num_params"),
    "sample lookups": (lambda ex: recsys(sample_lookups=10**6), "scenario.recsys.sample_lookups"),
    "deep model": (lambda ex: deep_model(), "scenario.model.num_layers"),
}


@pytest.mark.django_db
class TestInARequest:
    @pytest.mark.parametrize("case", REFUSED)
    @pytest.mark.parametrize("flags", [{}, {"include_step": True}, {"detail": True}])
    def test_an_input_over_the_engines_caps_is_a_fast_400_from_the_estimate(self, owner_api, example_spec,
                                                                            case, flags):
        make, field, limit = REFUSED[case]
        r, elapsed = timed(lambda: owner_api.post(ESTIMATE, {"scenario": make(example_spec), **flags},
                                                  format="json"))
        assert r.status_code == 400, r.json()
        assert list(r.json()) == [field] and limit in r.json()[field][0]
        assert elapsed < FAST_S

    @pytest.mark.parametrize("case", REFUSED)
    def test_an_input_over_the_engines_caps_is_a_fast_400_when_saving(self, owner_api, example_spec, case):
        make, field, limit = REFUSED[case]
        r, elapsed = timed(lambda: owner_api.post(SCENARIOS, {"name": case, "scenario": make(example_spec)},
                                                  format="json"))
        assert r.status_code == 400, r.json()
        assert list(r.json()) == [field] and limit in r.json()[field][0]
        assert elapsed < FAST_S
        assert not Scenario.objects.exists()

    @pytest.mark.parametrize("case", TO_WORKER)
    def test_more_work_than_a_request_may_do_is_a_fast_413_that_says_to_run_it(self, owner_api, example_spec,
                                                                               case):
        make, field = TO_WORKER[case]
        r, elapsed = timed(lambda: owner_api.post(ESTIMATE, {"scenario": make(example_spec), "detail": True},
                                                  format="json"))
        assert r.status_code == 413, r.json()
        assert list(r.json()) == [field]
        message = r.json()[field][0]
        assert "ESTIMATE_MAX_WORK_UNITS" in message and "start a run" in message
        assert elapsed < FAST_S

    @pytest.mark.parametrize("case", TO_WORKER)
    def test_saving_and_starting_a_run_validate_without_simulating(self, owner_api, example_spec, queue, case):
        make, _ = TO_WORKER[case]
        r, elapsed = timed(lambda: owner_api.post(SCENARIOS, {"name": case, "scenario": make(example_spec)},
                                                  format="json"))
        assert r.status_code == 201, r.json()
        assert elapsed < FAST_S
        r, elapsed = timed(lambda: owner_api.post(f"{SCENARIOS}{r.json()['id']}/runs/"))
        assert r.status_code == 202 and r.json()["status"] == "queued"
        assert elapsed < FAST_S

    def test_the_memory_only_estimate_of_the_same_inputs_is_answered(self, owner_api, example_spec):
        for case, (make, _) in TO_WORKER.items():
            r = owner_api.post(ESTIMATE, {"scenario": make(example_spec)}, format="json")
            assert r.status_code == 200, (case, r.json())

    @pytest.mark.parametrize("spec", [
        {"recsys": {"preset": "dlrm-mlperf-v1"}, "cluster": {"node": "dgx-h100", "num_nodes": 2}},
        {"recsys": {"preset": "dlrm-mlperf-v2"}, "cluster": {"node": "dgx-h100", "num_nodes": 2}}])
    def test_the_live_estimate_of_the_shipped_presets_is_under_the_limit(self, owner_api, spec):
        assert owner_api.post(ESTIMATE, {"scenario": spec}, format="json").status_code == 200

    def test_the_examples_are_estimated_in_full_in_the_request(self, owner_api):
        from tierlab.scenarios.examples import examples

        for example in examples():
            r = owner_api.post(ESTIMATE, {"scenario": example["scenario"], "detail": True}, format="json")
            assert r.status_code == 200, (example["name"], r.json())

    def test_the_live_estimate_asks_for_the_step_only_within_the_limit(self, owner_api, example_spec,
                                                                        settings):
        settings.ESTIMATE_MAX_WORK_UNITS = 400          # the memory estimate is ~300, the step more
        body = {"scenario": example_spec, "include_step": True, "step_if_within_limit": True}
        r, elapsed = timed(lambda: owner_api.post(ESTIMATE, body, format="json"))
        assert r.status_code == 200 and elapsed < FAST_S, r.json()
        report = r.json()
        assert report["step"] == {} and "memory" in report
        assert "ESTIMATE_MAX_WORK_UNITS" in report["step_skipped"]["reason"]
        settings.ESTIMATE_MAX_WORK_UNITS = 10**9          # within the limit: the step is there
        report = owner_api.post(ESTIMATE, body, format="json").json()
        assert report["step"]["time_s"] > 0 and "step_skipped" not in report
        # the memory alone over the limit is still a 413
        settings.ESTIMATE_MAX_WORK_UNITS = 10
        assert owner_api.post(ESTIMATE, body, format="json").status_code == 413

    def test_the_limit_is_a_setting(self, owner_api, example_spec, settings):
        settings.ESTIMATE_MAX_WORK_UNITS = 400          # the memory estimate is ~300
        r = owner_api.post(ESTIMATE, {"scenario": example_spec, "include_step": True}, format="json")
        assert r.status_code == 413
        assert "memory-only estimate" in next(iter(r.json().values()))[0]
        settings.ESTIMATE_MAX_WORK_UNITS = 10**9
        r = owner_api.post(ESTIMATE, {"scenario": recsys(tables=2, sample_lookups=10**6), "include_step": True},
                           format="json")
        assert r.status_code == 200
        assert r.json()["embedding"]["sample_check"]["lookups_per_table"] == 10**6


@pytest.mark.django_db
class TestNothingElseEvaluatesInARequest:
    """Comparisons, variants and sweeps of expensive scenarios are made at once; the work is
    their runs' and chunks', on the worker."""

    @pytest.fixture
    def heavy(self, owner):
        spec = recsys(tables=26, sample_lookups=10**6)     # ~8 s to evaluate
        return [Scenario.objects.create(owner=owner, name=f"heavy {i}", spec=dict(spec, cluster={
            "node": "dgx-h100", "num_nodes": i + 1})) for i in range(2)]

    def test_a_comparison(self, owner_api, heavy, queue):
        r, elapsed = timed(lambda: owner_api.post("/api/v1/comparisons/", {"scenarios": [s.pk for s in heavy]},
                                                  format="json"))
        assert r.status_code == 201, r.json()
        assert elapsed < FAST_S
        assert Run.objects.filter(status=Run.Status.QUEUED).count() == 2

    def test_variants(self, owner_api, owner, queue):
        base = Scenario.objects.create(owner=owner, name="big", spec=custom_model(10**14, checkpoint={
            "monte_carlo_runs": 10_000}))
        r, elapsed = timed(lambda: owner_api.post(f"{SCENARIOS}{base.pk}/variants/", {"question": "checkpoint"},
                                                  format="json"))
        assert r.status_code == 201, r.json()
        assert elapsed < FAST_S

    def test_a_sweep_and_the_sweep_form(self, owner_api, client, owner, heavy, queue, vite_manifest):
        r, elapsed = timed(lambda: owner_api.post("/api/v1/sweeps/", {"scenario": heavy[0].pk, "axes": [
            {"path": "recsys.batch_size", "values": [1024, 2048, 4096]}]}, format="json"))
        assert r.status_code == 202, r.json()
        assert elapsed < FAST_S
        client.force_login(owner)
        r, elapsed = timed(lambda: client.get(f"/sweeps/new/?scenario={heavy[0].pk}"))
        assert r.status_code == 200
        assert elapsed < FAST_S


@pytest.mark.worker
@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("case", TO_WORKER)
def test_what_a_request_refuses_a_real_worker_runs(owner_api, example_spec, celery_worker, wait_for, case):
    make, field = TO_WORKER[case]
    spec = make(example_spec)
    assert owner_api.post(ESTIMATE, {"scenario": spec, "detail": True}, format="json").status_code == 413
    scenario = owner_api.post(SCENARIOS, {"name": case, "scenario": spec}, format="json").json()
    run = owner_api.post(f"{SCENARIOS}{scenario['id']}/runs/").json()

    def finished():
        body = owner_api.get(f"/api/v1/runs/{run['id']}/").json()
        return body if body["status"] in ("succeeded", "failed") else None

    body = wait_for(finished, timeout=120)
    assert body["status"] == "succeeded", body["error"]
    assert body["worker"].startswith(celery_worker.queue)         # the subprocess did it
    result = body["result"]
    if field == "scenario.recsys.sample_lookups":
        assert result["embedding"]["sample_check"]["lookups_per_table"] == 10**6
    else:
        assert result["step"]["time_s"] > 0 and result["timeline"]["tasks"]
        assert result["checkpoint"]["monte_carlo"]["runs"] == 200


def test_a_sweep_of_typos_over_a_large_scenario_is_refused_fast(owner_api, owner, settings):
    """600 tables and two 100-value axes of values invalid everywhere: the check that each
    value is valid somewhere built all 10,000 points (~50-100 s of one web process); it builds at
    most SWEEP_VALUE_CHECK_POINTS, and still refuses every value, naming it."""
    settings.TIERLAB_SWEEP_VALUE_CHECK_POINTS = 200
    base = Scenario.objects.create(owner=owner, name="wide", spec=recsys(tables=600, rows=1000))
    r, elapsed = timed(lambda: owner_api.post("/api/v1/sweeps/", {"scenario": base.pk, "axes": [
        {"path": "recsys.batch_size", "values": [-i for i in range(1, 101)]},
        {"path": "cluster.num_nodes", "values": [-i for i in range(1, 101)]}]}, format="json"))
    assert r.status_code == 400, r.json()
    body = r.json()
    # (a point's scenario reports its first bad field: the batch, so the node counts are not judged)
    assert set(body) == {f"axes.0.values.{j}" for j in range(100)}
    assert body["axes.0.values.0"] == ["must be at least 1, got -1 (at every point of the grid)"]
    assert body["axes.0.values.99"] == ["must be at least 1, got -100 (at the 1 grid point checked of the 100 "
                                        "that hold it: at most 200 points are checked, SWEEP_VALUE_CHECK_POINTS)"]
    assert elapsed < 10 * FAST_S
