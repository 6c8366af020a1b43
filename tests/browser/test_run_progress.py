"""The run page of a running run in a real browser: its progress follows the run on every
poll (polls at most ~1 s apart while it progresses, however long the page has been open),
and its elapsed time counts from the run's start and ticks between polls. Found by a
newcomer check: the "so far" figure counted from when the page opened and moved only when
the page polled, which had backed off to every 5 s while the run still advanced."""

import time
import uuid
from datetime import timedelta

import pytest

from tests.browser.conftest import log_in, wait_until

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

BAR = "() => document.getElementById('run-progress').value"
ELAPSED = "() => Number(document.getElementById('run-elapsed').dataset.elapsedS ?? -1)"


def test_a_running_runs_progress_and_elapsed_time_keep_moving(page, live_url, user_admin, example_spec, settings):
    from django.utils import timezone

    from tierlab.scenarios import services
    from tierlab.scenarios.models import Run, Scenario

    settings.TIERLAB_RUN_QUEUE = f"tierlab-test-{uuid.uuid4().hex[:8]}"   # no worker reads it
    run = services.start_run(Scenario.objects.create(owner=user_admin, name="running", spec=example_spec))
    # as a worker that took it 40 s ago and is 5 % through
    Run.objects.filter(pk=run.pk).update(status=Run.Status.RUNNING, progress=0.05,
                                         started_at=timezone.now() - timedelta(seconds=40))
    log_in(page, live_url, user_admin)
    page.goto(f"{live_url}/runs/{run.pk}/")
    page.wait_for_selector("#run-progress-panel[data-status='running']")
    assert page.evaluate(ELAPSED) >= 40                   # since the run started, not the page opened
    assert "so far, 5%" in page.inner_text("#run-elapsed")

    # The run advances for 10 s (past the old back-off to 5 s): each step shows within ~1 s.
    fraction, shown_late = 0.05, []
    end = time.monotonic() + 10
    while time.monotonic() < end:
        fraction = round(fraction + 0.04, 2)
        Run.objects.filter(pk=run.pk).update(progress=fraction)
        t0 = time.monotonic()
        wait_until(page, f"() => document.getElementById('run-progress').value === {round(fraction * 100)}",
                   timeout_s=4)
        if time.monotonic() - t0 > 2.2:                   # a poll delay of 1 s, plus the request (loaded CI)
            shown_late.append((fraction, round(time.monotonic() - t0, 2)))
    assert not shown_late, shown_late
    assert f"so far, {round(fraction * 100)}%" in page.inner_text("#run-elapsed")

    # No answer from the server for a while: the elapsed time still ticks, locally.
    page.route("**/api/v1/runs/**", lambda route: route.abort())
    before = page.evaluate(ELAPSED)
    page.wait_for_timeout(2600)
    assert page.evaluate(ELAPSED) >= before + 2
    page.unroute("**/api/v1/runs/**")
    assert not page.js_errors
