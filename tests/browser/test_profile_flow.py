"""Calibration in a real browser: fit a cluster profile from measurements on the profile
page, read its figures, pick it in the scenario form and see the live estimate use it."""

import re

import pytest

from tests.browser.conftest import log_in, screenshot
from tests.refdata import cases
from tierlab.scenarios.models import ClusterProfile, Scenario

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
T1 = {c["id"]: c for c in cases("narayanan_2021_table1")}


def test_a_profile_is_fitted_in_the_browser_and_used_by_the_scenario_form(page, live_url, user_admin, catalog):
    measured = T1["nar21_t1_529p6B"]
    Scenario.objects.create(owner=user_admin, name="GPT 530B on Selene (measured)", spec=measured["scenario"])
    log_in(page, live_url, user_admin)
    page.click("nav >> text=Cluster profiles")
    page.wait_for_url(f"{live_url}/profiles/")
    page.fill("input[name='name']", "Selene (browser test)")
    page.select_option("select[name='node']", "dgx-a100-80gb")
    page.fill("input[name='gemm_tflops']", "250")
    page.select_option("select[name='collective']", "all_reduce")
    page.fill("input[name='collective_size_mib']", "1024")
    page.fill("input[name='collective_ranks']", "8")
    page.fill("input[name='collective_busbw_gb_s']", "230")
    page.fill("input[name='checkpoint_size_gb']", "2300")
    page.fill("input[name='checkpoint_nodes']", "48")
    page.fill("input[name='checkpoint_write_s']", "40")
    page.select_option("select[name='step_scenario']", label="GPT 530B on Selene (measured)")
    page.fill("input[name='step_s']", f"{measured['expected_step_time_s']:.3f}")
    screenshot(page, "profile-form")
    page.click("#submit-profile")
    page.wait_for_url(re.compile(r".*/profiles/\d+/$"))

    figures = page.locator("#profile-figures")
    # the measured step runs the work compute model: it fits the GEMM rate, and the 250
    # TFLOP/s benchmark stays in the table of what each measurement gave
    assert figures.locator("[data-figure='compute_efficiency']").count() == 0
    assert figures.locator("[data-figure='network_efficiency']").count() == 1
    gemm = figures.locator("[data-figure='gemm_flops']").inner_text()
    assert "fitted to the measured step" in gemm and "250 TFLOP/s" not in gemm
    assert "250 TFLOP/s" in page.locator("#profile-fits tr[data-kind='gemm']").inner_text()
    assert "write 57 GB/s" in figures.inner_text() or "write 58 GB/s" in figures.inner_text()
    step = page.locator("#profile-fits tr[data-kind='step']").inner_text()
    assert "54.085 s" in step                      # measured, and the fit reproduces it
    screenshot(page, "profile-detail")
    profile = ClusterProfile.objects.get()

    # the scenario form lists it; picking it changes the live estimate's step time
    page.goto(f"{live_url}/")
    page.wait_for_selector("#scenario-form-root[data-ready='true']")
    page.wait_for_selector("select[name='cluster.profile'][data-loaded='true']")
    option = page.locator(f"select[name='cluster.profile'] option[value='{profile.pk}']")
    assert "Selene (browser test)" in option.inner_text() and "GEMM" in option.inner_text()
    page.select_option("select[name='model.preset']", "llama2-7b")
    page.select_option("select[name='cluster.node']", "dgx-a100-80gb")
    page.fill("input[name='cluster.num_nodes']", "1")
    page.wait_for_selector("#live-estimate[data-fits]")
    with page.expect_request(lambda r: r.url.endswith("/api/v1/estimate/") and r.method == "POST"
                             and f'"profile":{profile.pk}' in (r.post_data or "").replace(" ", "")):
        page.select_option("select[name='cluster.profile']", str(profile.pk))
    page.wait_for_selector("#live-estimate[data-fits]")
    screenshot(page, "scenario-form-with-profile")
    assert not page.js_errors, page.js_errors
