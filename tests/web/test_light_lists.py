"""Lists stay light (issue #18) for sweeps and plans as for runs (tests/web/test_runs_api.py):
a page is a fixed number of queries whatever its length, and the database ships none of the
JSON the list does not show (a sweep's base scenario and Pareto front, a plan's spec and
merged answer)."""

import pytest
import simulation
from django.db import connection
from django.test.utils import CaptureQueriesContext

from tests.web.test_runs_api import _plain_column, _selected_columns
from tierlab.dashboard.models import Plan, Sweep, SweepChunk

pytestmark = pytest.mark.django_db
BULKY = {"blob": "x" * 20_000}            # stands in for a large base scenario or answer


def sweeps_of(owner, n: int) -> list[Sweep]:
    """``n`` sweeps of 10 points in two chunks; sweep i has i % 11 points done."""
    made = Sweep.objects.bulk_create(
        Sweep(owner=owner, name=f"s{i}", base_spec=BULKY, axes=[{"path": "training.seq_len", "values": list(range(10))}],
              total_points=10, pareto=list(range(10)), engine_version=simulation.ENGINE_VERSION) for i in range(n))
    SweepChunk.objects.bulk_create(
        SweepChunk(sweep=s, start=start, stop=start + 5, done=min(5, max(0, (i % 11) - start)))
        for i, s in enumerate(made) for start in (0, 5))
    return made


def listed(api, url):
    with CaptureQueriesContext(connection) as queries:
        r = api.get(url, {"page_size": 50})
    assert r.status_code == 200, r.content
    return r.json()["results"], [q["sql"] for q in queries.captured_queries]


def selects_of(sqls, table):
    return [sql for sql in sqls if sql.startswith("SELECT") and f'"{table}"."id"' in _selected_columns(sql)]


def test_a_sweep_list_is_a_fixed_number_of_queries_and_ships_no_specs(owner_api, owner):
    sweeps_of(owner, 3)
    _, few = listed(owner_api, "/api/v1/sweeps/")
    made = sweeps_of(owner, 30)
    rows, many = listed(owner_api, "/api/v1/sweeps/")
    assert len(many) == len(few), many                     # was one progress sum per row
    by_name = {row["name"]: row for row in rows}
    for i, sweep in enumerate(made):                       # the progress the detail shows
        assert by_name[sweep.name]["progress"] == pytest.approx((i % 11) / 10)
        assert owner_api.get(f"/api/v1/sweeps/{sweep.pk}/").json()["progress"] == pytest.approx((i % 11) / 10)
    for sql in selects_of(many, "dashboard_sweep"):
        for column in ("base_spec", "pareto"):
            assert not _plain_column(sql, f'"dashboard_sweep"."{column}"'), sql


def test_a_plan_list_ships_no_spec_or_answer(owner_api, owner):
    Plan.objects.bulk_create(
        Plan(owner=owner, name=f"p{i}", spec=BULKY, result=BULKY, total_candidates=4,
             engine_version=simulation.ENGINE_VERSION) for i in range(5))
    rows, sqls = listed(owner_api, "/api/v1/plans/")
    assert len(rows) == 5 and {"spec", "result"}.isdisjoint(rows[0])
    assert selects_of(sqls, "dashboard_plan")
    for sql in selects_of(sqls, "dashboard_plan"):
        for column in ("spec", "result"):
            assert not _plain_column(sql, f'"dashboard_plan"."{column}"'), sql
