"""The Content-Security-Policy header: on every page, strict for scripts, relaxed for styles
only on the API docs page, and framing as X_FRAME_OPTIONS says. (That the pages work under
it is tests/browser/test_content_security_policy.py.)"""

import json

import pytest

from tests.web.test_production_settings import GOOD, django_process


def directives(response) -> dict:
    header = response["Content-Security-Policy"]
    return {part.split()[0]: part.split()[1:] for part in header.split(";") if part.strip()}


@pytest.mark.django_db
@pytest.mark.parametrize("url", ["/catalog/", "/accounts/login/", "/admin/login/"])
def test_pages_send_a_strict_policy(client, url):
    d = directives(client.get(url))
    assert d["script-src"] == ["'self'"] and d["style-src"] == ["'self'"]
    assert d["object-src"] == ["'none'"] and d["base-uri"] == ["'none'"]
    assert d["frame-ancestors"] == ["'none'"] and d["form-action"] == ["'self'"]
    assert d["style-src-attr"] == ["'unsafe-inline'"]          # ECharts tooltips (settings.py)


@pytest.mark.django_db
def test_the_api_docs_page_allows_inline_styles_but_no_inline_script(client):
    r = client.get("/api/docs/")
    d = directives(r)
    assert d["style-src"] == ["'self'", "'unsafe-inline'"] and d["script-src"] == ["'self'"]
    assert "<script>" not in r.content.decode()                  # its start-up script is a file
    script = client.get("/api/docs/?script=")
    assert script.status_code == 200 and "SwaggerUIBundle" in script.content.decode()


@pytest.mark.django_db
def test_the_lockout_page_sends_the_policy_too(client, user_admin):
    from django.conf import settings

    for _ in range(settings.AXES_FAILURE_LIMIT):
        r = client.post("/accounts/login/", {"username": "admin", "password": "wrong"})
    assert r.status_code == 429 and directives(r)["script-src"] == ["'self'"]


def test_framing_follows_x_frame_options():
    code = ("import django, json; django.setup(); from django.conf import settings; "
            "print(json.dumps(settings.CONTENT_SECURITY_POLICY['DIRECTIVES']['frame-ancestors']))")
    result = django_process(code, **{**GOOD, "X_FRAME_OPTIONS": "SAMEORIGIN"})
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout.strip().splitlines()[-1]) == ["'self'"]
