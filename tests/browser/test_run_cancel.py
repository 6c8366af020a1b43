"""The run page's Cancel button in a real browser: a queued run (no worker reads its queue)
is cancelled by its owner and reads back failed, "cancelled by admin", with no button left."""

import uuid

import pytest

from tests.browser.conftest import log_in, screenshot

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_the_owner_cancels_a_queued_run_from_its_page(page, live_url, user_admin, example_spec, settings):
    from tierlab.scenarios import services
    from tierlab.scenarios.models import Run, Scenario

    settings.TIERLAB_RUN_QUEUE = f"tierlab-test-{uuid.uuid4().hex[:8]}"   # no worker reads it
    run = services.start_run(Scenario.objects.create(owner=user_admin, name="to cancel", spec=example_spec))
    log_in(page, live_url, user_admin)
    page.goto(f"{live_url}/runs/{run.pk}/")
    page.wait_for_selector("#run-progress-panel[data-status='queued']")

    page.click("#run-cancel")
    page.wait_for_selector("#run-progress-panel[data-status='failed']")
    assert page.inner_text("#run-status") == "failed"
    assert "cancelled by admin" in page.inner_text("#run-result-root")
    assert page.locator("#run-cancel").count() == 0
    screenshot(page, "run-cancelled")
    assert Run.objects.get(pk=run.pk).error == "cancelled by admin"
    assert not page.js_errors
