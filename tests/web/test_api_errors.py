"""Errors the API gives for bad query parameters, and that its schema documents them."""

import pytest

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize("query", ["page_size=abc", "page_size=0", "page_size=501", "page_size="])
def test_a_bad_page_size_is_400(owner_api, query):
    r = owner_api.get(f"/api/v1/scenarios/?{query}")
    assert r.status_code == 400 and "page_size" in r.json()


@pytest.mark.parametrize("query", ["page=abc", "page=0", "page=", "page=last", "page=%C2%B2"])
def test_a_bad_page_is_404(owner_api, query):
    r = owner_api.get(f"/api/v1/runs/?{query}")
    assert r.status_code == 404 and "Invalid page" in r.json()["detail"]


def test_a_good_page_is_served(owner_api):
    r = owner_api.get("/api/v1/runs/?page=1&page_size=500")
    assert r.status_code == 200 and r.json()["results"] == []


@pytest.mark.parametrize("kind", ["gpu-ish", ""])
def test_an_unknown_hardware_kind_is_400(anon_api, kind):
    r = anon_api.get(f"/api/v1/catalog/hardware/?kind={kind}")
    assert r.status_code == 400 and "must be one of" in r.json()["kind"][0]


def test_the_schema_documents_the_errors(client):
    paths = client.get("/api/schema/?format=json").json()["paths"]
    # every operation may be throttled: 429 (tierlab.throttling)
    assert set(paths["/api/v1/scenarios/"]["post"]["responses"]) == {"201", "400", "401", "403", "413", "415", "429"}
    assert set(paths["/api/v1/runs/{id}/"]["get"]["responses"]) == {"200", "401", "403", "404", "429"}
    assert set(paths["/api/v1/runs/"]["get"]["responses"]) == {"200", "400", "401", "403", "404", "429"}
    catalog = paths["/api/v1/catalog/models/"]["get"]["responses"]
    assert set(catalog) == {"200", "401", "429"}          # anyone may read; a bad token is 401
    page_size = [p for p in paths["/api/v1/runs/"]["get"]["parameters"] if p["name"] == "page_size"]
    assert page_size[0]["schema"] == {"type": "integer", "minimum": 1, "maximum": 500}
