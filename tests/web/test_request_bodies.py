"""Huge or malformed requests are 413 or 400 with a reason (under ``body`` for bodies), never 500."""

import json

import pytest

pytestmark = pytest.mark.django_db

ESTIMATE, SCENARIOS = "/api/v1/estimate/", "/api/v1/scenarios/"
MB = 1024 * 1024


def post_raw(client, url, body: bytes, content_type="application/json"):
    return client.post(url, data=body, content_type=content_type)


@pytest.mark.parametrize("url, limit", [(ESTIMATE, "262,144 bytes (ESTIMATE_MAX_BODY_BYTES)"),
                                        (SCENARIOS, "2,621,440 bytes (DATA_UPLOAD_MAX_MEMORY_SIZE)")])
def test_a_20_mb_json_body_is_413(owner_api, url, limit):
    body = b'{"name": "big", "scenario": {"pad": "' + b"x" * (20 * MB) + b'"}}'
    r = post_raw(owner_api, url, body)
    assert r.status_code == 413
    assert list(r.json()) == ["body"]
    # the size sent and the limit, readable: "request body too large (20,971,566 bytes): the limit is 2,621,440 bytes"
    assert r.json()["body"][0] == f"request body too large ({len(body):,} bytes): the limit is {limit}"


def test_the_estimate_takes_a_smaller_body_than_other_endpoints(owner_api, settings):
    """Parsing a 2.5 MB JSON list took the estimate seconds; a scenario is a few kB (a
    recommender's 1,000 tables ~45 kB): ESTIMATE_MAX_BODY_BYTES refuses more before parsing."""
    body = b"[" + b",".join([b"1"] * 150_000) + b"]"           # 300 kB
    r = post_raw(owner_api, ESTIMATE, body)
    assert r.status_code == 413
    assert r.json()["body"] == [f"request body too large ({len(body):,} bytes): the limit is 262,144 bytes "
                                "(ESTIMATE_MAX_BODY_BYTES)"]
    assert post_raw(owner_api, SCENARIOS, body).status_code == 400     # parsed: not an object
    settings.ESTIMATE_MAX_BODY_BYTES = 10 * MB                 # the global limit still applies
    assert "DATA_UPLOAD_MAX_MEMORY_SIZE" in post_raw(owner_api, ESTIMATE, b" " * (3 * MB)).json()["body"][0]


def test_a_20_mb_form_body_is_refused_unread(owner_api):
    """The API takes JSON only (tests/web/test_json_only_bodies.py): a form is a 415 before
    its body is read, whatever its size."""
    r = owner_api.post(SCENARIOS, {"name": "big", "scenario": "x" * (20 * MB)})
    assert r.status_code == 415 and "Content-Type: application/json" in r.json()["body"][0]


def test_a_body_just_under_the_limit_is_parsed(owner_api, settings, example_spec):
    # padded with a name at its cap and JSON whitespace (a scenario's name is at most 200 characters)
    body = json.dumps({"scenario": dict(example_spec, name="x" * 200)}).encode() + b" " * 800
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = len(body)
    assert post_raw(owner_api, ESTIMATE, body).status_code == 200
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = len(body) - 1
    assert post_raw(owner_api, ESTIMATE, body).status_code == 413


def test_a_page_post_over_the_limit_is_not_a_500(client):
    r = client.post("/accounts/login/", {"username": "x" * (20 * MB), "password": "y"})
    assert r.status_code == 400


@pytest.mark.parametrize("body, words", [
    (b'{"scenario": {', "Expecting"),
    (b"[" * 100_000 + b"]" * 100_000, "nested deeper than 64"),
    (b'{"scenario": ' + b"[" * 70 + b"]" * 70 + b"}", "nested deeper than 64"),
    (b'{"scenario": {"model": "\xff\xfe"}}', "not valid utf-8"),
    (b'{"scenario": {"model": NaN}}', "NaN is not valid JSON"),
    (b'{"scenario": {"model": 1e999}}', "out of range"),
    (b'{"scenario": {"model": ' + b"9" * 5000 + b"}}", "digits"),
    (b'"a\\u0000b"', "NUL"),            # in a field: named by it (test_unstorable_strings.py)
    (b'["\\ud800"]', "surrogate"),
    (b"\xef\xbb\xbf{}", "BOM"),
])
def test_a_malformed_json_body_is_400(owner_api, body, words):
    r = post_raw(owner_api, ESTIMATE, body)
    assert r.status_code == 400
    assert list(r.json()) == ["body"]
    assert words.lower() in r.json()["body"][0].lower(), r.json()


@pytest.mark.parametrize("text, words", [
    ("[" * 100_000, "nested deeper"),
    ('{"model": "\\u0000"}', "NUL"),
    ('{"model": ', "Expecting"),
])
def test_a_malformed_scenario_string_is_400_on_its_field(owner_api, text, words):
    r = owner_api.post(SCENARIOS, {"name": "text", "scenario": text}, format="json")
    assert r.status_code == 400 and list(r.json()) == ["scenario"]
    assert words in r.json()["scenario"][0]


def test_a_wrong_content_type_is_415(owner_api):
    r = post_raw(owner_api, ESTIMATE, b"<scenario/>", content_type="application/xml")
    assert r.status_code == 415


@pytest.mark.parametrize("url", ["/api/v1/catalog/models/a%00b/", "/api/v1/runs/?page=1%00",
                                 "/api/v1/catalog/hardware/?kind=%00", "/scenarios/%00/"])
def test_a_nul_in_the_url_is_400(owner_api, url):
    """PostgreSQL cannot compare text with NUL: without the guard these were 500s there."""
    r = owner_api.get(url)
    assert r.status_code == 400
    if url.startswith("/api/"):
        assert "NUL" in r.json()["detail"]


@pytest.mark.parametrize("url", ["/api/v1/runs/abc/", "/api/v1/nothing-here/"])
def test_an_unknown_api_url_is_a_json_404(owner_api, url):
    r = owner_api.get(url)
    assert r.status_code == 404 and r.json() == {"detail": "Not found."}


def test_json_sent_as_a_form_is_415_saying_to_send_json(owner_api, example_spec):
    """curl -d '{...}' without -H 'Content-Type: application/json' sends a form."""
    body = json.dumps({"scenario": example_spec})
    r = owner_api.generic("POST", ESTIMATE, body, content_type="application/x-www-form-urlencoded")
    assert r.status_code == 415
    assert list(r.json()) == ["body"]
    assert "Content-Type: application/json" in r.json()["body"][0]


def test_a_json_array_body_is_400_on_the_body(owner_api):
    r = post_raw(owner_api, ESTIMATE, b"[1, 2]")
    assert r.status_code == 400 and list(r.json()) == ["body"], r.json()


@pytest.mark.parametrize("value", ["yes", 1, "true", None, [True]])
def test_include_step_takes_json_booleans_only(owner_api, example_spec, value):
    r = owner_api.post(ESTIMATE, {"scenario": example_spec, "include_step": value}, format="json")
    assert r.status_code == 400 and list(r.json()) == ["include_step"], r.json()
    assert "true or false" in r.json()["include_step"][0]
