"""The API docs page works offline and unknown API URLs answer JSON even in DEBUG."""

import pytest


@pytest.mark.django_db
def test_it_serves_swagger_ui_from_the_app_not_a_cdn(client):
    r = client.get("/api/docs/")
    assert r.status_code == 200
    html = r.content.decode()
    assert "cdn.jsdelivr" not in html and "unpkg" not in html
    assert "/static/drf_spectacular_sidecar/swagger-ui-dist/" in html


@pytest.mark.django_db
@pytest.mark.parametrize("url", ["/api/v1/nope/", "/api/nope/"])
def test_it_answers_unknown_api_urls_with_json_404(client, settings, url):
    settings.DEBUG = True
    r = client.get(url)
    assert r.status_code == 404
    assert r["Content-Type"].startswith("application/json")
    assert r.json() == {"detail": "Not found."}
