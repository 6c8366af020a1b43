"""The cluster-profile pages: fit one from a form, field-named errors, the team sees it."""

import pytest

from tierlab.scenarios.models import ClusterProfile, Scenario
from tests.refdata import cases

pytestmark = pytest.mark.django_db
T1 = {c["id"]: c for c in cases("narayanan_2021_table1")}


def form(**extra):
    return {"name": "selene", "node": "dgx-a100-80gb", "collective": "all_reduce",
            "checkpoint_target": "parallel_fs", **extra}


def test_the_form_fits_and_saves_a_profile_in_the_units_tools_print(client, owner):
    client.force_login(owner)
    s = Scenario.objects.create(owner=owner, name="530B", spec=T1["nar21_t1_529p6B"]["scenario"])
    r = client.post("/profiles/", form(collective_size_mib="1024", collective_ranks="8",
                                       collective_busbw_gb_s="230", gemm_tflops="250",
                                       checkpoint_size_gb="2300", checkpoint_nodes="48", checkpoint_write_s="40",
                                       step_scenario=str(s.pk),
                                       step_s=str(T1["nar21_t1_529p6B"]["expected_step_time_s"])))
    assert r.status_code == 302, r.content.decode()[-3000:]
    p = ClusterProfile.objects.get()
    assert p.measurements["collectives"][0]["bus_bytes_per_s"] == 230e9
    assert p.measurements["collectives"][0]["size_bytes"] == 2**30
    # the measured step (work compute model) fits the GEMM rate; the 250 TFLOP/s benchmark
    # stays among the fits
    assert p.figures["gemm_flops"] < 250e12 and "compute_efficiency" not in p.figures
    assert next(f for f in p.fits if f["kind"] == "gemm")["measured_flops_per_s"] == 250e12
    page = client.get(r["Location"])
    assert page.status_code == 200
    body = page.content.decode()
    assert 'data-figure="gemm_flops"' in body and 'data-kind="step"' in body
    assert "fitted to the measured step" in body and 'data-figure="compute_efficiency"' not in body
    listing = client.get("/profiles/").content.decode()
    assert f"GEMM {round(p.figures['gemm_flops'] / 1e12)} TFLOP/s" in listing


def test_an_impossible_measurement_is_shown_at_its_field(client, owner):
    client.force_login(owner)
    r = client.post("/profiles/", form(collective_size_mib="1024", collective_ranks="8",
                                       collective_busbw_gb_s="9000"))
    assert r.status_code == 400
    assert 'data-error-for="collective_busbw_gb_s"' in r.content.decode()
    r = client.post("/profiles/", form(collective_ranks="8"))
    assert r.status_code == 400 and 'data-error-for="collective_busbw_gb_s"' in r.content.decode()
    assert ClusterProfile.objects.count() == 0


def test_every_impossible_measurement_is_shown_at_its_field(client, owner):
    """A GEMM rate above the A100's peak and a bus bandwidth faster than NVLink: both shown
    (the first alone was)."""
    client.force_login(owner)
    r = client.post("/profiles/", form(gemm_tflops="5000", collective_size_mib="1024", collective_ranks="8",
                                       collective_busbw_gb_s="9000"))
    assert r.status_code == 400
    html = r.content.decode()
    assert 'data-error-for="gemm_tflops"' in html and 'data-error-for="collective_busbw_gb_s"' in html
    assert ClusterProfile.objects.count() == 0


def test_the_team_sees_the_profile_strangers_get_404(client, owner, teammate, stranger):
    p = ClusterProfile.objects.create(owner=owner, name="selene", measurements={}, figures={"compute_efficiency": 0.6})
    client.force_login(teammate)
    assert b"selene" in client.get("/profiles/").content
    assert client.get(f"/profiles/{p.pk}/").status_code == 200
    client.force_login(stranger)
    assert b"selene" not in client.get("/profiles/").content
    assert client.get(f"/profiles/{p.pk}/").status_code == 404
