"""GET /api/v1/catalog/{models,nodes,accelerators,hardware}/: public, read-only."""

import pytest

from simulation import presets

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize("kind, table", [("models", presets.MODELS), ("nodes", presets.NODES),
                                         ("accelerators", presets.ACCELERATORS)])
def test_it_lists_the_engine_presets(anon_api, catalog, kind, table):
    r = anon_api.get(f"/api/v1/catalog/{kind}/")
    assert r.status_code == 200
    rows = r.json()
    assert {row["slug"] for row in rows} == set(table)
    for row in rows:
        assert set(row) == {"slug", "name", "spec", "source", "notes"}
        assert row["name"] == table[row["slug"]]["name"] and row["source"]


def test_it_lists_the_sourced_hardware(anon_api, catalog):
    rows = anon_api.get("/api/v1/catalog/hardware/").json()
    assert len(rows) == 84
    assert all(row["source"] for row in rows)
    assert {"slug", "name", "spec", "source", "notes", "kind", "vendor"} <= set(rows[0])
    gpus = anon_api.get("/api/v1/catalog/hardware/?kind=gpu").json()
    assert gpus and all(row["kind"] == "gpu" for row in gpus)


def test_it_shows_one_preset_by_id(anon_api, catalog):
    r = anon_api.get("/api/v1/catalog/models/gpt3-6.7b/")
    assert r.status_code == 200 and r.json()["spec"]["num_layers"] == 32


def test_it_is_read_only(owner_api, catalog):
    assert owner_api.post("/api/v1/catalog/models/", {"slug": "x"}, format="json").status_code == 405
    assert owner_api.delete("/api/v1/catalog/models/llama2-7b/").status_code == 405
