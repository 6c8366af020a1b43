"""The POST actions that take no body (cancel a run, a sweep or a plan; compare a plan's top
three; revoke a share link; fork a shared link) refuse a key in one, naming it, and do
nothing; no body, an empty body and ``{}`` (what the frontend sends to a sweep's cancel/:
frontend/src/dashboard/api.ts, ``postJSON(url, {})``) work as before.

Why: DRF parses a request's body and hands it to the view (``request.data``,
rest_framework/request.py); a view that never reads it ignored any key, so
``{"force": true}`` silently did nothing. The message is the one of POST scenarios/{id}/runs/
(tests/web/test_runs_api.py; tierlab.api.NoBodySerializer)."""

import pytest

from tests.web.dashboard_helpers import spec
from tierlab.dashboard import plans, sharing, sweeps
from tierlab.dashboard.models import Comparison, Plan, PlanChunk, ShareLink, Sweep, SweepChunk
from tierlab.scenarios import services
from tierlab.scenarios.models import Run, Scenario

pytestmark = pytest.mark.django_db

TAKES_NONE = "unknown field; this request takes none (send {} or no body)"

# A plan small enough to evaluate here: 2 x 2 candidates on one node.
PLAN = {"model": "llama2-7b", "cluster": {"node": "dgx-h100", "num_nodes": 1},
        "training": {"seq_len": 2048, "global_batch_size": 8, "flash_attention": True},
        "space": {"tensor_parallel": [1, 2], "pipeline_parallel": [1], "micro_batch_size": [1],
                  "recompute": ["full"], "strategies": ["zero1", "zero3"]},
        "top_k": 5}


def _base(owner) -> Scenario:
    return Scenario.objects.create(owner=owner, name="base", spec=spec())


def run_cancel(owner, stranger):
    return "owner", f"/api/v1/runs/{services.start_run(_base(owner)).pk}/cancel/", 200


def sweep_cancel(owner, stranger):
    sweep = sweeps.create_sweep(owner, _base(owner).pk, [{"path": "cluster.num_nodes", "values": [1, 2]}])
    return "owner", f"/api/v1/sweeps/{sweep.pk}/cancel/", 200


def plan_cancel(owner, stranger):
    return "owner", f"/api/v1/plans/{plans.create_plan(owner, PLAN).pk}/cancel/", 200


def plan_compare(owner, stranger):
    plan = plans.create_plan(owner, PLAN)
    for chunk in PlanChunk.objects.filter(plan=plan).order_by("index"):
        plans.execute_chunk(chunk.pk)
    plan.refresh_from_db()
    assert plan.status == "succeeded" and len(plan.result["top"]) >= 2, plan.error
    return "owner", f"/api/v1/plans/{plan.pk}/compare/", 201


def share_revoke(owner, stranger):
    return "owner", f"/api/v1/shares/{sharing.create_share(owner, 'scenario', _base(owner).pk).pk}/revoke/", 200


def fork(owner, stranger):
    link = sharing.create_share(owner, "scenario", _base(owner).pk)
    return "stranger", f"/api/v1/shared/{link.token}/fork/", 201


ENDPOINTS = [run_cancel, sweep_cancel, plan_cancel, plan_compare, share_revoke, fork]


def world() -> dict:
    """What any of these actions changes: rows made, states, cancel flags, revocations."""
    return {
        "scenarios": list(Scenario.objects.order_by("pk").values_list("pk", "owner_id")),
        "runs": list(Run.objects.order_by("pk").values_list("pk", "status", "error")),
        "comparisons": list(Comparison.objects.order_by("pk").values_list("pk")),
        "sweeps": list(Sweep.objects.order_by("pk").values_list("pk", "status", "cancelled")),
        "sweep chunks": list(SweepChunk.objects.order_by("pk").values_list("pk", "status")),
        "plans": list(Plan.objects.order_by("pk").values_list("pk", "status", "cancelled")),
        "plan chunks": list(PlanChunk.objects.order_by("pk").values_list("pk", "status")),
        "links": list(ShareLink.objects.order_by("pk").values_list("pk", "revoked_at")),
    }


@pytest.fixture
def clients(owner_api, stranger_api):
    return {"owner": owner_api, "stranger": stranger_api}


@pytest.mark.parametrize("make", ENDPOINTS, ids=lambda f: f.__name__)
@pytest.mark.parametrize("body", [{"bogus": 1}, {"force": True, "bogus": 1}], ids=["json", "two-keys"])
def test_a_key_in_the_body_is_a_400_naming_it_and_nothing_happens(make, body, owner, stranger, clients):
    who, url, _ok = make(owner, stranger)
    before = world()
    r = clients[who].post(url, body, format="json")
    assert r.status_code == 400, (url, r.status_code, r.content[:300])
    assert r.json() == {key: [TAKES_NONE] for key in body}, url
    assert world() == before, url


@pytest.mark.parametrize("make", ENDPOINTS, ids=lambda f: f.__name__)
def test_a_form_body_is_a_415_and_nothing_happens(make, owner, stranger, clients):
    """The API takes JSON only (tests/web/test_json_only_bodies.py)."""
    who, url, _ok = make(owner, stranger)
    before = world()
    r = clients[who].post(url, {"bogus": "1"}, format="multipart")
    assert r.status_code == 415 and list(r.json()) == ["body"], (url, r.status_code, r.content[:300])
    assert world() == before, url


SENDS = {
    "no body": lambda c, url: c.post(url),
    "{}": lambda c, url: c.post(url, {}, format="json"),                 # what the frontend sends
    "empty JSON body": lambda c, url: c.generic("POST", url, "", content_type="application/json"),
}


@pytest.mark.parametrize("make", ENDPOINTS, ids=lambda f: f.__name__)
@pytest.mark.parametrize("send", list(SENDS), ids=list(SENDS))
def test_no_body_or_an_empty_object_does_what_it_did(make, send, owner, stranger, clients):
    who, url, ok = make(owner, stranger)
    before = world()
    r = SENDS[send](clients[who], url)
    assert r.status_code == ok, (url, r.status_code, r.content[:300])
    assert world() != before, url


@pytest.mark.parametrize("make", [e for e in ENDPOINTS if e is not fork], ids=lambda f: f.__name__)
def test_a_body_does_not_get_past_the_owner_check(make, owner, teammate_api, stranger_api, stranger):
    """A teammate is still told 403 and a stranger 404 whatever they send (the object and
    its permission are checked first, as for runs/)."""
    _who, url, _ok = make(owner, stranger)
    before = world()
    if "/shares/" not in url:          # links are their owner's alone: a teammate sees none (404)
        assert teammate_api.post(url, {"bogus": 1}, format="json").status_code == 403, url
    assert stranger_api.post(url, {"bogus": 1}, format="json").status_code == 404, url
    assert world() == before, url


def test_a_revoked_link_is_still_410_whatever_the_fork_sends(owner, stranger, stranger_api):
    _who, url, _ok = fork(owner, stranger)
    ShareLink.objects.get().revoke()
    assert stranger_api.post(url, {"bogus": 1}, format="json").status_code == 410
