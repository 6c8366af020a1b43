"""The API takes JSON bodies only: a form (``application/x-www-form-urlencoded``, what
``curl -d`` sends without ``-H 'Content-Type: application/json'``) or a multipart body
(``curl -F``) is a 415 ``{"body": [...]}`` that says to send JSON and that nothing was saved,
and nothing is created or changed.

Why: DRF's form and multipart parsers were in DEFAULT_PARSER_CLASSES, and the scenario,
measurements and config fields take a JSON string too, so a form such as
``name=x&scenario={...}`` saved a scenario. No endpoint needs them: the front end sends JSON
(frontend/src/api.ts), the config.json upload is read in the browser and sent as JSON
(frontend/src/form/hf_config.ts), and the admin's JSON import is a Django form, not DRF
(tierlab/catalog/admin_json.py). The requests go through Django's test client with a real
token header, as curl sends them."""

import json
from pathlib import Path

import pytest
from django.test import Client
from rest_framework.authtoken.models import Token

from tests.web.test_cluster_profiles_api import measurements
from tierlab.scenarios.profiles import create_profile
from tierlab.scenarios.models import ClusterProfile, Run, Scenario

pytestmark = pytest.mark.django_db

CONFIG = Path(__file__).parents[1] / "data" / "hf_configs" / "qwen2.5-7b.json"
SAYS = "Send the body as JSON with the header Content-Type: application/json."


@pytest.fixture
def curl(owner):
    """Django's test client with the owner's token in the Authorization header."""
    return Client(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=owner).key}")


@pytest.fixture
def saved(owner, example_spec):
    return Scenario.objects.create(owner=owner, name="kept", spec=example_spec)


@pytest.fixture
def profile(owner):
    return create_profile(owner, "kept", measurements())


def world() -> dict:
    return {"scenarios": list(Scenario.objects.order_by("pk").values_list("pk", "name", "spec")),
            "runs": Run.objects.count(),
            "profiles": list(ClusterProfile.objects.order_by("pk").values_list("pk", "name"))}


def bodies(example_spec, saved, profile):
    """(method, url, form fields): what each endpoint would take, its objects as JSON text."""
    return [
        ("post", "/api/v1/scenarios/", {"name": "from a form", "scenario": json.dumps(example_spec)}),
        ("patch", f"/api/v1/cluster-profiles/{profile.pk}/", {"name": "renamed by a form"}),
        ("post", "/api/v1/estimate/", {"scenario": json.dumps(example_spec)}),
        ("post", f"/api/v1/scenarios/{saved.pk}/runs/", {"priority": "high"}),
        ("post", f"/api/v1/scenarios/{saved.pk}/duplicate/", {"name": "copy"}),
        ("post", "/api/v1/cluster-profiles/", {"name": "selene", "measurements": json.dumps(measurements())}),
        ("post", "/api/v1/models/from-hf-config/", {"config": json.dumps(json.loads(CONFIG.read_text())["config"])}),
        ("post", "/api/v1/comparisons/", {"scenarios": str(saved.pk)}),
    ]


def send(client, method, url, fields, kind):
    if kind == "form":
        from urllib.parse import urlencode
        return client.generic(method.upper(), url, urlencode(fields),
                              content_type="application/x-www-form-urlencoded")
    if method == "post":
        return client.post(url, fields)                        # multipart/form-data
    from django.test.client import BOUNDARY, MULTIPART_CONTENT, encode_multipart
    return client.generic(method.upper(), url, encode_multipart(BOUNDARY, fields), content_type=MULTIPART_CONTENT)


@pytest.mark.parametrize("kind, sent_as", [("form", "application/x-www-form-urlencoded"),
                                           ("multipart", "multipart/form-data")])
def test_a_form_or_multipart_body_is_a_415_and_nothing_changes(curl, example_spec, saved, profile, kind, sent_as):
    before = world()
    for method, url, fields in bodies(example_spec, saved, profile):
        r = send(curl, method, url, fields, kind)
        assert r.status_code == 415, (method, url, r.status_code, r.content[:300])
        assert list(r.json()) == ["body"], url
        message = r.json()["body"][0]
        assert sent_as in message and "Nothing was saved" in message and message.endswith(SAYS), message
        assert world() == before, url


def test_curl_d_is_told_what_it_sent(curl, example_spec):
    """``curl -d '{...}'`` sends the JSON as a form; the message says so."""
    r = curl.generic("POST", "/api/v1/scenarios/", json.dumps({"name": "x", "scenario": example_spec}),
                     content_type="application/x-www-form-urlencoded")
    assert r.status_code == 415
    assert "curl -d without -H 'Content-Type: application/json'" in r.json()["body"][0]
    assert Scenario.objects.count() == 0


def test_a_body_without_a_content_type_is_a_415(curl, example_spec):
    r = curl.generic("POST", "/api/v1/scenarios/", json.dumps({"name": "x", "scenario": example_spec}),
                     content_type="")
    assert r.status_code == 415 and "no Content-Type header" in r.json()["body"][0]
    assert Scenario.objects.count() == 0


def test_the_same_bodies_as_json_still_work(curl, example_spec, saved, profile):
    expected = [201, 200, 200, 400, 201, 201, 200, 400]     # runs/ takes no key; "1" is no list of ids
    for (method, url, fields), status in zip(bodies(example_spec, saved, profile), expected):
        r = getattr(curl, method)(url, json.dumps(fields), content_type="application/json")
        assert r.status_code == status, (url, r.status_code, r.content[:300])
    assert Scenario.objects.filter(name="from a form").exists()


def test_no_body_still_starts_a_run(curl, saved):
    """An action that takes no body still takes none (no Content-Type, as ``curl -X POST``)."""
    r = curl.generic("POST", f"/api/v1/scenarios/{saved.pk}/runs/")
    assert r.status_code == 202 and Run.objects.count() == 1
