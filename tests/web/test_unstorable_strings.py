"""A string the database cannot store in a JSON body is a 400 naming its field, and nothing
is created.

JSON allows a NUL character in a string (``"\\u0000"``, RFC 8259 section 7: any code point
may be escaped) and an unpaired surrogate escape (``"\\ud800"``: the RFC's section 8.2 calls
such strings unpredictable); PostgreSQL's text and jsonb cannot store either (PostgreSQL
docs, "Character Types": "The character with code zero (sometimes called NUL) cannot be
stored"; jsonb refuses ``\\u0000``, "JSON Types"). tierlab refused them under ``body``,
which left the client to find the string; the error now names it by the dotted path the
API's other 400s use (``tierlab.api.dotted_errors``: ``name``, ``scenario.model.preset``,
``axes.0.values.1``)."""

import json

import pytest

from tierlab.dashboard.models import Comparison, Plan, Sweep
from tierlab.scenarios.models import ClusterProfile, Scenario

pytestmark = pytest.mark.django_db

NUL = "contains a NUL character (\\u0000), which cannot be stored"
PLAN = {"model": "llama2-7b", "cluster": {"node": "dgx-h100", "num_nodes": 1},
        "training": {"seq_len": 2048, "global_batch_size": 8}}
PROFILE = {"cluster": {"node": "dgx-h100"}, "gemm": {"flops_per_s": 6e14}}


@pytest.fixture
def two(owner, example_spec):
    return [Scenario.objects.create(owner=owner, name=f"s{i}", spec=example_spec).pk for i in range(2)]


def cases(two, spec):
    a, b = two
    axis = {"path": "cluster.num_nodes", "values": [1, 2]}
    return [
        ("/api/v1/scenarios/", {"name": "a\x00b", "scenario": spec}, Scenario, "name"),
        ("/api/v1/scenarios/", {"name": "ok", "scenario": {**spec, "model": {"preset": "llama2\x007b"}}},
         Scenario, "scenario.model.preset"),
        ("/api/v1/comparisons/", {"scenarios": [a, b], "name": "\x00"}, Comparison, "name"),
        ("/api/v1/sweeps/", {"scenario": a, "name": "x\x00", "axes": [axis]}, Sweep, "name"),
        ("/api/v1/sweeps/", {"scenario": a, "axes": [axis, {"path": "cluster.node",
                                                             "values": ["dgx-h100", "dgx\x00"]}]},
         Sweep, "axes.1.values.1"),
        ("/api/v1/plans/", {"spec": {**PLAN, "model": "llama2\x007b"}}, Plan, "spec.model"),
        ("/api/v1/cluster-profiles/", {"name": "p\x00", "measurements": PROFILE}, ClusterProfile, "name"),
        (f"/api/v1/scenarios/{a}/duplicate/", {"name": "copy\x00"}, Scenario, "name"),
    ]


def test_a_nul_in_a_string_is_a_400_naming_its_field_and_nothing_is_created(owner_api, two, example_spec):
    for url, body, model, field in cases(two, example_spec):
        before = model.objects.count()
        r = owner_api.post(url, body, format="json")
        assert r.status_code == 400, (url, r.status_code, r.content[:200])
        assert r.json() == {field: [NUL]}, (url, r.json())
        assert model.objects.count() == before, url


def test_a_nul_in_a_key_names_the_object_holding_it(owner_api, example_spec):
    r = owner_api.post("/api/v1/estimate/", {"scenario": {**example_spec, "k\x00": 1}}, format="json")
    assert r.status_code == 400
    assert r.json() == {"scenario": [f'the key "k\\u0000" {NUL}']}


def test_the_first_bad_string_in_document_order_is_named(owner_api, example_spec):
    body = {"scenario": {**example_spec, "training": {**example_spec["training"], "recompute": "f\x00"}},
            "name": "n\x00"}
    r = owner_api.post("/api/v1/scenarios/", body, format="json")
    assert list(r.json()) == ["scenario.training.recompute"]


def test_an_unpaired_surrogate_is_named_too(owner_api):
    # raw bytes: Python's JSON encoder would refuse to write the lone surrogate as UTF-8
    r = owner_api.post("/api/v1/scenarios/", data=b'{"name": "a\\ud800", "scenario": {}}',
                       content_type="application/json")
    assert r.status_code == 400
    assert r.json() == {"name": ["contains an unpaired surrogate (\\ud800-\\udfff), which is not text"]}
    assert Scenario.objects.count() == 0


@pytest.mark.parametrize("body", [b'"a\\u0000b"', b'{"k\\u0000": 1}'])
def test_a_nul_outside_any_field_stays_under_body(owner_api, body):
    r = owner_api.post("/api/v1/estimate/", data=body, content_type="application/json")
    assert r.status_code == 400 and list(r.json()) == ["body"]
    assert "NUL" in r.json()["body"][0]


def test_a_good_body_is_still_taken(owner_api, example_spec):
    r = owner_api.post("/api/v1/scenarios/", data=json.dumps({"name": "ok", "scenario": example_spec}),
                       content_type="application/json")
    assert r.status_code == 201


RLO = "\u202e"        # RIGHT-TO-LEFT OVERRIDE: "invoice\u202efdp.exe" shows as "invoiceexe.pdf"
BIDI = ("contains the Unicode bidirectional control U+202E RIGHT-TO-LEFT OVERRIDE, which makes "
        "text display in another order than it reads; remove it (right-to-left letters such as "
        "Arabic or Hebrew are fine)")


def _with(value, body):
    """``body`` with its NUL strings made ``value`` in place of the NUL."""
    return json.loads(json.dumps(body).replace("\\u0000", json.dumps(value)[1:-1]))


def test_a_bidi_control_in_a_string_is_a_400_naming_its_field(owner_api, two, example_spec):
    """Names took U+202E and the pages showed it raw in titles, reordering what follows."""
    for url, body, model, field in cases(two, example_spec):
        before = model.objects.count()
        r = owner_api.post(url, _with(RLO, body), format="json")
        assert r.status_code == 400, (url, r.status_code, r.content[:200])
        assert r.json() == {field: [BIDI]}, (url, r.json())
        assert model.objects.count() == before, url


@pytest.mark.parametrize("control", ["\u202a", "\u202b", "\u202c", "\u202d", "\u2066", "\u2067", "\u2068",
                                     "\u2069"])
def test_every_bidi_control_is_refused(owner_api, example_spec, control):
    r = owner_api.post("/api/v1/scenarios/", {"name": f"a{control}b", "scenario": example_spec}, format="json")
    assert r.status_code == 400 and f"U+{ord(control):04X}" in r.json()["name"][0], r.content
    assert Scenario.objects.count() == 0


@pytest.mark.parametrize("name", ["خطة التدريب", "תוכנית אימון", "Llama \u200fעברית\u200e 7B"])
def test_right_to_left_text_is_taken(owner_api, example_spec, name):
    r = owner_api.post("/api/v1/scenarios/", {"name": name, "scenario": example_spec}, format="json")
    assert r.status_code == 201, r.content
    assert Scenario.objects.get(pk=r.json()["id"]).name == name


def test_the_pages_forms_refuse_it_too(client, owner):
    client.force_login(owner)
    r = client.post("/profiles/", {"name": f"selene{RLO}", "node": "dgx-a100-80gb", "collective": "all_reduce",
                                   "checkpoint_target": "parallel_fs", "gemm_tflops": "250"})
    assert r.status_code == 400 and "U+202E RIGHT-TO-LEFT OVERRIDE" in r.content.decode()
    assert ClusterProfile.objects.count() == 0
