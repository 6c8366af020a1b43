"""A recommendation model in a real browser: switch the form to "Recommendation model",
run DLRM v2 (MLPerf) on two DGX H100 on a real Celery worker and see the embedding
placement and the parameter-server vs all-to-all comparison charted, in the light and
the dark colour scheme (screenshots in test-results/browser/); and a negative Zipf α
shown next to its input."""

import re

import pytest

from tests.browser.conftest import log_in, screenshot

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

RECSYS_CHARTS = ("embedding-chart", "ps-chart", "memory-chart", "step-chart")


def open_recsys_form(page, live_url, user):
    log_in(page, live_url, user)
    page.wait_for_selector("#scenario-form-root[data-ready='true']")
    page.select_option("select[name='model_kind']", "recsys")
    # the transformer's inputs give way to the recommendation model's
    page.wait_for_selector("#recsys-fieldset:not([hidden])")
    assert page.locator("select[name='model.preset']").is_hidden()
    assert page.locator("input[name='training.seq_len']").is_hidden()
    assert page.locator("select[name='checkpoint.target']").is_hidden()


def fill_dlrm_v2_on_two_dgx(page):
    page.select_option("select[name='recsys.preset']", "dlrm-mlperf-v2")
    page.select_option("select[name='cluster.node']", "dgx-h100")
    page.fill("input[name='cluster.num_nodes']", "2")
    page.fill("input[name='cluster.gpus_per_node']", "8")


def wait_for_charts(page):
    for chart in RECSYS_CHARTS:
        page.wait_for_selector(f"#{chart}[data-rendered='true']", timeout=20_000)


def test_dlrm_v2_runs_on_the_worker_and_its_embeddings_and_ps_are_charted(page, live_url, user_admin, catalog,
                                                                          celery_worker):
    open_recsys_form(page, live_url, user_admin)
    fill_dlrm_v2_on_two_dgx(page)
    page.fill("input[name='name']", "DLRM v2 on 2x DGX H100 (browser test)")
    page.wait_for_selector("#live-estimate[data-fits='true']")
    assert "recommendation model" in page.locator("#live-estimate").inner_text()
    screenshot(page, "scenario-form-recsys")

    page.click("#submit-scenario")
    page.wait_for_url(re.compile(r".*/runs/\d+/$"))
    page.wait_for_selector("#run-progress-panel[data-status='succeeded'], #run-progress-panel[data-status='failed']",
                           timeout=60_000)
    assert page.locator("#run-progress-panel").get_attribute("data-status") == "succeeded", \
        page.locator("#run-problem").inner_text()
    wait_for_charts(page)

    # what was sent: the recsys section and the cluster, no transformer
    run = page.evaluate("fetch(document.querySelector('#run-result-root').dataset.runUrl).then(r => r.json())")
    resolved = run["result"]["scenario"]
    assert resolved["recsys"]["preset"] == "dlrm-mlperf-v2"
    assert resolved["cluster"]["num_nodes"] == 2
    assert resolved.get("model") is None

    # the embedding placement: a row per tier with units in every cell
    table = page.locator("#embedding-table").inner_text()
    for text in ("HBM", "16 GPUs", "GB", "GiB", "%", "ms", "$"):
        assert text in table, text
    assert page.locator("#embedding-table tbody tr").count() == len(run["result"]["embedding"]["tiers"])
    chart = page.locator("#embedding-chart").inner_text()
    # each tier's panel in the unit its bytes read in: HBM 1.33 TB over 16 GPUs, NVMe 61.4 TB
    assert "Lookups served (%)" in chart and "Stored (TB)" in chart and "cap. 61.4 TB" in chart
    assert "dense compute" in page.locator("#embedding-overlap-text").inner_text()

    # PS vs all-to-all: the faster design in words, both designs charted with units
    summary = page.locator("#ps-summary").inner_text()
    assert re.search(r"(All-to-all|Parameter server) is [\d.]+× faster than the", summary), summary
    ps_chart = page.locator("#ps-chart").inner_text()
    for text in ("Parameter server", "All-to-all", "Step time (", "Bytes on wire per step ("):
        assert text in ps_chart, text
    assert page.locator("#ps-table tbody tr").count() == 2

    # the setup block: bytes per parameter of the embedding rows and the dense MLPs, not
    # the transformer convention's table
    assert page.locator("#bytes-per-param-table").count() == 0
    setup = page.locator("#setup").inner_text()
    assert "realistic, for the dense MLP states" in setup and "DeepSpeed" not in setup
    rows = page.locator("#recsys-bytes-table tbody tr")
    assert rows.count() == 2
    embedding_row, dense_row = rows.nth(0).inner_text(), rows.nth(1).inner_text()
    assert "Embedding tables" in embedding_row and f"{run['result']['model']['embedding_params']:,}" in embedding_row
    assert re.search(r"8 B/param\s.*4 B/param of values \(fp32\) \+ 4 B/param of Adagrad state", embedding_row), \
        embedding_row
    assert "Dense MLPs" in dense_row and "16 B/param" in dense_row and "on every GPU" in dense_row

    # the transformer-only sections are not there, and nothing broke
    for absent in ("#timeline-chart", "#bandwidth-chart", "#goodput-chart", "#checkpoint-table"):
        assert page.locator(absent).count() == 0, absent
    assert "samples/s" in page.locator("#step-samples").inner_text()
    screenshot(page, "run-recsys-light")

    page.emulate_media(color_scheme="dark")
    page.wait_for_timeout(300)
    wait_for_charts(page)
    screenshot(page, "run-recsys-dark")
    assert page.js_errors == []


def test_a_negative_zipf_alpha_is_shown_next_to_its_input(page, live_url, user_admin, catalog):
    from tierlab.scenarios.models import Scenario

    open_recsys_form(page, live_url, user_admin)
    fill_dlrm_v2_on_two_dgx(page)
    # the PMEM capacity (GB) is asked for only while PMEM is checked
    pmem_capacity = page.locator("input[name='recsys.tiers.pmem.capacity_bytes']")
    assert pmem_capacity.is_hidden()
    page.check("input[name='recsys.tiers.pmem']")
    assert pmem_capacity.is_visible()
    page.uncheck("input[name='recsys.tiers.pmem']")
    assert pmem_capacity.is_hidden()
    page.fill("input[name='name']", "negative zipf alpha")
    page.fill("input[name='recsys.zipf_alpha']", "-0.5")  # the engine wants >= 0
    page.click("#submit-scenario")

    error = page.locator("[data-error-for='recsys.zipf_alpha']")
    error.wait_for(state="visible")
    assert ">= 0" in error.inner_text()
    field = page.locator("input[name='recsys.zipf_alpha']")
    assert field.get_attribute("aria-invalid") == "true"
    assert error.get_attribute("id") in (field.get_attribute("aria-describedby") or "").split()
    assert "Zipf α" in page.locator("#form-errors").inner_text()
    screenshot(page, "scenario-form-recsys-error")
    assert "/runs/" not in page.url
    assert not Scenario.objects.filter(name="negative zipf alpha").exists()

    field.fill("0.8")
    assert field.get_attribute("aria-invalid") is None

    # back to a transformer: its inputs return, the recommendation model's go
    page.select_option("select[name='model_kind']", "transformer")
    assert page.locator("select[name='model.preset']").is_visible()
    assert page.locator("input[name='training.seq_len']").is_visible()
    assert page.locator("#recsys-fieldset").is_hidden()
    assert page.js_errors == []
