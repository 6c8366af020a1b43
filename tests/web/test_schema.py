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


def test_the_schema_lists_410_for_revoked_share_links(client):
    """The shared view, its downloads and fork answer 410 {detail} once the link is revoked."""
    schema = client.get("/api/schema/", HTTP_ACCEPT="application/json").json()
    error = {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}
    operations = [("/api/v1/shared/{token}/", "get"), ("/api/v1/shared/{token}/{filename}", "get"),
                  ("/api/v1/shared/{token}/fork/", "post")]
    for path, method in operations:
        responses = schema["paths"][path][method]["responses"]
        assert responses["410"]["content"] == error, (path, responses.get("410"))
        assert "revoked" in responses["410"]["description"]
        assert responses["404"]["content"] == error, path
    assert schema["components"]["schemas"]["Error"]["required"] == ["detail"]
    for path, operations in schema["paths"].items():       # nowhere else
        if not path.startswith("/api/v1/shared/"):
            assert all("410" not in op.get("responses", {}) for op in operations.values()), path


def test_the_schema_describes_the_run_list_summary_and_owner(client):
    schema = client.get("/api/schema/", HTTP_ACCEPT="application/json").json()
    components = schema["components"]["schemas"]
    listed = schema["paths"]["/api/v1/runs/"]["get"]["responses"]["200"]["content"]["application/json"]["schema"]
    page = components[listed["$ref"].rsplit("/", 1)[1]]
    item = components[page["properties"]["results"]["items"]["$ref"].rsplit("/", 1)[1]]
    assert "summary" in item["properties"] and "owner" in item["properties"]
    assert "result" not in item["properties"] and "input" not in item["properties"]
    detail = schema["paths"]["/api/v1/runs/{id}/"]["get"]["responses"]["200"]["content"]["application/json"]["schema"]
    run = components[detail["$ref"].rsplit("/", 1)[1]]
    assert {"result", "owner", "input"} <= set(run["properties"])
    from tierlab.scenarios.serializers import SUMMARY_PATHS

    assert set(components["RunSummary"]["properties"]) == set(SUMMARY_PATHS)
