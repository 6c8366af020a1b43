"""The sweep page's points table in a real browser: an FP8 axis's null point reads "off" and
its object point by its fields, never "null" or "[object Object]" (found by a newcomer
check: a sweep over ``training.fp8`` of [null, {"recipe": ...}])."""

import pytest

from tests.browser.conftest import log_in

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_a_null_point_reads_as_its_meaning(page, live_url, user_admin, catalog):
    from rest_framework.test import APIClient

    from tests.web.dashboard_helpers import run_chunks, spec
    from tierlab.scenarios.models import Scenario

    base = Scenario.objects.create(owner=user_admin, name="7B FP8", spec=spec(
        **{"training.framework": "megatron", "training.fp8": {"recipe": "delayed"}}))
    api = APIClient()
    api.force_authenticate(user_admin)
    r = api.post("/api/v1/sweeps/", {"scenario": base.pk, "axes": [
        {"path": "training.fp8", "values": [None, {"recipe": "tensorwise"}]}]}, format="json")
    assert r.status_code == 202, r.content
    run_chunks()                                  # in this process: no worker needed
    log_in(page, live_url, user_admin)
    page.goto(f"{live_url}/sweeps/{r.json()['id']}/")
    page.wait_for_selector("#sweep-root[data-status='succeeded']")
    rows = page.locator("#sweep-table tbody tr")
    assert rows.count() == 2
    cells = [rows.nth(i).locator("td").first.inner_text() for i in (0, 1)]
    assert cells == ["off", "recipe: tensorwise"], cells
    assert "null" not in page.locator("#sweep-table").inner_text()
    assert "[object Object]" not in page.locator("#sweep-root").inner_text()
