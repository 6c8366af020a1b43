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


@pytest.mark.django_db
def test_unknown_api_urls_answer_json_404_to_a_post_with_a_session(client, django_user_model):
    # A logged-in browser session without a CSRF token must still get the JSON 404.
    user = django_user_model.objects.create_user("csrf", password="pw")
    csrf_client = client.__class__(enforce_csrf_checks=True)
    csrf_client.force_login(user)
    r = csrf_client.post("/api/v1/scenarios/0.5/runs/", data="{}", content_type="application/json")
    assert r.status_code == 404 and r["Content-Type"].startswith("application/json")
