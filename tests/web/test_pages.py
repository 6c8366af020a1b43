"""Server-rendered pages and the front end's mount points."""

import json
import re

import pytest

from tierlab.scenarios import services
from tierlab.scenarios.models import Run, Scenario

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("vite_manifest")]


@pytest.fixture
def owner_client(client, owner):
    client.force_login(owner)
    return client


@pytest.fixture
def run(owner, example_spec):
    return services.start_run(Scenario.objects.create(owner=owner, name="Mine <b>", spec=example_spec))


@pytest.mark.parametrize("url", ["/", "/scenarios/", "/runs/1/", "/scenarios/1/"])
def test_pages_require_login(client, url):
    r = client.get(url)
    assert r.status_code == 302 and r["Location"].startswith("/accounts/login/?next=")


def test_login_page_and_login(client, user_admin):
    assert client.get("/accounts/login/").status_code == 200
    r = client.post("/accounts/login/", {"username": "admin", "password": "admin"})
    assert r.status_code == 302 and r["Location"] == "/"


def test_the_form_page_has_its_mount_points(owner_client):
    r = owner_client.get("/")
    html = r.content.decode()
    assert r.status_code == 200
    assert '<div id="scenario-form-root"></div>' in html
    assert "csrfmiddlewaretoken" in html
    assert "assets/scenario_form-stub.js" in html and "assets/base-stub.css" in html
    data = re.search(r'<script id="examples-data" type="application/json">(.*?)</script>', html, re.S)
    examples = json.loads(data.group(1))
    assert len(examples) == 4 and examples[0]["scenario"]["model"] == {"preset": "llama2-70b"}
    for nav in ('href="/"', 'href="/scenarios/"', 'href="/catalog/"', "Log out"):
        assert nav in html


def test_the_run_page_has_its_mount_point(owner_client, run):
    html = owner_client.get(f"/runs/{run.pk}/").content.decode()
    assert (f'<div id="run-result-root" data-run-id="{run.pk}" '
            f'data-run-url="/api/v1/runs/{run.pk}/"></div>') in html
    assert "Mine &lt;b&gt;" in html and f'href="/scenarios/{run.scenario_id}/"' in html
    assert "assets/run_result-stub.js" in html


def test_the_run_page_is_for_the_owner(client, stranger, run):
    client.force_login(stranger)
    assert client.get(f"/runs/{run.pk}/").status_code == 404
    assert client.get(f"/scenarios/{run.scenario_id}/").status_code == 404
    assert client.post(f"/scenarios/{run.scenario_id}/run/").status_code == 404


def test_the_list_shows_labels_last_run_and_run_again(owner_client, run):
    html = owner_client.get("/scenarios/").content.decode()
    for text in ("Llama-2-7B", "1× NVIDIA DGX H100 (1 GPU/node)", "ZeRO-Offload", "queued",
                 f'href="/runs/{run.pk}/"', "Run again"):
        assert text in html, text


def test_run_again_starts_a_run_and_shows_it(owner_client, run):
    r = owner_client.post(f"/scenarios/{run.scenario_id}/run/")
    new = Run.objects.exclude(pk=run.pk).get()
    assert r.status_code == 302 and r["Location"] == f"/runs/{new.pk}/"


def test_run_again_reports_a_scenario_that_no_longer_resolves(owner_client, run):
    Scenario.objects.filter(pk=run.scenario_id).update(spec={"model": {"preset": "gone"}, "cluster": {}})
    r = owner_client.post(f"/scenarios/{run.scenario_id}/run/", follow=True)
    assert "cannot run: model.preset" in r.content.decode()


def test_the_scenario_page_shows_json_and_runs(owner_client, run):
    html = owner_client.get(f"/scenarios/{run.scenario_id}/").content.decode()
    assert "&quot;preset&quot;: &quot;llama2-7b&quot;" in html and f"#{run.pk}" in html


def test_the_catalog_is_public_and_shows_sources(client, catalog):
    html = client.get("/catalog/").content.decode()
    # logged out, the navigation offers what works without an account
    assert 'href="/catalog/"' in html and "Log in" in html
    assert 'href="/scenarios/"' not in html and 'href="/compare/"' not in html
    assert '<a class="brand" href="/catalog/">' in html      # not "/", which asks to log in
    assert "Llama-2-70B" in html and "arXiv 2307.09288" in html
    assert "NVIDIA DGX H100" in html and "glennklockwood.com" in html
    assert "GiB" in html


def test_a_stale_run_shows_failed_on_its_page(owner_client, run, settings):
    from datetime import timedelta

    from django.utils import timezone

    run.mark_running()
    Run.objects.filter(pk=run.pk).update(started_at=timezone.now() - timedelta(days=1))
    html = owner_client.get(f"/runs/{run.pk}/").content.decode()
    assert "worker lost" in html


def test_the_login_pages_log_in_link_keeps_where_it_was_going(client):
    html = client.get("/accounts/login/?next=/scenarios/").content.decode()
    assert 'href="/accounts/login/?next=/scenarios/"' in html
    assert "next=/accounts/login/" not in html and "next=%2Faccounts%2Flogin%2F" not in html
