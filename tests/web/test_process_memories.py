"""What a web process remembers between requests, and when it forgets.

API tokens (``tierlab.auth``, ``TOKEN_CACHE_S``) and the preset tables' version
(``services.catalog_lookups``, ``CATALOG_CHECK_S``) are kept per process so a quick
estimate does not query the database for them each time. A change made through the ORM
in the same process is seen at once (signals); one made elsewhere (simulated here with
SQL that fires no signal) within the configured seconds.
"""

import time

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from tierlab.catalog.models import ModelPreset
from tierlab.scenarios import services

URL = "/api/v1/estimate/"
pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def token_api(owner):
    token = Token.objects.create(user=owner)
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {token.key}")
    return client, token


def token_queries(ctx) -> int:
    return sum("authtoken_token" in q["sql"] for q in ctx.captured_queries)


def test_a_remembered_token_costs_no_query(token_api, example_spec, catalog):
    client, _ = token_api
    with CaptureQueriesContext(connection) as first:
        assert client.post(URL, {"scenario": example_spec}, format="json").status_code == 200
    with CaptureQueriesContext(connection) as second:
        assert client.post(URL, {"scenario": example_spec}, format="json").status_code == 200
    assert token_queries(first) == 1 and token_queries(second) == 0
    assert len(second.captured_queries) == 0        # nor the catalog version, within its seconds


def test_a_deleted_token_is_refused_at_once(token_api, example_spec):
    client, token = token_api
    assert client.post(URL, {"scenario": example_spec}, format="json").status_code == 200
    token.delete()
    r = client.post(URL, {"scenario": example_spec}, format="json")
    assert r.status_code == 401 and "Invalid token" in r.json()["detail"]


def test_a_deactivated_user_is_refused_at_once(token_api, owner, example_spec):
    client, _ = token_api
    assert client.post(URL, {"scenario": example_spec}, format="json").status_code == 200
    owner.is_active = False
    owner.save()
    assert client.post(URL, {"scenario": example_spec}, format="json").status_code == 401


def test_a_token_deleted_by_another_process_lasts_at_most_token_cache_s(token_api, example_spec, settings):
    settings.TOKEN_CACHE_S = 0.3
    client, token = token_api
    assert client.post(URL, {"scenario": example_spec}, format="json").status_code == 200
    with connection.cursor() as cur:                 # no signal: as if another process did it
        cur.execute("DELETE FROM authtoken_token WHERE key = %s", [token.key])
    assert client.post(URL, {"scenario": example_spec}, format="json").status_code == 200
    time.sleep(0.4)
    assert client.post(URL, {"scenario": example_spec}, format="json").status_code == 401


def test_token_cache_s_zero_checks_every_time(token_api, example_spec, settings):
    settings.TOKEN_CACHE_S = 0
    client, _ = token_api
    for _ in range(2):
        with CaptureQueriesContext(connection) as ctx:
            assert client.post(URL, {"scenario": example_spec}, format="json").status_code == 200
        assert token_queries(ctx) == 1


def hidden_size(owner_api, spec) -> int:
    r = owner_api.post(URL, {"scenario": spec}, format="json")
    assert r.status_code == 200, r.json()
    return r.json()["model"]["hidden_size"]


def test_a_catalog_edit_here_is_seen_at_once(owner_api, example_spec, catalog):
    preset = ModelPreset.objects.get(slug=example_spec["model"]["preset"])
    before = hidden_size(owner_api, example_spec)
    preset.spec = dict(preset.spec, hidden_size=before * 2)
    preset.save()
    assert hidden_size(owner_api, example_spec) == before * 2


def test_a_catalog_edit_elsewhere_is_seen_within_catalog_check_s(owner_api, example_spec, catalog, settings):
    settings.CATALOG_CHECK_S = 0.3
    slug = example_spec["model"]["preset"]
    before = hidden_size(owner_api, example_spec)
    spec = dict(ModelPreset.objects.get(slug=slug).spec, hidden_size=before * 2)
    ModelPreset.objects.filter(slug=slug).update(spec=spec, updated_at=timezone.now())   # no signal
    assert hidden_size(owner_api, example_spec) == before      # not asked yet
    time.sleep(0.4)
    assert hidden_size(owner_api, example_spec) == before * 2
