"""What a newcomer reads on the run page and the scenario list (issue: a newcomer's useless
answers): the ZeRO-Infinity step headline names its optimizer phase, a scenario that does
not fit marks its step time and cost as those of a run that cannot start, and the scenario
list fits a 390 px phone. Screenshots land in test-results/browser/ for a person to look at."""

import re
import pytest

from tests.browser.conftest import log_in, screenshot
from tests.web.dashboard_helpers import run_queued_runs

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def _run_page(page, live_url, user, name, spec):
    from tierlab.scenarios import services
    scenario = services.create_scenario(user, name, spec)
    run = services.start_run(scenario)
    run_queued_runs()
    log_in(page, live_url, user)
    page.goto(f"{live_url}/runs/{run.pk}/")
    page.wait_for_selector("#run-progress-panel[data-status='succeeded']", timeout=60_000)
    page.wait_for_selector("#step-headline", timeout=20_000)
    return run


def test_the_zero_infinity_headline_names_the_optimizer_phase(page, live_url, user_admin, catalog):
    from tierlab.scenarios.examples import examples
    ex = next(e for e in examples() if "ZeRO-Infinity" in e["name"])
    run = _run_page(page, live_url, user_admin, ex["name"], ex["scenario"])
    note = page.locator("#step-time small").last.inner_text()
    screenshot(page, "newcomer-zero-infinity-run")
    page.locator("#step-headline").screenshot(path=str(screenshot(page, "newcomer-zero-infinity-headline")))
    # the phase after the last micro-batch (the CPU optimizer and its NVMe traffic) dominates
    # this step: the headline leads with it, its share, then the micro-batches
    run.refresh_from_db()
    step = run.result["step"]
    share = step["optimizer_phase_s"] / step["time_s"]
    assert share > 0.5, step
    m = re.fullmatch(r"optimizer step ≈ ([\d.,]+) s \((\d+)%\), after (\d+) micro-batches of ≈ ([\d.,]+) s", note)
    assert m, note
    assert float(m[1].replace(",", "")) == pytest.approx(step["optimizer_phase_s"], rel=0.01)
    assert int(m[2]) == round(100 * share)
    assert int(m[3]) == step["micro_batches"]
    assert float(m[4].replace(",", "")) == pytest.approx(step["micro_batch_s"], rel=0.01)


def test_a_scenario_that_does_not_fit_marks_its_step_time_and_cost(page, live_url, user_admin, catalog):
    spec = {"model": {"preset": "llama2-70b"}, "cluster": {"node": "dgx-h100", "num_nodes": 1},
            "training": {"micro_batch_size": 1, "global_batch_size": 8, "seq_len": 4096,
                         "recompute": "full"}, "strategy": {"kind": "zero3"}}
    _run_page(page, live_url, user_admin, "70B ZeRO-3 on one node (does not fit)", spec)
    screenshot(page, "newcomer-does-not-fit-run")
    page.locator("#step").screenshot(path=str(screenshot(page, "newcomer-does-not-fit-step")))
    assert page.locator("#step").get_attribute("data-unfit") == "true"
    assert "does not fit, so the run cannot start" in page.locator("#step-unfit").inner_text()
    assert page.locator("#step-time small").first.inner_text() == "Step time if it fit"


def test_a_queued_run_moves_its_bar_and_cannot_be_run_again_until_it_finishes(page, live_url, user_admin, catalog,
                                                                              settings):
    from tierlab.scenarios import services
    from tests.browser.conftest import wait_until
    from tests.web.dashboard_helpers import spec
    settings.TIERLAB_RUN_QUEUE = "tierlab-test-no-worker-reads-this"
    scenario = services.create_scenario(user_admin, "7B queued", spec())
    run = services.start_run(scenario)     # sent to this test's own queue, which no worker reads
    log_in(page, live_url, user_admin)
    page.goto(f"{live_url}/runs/{run.pk}/")
    page.wait_for_selector("#run-progress-panel[data-status='queued']")
    assert page.locator("#run-again").is_disabled()
    # nothing measured yet: an indeterminate bar (no value), never "0 %"
    assert page.locator("#run-progress").get_attribute("value") is None
    assert "0%" not in page.locator("#run-progress-panel").inner_text()
    page.locator("#run-progress-panel").screenshot(path=str(screenshot(page, "newcomer-run-queued")))
    page.goto(f"{live_url}/scenarios/")
    button = page.locator(f"#scenario-{scenario.pk} .row-actions button.run-button")
    assert button.inner_text() == "Run again" and button.is_disabled()
    run_queued_runs()
    page.goto(f"{live_url}/runs/{run.pk}/")
    page.wait_for_selector("#run-progress-panel[data-status='succeeded']", timeout=60_000)
    wait_until(page, "() => !document.getElementById('run-again').disabled")


def test_the_scenario_list_fits_a_390_px_phone(page, live_url, user_admin, catalog):
    from tierlab.scenarios.examples import examples
    from tierlab.scenarios.models import Scenario
    for e in examples():
        Scenario.objects.create(owner=user_admin, name=e["name"], spec=e["scenario"])
    page.set_viewport_size({"width": 390, "height": 844})
    log_in(page, live_url, user_admin)
    page.goto(f"{live_url}/scenarios/")
    screenshot(page, "newcomer-scenario-list-390")
    fit = page.evaluate("""() => ({page: document.documentElement.scrollWidth, window: window.innerWidth,
      off: [...document.querySelectorAll('.row-actions button, .row-actions a')]
        .filter(b => b.getBoundingClientRect().right > window.innerWidth + 1).map(b => b.textContent)})""")
    assert fit["page"] <= fit["window"] and fit["off"] == [], fit


def test_the_form_names_every_bad_field_at_once_and_bounds_the_sequence_length(page, live_url, user_admin, catalog):
    log_in(page, live_url, user_admin)
    page.wait_for_selector("#scenario-form-root[data-ready='true']")
    page.fill("input[name='training.seq_len']", "100000000")
    page.fill("input[name='training.micro_batch_size']", "0")
    page.fill("input[name='name']", "two bad fields")
    page.click("#submit-scenario")
    seq = page.locator("[data-error-for='training.seq_len']")
    seq.wait_for(state="visible")
    assert "at most 10,000,000" in seq.inner_text()
    mb = page.locator("[data-error-for='training.micro_batch_size']")
    assert mb.is_visible() and "at least 1" in mb.inner_text()
    screenshot(page, "newcomer-form-two-errors")
