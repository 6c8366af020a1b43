"""The sweep page's points table in a real browser: a point whose memory is within the
engine's error of the capacity reads "tight", as its run page does ("Tight: ... it may not
fit"), not "fits ◆ Pareto front"; and a size's two pieces keep the space between them.
Found by a newcomer check: "91.7 GB of 85.1 GB HBM" read "fits ◆ Pareto front", and the
HBM column read "160.7 GB(149.7 GiB)"."""

import pytest

from tests.browser.conftest import log_in

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_a_tight_point_reads_tight_and_sizes_keep_their_space(page, live_url, user_admin, catalog):
    from rest_framework.test import APIClient

    from tests.web.dashboard_helpers import run_chunks, spec
    from tierlab.scenarios.models import Scenario

    # Llama-2-7B, ZeRO-3, no recomputation, micro-batch 1 on H100s: at 4,096 tokens 57 %
    # of the HBM (fits), at 8,192 94 % (inside ZeRO-3's memory error: tight)
    base = Scenario.objects.create(owner=user_admin, name="7B no recompute",
                                   spec=spec(**{"training.recompute": "none"}))
    api = APIClient()
    api.force_authenticate(user_admin)
    r = api.post("/api/v1/sweeps/", {"scenario": base.pk, "axes": [
        {"path": "training.seq_len", "values": [4096, 8192]}]}, format="json")
    assert r.status_code in (201, 202), r.content
    run_chunks()                                  # in this process: no worker needed
    log_in(page, live_url, user_admin)
    page.goto(f"{live_url}/sweeps/{r.json()['id']}/")
    page.wait_for_selector("#sweep-root[data-status='succeeded']")
    rows = page.locator("#sweep-table tbody tr")
    assert rows.count() == 2
    first, second = (rows.nth(i).locator("td.outcome, td.outcome.muted").inner_text() for i in (0, 1))
    assert first.startswith("fits") and "tight" not in first
    assert second.startswith("tight: it may not fit"), second
    for i in (0, 1):
        hbm = rows.nth(i).locator("td.num").nth(4).inner_text()
        assert "GB (" in hbm.replace("\n", " ").replace("\u00a0", " "), repr(hbm)
