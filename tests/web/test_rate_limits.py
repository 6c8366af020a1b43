"""API rate limits (tierlab.throttling): per account, per address without one, and the
expensive endpoints' own scopes; a 429 says which limit, its setting and when to try again
(Retry-After). Counts live in Django's cache (the test settings' Redis or local memory);
every test sets the rates it checks (tests/conftest.py turns them off otherwise)."""

import pytest

from tierlab.dashboard.models import ShareLink
from tierlab.scenarios.models import Scenario

pytestmark = pytest.mark.django_db
ESTIMATE = "/api/v1/estimate/"


def rates(settings, **scopes):
    settings.TIERLAB_THROTTLE_RATES = {**settings.TIERLAB_THROTTLE_RATES, **scopes}


def test_estimates_over_their_rate_are_a_429_that_says_when_to_try_again(settings, owner_api, stranger_api,
                                                                          example_spec):
    rates(settings, estimate="2/min")
    for _ in range(2):
        assert owner_api.post(ESTIMATE, {"scenario": example_spec}, format="json").status_code == 200
    r = owner_api.post(ESTIMATE, {"scenario": example_spec}, format="json")
    assert r.status_code == 429
    assert 1 <= int(r["Retry-After"]) <= 60
    body = r.json()
    assert body["retry_after_s"] == int(r["Retry-After"])
    assert body["detail"].startswith("Too many live estimates: at most 2 per minute "
                                     "(THROTTLE_ESTIMATE_RATE=2/min). Nothing was done; try again in ")
    # another account has its own count; other endpoints are not in this scope
    assert stranger_api.post(ESTIMATE, {"scenario": example_spec}, format="json").status_code == 200
    assert owner_api.get("/api/v1/scenarios/").status_code == 200


def test_every_request_of_an_account_counts_against_its_rate(settings, owner_api, stranger_api):
    rates(settings, user="3/min")
    assert [owner_api.get("/api/v1/scenarios/").status_code for _ in range(4)] == [200, 200, 200, 429]
    assert "THROTTLE_USER_RATE=3/min" in owner_api.get("/api/v1/runs/").json()["detail"]
    assert stranger_api.get("/api/v1/scenarios/").status_code == 200


def test_starting_runs_has_its_own_rate_and_listing_them_does_not_count(settings, owner_api, owner,
                                                                        example_spec):
    rates(settings, runs="1/hour")
    scenario = Scenario.objects.create(owner=owner, name="s", spec=example_spec)
    url = f"/api/v1/scenarios/{scenario.pk}/runs/"
    assert owner_api.post(url).status_code == 202
    r = owner_api.post(url)
    assert r.status_code == 429 and "at most 1 per hour (THROTTLE_RUNS_RATE=1/hour)" in r.json()["detail"]
    assert owner_api.get(url).status_code == 200


def test_share_link_reads_are_limited_per_address(settings, owner, anon_api, example_spec):
    rates(settings, shared="2/min")
    scenario = Scenario.objects.create(owner=owner, name="s", spec=example_spec)
    link = ShareLink.objects.create(owner=owner, scenario=scenario)
    assert [anon_api.get(f"/api/v1/shared/{link.token}/").status_code for _ in range(3)] == [200, 200, 429]
    r = anon_api.get(f"/api/v1/shared/{link.token}/")
    assert "share-link reads" in r.json()["detail"] and r["Retry-After"]


def test_anonymous_requests_are_limited_per_address(settings, owner, anon_api, example_spec):
    """(Where the API needs an account, an anonymous request is a 401 before it counts.)"""
    rates(settings, anon="2/min")
    link = ShareLink.objects.create(owner=owner, scenario=Scenario.objects.create(owner=owner, name="s",
                                                                                  spec=example_spec))
    assert [anon_api.get(f"/api/v1/shared/{link.token}/").status_code for _ in range(3)] == [200, 200, 429]
    assert "THROTTLE_ANON_RATE=2/min" in anon_api.get(f"/api/v1/shared/{link.token}/").json()["detail"]


def test_a_rate_of_none_is_no_limit(settings, owner_api, example_spec):
    rates(settings, estimate=None, user=None)
    assert all(owner_api.post(ESTIMATE, {"scenario": example_spec}, format="json").status_code == 200
               for _ in range(5))


def test_rates_are_read_from_the_environment(monkeypatch):
    from django.core.exceptions import ImproperlyConfigured

    from tierlab.env import env_rate

    monkeypatch.setenv("THROTTLE_SWEEPS_RATE", "5/hour")
    assert env_rate("THROTTLE_SWEEPS_RATE", "10/min") == "5/hour"
    monkeypatch.setenv("THROTTLE_SWEEPS_RATE", "off")
    assert env_rate("THROTTLE_SWEEPS_RATE", "10/min") is None
    monkeypatch.setenv("THROTTLE_SWEEPS_RATE", "lots")
    with pytest.raises(ImproperlyConfigured, match="THROTTLE_SWEEPS_RATE must be <count>/<period>"):
        env_rate("THROTTLE_SWEEPS_RATE", "10/min")
