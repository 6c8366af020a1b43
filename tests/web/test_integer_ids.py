"""An id in a JSON body is a JSON integer: ``"1"``, ``1.0`` or ``true`` is a 400 naming the
field ("Must be an integer id, got a string ("1")."), and nothing is created.

DRF 3.18's IntegerField takes ``int(re.sub(r"\\.0*\\s*$", "", str(data)))``
(rest_framework/fields.py, IntegerField.to_internal_value): the string "1", " 1", "1.0"
and the float 1.0 were all the id 1, so a client sending the wrong type was never told
(the schema says ``type: integer``). ``true`` was refused already (int("True") fails), but
as "A valid integer is required." without saying what was sent.
"""

from unittest import mock

import pytest

from simulation.fields import show
from tierlab.dashboard.models import Comparison, ShareLink, Sweep
from tierlab.scenarios.models import Scenario

pytestmark = pytest.mark.django_db

PLAN = {"model": "llama2-7b", "cluster": {"node": "dgx-h100", "num_nodes": 1},
        "training": {"seq_len": 2048, "global_batch_size": 8}}
# the bad form of an id, and how the message names its kind
BAD = {"string": (str, "a string"), "spaced": (lambda pk: f" {pk} ", "a string"),
       "float": (float, "a decimal number"), "bool": (lambda pk: True, "a boolean")}


@pytest.fixture
def two(owner, example_spec):
    return [Scenario.objects.create(owner=owner, name=f"s{i}", spec=example_spec).pk for i in range(2)]


def bodies(two, bad):
    """(url, body, the field holding the bad id, its value, the model a good body creates)."""
    a, b = two
    axes = [{"path": "cluster.num_nodes", "values": [1, 2]}]
    return [
        ("/api/v1/comparisons/", {"scenarios": [bad(a), b]}, "scenarios.0", bad(a), Comparison),
        ("/api/v1/comparisons/", {"scenarios": [a, bad(b)]}, "scenarios.1", bad(b), Comparison),
        ("/api/v1/sweeps/", {"scenario": bad(a), "axes": axes}, "scenario", bad(a), Sweep),
        ("/api/v1/shares/", {"scenario": bad(a)}, "scenario", bad(a), ShareLink),
    ]


@pytest.mark.parametrize("kind", list(BAD))
def test_an_id_that_is_not_a_json_integer_is_a_400_naming_it(owner_api, two, kind):
    bad, words = BAD[kind]
    for url, body, field, value, model in bodies(two, bad):
        before = model.objects.count()
        r = owner_api.post(url, body, format="json")
        assert r.status_code == 400, (url, body, r.status_code, r.content[:200])
        assert r.json() == {field: [f"Must be an integer id, got {words} ({show(value)})."]}, (url, r.json())
        assert model.objects.count() == before, url


def test_the_same_ids_as_integers_are_taken(owner_api, two):
    a, b = two
    assert owner_api.post("/api/v1/comparisons/", {"scenarios": [a, b]}, format="json").status_code == 201
    assert owner_api.post("/api/v1/shares/", {"scenario": a}, format="json").status_code == 201


@pytest.mark.parametrize("rank, kind", [("1", "a string"), (1.0, "a decimal number"), (False, "a boolean")])
def test_a_plan_rank_is_a_json_integer(owner_api, rank, kind, django_capture_on_commit_callbacks):
    """Not an id, but a whole number in a body all the same (PlanSaveSerializer.rank)."""
    with mock.patch("tierlab.dashboard.tasks.run_plan_chunk.apply_async"):
        with django_capture_on_commit_callbacks(execute=True):
            plan = owner_api.post("/api/v1/plans/", {"spec": PLAN}, format="json").json()["id"]
    before = Scenario.objects.count()
    r = owner_api.post(f"/api/v1/plans/{plan}/save/", {"rank": rank}, format="json")
    assert r.status_code == 400 and list(r.json()) == ["rank"], r.json()
    assert r.json()["rank"] == [f"Must be an integer, got {kind} ({show(rank)})."]
    assert Scenario.objects.count() == before
