"""GET /api/schema/ and /api/docs/."""

import pytest

pytestmark = pytest.mark.django_db


def test_the_schema_answers(client):
    r = client.get("/api/schema/", HTTP_ACCEPT="application/json")
    assert r.status_code == 200
    paths = r.json()["paths"]
    for p in ("/api/v1/scenarios/", "/api/v1/scenarios/{id}/runs/", "/api/v1/runs/{id}/",
              "/api/v1/estimate/", "/api/v1/catalog/models/", "/api/v1/catalog/hardware/"):
        assert p in paths, p


def test_the_docs_answer(client):
    r = client.get("/api/docs/")
    assert r.status_code == 200
    assert b"swagger" in r.content.lower()


def test_the_schema_generates_without_warnings(tmp_path):
    from django.core.management import call_command

    call_command("spectacular", "--validate", "--fail-on-warn", "--file", str(tmp_path / "schema.yaml"))
    assert "/api/v1/estimate/" in (tmp_path / "schema.yaml").read_text()
