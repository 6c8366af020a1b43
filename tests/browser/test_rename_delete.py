"""Rename and Delete on an object's page in a real browser: the owner renames a sweep (a bad
name is refused naming the field, and nothing changes), a teammate sees no such actions, and
the owner deletes a scenario after confirming; a scenario that a comparison uses is refused
with the comparison named."""

import pytest

from tests.browser.conftest import log_in, screenshot

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_the_owner_renames_a_sweep_and_a_bad_name_is_refused_naming_the_field(page, live_url, user_admin):
    from tests.web.dashboard_helpers import run_chunks, spec
    from tierlab.dashboard import sweeps
    from tierlab.dashboard.models import Sweep
    from tierlab.scenarios.models import Scenario

    base = Scenario.objects.create(owner=user_admin, name="base", spec=spec())
    sweep = sweeps.create_sweep(user_admin, base.pk, [{"path": "cluster.num_nodes", "values": [1, 2]}], "grid")
    run_chunks(sweep)
    log_in(page, live_url, user_admin)
    page.goto(f"{live_url}/sweeps/{sweep.pk}/")
    page.wait_for_selector("#manage:not([hidden])")

    page.fill("#rename-name", "x" * 190 + "\u202e" + "y")       # a bidi control: the field says why
    page.click("#rename")
    page.wait_for_selector("#manage-status.error")
    assert page.inner_text("#manage-status").startswith("name: contains the Unicode bidirectional control U+202E")
    assert page.get_attribute("#rename-name", "aria-invalid") == "true"
    assert Sweep.objects.get(pk=sweep.pk).name == "grid"

    page.fill("#rename-name", "  Nodes 1-2  ")
    page.click("#rename")
    page.wait_for_selector("#manage-status:not(.error)")
    assert page.inner_text("#manage-status") == "Renamed to “Nodes 1-2”."
    assert page.inner_text("h1") == "Nodes 1-2"
    screenshot(page, "sweep-renamed")
    assert Sweep.objects.get(pk=sweep.pk).name == "Nodes 1-2"
    assert not page.js_errors


def test_the_owner_deletes_a_scenario_after_confirming(page, live_url, user_admin, example_spec):
    from tierlab.dashboard import comparisons
    from tierlab.scenarios.models import Scenario

    used = Scenario.objects.create(owner=user_admin, name="in a comparison", spec=example_spec)
    other = Scenario.objects.create(owner=user_admin, name="other", spec=example_spec)
    c = comparisons.create_comparison(user_admin, [used.pk, other.pk], "side by side")
    log_in(page, live_url, user_admin)

    page.goto(f"{live_url}/scenarios/{used.pk}/")
    page.wait_for_selector("#manage:not([hidden])")
    questions = []
    page.once("dialog", lambda d: (questions.append(d.message), d.dismiss()))   # No: nothing happens
    page.click("#delete")
    page.wait_for_timeout(300)
    assert questions and questions[0].startswith("Delete the scenario “in a comparison”?")
    assert Scenario.objects.filter(pk=used.pk).exists()

    page.once("dialog", lambda d: d.accept())
    page.click("#delete")
    page.wait_for_selector("#manage-status.error")
    assert f"'side by side' (id {c.pk})" in page.inner_text("#manage-status")
    assert Scenario.objects.filter(pk=used.pk).exists()

    lone = Scenario.objects.create(owner=user_admin, name="to delete", spec=example_spec)
    page.goto(f"{live_url}/scenarios/{lone.pk}/")
    page.wait_for_selector("#manage:not([hidden])")
    page.once("dialog", lambda d: d.accept())
    page.click("#delete")
    page.wait_for_url(f"{live_url}/scenarios/")
    assert not Scenario.objects.filter(pk=lone.pk).exists()
    assert "to delete" not in page.inner_text("main")
    assert not page.js_errors


def test_a_teammate_sees_no_rename_or_delete(page, live_url, user_admin, django_user_model, example_spec):
    from django.contrib.auth.models import Group

    from tierlab.scenarios.models import Scenario

    mate = django_user_model.objects.create_user(username="mate", password="pw-for-mate-123")
    mate.raw_password = "pw-for-mate-123"
    Group.objects.create(name="team").user_set.add(user_admin, mate)
    sc = Scenario.objects.create(owner=user_admin, name="admin's", spec=example_spec)
    log_in(page, live_url, mate)
    page.goto(f"{live_url}/scenarios/{sc.pk}/")
    page.wait_for_selector("#read-only-note")
    assert page.locator("#manage").count() == 0 and page.locator("#delete").count() == 0
    assert not page.js_errors


def test_the_owner_deletes_a_comparison_from_the_list(page, live_url, user_admin, example_spec, django_user_model):
    from django.contrib.auth.models import Group

    from tierlab.dashboard import comparisons
    from tierlab.dashboard.models import Comparison
    from tierlab.scenarios.models import Scenario

    a, b = (Scenario.objects.create(owner=user_admin, name=n, spec=example_spec) for n in ("a", "b"))
    mine = comparisons.create_comparison(user_admin, [a.pk, b.pk], "to tidy away")
    mate = django_user_model.objects.create_user(username="mate", password="pw-for-mate-123")
    Group.objects.create(name="team").user_set.add(user_admin, mate)
    c, d = (Scenario.objects.create(owner=mate, name=n, spec=example_spec) for n in ("c", "d"))
    theirs = comparisons.create_comparison(mate, [c.pk, d.pk], "the team's")
    log_in(page, live_url, user_admin)
    page.goto(f"{live_url}/compare/")
    page.wait_for_selector("#comparison-list button.delete-row:not([hidden])")
    assert page.locator("#comparison-list button.delete-row").count() == 1      # not on the team's row
    page.once("dialog", lambda dlg: dlg.accept())
    page.click("#comparison-list button.delete-row")
    page.wait_for_selector("#comparison-list >> text=to tidy away", state="detached")
    assert "the team's" in page.inner_text("#comparison-list")
    assert not Comparison.objects.filter(pk=mine.pk).exists() and Comparison.objects.filter(pk=theirs.pk).exists()
    assert Scenario.objects.filter(pk__in=[a.pk, b.pk]).count() == 2            # its scenarios stay
    assert not page.js_errors
