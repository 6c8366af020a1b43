"""POST/GET /api/v1/scenarios/: create (validated by the engine), list own, 404 for others."""

import pytest

from tierlab.catalog.models import ModelPreset
from tierlab.scenarios.models import Scenario

URL = "/api/v1/scenarios/"
pytestmark = pytest.mark.django_db


def post(client, name, scenario):
    return client.post(URL, {"name": name, "scenario": scenario}, format="json")


def test_it_requires_login(anon_api, example_spec):
    assert anon_api.get(URL).status_code == 401
    assert post(anon_api, "x", example_spec).status_code == 401
    assert Scenario.objects.count() == 0


def test_it_creates_a_scenario_as_given(owner_api, owner, example_spec):
    r = post(owner_api, "mine", example_spec)
    assert r.status_code == 201, r.json()
    body = r.json()
    assert body["name"] == "mine"
    assert body["scenario"] == example_spec          # stored as given, presets unexpanded
    assert body["last_run"] is None
    assert Scenario.objects.get(pk=body["id"]).owner == owner


def test_it_lists_only_own(owner_api, stranger_api, example_spec):
    post(owner_api, "mine", example_spec)
    post(stranger_api, "theirs", example_spec)
    names = [s["name"] for s in owner_api.get(URL).json()["results"]]
    assert names == ["mine"]


def test_it_hides_others_scenarios(owner_api, stranger_api, example_spec):
    pk = post(owner_api, "mine", example_spec).json()["id"]
    assert owner_api.get(f"{URL}{pk}/").status_code == 200
    assert stranger_api.get(f"{URL}{pk}/").status_code == 404
    assert stranger_api.post(f"{URL}{pk}/runs/").status_code == 404


@pytest.mark.parametrize("change, field", [
    (lambda s: (s["cluster"].update(gpus_per_node=8), s["training"].update(global_batch_size=9)),
     "scenario.training.global_batch_size"),
    (lambda s: s["model"].update(preset="no-such-model"), "scenario.model.preset"),
    (lambda s: s["cluster"].update(node="no-such-node"), "scenario.cluster.node"),
    (lambda s: s["cluster"].update(tiers={"ddr": {"capacity_bytes": -1}}),
     "scenario.cluster.tiers.ddr.capacity_bytes"),
    (lambda s: s["cluster"].update(num_nodes=0), "scenario.cluster.num_nodes"),
    (lambda s: s["strategy"].update(kind="zero9"), "scenario.strategy.kind"),
    (lambda s: s["training"].update(bogus=1), "scenario.training.bogus"),
])
def test_it_rejects_bad_scenarios_naming_the_field(owner_api, example_spec, change, field):
    change(example_spec)
    r = post(owner_api, "bad", example_spec)
    assert r.status_code == 400
    body = r.json()
    assert list(body) == [field], body
    assert isinstance(body[field], list) and body[field][0]
    assert Scenario.objects.count() == 0


def test_it_explains_an_indivisible_batch(owner_api, example_spec):
    example_spec["cluster"]["gpus_per_node"] = 8
    example_spec["training"]["global_batch_size"] = 12
    r = post(owner_api, "bad", example_spec)
    assert r.status_code == 400
    assert "multiple of" in r.json()["scenario.training.global_batch_size"][0]


def test_it_rejects_a_missing_name(owner_api, example_spec):
    r = owner_api.post(URL, {"scenario": example_spec}, format="json")
    assert r.status_code == 400
    assert "name" in r.json()
    assert Scenario.objects.count() == 0


@pytest.mark.parametrize("scenario", [[1, 2], "not json {", 42, None])
def test_it_rejects_a_scenario_that_is_not_an_object(owner_api, scenario):
    r = post(owner_api, "bad", scenario)
    assert r.status_code == 400
    assert list(r.json()) == ["scenario"], r.json()
    assert Scenario.objects.count() == 0


def test_it_accepts_the_scenario_as_a_json_string(owner_api, example_spec):
    import json

    r = post(owner_api, "from a form", json.dumps(example_spec))
    assert r.status_code == 201
    assert r.json()["scenario"] == example_spec


def test_it_rejects_a_malformed_json_body(owner_api):
    r = owner_api.post(URL, data='{"name": "x", "scenario": {', content_type="application/json")
    assert r.status_code == 400
    assert list(r.json()) == ["body"]
    assert "JSON" in r.json()["body"][0]
    assert Scenario.objects.count() == 0


def test_it_rejects_a_body_that_is_not_an_object(owner_api):
    r = owner_api.post(URL, data="[1, 2]", content_type="application/json")
    assert r.status_code == 400
    assert Scenario.objects.count() == 0


def test_it_uses_the_database_catalog(owner_api, catalog, example_spec):
    """A preset added in the admin is usable at once."""
    base = ModelPreset.objects.get(slug="llama2-7b")
    ModelPreset.objects.create(slug="tiny-llama", name="Tiny", spec={**base.spec, "num_layers": 2},
                               source="test")
    example_spec["model"] = {"preset": "tiny-llama"}
    assert post(owner_api, "tiny", example_spec).status_code == 201


def test_an_unknown_top_level_key_is_a_400_and_nothing_is_saved(owner_api, example_spec):
    # a typo beside the scenario would otherwise be dropped and a scenario saved without it
    before = Scenario.objects.count()
    r = owner_api.post(URL, {"name": "typo", "foo": 1, "scenario": example_spec}, format="json")
    assert r.status_code == 400
    assert list(r.json()) == ["foo"] and r.json()["foo"][0].startswith("unknown field; known fields: name, scenario")
    assert Scenario.objects.count() == before


@pytest.mark.parametrize("extra", [{"owner": "someone"}, {"id": 99999}, {"created_at": "2020-01-01T00:00:00Z"},
                                   {"last_run": None}])
def test_a_key_the_server_sets_is_a_400_as_on_the_other_creates(owner_api, example_spec, extra):
    """owner, id and the other read-only keys gave 201 (silently dropped) where sweeps,
    comparisons and the estimate refuse keys they do not take."""
    before = Scenario.objects.count()
    r = owner_api.post(URL, {"name": "x", "scenario": example_spec, **extra}, format="json")
    assert r.status_code == 400, r.content
    (key,) = extra
    assert list(r.json()) == [key] and r.json()[key] == ["unknown field; known fields: name, scenario"]
    assert Scenario.objects.count() == before


@pytest.mark.parametrize("where, field", [((), "scenario.name"), (("model",), "scenario.model.name"),
                                          (("cluster", "accelerator"), "scenario.cluster.accelerator.name")])
def test_a_name_inside_the_scenario_is_capped_as_the_top_level_name(owner_api, example_spec, where, field):
    """The scenario's own names had no cap (100,000 characters were stored) while the
    top-level name is capped at 200."""
    import copy

    def with_name(n):
        spec = copy.deepcopy(example_spec)
        section = spec
        for key in where:
            value = section.get(key)
            section[key] = value = ({"preset": value} if isinstance(value, str) else dict(value or {}))
            section = value
        section["name"] = "n" * n
        return spec

    if where == ("cluster", "accelerator"):
        example_spec["cluster"]["accelerator"] = "h100-sxm5-80gb"
    before = Scenario.objects.count()
    r = owner_api.post(URL, {"name": "x", "scenario": with_name(100_000)}, format="json")
    assert r.status_code == 400, r.content
    assert list(r.json()) == [field], r.json()
    assert "at most 200 characters" in r.json()[field][0]
    assert Scenario.objects.count() == before
    assert owner_api.post(URL, {"name": "x", "scenario": with_name(200)}, format="json").status_code == 201



@pytest.mark.parametrize("name", [5, 1.5, True, ["a"], {"a": 1}])
def test_a_name_that_is_not_a_string_is_a_400_and_nothing_is_saved(owner_api, example_spec, name):
    # DRF's CharField stores 5 as "5" and True as "True"; a name is text
    before = Scenario.objects.count()
    r = owner_api.post(URL, {"name": name, "scenario": example_spec}, format="json")
    assert r.status_code == 400
    assert list(r.json()) == ["name"] and r.json()["name"][0].startswith("Must be a string (text), got")
    assert Scenario.objects.count() == before
    created = post(owner_api, "fine", example_spec)
    assert created.status_code == 201
    # the dashboard's actions that take a name too: duplicating a scenario
    r = owner_api.post(f"{URL}{created.json()['id']}/duplicate/", {"name": name}, format="json")
    assert r.status_code == 400 and list(r.json()) == ["name"]
    assert Scenario.objects.count() == before + 1
