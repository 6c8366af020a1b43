"""Odd input to the dashboard's endpoints is a 4xx, never a 500: ids too large for the
database, values of the wrong type, paths that are not there."""

import pytest

from tests.web.dashboard_helpers import strategies

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("vite_manifest")]
HUGE = 99999999999999999999          # more than a 64-bit primary key holds


@pytest.mark.parametrize("url,body", [
    ("/api/v1/comparisons/", {"scenarios": [HUGE, HUGE - 1]}),
    ("/api/v1/comparisons/", {"scenarios": "1,2"}),
    ("/api/v1/comparisons/", {"scenarios": [1, 2], "name": "x" * 300}),
    ("/api/v1/sweeps/", {"scenario": HUGE, "axes": [{"path": "cluster.num_nodes", "values": [1]}]}),
    ("/api/v1/sweeps/", {"scenario": 1, "axes": [{"path": 5, "values": 3}]}),
    ("/api/v1/sweeps/", {"scenario": 1, "axes": [[1, 2]]}),
    ("/api/v1/sweeps/", {"scenario": 1, "axes": None}),
    ("/api/v1/shares/", {"scenario": HUGE}),
    ("/api/v1/scenarios/1/duplicate/", {"name": ["x"]}),
])
def test_bad_posts_are_4xx(owner_api, owner, url, body):
    strategies(owner, ("zero2",))
    r = owner_api.post(url, body, format="json")
    assert 400 <= r.status_code < 500, (r.status_code, r.content[:300])


def test_a_sweep_value_never_valid_is_a_400_naming_it(owner_api, owner):
    base = strategies(owner, ("zero2",))[0]
    for values, bad in (([{"a": 1}, 1], 0), ([1, "two", 2], 1), ([1, -3], 1)):
        r = owner_api.post("/api/v1/sweeps/", {"scenario": base.pk, "axes": [
            {"path": "cluster.num_nodes", "values": values}]}, format="json")
        assert r.status_code == 400, r.json()
        assert list(r.json()) == [f"axes.0.values.{bad}"]
        assert "at every point of the grid" in r.json()[f"axes.0.values.{bad}"][0]


def test_a_value_invalid_only_in_combination_fails_its_points_not_the_request(owner_api, owner):
    from tests.web.dashboard_helpers import run_chunks

    base = strategies(owner, ("zero2",))[0]
    # parameter offload needs ZeRO-3: invalid with zero2, valid with zero3
    r = owner_api.post("/api/v1/sweeps/", {"scenario": base.pk, "axes": [
        {"path": "strategy.kind", "values": ["zero2", "zero3"]},
        {"path": "strategy.offload_params", "values": ["none", "cpu"]}]}, format="json")
    assert r.status_code == 202, r.json()
    run_chunks()
    points = owner_api.get(f"/api/v1/sweeps/{r.json()['id']}/").json()["points"]
    assert [p["valid"] for p in points] == [True, False, True, True]
    assert "strategy.offload_params" in points[1]["error"]


@pytest.mark.parametrize("url", [
    f"/api/v1/shares/?scenario={HUGE}", "/api/v1/shares/?sweep=x", f"/api/v1/comparisons/{HUGE}/",
    f"/api/v1/sweeps/{HUGE}/", f"/api/v1/scenarios/{HUGE}/fsdp.py", f"/api/v1/comparisons/{HUGE}/export.csv",
    "/api/v1/shared/" + "a" * 500 + "/", "/api/v1/shared/x/nothing.txt",
])
def test_bad_api_reads_are_4xx(owner_api, url):
    r = owner_api.get(url)
    assert 400 <= r.status_code < 500, (url, r.status_code)


@pytest.mark.parametrize("url", [f"/compare/{HUGE}/", f"/sweeps/new/?scenario={HUGE}", "/sweeps/new/?preset=nope",
                                 "/s/" + "z" * 300 + "/"])
def test_bad_page_reads_are_not_500(client, owner, url):
    client.force_login(owner)
    assert client.get(url).status_code in (200, 404)


def test_bad_form_posts_are_not_500(client, owner):
    strategies(owner, ("zero2",))
    client.force_login(owner)
    assert client.post("/compare/", {"scenario": [str(HUGE), "1"]}).status_code == 302
    assert client.post("/share/", {"kind": "scenario", "id": str(HUGE)}).status_code == 302
    assert client.post("/share/", {"kind": "nope", "id": "1"}).status_code == 302
    r = client.post("/sweeps/new/", {"scenario": str(HUGE), "axis1_path": "cluster.num_nodes", "axis1_values": "1"})
    assert r.status_code == 200 and "Select a valid choice" in r.content.decode()
